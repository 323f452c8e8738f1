// gpumemtrace public API: ask the tracer what is live, right now.
//
// Works whether libgpumemtrace.so is linked into the program or only preloaded
// (LD_PRELOAD / `gpumemtrace run`):
//
//  * Linked (`target_link_libraries(app gpumemtrace::gpumemtrace)`): call the
//    functions directly.
//  * Preloaded only: include this header and build WITHOUT linking the library.
//    Every declaration below is weak, so the program links and runs on its own;
//    when the tracer is preloaded the dynamic linker binds the calls to it.
//    Check gmt::Available() before calling anything else.
//  * C and Python: the C functions at the end. From Python with ctypes:
//        lib = ctypes.CDLL(None)               # the process, preload included
//        f = lib.gmt_snapshot_json; f.restype = ctypes.c_void_p
//        p = f(); text = ctypes.string_at(p).decode(); lib.gmt_free(p)
//
// Example:
//   if (gmt::Available()) {
//     gmt::Snapshot before = gmt::snapshot();
//     train_one_step();
//     gmt::Snapshot after = gmt::snapshot();
//     std::printf("%zu bytes more\n", after.live_bytes - before.live_bytes);
//     std::fputs(gmt::diff_text(gmt::diff(before, after)).c_str(), stdout);
//   }
//
// Thread safety: every function may be called from any thread at any time.
#ifndef GMT_INCLUDE_GMT_GMT_H_
#define GMT_INCLUDE_GMT_GMT_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
#include <string>
#include <vector>
#endif

#if defined(GMT_BUILDING_LIBRARY)
#define GMT_API __attribute__((visibility("default")))
#else
#define GMT_API __attribute__((weak))
#endif

#ifdef __cplusplus
namespace gmt {

// One host frame of a call stack, innermost first.
struct Frame {
  uintptr_t address = 0;
  std::string function;  // demangled; empty when unknown
  std::string file;      // empty without debug info
  int line = 0;
  std::string module;  // e.g. "app", "libtorch_cuda.so"
};

// One live allocation.
struct Allocation {
  uintptr_t address = 0;  // the pointer the program got (a handle for arrays
                          // and cuMemCreate)
  size_t bytes = 0;       // what the program asked for
  int device = -1;        // CUDA device; -1 for host memory
  std::string api;        // "cudaMalloc", "cuMemAllocAsync", ...
  std::string kind;       // "device", "managed", "pinned-host", ...
  uint64_t stream = 0;    // for stream-ordered allocations
  uint32_t thread = 0;    // the tool's thread number (T1, T2, ...)
  double time_s = 0;      // seconds after the tool started
  std::vector<Frame> stack;
};

// Usage of one device (index -1: pinned host memory).
struct DeviceUsage {
  int device = 0;
  size_t live_bytes = 0;
  size_t peak_bytes = 0;
  uint64_t allocations = 0;
  uint64_t frees = 0;
};

// What is live at the moment snapshot() was called.
struct Snapshot {
  bool active = false;  // false: the tracer is off (enabled=0) or absent
  std::vector<Allocation> allocations;
  std::vector<DeviceUsage> devices;  // devices seen so far, then host (-1)
  size_t live_bytes = 0;             // all devices and host together
  size_t peak_bytes = 0;             // sum of per-device peaks
  uint64_t errors = 0;               // errors reported so far
};

// A copy of the live allocations, with symbolized stacks (the first call
// symbolizes; later ones reuse the cache). Costs time proportional to the
// number of live allocations: meant for checkpoints, not inner loops.
GMT_API Snapshot snapshot();

// Writes the report now, exactly as at exit (format and path from
// GMT_OPTIONS), without ending anything. Returns the number of errors so far.
GMT_API uint64_t report();

// Checks every guard zone now (canaries of live blocks, freed fill of
// quarantined ones) on the GPU and reports what changed. Waits for the GPU.
// Returns the number of errors so far.
GMT_API uint64_t check_now();

// One call site's share of a diff: the blocks of one (stack, api, device).
// Two stacks are the same call site when every frame has the same function,
// file and line (frames with neither function nor file compare by module and
// address instead).
struct DiffGroup {
  std::string api;           // "cudaMalloc", ...
  std::string kind;          // of the first block: "device", "managed", ...
  int device = -1;           // -1: host memory
  uint64_t count = 0;        // blocks
  size_t bytes = 0;          // their requested bytes together
  std::vector<Frame> stack;  // innermost first
};

// The change on one device (-1: pinned host memory).
struct DeviceDiff {
  int device = 0;
  size_t new_bytes = 0;
  size_t freed_bytes = 0;
  int64_t net_bytes = 0;  // new_bytes - freed_bytes
};

// What changed between two snapshots, from diff(). A block is the same in
// both only when its address, device, thread and allocation time all match,
// so an address freed and handed out again in between counts as freed once
// and new once.
struct SnapshotDiff {
  bool active = false;           // both snapshots came from an active tracer
  std::vector<DiffGroup> added;  // live in `after` only; largest bytes first
  std::vector<DiffGroup> freed;  // live in `before` only; largest bytes first
  std::vector<DeviceDiff> devices;  // devices that changed, then host (-1)
  uint64_t new_count = 0;
  size_t new_bytes = 0;
  uint64_t freed_count = 0;
  size_t freed_bytes = 0;
  int64_t net_bytes = 0;  // new_bytes - freed_bytes
};

// What is live in `after` and not in `before`, and what was freed in between,
// grouped by call site. Works on any two snapshots (kept ones too) and does
// not touch the tracer's state; like everything here it needs the library
// loaded, so check Available() first. The "run one iteration twice and
// compare" workflow:
//
//   step();                                    // warm-up: caches, pools
//   gmt::Snapshot before = gmt::snapshot();
//   step();
//   gmt::SnapshotDiff d = gmt::diff(before, gmt::snapshot());
//   if (d.net_bytes > 0) std::fputs(gmt::diff_text(d).c_str(), stderr);
GMT_API SnapshotDiff diff(const Snapshot& before, const Snapshot& after);

// `d` for people, in the report's style: a summary line, one line per device,
// then each call site with its stack ("NEW: ..." then "FREED: ...").
GMT_API std::string diff_text(const SnapshotDiff& d);

// True when the tracer is loaded in this process (linked or preloaded).
#if defined(GMT_BUILDING_LIBRARY)
inline bool Available() { return true; }
#else
inline bool Available() { return &gmt::snapshot != nullptr; }
#endif

}  // namespace gmt
#endif  // __cplusplus

