#include "lib/report/report_assembly.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "lib/core/clock.h"
#include "lib/report/leak_groups.h"
#include "lib/report/nvtx_report.h"
#include "lib/report/suppressions.h"
#include "lib/report/timeline_section.h"

namespace gmt {
namespace {

// Devices in index order and pinned host memory, and the summary's totals.
void AddUsage(const ReportState& state, ReportData* data) {
  for (const ReportState::Device& d : state.devices) {
    if (d.index < 0) continue;
    const UsageFigures& u = d.usage;
    data->devices.push_back(ReportData::Device{d.index, d.name, d.total_bytes,
                                               u.peak_bytes, u.live_bytes,
                                               u.allocations, u.frees});
  }
  std::stable_sort(
      data->devices.begin(), data->devices.end(),
      [](const ReportData::Device& a, const ReportData::Device& b) {
        return a.index < b.index;
      });
  const UsageFigures& host = state.host;
  data->host = ReportData::Device{
      kHostDevice,     "pinned host memory", 0,         host.peak_bytes,
      host.live_bytes, host.allocations,     host.frees};
  ReportData::Summary& s = data->summary;
  for (const ReportData::Device& d : data->devices) {
    s.allocations += d.allocations;
    s.frees += d.frees;
    s.live_bytes_at_exit += d.live_bytes;
  }
  s.allocations += data->host.allocations;
  s.frees += data->host.frees;
  s.live_bytes_at_exit += data->host.live_bytes;
  s.untracked_frees = state.untracked_frees;
}

// The scan's figures, the lost/reachable/unknown totals of the leak entries,
// and the call sites flagged for growth.
void AddLeakAnalysis(ReportState& state, ReportData* data,
                     std::vector<StackId>* ids) {
  data->reachability = state.reachability;
  ReportData::Reachability& s = data->reachability;
  const LeakStates states = CountLeakStates(data->leaks);
  s.lost_bytes = states.lost_bytes;
  s.lost_blocks = states.lost;
  s.reachable_bytes = states.reachable_bytes;
  s.reachable_blocks = states.reachable;
  s.unknown_bytes = states.unknown_bytes;
  s.unknown_blocks = states.unknown;
  if (s.ran && s.truncated) {
    data->notes.push_back(absl::StrFormat(
        "the reachability scan hit its bound (reachability_max_ms=%d, "
        "reachability_max_bytes=%d): blocks not found reachable by then are "
        "\"unknown\"",
        state.reachability_max_ms, state.reachability_max_bytes));
  }
  data->growth_samples = state.growth_samples;
  data->growth = std::move(state.growth);
  for (const ReportData::Growth& g : data->growth) ids->push_back(g.stack);
}

// The nvtx_mem section, its notes, and (with leak_check) the regions still
// registered as leak entries of their own.
void AddNvtxMem(const ReportState& state, ReportData* data,
                std::vector<StackId>* ids) {
  const ReportState::NvtxMem& in = state.nvtx_mem;
  if (!in.used) return;
  ReportData::NvtxMem& m = data->nvtx_mem;
  m.used = true;
  m.heaps_registered = in.counters[NvtxMemStats::kHeapsRegistered];
  m.heaps_unregistered = in.counters[NvtxMemStats::kHeapsUnregistered];
  m.heap_resets = in.counters[NvtxMemStats::kHeapResets];
  m.regions_registered = in.counters[NvtxMemStats::kRegionsRegistered];
  m.regions_unregistered = in.counters[NvtxMemStats::kRegionsUnregistered];
  m.regions_resized = in.counters[NvtxMemStats::kRegionsResized];
  m.regions_ended_by_heap = in.counters[NvtxMemStats::kRegionsEndedByHeap];
  m.regions_ended_by_free = in.counters[NvtxMemStats::kRegionsEndedByFree];
  m.live_heaps = in.live_heaps;
  m.live_regions = in.live_regions.size();
  for (const NvtxMemRegion& r : in.live_regions) {
    m.live_region_bytes += r.record.bytes;
  }
  for (int i = 0; i < kNvtxMemProblemCount; ++i) {
    const auto problem = static_cast<NvtxMemProblem>(i);
    const uint64_t n = in.problems[i];
    if (n == 0) continue;
    m.problems.emplace_back(std::string(NvtxMemProblemName(problem)), n);
    data->notes.push_back(absl::StrCat("NVTX memory API: ", n, " ",
                                       NvtxMemProblemMeaning(problem)));
  }
  if (m.regions_ended_by_free > 0) {
    data->notes.push_back(absl::StrCat(
        "NVTX memory API: ", m.regions_ended_by_free,
        " regions were still registered when the block holding them was "
        "freed; they ended with it (not reported as leaks)"));
  }
  if (!state.leak_check) return;
  std::vector<ReportData::Leak> regions = GroupRegionLeaks(
      in.live_regions, in.heap_names, RangeNamesOf(state.nvtx_ranges));
  if (regions.empty()) return;
  for (ReportData::Leak& leak : regions) {
    ids->push_back(leak.stack);
    data->leaks.push_back(std::move(leak));
  }
  SortLeaksLargestFirst(&data->leaks);
}

// Guard zones left unverified: one note per reason.
void AddGuardNotes(const ReportData::Guard& g,
                   std::vector<std::string>* notes) {
  const std::pair<uint64_t, const char*> unverified[] = {
      {g.unguarded_oom,
       " allocations got no redzones (no memory for them) and were not "
       "guarded"},
      {g.unguarded_capture,
       " stream-ordered allocations made during graph capture were not "
       "guarded"},
      {g.unguarded_refused,
       " allocations got no redzones (CUDA refused the enlarged size) and "
       "were not guarded"},
      {g.unguarded_shareable,
       " allocations from pools shared with other processes were not "
       "guarded (a process without the tool would read them from their "
       "raw start)"},
      {g.check_failures,
       " guard-zone checks could not run on the GPU: redzones were not "
       "verified then"},
      {g.fill_failures,
       " guard-zone fills could not run on the GPU: those redzones were "
       "never armed, so they were not verified"},
  };
  for (const auto& [count, what] : unverified) {
    if (count > 0) notes->push_back(absl::StrCat(count, what));
  }
}

// The crash section: what the engine recorded, with the live blocks at the
// crash (the largest listed) and the host-visible one at the fault address.
void AddCrash(ReportState& state, ReportData* data, std::vector<StackId>* ids) {
  if (!state.crash.present) return;
  data->crash = std::move(state.crash);
  ReportData::Crash& c = data->crash;
  if (c.recent_kernels.empty()) {
    c.recent_kernels_note =
        "no kernel launch was seen by the tool (launches are seen by the "
        "LD_PRELOAD launch shims and, without them, by CUPTI)";
  }
  ids->push_back(c.stack);
  std::vector<AllocationRecord> live = state.live;
  c.live_blocks = live.size();
  for (const AllocationRecord& r : live) {
    if (CountsTowardsUsage(r.kind)) c.live_bytes += r.bytes;
  }
  if (c.has_fault_address) {
    // The host-visible block holding the fault address, else the nearest
    // one within kCrashNearBytes of it.
    const AllocationRecord* best = nullptr;
    uint64_t best_distance = kCrashNearBytes + 1;
    for (const AllocationRecord& r : live) {
      if (!HostVisible(r.kind)) continue;
      const uint64_t a = c.fault_address;
      uint64_t distance = 0;
      if (a < r.address) {
        distance = r.address - a;
      } else if (a >= r.address + r.bytes) {
        distance = a - (r.address + r.bytes) + 1;
      }
      if (distance < best_distance) {
        best = &r;
        best_distance = distance;
      }
    }
    if (best != nullptr) {
      c.has_fault_block = true;
      c.fault_block = *best;
      c.fault_offset = static_cast<int64_t>(c.fault_address - best->address);
      ids->push_back(best->stack);
    }
  }
  std::stable_sort(live.begin(), live.end(),
                   [](const AllocationRecord& a, const AllocationRecord& b) {
                     return a.bytes > b.bytes;
                   });
  if (live.size() > kMaxCrashListedLive) live.resize(kMaxCrashListedLive);
  for (const AllocationRecord& r : live) ids->push_back(r.stack);
  c.live = std::move(live);
  // Device health: the devices' "health" entries of the same report (the
  // health reader is not run from a signal handler).
  c.health_status = c.kind == "signal"
                        ? "not read at the crash (no NVML from a signal "
                          "handler)"
                        : "see devices[].health";
}

// Memory over time: the timeline's events and series, and the blocks live
// now for the writers that draw them.
void AddTimeline(const ReportState& state, ReportData* data,
                 std::vector<StackId>* ids) {
  if (state.timeline) {
    FillReportTimeline(*state.timeline, kTimelineSeriesPoints, &data->timeline);
  }
  if (state.wants_live_blocks) {
    for (const AllocationRecord& r : state.live) {
      if (!CountsTowardsUsage(r.kind)) continue;
      ReportData::Timeline::Block b;
      b.address = r.address;
      b.bytes = r.bytes;
      b.stream = r.stream;
      b.time_ns = SinceStartNs(r.time_ns);
      b.stack = r.stack;
      b.device = r.device;
      b.api = r.api;
      data->timeline.live.push_back(b);
      ids->push_back(r.stack);
    }
  }
  for (const ReportData::Timeline::Event& e : data->timeline.events) {
    ids->push_back(e.stack);
  }
  if (data->timeline.dropped > 0) {
    data->notes.push_back(absl::StrCat(
        "timeline: kept the newest ", data->timeline.events.size(), " of ",
        data->timeline.recorded_events,
        " allocation/free events (timeline_events=", state.timeline_events,
        "); the memory plot before them is sampled coarsely"));
  }
}

}  // namespace

bool HostVisible(MemoryKind kind) {
  return kind == MemoryKind::kManaged || kind == MemoryKind::kPinnedHost ||
         kind == MemoryKind::kRegisteredHost;
}

ReportData AssembleReport(ReportState state, StackSymbolizer symbolize) {
  ReportData data;
  data.version = std::move(state.version);
  data.pid = state.pid;
  data.argv = std::move(state.argv);
  data.reason = std::move(state.reason);
  data.leak_check = state.leak_check;
  AddUsage(state, &data);

  std::vector<StackId> ids;  // every stack the report refers to
  if (state.leak_check) {
    data.leaks = GroupBlockLeaks(state.live, state.released,
                                 state.reach_verdicts, state.nvtx_mem.coverage,
                                 RangeNamesOf(state.nvtx_ranges));
    for (const ReportData::Leak& leak : data.leaks) ids.push_back(leak.stack);
  }
  AddLeakAnalysis(state, &data, &ids);
  AddNvtxMem(state, &data, &ids);
  for (const ReportData::Leak& leak : data.leaks) {
    data.summary.leaks += leak.count;
    if (CountsAsLeakedBytes(leak)) data.summary.leaked_bytes += leak.bytes;
  }
  if (state.nvtx_seen) {
    data.nvtx_ranges = BuildNvtxSection(state.nvtx_ranges, state.live);
  }

  data.errors = std::move(state.errors);
  data.errors_dropped = state.errors_dropped;
  data.summary.errors = data.errors.size() + data.errors_dropped;
  data.guard = std::move(state.guard);
  AddGuardNotes(data.guard, &data.notes);
  for (const ErrorRecord& e : data.errors) {
    ids.push_back(e.stack);
    if (e.allocation) ids.push_back(e.allocation->stack);
    if (e.previous_free) ids.push_back(e.previous_free->free_stack);
    if (e.oom) {  // The holders' call sites
      for (const auto& h : e.oom->holders) ids.push_back(h.stack);
    }
  }
  AddCrash(state, &data, &ids);

  data.health_read = state.health_read;
  data.health = std::move(state.health);
  if (state.health_read && state.oom_reports_suppressed > 0) {
    const uint64_t n = state.oom_reports_suppressed;
    data.notes.push_back(absl::StrCat(
        n, " out-of-memory failure", n == 1 ? " was" : "s were",
        " not reported again (same burst: less than 1 s after the previous "
        "one on that device)"));
  }
  AddTimeline(state, &data, &ids);

  for (StackId id : ids) {
    if (id == kNoStack || data.stacks.contains(id)) continue;
    data.stacks[id] = symbolize(id);
  }
  // Suppressions (lib/report/suppressions.h): filtered on the symbolized
  // picture.
  ApplySuppressions(state.suppressions, &data);
  if (!state.suppressions_error.empty()) {
    data.notes.push_back(
        absl::StrCat("suppressions not applied: ", state.suppressions_error));
  }
  if (state.activity_stopped_at_pool_import) {
    data.notes.push_back(
        "CUPTI memory records were turned off when the program imported a "
        "memory pool from another process (CUPTI 13.0 crashes freeing an "
        "imported pointer while they are on): an allocation no hook saw after "
        "that is not in this report");
  }
  if (state.pool_export_starts_refused > 0) {
    const uint64_t n = state.pool_export_starts_refused;
    data.notes.push_back(absl::StrCat(
        n, " dma-buf export", n == 1 ? "" : "s",
        " (cuMemGetHandleForAddressRange) from the start of a guarded "
        "stream-ordered block failed: CUDA exports a pool block only from its "
        "own start, and the front redzone moved the program's start into it; "
        "guard_skip=async leaves such blocks as CUDA places them"));
  }
  if (state.torch_mode) {
    if (state.stream_ordered_allocations > 0) {
      data.notes.push_back(absl::StrCat(
          "torch mode: ", state.stream_ordered_allocations,
          " stream-ordered allocations (PyTorch's tensors under its "
          "cudaMallocAsync backend), each with its own redzones; freed ones "
          "held in quarantine"));
    } else if (state.segment_allocations > 0) {
      data.notes.push_back(
          "torch mode was asked for, but PyTorch made no stream-ordered "
          "allocation: it did not take its cudaMallocAsync backend (a "
          "PYTORCH_CUDA_ALLOC_CONF naming another backend, an allocator the "
          "script set itself, or CUDA tensors made before the tool was "
          "loaded), so tensors were not guarded one by one");
    }
  }
  if (state.stack_depth > 0 && !state.fast_unwinder) {
    data.notes.push_back(
        "libunwind.so.8 could not be loaded: stacks were captured with glibc's "
        "backtrace(), about 10x slower per frame");
  }
  if (state.stack_depth > 0 && state.symbolize && !state.line_info) {
    data.notes.push_back(
        "libdw.so.1 could not be loaded: stacks show functions and modules "
        "without file:line");
  }
  return data;
}

}  // namespace gmt
