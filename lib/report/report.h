// The report: an immutable picture of the registry plus errors, and the writers
// that render it. Writers are pure functions of ReportData, so they are tested
// on made-up data and reused by the snapshot API.
#ifndef GMT_LIB_REPORT_REPORT_H_
#define GMT_LIB_REPORT_REPORT_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "lib/report/errors.h"
#include "lib/report/health_reading.h"
#include "lib/stacks/symbolizer.h"

namespace gmt {

using StackTable = absl::flat_hash_map<StackId, std::vector<SymbolizedFrame>>;

struct ReportData {
  std::string version;
  int pid = 0;
  std::vector<std::string> argv;
  std::string reason;  // "exit", "request", "error"
  // A report this process already printed to stderr in full (the one at a
  // CUDA error): the text form of this one then refers to it instead of
  // repeating it. Empty reason: none.
  struct EarlierReport {
    std::string reason;   // "cuda-error"
    double at_s = 0;      // seconds since the tool started
    uint64_t errors = 0;  // data.summary.errors of that report
  };
  EarlierReport earlier_printed;

  struct Device {
    int index = 0;     // -1: pinned host memory
    std::string name;  // "NVIDIA H200"; empty when unknown
    uint64_t total_bytes = 0;
    uint64_t peak_bytes = 0;
    uint64_t live_bytes = 0;
    uint64_t allocations = 0;
    uint64_t frees = 0;
  };
  std::vector<Device> devices;  // CUDA devices, in index order
  Device host;                  // pinned host memory (index -1)

  struct Summary {
    uint64_t allocations = 0;
    uint64_t frees = 0;
    uint64_t live_bytes_at_exit = 0;
    uint64_t errors = 0;
    uint64_t leaks = 0;  // leaked blocks
    uint64_t leaked_bytes = 0;
    uint64_t untracked_frees = 0;  // frees CUDA accepted of blocks we never saw
    // Removed by suppressions (lib/report/suppressions.h): errors, leaked
    // blocks.
    uint64_t suppressed_errors = 0;
    uint64_t suppressed_leaks = 0;
  } summary;

  // One entry per (call site, API, device, how it ended).
  struct Leak {
    Api api = Api::kUnknown;
    MemoryKind kind = MemoryKind::kDevice;
    int device = -1;
    StackId stack = kNoStack;
    uint64_t bytes = 0;
    uint64_t count = 0;
    uint64_t address = 0;     // one example block
    std::string released_by;  // "" or the teardown call that released it
    std::string suppression;  // the rule that would silence it
    // Reachability at exit: "lost" (definitely lost), "reachable"
    // (still reachable), "unknown" (the scan hit its bound first); "" when not
    // analysed. A call site with blocks in several states has one entry each.
    std::string state;
    // For "reachable": what points at its example block, e.g. "globals of
    // libfoo.so (word at 0x...)" or "stack of another thread [...]".
    std::string reachable_via;
    // The NVTX range path its blocks were allocated in ("" none). A
    // call site used in several ranges has one entry each.
    std::string nvtx_range;
    // NVTX memory regions (lib/registry/nvtx_mem_regions.h).
    // On a block's entry: the live regions a pool allocator registered inside
    // its blocks, and their bytes (also listed as their own entries).
    uint64_t nvtx_regions = 0;
    uint64_t nvtx_region_bytes = 0;
    // On a region's entry (api kNvtxRegion): the tracked block holding its
    // example region (0: none) and that block's API, the heap handle it was
    // registered in (0: process-wide) and the heap's and region's names.
    // Region bytes are not added to summary.leaked_bytes: they lie inside a
    // block counted on its own (or in memory the tool did not see allocated).
    uint64_t pool_block = 0;
    Api pool_api = Api::kUnknown;
    uint64_t heap = 0;
    std::string heap_name;
    std::string region_name;
  };
  std::vector<Leak> leaks;  // largest first
  bool leak_check = true;

  // The reachability scan at exit (lib/leaks/reachability_linux.h).
  struct Reachability {
    bool ran = false;
    double ms = 0;  // the scan's own wall time
    uint64_t bytes_scanned = 0;
    uint64_t roots = 0;        // root ranges (module data, thread stacks)
    uint64_t heap_chunks = 0;  // heap objects followed
    uint64_t modules = 0;
    uint64_t modules_excluded = 0;  // CUDA libraries and the tool
    uint64_t threads = 0;
    uint64_t threads_excluded = 0;  // CUDA / tool helper threads
    uint64_t threads_unknown = 0;   // running: stack not scanned
    bool truncated = false;         // a bound was hit
    uint64_t lost_bytes = 0;
    uint64_t reachable_bytes = 0;
    uint64_t unknown_bytes = 0;
    uint64_t lost_blocks = 0;
    uint64_t reachable_blocks = 0;
    uint64_t unknown_blocks = 0;
  } reachability;

