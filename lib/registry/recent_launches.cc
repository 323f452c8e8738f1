#include "lib/registry/recent_launches.h"

namespace gmt {

void RecentLaunches::Record(uint32_t kernel, uint64_t stream, uint64_t context,
                            int64_t time_ns) {
  const uint64_t n = next_.fetch_add(1, std::memory_order_acq_rel);
  Slot& s = slots_[n % kCapacity];
  s.sequence.store(0, std::memory_order_release);
  s.kernel.store(kernel, std::memory_order_relaxed);
  s.stream.store(stream, std::memory_order_relaxed);
  s.context.store(context, std::memory_order_relaxed);
  s.time_ns.store(time_ns, std::memory_order_relaxed);
  s.sequence.store(n + 1, std::memory_order_release);
}

std::vector<RecentLaunches::Entry> RecentLaunches::Newest(size_t max) const {
  Entry entries[kCapacity];
  const size_t n = NewestInto(entries, max);
  return std::vector<Entry>(entries, entries + n);
}

size_t RecentLaunches::NewestInto(Entry* out, size_t max) const {
  const uint64_t end = next_.load(std::memory_order_acquire);
  if (max > kCapacity) max = kCapacity;
  const uint64_t begin = end > max ? end - max : 0;
  size_t written = 0;
  for (uint64_t n = begin; n < end; ++n) {
    const Slot& s = slots_[n % kCapacity];
    if (s.sequence.load(std::memory_order_acquire) != n + 1) continue;
    Entry e;
    e.kernel = s.kernel.load(std::memory_order_relaxed);
    e.stream = s.stream.load(std::memory_order_relaxed);
    e.context = s.context.load(std::memory_order_relaxed);
    e.time_ns = s.time_ns.load(std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_acquire);
    // Overwritten while we read it: drop it rather than mix two launches.
    if (s.sequence.load(std::memory_order_relaxed) != n + 1) continue;
    out[written++] = e;
  }
  return written;
}

}  // namespace gmt
