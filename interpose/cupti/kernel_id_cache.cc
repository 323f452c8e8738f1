#include "interpose/cupti/kernel_id_cache.h"

#include "lib/engine/engine.h"

namespace gmt {

bool KernelIdCache::FindOverflow(uintptr_t key, uint32_t* id) const {
  if (!has_overflow_.load(std::memory_order_acquire)) return false;
  absl::MutexLock lock(&mu_);
  auto it = overflow_.find(key);
  if (it == overflow_.end()) return false;
  *id = it->second;
  return true;
}

uint32_t KernelIdCache::Insert(uintptr_t key, const std::string& name) {
  const uint32_t id = Engine::Get().InternKernel(name);
  if (key == 0) return id;
  absl::MutexLock lock(&mu_);
  size_t i = Home(key);
  for (size_t probe = 0; probe < kMaxProbe; ++probe) {
    const uintptr_t k = slots_[i].key.load(std::memory_order_relaxed);
    if (k == key) return slots_[i].id.load(std::memory_order_relaxed);
    if (k == 0) {
      slots_[i].id.store(id, std::memory_order_relaxed);
      slots_[i].key.store(key, std::memory_order_release);
      return id;
    }
    i = (i + 1) & (kSlots - 1);
  }
  const uint32_t kept = overflow_.try_emplace(key, id).first->second;
  has_overflow_.store(true, std::memory_order_release);
  return kept;
}

}  // namespace gmt
