#include "lib/registry/mem_pools.h"

namespace gmt {

void MemPools::NoteCreated(uint64_t pool, bool shareable) {
  if (!shareable || pool == 0) return;
  absl::MutexLock lock(&mu_);
  if (shareable_.insert(pool).second) {
    shareable_count_.fetch_add(1, std::memory_order_release);
  }
}

void MemPools::NoteDestroyed(uint64_t pool) {
  absl::MutexLock lock(&mu_);
  if (shareable_.erase(pool) > 0) {
    shareable_count_.fetch_sub(1, std::memory_order_release);
  }
  for (auto& [device, current] : device_pool_) {
    if (current == pool) current = 0;  // back to the device's default pool
  }
}

void MemPools::NoteDevicePool(int device, uint64_t pool) {
  absl::MutexLock lock(&mu_);
  device_pool_[device] = pool;
}

bool MemPools::Shareable(uint64_t pool, int device) const {
  if (shareable_count_.load(std::memory_order_acquire) == 0) return false;
  absl::MutexLock lock(&mu_);
  if (pool == 0) {
    auto it = device_pool_.find(device);
    if (it == device_pool_.end()) return false;
    pool = it->second;
  }
  return shareable_.contains(pool);
}

}  // namespace gmt
