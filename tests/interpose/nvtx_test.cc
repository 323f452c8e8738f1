// NVTX range attribution and the PyTorch pluggable-allocator entry points
//, through the test double.
#include <string>

#include "tests/interpose/interpose_test_util.h"

namespace gmt_test {
namespace {

class NvtxTest : public InterposeTest {};

const json* RangeNamed(const json& report, const std::string& name) {
  if (!report.contains("nvtx_ranges")) return nullptr;
  for (const json& r : report["nvtx_ranges"]) {
    if (r.value("range", "") == name) return &r;
  }
  return nullptr;
}

RunOptions WithNvtxInjection(bool env) {
  RunOptions options;
  if (env) options.env.push_back({"NVTX_INJECTION64_PATH", GMT_TOOL_PATH});
  return options;
}

void ExpectRangesAttributed(const RunResult& r) {
  ASSERT_TRUE(r.has_report) << r.Describe();
  const json& report = r.report;
  const json* forward = RangeNamed(report, "train/forward");
  ASSERT_NE(forward, nullptr) << report.dump(1);
  EXPECT_EQ((*forward)["allocations"], 2);
  EXPECT_EQ((*forward)["bytes"], 2000);
  EXPECT_EQ((*forward)["live_blocks"], 2);
  EXPECT_EQ((*forward)["live_bytes"], 2000);
  const json* backward = RangeNamed(report, "train/backward");
  ASSERT_NE(backward, nullptr) << report["nvtx_ranges"].dump(1);
  EXPECT_EQ((*backward)["live_bytes"], 3000);
  const json* eval = RangeNamed(report, "eval");
  ASSERT_NE(eval, nullptr) << report["nvtx_ranges"].dump(1);
  EXPECT_EQ((*eval)["allocations"], 1);
  EXPECT_EQ((*eval)["bytes"], 700);
  EXPECT_EQ((*eval)["live_bytes"], 0);
  // Ranges with no memory of their own ("train") are not listed.
  EXPECT_EQ(RangeNamed(report, "train"), nullptr);

  // Leaks carry their range; the block allocated outside any range none.
  int checked = 0;
  int forward_blocks = 0;
  for (const json& leak : LeaksWithApi(report, "cudaMalloc")) {
    if (StackHas(leak["stack"], "ForwardAllocate")) {
      EXPECT_EQ(leak.value("nvtx_range", ""), "train/forward");
      forward_blocks += leak["count"].get<int>();
    } else if (StackHas(leak["stack"], "BackwardAllocate")) {
      EXPECT_EQ(leak.value("nvtx_range", ""), "train/backward");
      ++checked;
    } else if (StackHas(leak["stack"], "OutsideAllocate")) {
      EXPECT_FALSE(leak.contains("nvtx_range")) << leak.dump();
      ++checked;
    }
  }
  EXPECT_EQ(forward_blocks, 2) << report["leaks"].dump(1);
  EXPECT_EQ(checked, 2) << report["leaks"].dump(1);
}

TEST_F(NvtxTest, RangesThroughTheInjectionVariable) {
  RunResult plain = RunPlain(GMT_NVTX_PROGRAM, {"nvtx"});
  RunResult r = Run(GMT_NVTX_PROGRAM, {"nvtx"}, WithNvtxInjection(true));
  EXPECT_EQ(r.exit_code, 0) << r.Describe();
  ExpectRangesAttributed(r);
  // What the program sees (push/pop depths, CUDA results) is unchanged.
  EXPECT_EQ(r.out, plain.out);
}

TEST_F(NvtxTest, RangesUnderPreloadAlone) {
  // No NVTX_INJECTION64_PATH: the preloaded library sets it to itself.
  RunResult r = Run(GMT_NVTX_PROGRAM, {"nvtx"}, WithNvtxInjection(false));
  EXPECT_EQ(r.exit_code, 0) << r.Describe();
  ExpectRangesAttributed(r);
}

TEST_F(NvtxTest, NvtxOffLeavesRangesOut) {
  RunOptions options;
  options.gmt_options = "report=json:report_path=<dir>/r.%p.json:nvtx=0";
  RunResult r = Run(GMT_NVTX_PROGRAM, {"nvtx"}, options);
  ASSERT_TRUE(r.has_report) << r.Describe();
  EXPECT_FALSE(r.report.contains("nvtx_ranges")) << r.report.dump(1);
}

TEST_F(NvtxTest, NoRangesNoSection) {
  RunResult r = Run(GMT_LEAK_PROGRAM, {"runtime"});
  ASSERT_TRUE(r.has_report) << r.Describe();
  EXPECT_FALSE(r.report.contains("nvtx_ranges"));
}

TEST_F(NvtxTest, TorchPluggableAllocatorTracksEachTensor) {
  RunResult r = Run(GMT_NVTX_PROGRAM, {"torch"});
  EXPECT_EQ(r.exit_code, 0) << r.Describe();
  EXPECT_NE(r.out.find("torch_malloc(-1) -> null"), std::string::npos) << r.out;
  ASSERT_TRUE(r.has_report) << r.Describe();
  EXPECT_EQ(r.report["summary"]["errors"], 0) << r.report["errors"].dump(1);
  std::vector<json> leaks = LeaksWithApi(r.report, "cudaMalloc");
  ASSERT_EQ(leaks.size(), 1u) << r.report["leaks"].dump(1);
  EXPECT_EQ(leaks[0]["bytes"], 256);
  EXPECT_EQ(leaks[0]["count"], 1);
  EXPECT_TRUE(StackHas(leaks[0]["stack"], "TorchAllocate"))
      << StackFunctions(leaks[0]["stack"]);
}

}  // namespace
}  // namespace gmt_test
