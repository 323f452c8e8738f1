// KernelIdCache: the engine's kernel id (Engine::InternKernel) for a function
// handle, so that a launch costs one lock-free probe instead of a name query.
//
//   uint32_t id = cache.Get(handle, [&] { return DemangledName(handle); });
//
// The name is resolved (a CUDA query, then demangling) and interned once per
// handle, outside any lock; racing first launches of one handle may both
// resolve it, and both get the same id. Entries are never removed: a handle
// CUDA reuses after its module is unloaded keeps the first kernel's name.
//
// Thread safety: Get is thread-safe. Reads are lock-free (acquire loads of an
// open-addressed table); inserts take a mutex. Handles that do not fit the
// table's probe window go to an overflow map read under the mutex.
#ifndef GMT_INTERPOSE_CUPTI_KERNEL_ID_CACHE_H_
#define GMT_INTERPOSE_CUPTI_KERNEL_ID_CACHE_H_

#include <atomic>
#include <cstdint>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"

namespace gmt {

class KernelIdCache {
 public:
  KernelIdCache() = default;
  KernelIdCache(const KernelIdCache&) = delete;
  KernelIdCache& operator=(const KernelIdCache&) = delete;

  // The id for `handle`; `resolve()` returns its name (std::string) and is
  // called only on the first launch of a handle.
  template <typename Resolve>
  uint32_t Get(const void* handle, Resolve&& resolve) {
    const auto key = reinterpret_cast<uintptr_t>(handle);
    uint32_t id = 0;
    if (key != 0 && Find(key, &id)) return id;
    return Insert(key, resolve());
  }

 private:
  static constexpr size_t kSlots = 4096;  // a power of two
  static constexpr size_t kMaxProbe = 16;

  struct Slot {
    std::atomic<uintptr_t> key{0};  // 0: empty; set once, after `id`
    std::atomic<uint32_t> id{0};
  };

  static size_t Home(uintptr_t key) {
    return static_cast<size_t>(((key >> 4) * 0x9E3779B97F4A7C15ull) >> 52) &
           (kSlots - 1);
  }

  // Lock-free lookup in the table only.
  bool Find(uintptr_t key, uint32_t* id) const {
    size_t i = Home(key);
    for (size_t probe = 0; probe < kMaxProbe; ++probe) {
      const uintptr_t k = slots_[i].key.load(std::memory_order_acquire);
      if (k == key) {
        *id = slots_[i].id.load(std::memory_order_relaxed);
        return true;
      }
      if (k == 0) return false;
      i = (i + 1) & (kSlots - 1);
    }
    return FindOverflow(key, id);
  }

  bool FindOverflow(uintptr_t key, uint32_t* id) const;
  uint32_t Insert(uintptr_t key, const std::string& name);

  Slot slots_[kSlots];
  mutable absl::Mutex mu_;  // serializes inserts; guards overflow_
  absl::flat_hash_map<uintptr_t, uint32_t> overflow_ ABSL_GUARDED_BY(mu_);
  std::atomic<bool> has_overflow_{false};
};

}  // namespace gmt

#endif  // GMT_INTERPOSE_CUPTI_KERNEL_ID_CACHE_H_
