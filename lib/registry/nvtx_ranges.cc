#include "lib/registry/nvtx_ranges.h"

#include <array>
#include <atomic>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/hash/hash.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"

namespace gmt {
namespace {

// Distinct range paths kept. A program that names ranges after loop counters
// ("step 1", "step 2", ...) would otherwise grow the table without bound; past
// the cap, new paths share one id named kOverflowName.
constexpr uint32_t kMaxPaths = 4096;
constexpr char kOverflowName[] = "(other ranges)";

struct PathKey {
  uint32_t parent;
  std::string name;
  bool operator==(const PathKey& o) const {
    return parent == o.parent && name == o.name;
  }
  template <typename H>
  friend H AbslHashValue(H h, const PathKey& k) {
    return H::combine(std::move(h), k.parent, k.name);
  }
};

class PathTable {
 public:
  PathTable() { names_.push_back(""); }  // id 0: no range

  uint32_t Intern(uint32_t parent, absl::string_view name) {
    absl::MutexLock lock(&mu_);
    PathKey key{parent, std::string(name)};
    auto it = ids_.find(key);
    if (it != ids_.end()) return it->second;
    uint32_t id;
    if (names_.size() >= kMaxPaths) {
      if (overflow_id_ == 0) {
        overflow_id_ = static_cast<uint32_t>(names_.size());
        names_.push_back(kOverflowName);
      }
      id = overflow_id_;
    } else {
      id = static_cast<uint32_t>(names_.size());
      const std::string& parent_name =
          names_[parent < names_.size() ? parent : 0];
      names_.push_back(parent_name.empty()
                           ? key.name
                           : absl::StrCat(parent_name, "/", key.name));
    }
    ids_.emplace(std::move(key), id);
    return id;
  }

  std::string Name(uint32_t id) const {
    absl::MutexLock lock(&mu_);
    return id < names_.size() ? names_[id] : std::string();
  }

  std::vector<std::string> Names() const {
    absl::MutexLock lock(&mu_);
    return names_;
  }

 private:
  mutable absl::Mutex mu_;
  absl::flat_hash_map<PathKey, uint32_t> ids_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> names_ ABSL_GUARDED_BY(mu_);
  uint32_t overflow_id_ ABSL_GUARDED_BY(mu_) = 0;
};

PathTable& Paths() {
  static PathTable& table =
      *new PathTable;  // never destroyed: reports run late
  return table;
}

struct Counter {
  std::atomic<uint64_t> allocations{0};
  std::atomic<uint64_t> bytes{0};
};
// One slot per possible id (+1 for the overflow id): no lock on the
// allocation path. Static storage, zero-initialized, never destroyed.
std::array<Counter, kMaxPaths + 1>& Counters() {
  static auto& counters = *new std::array<Counter, kMaxPaths + 1>;
  return counters;
}

std::atomic<bool> g_seen{false};

// The calling thread's open ranges (path ids, innermost last), and a cache of
// (parent, name) -> id so a push in a loop takes no lock after the first.
struct ThreadRanges {
  std::vector<uint32_t> stack;
  absl::flat_hash_map<PathKey, uint32_t> cache;
};
ThreadRanges& Mine() {
  thread_local ThreadRanges ranges;
  return ranges;
}

}  // namespace

int NvtxPush(absl::string_view name) {
  g_seen.store(true, std::memory_order_relaxed);
  if (name.empty()) name = "(unnamed)";
  ThreadRanges& mine = Mine();
  uint32_t parent = mine.stack.empty() ? kNoNvtxRange : mine.stack.back();
  PathKey key{parent, std::string(name)};
  uint32_t id;
  auto it = mine.cache.find(key);
  if (it != mine.cache.end()) {
    id = it->second;
  } else {
    id = Paths().Intern(parent, name);
    // Bounded like the table: a thread pushing ever-new names stops caching.
    if (mine.cache.size() < kMaxPaths) mine.cache.emplace(std::move(key), id);
  }
  mine.stack.push_back(id);
  return static_cast<int>(mine.stack.size()) - 1;
}

int NvtxPop() {
  ThreadRanges& mine = Mine();
  if (mine.stack.empty()) return -1;
  mine.stack.pop_back();
  return static_cast<int>(mine.stack.size());
}

uint32_t NvtxCurrentRange() {
  if (!g_seen.load(std::memory_order_relaxed)) return kNoNvtxRange;
  const ThreadRanges& mine = Mine();
  return mine.stack.empty() ? kNoNvtxRange : mine.stack.back();
}

std::string NvtxRangeName(uint32_t id) {
  if (id == kNoNvtxRange) return "";
  return Paths().Name(id);
}

bool NvtxSeen() { return g_seen.load(std::memory_order_relaxed); }

void NvtxCountAlloc(uint32_t id, uint64_t bytes) {
  if (id == kNoNvtxRange || id > kMaxPaths) return;
  Counter& c = Counters()[id];
  c.allocations.fetch_add(1, std::memory_order_relaxed);
  c.bytes.fetch_add(bytes, std::memory_order_relaxed);
}

std::vector<NvtxRangeTotals> NvtxTotals() {
  std::vector<NvtxRangeTotals> out;
  if (!NvtxSeen()) return out;
  std::vector<std::string> names = Paths().Names();
  for (uint32_t id = 1; id < names.size() && id <= kMaxPaths; ++id) {
    const Counter& c = Counters()[id];
    out.push_back({id, names[id], c.allocations.load(std::memory_order_relaxed),
                   c.bytes.load(std::memory_order_relaxed)});
  }
  return out;
}

}  // namespace gmt
