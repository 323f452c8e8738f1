#include "lib/reachability.h"

#include <time.h>

#include <algorithm>
#include <cstring>
#include <numeric>

#include "absl/container/flat_hash_set.h"
#include "lib/clock.h"

namespace gmt {
namespace {

// The blocks sorted by start, for a binary search per scanned word.
class BlockIndex {
 public:
  explicit BlockIndex(const std::vector<AddressRange>& blocks)
      : blocks_(blocks), order_(blocks.size()) {
    std::iota(order_.begin(), order_.end(), size_t{0});
    std::sort(order_.begin(), order_.end(), [&](size_t a, size_t b) {
      return blocks_[a].begin < blocks_[b].begin;
    });
    starts_.reserve(order_.size());
    for (size_t i : order_) starts_.push_back(blocks_[i].begin);
    if (!order_.empty()) {
      lowest_ = blocks_[order_.front()].begin;
      for (const AddressRange& b : blocks_)
        highest_ = std::max(highest_, b.end);
    }
  }

  // Whether `object` holds this index's own arrays (block addresses).
  bool Owns(const AddressRange& object) const {
    return object.Contains(reinterpret_cast<uint64_t>(starts_.data())) ||
           object.Contains(reinterpret_cast<uint64_t>(order_.data())) ||
           object.Contains(reinterpret_cast<uint64_t>(blocks_.data()));
  }

  // The index (into the caller's vector) of the block holding `address`.
  std::optional<size_t> Find(uint64_t address) const {
    if (address < lowest_ || address >= highest_) return std::nullopt;
    auto it = std::upper_bound(starts_.begin(), starts_.end(), address);
    if (it == starts_.begin()) return std::nullopt;
    size_t i = order_[static_cast<size_t>(it - starts_.begin()) - 1];
    if (!blocks_[i].Contains(address)) return std::nullopt;
    return i;
  }

 private:
  const std::vector<AddressRange>& blocks_;
  std::vector<size_t> order_;
  std::vector<uint64_t> starts_;
  uint64_t lowest_ = 0;
  uint64_t highest_ = 0;
};

// Whether the heap object `object` holds a pointer into a runtime image
// (looked for in its first 4 KiB: a C++ object's vtable pointer comes
// first).
bool OwnedByRuntime(const AddressRange& object, MemoryReader& reader,
                    const std::vector<AddressRange>& images) {
  if (images.empty()) return false;
  uint64_t words[512];
  const size_t want = static_cast<size_t>(
      std::min<uint64_t>(sizeof(words), object.size() & ~uint64_t{7}));
  const size_t got = reader.Read(object.begin, words, want);
  for (size_t w = 0; w < got / sizeof(uint64_t); ++w) {
    for (const AddressRange& image : images) {
      if (image.Contains(words[w])) return true;
    }
  }
  return false;
}

}  // namespace

ReachResult FloodFill(const std::vector<AddressRange>& roots,
                      const std::vector<AddressRange>& blocks,
                      MemoryReader& reader, HeapOracle& heap,
                      const ReachLimits& limits,
                      const std::vector<AddressRange>& runtime_images) {
  ReachResult result;
  result.reachable.assign(blocks.size(), false);
  result.via_root.assign(blocks.size(), -1);
  result.via_word.assign(blocks.size(), 0);
  if (blocks.empty()) return result;
  BlockIndex index(blocks);
  size_t unmarked = blocks.size();

  // Heap objects already queued, by start: each is read once.
  absl::flat_hash_set<uint64_t> visited;
  // Each range to read, with the root its chain started from.
  struct Item {
    AddressRange range;
    int32_t root;
    bool heap;  // a heap object (else a root itself)
  };
  std::vector<Item> work;
  work.reserve(roots.size());
  for (size_t i = roots.size(); i-- > 0;) {
    work.push_back(Item{roots[i], static_cast<int32_t>(i), false});
  }
  result.roots = roots.size();

  constexpr size_t kWindow = 64 * 1024;  // bytes read per Read() call
  std::vector<uint64_t> buffer(kWindow / sizeof(uint64_t));

  auto over_budget = [&]() {
    if (limits.max_bytes != 0 && result.bytes_scanned >= limits.max_bytes) {
      return true;
    }
    return limits.deadline_ns != 0 && PreciseNowNs() >= limits.deadline_ns;
  };

  while (!work.empty() && unmarked > 0) {
    const auto [range, root, is_heap] = work.back();
    work.pop_back();
    if (is_heap && OwnedByRuntime(range, reader, runtime_images)) {
      ++result.runtime_objects;
      continue;
    }
    // Words are 8-byte aligned (pointers stored by compiled code are).
    uint64_t at = (range.begin + 7) & ~uint64_t{7};
    while (at + sizeof(uint64_t) <= range.end) {
      if (over_budget()) {
        result.truncated = true;
        return result;
      }
      size_t want = static_cast<size_t>(
          std::min<uint64_t>(kWindow, (range.end - at) & ~uint64_t{7}));
      size_t got = reader.Read(at, buffer.data(), want);
      if (got < sizeof(uint64_t)) {
        // Unreadable here: skip to the next page.
        at = (at | 4095) + 1;
        continue;
      }
      size_t words = got / sizeof(uint64_t);
      result.bytes_scanned += words * sizeof(uint64_t);
      for (size_t w = 0; w < words; ++w) {
        uint64_t value = buffer[w];
        if (value < 4096) continue;  // null and small integers: no pointer
        if (std::optional<size_t> block = index.Find(value)) {
          if (!result.reachable[*block]) {
            result.reachable[*block] = true;
            result.via_root[*block] = root;
            result.via_word[*block] = at + w * sizeof(uint64_t);
            if (--unmarked == 0) return result;
          }
          continue;
        }
        std::optional<AddressRange> object = heap.ObjectAt(value);
        // The scan's own heap arrays hold copies of block addresses (and
        // words just read); a stale pointer to them must not count.
        if (object && object->size() >= sizeof(uint64_t) &&
            !index.Owns(*object) &&
            !object->Contains(reinterpret_cast<uint64_t>(buffer.data())) &&
            visited.insert(object->begin).second) {
          ++result.heap_objects;
          work.push_back(Item{*object, root, true});
        }
      }
      at += words * sizeof(uint64_t);
    }
  }
  return result;
}

}  // namespace gmt
