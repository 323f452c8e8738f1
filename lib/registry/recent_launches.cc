#include "lib/registry/recent_launches.h"

namespace gmt {

void RecentLaunches::Record(const Entry& e) {
  const uint64_t n = next_.fetch_add(1, std::memory_order_acq_rel);
  Slot& s = slots_[n % kCapacity];
  s.sequence.store(0, std::memory_order_release);
  s.kernel.store(e.kernel, std::memory_order_relaxed);
  s.stream.store(e.stream, std::memory_order_relaxed);
  s.context.store(e.context, std::memory_order_relaxed);
  s.time_ns.store(e.time_ns, std::memory_order_relaxed);
  for (int i = 0; i < 3; ++i) {
    s.dims[i].store(e.grid[i], std::memory_order_relaxed);
    s.dims[3 + i].store(e.block[i], std::memory_order_relaxed);
  }
  const uint32_t count =
      e.word_count < kArgWords ? e.word_count : uint32_t{kArgWords};
  s.word_count.store(e.args_read ? count : kArgWords + 1,
                     std::memory_order_relaxed);
  for (uint32_t i = 0; i < count; ++i) {
    s.words[i].store(e.words[i], std::memory_order_relaxed);
    s.word_params[i].store(e.word_params[i], std::memory_order_relaxed);
  }
  const uint32_t frames =
      e.site_count < kSiteFrames ? e.site_count : uint32_t{kSiteFrames};
  s.site_count.store(frames, std::memory_order_relaxed);
  for (uint32_t i = 0; i < frames; ++i) {
    s.site[i].store(e.site[i], std::memory_order_relaxed);
  }
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
    for (int i = 0; i < 3; ++i) {
      e.grid[i] = s.dims[i].load(std::memory_order_relaxed);
      e.block[i] = s.dims[3 + i].load(std::memory_order_relaxed);
    }
    const uint32_t count = s.word_count.load(std::memory_order_relaxed);
    e.args_read = count <= kArgWords;
    e.word_count = e.args_read ? count : 0;
    for (uint32_t i = 0; i < e.word_count; ++i) {
      e.words[i] = s.words[i].load(std::memory_order_relaxed);
      e.word_params[i] = s.word_params[i].load(std::memory_order_relaxed);
    }
    e.site_count = s.site_count.load(std::memory_order_relaxed);
    if (e.site_count > kSiteFrames) e.site_count = kSiteFrames;
    for (uint32_t i = 0; i < e.site_count; ++i) {
      e.site[i] = s.site[i].load(std::memory_order_relaxed);
    }
    std::atomic_thread_fence(std::memory_order_acquire);
    // Overwritten while we read it: drop it rather than mix two launches.
    if (s.sequence.load(std::memory_order_relaxed) != n + 1) continue;
    out[written++] = e;
  }
  return written;
}

}  // namespace gmt
