#include "lib/leaks/reachability.h"

#include <time.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <deque>
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
                      const std::vector<AddressRange>& runtime_images,
                      size_t near_roots) {
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
  constexpr uint32_t kHalf = kMaxReachHops / 2;
  struct Found {
    uint64_t parent;  // start of the heap object holding `word`; 0: a root
    uint64_t word;
    uint64_t size;
    uint64_t first_word;  // filled when the object is read
    uint32_t depth;       // links from the root: 1 when a root held it
    // The object kHalf links from the root on this object's chain (itself
    // at that depth); 0 when shallower. Where a long chain's first links
    // start, found without walking the chain (a list of 400 000 objects
    // with blocks at the end cost seconds of walking).
    uint64_t root_side;
  };
  absl::flat_hash_map<uint64_t, Found> visited;
  // The hop for the visited object starting at `object`.
  auto hop = [&](uint64_t object, const Found& f) {
    return ReachHop{f.word, object, f.size, f.first_word};
  };
  // The chain that led to the heap object starting at `object`, root first:
  // whole up to kMaxReachHops links, else its first and last kHalf links,
  // with `elided` set to how many were left out of its middle.
  auto chain_to = [&](uint64_t object, uint32_t* elided) {
    std::vector<ReachHop> hops;
    *elided = 0;
    auto it = visited.find(object);
    if (it == visited.end()) return hops;
    const uint32_t depth = it->second.depth;
    // Up from `from`, at most `count` links, appended block side first.
    auto walk_up = [&](uint64_t from, uint32_t count) {
      for (uint32_t i = 0; i < count && from != 0; ++i) {
        auto f = visited.find(from);
        if (f == visited.end()) break;
        hops.push_back(hop(from, f->second));
        from = f->second.parent;
      }
    };
    if (depth <= kMaxReachHops) {
      walk_up(object, depth);
      std::reverse(hops.begin(), hops.end());
      return hops;
    }
    walk_up(object, kHalf);  // the block's end
    std::vector<ReachHop> last(hops.rbegin(), hops.rend());
    hops.clear();
    walk_up(it->second.root_side, kHalf);  // the root's end
    std::reverse(hops.begin(), hops.end());
    hops.insert(hops.end(), last.begin(), last.end());
    *elided = depth - kMaxReachHops;
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
  near_roots = std::min(near_roots, roots.size());
  for (size_t i = roots.size(); i-- > near_roots;) {
    work.push_back(Item{roots[i], static_cast<int32_t>(i), false});
  }
  // The breadth-first phase (see near_roots): its queue, in order; objects
  // it finds within kNearLinks go to its back, deeper ones to `work`.
  std::deque<Item> near;
  for (size_t i = 0; i < near_roots; ++i) {
    near.push_back(Item{roots[i], static_cast<int32_t>(i), false});
  }
  bool near_phase = !near.empty();
  result.roots = roots.size();

  constexpr size_t kWindow = size_t{64} * 1024;  // bytes read per Read() call
  std::vector<uint64_t> buffer(kWindow / sizeof(uint64_t));
  std::vector<uint64_t> batch_words;  // the words of a batch of small objects
  batch_words.reserve(kWindow / sizeof(uint64_t) * 5);

  auto over_budget = [&]() {
    if (limits.max_bytes != 0 && result.bytes_scanned >= limits.max_bytes) {
      return true;
    }
    return limits.deadline_ns != 0 && PreciseNowNs() >= limits.deadline_ns;
  };

  // What a scanned range's words are checked with: the item, where its
  // words were read from, and what the objects it points to inherit for
  // their chains.
  struct Window {
    AddressRange range;
    int32_t root;
    bool is_heap;
    uint32_t depth;
    uint64_t root_side;
    uint64_t at;
  };
  auto window_of = [&](const Item& item, uint64_t at) {
    Window w{item.range, item.root, item.heap, 1, 0, at};
    if (item.heap) {
      if (auto it = visited.find(item.range.begin); it != visited.end()) {
        w.depth = it->second.depth + 1;
        w.root_side = it->second.root_side;
      }
    }
    return w;
  };
  // Checks `count` words read at `win.at`; true when every block is marked.
  auto check_words = [&](const Window& win, const uint64_t* words,
                         size_t count) {
    for (size_t w = 0; w < count; ++w) {
      const uint64_t value = words[w];
      if (value < 4096) continue;  // null and small integers: no pointer
      const uint64_t word_at = win.at + w * sizeof(uint64_t);
      if (std::optional<size_t> block = index.Find(value)) {
        if (!result.reachable[*block]) {
          result.reachable[*block] = true;
          result.via_root[*block] = win.root;
          result.via_word[*block] = word_at;
          if (win.is_heap) {
            result.via_chain[*block] =
                chain_to(win.range.begin, &result.via_chain_elided[*block]);
          }
          if (--unmarked == 0) return true;
        }
        continue;
      }
      std::optional<AddressRange> object = heap.ObjectAt(value);
      // The scan's own heap arrays hold copies of block addresses (and
      // words just read); a stale pointer to them must not count.
      if (object && object->size() >= sizeof(uint64_t) &&
          !index.Owns(*object) &&
          !object->Contains(reinterpret_cast<uint64_t>(buffer.data())) &&
          !object->Contains(reinterpret_cast<uint64_t>(batch_words.data())) &&
          visited
              .try_emplace(
                  object->begin,
                  Found{win.is_heap ? win.range.begin : 0, word_at,
                        object->size(), 0, win.depth,
                        win.depth == kHalf ? object->begin : win.root_side})
              .second) {
        ++result.heap_objects;
        if (near_phase && win.depth < kNearLinks) {
          near.push_back(Item{*object, win.root, true});
        } else {
          work.push_back(Item{*object, win.root, true});
        }
      }
    }
    return false;
  };
  // Reads `part` of `item` window by window; calls `take` with each
  // window's words. False when the item is the runtime's (not followed).
  auto read_part = [&](const Item& item, const AddressRange& part,
                       auto&& take) {
    // Words are 8-byte aligned (pointers stored by compiled code are).
    uint64_t at = (part.begin + 7) & ~uint64_t{7};
    while (at + sizeof(uint64_t) <= part.end) {
      size_t want = static_cast<size_t>(
          std::min<uint64_t>(kWindow, (part.end - at) & ~uint64_t{7}));
      size_t got = reader.Read(at, buffer.data(), want);
      if (got < sizeof(uint64_t)) {
        // Unreadable here: skip to the next page.
        at = (at | 4095) + 1;
        continue;
      }
      size_t words = got / sizeof(uint64_t);
      if (item.heap && at == item.range.begin) {
        if (OwnedByRuntime(buffer.data(), words, reader, runtime_images,
                           roots)) {
          ++result.runtime_objects;
          return false;
        }
        if (auto it = visited.find(item.range.begin); it != visited.end()) {
          it->second.first_word = buffer[0];
        }
      }
      result.bytes_scanned += words * sizeof(uint64_t);
      if (!take(at, words)) return true;
      at += words * sizeof(uint64_t);
    }
    return true;
  };

  // Small heap objects are read in batches, so that the chunk headers their
  // words point at are fetched in one go (HeapOracle::Prefetch); a root or a
  // large object alone, window by window.
  constexpr uint64_t kSmallObject = uint64_t{16} * 1024;
  constexpr size_t kBatchBytes = size_t{256} * 1024;
  std::vector<AddressRange> parts;
  std::vector<Window> batch;
  std::vector<std::pair<size_t, size_t>> batch_spans;  // offset, words
  // Reads one item whole and checks its words; true when the fill is over
  // (every block marked, or a limit hit).
  auto scan_item = [&](const Item& item) {
    parts.clear();
    reader.PointerHoldingParts(item.range, &parts);
    bool all_marked = false;
    for (const AddressRange& part : parts) {
      const bool followed =
          read_part(item, part, [&](uint64_t at, size_t words) {
            heap.Prefetch(buffer.data(), words);
            all_marked = check_words(window_of(item, at), buffer.data(), words);
            if (all_marked) return false;
            if (over_budget()) {
              result.truncated = true;
              return false;
            }
            return true;
          });
      if (all_marked || result.truncated) return true;
      if (!followed) break;
    }
    return false;
  };
  while (near_phase && unmarked > 0) {
    if (near.empty() || result.bytes_scanned >= kNearBytes) {
      // What is left of the near search joins the depth-first fill, nearest
      // last (popped first).
      near_phase = false;
      while (!near.empty()) {
        work.push_back(near.back());
        near.pop_back();
      }
      break;
    }
    if (over_budget()) {
      result.truncated = true;
      return result;
    }
    const Item item = near.front();
    near.pop_front();
    if (scan_item(item)) return result;
  }
  while (!work.empty() && unmarked > 0) {
    if (over_budget()) {
      result.truncated = true;
      return result;
    }
    const bool small =
        work.back().heap && work.back().range.size() <= kSmallObject;
    if (!small) {
      const Item item = work.back();
      work.pop_back();
      if (scan_item(item)) return result;
      continue;
    }
    batch.clear();
    batch_spans.clear();
    batch_words.clear();
    while (!work.empty() && work.back().heap &&
           work.back().range.size() <= kSmallObject &&
           batch_words.size() * sizeof(uint64_t) < kBatchBytes) {
      const Item item = work.back();
      work.pop_back();
      parts.clear();
      reader.PointerHoldingParts(item.range, &parts);
      for (const AddressRange& part : parts) {
        const bool followed =
            read_part(item, part, [&](uint64_t at, size_t words) {
              batch.push_back(window_of(item, at));
              batch_spans.emplace_back(batch_words.size(), words);
              batch_words.insert(
                  batch_words.end(), buffer.begin(),
                  buffer.begin() + static_cast<std::ptrdiff_t>(words));
              return true;
            });
        if (!followed) break;
      }
    }
    heap.Prefetch(batch_words.data(), batch_words.size());
    for (size_t i = 0; i < batch.size(); ++i) {
      if (check_words(batch[i], batch_words.data() + batch_spans[i].first,
                      batch_spans[i].second)) {
        return result;
      }
    }
  }
  return result;
}

}  // namespace gmt
