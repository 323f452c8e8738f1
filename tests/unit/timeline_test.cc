// The timeline ring (lib/registry/timeline.h): order, exact bytes in use,
// keeping the newest events when full, the coarse samples, concurrent writers;
// and the series downsampling the plots use.
#include "lib/registry/timeline.h"

#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "lib/report/timeline_section.h"

namespace gmt {
namespace {

using Point = ReportData::Timeline::Point;

void Alloc(Timeline& t, int device, uint64_t address, uint64_t bytes,
           int64_t time) {
  t.Record(TimelineKind::kAlloc, Api::kCudaMalloc, device, address, bytes,
           /*stream=*/0x9, /*stack=*/3, /*thread=*/1, time);
}
void Free(Timeline& t, int device, uint64_t address, uint64_t bytes,
          int64_t time) {
  t.Record(TimelineKind::kFree, Api::kCudaMalloc, device, address, bytes, 0x9,
           3, 2, time);
}

TEST(TimelineTest, DisabledRecordsNothing) {
  Timeline t(0);
  EXPECT_FALSE(t.enabled());
  Alloc(t, 0, 0x1000, 10, 1);
  TimelineSnapshot s = t.Snapshot();
  EXPECT_EQ(s.capacity, 0u);
  EXPECT_EQ(s.recorded, 0u);
  EXPECT_TRUE(s.events.empty());
}

TEST(TimelineTest, KeepsEventsWithTheirFieldsAndBytesInUse) {
  Timeline t(100);
  EXPECT_EQ(t.capacity(), 128u);  // rounded up to a power of two
  Alloc(t, 0, 0x1000, 100, 10);
  Alloc(t, 1, 0x2000, 7, 11);
  Alloc(t, 0, 0x3000, 50, 12);
  Free(t, 0, 0x1000, 100, 13);
  Alloc(t, -1, 0x4000, 4096, 14);
  TimelineSnapshot s = t.Snapshot();
  EXPECT_EQ(s.recorded, 5u);
  EXPECT_EQ(s.dropped, 0u);
  ASSERT_EQ(s.events.size(), 5u);
  const TimelineEvent& first = s.events[0];
  EXPECT_EQ(first.time_ns, 10);
  EXPECT_EQ(first.address, 0x1000u);
  EXPECT_EQ(first.bytes, 100u);
  EXPECT_EQ(first.stream, 0x9u);
  EXPECT_EQ(first.stack, 3u);
  EXPECT_EQ(first.thread, 1u);
  EXPECT_EQ(first.device, 0);
  EXPECT_EQ(first.api, Api::kCudaMalloc);
  EXPECT_EQ(first.kind, TimelineKind::kAlloc);
  EXPECT_EQ(s.events[0].live_bytes, 100u);
  EXPECT_EQ(s.events[1].live_bytes, 7u);  // device 1 counts apart
  EXPECT_EQ(s.events[2].live_bytes, 150u);
  EXPECT_EQ(s.events[3].kind, TimelineKind::kFree);
  EXPECT_EQ(s.events[3].thread, 2u);
  EXPECT_EQ(s.events[3].live_bytes, 50u);
  EXPECT_EQ(s.events[4].device, -1);
  EXPECT_EQ(s.events[4].live_bytes, 4096u);
}

TEST(TimelineTest, WhenFullKeepsTheNewestAndCountsTheDropped) {
  Timeline t(16);
  for (int i = 0; i < 100; ++i) {
    Alloc(t, 0, 0x1000 + i * 0x100, 10, 1000 + i);
  }
  TimelineSnapshot s = t.Snapshot();
  EXPECT_EQ(s.capacity, 16u);
  EXPECT_EQ(s.recorded, 100u);
  EXPECT_EQ(s.dropped, 84u);
  ASSERT_EQ(s.events.size(), 16u);
  EXPECT_EQ(s.events.front().time_ns, 1084);
  EXPECT_EQ(s.events.back().time_ns, 1099);
  // Bytes in use stay exact although the early events are gone.
  EXPECT_EQ(s.events.front().live_bytes, 850u);
  EXPECT_EQ(s.events.back().live_bytes, 1000u);
  // The coarse samples cover the dropped span (every 64th event).
  ASSERT_EQ(s.samples.size(), 2u);
  EXPECT_EQ(s.samples[0].time_ns, 1000);
  EXPECT_EQ(s.samples[0].live_bytes, 10u);
  EXPECT_EQ(s.samples[1].time_ns, 1064);
  EXPECT_EQ(s.samples[1].live_bytes, 650u);
}

TEST(TimelineTest, SamplesStayBoundedByDoublingTheStride) {
  Timeline t(8);
  const uint64_t n = Timeline::kFirstStride * Timeline::kMaxSamples * 4;
  for (uint64_t i = 0; i < n; ++i) Alloc(t, 0, 0x1000, 1, int64_t(i));
  TimelineSnapshot s = t.Snapshot();
  EXPECT_LE(s.samples.size(), Timeline::kMaxSamples);
  EXPECT_GE(s.samples.size(), Timeline::kMaxSamples / 2);
  EXPECT_EQ(s.stride, Timeline::kFirstStride * 4);
  for (size_t i = 1; i < s.samples.size(); ++i) {
    EXPECT_EQ(s.samples[i].time_ns - s.samples[i - 1].time_ns,
              int64_t(s.stride))
        << i;
    EXPECT_EQ(s.samples[i].live_bytes, uint64_t(s.samples[i].time_ns) + 1);
  }
}

TEST(TimelineTest, ConcurrentWritersLoseNothingWhileThereIsRoom) {
  constexpr int kThreads = 8;
  constexpr int kPairs = 5000;
  Timeline t(kThreads * kPairs * 2);
  std::vector<std::thread> threads;
  for (int k = 0; k < kThreads; ++k) {
    threads.emplace_back([&t, k] {
      for (int i = 0; i < kPairs; ++i) {
        const uint64_t address = (uint64_t(k) << 32) | uint64_t(i);
        Alloc(t, k % 2, address, 64, i);
        Free(t, k % 2, address, 64, i);
      }
      Alloc(t, k % 2, 0xdead0000 + k, 1000, kPairs);  // one leak each
    });
  }
  for (auto& th : threads) th.join();
  // A 0-byte marker per device reads the final level.
  Alloc(t, 0, 0xffff0, 0, kPairs + 1);
  Alloc(t, 1, 0xffff1, 0, kPairs + 1);
  TimelineSnapshot s = t.Snapshot();
  EXPECT_EQ(s.recorded, uint64_t(kThreads) * (2 * kPairs + 1) + 2);
  EXPECT_EQ(s.dropped, 0u);
  EXPECT_EQ(s.events.size(), s.recorded);
  // Sorted by time; the markers see every leak of their device, exactly.
  for (size_t i = 1; i < s.events.size(); ++i) {
    ASSERT_LE(s.events[i - 1].time_ns, s.events[i].time_ns);
  }
  uint64_t frees = 0;
  for (const TimelineEvent& e : s.events)
    frees += e.kind == TimelineKind::kFree;
  EXPECT_EQ(frees, uint64_t(kThreads) * kPairs);
  ASSERT_EQ(s.events[s.events.size() - 2].time_ns, kPairs + 1);
  EXPECT_EQ(s.events[s.events.size() - 2].live_bytes, 4000u);
  EXPECT_EQ(s.events.back().live_bytes, 4000u);  // 4 threads x 1000 each
}

TEST(DownsampleSeriesTest, ShortSeriesUnchanged) {
  std::vector<Point> p = {{1, 10}, {2, 20}, {3, 5}};
  EXPECT_EQ(DownsampleSeries(p, 100).size(), 3u);
}

TEST(DownsampleSeriesTest, KeepsPeaksAndTheLastLevelWithinTheBound) {
  std::vector<Point> p;
  for (int i = 0; i < 100000; ++i) p.push_back({i, uint64_t(i % 1000)});
  p.push_back({100000, 999999});  // one spike
  p.push_back({100001, 7});       // and the level after it
  std::vector<Point> d = DownsampleSeries(p, 200);
  EXPECT_LE(d.size(), 200u);
  EXPECT_GE(d.size(), 100u);
  uint64_t peak = 0;
  for (const Point& x : d) peak = std::max(peak, x.live_bytes);
  EXPECT_EQ(peak, 999999u);
  EXPECT_EQ(d.back().time_ns, 100001);
  EXPECT_EQ(d.back().live_bytes, 7u);
  for (size_t i = 1; i < d.size(); ++i) {
    EXPECT_LT(d[i - 1].time_ns, d[i].time_ns);
  }
}

TEST(FillReportTimelineTest, SeriesPerDeviceWithSamplesBeforeTheKeptEvents) {
  Timeline t(16);
  for (int i = 0; i < 200; ++i) Alloc(t, i % 2, 0x1000 + i, 10, 1000 + i);
  ReportData::Timeline out;
  FillReportTimeline(t.Snapshot(), 2000, &out);
  EXPECT_TRUE(out.recorded);
  EXPECT_EQ(out.capacity, 16u);
  EXPECT_EQ(out.recorded_events, 200u);
  EXPECT_EQ(out.dropped, 184u);
  EXPECT_EQ(out.events.size(), 16u);
  ASSERT_EQ(out.series.size(), 2u);
  // Device 0 got the even events: samples at events 0, 64, 128 (all even)
  // come first, then its 8 kept events.
  const auto& s0 = out.series.at(0);
  ASSERT_EQ(s0.size(), 3u + 8u);
  EXPECT_EQ(s0[0].live_bytes, 10u);
  EXPECT_EQ(s0.back().live_bytes, 1000u);
  EXPECT_EQ(out.series.at(1).back().live_bytes, 1000u);
  EXPECT_TRUE(out.events.back().free == false);
}

}  // namespace
}  // namespace gmt
