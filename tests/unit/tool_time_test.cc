// The tool's own start-up and exit time, by phase (lib/core/tool_time.h).
#include "lib/core/tool_time.h"

#include <chrono>
#include <cstdio>
#include <thread>

#include "gtest/gtest.h"

namespace gmt {
namespace {

TEST(ToolTimeTest, PhasesAddUpSeparately) {
  const int64_t engine = ToolTimeNs(ToolPhase::kEngine);
  const int64_t cupti = ToolTimeNs(ToolPhase::kCupti);
  AddToolTime(ToolPhase::kEngine, 1500000);
  AddToolTime(ToolPhase::kEngine, 500000);
  AddToolTime(ToolPhase::kEngine, -7);  // a clock step back adds nothing
  EXPECT_EQ(ToolTimeNs(ToolPhase::kEngine), engine + 2000000);
  EXPECT_EQ(ToolTimeNs(ToolPhase::kCupti), cupti);
}

TEST(ToolTimeTest, AScopeCountsItsTime) {
  const int64_t before = ToolTimeNs(ToolPhase::kGuardSetup);
  {
    ScopedToolTime timed(ToolPhase::kGuardSetup);
    std::this_thread::sleep_for(std::chrono::milliseconds(3));
  }
  EXPECT_GE(ToolTimeNs(ToolPhase::kGuardSetup) - before, 3000000);
  EXPECT_LT(ToolTimeNs(ToolPhase::kGuardSetup) - before, 3000000000);
}

// The text sums start-up (engine, CUPTI, guard kernels) and exit (scan and
// report; the NVML wait is part of the report, said apart but not added).
TEST(ToolTimeTest, TextSumsStartUpAndExit) {
  // The counters only grow: the expected text starts from what the other
  // tests left (no other test here times the exit).
  const auto ms = [](ToolPhase phase) {
    return static_cast<double>(ToolTimeNs(phase)) / 1e6;
  };
  AddToolTime(ToolPhase::kCupti, 2100000);
  AddToolTime(ToolPhase::kExitScan, 40000000);
  AddToolTime(ToolPhase::kExitReport, 11000000);
  AddToolTime(ToolPhase::kExitHealth, 4000000);
  char want[256];
  std::snprintf(
      want, sizeof(want),
      "start-up %.1f ms (engine %.1f, CUPTI %.1f, guard kernels %.1f), exit "
      "%.1f ms (reachability %.1f, report %.1f, of which waiting for NVML "
      "%.1f)",
      ms(ToolPhase::kEngine) + ms(ToolPhase::kCupti) +
          ms(ToolPhase::kGuardSetup),
      ms(ToolPhase::kEngine), ms(ToolPhase::kCupti), ms(ToolPhase::kGuardSetup),
      ms(ToolPhase::kExitScan) + ms(ToolPhase::kExitReport),
      ms(ToolPhase::kExitScan), ms(ToolPhase::kExitReport),
      ms(ToolPhase::kExitHealth));
  EXPECT_EQ(ToolTimeText(), want);
  EXPECT_NE(ToolTimeText().find("reachability 40.0"), std::string::npos);
}

// One capture in kStackSampleEvery on each thread is timed; the text
// averages the timed ones by part and scales the count.
TEST(ToolTimeTest, StackCapturesAreSampledAndAveraged) {
  EXPECT_EQ(StackCaptureText(), "");  // nothing timed yet
  int sampled = 0;
  for (uint32_t i = 0; i < 4 * kStackSampleEvery; ++i) {
    sampled += StackCaptureSampled() ? 1 : 0;
  }
  EXPECT_EQ(sampled, 4);
  std::thread other([] {
    int n = 0;
    for (uint32_t i = 0; i < kStackSampleEvery - 1; ++i) {
      n += StackCaptureSampled() ? 1 : 0;
    }
    EXPECT_EQ(n, 0) << "each thread counts its own captures";
  });
  other.join();
  AddStackCaptureSample(3000, 1000, 200);
  AddStackCaptureSample(1000, 3000, 0);
  AddStackCaptureSample(-5, 0, 100);  // a clock step back counts as 0
  char want[160];
  std::snprintf(want, sizeof(want),
                "stack capture: ~%u captures; per capture native 1.33 us, "
                "Python 1.33 us, depot 0.10 us (1 in %u timed)",
                3 * kStackSampleEvery, kStackSampleEvery);
  EXPECT_EQ(StackCaptureText(), want);
}

// One call of each kind in kCallSampleEvery on each thread is timed, less
// the program's own CUDA call it forwards; the text averages by kind, scales
// the count and gives the total, for the kinds with a timed call only.
TEST(ToolTimeTest, CallsAreSampledByKindLessTheProgramsOwnCall) {
  EXPECT_EQ(ToolCallText(), "");  // nothing timed yet
  int sampled = 0;
  for (uint32_t i = 0; i < 2 * kCallSampleEvery; ++i) {
    sampled += CallSampled(ToolCall::kLaunch) ? 1 : 0;
  }
  EXPECT_EQ(sampled, 2);
  // Each kind counts apart: the launches above do not bring a free's turn.
  for (uint32_t i = 0; i + 1 < kCallSampleEvery; ++i) {
    EXPECT_FALSE(CallSampled(ToolCall::kFree));
  }
  EXPECT_TRUE(CallSampled(ToolCall::kFree));
  AddCallSample(ToolCall::kLaunch, 1000);
  AddCallSample(ToolCall::kLaunch, 3000);
  AddCallSample(ToolCall::kFree, -4);  // a clock step back counts as 0
  char want[256];
  std::snprintf(want, sizeof(want),
                "tool time per call: free 0.00 us x ~%u = 0.0 ms, launch "
                "2.00 us x ~%u = %.1f ms (the program's own CUDA calls "
                "excluded; 1 in %u timed)",
                kCallSampleEvery, 2 * kCallSampleEvery,
                2.0 * 2 * kCallSampleEvery / 1e3, kCallSampleEvery);
  EXPECT_EQ(ToolCallText(), want);

  // A timed scope: the forwarded call's sleep is not the tool's.
  for (uint32_t i = 0; i + 1 < kCallSampleEvery; ++i) {
    (void)CallSampled(ToolCall::kSynchronization);
  }
  {
    SampledCallTime timed(ToolCall::kSynchronization);  // the sampled one
    const int r = timed.Forward([] {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      return 7;
    });
    EXPECT_EQ(r, 7);
  }
  const std::string text = ToolCallText();
  const size_t at = text.find("synchronization ");
  ASSERT_NE(at, std::string::npos) << text;
  double us = -1;
  ASSERT_EQ(std::sscanf(text.c_str() + at, "synchronization %lf us", &us), 1)
      << text;
  EXPECT_GE(us, 0.0) << text;
  EXPECT_LT(us, 20000.0) << "the forwarded call was counted: " << text;
  // An unsampled scope adds nothing and still forwards.
  {
    SampledCallTime timed(ToolCall::kSynchronization);
    EXPECT_EQ(timed.Forward([] { return 3; }), 3);
  }
  EXPECT_EQ(ToolCallText(), text);
}

TEST(ToolTimeTest, TheToolsGpuWorkIsTimedInsideSampledCallsOnly) {
  EXPECT_EQ(ToolGpuWorkText(), "");
  {
    SampledGpuWork outside(ToolGpuWork::kFill);  // no call running: nothing
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  for (uint32_t i = 0; i + 1 < kCallSampleEvery; ++i) {
    (void)CallSampled(ToolCall::kAllocation);
  }
  {
    SampledCallTime timed(ToolCall::kAllocation);  // the sampled one
    {
      SampledGpuWork work(ToolGpuWork::kCheck);
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      // Work inside work is the outer one's, counted once.
      SampledGpuWork inner(ToolGpuWork::kCheck);
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    // The program's own call is neither the tool's time nor its GPU work.
    timed.Forward([] {
      SampledGpuWork inside_program(ToolGpuWork::kRelease);
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      return 0;
    });
  }
  {
    SampledCallTime unsampled(ToolCall::kAllocation);
    SampledGpuWork work(ToolGpuWork::kFill);
  }
  const std::string text = ToolGpuWorkText();
  double us = -1;
  ASSERT_EQ(
      std::sscanf(text.c_str(),
                  "tool GPU calls, us per call: allocation check %lf", &us),
      1)
      << text;
  EXPECT_GE(us, 20000.0) << text;  // one timed allocation, its 20 ms
  EXPECT_LT(us, 30000.0) << "the inner work was counted again: " << text;
  EXPECT_EQ(text.find("release"), std::string::npos) << text;
  EXPECT_EQ(text.find("fill"), std::string::npos) << text;
}

TEST(ToolTimeTest, ProgramStreamFillsAreCountedByTheirZones) {
  EXPECT_EQ(ProgramStreamFillText(), "");  // none yet
  CountProgramStreamFill(0);               // an all-empty fill writes nothing
  EXPECT_EQ(ProgramStreamFillText(), "");
  for (uint64_t zones : {1, 2, 3, 3, 3, 4, 7, 32})
    CountProgramStreamFill(zones, /*kernel=*/zones >= 4);
  CountProgramStreamFill(1, /*kernel=*/true);  // one large zone
  CountProgramStreamFill(2, /*kernel=*/true, /*with_check=*/true);
  EXPECT_EQ(ProgramStreamFillText(),
            "program-stream fills: 10 (zones 1: 2, 2: 2, 3: 3, 4 or more: 3; 5 "
            "by the fill kernel, 1 of them with a check)");
}

}  // namespace
}  // namespace gmt
