// Leak entries: blocks still allocated (and those a context teardown
// released) grouped by call site, and NVTX regions still registered grouped
// the same way. Pure functions of the blocks and the facts handed in, so the
// grouping is tested on made-up blocks.
#ifndef GMT_LIB_REPORT_LEAK_GROUPS_H_
#define GMT_LIB_REPORT_LEAK_GROUPS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "lib/registry/nvtx_mem_regions.h"
#include "lib/registry/nvtx_ranges.h"
#include "lib/registry/registry.h"
#include "lib/report/report.h"
#include "lib/report/report_state.h"

namespace gmt {

// NVTX range path names by id ("outer/inner"), from the range totals.
using NvtxRangeNames = absl::flat_hash_map<uint32_t, std::string>;
NvtxRangeNames RangeNamesOf(const std::vector<NvtxRangeTotals>& totals);
// The name of `id` ("" for kNoNvtxRange or an id not in `names`).
std::string RangeNameOf(const NvtxRangeNames& names, uint32_t id);

// One entry per (call site, API, device, released_by, reachability state,
// NVTX range): a call site with lost and reachable blocks has an entry each,
// and so has one used in several ranges. Live blocks take their state and,
// when reachable, what points at them from `verdicts` (a verdict counts only
// for the block it was made for: same address and allocation time); released
// blocks have none. A live block's entry adds the live regions `coverage`
// lists in it. An entry's example block is the first of its blocks listed
// (live first, then released). Largest bytes first; ties in key order.
std::vector<ReportData::Leak> GroupBlockLeaks(
    const std::vector<AllocationRecord>& live,
    const std::vector<ReleasedBlock>& released, const ReachVerdicts& verdicts,
    const NvtxMemRegions::CoverageMap& coverage,
    const NvtxRangeNames& range_names);

// One entry per (call site, device, NVTX range, region name, inside a tracked
// block or not) of the leak-checked regions in `regions` (regions of layout
// heaps describe structures, not memory handed out: never leaks).
// `heap_names`: the live heaps' names by handle. Largest bytes first; ties in
// key order.
std::vector<ReportData::Leak> GroupRegionLeaks(
    const std::vector<NvtxMemRegion>& regions,
    const absl::flat_hash_map<uint64_t, std::string>& heap_names,
    const NvtxRangeNames& range_names);

// Whether an entry's bytes are memory lost. Reservations and registrations
// take no memory of their own, and a region lies inside a block counted on
// its own (or in memory the tool did not see allocated): listed, and counted
// as leaked blocks, but not as leaked bytes.
bool CountsAsLeakedBytes(const ReportData::Leak& leak);

// Address ranges reserved with cuMemAddressReserve and never freed: virtual
// address space, not memory (a PyTorch run reserves hundreds of GB of it on
// a card of 141 GB). Counted as leaked blocks, reported apart, never in the
// leaked bytes.
struct LeakedReservations {
  uint64_t count = 0;  // ranges
  uint64_t bytes = 0;  // address space
};
LeakedReservations CountLeakedReservations(
    const std::vector<ReportData::Leak>& leaks);

// The leaked blocks by what the reachability scan found (ReportData::Leak's
// `state`): definitely lost, still reachable (held at exit by a pointer the
// program keeps, as a framework's cache holds its segments), or unknown.
// Bytes as in summary.leaked_bytes (CountsAsLeakedBytes: address space and
// NVTX regions are no memory). `analysed` is false when no leak has a state
// (the scan did not run): then the split says nothing. The one count behind
// the report's `reachability` totals and its summary line.
struct LeakStates {
  bool analysed = false;
  uint64_t lost = 0, lost_bytes = 0;
  uint64_t reachable = 0, reachable_bytes = 0;
  uint64_t unknown = 0, unknown_bytes = 0;
};
LeakStates CountLeakStates(const std::vector<ReportData::Leak>& leaks);

// Largest bytes first, keeping the order of equal ones.
void SortLeaksLargestFirst(std::vector<ReportData::Leak>* leaks);

}  // namespace gmt

#endif  // GMT_LIB_REPORT_LEAK_GROUPS_H_
