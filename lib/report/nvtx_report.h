// The report's NVTX section: what each range allocated, and what of it is
// still live. A pure function of the live blocks and the range totals, so it
// is tested on made-up data.
#ifndef GMT_LIB_REPORT_NVTX_REPORT_H_
#define GMT_LIB_REPORT_NVTX_REPORT_H_

#include <vector>

#include "lib/registry/nvtx_ranges.h"
#include "lib/registry/registry.h"
#include "lib/report/report.h"

namespace gmt {

// One entry per range in `totals` (or seen on a live block), sorted by live
// bytes, then bytes allocated, largest first. `totals` names every range id
// (NvtxTotals() lists every path interned, so taken after `live` it covers
// their ids).
std::vector<ReportData::NvtxRange> BuildNvtxSection(
    const std::vector<NvtxRangeTotals>& totals,
    const std::vector<AllocationRecord>& live);

}  // namespace gmt

#endif  // GMT_LIB_REPORT_NVTX_REPORT_H_
