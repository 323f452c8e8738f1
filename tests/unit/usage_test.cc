// Usage: live bytes, peak and counts per device slot, lock-free.
#include "lib/registry/usage.h"

#include <atomic>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace gmt {
namespace {

TEST(UsageTest, AddSubTracksLivePeakAndCounts) {
  Usage usage;
  EXPECT_FALSE(usage.Used(0));
  usage.Add(0, 100);
  usage.Add(0, 50);
  usage.Sub(0, 100);
  usage.Add(0, 20);
  UsageFigures u = usage.Get(0);
  EXPECT_EQ(u.live_bytes, 70u);
  EXPECT_EQ(u.peak_bytes, 150u);
  EXPECT_EQ(u.allocations, 3u);
  EXPECT_EQ(u.frees, 1u);
  EXPECT_TRUE(usage.Used(0));
}

TEST(UsageTest, ReleaseLowersLiveWithoutCountingAFree) {
  Usage usage;
  usage.Add(0, 100);
  usage.Release(0, 60);
  UsageFigures u = usage.Get(0);
  EXPECT_EQ(u.live_bytes, 40u);
  EXPECT_EQ(u.peak_bytes, 100u);
  EXPECT_EQ(u.allocations, 1u);
  EXPECT_EQ(u.frees, 0u);
}

TEST(UsageTest, DevicesAndHostAreSeparate) {
  Usage usage;
  usage.Add(-1, 7);  // host (pinned) memory
  usage.Add(1, 11);
  EXPECT_EQ(usage.Get(-1).live_bytes, 7u);
  EXPECT_EQ(usage.Get(0).live_bytes, 0u);
  EXPECT_EQ(usage.Get(1).live_bytes, 11u);
  EXPECT_FALSE(usage.Used(0));
  EXPECT_TRUE(usage.Used(-1));
  EXPECT_TRUE(usage.Used(1));
}

TEST(UsageTest, DevicesPastTheTableShareTheLastSlot) {
  Usage usage;
  usage.Add(Usage::kMaxDevices + 5, 3);
  EXPECT_EQ(usage.Get(Usage::kMaxDevices + 9).live_bytes, 3u);
  EXPECT_EQ(usage.Get(0).live_bytes, 0u);
}

// Each thread holds at most one block of kBytes at a time, so the true peak is
// at most kThreads * kBytes and at least kBytes; a lost update would show as a
// non-zero live figure at the end or a peak outside those bounds.
TEST(UsageTest, PeakUnderConcurrentAddSub) {
  constexpr int kThreads = 16;
  constexpr int kIterations = 100000;
  constexpr uint64_t kBytes = 4096;
  Usage usage;
  std::atomic<int> go{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      while (go.load(std::memory_order_acquire) == 0) {
      }
      for (int i = 0; i < kIterations; ++i) {
        usage.Add(0, kBytes);
        usage.Sub(0, kBytes);
      }
    });
  }
  go.store(1, std::memory_order_release);
  for (std::thread& th : threads) th.join();
  UsageFigures u = usage.Get(0);
  EXPECT_EQ(u.live_bytes, 0u);
  EXPECT_EQ(u.allocations, uint64_t{kThreads} * kIterations);
  EXPECT_EQ(u.frees, uint64_t{kThreads} * kIterations);
  EXPECT_GE(u.peak_bytes, kBytes);
  EXPECT_LE(u.peak_bytes, kThreads * kBytes);
}

// Every thread first adds its block and waits until all have: the peak must
// then be exactly the sum, whatever the order of the CAS-max updates.
TEST(UsageTest, PeakIsExactWhenAllBlocksAreLiveAtOnce) {
  constexpr int kThreads = 16;
  Usage usage;
  std::atomic<int> added{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      usage.Add(2, uint64_t(t + 1) * 1000);
      added.fetch_add(1);
      while (added.load() < kThreads) {
      }
      usage.Sub(2, uint64_t(t + 1) * 1000);
    });
  }
  for (std::thread& th : threads) th.join();
  UsageFigures u = usage.Get(2);
  EXPECT_EQ(u.peak_bytes, 1000u * kThreads * (kThreads + 1) / 2);
  EXPECT_EQ(u.live_bytes, 0u);
}

}  // namespace
}  // namespace gmt
