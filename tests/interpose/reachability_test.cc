// through LD_PRELOAD on the test double: the reachability state of
// each leak (gmt_reachability_program keeps device pointers in a global, a
// heap object, another thread's stack, and drops some), and growth flagged
// while the program runs.
#include <cstdio>
#include <set>
#include <string>

#include "tests/interpose/interpose_test_util.h"

namespace gmt_test {
namespace {

using ReachabilityTest = InterposeTest;

// The leak entries of `bytes`-sized cudaMalloc blocks.
std::vector<json> LeaksOfSize(const json& report, uint64_t per_block) {
  std::vector<json> out;
  for (const json& leak : LeaksWithApi(report, "cudaMalloc")) {
    uint64_t count = leak.value("count", uint64_t{0});
    if (count > 0 && leak.value("bytes", uint64_t{0}) == per_block * count) {
      out.push_back(leak);
    }
  }
  return out;
}

std::string StateOf(const json& report, uint64_t bytes) {
  std::vector<json> leaks = LeaksOfSize(report, bytes);
  if (leaks.size() != 1) {
    return "(" + std::to_string(leaks.size()) + " entries)";
  }
  return leaks[0].value("state", "(none)");
}

TEST_F(ReachabilityTest, TellsLostFromReachable) {
  RunResult r = Run(GMT_REACHABILITY_PROGRAM);
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  ASSERT_TRUE(r.has_report) << r.Describe();
  const json& report = r.report;
  EXPECT_EQ(StateOf(report, 1000), "reachable") << "pointer in a global\n"
                                                << report["leaks"].dump(1);
  EXPECT_EQ(StateOf(report, 2000), "reachable") << "pointer in a heap object\n"
                                                << report["leaks"].dump(1);
  EXPECT_EQ(StateOf(report, 3000), "reachable")
      << "pointer on a live thread's stack\n"
      << report["leaks"].dump(1);
  EXPECT_EQ(StateOf(report, 4000), "lost") << "pointer overwritten\n"
                                           << report["leaks"].dump(1);

  // One call site, one block of each state: two entries (DESIGN §5).
  std::vector<json> pair = LeaksOfSize(report, 5000);
  ASSERT_EQ(pair.size(), 2u) << report["leaks"].dump(1);
  std::set<std::string> states;
  for (const json& leak : pair) {
    states.insert(leak.value("state", ""));
    EXPECT_EQ(leak.value("count", 0), 1);
    EXPECT_TRUE(StackHas(leak["stack"], "AllocPair"))
        << StackFunctions(leak["stack"]);
  }
  EXPECT_EQ(states, (std::set<std::string>{"lost", "reachable"}));

  const json& reach = report["reachability"];
  EXPECT_TRUE(reach.value("ran", false)) << reach.dump();
  EXPECT_FALSE(reach.value("truncated", true)) << reach.dump();
  EXPECT_EQ(reach.value("lost_bytes", 0), 4000 + 5000) << reach.dump();
  EXPECT_EQ(reach.value("lost_blocks", 0), 2) << reach.dump();
  EXPECT_EQ(reach.value("reachable_bytes", 0), 1000 + 2000 + 3000 + 5000)
      << reach.dump();
  EXPECT_GE(reach.value("ms", -1.0), 0.0);
  EXPECT_GT(reach.value("bytes_scanned", 0), 0);
  EXPECT_GE(reach.value("threads", 0), 2) << reach.dump();
  // The fake libcuda.so.1 and libcudart.so.13, and the tool itself.
  EXPECT_GE(reach.value("modules_excluded", 0), 3) << reach.dump();
}

// At verbosity=1 the exit logs the tool's own start-up and exit time by
// phase (what benchmarks/gpu/startup_exit.sh reads): the exit's reachability
// part is the scan the report times, and it is absent at verbosity=0.
TEST_F(ReachabilityTest, ExitLogsTheToolsOwnTime) {
  RunOptions options;
  options.gmt_options = "report=json:report_path=<dir>/r.%p.json:verbosity=1";
  RunResult r = Run(GMT_REACHABILITY_PROGRAM, {}, options);
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  ASSERT_TRUE(r.has_report) << r.Describe();
  const size_t at = r.err.find("tool time: start-up ");
  ASSERT_NE(at, std::string::npos) << r.err;
  const std::string line = r.err.substr(at, r.err.find('\n', at) - at);
  double startup = -1, engine = -1, cupti = -1, guard = -1, exit = -1,
         scan = -1, report = -1, nvml = -1;
  ASSERT_EQ(std::sscanf(line.c_str(),
                        "tool time: start-up %lf ms (engine %lf, CUPTI %lf, "
                        "guard kernels %lf), exit %lf ms (reachability %lf, "
                        "report %lf, of which waiting for NVML %lf)",
                        &startup, &engine, &cupti, &guard, &exit, &scan,
                        &report, &nvml),
            8)
      << line;
  EXPECT_GT(engine, 0.0) << line;
  EXPECT_NEAR(startup, engine + cupti + guard, 0.15) << line;
  EXPECT_NEAR(exit, scan + report, 0.15) << line;
  EXPECT_LE(nvml, report + 0.05) << line;
  // The scan the report times, within the helper's join and rounding.
  const double reported_ms = r.report["reachability"].value("ms", -1.0);
  EXPECT_GE(scan + 0.05, reported_ms) << line;
  EXPECT_GT(report, 0.0) << line;

  options.gmt_options = "report=json:report_path=<dir>/r.%p.json";
  RunResult quiet = Run(GMT_REACHABILITY_PROGRAM, {}, options);
  ASSERT_EQ(quiet.exit_code, 0) << quiet.Describe();
  EXPECT_EQ(quiet.err.find("tool time:"), std::string::npos) << quiet.err;
}

TEST_F(ReachabilityTest, OffLeavesLeaksWithoutState) {
  RunOptions options;
  options.gmt_options =
      "report=json:report_path=<dir>/r.%p.json:reachability=0";
  RunResult r = Run(GMT_REACHABILITY_PROGRAM, {}, options);
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  ASSERT_TRUE(r.has_report) << r.Describe();
  EXPECT_FALSE(r.report["reachability"].value("ran", true));
  for (const json& leak : r.report["leaks"]) {
    EXPECT_FALSE(leak.contains("state")) << leak.dump();
  }
  // Without the scan one call site is one entry again.
  EXPECT_EQ(LeaksOfSize(r.report, 5000).size(), 1u);
}

TEST_F(ReachabilityTest, TextReportTagsLeaksAndPrintsTheScanTime) {
  RunOptions options;
  options.gmt_options = "report=text";
  RunResult r = Run(GMT_REACHABILITY_PROGRAM, {}, options);
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  EXPECT_NE(r.err.find("[definitely lost]"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("[still reachable]"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("reachability: definitely lost 8.8 KiB in 2 blocks"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find(" ms, "), std::string::npos) << r.err;
}

TEST_F(ReachabilityTest, GrowthIsFlaggedWhileTheProgramRuns) {
  RunOptions options;
  options.gmt_options =
      "report=json:report_path=<dir>/r.%p.json:growth_interval_ms=50:"
      "growth_samples=4:growth_min_bytes=65536";
  RunResult r = Run(GMT_REACHABILITY_PROGRAM, {"growth"}, options);
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  ASSERT_TRUE(r.has_report) << r.Describe();
  // The callback fired before the loop ended, i.e. before exit.
  size_t fired = r.out.find("growth callback: ");
  size_t done = r.out.find("loop done");
  ASSERT_NE(fired, std::string::npos) << r.Describe();
  EXPECT_LT(fired, done) << r.out;
  EXPECT_NE(r.out.find("LeakALittle", fired), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("suspected leak: LeakALittle"), std::string::npos)
      << r.err;
  const json& growth = r.report["growth"];
  ASSERT_EQ(growth.size(), 1u) << r.report.dump(1);
  EXPECT_TRUE(StackHas(growth[0]["stack"], "LeakALittle"))
      << StackFunctions(growth[0]["stack"]);
  EXPECT_GE(growth[0].value("rises", 0), 4);
  EXPECT_GE(
      growth[0].value("last_bytes", 0) - growth[0].value("first_bytes", 0),
      4 * 65536);
  EXPECT_GE(r.report.value("growth_samples", 0), 5);
}

TEST_F(ReachabilityTest, NoGrowthFlagWhenOff) {
  RunOptions options;
  options.gmt_options =
      "report=json:report_path=<dir>/r.%p.json:growth=0:"
      "growth_interval_ms=50:growth_samples=4:growth_min_bytes=65536";
  RunResult r = Run(GMT_REACHABILITY_PROGRAM, {"growth"}, options);
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  ASSERT_TRUE(r.has_report) << r.Describe();
  EXPECT_EQ(r.out.find("growth callback"), std::string::npos) << r.out;
  EXPECT_TRUE(r.report["growth"].empty());
}

}  // namespace
}  // namespace gmt_test
