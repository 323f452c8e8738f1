// Which tracked blocks a launch's arguments point into.
//
//   std::vector<ArgWord> words;
//   if (ReadArgWords(args, layout, &words)) {          // at the launch
//     std::vector<uint64_t> blocks = ReachedBlocks(words, ranges);
//   }
//
// Every 8-byte-aligned word of every parameter counts (aligned as in the
// buffer the kernel receives), so a pointer inside a by-value struct is found
// as well as a pointer argument. A word is a candidate, not a proof: a size or
// an index that happens to equal an address inside a block adds that block,
// which only costs a check of a few more zones. A pointer the kernel loads
// from device memory (an array of pointers) is not seen here.
//
// The words are copied out of the program's argument memory, so they can be
// resolved later (a launch seen inside a CUPTI callback is checked after it).
#ifndef GMT_LIB_LAUNCH_LAUNCH_REACH_H_
#define GMT_LIB_LAUNCH_LAUNCH_REACH_H_

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <limits>
#include <vector>

#include "absl/container/btree_map.h"
#include "absl/types/span.h"
#include "lib/launch/launch_args.h"
#include "lib/launch/param_layout.h"

namespace gmt {

struct ArgWord {
  uint64_t value = 0;
  // The parameter it is part of (kNoParam: from an `extra` buffer whose
  // layout is unknown) and its offset in the kernel's parameter buffer.
  uint32_t param = 0;
  uint32_t offset = 0;
};
inline constexpr uint32_t kNoParam = 0xFFFFFFFFu;

// Words below this value are never device addresses (null, small counts):
// left out so the list stays short.
inline constexpr uint64_t kLowestAddressWord = 1 << 16;

// Appends the launch's parameter words to `words`, the first `max_words`
// of them (a report that keeps a few need not walk a framework's kilobyte
// of parameters). False when they cannot be read: `kernelParams` without a
// layout, or no parameter buffer in `extra`. A launch with neither has no
// parameters (true, nothing appended).
bool ReadArgWords(const LaunchArgs& args, const ParamLayout* layout,
                  std::vector<ArgWord>* words,
                  size_t max_words = std::numeric_limits<size_t>::max());

// Address ranges of tracked blocks, sorted, for finding the block an address
// points into: kept as blocks come and go, looked up at every launch.
class BlockRanges {
 public:
  void Clear() {
    ranges_.clear();
    UpdateSpan();
  }
  // [begin, end): a block's extent (the raw block, redzones included); a
  // block already at `begin` is replaced.
  void Add(uint64_t begin, uint64_t end) {
    ranges_.insert_or_assign(begin, end);
    UpdateSpan();
  }
  // Forgets the block at `begin`, if any.
  void Remove(uint64_t begin) {
    if (ranges_.erase(begin) > 0) UpdateSpan();
  }
  // The begin of the block holding `address`, or 0. An address one past a
  // block's end counts for that block (a loop's end pointer), unless another
  // block starts there.
  uint64_t Find(uint64_t address) const {
    // Most of a framework's parameter words are sizes, strides and scalars,
    // far from any device address: answered without the tree.
    if (address < lowest_ || address > highest_) return 0;
    return FindInTree(address);
  }
  size_t size() const { return ranges_.size(); }

 private:
  uint64_t FindInTree(uint64_t address) const;
  // What Find can answer at all: from the first block's begin to the last
  // block's end (the tree's answer for anything outside is 0 too).
  void UpdateSpan() {
    if (ranges_.empty()) {
      lowest_ = 1;
      highest_ = 0;
      return;
    }
    lowest_ = ranges_.begin()->first;
    highest_ = std::prev(ranges_.end())->second;
  }

  // Kept ordered as blocks come and go: a guarded program adds and removes
  // one at every allocation and free, and a launch looks up its arguments
  // in between.
  absl::btree_map<uint64_t, uint64_t> ranges_;  // begin -> end
  uint64_t lowest_ = 1;  // empty: no address is in [lowest_, highest_]
  uint64_t highest_ = 0;
};

// The distinct blocks (their begin in `ranges`) the words point into, in the
// order first reached.
std::vector<uint64_t> ReachedBlocks(absl::Span<const ArgWord> words,
                                    const BlockRanges& ranges);

}  // namespace gmt

#endif  // GMT_LIB_LAUNCH_LAUNCH_REACH_H_
