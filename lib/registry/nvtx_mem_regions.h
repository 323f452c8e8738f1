// NVTX memory regions: the sub-allocations that pool allocators (RMM, caching
// allocators, arenas) describe through NVTX's memory API (nvtxMemHeapRegister,
// nvtxMemRegionsRegister, ..., <nvtx3/nvToolsExtMem.h>).
//
// A pool takes one big block from CUDA and hands out pieces of it. To the tool
// the big block is one allocation with the pool's call stack: a piece the
// program never gives back, or a copy that runs from one piece into the next,
// stays invisible. When the pool annotates its pieces, each becomes a region
// here, with the stack of the code that asked the pool for it, and the engine
// (lib/engine/engine_nvtx_mem.cc) reports region leaks and region overflows.
//
// This file is the bookkeeping only: heaps (the pools' blocks, keyed by the
// handle nvtxMemHeapRegister returned, which is the heap's address as NVTX
// documents for NVTX_MEM_TYPE_VIRTUAL_ADDRESS heaps) and regions (keyed by
// their start address, which is also their handle). It does not look at CUDA
// blocks, capture stacks or report; the caller fills the records.
//
//   NvtxMemRegions regions;
//   regions.AddHeap({.handle = base, .address = base, .bytes = 1 << 20});
//   NvtxMemRegion r;
//   r.heap = base;
//   r.record.address = base + 256;
//   r.record.bytes = 100;
//   regions.AddRegion(r);
//   regions.FindContaining(base + 300);  // r
//   regions.EndHeap(base, /*remove=*/false);  // nvtxMemHeapReset: r ends
//
// Thread safety: every member is thread-safe (one mutex: region calls come
// from a pool's allocate/free path, which is serialized by the pool's own lock
// in practice). HasRegions() and Any() take no lock.
#ifndef GMT_LIB_REGISTRY_NVTX_MEM_REGIONS_H_
#define GMT_LIB_REGISTRY_NVTX_MEM_REGIONS_H_

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/btree_map.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "lib/registry/registry.h"

namespace gmt {

// NVTX_MEM_HEAP_USAGE_TYPE_* (nvToolsExtMem.h), repeated here so that lib/
// does not need the NVTX headers.
inline constexpr uint32_t kNvtxHeapSubAllocator = 0x1;
inline constexpr uint32_t kNvtxHeapLayout = 0x2;

struct NvtxMemHeap {
  uint64_t handle = 0;   // what the program got back; 0 is never a heap
  uint64_t address = 0;  // [address, address + bytes) of process memory
  uint64_t bytes = 0;
  uint32_t usage = kNvtxHeapSubAllocator;
  std::string name;  // the descriptor's message; "" when none
};

struct NvtxMemRegion {
  // The region as an allocation: api Api::kNvtxRegion, its address and size,
  // and the stack, thread, time and NVTX range of the register call; device
  // and kind are those of the block holding it.
  AllocationRecord record;
  uint64_t heap =
      0;  // the heap handle given; 0: NVTX_MEM_HEAP_HANDLE_PROCESS_WIDE
  // The tracked CUDA block that holds the whole region (its user address and
  // API), 0 / kUnknown when none does.
  uint64_t block = 0;
  Api block_api = Api::kUnknown;
  // Regions of a layout heap (NVTX_MEM_HEAP_USAGE_TYPE_LAYOUT) describe parts
  // of a structure, not memory handed out: bounds-checked, never leaks.
  bool leak_checked = true;
  std::string name;  // nvtxMemRegionsName; "" when none
};

class NvtxMemRegions {
 public:
  NvtxMemRegions() = default;
  NvtxMemRegions(const NvtxMemRegions&) = delete;
  NvtxMemRegions& operator=(const NvtxMemRegions&) = delete;

