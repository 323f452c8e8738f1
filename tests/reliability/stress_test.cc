// Load: the report's accounting stays exact under 16 threads on three
// allocation APIs and four streams; the tool's own host memory per live block
// is bounded; a long alloc/free churn with guard zones and quarantine on does
// not make the tool grow.
#include <cstdio>

#include "tests/reliability/reliability_util.h"

namespace gmt_test {
namespace {

class StressTest : public InterposeTest {
 protected:
  // Runs with and without the tool; both must succeed.
  void RunBoth(const std::vector<std::string>& args, const std::string& options,
               RunResult* plain, RunResult* traced, int timeout_s = 600) {
    RunOptions plain_options;
    plain_options.preload = false;
    plain_options.set_gmt_options = false;
    plain_options.timeout_s = timeout_s;
    *plain = Run(GMT_STRESS_PROGRAM, args, plain_options);
    RunOptions tool_options;
    tool_options.gmt_options = options;
    tool_options.timeout_s = timeout_s;
    *traced = Run(GMT_STRESS_PROGRAM, args, tool_options);
  }
};

// 16 threads x 3000 pairs over cudaMalloc, cudaMallocAsync (4 streams) and
// cuMemAlloc, then 3 leaks per thread: the report's totals are the program's
// own counts, to the block and the byte, with no error.
TEST_F(StressTest, SixteenThreadsExactAccounting) {
  constexpr int kThreads = 16;
  constexpr int kIterations = 3000;
  RunResult plain, r;
  RunBoth({"threads", std::to_string(kThreads), std::to_string(kIterations)},
          "", &plain, &r);
  ASSERT_EQ(plain.exit_code, 0) << plain.Describe();
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  EXPECT_EQ(r.out, plain.out);
  std::map<std::string, long> counted = LineFigures(r.out, "totals");
  const long allocations = counted["allocations"];
  ASSERT_EQ(allocations, kThreads * (kIterations + 3)) << r.out;
  ASSERT_EQ(counted["frees"], kThreads * kIterations) << r.out;
  ASSERT_EQ(counted["failures"], 0) << r.out;
  ASSERT_TRUE(r.has_report) << r.Describe();
  const json& summary = r.report["summary"];
  EXPECT_EQ(summary.value("allocations", -1L), allocations) << summary.dump();
  EXPECT_EQ(summary.value("frees", -1L), counted["frees"]) << summary.dump();
  EXPECT_EQ(summary.value("live_bytes_at_exit", -1L), counted["live_bytes"])
      << summary.dump();
  EXPECT_EQ(summary.value("errors", -1L), 0) << r.Describe();
  EXPECT_EQ(summary.value("leaks", -1L), kThreads * 3) << summary.dump();
  EXPECT_EQ(TotalCount(LeaksWithApi(r.report, "cudaMalloc")),
            uint64_t{kThreads});
  EXPECT_EQ(TotalCount(LeaksWithApi(r.report, "cuMemAlloc")),
            uint64_t{kThreads});
  EXPECT_EQ(TotalCount(LeaksWithApi(r.report, "cudaMallocAsync")),
            uint64_t{kThreads});
  // Every pair was guarded (the double never runs out of memory here), and
  // the checks ran.
  EXPECT_EQ(r.report["guard"].value("unguarded_oom", -1L), 0);
  EXPECT_GT(r.report["guard"].value("checks", 0L), 0);
  EXPECT_EQ(r.report["guard"].value("check_failures", -1L), 0);
}

// One million blocks alive at once. The tool's host memory is the traced
// run's VmHWM growth minus the plain run's (the double's own blocks and tables
// are in both). Bound: 384 bytes of tool memory per live block (a record is
// ~80 bytes; hash tables at most double that; stacks are deduplicated).
// Guard zones off: with them the double would hold ~4.5 GB of redzones.
TEST_F(StressTest, MillionLiveBlocksKeepToolMemoryBounded) {
  constexpr long kBlocks = 1000000;
  constexpr double kMaxToolBytesPerBlock = 384;
  RunResult plain, r;
  RunBoth({"live", std::to_string(kBlocks)},
          "report=json:report_path=<dir>/r.%p.json:guard=0", &plain, &r);
  ASSERT_EQ(plain.exit_code, 0) << plain.Describe();
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  auto plain_start = LineFigures(plain.out, "start");
  auto plain_peak = LineFigures(plain.out, "peak");
  auto start = LineFigures(r.out, "start");
  auto peak = LineFigures(r.out, "peak");
  ASSERT_GT(start["hwm_kb"], 0) << r.out;
  ASSERT_GT(peak["hwm_kb"], 0) << r.out;
  const long plain_growth_kb = plain_peak["hwm_kb"] - plain_start["hwm_kb"];
  const long traced_growth_kb = peak["hwm_kb"] - start["hwm_kb"];
  const double tool_bytes_per_block =
      (traced_growth_kb - plain_growth_kb) * 1024.0 / kBlocks;
  std::printf(
      "VmHWM before/after %ld live blocks: without the tool %ld -> %ld KiB, "
      "with it %ld -> %ld KiB; tool: %.1f bytes per live block (bound %.0f)\n",
      kBlocks, plain_start["hwm_kb"], plain_peak["hwm_kb"], start["hwm_kb"],
      peak["hwm_kb"], tool_bytes_per_block, kMaxToolBytesPerBlock);
  RecordProperty("tool_bytes_per_live_block",
                 std::to_string(tool_bytes_per_block));
  EXPECT_LT(tool_bytes_per_block, kMaxToolBytesPerBlock) << r.out;
  ASSERT_TRUE(r.has_report) << r.Describe();
  EXPECT_EQ(r.report["summary"].value("allocations", -1L), kBlocks + 1);
  EXPECT_EQ(r.report["summary"].value("frees", -1L), kBlocks + 1);
  EXPECT_EQ(r.report["summary"].value("leaks", -1L), 0);
  EXPECT_EQ(r.report["summary"].value("errors", -1L), 0);
}

// 10^6 alloc/free pairs with guard zones, a 16 MiB quarantine, launches
// (fills) and synchronizes (checks): once warm (10% of the run: the freed
// history, the quarantine and the stack depot are full), the process's RSS
// must not grow by more than 4 MiB to the end. The plain run's growth is
// printed for comparison.
TEST_F(StressTest, LongChurnWithGuardAndQuarantineDoesNotGrow) {
  constexpr long kPairs = 1000000;
  constexpr long kMaxGrowthKb = 4 * 1024;
  RunResult plain, r;
  RunBoth({"churn", std::to_string(kPairs)},
          // The timeline ring is bounded but fills up to 64 MiB
          // by default; a small one keeps this a test of unbounded growth.
          "report=json:report_path=<dir>/r.%p.json:guard=1:check=sync:"
          "quarantine_bytes=16777216:timeline_events=4096",
          &plain, &r);
  ASSERT_EQ(plain.exit_code, 0) << plain.Describe();
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  EXPECT_EQ(r.out.substr(r.out.find("failures")),
            plain.out.substr(plain.out.find("failures")));
  auto warm = LineFigures(r.out, "at " + std::to_string(kPairs / 10));
  auto half = LineFigures(r.out, "at " + std::to_string(kPairs / 2));
  auto end = LineFigures(r.out, "at " + std::to_string(kPairs));
  auto plain_warm = LineFigures(plain.out, "at " + std::to_string(kPairs / 10));
  auto plain_end = LineFigures(plain.out, "at " + std::to_string(kPairs));
  ASSERT_GT(warm["rss_kb"], 0) << r.out;
  ASSERT_GT(end["rss_kb"], 0) << r.out;
  std::printf(
      "RSS after 10%% / 50%% / 100%% of %ld pairs: with the tool %ld / %ld / "
      "%ld KiB; without %ld / %ld KiB\n",
      kPairs, warm["rss_kb"], half["rss_kb"], end["rss_kb"],
      plain_warm["rss_kb"], plain_end["rss_kb"]);
  EXPECT_LT(end["rss_kb"] - warm["rss_kb"], kMaxGrowthKb) << r.out;
  ASSERT_TRUE(r.has_report) << r.Describe();
  const json& summary = r.report["summary"];
  EXPECT_EQ(summary.value("allocations", -1L), kPairs);
  EXPECT_EQ(summary.value("frees", -1L), kPairs);
  EXPECT_EQ(summary.value("errors", -1L), 0) << r.Describe();
  EXPECT_EQ(summary.value("leaks", -1L), 0);
  const json& guard = r.report["guard"];
  EXPECT_GT(guard.value("checks", 0L), 0) << guard.dump();
  // Blocks left the quarantine: back to CUDA, or (malloc_reuse) serving a
  // later allocation after their check.
  EXPECT_GT(guard.value("evicted", 0L) + guard.value("reused", 0L), 0)
      << guard.dump();
  EXPECT_EQ(guard.value("check_failures", -1L), 0) << guard.dump();
}

}  // namespace
}  // namespace gmt_test
