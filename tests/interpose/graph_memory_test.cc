// Graph memory nodes and CUPTI memory activity on the test
// double: memory a CUDA graph allocates when it is launched is tracked from
// each launch to its free, counted once, leaked with the node's stack when
// never freed, and its frees (cudaFree, cudaFreeAsync, free nodes, auto-free
// relaunches) are never taken for invalid or double frees; under LD_PRELOAD,
// under CUDA_INJECTION64_PATH alone (CUPTI callbacks) and with both.
// gmt_graph_program (programs/graph_program.cc) describes the scenarios.
#include "tests/interpose/interpose_test_util.h"

namespace gmt_test {
namespace {

class GraphMemoryTest : public InterposeTest {
 protected:
  RunResult RunGraph(
      const std::string& mode, bool preload, bool inject,
      const std::string& extra_options = "",
      std::vector<std::pair<std::string, std::string>> env = {}) {
    RunOptions options;
    options.preload = preload;
    options.gmt_options =
        "report=json:report_path=<dir>/r.%p.json" + extra_options;
    if (inject) env.emplace_back("CUDA_INJECTION64_PATH", GMT_TOOL_PATH);
    options.env = std::move(env);
    options.timeout_s = 60;
    return Run(GMT_GRAPH_PROGRAM, {mode}, options);
  }

