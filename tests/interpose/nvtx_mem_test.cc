// NVTX memory regions of a pool allocator through the test
// double: a program annotating its pool with the real NVTX v3 headers
// (programs/nvtx_mem_program.cc) under the tool's NVTX injection.
#include <string>
#include <vector>

#include "tests/interpose/interpose_test_util.h"

namespace gmt_test {
namespace {

class NvtxMemTest : public InterposeTest {};

constexpr uint64_t kPoolBytes = 1 << 20;

std::vector<json> LeaksFrom(const json& report, const std::string& function) {
  std::vector<json> out;
  for (const json& leak : report["leaks"]) {
    if (StackHas(leak["stack"], function)) out.push_back(leak);
  }
  return out;
}

// Everything the "pool" scenario must produce with nvtx_mem=1.
void ExpectPoolHonoured(const RunResult& r) {
  ASSERT_TRUE(r.has_report) << r.Describe();
  const json& report = r.report;

  // The leaked regions: their own entry, at the caller of the pool.
  std::vector<json> regions = LeaksWithApi(report, "nvtx-region");
  ASSERT_EQ(regions.size(), 1u) << report["leaks"].dump(1);
  const json& leaked = regions[0];
  EXPECT_TRUE(StackHas(leaked["stack"], "LeakyCaller"))
      << StackFunctions(leaked["stack"]);
  EXPECT_EQ(leaked["count"], 2);
  EXPECT_EQ(leaked["bytes"], 8192);
  EXPECT_EQ(leaked.value("pool_api", ""), "cudaMalloc");
  EXPECT_EQ(leaked.value("heap_name", ""), "main pool");
  EXPECT_FALSE(leaked.contains("outside_block"));

  // The pool's block: one entry, saying how much of it regions hold.
  std::vector<json> blocks = LeaksWithApi(report, "cudaMalloc");
  ASSERT_EQ(blocks.size(), 1u) << report["leaks"].dump(1);
  EXPECT_TRUE(StackHas(blocks[0]["stack"], "PoolCreate"));
  EXPECT_EQ(blocks[0]["bytes"], kPoolBytes);
  EXPECT_EQ(blocks[0].value("nvtx_regions", 0), 2);
  EXPECT_EQ(blocks[0].value("nvtx_region_bytes", 0), 8192);
  EXPECT_EQ(leaked.value("pool_block", ""), blocks[0]["address"]);

  // Given back, reset with their heap, or freed with their block: no leak.
  for (const char* f : {"TidyCaller", "OverflowAllocate", "ResizeCaller",
                        "ResetCaller", "DroppedWithBlock"}) {
    EXPECT_TRUE(LeaksFrom(report, f).empty())
        << f << ": " << report["leaks"].dump(1);
  }

  // Totals: the regions are leaked blocks, their bytes are the pool's.
  const json& s = report["summary"];
  EXPECT_EQ(s["leaks"], 3);
  EXPECT_EQ(s["leaked_bytes"], kPoolBytes);
  EXPECT_EQ(s["nvtx_region_leaks"], 2);
  EXPECT_EQ(s["nvtx_region_leaked_bytes"], 8192);

  // The overflowing copy: one api-bounds error naming the region.
  std::vector<json> bounds = ErrorsOfKind(report, "api-bounds");
  ASSERT_EQ(bounds.size(), 1u) << report["errors"].dump(1);
  EXPECT_EQ(s["errors"], 1) << report["errors"].dump(1);
  const json& e = bounds[0];
  EXPECT_EQ(e["call"], "cudaMemcpy");
  EXPECT_EQ(e["bytes"], 1500);
  EXPECT_EQ(e["offset"], 0);
  EXPECT_EQ(e["cuda_error"], "cudaSuccess") << "CUDA accepted it";
  EXPECT_TRUE(StackHas(e["stack"], "OverflowCopy"))
      << StackFunctions(e["stack"]);
  EXPECT_EQ(e["allocation"]["api"], "nvtx-region");
  EXPECT_EQ(e["allocation"]["bytes"], 1000);
  EXPECT_TRUE(StackHas(e["allocation"]["stack"], "OverflowAllocate"))
      << StackFunctions(e["allocation"]["stack"]);
  EXPECT_NE(e["detail"].get<std::string>().find("NVTX region"),
            std::string::npos)
      << e["detail"];

  // What the tool saw of the annotations, and the bad input it ignored.
  ASSERT_TRUE(report.contains("nvtx_mem")) << report.dump(1);
  const json& m = report["nvtx_mem"];
  EXPECT_EQ(m["heaps_registered"], 3);
  EXPECT_EQ(m["heaps_unregistered"], 1);
  EXPECT_EQ(m["heap_resets"], 1);
  EXPECT_EQ(m["regions_registered"], 10);
  EXPECT_EQ(m["regions_unregistered"], 3);
  EXPECT_EQ(m["regions_resized"], 1);
  EXPECT_EQ(m["regions_ended_by_heap"], 4);
  EXPECT_EQ(m["regions_ended_by_free"], 1);
  EXPECT_EQ(m["live_regions"], 2);
  EXPECT_EQ(m["live_region_bytes"], 8192);
  EXPECT_EQ(m["problems"].value("bad_descriptor", 0), 1) << m.dump();
  EXPECT_EQ(m["problems"].value("zero_size", 0), 1) << m.dump();
  EXPECT_EQ(m["problems"].value("unsupported_type", 0), 1) << m.dump();
  EXPECT_EQ(m["problems"].value("unknown_region", 0), 1) << m.dump();
  EXPECT_EQ(m["problems"].size(), 4u) << m.dump();
}

TEST_F(NvtxMemTest, PoolRegionsUnderPreload) {
  RunResult plain = RunPlain(GMT_NVTX_MEM_PROGRAM, {"pool"});
  ASSERT_EQ(plain.exit_code, 0) << plain.Describe();
  RunResult r = Run(GMT_NVTX_MEM_PROGRAM, {"pool"});
  EXPECT_EQ(r.exit_code, 0) << r.Describe();
  ExpectPoolHonoured(r);
  // The program sees the same CUDA results with the tool.
  EXPECT_EQ(r.out, plain.out);
  EXPECT_NE(r.out.find("pool done"), std::string::npos) << r.out;
}

TEST_F(NvtxMemTest, PoolRegionsThroughTheInjectionVariable) {
  RunOptions options;
  options.env.push_back({"NVTX_INJECTION64_PATH", GMT_TOOL_PATH});
  RunResult r = Run(GMT_NVTX_MEM_PROGRAM, {"pool"}, options);
  EXPECT_EQ(r.exit_code, 0) << r.Describe();
  ExpectPoolHonoured(r);
}

TEST_F(NvtxMemTest, TextReportNamesRegions) {
  RunOptions options;
  options.gmt_options = "report=text,json:report_path=<dir>/r.%p.json";
  RunResult r = Run(GMT_NVTX_MEM_PROGRAM, {"pool"}, options);
  ASSERT_TRUE(r.has_report) << r.Describe();
  std::vector<std::string> lines = ToolLines(r.err, r.pid);
  auto has = [&](const std::string& text) {
    for (const std::string& l : lines) {
      if (l.find(text) != std::string::npos) return true;
    }
    return false;
  };
  EXPECT_TRUE(has("LEAK: 8.0 KiB in 2 regions from nvtx-region")) << r.err;
  EXPECT_TRUE(has("8.0 KiB of it in 2 live NVTX regions")) << r.err;
  EXPECT_TRUE(has("of which 2 NVTX regions of pool allocators")) << r.err;
  EXPECT_TRUE(has("NVTX MEMORY: 3 heaps and 10 regions registered")) << r.err;
  EXPECT_TRUE(has("ERROR: api-bounds")) << r.err;
}

TEST_F(NvtxMemTest, NvtxMemOffLeavesThePoolOpaque) {
  RunOptions options;
  options.gmt_options = "report=json:report_path=<dir>/r.%p.json:nvtx_mem=0";
  RunResult r = Run(GMT_NVTX_MEM_PROGRAM, {"pool"}, options);
  EXPECT_EQ(r.exit_code, 0) << r.Describe();
  ASSERT_TRUE(r.has_report) << r.Describe();
  EXPECT_TRUE(LeaksWithApi(r.report, "nvtx-region").empty())
      << r.report["leaks"].dump(1);
  EXPECT_TRUE(r.report["errors"].empty()) << r.report["errors"].dump(1);
  EXPECT_FALSE(r.report.contains("nvtx_mem"));
  std::vector<json> blocks = LeaksWithApi(r.report, "cudaMalloc");
  ASSERT_EQ(blocks.size(), 1u);
  EXPECT_FALSE(blocks[0].contains("nvtx_regions"));
  EXPECT_EQ(r.report["summary"]["nvtx_region_leaks"], 0);
}

TEST_F(NvtxMemTest, NvtxRangesOffKeepsRegions) {
  // nvtx=0 turns off range attribution only: the library still makes itself
  // NVTX's injection for the memory API.
  RunOptions options;
  options.gmt_options = "report=json:report_path=<dir>/r.%p.json:nvtx=0";
  RunResult r = Run(GMT_NVTX_MEM_PROGRAM, {"pool"}, options);
  ASSERT_TRUE(r.has_report) << r.Describe();
  EXPECT_EQ(LeaksWithApi(r.report, "nvtx-region").size(), 1u)
      << r.report["leaks"].dump(1);
  EXPECT_FALSE(r.report.contains("nvtx_ranges"));
}

TEST_F(NvtxMemTest, RangesProgramUnaffectedByTheMemoryInjection) {
  // A program with ranges only: no nvtx_mem section, no region fields.
  RunResult r = Run(GMT_NVTX_PROGRAM, {"nvtx"});
  ASSERT_TRUE(r.has_report) << r.Describe();
  EXPECT_FALSE(r.report.contains("nvtx_mem"));
  EXPECT_TRUE(r.report.contains("nvtx_ranges"));
  EXPECT_EQ(r.report["summary"]["nvtx_region_leaks"], 0);
}

}  // namespace
}  // namespace gmt_test
