// Out of memory: the program gets CUDA's own error, and the
// report has one `oom` error per burst with the holders by call site.
#include "tests/interpose/interpose_test_util.h"

namespace gmt_test {
namespace {

using OomTest = InterposeTest;

int Count(const std::string& text, const std::string& part) {
  int n = 0;
  for (size_t at = text.find(part); at != std::string::npos;
       at = text.find(part, at + 1)) {
    ++n;
  }
  return n;
}

TEST_F(OomTest, ProgramGetsTheOriginalErrorWithAndWithoutTheTool) {
  RunResult without = RunPlain(GMT_OOM_PROGRAM);
  RunResult with = Run(GMT_OOM_PROGRAM);
  ASSERT_EQ(without.exit_code, 0) << without.Describe();
  ASSERT_EQ(with.exit_code, 0) << with.Describe();
  EXPECT_EQ(
      Count(without.out, "cudaMalloc(64 GiB) -> 2 cudaErrorMemoryAllocation"),
      3)
      << without.out;
  EXPECT_EQ(with.out, without.out);
  EXPECT_EQ(Count(with.out, "pointer after failure: null"), 3) << with.out;
  EXPECT_EQ(Count(with.out, "cuMemAlloc(64 GiB) -> 2 CUDA_ERROR_OUT_OF_MEMORY"),
            1)
      << with.out;
}

// The tool's first, enlarged attempt fails for lack of memory and its
// unguarded retry succeeds: the program sees success, and the runtime's last
// error is what it was before the call (the first attempt's failure used to
// stay there for cudaGetLastError to find).
TEST_F(OomTest, RetryWithoutRedzonesLeavesTheLastErrorAsItWas) {
  RunResult without = RunPlain(GMT_OOM_PROGRAM, {"near-full"});
  RunResult with = Run(GMT_OOM_PROGRAM, {"near-full"});
  ASSERT_EQ(without.exit_code, 0) << without.Describe();
  ASSERT_EQ(with.exit_code, 0) << with.Describe();
  EXPECT_NE(without.out.find("cudaMalloc(nearly all) -> 0 cudaSuccess\n"
                             "cudaGetLastError -> 0 cudaSuccess"),
            std::string::npos)
      << without.out;
  // A failed allocation leaves the program's pointer as CUDA leaves it.
  EXPECT_NE(without.out.find("pointer after failure: null"), std::string::npos)
      << without.out;
  EXPECT_EQ(with.out, without.out);
  ASSERT_TRUE(with.has_report) << with.Describe();
  // The blocks got no redzones, and the report says so; the only
  // out-of-memory error is the program's own 64 GiB request.
  EXPECT_GE(with.report["guard"].value("unguarded_oom", 0), 3)
      << with.report["guard"].dump();
  for (const json& e : ErrorsOfKind(with.report, "oom")) {
    EXPECT_EQ(e.value("requested", uint64_t{0}), uint64_t{64} << 30)
        << e.dump(1);
  }
}

TEST_F(OomTest, OneReportPerBurstWithHoldersLargestFirst) {
  RunResult r = Run(GMT_OOM_PROGRAM);
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  ASSERT_TRUE(r.has_report) << r.Describe();
  std::vector<json> errors = ErrorsOfKind(r.report, "oom");
  // Four failures less than 1 s apart on device 0: one burst, one report.
  ASSERT_EQ(errors.size(), 1u) << r.Describe();
  const json& e = errors[0];
  EXPECT_EQ(e.value("api", ""), "cudaMalloc");
  EXPECT_EQ(e.value("cuda_result", -1), 2);
  EXPECT_EQ(e.value("cuda_error", ""), "cudaErrorMemoryAllocation");
  EXPECT_EQ(e.value("requested", uint64_t{0}), uint64_t{64} << 30);
  EXPECT_EQ(e.value("device", -1), 0);
  EXPECT_EQ(e.value("device_total", uint64_t{0}), uint64_t{16} << 30);
  EXPECT_GT(e.value("device_free", uint64_t{0}), 0u);
  EXPECT_GE(e.value("process_bytes", uint64_t{0}),
            (uint64_t{4} << 20) + (64 << 10));
  EXPECT_TRUE(StackHas(e["stack"], "AskTooMuch")) << StackFunctions(e["stack"]);
  ASSERT_GE(e["holders"].size(), 2u) << e.dump(1);
  EXPECT_EQ(e["holders"][0].value("count", 0), 4);
  EXPECT_GE(e["holders"][0].value("bytes", uint64_t{0}), uint64_t{4} << 20);
  EXPECT_TRUE(StackHas(e["holders"][0]["stack"], "FillDevice"))
      << StackFunctions(e["holders"][0]["stack"]);
  EXPECT_TRUE(StackHas(e["holders"][1]["stack"], "SmallSite"))
      << StackFunctions(e["holders"][1]["stack"]);
  const std::string reading = e.value("reading", "");
  EXPECT_NE(reading.find("the largest holder is FillDevice"), std::string::npos)
      << reading;
  EXPECT_NE(reading.find("larger than the whole card"), std::string::npos)
      << reading;
  // No NVML here: other processes are not visible, and it says why.
  EXPECT_NE(e.value("other_processes_status", "").find("NVML unavailable"),
            std::string::npos)
      << e.dump(1);
  // The three failures not reported again are counted in the notes.
  bool noted = false;
  for (const json& n : r.report["notes"]) {
    noted |= n.get<std::string>().find(
                 "3 out-of-memory failures were not "
                 "reported again") != std::string::npos;
  }
  EXPECT_TRUE(noted) << r.report["notes"].dump();
  // The device's health says NVML is unavailable, with the reason.
  ASSERT_FALSE(r.report["devices"].empty());
  const json& health = r.report["devices"][0]["health"];
  EXPECT_EQ(health.value("available", true), false);
  EXPECT_NE(health.value("reason", "").find("libnvidia-ml.so.1"),
            std::string::npos)
      << health.dump();
  // Printed when found, too.
  EXPECT_EQ(Count(r.err, "ERROR: oom"), 1) << r.err;
  EXPECT_NE(r.err.find("holder #1"), std::string::npos) << r.err;
}

TEST_F(OomTest, ANewBurstAfterAQuietSecondIsReportedAgain) {
  RunResult r = Run(GMT_OOM_PROGRAM, {"1200"});
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  std::vector<json> errors = ErrorsOfKind(r.report, "oom");
  ASSERT_EQ(errors.size(), 2u) << r.Describe();
  EXPECT_EQ(errors[1].value("api", ""), "cuMemAlloc");
  EXPECT_EQ(errors[1].value("cuda_error", ""), "CUDA_ERROR_OUT_OF_MEMORY");
  EXPECT_EQ(errors[1].value("unreported_previous_burst", -1), 2);
  EXPECT_TRUE(StackHas(errors[1]["stack"], "DriverTooMuch"))
      << StackFunctions(errors[1]["stack"]);
}

TEST_F(OomTest, OomReportOffReportsNothing) {
  RunOptions o;
  o.gmt_options = "report=json:report_path=<dir>/r.%p.json:oom_report=0";
  RunResult r = Run(GMT_OOM_PROGRAM, {}, o);
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  ASSERT_TRUE(r.has_report) << r.Describe();
  EXPECT_TRUE(ErrorsOfKind(r.report, "oom").empty()) << r.Describe();
}

}  // namespace
}  // namespace gmt_test