  // Call sites whose live bytes kept rising (lib/leaks/growth.h).
  struct Growth {
    StackId stack = kNoStack;
    uint32_t rises = 0;
    uint64_t first_bytes = 0;
    uint64_t last_bytes = 0;
    double first_s = 0;  // seconds since the tool started
    double last_s = 0;
  };
  std::vector<Growth> growth;
  uint64_t growth_samples = 0;

  std::vector<ErrorRecord> errors;
  uint64_t errors_dropped = 0;

  // Guard zones: what was protected and checked.
  struct Guard {
    bool enabled = false;
    std::string check;  // the check= level
    uint64_t guarded = 0;
    uint64_t unguarded_oom = 0;
    uint64_t unguarded_capture = 0;
    // Left unguarded because CUDA refused the enlarged size for another
    // reason than memory, and because their pool is shared with other
    // processes (docs/transparency.md).
    uint64_t unguarded_refused = 0;
    uint64_t unguarded_shareable = 0;
    uint64_t checks = 0;
    uint64_t check_failures = 0;
    uint64_t fill_failures = 0;  // zones never armed, so never checked
    uint64_t bytes_checked = 0;
    uint64_t quarantine_bytes = 0;
    uint64_t evicted = 0;
    // Allocations served with a checked block held for reuse
    // (quarantine_reuse, malloc_reuse), not by CUDA; of them, stream-ordered
    // blocks taken on their check's stream before that check answered.
    uint64_t reused = 0;
    uint64_t reused_in_flight = 0;
  } guard;

  // Suppressions: every rule loaded and how many errors and leak call sites
  // it silenced in this report (lib/report/suppressions.h).
  struct SuppressionUse {
    std::string rule;
    std::string file;
    int line = 0;
    uint64_t hits = 0;
  };
  std::vector<SuppressionUse> suppressions;

  // GPU health through NVML, read when the report is built
  // (lib/health/health.h); health_read is false with health=0.
  bool health_read = false;
  HealthReading health;

  // Allocations grouped by the NVTX range open on the allocating
  // thread (lib/registry/nvtx_ranges.h); empty when the program used no NVTX
  // range.
  struct NvtxRange {
    std::string name;  // "outer/inner"
    uint64_t allocations = 0;
    uint64_t bytes = 0;        // allocated inside the range, in all
    uint64_t live_blocks = 0;  // still allocated when the report was made
    uint64_t live_bytes = 0;
  };
  std::vector<NvtxRange> nvtx_ranges;  // largest live_bytes, then bytes, first

  // The program's NVTX memory-API calls (pool allocators'
  // heaps and regions, lib/registry/nvtx_mem_regions.h); `used` false when it
  // made none.
  struct NvtxMem {
    bool used = false;
    uint64_t heaps_registered = 0;
    uint64_t heaps_unregistered = 0;
    uint64_t heap_resets = 0;
    uint64_t regions_registered = 0;
    uint64_t regions_unregistered = 0;
    uint64_t regions_resized = 0;
    uint64_t regions_ended_by_heap = 0;  // by a reset or heap unregister
    uint64_t regions_ended_by_free = 0;  // their block was freed first
    uint64_t live_heaps = 0;
    uint64_t live_regions = 0;
    uint64_t live_region_bytes = 0;
    // Problems in the program's calls, by name ("zero_size": 2), non-zero
    // only (lib/registry/nvtx_mem_regions.h, GMT_NVTX_MEM_PROBLEMS).
    std::vector<std::pair<std::string, uint64_t>> problems;
  } nvtx_mem;

  StackTable stacks;  // every stack id referenced above, symbolized
  std::vector<std::string> notes;

  // Memory over time (lib/registry/timeline.h), for the trace, PyTorch snapshot
  // and HTML writers. Times are nanoseconds since the tool started.
  struct Timeline {
    // Events were recorded (false: timeline_events=0, or a report re-read
    // from JSON, which keeps only `series`).
    bool recorded = false;
    uint64_t capacity = 0;         // events the ring keeps
    uint64_t recorded_events = 0;  // events ever recorded
    uint64_t dropped = 0;          // the oldest, not in `events`
    struct Event {
      int64_t time_ns = 0;
      uint64_t address = 0;
      uint64_t bytes = 0;
      uint64_t stream = 0;
      uint64_t live_bytes = 0;  // the device's bytes in use after the event
      StackId stack = kNoStack;
      uint32_t thread = 0;
      int device = -1;          // -1: pinned host memory
      Api api = Api::kUnknown;  // the allocating API, for frees too
      bool free = false;
    };
    std::vector<Event> events;  // oldest first
    // Bytes in use per device (-1: pinned host), downsampled for plots
    // (peaks kept), oldest first.
    struct Point {
      int64_t time_ns = 0;
      uint64_t live_bytes = 0;
    };
    std::map<int, std::vector<Point>> series;
    // Blocks live when the report was taken (the PyTorch snapshot's
    // segments).
    struct Block {
      uint64_t address = 0;
      uint64_t bytes = 0;
      uint64_t stream = 0;
      int64_t time_ns = 0;
      StackId stack = kNoStack;
      int device = -1;
      Api api = Api::kUnknown;
    };
    std::vector<Block> live;
    // Re-read from a JSON report that had a "timeline" section
    // (lib/report/report_json_parse.h): the JSON writer writes it again even
    // without series.
    bool from_json = false;
  } timeline;

