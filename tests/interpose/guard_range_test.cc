// The range calls beyond plain copies and sets (docs/transparency.md, classes
// a and d): managed-range calls, batches, graph copy/set nodes, array, symbol
// and peer copies, dma-buf exports return exactly what CUDA returns without
// the tool — in bounds, ending at a block's last byte, and one byte past it
// (a dma-buf: a page past the pages CUDA mapped for the block, and a page
// past its last byte that is still on them), where the redzone would
// otherwise let CUDA accept the call or the tool refuse it.
#include <string>
#include <vector>

#include "tests/interpose/interpose_test_util.h"

namespace gmt_test {
namespace {

class GuardRangeTest : public InterposeTest,
                       public testing::WithParamInterface<const char*> {
 protected:
  RunResult RunTool() { return Run(GMT_GUARD_RANGE_PROGRAM, {GetParam()}); }
};

TEST_P(GuardRangeTest, SameResultsAsWithoutTheTool) {
  ExpectSameOutputAsWithout(GMT_GUARD_RANGE_PROGRAM, {GetParam()});
}

TEST_P(GuardRangeTest, InBoundsSucceedsAndOneBytePastIsInvalidValue) {
  RunResult r = RunTool();
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  const RangeCalls calls = CheckRangeCalls(r.out);
  EXPECT_GT(calls.in, 3) << r.out;
  EXPECT_GT(calls.past, 1) << r.out;
}

// Each refused range is one api-bounds error, and nothing else is reported.
// (cuPointerSetAttribute refuses a redzone address as an unknown one,
// without a report, as cuPointerGetAttribute does.)
TEST_P(GuardRangeTest, RefusalsAreTheOnlyErrors) {
  RunResult r = RunTool();
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  ASSERT_TRUE(r.has_report) << r.Describe();
  int reported = 0;
  for (const std::string& line : Lines(r.out)) {
    if (Contains(line, " past -> ") &&
        !Contains(line, "cuPointerSetAttribute")) {
      ++reported;
    }
  }
  EXPECT_EQ(static_cast<int>(ErrorsOfKind(r.report, "api-bounds").size()),
            reported)
      << r.Describe();
  EXPECT_EQ(r.report["summary"].value("errors", -1), reported) << r.Describe();
}

// Without redzones CUDA judges every range itself; the tool reports the
// dma-bufs CUDA refuses past a block's mapped pages, and not the page past
// a block's last byte that CUDA exports as part of them.
TEST_F(InterposeTest, UnguardedDmaBufOfAMappedPageIsNoError) {
  RunOptions options;
  options.gmt_options = "report=json:report_path=<dir>/r.%p.json:guard=0";
  RunResult r = Run(GMT_GUARD_RANGE_PROGRAM, {"dmabuf"}, options);
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  ASSERT_TRUE(r.has_report) << r.Describe();
  EXPECT_TRUE(Contains(r.out, "cudaMalloc odd mapped page in -> 0 ")) << r.out;
  int refused = 0;
  for (const std::string& line : Lines(r.out)) {
    if (Contains(line, " past -> 1 ")) ++refused;
  }
  EXPECT_EQ(refused, 4) << r.out;
  EXPECT_EQ(static_cast<int>(ErrorsOfKind(r.report, "api-bounds").size()),
            refused)
      << r.Describe();
}

// A dma-buf from a guarded pool block's start: CUDA refuses it under the
// tool (the front redzone moved the start into the pool block), which the
// report says, naming the way out; guard_skip=async is the run without
// that difference.
TEST_F(InterposeTest, DmaBufOfAGuardedPoolBlocksStartIsNoted) {
  RunResult without =
      Run(GMT_GUARD_RANGE_PROGRAM, {"dmabuf_pool"}, WithoutTheTool());
  ASSERT_EQ(without.exit_code, 0) << without.Describe();
  EXPECT_TRUE(Contains(without.out, "pool start -> 0 ")) << without.out;

  RunResult guarded = Run(GMT_GUARD_RANGE_PROGRAM, {"dmabuf_pool"});
  ASSERT_EQ(guarded.exit_code, 0) << guarded.Describe();
  ASSERT_TRUE(guarded.has_report) << guarded.Describe();
  EXPECT_TRUE(Contains(guarded.out, "pool start -> 1 ")) << guarded.out;
  EXPECT_TRUE(guarded.report["errors"].empty()) << guarded.Describe();
  EXPECT_TRUE(Contains(guarded.report["notes"].dump(),
                       "2 dma-buf exports (cuMemGetHandleForAddressRange) "
                       "from the start of a guarded stream-ordered block"))
      << guarded.report["notes"].dump();

  RunOptions skip;
  skip.gmt_options = "report=json:report_path=<dir>/r.%p.json:guard_skip=async";
  RunResult skipped = Run(GMT_GUARD_RANGE_PROGRAM, {"dmabuf_pool"}, skip);
  ASSERT_EQ(skipped.exit_code, 0) << skipped.Describe();
  EXPECT_EQ(skipped.out, without.out);
}

// cuMemBatchDecompressAsync names the refused element, as CUDA does.
using GuardRangeBatchTest = InterposeTest;

TEST_F(GuardRangeBatchTest, DecompressNamesTheRefusedElement) {
  RunResult r = Run(GMT_GUARD_RANGE_PROGRAM, {"batch"});
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  EXPECT_TRUE(Contains(r.out, "cuMemBatchDecompressAsync past error index 1\n"))
      << r.out;
}

INSTANTIATE_TEST_SUITE_P(Families, GuardRangeTest,
                         testing::Values("managed", "batch", "graph", "array",
                                         "dmabuf"));

}  // namespace
}  // namespace gmt_test
