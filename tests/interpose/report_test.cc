// The report itself: JSON shape, report_path %p, the default text report,
// option errors, silence for programs that never touch CUDA, and blocks
// released by cudaDeviceReset.
#include <filesystem>
#include <regex>
#include <set>

#include "tests/interpose/interpose_test_util.h"

namespace gmt_test {
namespace {

using ReportTest = InterposeTest;

TEST_F(ReportTest, JsonReportHasTheDocumentedFields) {
  RunResult r = Run(GMT_LEAK_PROGRAM, {"all"});
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  ASSERT_TRUE(r.has_report) << r.Describe();
  const json& j = r.report;
  EXPECT_EQ(j.value("tool", ""), "gpumemtrace");
  EXPECT_TRUE(j["version"].is_string());
  EXPECT_EQ(j.value("pid", -1), r.pid);
  ASSERT_TRUE(j["argv"].is_array() && j["argv"].size() == 2) << j["argv"];
  EXPECT_NE(j["argv"][0].get<std::string>().find("gmt_leak_program"),
            std::string::npos);
  EXPECT_EQ(j["argv"][1], "all");
  EXPECT_TRUE(j["reason"].is_string());

  ASSERT_TRUE(j["devices"].is_array()) << j.dump(1);
  std::set<int> seen;
  for (const json& d : j["devices"]) {
    int index = d.value("index", -1);
    seen.insert(index);
    EXPECT_EQ(d.value("name", ""), "Fake GPU " + std::to_string(index));
    EXPECT_EQ(d.value("total_bytes", uint64_t{0}), uint64_t{16} << 30);
    for (const char* key :
         {"peak_bytes", "live_bytes", "allocations", "frees"}) {
      EXPECT_TRUE(d[key].is_number()) << key;
    }
    EXPECT_TRUE(d["health"].is_object());
  }
  EXPECT_EQ(seen, (std::set<int>{0, 1})) << j["devices"].dump(1);
  for (const char* key : {"peak_bytes", "live_bytes", "allocations", "frees"}) {
    EXPECT_TRUE(j["host"][key].is_number()) << key;
  }
  EXPECT_EQ(j["host"].value("live_bytes", uint64_t{0}), 7000u);
  for (const char* key :
       {"allocations", "frees", "live_bytes_at_exit", "errors", "leaks",
        "leaked_bytes", "leak_sites", "untracked_frees"}) {
    EXPECT_TRUE(j["summary"][key].is_number()) << key;
  }
  ASSERT_TRUE(j["leaks"].is_array());
  EXPECT_EQ(j["summary"].value("leak_sites", 0u), j["leaks"].size());
  for (const json& leak : j["leaks"]) {
    for (const char* key : {"api", "kind", "address"}) {
      EXPECT_TRUE(leak[key].is_string()) << key << " in " << leak.dump();
    }
    EXPECT_EQ(leak["address"].get<std::string>().rfind("0x", 0), 0u);
    for (const char* key : {"bytes", "count", "device"}) {
      EXPECT_TRUE(leak[key].is_number()) << key << " in " << leak.dump();
    }
    ASSERT_TRUE(leak["stack"].is_array());
    ASSERT_FALSE(leak["stack"].empty()) << leak.dump();
    for (const json& frame : leak["stack"]) {
      EXPECT_TRUE(frame["address"].is_string()) << frame.dump();
      EXPECT_TRUE(frame["function"].is_string()) << frame.dump();
      EXPECT_TRUE(frame["module"].is_string()) << frame.dump();
    }
  }
  EXPECT_TRUE(j["errors"].is_array());
}

TEST_F(ReportTest, ReportPathExpandsPid) {
  RunResult r = Run(GMT_LEAK_PROGRAM, {"runtime"});
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  EXPECT_TRUE(r.has_report) << r.Describe();
  std::string dir = std::filesystem::path(r.report_path).parent_path();
  EXPECT_FALSE(std::filesystem::exists(dir + "/r.%p.json"));
}

TEST_F(ReportTest, TextReportGoesToStderrByDefault) {
  RunOptions options;
  options.set_gmt_options = false;  // all defaults: report=text to stderr
  RunResult r = Run(GMT_LEAK_PROGRAM, {"all"}, options);
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  EXPECT_FALSE(r.has_report) << "no JSON by default";
  std::vector<std::string> lines = ToolLines(r.err, r.pid);
  ASSERT_FALSE(lines.empty()) << r.err;
  std::string text;
  for (const std::string& line : lines) text += line + "\n";
  EXPECT_TRUE(std::regex_search(
      text,
      std::regex(R"(LEAK: [0-9.]+ (B|KiB|MiB) in 3 blocks from cudaMalloc)")))
      << text;
  EXPECT_TRUE(std::regex_search(
      text,
      std::regex(R"(LEAK: [0-9.]+ (B|KiB|MiB) in 2 blocks from cuMemAlloc)")))
      << text;
  EXPECT_TRUE(std::regex_search(
      text,
      std::regex(R"(LEAK: [0-9.]+ (B|KiB|MiB) in 1 block from cuMemCreate)")))
      << text;
  EXPECT_NE(text.find("LeakRuntimeAllocation"), std::string::npos) << text;
  EXPECT_TRUE(std::regex_search(text, std::regex(R"((^|\n)SUMMARY: )")))
      << text;
  // The program's own output is untouched.
  EXPECT_EQ(r.out.substr(r.out.size() - 5), "done\n");
}

TEST_F(ReportTest, BadOptionsAreNamedAndDefaultsKept) {
  RunOptions options;
  options.gmt_options = "bogus=1:stack_depth=999";
  RunResult r = Run(GMT_LEAK_PROGRAM, {"runtime"}, options);
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  EXPECT_NE(r.err.find("bogus"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("stack_depth"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("done"), std::string::npos) << r.out;
  // Defaults: the text report on stderr, with stacks (stack_depth=16).
  std::string text;
  for (const std::string& line : ToolLines(r.err, r.pid)) text += line + "\n";
  EXPECT_NE(text.find("LEAK: "), std::string::npos) << r.err;
  EXPECT_NE(text.find("SUMMARY: "), std::string::npos) << r.err;
  EXPECT_NE(text.find("LeakRuntimeAllocation"), std::string::npos) << r.err;
}

TEST_F(ReportTest, ProgramWithoutCudaGetsNoToolOutput) {
  RunOptions text_default;
  text_default.set_gmt_options = false;
  RunResult r = Run(GMT_NOCUDA_PROGRAM, {}, text_default);
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  EXPECT_EQ(r.out, "hello world\n");
  EXPECT_EQ(r.err, "") << "the tool printed something";

  RunResult j = Run(GMT_NOCUDA_PROGRAM);  // report=json
  ASSERT_EQ(j.exit_code, 0) << j.Describe();
  EXPECT_EQ(j.err, "");
  EXPECT_FALSE(j.has_report) << j.Describe();
}

TEST_F(ReportTest, ExitcodeAppliesWhenLeaksWereFound) {
  RunOptions options;
  options.gmt_options = "report=json:report_path=<dir>/r.%p.json:exitcode=42";
  RunResult leaky = Run(GMT_LEAK_PROGRAM, {"runtime"}, options);
  EXPECT_EQ(leaky.exit_code, 42) << leaky.Describe();
  RunResult clean = Run(GMT_LEAK_PROGRAM, {"vmm_clean"}, options);
  EXPECT_EQ(clean.exit_code, 0) << clean.Describe();
}

TEST_F(ReportTest, HaltOnErrorStopsAtTheFirstError) {
  RunOptions options;
  options.gmt_options =
      "report=json:report_path=<dir>/r.%p.json:halt_on_error=1";
  RunResult r = Run(GMT_ERROR_PROGRAM, {"double_free"}, options);
  EXPECT_NE(r.exit_code, 0) << r.Describe();
  EXPECT_EQ(r.out.find("done"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("double-free"), std::string::npos) << r.err;
  // "after printing the report"
  ASSERT_TRUE(r.has_report) << r.Describe();
  EXPECT_EQ(ErrorsOfKind(r.report, "double-free").size(), 1u);
}

TEST_F(ReportTest, TextAndJsonTogether) {
  RunOptions options;
  options.gmt_options = "report=text,json:report_path=<dir>/r.%p.json";
  RunResult r = Run(GMT_LEAK_PROGRAM, {"runtime"}, options);
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  EXPECT_TRUE(r.has_report) << r.Describe();
  std::string text;
  for (const std::string& line : ToolLines(r.err, r.pid)) text += line + "\n";
  EXPECT_NE(text.find("LEAK: "), std::string::npos) << r.err;
  EXPECT_NE(text.find("SUMMARY: "), std::string::npos) << r.err;
}

// Resetting device 1 leaves device 0's blocks (device and pinned) alone: they
// are freed later without errors and are not leaks.
TEST_F(ReportTest, ResetOfOneDeviceKeepsOtherDevicesBlocks) {
  RunResult r = Run(GMT_RESET_PROGRAM, {"1"});
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  EXPECT_NE(r.out.find("cudaFree(other device) -> 0"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("cudaFreeHost(other device) -> 0"), std::string::npos)
      << r.out;
  ASSERT_TRUE(r.has_report) << r.Describe();
  for (const json& leak : r.report["leaks"]) {
    uint64_t bytes = leak.value("bytes", uint64_t{0});
    EXPECT_TRUE(bytes != 6000u && bytes != 6100u) << leak.dump();
  }
  EXPECT_EQ(r.report["summary"].value("errors", -1), 0) << r.Describe();
}

class DeviceResetTest : public InterposeTest,
                        public testing::WithParamInterface<int> {
 protected:
  void SetUp() override {
    r_ = Run(GMT_RESET_PROGRAM, {std::to_string(GetParam())});
    ASSERT_EQ(r_.exit_code, 0) << r_.Describe();
    ASSERT_NE(r_.out.find("cudaDeviceReset -> 0 cudaSuccess"),
              std::string::npos)
        << r_.out;
    ASSERT_TRUE(r_.has_report) << r_.Describe();
  }
  RunResult r_;
};

TEST_P(DeviceResetTest, LiveDeviceBlocksAreLeaksReleasedByTheReset) {
  std::set<uint64_t> released;
  for (const json& leak : LeaksWithApi(r_.report, "cudaMalloc")) {
    uint64_t bytes = leak.value("bytes", uint64_t{0});
    EXPECT_NE(bytes, 1000u) << "freed before the reset: " << leak.dump();
    EXPECT_NE(bytes, 5000u) << "freed after the reset: " << leak.dump();
    EXPECT_TRUE(leak.contains("released_by") &&
                !leak["released_by"].get<std::string>().empty())
        << leak.dump();
    EXPECT_EQ(leak.value("device", -99), GetParam()) << leak.dump();
    EXPECT_TRUE(StackHas(leak["stack"], "LiveAtReset"))
        << StackFunctions(leak["stack"]);
    released.insert(bytes);
  }
  EXPECT_EQ(released, (std::set<uint64_t>{2000, 3000})) << r_.Describe();
  EXPECT_EQ(r_.report["summary"].value("errors", -1), 0) << r_.Describe();
}

// The driver frees pinned memory made in the primary context along with it.
TEST_P(DeviceResetTest, PinnedBlocksOfTheContextAreReleasedToo) {
  std::vector<json> pinned = LeaksWithApi(r_.report, "cudaMallocHost");
  ASSERT_EQ(pinned.size(), 1u) << r_.Describe();
  EXPECT_TRUE(pinned[0].contains("released_by")) << pinned[0].dump();
}

// After the reset the live set no longer holds the released blocks.
// summary.frees counts the program's frees (1000 and 5000, plus the two
// blocks of device 0 in device 1 runs); blocks released by the reset are
// counted once, as leaks, not also as frees.
TEST_P(DeviceResetTest, SummaryFreesCountOnlyTheProgramsFrees) {
  const json& s = r_.report["summary"];
  int64_t program_frees = GetParam() == 0 ? 2 : 4;
  EXPECT_EQ(s.value("frees", int64_t{-1}), program_frees) << s.dump();
  EXPECT_EQ(s.value("leaks", int64_t{-1}), 3) << s.dump();
  EXPECT_EQ(s.value("allocations", int64_t{-1}), program_frees + 3) << s.dump();
}

TEST_P(DeviceResetTest, ReleasedBlocksAreNotLiveAtExit) {
  const json& s = r_.report["summary"];
  EXPECT_EQ(s.value("live_bytes_at_exit", int64_t{-1}), 0) << r_.Describe();
}

INSTANTIATE_TEST_SUITE_P(Devices, DeviceResetTest, testing::Values(0, 1));

}  // namespace
}  // namespace gmt_test
