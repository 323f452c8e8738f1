// MemPools: which stream-ordered memory pools the program made shareable with
// other processes (cudaMemPoolCreate / cuMemPoolCreate with export handle
// types), and which pool each device allocates from (cudaDeviceSetMemPool).
//
// A block from such a pool may be exported (cudaMemPoolExportPointer) and
// imported by a process the tool does not run in, which sees the block from
// its start: redzones there would shift every byte the peer reads. So the
// tool never guards those blocks (docs/transparency.md); this is how it tells.
//
//   pools.NoteCreated(pool, /*shareable=*/true);
//   pools.NoteDevicePool(device, pool);
//   if (pools.Shareable(pool_or_0, device)) ...   // leave unguarded
//
// Thread safety: every member is thread-safe; Shareable costs one relaxed
// load while no shareable pool exists.
#ifndef GMT_LIB_REGISTRY_MEM_POOLS_H_
#define GMT_LIB_REGISTRY_MEM_POOLS_H_

#include <atomic>
#include <cstdint>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/synchronization/mutex.h"

namespace gmt {

class MemPools {
 public:
  // A pool was created; `shareable` when it has export handle types.
  void NoteCreated(uint64_t pool, bool shareable);
  void NoteDestroyed(uint64_t pool);
  // `device` now allocates (cudaMallocAsync) from `pool`.
  void NoteDevicePool(int device, uint64_t pool);
  // One relaxed load: whether any shareable pool exists at all.
  bool AnyShareable() const {
    return shareable_count_.load(std::memory_order_acquire) != 0;
  }
  // Whether blocks from `pool` may leave the process. `pool` 0: the pool
  // `device` allocates from (a device's default pool is never shareable).
  bool Shareable(uint64_t pool, int device) const;

 private:
  std::atomic<int> shareable_count_{0};
  mutable absl::Mutex mu_;
  absl::flat_hash_set<uint64_t> shareable_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<int, uint64_t> device_pool_ ABSL_GUARDED_BY(mu_);
};

}  // namespace gmt

#endif  // GMT_LIB_REGISTRY_MEM_POOLS_H_
