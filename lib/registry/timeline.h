// Timeline: a bounded log of allocation and free events, for the reports that
// show memory over time (Chrome trace, PyTorch snapshot, HTML plot).
//
// The registry only knows what is live; the timeline remembers what happened.
// It is a preallocated ring of fixed-size slots (one cache line each) claimed
// with one atomic increment, so recording costs no lock and no heap
// allocation; the slots are reserved with mmap(MAP_NORESERVE) and only touched
// as events arrive, so a program that allocates little pays little memory.
// When the ring is full the oldest events are overwritten (the newest are
// kept) and counted as dropped.
//
// Every event also carries its device's exact bytes in use right after it
// (a per-device atomic counter), so a plot drawn from the events kept is exact
// even when older ones were dropped. The span before the oldest kept event is
// covered by a coarse series: one sample every `stride` events (the stride
// doubles whenever the sample array fills, so it is bounded too).
//
//   Timeline timeline(1 << 20);
//   timeline.Record(TimelineKind::kAlloc, api, device, ptr, bytes, stream,
//                   stack, thread, NowNs());
//   TimelineSnapshot s = timeline.Snapshot();   // at report time
//
// Thread safety: Record and Snapshot may run concurrently from any threads. A
// slot being overwritten while Snapshot reads it is skipped (a seqlock per
// slot tells), and counted as dropped.
#ifndef GMT_LIB_REGISTRY_TIMELINE_H_
#define GMT_LIB_REGISTRY_TIMELINE_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "lib/core/api.h"
#include "lib/stacks/stack_depot.h"

namespace gmt {

enum class TimelineKind : uint8_t { kAlloc = 0, kFree = 1 };

// One event as read back by Snapshot().
struct TimelineEvent {
  int64_t time_ns = 0;  // monotonic (NowNs)
  uint64_t address = 0;
  uint64_t bytes = 0;
  uint64_t stream = 0;
  uint64_t live_bytes = 0;  // the device's bytes in use right after the event
  StackId stack = kNoStack;
  uint32_t thread = 0;
  int32_t device = -1;  // -1: pinned host memory
  Api api = Api::kUnknown;
  TimelineKind kind = TimelineKind::kAlloc;
};

// A coarse sample of one device's bytes in use.
struct TimelineSample {
  int64_t time_ns = 0;  // monotonic
  int32_t device = -1;
  uint64_t live_bytes = 0;
};

struct TimelineSnapshot {
  uint64_t capacity = 0;                // slots in the ring
  uint64_t recorded = 0;                // events ever recorded
  uint64_t dropped = 0;                 // recorded but not in `events`
  std::vector<TimelineEvent> events;    // oldest first
  std::vector<TimelineSample> samples;  // oldest first, every `stride` events
  uint64_t stride = 0;
};

class Timeline {
 public:
  // Keeps the newest `capacity` events, rounded up to a power of two (so a
  // slot index is a mask, not a division). 0 disables recording.
  explicit Timeline(uint64_t capacity);
  ~Timeline();
  Timeline(const Timeline&) = delete;
  Timeline& operator=(const Timeline&) = delete;

  bool enabled() const { return slots_ != nullptr; }
  // The ring's own memory: scans of the process (reachability) must not
  // take it for the program's, since it holds every block's address.
  uint64_t mapped_begin() const { return reinterpret_cast<uint64_t>(slots_); }
  uint64_t mapped_end() const { return mapped_begin() + mapped_bytes_; }
  uint64_t capacity() const { return mask_ + (slots_ ? 1 : 0); }

  // Appends one event. `bytes` is added to (alloc) or subtracted from (free)
  // the device's bytes in use. Lock-free, no allocation.
  void Record(TimelineKind kind, Api api, int32_t device, uint64_t address,
              uint64_t bytes, uint64_t stream, StackId stack, uint32_t thread,
              int64_t time_ns);

  // A consistent copy of what is kept. Takes the sample lock only.
  TimelineSnapshot Snapshot() const;

  // Samples kept before the stride doubles.
  static constexpr size_t kMaxSamples = 4096;
  static constexpr uint64_t kFirstStride = 64;

 private:
  // Eight words, one cache line: writers on different threads never share a
  // line. `seq` is the event's index + 1 once complete, kBusy while written.
  struct alignas(64) Slot {
    std::atomic<uint64_t> words[7];
    std::atomic<uint64_t> seq;
  };
  static constexpr int kDeviceSlots = 65;  // host, devices 0..63

  void Sample(uint64_t index, int64_t time_ns, int32_t device, uint64_t live);

  Slot* slots_ = nullptr;
  uint64_t mask_ = 0;
  size_t mapped_bytes_ = 0;
  alignas(64) std::atomic<uint64_t> next_{0};
  alignas(64) std::atomic<int64_t> live_[kDeviceSlots] = {};
  std::atomic<uint64_t> stride_{kFirstStride};

  mutable absl::Mutex samples_mu_;
  std::vector<TimelineSample> samples_ ABSL_GUARDED_BY(samples_mu_);
};

}  // namespace gmt

#endif  // GMT_LIB_REGISTRY_TIMELINE_H_
