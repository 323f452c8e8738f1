// ReportState: the picture of the tool's state a report is made from, as
// plain data. The engine takes it (lib/engine/engine.cc, under its locks, or
// its try-locks on the crash path) and AssembleReport
// (lib/report/report_assembly.h) turns it into ReportData without the engine,
// CUDA, NVML or a lock, so every rule of the report (grouping, notes,
// suppressions, ...) can be tested on made-up state.
//
// Everything a report shows that depends on when it is taken is read into
// this picture first: device health (NVML) included, which the engine reads
// before assembly and never on the crash path.
#ifndef GMT_LIB_REPORT_REPORT_STATE_H_
#define GMT_LIB_REPORT_REPORT_STATE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "lib/registry/nvtx_mem_regions.h"
#include "lib/registry/nvtx_ranges.h"
#include "lib/registry/registry.h"
#include "lib/registry/timeline.h"
#include "lib/registry/usage.h"
#include "lib/report/errors.h"
#include "lib/report/health_reading.h"
#include "lib/report/report.h"
#include "lib/report/suppressions.h"

namespace gmt {

// A block CUDA released when its context was destroyed or its device reset:
// not freed by the program, so still a leak, "released by <reason>".
struct ReleasedBlock {
  AllocationRecord record;
  std::string reason;  // "cuCtxDestroy", "cudaDeviceReset", ...
};

// The reachability scan's verdict on one live block (lib/leaks/).
struct ReachVerdict {
  int64_t time_ns = 0;  // the block's allocation time: a reused address differs
  std::string state;    // "lost", "reachable", "unknown"
  std::string via;      // reachable: the root and word that point at it
};
// By the block's address.
using ReachVerdicts = absl::flat_hash_map<uint64_t, ReachVerdict>;

struct ReportState {
  std::string version;
  int pid = 0;
  std::vector<std::string> argv;
  std::string reason;  // "exit", "request", "crash", "cuda-error", ...

  // ---- The options behind sections and notes.
  bool leak_check = true;
  int64_t reachability_max_ms = 0;
  int64_t reachability_max_bytes = 0;
  int64_t timeline_events = 0;
  // A writer that draws the blocks live now is wanted (html, trace, torch):
  // ReportData::Timeline::live is filled.
  bool wants_live_blocks = false;
  int64_t stack_depth = 0;
  bool symbolize = true;
  // ---- What the machine gave the tool, behind notes.
  bool fast_unwinder = true;  // libunwind.so.8 was loaded
  bool line_info = true;      // libdw.so.1 was loaded: file:line in stacks
  // ---- PyTorch tensor mode (torch=1): whether it was asked for, and how
  // many stream-ordered allocations (its tensors) and cudaMalloc ones (the
  // default allocator's segments) were made.
  bool torch_mode = false;
  uint64_t stream_ordered_allocations = 0;
  uint64_t segment_allocations = 0;

  // ---- Usage.
  struct Device {
    int index = 0;
    std::string name;  // empty when unknown
    uint64_t total_bytes = 0;
    UsageFigures usage;
  };
  // Every device noted or used, any order (listed by index; negative indexes
  // are left out: host memory is `host`).
  std::vector<Device> devices;
  UsageFigures host;  // pinned host memory
  uint64_t untracked_frees = 0;

  // ---- Blocks.
  // Live now: device, managed, host, arrays, VMM handles (those released
  // while still mapped included).
  std::vector<AllocationRecord> live;
  std::vector<ReleasedBlock> released;

  // ---- Errors and guard zones.
  std::vector<ErrorRecord> errors;
  uint64_t errors_dropped = 0;
  ReportData::Guard guard;

  // ---- Leak analysis (lib/leaks/): the exit scan's figures (its lost,
  // reachable and unknown totals are counted from the leaks when assembled)
  // and verdicts; call sites flagged for growth.
  ReportData::Reachability reachability;
  ReachVerdicts reach_verdicts;
  std::vector<ReportData::Growth> growth;
  uint64_t growth_samples = 0;

  // ---- NVTX ranges (lib/registry/nvtx_ranges.h): whether any was pushed,
  // and every range path with what was allocated in it (also the names of
  // the ids blocks carry).
  bool nvtx_seen = false;
  std::vector<NvtxRangeTotals> nvtx_ranges;

  // ---- NVTX memory regions of pool allocators
  // (lib/registry/nvtx_mem_regions.h).
  struct NvtxMem {
    bool used = false;  // the program made an nvtxMem* call
    uint64_t counters[NvtxMemStats::kCounterCount] = {};
    uint64_t problems[kNvtxMemProblemCount] = {};
    uint64_t live_heaps = 0;
    std::vector<NvtxMemRegion> live_regions;  // by address
    // Names of the live heaps the live regions were registered in.
    absl::flat_hash_map<uint64_t, std::string> heap_names;
    // Live leak-checked regions per holding block (its user address).
    NvtxMemRegions::CoverageMap coverage;
  } nvtx_mem;

  // ---- Memory over time: the ring's contents, when events are recorded.
  std::optional<TimelineSnapshot> timeline;

  // ---- The crash (present false: none, or its state was locked): what the
  // engine recorded (kind, signal or CUDA error, skipped parts), and the
  // newest kernel launches with launches_seen. The rest of the section is
  // assembled.
  ReportData::Crash crash;

  // ---- GPU health, read through NVML before assembly (never on the crash
  // path); the out-of-memory reports left out as the same burst.
  bool health_read = false;
  HealthReading health;
  uint64_t oom_reports_suppressed = 0;

  // ---- Suppressions loaded (option suppressions=), or why none apply.
  Suppressions suppressions;
  std::string suppressions_error;

  // ---- CUPTI memory records stopped at the program's first pool import
  // (Engine::BeforeMemPoolImport).
  bool activity_stopped_at_pool_import = false;
  // dma-buf exports CUDA refused from a guarded pool block's start
  // (Engine::NoteExportRefused).
  uint64_t pool_export_starts_refused = 0;
};

}  // namespace gmt

#endif  // GMT_LIB_REPORT_REPORT_STATE_H_
