#include "lib/registry/timeline.h"

#include <sys/mman.h>

#include <algorithm>
#include <climits>
#include <map>

#include "lib/core/clock.h"

namespace gmt {
namespace {

constexpr uint64_t kBusy = ~uint64_t{0};

int DeviceSlot(int32_t device) {
  if (device < 0) return 0;
  return device < 64 ? device + 1 : 64;
}

uint64_t RoundUpToPowerOfTwo(uint64_t n) {
  uint64_t p = 1;
  while (p < n) p <<= 1;
  return p;
}

}  // namespace

Timeline::Timeline(uint64_t capacity) {
  if (capacity == 0) return;
  const uint64_t slots = RoundUpToPowerOfTwo(capacity);
  mapped_bytes_ = slots * sizeof(Slot);
  // Reserved, not committed: pages are touched only as events arrive. Zeroed
  // pages make every seq 0, which no complete event has.
  void* p = mmap(nullptr, mapped_bytes_, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) {
    mapped_bytes_ = 0;
    return;  // no timeline rather than no tool
  }
  slots_ = static_cast<Slot*>(p);
  mask_ = slots - 1;
  absl::MutexLock lock(&samples_mu_);
  samples_.reserve(kMaxSamples);
}

Timeline::~Timeline() {
  if (slots_ != nullptr) munmap(slots_, mapped_bytes_);
}

void Timeline::Record(TimelineKind kind, Api api, int32_t device,
                      uint64_t address, uint64_t bytes, uint64_t stream,
                      StackId stack, uint32_t thread, int64_t time_ns) {
  if (slots_ == nullptr) return;
  std::atomic<int64_t>& counter = live_[DeviceSlot(device)];
  const int64_t delta = kind == TimelineKind::kAlloc
                            ? static_cast<int64_t>(bytes)
                            : -static_cast<int64_t>(bytes);
  const int64_t live = std::max<int64_t>(
      0, counter.fetch_add(delta, std::memory_order_relaxed) + delta);
  const uint64_t index = next_.fetch_add(1, std::memory_order_relaxed);
  Slot& slot = slots_[index & mask_];
  // Seqlock write: mark busy, then the payload, then publish the index.
  slot.seq.store(kBusy, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  slot.words[0].store(static_cast<uint64_t>(time_ns),
                      std::memory_order_relaxed);
  slot.words[1].store(address, std::memory_order_relaxed);
  slot.words[2].store(bytes, std::memory_order_relaxed);
  slot.words[3].store(stream, std::memory_order_relaxed);
  slot.words[4].store(static_cast<uint64_t>(live), std::memory_order_relaxed);
  slot.words[5].store(uint64_t{stack} << 32 | thread,
                      std::memory_order_relaxed);
  slot.words[6].store(uint64_t{static_cast<uint32_t>(device)} << 32 |
                          uint64_t{static_cast<uint8_t>(api)} << 8 |
                          static_cast<uint8_t>(kind),
                      std::memory_order_relaxed);
  slot.seq.store(index + 1, std::memory_order_release);
  // The stride is a power of two: a mask, not a division, on every event.
  if ((index & (stride_.load(std::memory_order_relaxed) - 1)) == 0) {
    Sample(index, time_ns, device, static_cast<uint64_t>(live));
  }
}

void Timeline::Sample(uint64_t index, int64_t time_ns, int32_t device,
                      uint64_t live) {
  absl::MutexLock lock(&samples_mu_);
  const uint64_t stride = stride_.load(std::memory_order_relaxed);
  if (index % stride != 0) return;  // the stride grew meanwhile
  if (samples_.size() == kMaxSamples) {
    // Full: keep every other sample and sample half as often from now on.
    size_t kept = 0;
    for (size_t i = 0; i < samples_.size(); i += 2)
      samples_[kept++] = samples_[i];
    samples_.resize(kept);
    stride_.store(stride * 2, std::memory_order_relaxed);
    if (index % (stride * 2) != 0) return;
  }
  samples_.push_back(TimelineSample{time_ns, device, live});
}

TimelineSnapshot Timeline::Snapshot() const {
  TimelineSnapshot s;
  if (slots_ == nullptr) return s;
  s.capacity = mask_ + 1;
  const uint64_t end = next_.load(std::memory_order_acquire);
  const uint64_t begin = end > s.capacity ? end - s.capacity : 0;
  s.recorded = end;
  s.events.reserve(end - begin);
  for (uint64_t i = begin; i < end; ++i) {
    const Slot& slot = slots_[i & mask_];
    const uint64_t before = slot.seq.load(std::memory_order_acquire);
    if (before != i + 1) continue;  // overwritten, or still being written
    uint64_t w[7];
    for (int k = 0; k < 7; ++k) {
      w[k] = slot.words[k].load(std::memory_order_relaxed);
    }
    std::atomic_thread_fence(std::memory_order_acquire);
    if (slot.seq.load(std::memory_order_relaxed) != before) continue;
    TimelineEvent e;
    e.time_ns = static_cast<int64_t>(w[0]);
    e.address = w[1];
    e.bytes = w[2];
    e.stream = w[3];
    e.live_bytes = w[4];
    e.stack = static_cast<StackId>(w[5] >> 32);
    e.thread = static_cast<uint32_t>(w[5]);
    e.device = static_cast<int32_t>(static_cast<uint32_t>(w[6] >> 32));
    e.api = static_cast<Api>(static_cast<uint8_t>(w[6] >> 8));
    e.kind = static_cast<TimelineKind>(static_cast<uint8_t>(w[6]));
    s.events.push_back(e);
  }
  s.dropped = s.recorded - s.events.size();
  // Threads interleave between taking an index and stamping the time: order
  // by time so readers see a monotonic log (stable: same-time events keep
  // their recording order).
  auto earlier = [](const TimelineEvent& a, const TimelineEvent& b) {
    return a.time_ns < b.time_ns;
  };
  // Usually in order already (one thread, or a coarse clock): no sort, no
  // second copy of up to timeline_events events.
  if (!std::is_sorted(s.events.begin(), s.events.end(), earlier)) {
    std::stable_sort(s.events.begin(), s.events.end(), earlier);
  }
  absl::MutexLock lock(&samples_mu_);
  s.samples = samples_;
  s.stride = stride_.load(std::memory_order_relaxed);
  return s;
}

}  // namespace gmt