  // The scenario's expectations (graph_program.cc, A to E).
  void ExpectGraphScenario(const RunResult& r, const RunResult& plain,
                           const char* leak_function) {
    ASSERT_EQ(r.exit_code, 0) << r.Describe();
    EXPECT_EQ(r.out, plain.out) << "the tool changed what the program saw";
    ASSERT_TRUE(r.has_report) << r.Describe();
    const json& report = r.report;
    // No invalid, double or mismatched free anywhere.
    EXPECT_TRUE(report["errors"].empty()) << report["errors"].dump(1);
    EXPECT_EQ(report["summary"].value("errors", -1), 0) << r.Describe();
    // A: the one leak, with its size and the node's creation stack.
    std::vector<json> leaks = LeaksWithApi(report, "graph-mem-node");
    ASSERT_EQ(leaks.size(), 1u) << report["leaks"].dump(1);
    EXPECT_EQ(leaks[0].value("bytes", 0), 4096) << leaks[0].dump();
    EXPECT_EQ(leaks[0].value("count", 0), 1) << leaks[0].dump();
    EXPECT_EQ(leaks[0].value("device", -1), 0) << leaks[0].dump();
    ASSERT_FALSE(leaks[0]["stack"].empty()) << leaks[0].dump();
    EXPECT_TRUE(StackHas(leaks[0]["stack"], leak_function))
        << StackFunctions(leaks[0]["stack"]);
    EXPECT_EQ(report["summary"].value("leaks", -1), 1)
        << report["leaks"].dump(1);
    // Counted once: A 1, B 2 launches, C 2 launches, D 1, E 2 launches, F 2
    // launches; frees B 2 (free nodes), C 2, D 1, E 1 auto-free + 1, F 2.
    EXPECT_EQ(report["summary"].value("allocations", -1), 10) << r.Describe();
    EXPECT_EQ(report["summary"].value("frees", -1), 9) << r.Describe();
  }
};

TEST_F(GraphMemoryTest, RuntimeGraphsUnderPreload) {
  RunResult plain = RunPlain(GMT_GRAPH_PROGRAM, {"runtime"});
  ASSERT_EQ(plain.exit_code, 0) << plain.Describe();
  RunResult r = RunGraph("runtime", /*preload=*/true, /*inject=*/false);
  ExpectGraphScenario(r, plain, "RtGraphLeakNode");
}

TEST_F(GraphMemoryTest, DriverGraphsUnderPreload) {
  RunResult plain = RunPlain(GMT_GRAPH_PROGRAM, {"driver"});
  ASSERT_EQ(plain.exit_code, 0) << plain.Describe();
  RunResult r = RunGraph("driver", /*preload=*/true, /*inject=*/false);
  ExpectGraphScenario(r, plain, "CuGraphLeakNode");
}

// Injection alone: the driver-API program's calls reach the tool only as
// CUPTI callbacks (node creation, instantiation, launch, capture).
TEST_F(GraphMemoryTest, DriverGraphsUnderInjectionAlone) {
  RunResult plain = RunPlain(GMT_GRAPH_PROGRAM, {"driver"});
  RunResult r = RunGraph("driver", /*preload=*/false, /*inject=*/true);
  ExpectGraphScenario(r, plain, "CuGraphLeakNode");
  EXPECT_EQ(r.err.find("CUPTI is taken"), std::string::npos) << r.err;
}

// Injection alone with the runtime: its lookups after cuInit get the shims.
TEST_F(GraphMemoryTest, RuntimeGraphsUnderInjectionAlone) {
  RunResult plain = RunPlain(GMT_GRAPH_PROGRAM, {"runtime"});
  RunResult r = RunGraph("runtime", /*preload=*/false, /*inject=*/true);
  ExpectGraphScenario(r, plain, "RtGraphLeakNode");
}

// Both front ends: the shims count, CUPTI adds nothing.
TEST_F(GraphMemoryTest, BothPathsCountOnce) {
  RunResult plain = RunPlain(GMT_GRAPH_PROGRAM, {"driver"});
  RunResult r = RunGraph("driver", /*preload=*/true, /*inject=*/true,
                         ":cupti=on:cupti_activity=on");
  ExpectGraphScenario(r, plain, "CuGraphLeakNode");
}

// Without the graph tracking the relaunch's cudaFreeAsync of graph memory was
// a "double-free" and a cudaFreeAsync of a graph block an "invalid-free":
// with guard zones off and check=none those paths are still covered.
TEST_F(GraphMemoryTest, NoFalseFreeErrorsWithoutGuardZones) {
  RunResult plain = RunPlain(GMT_GRAPH_PROGRAM, {"runtime"});
  RunResult r =
      RunGraph("runtime", /*preload=*/true, /*inject=*/false, ":guard=0");
  ExpectGraphScenario(r, plain, "RtGraphLeakNode");
}

// CUPTI memory records (injection alone): an allocation no hook saw is a
// block of its own ("cupti-activity"), its free is no error, and a free of
// nothing at all still is.
TEST_F(GraphMemoryTest, ActivityRecordsAddWhatNoHookSaw) {
  RunResult plain = RunPlain(GMT_GRAPH_PROGRAM, {"hidden"});
  ASSERT_EQ(plain.exit_code, 0) << plain.Describe();
  RunResult r = RunGraph("hidden", /*preload=*/false, /*inject=*/true);
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  EXPECT_EQ(r.out, plain.out);
  ASSERT_TRUE(r.has_report) << r.Describe();
  std::vector<json> invalid = ErrorsOfKind(r.report, "invalid-free");
  ASSERT_EQ(invalid.size(), 1u) << r.report["errors"].dump(1);
  EXPECT_TRUE(StackHas(invalid[0]["stack"], "BogusFree"))
      << StackFunctions(invalid[0]["stack"]);
  EXPECT_EQ(r.report["summary"].value("errors", -1), 1) << r.Describe();
  std::vector<json> leaks = LeaksWithApi(r.report, "cupti-activity");
  ASSERT_EQ(leaks.size(), 1u) << r.report["leaks"].dump(1);
  EXPECT_EQ(leaks[0].value("bytes", 0), 2048) << leaks[0].dump();
  // The freed one and the leaked one, each once; one free.
  EXPECT_EQ(r.report["summary"].value("allocations", -1), 2) << r.Describe();
  EXPECT_EQ(r.report["summary"].value("frees", -1), 1) << r.Describe();
}

// The same beside the shims (cupti=on, cupti_activity=on): the free reaches
// a shim, which flushes CUPTI's records and finds the allocation at once.
TEST_F(GraphMemoryTest, ActivityRecordsBesideTheShims) {
  RunResult r = RunGraph("hidden", /*preload=*/true, /*inject=*/true,
                         ":cupti=on:cupti_activity=on");
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  ASSERT_TRUE(r.has_report) << r.Describe();
  EXPECT_EQ(ErrorsOfKind(r.report, "invalid-free").size(), 1u)
      << r.report["errors"].dump(1);
  EXPECT_EQ(r.report["summary"].value("errors", -1), 1) << r.Describe();
  std::vector<json> leaks = LeaksWithApi(r.report, "cupti-activity");
  ASSERT_EQ(leaks.size(), 1u) << r.report["leaks"].dump(1);
  EXPECT_EQ(leaks[0].value("bytes", 0), 2048) << leaks[0].dump();
  EXPECT_EQ(r.report["summary"].value("allocations", -1), 2) << r.Describe();
}

// Without the records (cupti_activity=off) memory no hook saw is not there at
// all: not counted, not leaked (a stream-ordered free CUDA accepted of an
// address never seen is let pass, as before).
TEST_F(GraphMemoryTest, WithoutActivityHiddenMemoryIsInvisible) {
  RunResult r = RunGraph("hidden", /*preload=*/false, /*inject=*/true,
                         ":cupti_activity=off");
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  ASSERT_TRUE(r.has_report) << r.Describe();
  EXPECT_EQ(ErrorsOfKind(r.report, "invalid-free").size(), 1u)
      << r.report["errors"].dump(1);
  EXPECT_TRUE(LeaksWithApi(r.report, "cupti-activity").empty());
  EXPECT_EQ(r.report["summary"].value("allocations", -1), 0) << r.Describe();
}

// CUPTI's activity buffers taken by another tool: a note, and the run goes on
// with the callbacks.
TEST_F(GraphMemoryTest, ActivityTakenIsANoteOnly) {
  RunResult plain = RunPlain(GMT_GRAPH_PROGRAM, {"driver"});
  RunResult r = RunGraph("driver", /*preload=*/false, /*inject=*/true,
                         ":verbosity=1", {{"FAKE_CUPTI_ACTIVITY_TAKEN", "1"}});
  ExpectGraphScenario(r, plain, "CuGraphLeakNode");
  EXPECT_NE(r.err.find("CUPTI memory activity not collected"),
            std::string::npos)
      << r.err;
}

}  // namespace
}  // namespace gmt_test
