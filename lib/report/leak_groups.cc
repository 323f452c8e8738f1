#include "lib/report/leak_groups.h"

#include <algorithm>
#include <map>
#include <tuple>

namespace gmt {

NvtxRangeNames RangeNamesOf(const std::vector<NvtxRangeTotals>& totals) {
  NvtxRangeNames names;
  names.reserve(totals.size());
  for (const NvtxRangeTotals& t : totals) names[t.id] = t.name;
  return names;
}

std::string RangeNameOf(const NvtxRangeNames& names, uint32_t id) {
  if (id == kNoNvtxRange) return "";
  auto it = names.find(id);
  return it != names.end() ? it->second : std::string();
}

std::vector<ReportData::Leak> GroupBlockLeaks(
    const std::vector<AllocationRecord>& live,
    const std::vector<ReleasedBlock>& released, const ReachVerdicts& verdicts,
    const NvtxMemRegions::CoverageMap& coverage,
    const NvtxRangeNames& range_names) {
  using Key = std::tuple<StackId, Api, int, std::string, std::string, uint32_t>;
  std::map<Key, ReportData::Leak> groups;
  auto add = [&](const AllocationRecord& r, const std::string& released_by) {
    const ReachVerdict* verdict = nullptr;
    if (released_by.empty()) {
      auto it = verdicts.find(r.address);
      if (it != verdicts.end() && it->second.time_ns == r.time_ns) {
        verdict = &it->second;
      }
    }
    const std::string state = verdict != nullptr ? verdict->state : "";
    ReportData::Leak& leak =
        groups[Key{r.stack, r.api, r.device, released_by, state, r.nvtx_range}];
    if (leak.count == 0) {
      leak.state = state;
      leak.api = r.api;
      leak.kind = r.kind;
      leak.device = r.device;
      leak.stack = r.stack;
      leak.address = r.address;
      leak.released_by = released_by;
      leak.nvtx_range = RangeNameOf(range_names, r.nvtx_range);
      if (verdict != nullptr && state == "reachable") {
        leak.reachable_via = verdict->via;
      }
    }
    leak.bytes += r.bytes;
    ++leak.count;
    if (auto it = coverage.find(r.address);
        it != coverage.end() && released_by.empty()) {
      leak.nvtx_regions += it->second.regions;
      leak.nvtx_region_bytes += it->second.bytes;
    }
  };
  for (const AllocationRecord& r : live) add(r, "");
  for (const ReleasedBlock& b : released) add(b.record, b.reason);
  std::vector<ReportData::Leak> leaks;
  leaks.reserve(groups.size());
  for (auto& [key, leak] : groups) leaks.push_back(std::move(leak));
  SortLeaksLargestFirst(&leaks);
  return leaks;
}

std::vector<ReportData::Leak> GroupRegionLeaks(
    const std::vector<NvtxMemRegion>& regions,
    const absl::flat_hash_map<uint64_t, std::string>& heap_names,
    const NvtxRangeNames& range_names) {
  using Key = std::tuple<StackId, int, uint32_t, std::string, bool>;
  std::map<Key, ReportData::Leak> groups;
  for (const NvtxMemRegion& region : regions) {
    if (!region.leak_checked) continue;
    const AllocationRecord& r = region.record;
    ReportData::Leak& leak = groups[Key{r.stack, r.device, r.nvtx_range,
                                        region.name, region.block != 0}];
    if (leak.count == 0) {
      leak.api = r.api;
      leak.kind = r.kind;
      leak.device = r.device;
      leak.stack = r.stack;
      leak.address = r.address;
      leak.nvtx_range = RangeNameOf(range_names, r.nvtx_range);
      leak.pool_block = region.block;
      leak.pool_api = region.block_api;
      leak.heap = region.heap;
      if (region.heap != 0) {
        if (auto it = heap_names.find(region.heap); it != heap_names.end()) {
          leak.heap_name = it->second;
        }
      }
      leak.region_name = region.name;
    }
    leak.bytes += r.bytes;
    ++leak.count;
  }
  std::vector<ReportData::Leak> leaks;
  leaks.reserve(groups.size());
  for (auto& [key, leak] : groups) leaks.push_back(std::move(leak));
  SortLeaksLargestFirst(&leaks);
  return leaks;
}

bool CountsAsLeakedBytes(const ReportData::Leak& leak) {
  return leak.api != Api::kNvtxRegion && CountsTowardsUsage(leak.kind);
}

LeakedReservations CountLeakedReservations(
    const std::vector<ReportData::Leak>& leaks) {
  LeakedReservations out;
  for (const ReportData::Leak& leak : leaks) {
    if (leak.kind != MemoryKind::kVmmReservation) continue;
    out.count += leak.count;
    out.bytes += leak.bytes;
  }
  return out;
}

LeakStates CountLeakStates(const std::vector<ReportData::Leak>& leaks) {
  LeakStates out;
  for (const ReportData::Leak& leak : leaks) {
    if (leak.state.empty()) continue;
    out.analysed = true;
    const uint64_t bytes = CountsAsLeakedBytes(leak) ? leak.bytes : 0;
    if (leak.state == "lost") {
      out.lost += leak.count;
      out.lost_bytes += bytes;
    } else if (leak.state == "reachable") {
      out.reachable += leak.count;
      out.reachable_bytes += bytes;
    } else if (leak.state == "unknown") {
      out.unknown += leak.count;
      out.unknown_bytes += bytes;
    }
  }
  return out;
}

void SortLeaksLargestFirst(std::vector<ReportData::Leak>* leaks) {
  std::stable_sort(leaks->begin(), leaks->end(),
                   [](const ReportData::Leak& a, const ReportData::Leak& b) {
                     return a.bytes > b.bytes;
                   });
}

}  // namespace gmt
