// The engine's side of NVTX memory regions: what a pool
// allocator's nvtxMem* annotations become (lib/registry/nvtx_mem_regions.h
// keeps them), the region overflow check for copies and sets, and the regions'
// state for the report (lib/report/leak_groups.h makes their leak entries).
//
// Policy, as a user of compute-sanitizer would expect it:
//  * A region is a sub-allocation with its own record: the stack, thread,
//    time and NVTX range of the nvtxMemRegionsRegister call.
//  * nvtxMemRegionsUnregister ends it, nvtxMemHeapReset / Unregister end all
//    of its heap's, and freeing the pool's block ends the heaps and regions
//    in it (compute-sanitizer unregisters a pool on cudaFree the same way).
//  * Regions still registered at exit are leaks of their own, grouped by
//    their call site. Their bytes are not added to the leaked bytes: they
//    lie inside the pool's block, which is a leak entry of its own and says
//    how much of it live regions cover. They do count as leaked blocks.
//  * A copy or set that starts in a region and runs past its end is an
//    api-bounds error naming the region (CUDA accepts it: the pool's block
//    hides it).
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "lib/core/clock.h"
#include "lib/core/log.h"
#include "lib/engine/engine.h"
#include "lib/registry/nvtx_ranges.h"

namespace gmt {
namespace {

// Blocks regions can live in: memory addressed by pointers.
bool PointerKind(MemoryKind kind) {
  return kind == MemoryKind::kDevice || kind == MemoryKind::kManaged ||
         kind == MemoryKind::kPinnedHost || kind == MemoryKind::kRegisteredHost;
}

}  // namespace

void Engine::NoteNvtxMemProblem(NvtxMemProblem problem) {
  if (nvtx_mem_stats_.Note(problem)) {
    LogNote(1, "NVTX memory API: %s (first seen now; counted in the report)",
            std::string(NvtxMemProblemMeaning(problem)).c_str());
  }
}

uint64_t Engine::OnNvtxHeapRegister(uint64_t address, uint64_t bytes,
                                    uint32_t usage, std::string name) {
  if (usage != kNvtxHeapSubAllocator && usage != kNvtxHeapLayout) {
    NoteNvtxMemProblem(NvtxMemProblem::kUnknownUsage);
    usage = kNvtxHeapSubAllocator;
  }
  if (nvtx_mem_.FindHeap(address)) {
    NoteNvtxMemProblem(NvtxMemProblem::kReRegistered);
  }
  size_t ended = nvtx_mem_.AddHeap(
      NvtxMemHeap{address, address, bytes, usage, std::move(name)});
  nvtx_mem_stats_.Add(NvtxMemStats::kHeapsRegistered);
  nvtx_mem_stats_.Add(NvtxMemStats::kRegionsEndedByHeap, ended);
  return address;
}

void Engine::OnNvtxHeapEnd(uint64_t heap, bool unregister) {
  // NVTX_MEM_HEAP_HANDLE_PROCESS_WIDE may be reset, never unregistered.
  std::optional<size_t> ended = unregister && heap == 0
                                    ? std::nullopt
                                    : nvtx_mem_.EndHeap(heap, unregister);
  if (!ended) {
    NoteNvtxMemProblem(NvtxMemProblem::kUnknownHeap);
    return;
  }
  nvtx_mem_stats_.Add(unregister ? NvtxMemStats::kHeapsUnregistered
                                 : NvtxMemStats::kHeapResets);
  nvtx_mem_stats_.Add(NvtxMemStats::kRegionsEndedByHeap, *ended);
}

void Engine::OnNvtxRegionRegister(uint64_t heap, uint64_t address,
                                  uint64_t bytes, StackId stack) {
  if (address == 0 || bytes == 0) {
    NoteNvtxMemProblem(NvtxMemProblem::kZeroSize);
    return;
  }
  const uint64_t end = address + bytes;
  if (end < address) {
    NoteNvtxMemProblem(NvtxMemProblem::kBadDescriptor);
    return;
  }
  NvtxMemRegion region;
  region.heap = heap;
  if (heap != 0) {
    std::optional<NvtxMemHeap> h = nvtx_mem_.FindHeap(heap);
    if (!h) {
      NoteNvtxMemProblem(NvtxMemProblem::kUnknownHeap);
    } else {
      if (address < h->address || end > h->address + h->bytes) {
        NoteNvtxMemProblem(NvtxMemProblem::kOutsideHeap);
      }
      region.leak_checked = h->usage != kNvtxHeapLayout;
    }
  }
  AllocationRecord& r = region.record;
  r.api = Api::kNvtxRegion;
  r.address = address;
  r.bytes = bytes;
  r.time_ns = NowNs();
  r.stack = stack;
  r.thread = CurrentThreadIndex();
  r.nvtx_range = options_.nvtx ? NvtxCurrentRange() : kNoNvtxRange;
  std::optional<AllocationRecord> block = pointers_.FindContaining(address);
  if (block && PointerKind(block->kind) && address >= block->address &&
      end <= block->address + block->bytes) {
    region.block = block->address;
    region.block_api = block->api;
    r.device = block->device;
    r.kind = block->kind;
    r.context = block->context;
  } else {
    NoteNvtxMemProblem(NvtxMemProblem::kOutsideBlock);
    r.device = block ? block->device : kHostDevice;
    r.kind = block ? block->kind : MemoryKind::kDevice;
  }
  NvtxMemRegions::AddResult added = nvtx_mem_.AddRegion(region);
  if (added.replaced) NoteNvtxMemProblem(NvtxMemProblem::kReRegistered);
  if (added.overlaps) NoteNvtxMemProblem(NvtxMemProblem::kOverlap);
  nvtx_mem_stats_.Add(NvtxMemStats::kRegionsRegistered);
}

void Engine::OnNvtxRegionResize(uint64_t address, uint64_t bytes) {
  if (bytes == 0 || address + bytes < address) {
    NoteNvtxMemProblem(bytes == 0 ? NvtxMemProblem::kZeroSize
                                  : NvtxMemProblem::kBadDescriptor);
    return;
  }
  if (!nvtx_mem_.ResizeRegion(address, bytes)) {
    NoteNvtxMemProblem(NvtxMemProblem::kUnknownRegion);
    return;
  }
  nvtx_mem_stats_.Add(NvtxMemStats::kRegionsResized);
}

void Engine::OnNvtxRegionUnregister(uint64_t address) {
  if (!nvtx_mem_.RemoveRegion(address)) {
    NoteNvtxMemProblem(NvtxMemProblem::kUnknownRegion);
    return;
  }
  nvtx_mem_stats_.Add(NvtxMemStats::kRegionsUnregistered);
}

void Engine::OnNvtxRegionName(uint64_t address, absl::string_view name) {
  if (!nvtx_mem_.NameRegion(address, name)) {
    NoteNvtxMemProblem(NvtxMemProblem::kUnknownRegion);
  }
}

void Engine::EndNvtxMemIn(const AllocationRecord& block) {
  if (!nvtx_mem_.Any() || !PointerKind(block.kind)) return;
  size_t ended =
      nvtx_mem_.EndWithin(block.address, block.address + block.bytes);
  nvtx_mem_stats_.Add(NvtxMemStats::kRegionsEndedByFree, ended);
}

bool Engine::CheckNvtxRegionAccess(absl::string_view call, uint64_t address,
                                   uint64_t bytes, bool leaves_block,
                                   bool rejected) {
  std::optional<NvtxMemRegion> region = nvtx_mem_.FindContaining(address);
  if (!region) return false;
  const AllocationRecord& r = region->record;
  const uint64_t end = address + bytes;
  if (end >= address && end <= r.address + r.bytes) return false;
  ErrorRecord e;
  e.kind = ErrorKind::kApiBounds;
  e.api = r.api;
  e.call = std::string(call);
  e.address = address;
  e.offset = static_cast<int64_t>(address - r.address);
  e.bytes = bytes;
  e.allocation = r;
  e.stack = CaptureCallStack();
  e.thread = CurrentThreadIndex();
  e.time_ns = NowNs();
  // What the program got: CUDA's (or, with redzones, the tool's) refusal
  // when the range leaves the block too, else success; unknown outside
  // tracked blocks.
  const bool runtime = call.substr(0, 4) == "cuda";
  if (leaves_block) {
    e.cuda_result = 1;
    e.cuda_result_name =
        runtime ? "cudaErrorInvalidValue" : "CUDA_ERROR_INVALID_VALUE";
  } else if (region->block != 0) {
    e.cuda_result = 0;
    e.cuda_result_name = runtime ? "cudaSuccess" : "CUDA_SUCCESS";
  }
  const std::string name =
      region->name.empty() ? "" : absl::StrCat(" '", region->name, "'");
  const std::string pool =
      region->block == 0
          ? std::string(" (in memory the tool saw no allocation of)")
          : absl::StrFormat(" (inside the %s block 0x%x)",
                            ApiName(region->block_api), region->block);
  const char* outcome =
      rejected       ? "; it also leaves the block: rejected as CUDA would "
                       "without redzones"
      : leaves_block ? "; it also leaves the block"
      : region->block == 0
          ? ""
          : "; CUDA accepts it: the pool's block hides the overflow";
  e.detail = absl::StrFormat(
      "%s of %d bytes at offset %d of the %d-byte NVTX region%s 0x%x%s "
      "reaches offset %d, %d bytes past the region's end%s",
      call, bytes, e.offset, r.bytes, name, r.address, pool,
      e.offset + static_cast<int64_t>(bytes),
      e.offset + static_cast<int64_t>(bytes) - static_cast<int64_t>(r.bytes),
      outcome);
  RecordError(std::move(e));
  return true;
}

void Engine::TakeNvtxMemState(ReportState* state) {
  ReportState::NvtxMem& m = state->nvtx_mem;
  // How much of each block a pool's live NVTX regions hold.
  if (nvtx_mem_.HasRegions()) m.coverage = nvtx_mem_.CoverageByBlock();
  if (!nvtx_mem_stats_.Used()) return;
  m.used = true;
  for (int c = 0; c < NvtxMemStats::kCounterCount; ++c) {
    m.counters[c] = nvtx_mem_stats_.Get(static_cast<NvtxMemStats::Counter>(c));
  }
  for (int p = 0; p < kNvtxMemProblemCount; ++p) {
    m.problems[p] = nvtx_mem_stats_.Problems(static_cast<NvtxMemProblem>(p));
  }
  m.live_heaps = nvtx_mem_.live_heaps();
  m.live_regions = nvtx_mem_.Live();
  for (const NvtxMemRegion& region : m.live_regions) {
    if (region.heap == 0 || m.heap_names.contains(region.heap)) continue;
    if (std::optional<NvtxMemHeap> h = nvtx_mem_.FindHeap(region.heap)) {
      m.heap_names[region.heap] = h->name;
    }
  }
}

}  // namespace gmt
