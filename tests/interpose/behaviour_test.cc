// The tool never changes behaviour: each program prints the result of every
// CUDA call; its output and exit code must be the same with and without the
// preload.
#include "tests/interpose/interpose_test_util.h"

namespace gmt_test {
namespace {

struct BehaviourCase {
  const char* name;
  const char* program;
  std::vector<std::string> args;
  std::vector<std::pair<std::string, std::string>> env;
  // GMT_OPTIONS for the traced run; empty: the test default.
  const char* gmt_options = "";
};

void PrintTo(const BehaviourCase& c, std::ostream* os) { *os << c.name; }

class BehaviourTest : public InterposeTest,
                      public testing::WithParamInterface<BehaviourCase> {};

TEST_P(BehaviourTest, SameOutputWithAndWithoutTheTool) {
  const BehaviourCase& c = GetParam();
  RunOptions plain_options;
  plain_options.preload = false;
  plain_options.set_gmt_options = false;
  plain_options.env = c.env;
  RunResult plain = Run(c.program, c.args, plain_options);
  RunOptions tool_options;
  tool_options.env = c.env;
  tool_options.gmt_options = c.gmt_options;
  RunResult traced = Run(c.program, c.args, tool_options);
  ASSERT_FALSE(plain.timed_out) << plain.Describe();
  ASSERT_FALSE(traced.timed_out) << traced.Describe();
  ASSERT_FALSE(plain.out.empty()) << plain.Describe();
  EXPECT_EQ(plain.exit_code, traced.exit_code) << traced.Describe();
  EXPECT_EQ(plain.out, traced.out) << "without the tool:\n"
                                   << plain.Describe() << "with the tool:\n"
                                   << traced.Describe();
}

const std::vector<std::pair<std::string, std::string>> kNoEnv;

INSTANTIATE_TEST_SUITE_P(
    Programs, BehaviourTest,
    testing::Values(
        BehaviourCase{"leak_all", GMT_LEAK_PROGRAM, {"all"}, kNoEnv},
        BehaviourCase{"vmm_released_mapped",
                      GMT_LEAK_PROGRAM,
                      {"vmm_released_mapped"},
                      kNoEnv},
        BehaviourCase{"vmm_clean", GMT_LEAK_PROGRAM, {"vmm_clean"}, kNoEnv},
        BehaviourCase{
            "double_free", GMT_ERROR_PROGRAM, {"double_free"}, kNoEnv},
        BehaviourCase{"driver_double_free",
                      GMT_ERROR_PROGRAM,
                      {"driver_double_free"},
                      kNoEnv},
        BehaviourCase{
            "interior_free", GMT_ERROR_PROGRAM, {"interior_free"}, kNoEnv},
        BehaviourCase{"host_free", GMT_ERROR_PROGRAM, {"host_free"}, kNoEnv},
        BehaviourCase{"mismatch", GMT_ERROR_PROGRAM, {"mismatch"}, kNoEnv},
        BehaviourCase{"proc_address", GMT_PROC_PROGRAM, {}, kNoEnv},
        BehaviourCase{"static_runtime", GMT_STATIC_PROGRAM, {}, kNoEnv},
        BehaviourCase{"mixed", GMT_MIXED_PROGRAM, {}, kNoEnv},
        BehaviourCase{"reset", GMT_RESET_PROGRAM, {}, kNoEnv},
        BehaviourCase{"storm", GMT_STORM_PROGRAM, {"4", "2000", "2"}, kNoEnv},
        BehaviourCase{"reset_device1", GMT_RESET_PROGRAM, {"1"}, kNoEnv},
        BehaviourCase{
            "ctx_destroy", GMT_CONTEXT_PROGRAM, {"ctx_destroy"}, kNoEnv},
        BehaviourCase{"primary_release",
                      GMT_CONTEXT_PROGRAM,
                      {"primary_release"},
                      kNoEnv},
        BehaviourCase{"dlsym", GMT_DLSYM_PROGRAM, {}, kNoEnv},
        BehaviourCase{"leak_ptds", GMT_LEAK_PTDS_PROGRAM, {"all"}, kNoEnv},
        BehaviourCase{"nocuda", GMT_NOCUDA_PROGRAM, {}, kNoEnv},
        // Out of memory in the middle: the failure reaches the program
        // unchanged (and the tool's own bookkeeping does not shift it).
        // A one-shot failure is a test-double artefact with redzones on: the
        // tool's retry of the program's own size would succeed (see
        // GuardFallbackTest), so this case runs without them.
        BehaviourCase{"mixed_oom",
                      GMT_MIXED_PROGRAM,
                      {},
                      {{"FAKE_CUDA_FAIL_ALLOC_AFTER", "3"}},
                      "guard=0"},
        // Memory that stays exhausted: every retry fails too, so the program
        // sees CUDA's out-of-memory unchanged with redzones on.
        BehaviourCase{"mixed_oom_guarded",
                      GMT_MIXED_PROGRAM,
                      {},
                      {{"FAKE_CUDA_FAIL_ALLOC_AFTER", "3"},
                       {"FAKE_CUDA_FAIL_ALLOC_COUNT", "0"}}},
        BehaviourCase{"mixed_oom_forever",
                      GMT_MIXED_PROGRAM,
                      {},
                      {{"FAKE_CUDA_FAIL_ALLOC_AFTER", "10"},
                       {"FAKE_CUDA_FAIL_ALLOC_COUNT", "0"}}}),
    [](const testing::TestParamInfo<BehaviourCase>& info) {
      return std::string(info.param.name);
    });

// The injected failure is really there (so mixed_oom above means something).
using FaultInjectionTest = InterposeTest;

TEST_F(FaultInjectionTest, ReachesTheProgram) {
  RunOptions options;
  options.preload = false;
  options.set_gmt_options = false;
  options.env = {{"FAKE_CUDA_FAIL_ALLOC_AFTER", "3"}};
  RunResult r = Run(GMT_MIXED_PROGRAM, {}, options);
  EXPECT_NE(r.out.find("cudaMalloc(1000) -> 2 cudaErrorMemoryAllocation"),
            std::string::npos)
      << r.Describe();
}

// A block that cannot get redzones (the larger request fails) is made as the
// program asked, and the report counts it.
using GuardFallbackTest = InterposeTest;

TEST_F(GuardFallbackTest, OutOfMemoryForRedzonesFallsBackUnguarded) {
  RunOptions options;
  options.env = {{"FAKE_CUDA_FAIL_ALLOC_AFTER", "3"}};
  RunResult r = Run(GMT_MIXED_PROGRAM, {}, options);
  ASSERT_TRUE(r.has_report) << r.Describe();
  EXPECT_NE(r.out.find("cudaMalloc(1000) -> 0 cudaSuccess"), std::string::npos)
      << r.Describe();
  EXPECT_EQ(r.report["guard"]["unguarded_oom"], 1) << r.Describe();
  bool noted = false;
  for (const auto& note : r.report["notes"]) {
    noted |=
        note.get<std::string>().find("got no redzones") != std::string::npos;
  }
  EXPECT_TRUE(noted) << r.report.dump(2);
}

}  // namespace
}  // namespace gmt_test
