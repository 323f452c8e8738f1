// Exact counts: a runtime call that reaches the driver through the proc table
// counts once, mixed runtime/driver programs count exactly, the static runtime
// is seen, and a 16-thread storm loses nothing.
#include <set>

#include "tests/interpose/interpose_test_util.h"

namespace gmt_test {
namespace {

using CountingTest = InterposeTest;

TEST_F(CountingTest, RuntimeCallThatReachesTheDriverCountsOnce) {
  RunResult r = Run(GMT_LEAK_PROGRAM, {"runtime"});
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  ASSERT_TRUE(r.has_report) << r.Describe();
  const json& s = r.report["summary"];
  // 3 leaked cudaMalloc(4000) + 1 cudaMalloc(999) freed.
  EXPECT_EQ(s.value("allocations", -1), 4) << r.Describe();
  EXPECT_EQ(s.value("frees", -1), 1) << r.Describe();
  EXPECT_EQ(s.value("leaks", -1), 3) << r.Describe();
  EXPECT_EQ(s.value("leaked_bytes", -1), 12000) << r.Describe();
  EXPECT_TRUE(LeaksWithApi(r.report, "cuMemAlloc").empty()) << r.Describe();
}

TEST_F(CountingTest, MixedRuntimeAndDriverCallsCountExactly) {
  RunResult r = Run(GMT_MIXED_PROGRAM);
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  EXPECT_NE(r.out.find("cudaMalloc(0) gave nullptr"), std::string::npos)
      << r.out;
  ASSERT_TRUE(r.has_report) << r.Describe();
  const json& s = r.report["summary"];
  EXPECT_EQ(s.value("allocations", -1), 21) << r.Describe();
  EXPECT_EQ(s.value("frees", -1), 13) << r.Describe();
  EXPECT_EQ(s.value("leaks", -1), 8) << r.Describe();
  EXPECT_EQ(s.value("errors", -1), 0) << r.Describe();
  EXPECT_EQ(TotalCount(LeaksWithApi(r.report, "cudaMalloc")), 3u);
  EXPECT_EQ(TotalBytes(LeaksWithApi(r.report, "cudaMalloc")), 3000u);
  EXPECT_EQ(TotalCount(LeaksWithApi(r.report, "cuMemAlloc")), 2u);
  EXPECT_EQ(TotalBytes(LeaksWithApi(r.report, "cuMemAlloc")), 4000u);
  EXPECT_EQ(TotalCount(LeaksWithApi(r.report, "cudaMallocHost")), 1u);
  EXPECT_EQ(TotalCount(LeaksWithApi(r.report, "cudaMallocPitch")), 1u);
  EXPECT_EQ(TotalCount(LeaksWithApi(r.report, "cudaMalloc3D")), 1u);
  // What the runtime called underneath is never reported on its own.
  for (const char* inner :
       {"cuMemAllocPitch", "cuMemAllocHost", "cuMemHostAlloc",
        "cuMemAllocManaged", "cuMemAllocFromPoolAsync"}) {
    EXPECT_TRUE(LeaksWithApi(r.report, inner).empty()) << inner;
  }
}

TEST_F(CountingTest, StaticallyLinkedRuntimeIsTracked) {
  RunResult r = Run(GMT_STATIC_PROGRAM);
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  ASSERT_TRUE(r.has_report) << r.Describe();
  // Only the driver calls are visible (through the dlsym hook); either name is
  // acceptable, the block and the call site are not negotiable.
  bool found = false;
  for (const json& leak : r.report["leaks"]) {
    std::string api = leak.value("api", "");
    if (leak.value("bytes", uint64_t{0}) != 9000u) continue;
    found = true;
    EXPECT_TRUE(api == "cudaMalloc" || api == "cuMemAlloc") << api;
    EXPECT_EQ(leak.value("count", uint64_t{0}), 1u);
    EXPECT_TRUE(StackHas(leak["stack"], "LeakFromStaticRuntime"))
        << StackFunctions(leak["stack"]);
  }
  EXPECT_TRUE(found) << "no 9000-byte leak\n" << r.Describe();
  EXPECT_EQ(r.report["summary"].value("allocations", -1), 2) << r.Describe();
  EXPECT_EQ(r.report["summary"].value("frees", -1), 1) << r.Describe();
  EXPECT_EQ(r.report["summary"].value("leaks", -1), 1) << r.Describe();
}

// The premise of the test above: the static program exports no runtime.
TEST_F(CountingTest, StaticProgramExportsNoRuntimeSymbols) {
  RunResult r = RunPlain(GMT_STATIC_PROGRAM, {"exports"});
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  EXPECT_NE(r.out.find("cudaMalloc exported: no"), std::string::npos) << r.out;
}

TEST_F(CountingTest, SixteenThreadStormCountsExactly) {
  constexpr int kThreads = 16;
  constexpr int kIterations = 10000;
  constexpr int kLeaks = 3;
  RunOptions options;
  options.timeout_s = 300;
  RunResult r = Run(GMT_STORM_PROGRAM,
                    {std::to_string(kThreads), std::to_string(kIterations),
                     std::to_string(kLeaks)},
                    options);
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  EXPECT_NE(r.out.find("failures 0"), std::string::npos) << r.out;
  ASSERT_TRUE(r.has_report) << r.Describe();
  const json& s = r.report["summary"];
  EXPECT_EQ(s.value("allocations", int64_t{-1}),
            int64_t{kThreads} * (kIterations + kLeaks));
  EXPECT_EQ(s.value("frees", int64_t{-1}), int64_t{kThreads} * kIterations);
  EXPECT_EQ(s.value("leaks", int64_t{-1}), kThreads * kLeaks);
  EXPECT_EQ(s.value("leaked_bytes", int64_t{-1}), kThreads * kLeaks * 128);
  EXPECT_EQ(s.value("errors", int64_t{-1}), 0);
  uint64_t storm_leaks = 0;
  for (const json& leak : r.report["leaks"]) {
    EXPECT_EQ(leak.value("api", ""), "cudaMalloc") << leak.dump();
    if (StackHas(leak["stack"], "StormLeak")) {
      storm_leaks += leak.value("count", uint64_t{0});
    }
  }
  EXPECT_EQ(storm_leaks, uint64_t{kThreads} * kLeaks);
}

}  // namespace
}  // namespace gmt_test
