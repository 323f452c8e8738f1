// Registry: the live allocations, and a bounded memory of freed ones.
//
// Sharded by address (64 shards, one absl::Mutex each), so threads allocating
// different blocks rarely meet on a lock. Each record is ~64 bytes and holds a
// StackId, never frames.
//
// Thread safety: every member is thread-safe.
#ifndef GMT_LIB_REGISTRY_REGISTRY_H_
#define GMT_LIB_REGISTRY_REGISTRY_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/btree_map.h"
#include "absl/container/flat_hash_map.h"
#include "absl/functional/function_ref.h"
#include "absl/synchronization/mutex.h"
#include "lib/core/api.h"
#include "lib/stacks/stack_depot.h"

namespace gmt {

// The device index used for memory that lives on the host (pinned, registered).
inline constexpr int32_t kHostDevice = -1;

struct AllocationRecord {
  uint64_t address = 0;  // the user's pointer (or handle, for arrays and VMM)
  uint64_t bytes = 0;    // what the user asked for
  // The block CUDA really handed out when the tool added redzones (guard
  // zones); 0 when unguarded (the user's block is the raw block).
  uint64_t raw_address = 0;
  uint64_t raw_bytes = 0;
  uint64_t stream = 0;   // for stream-ordered allocations, else 0
  uint64_t context = 0;  // CUcontext current at the call
  int64_t time_ns = 0;   // monotonic
  StackId stack = kNoStack;
  uint32_t thread = 0;  // CurrentThreadIndex() of the allocating thread
  // The NVTX range path open on that thread (lib/registry/nvtx_ranges.h), or 0.
  uint32_t nvtx_range = 0;
  int32_t device = kHostDevice;
  Api api = Api::kUnknown;
  MemoryKind kind = MemoryKind::kDevice;

  bool guarded() const { return raw_bytes != 0; }
  // The extent CUDA knows: the raw block when guarded.
  uint64_t extent_begin() const { return guarded() ? raw_address : address; }
  uint64_t extent_end() const {
    return guarded() ? raw_address + raw_bytes : address + bytes;
  }
};

struct FreedRecord {
  AllocationRecord allocation;
  StackId free_stack = kNoStack;
  uint32_t free_thread = 0;
  int64_t free_time_ns = 0;
  Api free_api = Api::kUnknown;
};

class Registry {
 public:
  // `freed_capacity`: how many freed blocks are remembered in all (FIFO).
  explicit Registry(size_t freed_capacity);
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;

  // Adds a live block. If a block was already live at that address (its free
  // went unseen), it is replaced and returned.
  std::optional<AllocationRecord> Insert(const AllocationRecord& record);

  // Removes and returns the live block that starts at `address`.
  std::optional<AllocationRecord> Erase(uint64_t address);

  // The live block that starts at `address`.
  std::optional<AllocationRecord> Find(uint64_t address) const;

  // One free, under one lock: if the live block at `address` is of a kind in
  // `kind_mask`, removes it and remembers it as freed by `freed_template`
  // (whose allocation field is filled in); a block of another kind stays.
  struct TakeResult {
    enum class Outcome : uint8_t { kTaken, kWrongKind, kAbsent };
    Outcome outcome = Outcome::kAbsent;
    AllocationRecord record;  // for kTaken and kWrongKind
  };
  TakeResult Take(uint64_t address, uint32_t kind_mask,
                  const FreedRecord& freed_template);

  // The live block whose [address, address + bytes) holds `address` — or, for
  // a guarded block, whose raw extent does. Only device, managed and pinned
  // host blocks (pointer ranges) are indexed. O(log n), one extra lock: used
  // on every checked copy/set.
  std::optional<AllocationRecord> FindContaining(uint64_t address) const;

  // Remembers a free for later double-free reports: the last
  // `freed_capacity` frees are kept, the oldest forgotten first (one FIFO for
  // the whole registry).
  void RememberFreed(const FreedRecord& freed);

  // The most recent remembered free of a block that started at `address`.
  std::optional<FreedRecord> FindFreed(uint64_t address) const;

  // Removes and returns every live block for which `pred` holds (context
  // teardown).
  std::vector<AllocationRecord> EraseIf(
      const std::function<bool(const AllocationRecord&)>& pred);

  // A copy of every live block, in no particular order.
  std::vector<AllocationRecord> Live() const;
  // Calls `visit` for every live block of every shard whose lock is free
  // now, without waiting or allocating: usable from a signal handler (the
  // crashing thread may hold a shard's lock). Returns the shards skipped.
  int TryVisitLive(
      absl::FunctionRef<void(const AllocationRecord&)> visit) const;

  size_t live_count() const;

 private:
  static constexpr int kShards = 64;

  struct Shard {
    mutable absl::Mutex mu;
    absl::flat_hash_map<uint64_t, AllocationRecord> live ABSL_GUARDED_BY(mu);
    // Freed blocks by address. The sequence number tells a stale FIFO slot
    // from a newer free of the same address.
    struct Freed {
      FreedRecord record;
      uint64_t sequence;
    };
    absl::flat_hash_map<uint64_t, Freed> freed ABSL_GUARDED_BY(mu);
  };

  static size_t ShardOf(uint64_t address);
  static bool Indexed(const AllocationRecord& record);
  // Range index maintenance; called with the record's shard lock held (lock
  // order: shard, then range_mu_).
  void IndexInsert(const AllocationRecord& record);
  void IndexErase(const AllocationRecord& record);
  // Stores `freed` in its shard; returns its sequence number.
  uint64_t RememberLocked(Shard& shard, const FreedRecord& freed)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(shard.mu);
  // Appends to the FIFO, then forgets the free that fell out of it (if that
  // address was not freed again since). Takes no shard lock while holding
  // fifo_mu_.
  void PushFifo(uint64_t address, uint64_t sequence);

  struct Extent {
    uint64_t end;      // one past the extent's last byte
    uint64_t address;  // the record's key (the user's pointer)
  };
  mutable absl::Mutex range_mu_;
  absl::btree_map<uint64_t, Extent> ranges_ ABSL_GUARDED_BY(range_mu_);

  const size_t freed_capacity_;
  Shard shards_[kShards];
  std::atomic<uint64_t> next_sequence_{0};
  absl::Mutex fifo_mu_;
  std::vector<std::pair<uint64_t, uint64_t>> fifo_ ABSL_GUARDED_BY(fifo_mu_);
  size_t fifo_head_ ABSL_GUARDED_BY(fifo_mu_) = 0;
};

}  // namespace gmt

#endif  // GMT_LIB_REGISTRY_REGISTRY_H_
