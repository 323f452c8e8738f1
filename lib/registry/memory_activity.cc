#include "lib/registry/memory_activity.h"

#include <algorithm>
#include <atomic>
#include <utility>

namespace gmt {
namespace {
std::atomic<MemoryActivitySource*> g_source{nullptr};
constexpr size_t kMaxRecentlyReleased = 65536;
}  // namespace

void SetMemoryActivitySource(MemoryActivitySource* source) {
  g_source.store(source, std::memory_order_release);
}

MemoryActivitySource* GetMemoryActivitySource() {
  return g_source.load(std::memory_order_acquire);
}

void MemoryActivityCrossCheck::Ingest(std::vector<MemoryActivity> records) {
  // Buffers of different threads come in any order: the timestamp decides
  // (a release and the reuse of its address by a later allocation).
  std::stable_sort(records.begin(), records.end(),
                   [](const MemoryActivity& a, const MemoryActivity& b) {
                     return a.timestamp < b.timestamp;
                   });
  for (MemoryActivity& r : records) {
    ++records_;
    if (r.address == 0) continue;
    if (r.op == MemoryActivity::Op::kAlloc) {
      live_[r.address] = Entry{r, State::kNew};
      continue;
    }
    auto it = live_.find(r.address);
    if (it == live_.end()) continue;  // allocated before collection began
    if (it->second.state == State::kAdopted) {
      released_.push_back(it->second.alloc);
    } else if (it->second.state != State::kHooked &&
               it->second.alloc.kind != MemoryKind::kPinnedHost) {
      if (recently_released_.size() >= kMaxRecentlyReleased) {
        recently_released_.clear();  // crude bound: old ones matter least
      }
      recently_released_[r.address] = it->second.alloc;
    }
    live_.erase(it);
  }
}

MemoryActivityCrossCheck::Decision MemoryActivityCrossCheck::Reconcile(
    const View& view, bool final) {
  Decision d;
  d.release = std::move(released_);
  released_.clear();
  for (auto& [address, e] : live_) {
    if (e.state != State::kNew && e.state != State::kLookedAt) continue;
    const MemoryActivity& a = e.alloc;
    if (view.LiveAt(address)) {
      e.state = State::kHooked;  // a hook recorded it: count once
      ++dropped_hooked_;
      continue;
    }
    // Graph memory the tool knows, plain allocations (every such call has a
    // callback, and the tool's own buffers are of this sort), host memory:
    // not what the records are for.
    if (view.GraphAddress(address) || !(a.async || a.pool) ||
        a.kind != MemoryKind::kDevice) {
      e.state = State::kIgnored;
      continue;
    }
    if (!final && e.state == State::kNew) {
      e.state = State::kLookedAt;  // adopted if still unexplained next time
      continue;
    }
    e.state = State::kAdopted;
    ++adopted_;
    d.adopt.push_back(a);
  }
  return d;
}

std::optional<MemoryActivity> MemoryActivityCrossCheck::Explain(
    uint64_t address, const View& view) {
  auto it = live_.find(address);
  if (it == live_.end()) {
    auto released = recently_released_.find(address);
    if (released == recently_released_.end() || view.LiveAt(address) ||
        view.GraphAddress(address)) {
      return std::nullopt;
    }
    MemoryActivity a = released->second;
    recently_released_.erase(released);
    ++adopted_;
    return a;
  }
  Entry& e = it->second;
  // A hook held it (so a hook freed it: this free is a second one), or it
  // was adopted (so it is in the registry, or was freed there).
  if (e.state == State::kHooked || e.state == State::kAdopted) {
    return std::nullopt;
  }
  if (view.LiveAt(address)) {
    e.state = State::kHooked;
    return std::nullopt;
  }
  if (view.GraphAddress(address) || e.alloc.kind == MemoryKind::kPinnedHost) {
    return std::nullopt;
  }
  e.state = State::kAdopted;
  ++adopted_;
  return e.alloc;
}

bool MemoryActivityCrossCheck::LiveInCupti(uint64_t address) const {
  return live_.contains(address);
}

}  // namespace gmt