#ifdef __cplusplus
extern "C" {
#endif

// The snapshot as a JSON document (same shape as the report's "live" list):
// {"active":..,"live_bytes":..,"devices":[..],"allocations":[..]}. The string
// is malloc'd: release it with gmt_free(). Never NULL when the tracer is
// loaded.
GMT_API char* gmt_snapshot_json(void);
// Frees a string returned by gmt_snapshot_json() or gmt_diff_json().
GMT_API void gmt_free(void* p);
// Compares two documents from gmt_snapshot_json() (see gmt::diff()). Returns
// a malloc'd JSON document (release it with gmt_free()):
// {"active":..,"new_count":..,"new_bytes":..,"freed_count":..,
//  "freed_bytes":..,"net_bytes":..,"devices":[{"device","new_bytes",
//  "freed_bytes","net_bytes"}..],"new":[group..],"freed":[group..]}, each group
// {"api","kind","device","count","bytes","stack":[frame..]}, largest first.
// Bad input (NULL, not JSON, not a snapshot) gives {"error":"<what is wrong>"}
// instead; it never crashes. Needs no active tracer.
GMT_API char* gmt_diff_json(const char* before_json, const char* after_json);
// Writes the report now (see gmt::report()); returns the error count.
GMT_API uint64_t gmt_report(void);
// Checks every guard zone now (see gmt::check_now()); returns the error count.
GMT_API uint64_t gmt_check_now(void);
// Bytes live on `device` (-1: pinned host memory, -2: everything).
GMT_API size_t gmt_live_bytes(int device);
// 1 when the tracer is active.
GMT_API int gmt_active(void);

// ---- Growth: call sites whose live bytes keep rising ----
// With GMT_OPTIONS growth=1 (the default) the tracer samples each call site's
// live bytes at synchronizing calls (at most every growth_interval_ms) and
// flags a site whose bytes rose at each of the last growth_samples samples (by
// growth_min_bytes at least): a suspected leak, told once per site while the
// program runs, as a line on stderr and through this callback.
typedef struct gmt_growth_event {
  const char* site;      // innermost frame, "function file:line (module)";
                         // valid only during the call
  uint64_t stack_id;     // the call site's id (the report's growth[].stack_id)
  uint64_t first_bytes;  // live bytes at the start of the rising run
  uint64_t last_bytes;   // live bytes now
  uint32_t rises;        // rising samples in a row
  double seconds;        // from the first to the last of them
} gmt_growth_event;
typedef void (*gmt_growth_callback)(const gmt_growth_event* event, void* user);
// Registers `callback` (NULL: none), replacing the previous one. It runs on
// the thread whose synchronizing CUDA call took the sample, inside that call:
// keep it short; CUDA calls made from it are not traced.
GMT_API void gmt_set_growth_callback(gmt_growth_callback callback, void* user);

#ifdef __cplusplus
}  // extern "C"
#endif

#ifdef __cplusplus
namespace gmt {
// C++ twin of gmt_set_growth_callback() (check Available() first).
GMT_API void set_growth_callback(gmt_growth_callback callback, void* user);
}  // namespace gmt
#endif

#endif  // GMT_INCLUDE_GMT_GMT_H_
