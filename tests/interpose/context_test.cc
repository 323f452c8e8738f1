// Memory that goes away with its context (cuCtxDestroy, the last
// cuDevicePrimaryCtxRelease): listed as leaks "released by" that event, gone
// from the live set, and its addresses free for reuse without false errors.
#include "tests/interpose/interpose_test_util.h"

namespace gmt_test {
namespace {

struct ContextCase {
  const char* mode;
  uint64_t bytes;
  const char* function;
};

void PrintTo(const ContextCase& c, std::ostream* os) { *os << c.mode; }

class ContextTeardownTest : public InterposeTest,
                            public testing::WithParamInterface<ContextCase> {};

TEST_P(ContextTeardownTest, BlocksAreReleasedWithTheirContext) {
  const ContextCase& c = GetParam();
  RunResult r = Run(GMT_CONTEXT_PROGRAM, {c.mode});
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  ASSERT_TRUE(r.has_report) << r.Describe();
  std::vector<json> leaks = LeaksWithApi(r.report, "cuMemAlloc");
  ASSERT_EQ(leaks.size(), 1u) << r.Describe();
  EXPECT_EQ(leaks[0].value("bytes", uint64_t{0}), c.bytes);
  EXPECT_TRUE(StackHas(leaks[0]["stack"], c.function))
      << StackFunctions(leaks[0]["stack"]);
  EXPECT_TRUE(leaks[0].contains("released_by")) << leaks[0].dump();
  const json& s = r.report["summary"];
  EXPECT_EQ(s.value("errors", -1), 0) << r.Describe();
  EXPECT_EQ(s.value("allocations", -1), 2) << r.Describe();
  EXPECT_EQ(s.value("live_bytes_at_exit", int64_t{-1}), 0) << r.Describe();
}

INSTANTIATE_TEST_SUITE_P(
    Teardowns, ContextTeardownTest,
    testing::Values(ContextCase{"ctx_destroy", 1500, "LeakInCreatedContext"},
                    ContextCase{"primary_release", 1700,
                                "LeakBeforePrimaryRelease"}),
    [](const testing::TestParamInfo<ContextCase>& info) {
      return std::string(info.param.mode);
    });

// Reservations and physical allocations belong to the process: destroying the
// context they were made in does not free them, and the program may free them
// afterwards. Nothing leaked, nothing wrong (a reservation freed this way was
// once listed as a leak "released by cuCtxDestroy").
TEST_F(InterposeTest, VmmOutlivesItsContextAndIsFreedAfterIt) {
  RunResult without = RunPlain(GMT_CONTEXT_PROGRAM, {"vmm_after_destroy"});
  RunResult with = Run(GMT_CONTEXT_PROGRAM, {"vmm_after_destroy"});
  ASSERT_EQ(without.exit_code, 0) << without.Describe();
  EXPECT_EQ(with.out, without.out);
  EXPECT_NE(without.out.find("cuMemAddressFree -> 0 CUDA_SUCCESS"),
            std::string::npos)
      << without.out;
  ASSERT_TRUE(with.has_report) << with.Describe();
  const json& s = with.report["summary"];
  EXPECT_EQ(s.value("errors", -1), 0) << with.Describe();
  EXPECT_EQ(s.value("leaks", -1), 0) << with.Describe();
  EXPECT_TRUE(with.report["leaks"].empty()) << with.report["leaks"].dump(1);
}

}  // namespace
}  // namespace gmt_test
