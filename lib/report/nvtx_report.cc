#include "lib/report/nvtx_report.h"

#include <algorithm>

#include "absl/container/flat_hash_map.h"

namespace gmt {

std::vector<ReportData::NvtxRange> BuildNvtxSection(
    const std::vector<NvtxRangeTotals>& totals,
    const std::vector<AllocationRecord>& live) {
  absl::flat_hash_map<uint32_t, ReportData::NvtxRange> by_id;
  for (const NvtxRangeTotals& t : totals) {
    ReportData::NvtxRange& r = by_id[t.id];
    r.name = t.name;
    r.allocations = t.allocations;
    r.bytes = t.bytes;
  }
  for (const AllocationRecord& block : live) {
    if (block.nvtx_range == kNoNvtxRange) continue;
    ReportData::NvtxRange& r = by_id[block.nvtx_range];
    ++r.live_blocks;
    r.live_bytes += block.bytes;
  }
  std::vector<ReportData::NvtxRange> out;
  out.reserve(by_id.size());
  for (auto& [id, r] : by_id) {
    if (r.allocations == 0 && r.live_blocks == 0) continue;  // no memory
    out.push_back(std::move(r));
  }
  std::sort(out.begin(), out.end(),
            [](const ReportData::NvtxRange& a, const ReportData::NvtxRange& b) {
              if (a.live_bytes != b.live_bytes)
                return a.live_bytes > b.live_bytes;
              if (a.bytes != b.bytes) return a.bytes > b.bytes;
              return a.name < b.name;
            });
  return out;
}

}  // namespace gmt
