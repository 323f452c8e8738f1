// API bounds (DESIGN §2, pitfall 5): every copy and set the tool checks
// returns exactly what CUDA returns without the tool, in bounds, ending at a
// block's last byte and one byte past it — through the runtime and the
// driver, plain and per-thread (_ptds / _ptsz) builds.
#include <string>
#include <vector>

#include "tests/interpose/interpose_test_util.h"

namespace gmt_test {
namespace {

struct Case {
  const char* program;
  const char* mode;
};

std::string CaseName(const testing::TestParamInfo<Case>& info) {
  std::string program = info.param.program;
  return std::string(program.find("ptds") != std::string::npos ? "Ptds"
                                                               : "Plain") +
         "_" + info.param.mode;
}

// The lines of a run that report an out-of-bounds call ("<api> ... past").
std::vector<std::string> PastLines(const std::string& out) {
  std::vector<std::string> past;
  for (const std::string& line : Lines(out)) {
    if (Contains(line, " past -> ")) past.push_back(line);
  }
  return past;
}

class GuardCopyTest : public InterposeTest,
                      public testing::WithParamInterface<Case> {
 protected:
  RunResult RunTool() { return Run(GetParam().program, {GetParam().mode}); }
};

TEST_P(GuardCopyTest, SameResultsAsWithoutTheTool) {
  ExpectSameOutputAsWithout(GetParam().program, {GetParam().mode});
}

TEST_P(GuardCopyTest, InBoundsSucceedsAndOneBytePastIsInvalidValue) {
  RunResult r = RunTool();
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  const RangeCalls calls = CheckRangeCalls(r.out);
  EXPECT_GT(calls.in, 10) << r.out;
  EXPECT_GT(calls.past, 10) << r.out;
}

// What CUDA judges itself is left to CUDA: a pitch below the width over
// several rows is its pitch error, an unknown direction its direction error.
using GuardCopyShapeTest = InterposeTest;

TEST_F(GuardCopyShapeTest, ShapeErrorsStayCudas) {
  for (const char* program :
       {GMT_GUARD_COPY_PROGRAM, GMT_GUARD_COPY_PTDS_PROGRAM}) {
    RunResult r = Run(program, {"runtime"});
    ASSERT_EQ(r.exit_code, 0) << r.Describe();
    // 12: cudaErrorInvalidPitchValue (the double has no name for it).
    EXPECT_TRUE(Contains(r.out, "cudaMemset2D bad pitch -> 12 ")) << r.out;
    EXPECT_TRUE(Contains(r.out,
                         "cudaMemcpy bad kind -> 21 "
                         "cudaErrorInvalidMemcpyDirection"))
        << r.out;
  }
}

// Each refused call is one api-bounds error naming the call the program made
// ("call") and the block it overran ("allocation"), counted once although the
// runtime's call reaches the driver too. (Reported by Engine::CheckAccess,
// lib/engine/engine_guard.cc.)
TEST_P(GuardCopyTest, PastCallsAreReportedAsApiBounds) {
  RunResult r = RunTool();
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  ASSERT_TRUE(r.has_report) << r.Describe();
  const std::vector<std::string> past = PastLines(r.out);
  std::vector<json> errors = ErrorsOfKind(r.report, "api-bounds");
  EXPECT_EQ(errors.size(), past.size()) << r.Describe();
  for (const std::string& line : past) {
    const std::string api = line.substr(0, line.find(' '));
    bool found = false;
    for (const json& e : errors) found |= e.value("call", "") == api;
    EXPECT_TRUE(found) << "no api-bounds error for " << line;
  }
  for (const json& e : errors) {
    EXPECT_TRUE(e.contains("allocation")) << e.dump(1);
  }
  // In-bounds calls are never reported.
  EXPECT_EQ(r.report["summary"].value("errors", -1),
            static_cast<int>(past.size()))
      << r.Describe();
}

INSTANTIATE_TEST_SUITE_P(
    AllBuilds, GuardCopyTest,
    testing::Values(Case{GMT_GUARD_COPY_PROGRAM, "runtime"},
                    Case{GMT_GUARD_COPY_PROGRAM, "driver"},
                    Case{GMT_GUARD_COPY_PTDS_PROGRAM, "runtime"},
                    Case{GMT_GUARD_COPY_PTDS_PROGRAM, "driver"}),
    CaseName);

}  // namespace
}  // namespace gmt_test
