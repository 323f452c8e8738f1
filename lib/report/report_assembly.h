// AssembleReport: a report (ReportData) from a picture of the tool's state
// (ReportState, lib/report/report_state.h). A pure function: no engine, CUDA,
// NVML or lock; stacks are symbolized through the function handed in (it reads
// files), once per stack id the report refers to.
//
//   ReportState state = <the engine's picture>;
//   ReportData data = AssembleReport(std::move(state), [&](StackId id) {
//     return symbolizer.SymbolizeStack(depot.Get(id));
//   });
#ifndef GMT_LIB_REPORT_REPORT_ASSEMBLY_H_
#define GMT_LIB_REPORT_REPORT_ASSEMBLY_H_

#include <cstddef>
#include <vector>

#include "absl/functional/function_ref.h"
#include "lib/report/report.h"
#include "lib/report/report_state.h"
#include "lib/stacks/symbolizer.h"

namespace gmt {

// The frames of stack `id` (never called with kNoStack).
using StackSymbolizer =
    absl::FunctionRef<std::vector<SymbolizedFrame>(StackId id)>;

// Points per device in ReportData::Timeline::series: enough for a plot a few
// thousand pixels wide, small enough for the JSON report (~40 bytes a point).
inline constexpr size_t kTimelineSeriesPoints = 2000;

// The crash section lists the largest kMaxCrashListedLive live blocks, and
// names a host-visible block the fault address lies in or within
// kCrashNearBytes of.
inline constexpr size_t kMaxCrashListedLive = 32;
inline constexpr uint64_t kCrashNearBytes = 4096;

// Memory the host can touch (managed, pinned, registered): the blocks a
// host-side fault address may lie in.
bool HostVisible(MemoryKind kind);

// The report of `state`:
//  * devices in index order with their usage, and the summary's totals;
//  * with leak_check, leak entries (lib/report/leak_groups.h): blocks live or
//    released by a teardown, then NVTX regions still registered, largest
//    first; the reachability totals counted from them;
//  * growth, NVTX ranges and memory regions, errors, guard figures, the
//    crash section (its live blocks, the one at the fault address), health,
//    the timeline;
//  * suppressions applied on the symbolized picture;
//  * notes, in this order: reachability bound, NVTX memory API, guard zones
//    left unverified, out-of-memory bursts, timeline truncated, suppressions
//    not applied, slow unwinder, no line info.
ReportData AssembleReport(ReportState state, StackSymbolizer symbolize);

}  // namespace gmt

#endif  // GMT_LIB_REPORT_REPORT_ASSEMBLY_H_
