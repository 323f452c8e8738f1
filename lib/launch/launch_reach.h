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
// points into: built once (Add, then Seal), looked up many times.
class BlockRanges {
 public:
  void Clear() { ranges_.clear(); }
  // [begin, end): a block's extent (the raw block, redzones included); a
  // block already at `begin` is replaced.
  void Add(uint64_t begin, uint64_t end) {
    ranges_.insert_or_assign(begin, end);
  }
  // Forgets the block at `begin`, if any.
  void Remove(uint64_t begin) { ranges_.erase(begin); }
  // The begin of the block holding `address`, or 0. An address one past a
  // block's end counts for that block (a loop's end pointer), unless another
  // block starts there.
  uint64_t Find(uint64_t address) const;
  size_t size() const { return ranges_.size(); }

 private:
  // Kept ordered as blocks come and go: a guarded program adds and removes
  // one at every allocation and free, and a launch looks up its arguments
  // in between.
  absl::btree_map<uint64_t, uint64_t> ranges_;  // begin -> end
};

// The distinct blocks (their begin in `ranges`) the words point into, in the
// order first reached.
std::vector<uint64_t> ReachedBlocks(absl::Span<const ArgWord> words,
                                    const BlockRanges& ranges);

}  // namespace gmt

#endif  // GMT_LIB_LAUNCH_LAUNCH_REACH_H_
