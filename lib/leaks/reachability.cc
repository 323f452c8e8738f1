#include "lib/leaks/reachability.h"

#include <time.h>

#include <algorithm>
#include <cstring>
#include <numeric>

#include "absl/container/flat_hash_map.h"
#include "lib/core/clock.h"

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

// Whether a heap object, whose first words are `words`, is the CUDA
// runtime's or driver's, and must not be followed (their tables keep a copy
// of every device pointer):
//  * it holds a pointer into a runtime image (looked for in its first 4 KiB:
//    a C++ object's vtable pointer comes first);
//  * it is the runtime's handle of a module's fat binary: its first word
//    points to the module's wrapper (nvcc's __fatDeviceText, among the
//    module's globals: one of `roots`), which starts with the fat binary
//    magic. The handle leads into the runtime's tables of everything (seen
//    on the H200); this tells it apart without a symbol table.
bool OwnedByRuntime(const uint64_t* words, size_t count, MemoryReader& reader,
                    const std::vector<AddressRange>& images,
                    const std::vector<AddressRange>& roots) {
  count = std::min<size_t>(count, 512);
  for (size_t w = 0; w < count; ++w) {
    for (const AddressRange& image : images) {
      if (image.Contains(words[w])) return true;
    }
  }
  constexpr uint32_t kFatbinWrapperMagic = 0x466243b1;
  const uint64_t first = count > 0 ? words[0] : 0;
  if (first == 0 || (first & 7) != 0) return false;
  bool in_globals = false;
  for (const AddressRange& r : roots) in_globals |= r.Contains(first);
  uint32_t magic = 0;
  return in_globals &&
         reader.Read(first, &magic, sizeof(magic)) == sizeof(magic) &&
         magic == kFatbinWrapperMagic;
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
  result.via_chain.assign(blocks.size(), {});
  result.via_chain_elided.assign(blocks.size(), 0);
  if (blocks.empty()) return result;
  BlockIndex index(blocks);
  size_t unmarked = blocks.size();

  // Heap objects already queued, by start (each is read once), with the
  // link that found them, for the chains.
  struct Found {
    uint64_t parent;  // start of the heap object holding `word`; 0: a root
    uint64_t word;
    uint64_t size;
    uint64_t first_word;  // filled when the object is read
  };
  absl::flat_hash_map<uint64_t, Found> visited;
  // The chain that led to the heap object starting at `object`, root first;
  // `elided` gets how many links were left out of its middle.
  auto chain_to = [&](uint64_t object, uint32_t* elided) {
    std::vector<ReachHop> hops;
    // Bounded, so that many blocks at the end of long lists cost little: a
    // longer chain shows its first 4096 links' ends.
    constexpr size_t kWalkLimit = 4096;
    while (object != 0 && hops.size() < kWalkLimit) {
      auto it = visited.find(object);
      if (it == visited.end()) break;
      hops.push_back(ReachHop{it->second.word, object, it->second.size,
                              it->second.first_word});
      object = it->second.parent;
    }
    std::reverse(hops.begin(), hops.end());
    *elided = 0;
    if (hops.size() > kMaxReachHops) {
      *elided = static_cast<uint32_t>(hops.size() - kMaxReachHops);
      hops.erase(hops.begin() + kMaxReachHops / 2,
                 hops.end() - kMaxReachHops / 2);
    }
    return hops;
  };
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
      if (is_heap && at == range.begin) {
        if (OwnedByRuntime(buffer.data(), words, reader, runtime_images,
                           roots)) {
          ++result.runtime_objects;
          break;
        }
        if (auto it = visited.find(range.begin); it != visited.end()) {
          it->second.first_word = buffer[0];
        }
      }
      result.bytes_scanned += words * sizeof(uint64_t);
      for (size_t w = 0; w < words; ++w) {
        uint64_t value = buffer[w];
        if (value < 4096) continue;  // null and small integers: no pointer
        if (std::optional<size_t> block = index.Find(value)) {
          if (!result.reachable[*block]) {
            result.reachable[*block] = true;
            result.via_root[*block] = root;
            result.via_word[*block] = at + w * sizeof(uint64_t);
            if (is_heap) {
              result.via_chain[*block] =
                  chain_to(range.begin, &result.via_chain_elided[*block]);
            }
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
            visited
                .try_emplace(object->begin, Found{is_heap ? range.begin : 0,
                                                  at + w * sizeof(uint64_t),
                                                  object->size(), 0})
                .second) {
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