  // Whether any region is registered: one relaxed atomic load, so that the
  // copy bounds check costs nothing in programs that annotate no pool.
  bool HasRegions() const {
    return live_regions_.load(std::memory_order_relaxed) != 0;
  }
  // Whether any heap or region is registered (the free path's fast check).
  bool Any() const {
    return HasRegions() || live_heaps_.load(std::memory_order_relaxed) != 0;
  }

  // ---- Heaps -------------------------------------------------------------
  // Adds `heap`. A live heap with the same handle (registered again without
  // nvtxMemHeapUnregister) is replaced, and its regions end: returns how many.
  size_t AddHeap(const NvtxMemHeap& heap);
  std::optional<NvtxMemHeap> FindHeap(uint64_t handle) const;
  // nvtxMemHeapReset (`remove` false) or nvtxMemHeapUnregister (true): the
  // heap's regions end, and with `remove` the heap. Handle 0 (process-wide)
  // ends the regions registered with no heap; it is never removed. Returns the
  // regions ended, or nullopt when `handle` is no live heap.
  std::optional<size_t> EndHeap(uint64_t handle, bool remove);

  // ---- Regions -----------------------------------------------------------
  struct AddResult {
    bool replaced = false;  // a live region started at the same address
    bool overlaps = false;  // it overlaps another live region
  };
  // Adds `region` (record.bytes > 0). One already live at the same address is
  // replaced (its unregister went unseen).
  AddResult AddRegion(const NvtxMemRegion& region);
  // nvtxMemRegionsResize: the region that starts at `address` now has
  // `bytes`. False when none does.
  bool ResizeRegion(uint64_t address, uint64_t bytes);
  // nvtxMemRegionsName. False when no region starts at `address`.
  bool NameRegion(uint64_t address, absl::string_view name);
  // nvtxMemRegionsUnregister. False when no region starts at `address`.
  bool RemoveRegion(uint64_t address);
  // The live region whose [address, address + bytes) holds `address`. With
  // overlapping regions (a pool bug, noted when registered) the one that
  // starts last at or before `address` is the only one considered.
  std::optional<NvtxMemRegion> FindContaining(uint64_t address) const;

  // The memory [begin, end) went back to CUDA (the pool's block was freed):
  // the heaps that start in it end, and so do their regions and every region
  // that starts in it, as compute-sanitizer unregisters a pool on cudaFree.
  // Returns the regions ended.
  size_t EndWithin(uint64_t begin, uint64_t end);

  // Every live region, by address.
  std::vector<NvtxMemRegion> Live() const;

  // Live regions per holding block (key: the block's user address), for the
  // block's leak entry: how much of it the pool has handed out.
  struct Coverage {
    uint64_t regions = 0;
    uint64_t bytes = 0;
  };
  using CoverageMap = absl::flat_hash_map<uint64_t, Coverage>;
  CoverageMap CoverageByBlock() const;

  size_t live_regions() const {
    return live_regions_.load(std::memory_order_relaxed);
  }
  size_t live_heaps() const {
    return live_heaps_.load(std::memory_order_relaxed);
  }

