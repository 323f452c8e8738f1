#include "lib/registry/nvtx_mem_regions.h"

#include <iterator>
#include <utility>

namespace gmt {
namespace {

struct ProblemInfo {
  absl::string_view name;
  absl::string_view meaning;
};

constexpr ProblemInfo kProblems[] = {
#define GMT_NVTX_MEM_PROBLEM_INFO(Enum, Name, Meaning) {Name, Meaning},
    GMT_NVTX_MEM_PROBLEMS(GMT_NVTX_MEM_PROBLEM_INFO)
#undef GMT_NVTX_MEM_PROBLEM_INFO
};

uint64_t End(const NvtxMemRegion& r) {
  return r.record.address + r.record.bytes;
}

}  // namespace

absl::string_view NvtxMemProblemName(NvtxMemProblem problem) {
  return kProblems[static_cast<int>(problem)].name;
}

absl::string_view NvtxMemProblemMeaning(NvtxMemProblem problem) {
  return kProblems[static_cast<int>(problem)].meaning;
}

bool NvtxMemStats::Used() const {
  for (const auto& c : counters_) {
    if (c.load(std::memory_order_relaxed) != 0) return true;
  }
  for (const auto& p : problems_) {
    if (p.load(std::memory_order_relaxed) != 0) return true;
  }
  return false;
}

void NvtxMemRegions::PublishCountsLocked() {
  live_regions_.store(regions_.size(), std::memory_order_relaxed);
  live_heaps_.store(heaps_.size(), std::memory_order_relaxed);
}

size_t NvtxMemRegions::EndRegionsOfLocked(uint64_t heap) {
  // A full scan: resets and unregisters are rare next to region calls, and a
  // region may lie outside its heap's range (noted when registered).
  size_t ended = 0;
  for (auto it = regions_.begin(); it != regions_.end();) {
    if (it->second.heap == heap) {
      it = regions_.erase(it);
      ++ended;
    } else {
      ++it;
    }
  }
  return ended;
}

size_t NvtxMemRegions::AddHeap(const NvtxMemHeap& heap) {
  absl::MutexLock lock(&mu_);
  size_t ended = 0;
  auto [it, inserted] = heaps_.insert_or_assign(heap.handle, heap);
  (void)it;
  if (!inserted) ended = EndRegionsOfLocked(heap.handle);
  PublishCountsLocked();
  return ended;
}

std::optional<NvtxMemHeap> NvtxMemRegions::FindHeap(uint64_t handle) const {
  absl::MutexLock lock(&mu_);
  auto it = heaps_.find(handle);
  if (it == heaps_.end()) return std::nullopt;
  return it->second;
}

std::optional<size_t> NvtxMemRegions::EndHeap(uint64_t handle, bool remove) {
  absl::MutexLock lock(&mu_);
  if (handle != 0) {
    auto it = heaps_.find(handle);
    if (it == heaps_.end()) return std::nullopt;
    if (remove) heaps_.erase(it);
  }
  size_t ended = EndRegionsOfLocked(handle);
  PublishCountsLocked();
  return ended;
}

NvtxMemRegions::AddResult NvtxMemRegions::AddRegion(
    const NvtxMemRegion& region) {
  const uint64_t begin = region.record.address;
  const uint64_t end = End(region);
  AddResult result;
  absl::MutexLock lock(&mu_);
  auto [it, inserted] = regions_.insert_or_assign(begin, region);
  result.replaced = !inserted;
  // Overlap with a neighbour: the one before must end by `begin`, the one
  // after must start at or after `end`.
  if (it != regions_.begin() && End(std::prev(it)->second) > begin) {
    result.overlaps = true;
  }
  auto next = std::next(it);
  if (next != regions_.end() && next->first < end) result.overlaps = true;
  PublishCountsLocked();
  return result;
}

bool NvtxMemRegions::ResizeRegion(uint64_t address, uint64_t bytes) {
  absl::MutexLock lock(&mu_);
  auto it = regions_.find(address);
  if (it == regions_.end()) return false;
  it->second.record.bytes = bytes;
  return true;
}

bool NvtxMemRegions::NameRegion(uint64_t address, absl::string_view name) {
  absl::MutexLock lock(&mu_);
  auto it = regions_.find(address);
  if (it == regions_.end()) return false;
  it->second.name = std::string(name);
  return true;
}

bool NvtxMemRegions::RemoveRegion(uint64_t address) {
  absl::MutexLock lock(&mu_);
  if (regions_.erase(address) == 0) return false;
  PublishCountsLocked();
  return true;
}

std::optional<NvtxMemRegion> NvtxMemRegions::FindContaining(
    uint64_t address) const {
  absl::MutexLock lock(&mu_);
  auto it = regions_.upper_bound(address);
  if (it == regions_.begin()) return std::nullopt;
  --it;
  if (address >= End(it->second)) return std::nullopt;
  return it->second;
}

size_t NvtxMemRegions::EndWithin(uint64_t begin, uint64_t end) {
  absl::MutexLock lock(&mu_);
  size_t ended = 0;
  std::vector<uint64_t> gone_heaps;
  for (auto it = heaps_.begin(); it != heaps_.end();) {
    if (it->second.address >= begin && it->second.address < end) {
      gone_heaps.push_back(it->first);
      heaps_.erase(it++);
    } else {
      ++it;
    }
  }
  for (uint64_t heap : gone_heaps) ended += EndRegionsOfLocked(heap);
  for (auto it = regions_.lower_bound(begin);
       it != regions_.end() && it->first < end;) {
    it = regions_.erase(it);
    ++ended;
  }
  PublishCountsLocked();
  return ended;
}

std::vector<NvtxMemRegion> NvtxMemRegions::Live() const {
  absl::MutexLock lock(&mu_);
  std::vector<NvtxMemRegion> out;
  out.reserve(regions_.size());
  for (const auto& [address, region] : regions_) out.push_back(region);
  return out;
}

NvtxMemRegions::CoverageMap NvtxMemRegions::CoverageByBlock() const {
  absl::MutexLock lock(&mu_);
  CoverageMap out;
  for (const auto& [address, region] : regions_) {
    if (region.block == 0 || !region.leak_checked) continue;
    Coverage& c = out[region.block];
    ++c.regions;
    c.bytes += region.record.bytes;
  }
  return out;
}

}  // namespace gmt
