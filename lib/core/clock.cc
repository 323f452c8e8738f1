#include "lib/core/clock.h"

#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>

namespace gmt {
namespace {

// The coarse clock (a few ms of resolution) is enough to tell a person when a
// block was made, and costs a third of the precise one on every tracked call.
int64_t ReadMonotonic() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

struct StartTime {
  int64_t monotonic_ns;
  double wall_seconds;
};

const StartTime& Start() {
  static const StartTime start = [] {
    timespec wall;
    clock_gettime(CLOCK_REALTIME, &wall);
    return StartTime{ReadMonotonic(),
                     static_cast<double>(wall.tv_sec) +
                         static_cast<double>(wall.tv_nsec) * 1e-9};
  }();
  return start;
}

// OS ids of threads by index; index 0 unused. Threads past the table share the
// last slot's id in reports (the index itself stays unique).
constexpr uint32_t kMaxThreads = 1 << 16;
std::atomic<int> g_os_ids[kMaxThreads];
std::atomic<uint32_t> g_next_index{1};

}  // namespace

int64_t PreciseNowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

int64_t NowNs() { return ReadMonotonic(); }

int64_t SinceStartNs(int64_t monotonic_ns) {
  return monotonic_ns - Start().monotonic_ns;
}

double StartWallSeconds() { return Start().wall_seconds; }

uint32_t CurrentThreadIndex() {
  static thread_local uint32_t index = 0;
  if (index == 0) {
    index = g_next_index.fetch_add(1, std::memory_order_relaxed);
    uint32_t slot = index < kMaxThreads ? index : kMaxThreads - 1;
    g_os_ids[slot].store(static_cast<int>(syscall(SYS_gettid)),
                         std::memory_order_relaxed);
  }
  return index;
}

int ThreadOsId(uint32_t thread_index) {
  uint32_t slot = thread_index < kMaxThreads ? thread_index : kMaxThreads - 1;
  return g_os_ids[slot].load(std::memory_order_relaxed);
}

}  // namespace gmt