 private:
  // Removes the regions of `heap` (all with that handle). Returns how many.
  size_t EndRegionsOfLocked(uint64_t heap) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void PublishCountsLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable absl::Mutex mu_;
  absl::btree_map<uint64_t, NvtxMemRegion> regions_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<uint64_t, NvtxMemHeap> heaps_ ABSL_GUARDED_BY(mu_);
  std::atomic<size_t> live_regions_{0};
  std::atomic<size_t> live_heaps_{0};
};

// What went wrong in a program's nvtxMem* call. Each is counted; the first of
// each kind is logged (verbosity=1) and the report lists the counts in its
// notes. The call itself still returns what it would have.
//
// GMT_NVTX_MEM_PROBLEM(Enum, "json-name", "what was done, for the report")
#define GMT_NVTX_MEM_PROBLEMS(X)                                             \
  X(kBadDescriptor, "bad_descriptor",                                        \
    "calls with a null or too small descriptor or element array were "       \
    "ignored")                                                               \
  X(kUnsupportedType, "unsupported_type",                                    \
    "heaps or regions of a type other than NVTX_MEM_TYPE_VIRTUAL_ADDRESS "   \
    "(CUDA arrays, ...) were not tracked")                                   \
  X(kZeroSize, "zero_size",                                                  \
    "heaps or regions of size 0 or at address 0 were not tracked")           \
  X(kUnknownRegion, "unknown_region",                                        \
    "unregister/resize/name calls named no registered region and were "      \
    "ignored")                                                               \
  X(kUnknownHeap, "unknown_heap",                                            \
    "calls named a heap that is not registered (regions were still "         \
    "tracked; a reset or unregister was ignored)")                           \
  X(kUnknownUsage, "unknown_usage",                                          \
    "heaps had a usage other than SUB_ALLOCATOR or LAYOUT and were treated " \
    "as sub-allocators")                                                     \
  X(kOutsideBlock, "outside_block",                                          \
    "regions lie outside every tracked CUDA block (tracked; only their own " \
    "bounds are checked)")                                                   \
  X(kOutsideHeap, "outside_heap",                                            \
    "regions do not lie inside the heap they were registered in (tracked)")  \
  X(kOverlap, "overlap",                                                     \
    "regions overlap a region that is still registered (a pool handing out " \
    "memory twice?)")                                                        \
  X(kReRegistered, "re_registered",                                          \
    "heaps or regions were registered again at a live one's address; the "   \
    "old one ended")

enum class NvtxMemProblem : uint8_t {
#define GMT_NVTX_MEM_PROBLEM_ENUM(Enum, Name, Meaning) Enum,
  GMT_NVTX_MEM_PROBLEMS(GMT_NVTX_MEM_PROBLEM_ENUM)
#undef GMT_NVTX_MEM_PROBLEM_ENUM
};
inline constexpr int kNvtxMemProblemCount = 0
#define GMT_NVTX_MEM_PROBLEM_COUNT(Enum, Name, Meaning) +1
    GMT_NVTX_MEM_PROBLEMS(GMT_NVTX_MEM_PROBLEM_COUNT)
#undef GMT_NVTX_MEM_PROBLEM_COUNT
    ;

absl::string_view NvtxMemProblemName(NvtxMemProblem problem);
absl::string_view NvtxMemProblemMeaning(NvtxMemProblem problem);

// Counters of the program's nvtxMem* calls, for the report. Lock-free.
class NvtxMemStats {
 public:
  enum Counter {
    kHeapsRegistered,
    kHeapsUnregistered,
    kHeapResets,
    kRegionsRegistered,
    kRegionsUnregistered,
    kRegionsResized,
    kRegionsEndedByHeap,  // by a heap reset, unregister or re-registration
    kRegionsEndedByFree,  // their block went back to CUDA first
    kCounterCount,
  };
  void Add(Counter c, uint64_t n = 1) {
    counters_[c].fetch_add(n, std::memory_order_relaxed);
  }
  uint64_t Get(Counter c) const {
    return counters_[c].load(std::memory_order_relaxed);
  }
  // Returns true the first time `problem` is noted.
  bool Note(NvtxMemProblem problem) {
    return problems_[static_cast<int>(problem)].fetch_add(
               1, std::memory_order_relaxed) == 0;
  }
  uint64_t Problems(NvtxMemProblem problem) const {
    return problems_[static_cast<int>(problem)].load(std::memory_order_relaxed);
  }
  // Whether the program made any nvtxMem* call the tool saw.
  bool Used() const;

 private:
  std::atomic<uint64_t> counters_[kCounterCount] = {};
  std::atomic<uint64_t> problems_[kNvtxMemProblemCount] = {};
};

}  // namespace gmt

#endif  // GMT_LIB_REGISTRY_NVTX_MEM_REGIONS_H_