  // The crash report (recorded by lib/engine/engine_crash.cc, completed by
  // lib/report/report_assembly.h). Present in every report taken after a
  // fatal signal or the first sticky CUDA error.
  struct Crash {
    bool present = false;
    std::string kind;  // "signal" or "cuda-error"
    // kind "signal": the signal, its si_code, the faulting address.
    int signal = 0;
    std::string signal_name;  // "SIGSEGV"
    int code = 0;
    std::string code_name;  // "SEGV_MAPERR"; "" when not a named code
    uint64_t fault_address = 0;
    bool has_fault_address = false;  // SIGSEGV, SIGBUS, SIGFPE, SIGILL
    int thread = 0;                  // kernel thread id of the crashing thread
    // kind "signal": the crashing thread's stack where it was captured.
    StackId stack = kNoStack;
    // The tracked host-visible block (managed, pinned, registered) the fault
    // address lies in or near (within kCrashNearBytes), if any.
    bool has_fault_block = false;
    AllocationRecord fault_block;
    int64_t fault_offset = 0;  // fault_address - fault_block.address
    // kind "cuda-error": the call, the CUDA code and its name.
    std::string call;
    int cuda_result = 0;
    std::string cuda_result_name;
    // The newest kernel launches the tool saw (any context), oldest first.
    struct Launch {
      std::string name;
      uint64_t stream = 0;
      uint64_t context = 0;
      double time_s = 0;  // since the tool started
    };
    std::vector<Launch> recent_kernels;
    uint64_t launches_seen = 0;       // every launch since start
    std::string recent_kernels_note;  // why the list may be empty
    // Live blocks at the crash (the largest kMaxCrashListedLive), and their
    // totals.
    std::vector<AllocationRecord> live;
    uint64_t live_blocks = 0;
    uint64_t live_bytes = 0;
    // Device health at the crash, or why it was not read.
    std::string health_status;
    // explain_faults: what the driver's GPU core dump says (lib/gpu_fault's
    // text, a line each), or why it could not be read; the dump's path when
    // it is kept.
    std::vector<std::string> gpu_fault;
    std::string gpu_dump_kept;
    // Parts of the report left out, and why (a lock held by the crashing
    // thread, no engine, ...).
    std::vector<std::string> skipped;
  } crash;

  // The OS thread ids (gettid) behind the thread numbers the errors
  // name ("T2 (tid 4242)"). Unset in a live report: the writers ask the
  // running process (ThreadOsId, lib/core/clock.h). Set in a report re-read
  // from JSON (lib/report/report_json_parse.h): the ids it saved, nothing else.
  std::optional<std::map<uint32_t, int>> thread_os_ids;
};

// The OS thread id of thread number `thread` as `data` knows it (0: unknown):
// from data.thread_os_ids when set, else from the running process.
int ReportThreadOsId(const ReportData& data, uint32_t thread);

// The human report (what goes to stderr by default). `max_leaks` 0 lists all.
// `errors_printed`: each error already went to the same stream in full when it
// was found, so the report lists them one line each.
std::string RenderText(const ReportData& data, int64_t max_leaks,
                       bool errors_printed = false);

// The text of a report whose content the process already printed in full
// (data.earlier_printed): its header, one line naming the earlier report and
// what was found since, and the summary line.
std::string RenderTextAfterEarlier(const ReportData& data);

// One error as printed when it is found.
std::string RenderErrorText(const ErrorRecord& error, const StackTable& stacks,
                            int pid);

// The JSON report of DESIGN §5.
std::string RenderJson(const ReportData& data);

// "4.0 KiB", "1.5 GiB", "512 B".
std::string HumanBytes(uint64_t bytes);

// ---- Reports to look at (viz). Pure functions of `data`; each works without
// timeline events too (a report re-read from JSON), using what `data` has.
// Chrome trace event JSON (Perfetto, chrome://tracing): a process per device,
// a counter of bytes in use, allocation lifetimes grouped by API.
std::string RenderChromeTrace(const ReportData& data);
// The pickle that torch.cuda.memory._dump_snapshot() writes (segments and
// device_traces), for torch.cuda._memory_viz and pytorch.org/memory_viz.
std::string RenderTorchSnapshot(const ReportData& data);
// One self-contained HTML page (no network): memory plot per device, top call
// sites, leaks and errors with stacks.
std::string RenderHtml(const ReportData& data);

}  // namespace gmt

#endif  // GMT_LIB_REPORT_REPORT_H_
