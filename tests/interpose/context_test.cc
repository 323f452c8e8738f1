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

}  // namespace
}  // namespace gmt_test
