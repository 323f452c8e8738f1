// StackDepot: every distinct call stack stored once, named by a 32-bit id.
//
// Records hold a StackId rather than frames (LLVM sanitizers' depot idea), so a
// million allocations from one call site cost one stack. Put() is the hot path:
// a hash and, for a stack seen lately, one lock-free slot that names it;
// otherwise a shard lock and a lookup. Stored stacks are never freed; the
// depot is process-lifetime, leaked at exit on purpose.
//
//   StackId id = depot.Put(frames, n);
//   StackView v = depot.Get(id);   // frames stay valid forever
#ifndef GMT_LIB_STACKS_STACK_DEPOT_H_
#define GMT_LIB_STACKS_STACK_DEPOT_H_

#include <atomic>
#include <cstdint>
#include <span>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"

namespace gmt {

// 0 means "no stack" (capture disabled or failed).
using StackId = uint32_t;
inline constexpr StackId kNoStack = 0;

using StackView = std::span<const uintptr_t>;

class StackDepot {
 public:
  StackDepot();
  StackDepot(const StackDepot&) = delete;
  StackDepot& operator=(const StackDepot&) = delete;

  // Returns the id of this exact frame sequence, storing it if new. Empty input
  // gives kNoStack. Thread-safe.
  StackId Put(const uintptr_t* frames, int count);

  // The frames of `id`, innermost first; empty for kNoStack or an unknown id.
  // Thread-safe; the returned view stays valid for the life of the process.
  StackView Get(StackId id) const;

  // Number of distinct stacks stored.
  size_t size() const;

 private:
  // Id layout: the top kShardBits bits pick the shard, the rest index that
  // shard's entries; index 0 is never used, so no valid id is 0.
  static constexpr int kShardBits = 5;
  static constexpr int kShards = 1 << kShardBits;
  static constexpr int kIndexBits = 32 - kShardBits;
  static constexpr uint32_t kChunkSize = 4096;
  // 4 Mi stacks per shard, 128 Mi in all: far past any real program.
  static constexpr uint32_t kMaxChunks = 1024;

  struct Entry {
    const uintptr_t* frames;
    uint32_t count;
  };

  struct Shard {
    absl::Mutex mu;
    // Hash of the frames -> id. A true 64-bit collision (checked by content)
    // just stores the stack again under a new, unindexed id.
    absl::flat_hash_map<uint64_t, StackId> by_hash ABSL_GUARDED_BY(mu);
    uint32_t next_index ABSL_GUARDED_BY(mu) = 1;
    // Fixed table of chunk pointers so that Get() reads without the lock:
    // an entry is written before its id is published.
    std::atomic<Entry*> chunks[kMaxChunks] = {};
  };

  const Entry* Find(StackId id) const;
  uintptr_t* AllocateFrames(int count);
  // The id of the stack `recent_` remembers for `hash` if it is these frames;
  // kNoStack otherwise.
  StackId FindRecent(uint64_t hash, const uintptr_t* frames, int count) const;

  // Direct-mapped by hash: (upper 32 bits of the hash << 32) | id of a stack
  // put lately. A repeated Put, the common case (a training step's
  // allocations come from a few lines), checks one slot and the stored
  // frames without the shard's lock and map: between the driver's own work
  // in every call those are cache misses in a chain, and the lock is two
  // atomic writes. Stored with release after the entry is written, so a
  // reader that sees the id sees its frames.
  static constexpr int kRecentBits = 12;
  std::atomic<uint64_t> recent_[1 << kRecentBits] = {};

  Shard shards_[kShards];
  std::atomic<size_t> size_{0};
  absl::Mutex arena_mu_;
  uintptr_t* arena_ ABSL_GUARDED_BY(arena_mu_) = nullptr;
  size_t arena_left_ ABSL_GUARDED_BY(arena_mu_) = 0;
};

}  // namespace gmt

#endif  // GMT_LIB_STACKS_STACK_DEPOT_H_
