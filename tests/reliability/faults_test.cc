// Failures: CUDA running out of memory under load, the tool's own CUDA calls
// failing (tests/fake_cuda/fake_tool_faults.h), and the report's file system
// failing (an unwritable path, a write cut short by RLIMIT_FSIZE). In every
// case the program must see exactly what it sees without the tool, and the
// tool must say what it could not do rather than fail silently.
#include <filesystem>

#include "tests/reliability/reliability_util.h"

namespace gmt_test {
namespace {

using FaultTest = InterposeTest;

// ---- CUDA out of memory under load ------------------------------------------

// 16 threads; from the 4000th allocation attempt on, every allocation fails.
// The report counts exactly the allocations and frees that succeeded for the
// program (the tool's own allocations, which also hit the limit in the double,
// are never counted), and a failed allocation is no error of the program
// (only an out-of-memory diagnosis).
TEST_F(FaultTest, OutOfMemoryUnderLoadKeepsExactAccounting) {
  RunOptions options;
  options.env = {{"FAKE_CUDA_FAIL_ALLOC_AFTER", "4000"},
                 {"FAKE_CUDA_FAIL_ALLOC_COUNT", "0"}};
  RunResult r = Run(GMT_STRESS_PROGRAM, {"threads", "16", "600"}, options);
  ASSERT_FALSE(r.timed_out) << r.Describe();
  ASSERT_EQ(r.exit_code, 1) << r.Describe();  // the program saw failures
  std::map<std::string, long> counted = LineFigures(r.out, "totals");
  ASSERT_GT(counted["failures"], 0) << r.out;
  ASSERT_TRUE(r.has_report) << r.Describe();
  const json& summary = r.report["summary"];
  EXPECT_EQ(summary.value("allocations", -1L), counted["allocations"])
      << r.out << summary.dump();
  EXPECT_EQ(summary.value("frees", -1L), counted["frees"]) << summary.dump();
  EXPECT_EQ(summary.value("live_bytes_at_exit", -1L), counted["live_bytes"])
      << summary.dump();
  // A failed allocation is no bug of the program: the only errors are the
  // out-of-memory diagnoses (once per burst).
  for (const json& e : r.report["errors"]) {
    EXPECT_EQ(e.value("kind", ""), "oom") << e.dump();
  }
  EXPECT_EQ(summary.value("errors", -1L),
            static_cast<long>(r.report["errors"].size()))
      << r.Describe();
}

// ---- The tool's own CUDA calls fail
// ------------------------------------------

struct ToolFaultCase {
  const char* name;
  const char* variable;  // FAKE_CUDA_FAIL_*
  const char* value;
  const char* program;
  std::vector<std::string> args;
};

void PrintTo(const ToolFaultCase& c, std::ostream* os) { *os << c.name; }

class ToolFaultTest : public InterposeTest,
                      public testing::WithParamInterface<ToolFaultCase> {};

// Without the tool's GPU work the program still sees exactly what it sees
// without the tool; the report says the zones were not verified (checks that
// could not run, or fills that could not), never claims a clean check, and
// reports no made-up overrun.
TEST_P(ToolFaultTest, ProgramUnchangedAndReportSaysChecksDidNotRun) {
  const ToolFaultCase& c = GetParam();
  RunOptions plain_options;
  plain_options.preload = false;
  plain_options.set_gmt_options = false;
  plain_options.env = {{c.variable, c.value}};
  RunResult plain = Run(c.program, c.args, plain_options);
  RunOptions options;
  options.env = {{c.variable, c.value}};
  RunResult r = Run(c.program, c.args, options);
  ASSERT_FALSE(r.timed_out) << r.Describe();
  EXPECT_EQ(r.exit_code, plain.exit_code) << r.Describe();
  EXPECT_EQ(r.out, plain.out) << "without the tool:\n"
                              << plain.Describe() << "with it:\n"
                              << r.Describe();
  ASSERT_TRUE(r.has_report) << r.Describe();
  const json& guard = r.report["guard"];
  const uint64_t failures = guard.value("check_failures", uint64_t{0}) +
                            guard.value("fill_failures", uint64_t{0});
  bool noted = false;
  for (const json& note : r.report["notes"]) {
    noted |= Contains(note.get<std::string>(), "not verified") ||
             Contains(note.get<std::string>(), "could not run");
  }
  EXPECT_GT(failures, 0u) << guard.dump();
  EXPECT_TRUE(noted) << r.report["notes"].dump(1);
  EXPECT_EQ(guard.value("checks", -1), 0)
      << "no check can have run clean: " << guard.dump();
  EXPECT_TRUE(ErrorsOfKind(r.report, "oob-write").empty()) << r.Describe();
  EXPECT_TRUE(ErrorsOfKind(r.report, "oob-underflow").empty());
  EXPECT_TRUE(ErrorsOfKind(r.report, "uaf-write").empty());
  // And the fault really happened (the tool warned once on stderr).
  EXPECT_TRUE(Contains(r.err, "gpumemtrace: error: guard zones") ||
              Contains(r.err, "gpumemtrace: error: a guard-zone check"))
      << r.err;
}

const char* const kLaunch = GMT_GUARD_LAUNCH_PROGRAM;
const char* const kStress = GMT_STRESS_PROGRAM;
const char* const kLife = GMT_LIFE_PROGRAM;

INSTANTIATE_TEST_SUITE_P(
    Faults, ToolFaultTest,
    testing::Values(ToolFaultCase{"library_load_runtime",
                                  "FAKE_CUDA_FAIL_LIBRARY_LOAD",
                                  "1",
                                  kLaunch,
                                  {"attribution_runtime"}},
                    ToolFaultCase{"library_load_image_driver",
                                  "FAKE_CUDA_FAIL_LIBRARY_LOAD",
                                  "image",
                                  kLaunch,
                                  {"attribution_driver"}},
                    ToolFaultCase{"library_load_threads",
                                  "FAKE_CUDA_FAIL_LIBRARY_LOAD",
                                  "1",
                                  kStress,
                                  {"threads", "4", "300"}},
                    ToolFaultCase{"launch_runtime",
                                  "FAKE_CUDA_FAIL_LAUNCH",
                                  "1",
                                  kLaunch,
                                  {"attribution_runtime"}},
                    ToolFaultCase{"launch_fill_driver",
                                  "FAKE_CUDA_FAIL_LAUNCH",
                                  "fill",
                                  kLaunch,
                                  {"attribution_driver"}},
                    ToolFaultCase{"launch_check_runtime",
                                  "FAKE_CUDA_FAIL_LAUNCH",
                                  "check",
                                  kLaunch,
                                  {"attribution_runtime"}},
                    ToolFaultCase{"launch_threads",
                                  "FAKE_CUDA_FAIL_LAUNCH",
                                  "1",
                                  kStress,
                                  {"threads", "4", "300"}},
                    ToolFaultCase{"launch_reset",
                                  "FAKE_CUDA_FAIL_LAUNCH",
                                  "1",
                                  kLife,
                                  {"reset_midway"}},
                    ToolFaultCase{"stream_create_runtime",
                                  "FAKE_CUDA_FAIL_STREAM_CREATE",
                                  "1",
                                  kLaunch,
                                  {"attribution_runtime"}},
                    ToolFaultCase{"stream_create_static_dtors",
                                  "FAKE_CUDA_FAIL_STREAM_CREATE",
                                  "1",
                                  kLife,
                                  {"static_dtors"}}),
    [](const testing::TestParamInfo<ToolFaultCase>& info) {
      return std::string(info.param.name);
    });

// The injection hits only the tool: a program's own cuStreamCreate still
// succeeds with FAKE_CUDA_FAIL_STREAM_CREATE set, and the overrun that the
// tool cannot see without its kernels is found once they work.
TEST_F(FaultTest, ToolFaultInjectionSparesTheProgram) {
  RunOptions options;
  options.env = {{"FAKE_CUDA_FAIL_STREAM_CREATE", "1"}};
  RunResult r = Run(GMT_STRESS_PROGRAM, {"threads", "2", "30"}, options);
  EXPECT_TRUE(Contains(r.out, "cuStreamCreate -> 0 CUDA_SUCCESS")) << r.out;
  RunResult clean = Run(GMT_GUARD_LAUNCH_PROGRAM, {"attribution_runtime"});
  ASSERT_TRUE(clean.has_report) << clean.Describe();
  EXPECT_EQ(ErrorsOfKind(clean.report, "oob-write").size(), 1u);
  EXPECT_EQ(clean.report["guard"].value("check_failures", -1), 0);
}

// ---- The report's file cannot be written
// -------------------------------------

// The path's directory is a regular file (ENOTDIR, even for root): the report
// goes to stderr, whole, after a warning naming the path; the exit code is
// the program's.
TEST_F(FaultTest, UnwritableJsonPathFallsBackToStderr) {
  RunOptions options;
  options.gmt_options = "report=json:report_path=<dir>/stdout.txt/r.%p.json";
  RunResult r = Run(GMT_LEAK_PROGRAM, {"runtime"}, options);
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  EXPECT_TRUE(Contains(r.err, "writing the JSON report to stderr instead"))
      << r.err;
  size_t brace = r.err.find("\n{");
  ASSERT_NE(brace, std::string::npos) << r.err;
  json report = json::parse(r.err.substr(brace + 1), nullptr, false);
  ASSERT_FALSE(report.is_discarded()) << r.err;
  EXPECT_EQ(report["summary"].value("leaks", -1), 3);
}

TEST_F(FaultTest, UnwritableTextPathFallsBackToStderr) {
  RunOptions options;
  options.gmt_options = "report=text:report_path=<dir>/stdout.txt/r.%p.txt";
  RunResult r = Run(GMT_LEAK_PROGRAM, {"runtime"}, options);
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  EXPECT_TRUE(Contains(r.err, "writing the report to stderr instead")) << r.err;
  EXPECT_TRUE(Contains(r.err, "SUMMARY: 0 errors, 3 leaked blocks")) << r.err;
}

// ---- The disk fills up in the middle of the report
// ----------------------------

struct LimitCase {
  const char* format;  // "json" or "text"
  long limit;          // RLIMIT_FSIZE bytes
};

void PrintTo(const LimitCase& c, std::ostream* os) {
  *os << c.format << "_" << c.limit;
}

class FileSizeLimitTest : public InterposeTest,
                          public testing::WithParamInterface<LimitCase> {};

// Writes fail with EFBIG once the file reaches the limit: the report is
// either complete at its path or absent with the whole report on stderr and a
// warning — never a silent partial file, and no temporary file left behind.
TEST_P(FileSizeLimitTest, ReportIsWholeOrOnStderr) {
  const LimitCase& c = GetParam();
  std::string dir = tmp() + "/run";
  std::filesystem::create_directories(dir);
  const std::string name = std::string("r.%p.") + c.format;
  RunResult r = RunWithFileSizeLimit(
      GMT_STRESS_PROGRAM, {"threads", "16", "3"}, dir,
      std::string("report=") + c.format + ":report_path=<dir>/" + name,
      c.limit);
  ASSERT_FALSE(r.timed_out) << r.Describe();
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  const std::string path = dir + "/r." + std::to_string(r.pid) + "." + c.format;
  std::vector<std::string> files = FileNames(dir);
  for (const std::string& f : files) {
    // The temporary file is ".<name>.XXXXXX" next to the report.
    EXPECT_NE(f.rfind(".", 0), 0u) << "left behind: " << f;
  }
  const std::string written = ReadFile(path);
  if (std::filesystem::exists(path)) {
    // Complete at the final path.
    EXPECT_LE(static_cast<long>(written.size()), c.limit);
    if (std::string(c.format) == "json") {
      json report = json::parse(written, nullptr, false);
      ASSERT_FALSE(report.is_discarded()) << "partial JSON:\n" << written;
      EXPECT_EQ(report.value("pid", -1), r.pid);
    } else {
      EXPECT_TRUE(Contains(written, "SUMMARY:")) << "partial text:\n"
                                                 << written;
    }
    EXPECT_FALSE(Contains(r.err, "instead")) << r.err;
  } else {
    // Absent: stderr has the warning and the whole report.
    EXPECT_TRUE(Contains(r.err, "File too large")) << r.err;
    EXPECT_TRUE(Contains(r.err, "to stderr instead")) << r.err;
    if (std::string(c.format) == "json") {
      size_t brace = r.err.find("\n{");
      ASSERT_NE(brace, std::string::npos) << r.err;
      json report = json::parse(r.err.substr(brace + 1), nullptr, false);
      ASSERT_FALSE(report.is_discarded()) << r.err;
      EXPECT_EQ(report.value("pid", -1), r.pid);
    } else {
      EXPECT_TRUE(Contains(r.err, "SUMMARY:")) << r.err;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Limits, FileSizeLimitTest,
    testing::Values(LimitCase{"json", 0}, LimitCase{"json", 1},
                    LimitCase{"json", 1000}, LimitCase{"json", 4096},
                    LimitCase{"json", 1 << 20}, LimitCase{"text", 0},
                    LimitCase{"text", 500}, LimitCase{"text", 2048},
                    LimitCase{"text", 1 << 20}),
    [](const testing::TestParamInfo<LimitCase>& info) {
      return std::string(info.param.format) + "_" +
             std::to_string(info.param.limit);
    });

// The program (16 threads, 48 leaks) makes a ~6 KB JSON and a ~3 KB text
// report. The large limit above really lets the report through, and the small
// ones cut it (the double's VMM memfds would hit the limit themselves, so no
// VMM program here).
TEST_F(FaultTest, ReportFitsUnderALargeFileSizeLimit) {
  std::string dir = tmp() + "/big";
  std::filesystem::create_directories(dir);
  RunResult r =
      RunWithFileSizeLimit(GMT_STRESS_PROGRAM, {"threads", "16", "3"}, dir,
                           "report=json:report_path=<dir>/r.%p.json", 1 << 20);
  ASSERT_TRUE(r.has_report) << r.Describe();
  EXPECT_GT(ReadFile(r.report_path).size(), 4096u)
      << "the 4096-byte case would not cut the report";
  RunResult text =
      RunWithFileSizeLimit(GMT_STRESS_PROGRAM, {"threads", "16", "3"}, dir,
                           "report=text:report_path=<dir>/r.%p.txt", 1 << 20);
  EXPECT_GT(ReadFile(dir + "/r." + std::to_string(text.pid) + ".txt").size(),
            2048u)
      << "the 2048-byte case would not cut the report";
}

}  // namespace
}  // namespace gmt_test
