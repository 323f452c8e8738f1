// The gpumemtrace launcher as a process, against the CUDA test double:
// `run` traces a program (same pid: it exec()s), maps flags onto GMT_OPTIONS
// and keeps the user's; `report` renders a saved report again; `report
// --diff` compares two snapshots; bad usage exits 2 with the usage line.
#include <sys/stat.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "lib/report/report.h"
#include "lib/report/snapshot_diff.h"
#include "tests/cli/report_parse_sample.h"
#include "tests/interpose/interpose_test_util.h"

namespace gmt_test {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr const char* kLauncher = GMT_LAUNCHER_PATH;
#ifdef GMT_FAKE_NVML_PATH
constexpr const char* kFakeNvml = GMT_FAKE_NVML_PATH;
#else
constexpr const char* kFakeNvml = "";  // tests/unit absent: no NVML
#endif

class LauncherTest : public InterposeTest {
 protected:
  // Runs the launcher with `args`; no preload and no GMT_OPTIONS from the
  // test harness (the launcher sets both).
  RunResult Launch(const std::vector<std::string>& args,
                   std::vector<std::pair<std::string, std::string>> env = {}) {
    RunOptions options;
    options.preload = false;
    options.set_gmt_options = false;
    options.env = std::move(env);
    return Run(kLauncher, args, options);
  }

  // The JSON report a traced program wrote as `<dir>/r.<pid>.json`.
  static json ReportOf(const std::string& dir, const RunResult& r) {
    const std::string path = dir + "/r." + std::to_string(r.pid) + ".json";
    std::ifstream in(path);
    if (!in) {
      ADD_FAILURE() << "no report at " << path << "\n" << r.Describe();
      return json();
    }
    return json::parse(in, nullptr, false);
  }

  // The exit report the run printed to stderr (text and JSON were asked
  // for, so the text went to stderr): from its first line to SUMMARY.
  static std::string TextReportOf(const RunResult& r) {
    const std::string prefix = "==" + std::to_string(r.pid) + "== ";
    const size_t begin = r.err.find(prefix + "gpumemtrace ");
    const size_t summary = r.err.find(prefix + "SUMMARY: ", begin);
    if (begin == std::string::npos || summary == std::string::npos) {
      ADD_FAILURE() << "no text report in stderr\n" << r.Describe();
      return "";
    }
    return r.err.substr(begin, r.err.find('\n', summary) + 1 - begin);
  }

  // Runs `program` under the launcher for text and JSON reports (errors not
  // printed as found, so the text report has them in full) with the stand-in
  // NVML, then checks that `gpumemtrace report` of the saved JSON prints the
  // text the run printed and writes the JSON back byte for byte. Returns the
  // saved report.
  json RunAndRenderAgain(const std::string& program,
                         const std::vector<std::string>& program_args,
                         const std::vector<std::string>& options) {
    const std::string dir = tmp();
    std::vector<std::string> args = {
        "run", "--report",      "text,json", "-o", dir + "/r.%p.json",
        "-O",  "print_errors=0"};
    for (const std::string& option : options) {
      args.push_back("-O");
      args.push_back(option);
    }
    args.push_back("--");
    args.push_back(program);
    for (const std::string& a : program_args) args.push_back(a);
    RunResult r = Launch(args, {{"GMT_NVML_LIBRARY", kFakeNvml}});
    EXPECT_EQ(r.exit_code, 0) << r.Describe();
    const std::string saved = dir + "/r." + std::to_string(r.pid) + ".json";
    const std::string saved_text = ReadFile(saved);

    RunResult again = Launch(
        {"report", saved, "--format", "json", "-o", dir + "/again.json"});
    EXPECT_EQ(again.exit_code, 0) << again.Describe();
    EXPECT_EQ(ReadFile(dir + "/again.json"), saved_text);

    RunResult text = Launch({"report", saved});
    EXPECT_EQ(text.exit_code, 0) << text.Describe();
    EXPECT_EQ(text.out, TextReportOf(r));
    return json::parse(saved_text, nullptr, false);
  }

  static void WriteFile(const std::string& path, const std::string& text) {
    std::ofstream(path, std::ios::binary) << text;
  }
};

TEST_F(LauncherTest, RunTracesTheProgramWithTheFlagsOptions) {
  const std::string dir = tmp();
  RunResult r = Launch({"run", "--report", "json", "-o", dir + "/r.%p.json",
                        "--", GMT_LEAK_PROGRAM, "runtime"});
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  // The launcher became the program: the report carries its own pid.
  json report = ReportOf(dir, r);
  ASSERT_TRUE(report.is_object());
  EXPECT_EQ(report["pid"], r.pid);
  EXPECT_EQ(report["argv"][0], GMT_LEAK_PROGRAM);
  EXPECT_EQ(report["argv"][1], "runtime");
  std::vector<json> leaks = LeaksWithApi(report, "cudaMalloc");
  ASSERT_EQ(leaks.size(), 1u) << report.dump(2);
  EXPECT_EQ(leaks[0]["count"], 3);
  EXPECT_EQ(leaks[0]["bytes"], 12000);
}

TEST_F(LauncherTest, ErrorExitcodeFlag) {
  const std::string dir = tmp();
  RunResult r = Launch({"run", "--error-exitcode", "7", "--report=json",
                        "--output=" + dir + "/r.%p.json", "--",
                        GMT_LEAK_PROGRAM, "runtime"});
  EXPECT_EQ(r.exit_code, 7) << r.Describe();
  // Without leaks (leak check off) the program's own status stays.
  RunResult clean = Launch({"run", "--error-exitcode", "7", "--no-leak-check",
                            "--report", "json", "-o", dir + "/r.%p.json", "--",
                            GMT_LEAK_PROGRAM, "runtime"});
  EXPECT_EQ(clean.exit_code, 0) << clean.Describe();
  EXPECT_EQ(ReportOf(dir, clean)["leak_check"], false);
}

TEST_F(LauncherTest, UserGmtOptionsAreKeptAndFlagsWin) {
  const std::string dir = tmp();
  RunResult r = Launch({"run", "--report", "json", "-o", dir + "/r.%p.json",
                        "--", GMT_LEAK_PROGRAM, "runtime"},
                       {{"GMT_OPTIONS", "report=text:leak_check=0"}});
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  json report = ReportOf(dir, r);          // report=json won over report=text
  EXPECT_EQ(report["leak_check"], false);  // the user's setting stayed
  EXPECT_TRUE(report["leaks"].empty());
}

TEST_F(LauncherTest, RunRefusesBadFlagsBeforeStarting) {
  RunResult r =
      Launch({"run", "--check", "always", "--", GMT_LEAK_PROGRAM, "runtime"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("usage: gpumemtrace run"));
  EXPECT_THAT(r.err, HasSubstr("gpumemtrace run: error: --check always:"));
  EXPECT_EQ(r.out, "");  // the program did not run

  r = Launch({"run", "--frobnicate", "--", "true"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("unknown flag '--frobnicate'"));
  r = Launch({"run", GMT_LEAK_PROGRAM});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("missing '--'"));
}

TEST_F(LauncherTest, ProgramThatCannotRun) {
  RunResult r = Launch({"run", "--", tmp() + "/no_such_program"});
  EXPECT_EQ(r.exit_code, 127);
  EXPECT_THAT(r.err, HasSubstr("No such file or directory"));
  r = Launch({"run", "--", "gmt_no_such_command_anywhere"});
  EXPECT_EQ(r.exit_code, 127);
  EXPECT_THAT(r.err, HasSubstr("command not found in PATH"));
  const std::string text = tmp() + "/not_executable";
  WriteFile(text, "hello");
  chmod(text.c_str(), 0644);
  r = Launch({"run", "--", text});
  EXPECT_EQ(r.exit_code, 126);
  EXPECT_THAT(r.err, HasSubstr("not executable"));
  r = Launch({"run", "--", tmp()});
  EXPECT_EQ(r.exit_code, 126);
  EXPECT_THAT(r.err, HasSubstr("is a directory"));
}

TEST_F(LauncherTest, LibraryFromGmtLibrary) {
  RunResult r = Launch({"run", "--", GMT_LEAK_PROGRAM, "runtime"},
                       {{"GMT_LIBRARY", "/no/such/libgpumemtrace.so"}});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("GMT_LIBRARY is '/no/such/libgpumemtrace.so'"));
  const std::string dir = tmp();
  r = Launch({"run", "--report", "json", "-o", dir + "/r.%p.json", "--",
              GMT_LEAK_PROGRAM, "runtime"},
             {{"GMT_LIBRARY", GMT_TOOL_PATH}});
  EXPECT_EQ(r.exit_code, 0) << r.Describe();
  EXPECT_EQ(ReportOf(dir, r)["summary"]["leaks"], 3);
}

TEST_F(LauncherTest, ReportRendersASavedReportAgain) {
  const std::string dir = tmp();
  RunResult r = Launch({"run", "--report", "json", "-o", dir + "/r.%p.json",
                        "--", GMT_LEAK_PROGRAM, "runtime"});
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  const std::string saved = dir + "/r." + std::to_string(r.pid) + ".json";

  // JSON again: what the library wrote, byte for byte.
  RunResult again =
      Launch({"report", saved, "--format", "json", "-o", dir + "/again.json"});
  ASSERT_EQ(again.exit_code, 0) << again.Describe();
  EXPECT_EQ(ReadFile(dir + "/again.json"), ReadFile(saved));
  const json rendered = json::parse(ReadFile(dir + "/again.json"));
  EXPECT_EQ(rendered["leaks"][0]["stack"][0]["function"],
            "LeakRuntimeAllocation()");

  // Text (the default), to stdout: the leak with its call site.
  RunResult text = Launch({"report", saved});
  ASSERT_EQ(text.exit_code, 0) << text.Describe();
  EXPECT_THAT(text.out, HasSubstr("LeakRuntimeAllocation"));
  EXPECT_THAT(text.out, HasSubstr("cudaMalloc"));
  EXPECT_TRUE(std::regex_search(
      text.out, std::regex("==" + std::to_string(r.pid) + "== ")))
      << "the text keeps the traced program's pid: " << text.out;
}

// A saved report with every section (health with Xid events, reachability,
// growth, oom, crash, timeline, NVTX ranges, suppressions, thread ids): the
// launcher prints the text the run would have printed and writes the JSON
// back unchanged.
TEST_F(LauncherTest, ReportRendersEverySectionOfASavedReport) {
  const std::string dir = tmp();
  const gmt::ReportData data = gmt::sample::Full();
  const std::string original = gmt::RenderJson(data) + "\n";
  WriteFile(dir + "/saved.json", original);

  RunResult text = Launch({"report", dir + "/saved.json"});
  ASSERT_EQ(text.exit_code, 0) << text.Describe();
  EXPECT_EQ(text.out, gmt::RenderText(data, /*max_leaks=*/50));
  for (const char* part :
       {"GPU health (NVML):", "Xid 48 at 2.250 s", "reachability: definitely",
        "GROWTH: 1.0 MiB ->", "holder #1: 4.0 MiB",
        "ERROR: oom:", "CRASH: SIGSEGV", "BY NVTX RANGE", "T3 (tid 5003)"}) {
    EXPECT_THAT(text.out, HasSubstr(part));
  }
  RunResult limited = Launch({"report", dir + "/saved.json", "--max-leaks=1"});
  ASSERT_EQ(limited.exit_code, 0) << limited.Describe();
  EXPECT_EQ(limited.out, gmt::RenderText(data, 1));

  RunResult json_again = Launch({"report", dir + "/saved.json", "--format",
                                 "json", "-o", dir + "/again.json"});
  ASSERT_EQ(json_again.exit_code, 0) << json_again.Describe();
  EXPECT_EQ(ReadFile(dir + "/again.json"), original);
}

// Real runs (the CUDA and NVML test doubles): what `report` prints from the
// saved JSON is what the run printed at exit.
TEST_F(LauncherTest, ReportOfARunWithGrowthReachabilityAndHealth) {
  const json report = RunAndRenderAgain(
      GMT_REACHABILITY_PROGRAM, {"growth"},
      {"growth_interval_ms=50", "growth_samples=4", "growth_min_bytes=65536"});
  ASSERT_TRUE(report.is_object());
  EXPECT_FALSE(report["growth"].empty()) << report.dump(1);
  EXPECT_EQ(report["reachability"]["ran"], true) << report.dump(1);
  if (*kFakeNvml != '\0') {
    EXPECT_EQ(report["health"]["available"], true) << report.dump(1);
  }
}

TEST_F(LauncherTest, ReportOfARunWithOomAndHealth) {
  const json report = RunAndRenderAgain(GMT_OOM_PROGRAM, {}, {});
  ASSERT_TRUE(report.is_object());
  bool oom = false;
  for (const json& e : report["errors"]) oom |= e.value("kind", "") == "oom";
  EXPECT_TRUE(oom) << report.dump(1);
  EXPECT_TRUE(report.contains("thread_os_ids")) << report.dump(1);
  if (*kFakeNvml != '\0') {
    EXPECT_EQ(report["health"]["available"], true) << report.dump(1);
  }
}

TEST_F(LauncherTest, ReportRefusesBadInputWithAClearError) {
  const std::string dir = tmp();
  WriteFile(dir + "/broken.json", "{\"tool\": \"gpumemtrace\", \"pid\": ");
  WriteFile(dir + "/typed.json",
            R"({"tool":"gpumemtrace","leaks":[{"bytes":"9"}]})");
  RunResult r = Launch({"report", dir + "/broken.json"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("broken.json: not JSON"));
  r = Launch({"report", dir + "/typed.json"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("leaks[0].bytes: expected an unsigned integer"));
  // A malformed new section names its field.
  WriteFile(dir + "/growth.json",
            R"({"tool":"gpumemtrace","growth":[{"rises":"5"}]})");
  r = Launch({"report", dir + "/growth.json"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("growth.json: growth[0].rises: expected an "
                               "integer"));
  WriteFile(
      dir + "/health.json",
      R"({"tool":"gpumemtrace","health":{"devices":[{"gpu_temp_c":-4}]}})");
  r = Launch({"report", dir + "/health.json"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("health.devices[0].gpu_temp_c: out of range"));
  r = Launch({"report", dir + "/missing.json"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("cannot read"));
  r = Launch({"report", dir + "/typed.json", "--format", "pdf"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("unknown --format 'pdf'"));
  r = Launch({"report"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("no report file given"));
  r = Launch({"report", "a.json", "b.json"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("--diff"));
}

gmt::Snapshot MakeSnapshot(std::vector<std::pair<uint64_t, size_t>> blocks) {
  gmt::Snapshot s;
  s.active = true;
  for (auto [address, bytes] : blocks) {
    gmt::Allocation a;
    a.address = address;
    a.bytes = bytes;
    a.device = 0;
    a.api = "cudaMalloc";
    a.kind = "device";
    a.thread = 1;
    a.time_s = static_cast<double>(address % 1000) / 8;
    a.stack = {{0x401000, "Step(int)", "train.cu", 42, "app"}};
    s.allocations.push_back(a);
    s.live_bytes += bytes;
  }
  return s;
}

TEST_F(LauncherTest, ReportDiffOfTwoSnapshots) {
  const std::string dir = tmp();
  const gmt::Snapshot before = MakeSnapshot({{0x1000, 100}, {0x2000, 200}});
  const gmt::Snapshot after =
      MakeSnapshot({{0x2000, 200}, {0x3000, 4096}, {0x4000, 4096}});
  WriteFile(dir + "/a.json", gmt::SnapshotToJson(before).dump());
  WriteFile(dir + "/b.json", gmt::SnapshotToJson(after).dump());

  RunResult r = Launch({"report", "--diff", dir + "/a.json", dir + "/b.json"});
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  const gmt::SnapshotDiff diff = gmt::DiffSnapshots(before, after);
  EXPECT_EQ(diff.new_count, 2u);
  EXPECT_EQ(r.out, gmt::RenderDiffText(diff, r.pid));
  EXPECT_THAT(r.out, HasSubstr("Step(int)"));

  r = Launch({"report", "--diff", dir + "/a.json", dir + "/b.json", "--format",
              "json"});
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  json doc = json::parse(r.out);
  EXPECT_EQ(doc, gmt::DiffToJson(diff));
  EXPECT_EQ(doc["new_bytes"], 8192);
  EXPECT_EQ(doc["freed_bytes"], 100);
}

TEST_F(LauncherTest, ReportDiffRefusesWhatIsNotASnapshot) {
  const std::string dir = tmp();
  WriteFile(dir + "/a.json", gmt::SnapshotToJson(MakeSnapshot({})).dump());
  WriteFile(dir + "/bad.json", R"({"allocations": [{"address": "0x10"}]})");
  WriteFile(dir + "/report.json", R"({"tool": "gpumemtrace", "leaks": []})");
  RunResult r =
      Launch({"report", "--diff", dir + "/a.json", dir + "/bad.json"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("bad.json: not a snapshot: allocations[0]"));
  r = Launch({"report", "--diff", dir + "/report.json", dir + "/a.json"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("exit report, not a snapshot"));
  r = Launch({"report", "--diff", dir + "/a.json"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("--diff needs two snapshot files"));
  r = Launch({"report", "--diff", dir + "/a.json", dir + "/a.json", "--format",
              "html"});
  EXPECT_EQ(r.exit_code, 2);
}

TEST_F(LauncherTest, HelpPagesAndUsageErrors) {
  RunResult r = Launch({"--help"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_THAT(r.out, HasSubstr("SYNOPSIS"));
  EXPECT_THAT(r.out, HasSubstr("gpumemtrace run [FLAGS] -- PROGRAM"));
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"help", "run"},
        std::vector<std::string>{"run", "--help"}}) {
    r = Launch(args);
    EXPECT_EQ(r.exit_code, 0);
    EXPECT_THAT(r.out, HasSubstr("--error-exitcode N"));
    EXPECT_THAT(r.out, HasSubstr("--suppressions FILE"));
  }
  r = Launch({"report", "--help"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_THAT(r.out, HasSubstr("--diff"));
  r = Launch({"--help-options"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_THAT(r.out, HasSubstr("quarantine_bytes="));
  r = Launch({});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("usage: gpumemtrace"));
  r = Launch({"frobnicate"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("unknown command 'frobnicate'"));
  r = Launch({"--frobnicate"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("unknown flag '--frobnicate'"));
  r = Launch({"help", "frobnicate"});
  EXPECT_EQ(r.exit_code, 2);
}

// --explain-faults: the launcher turns on the library's explain_faults, which
// arms the driver's GPU core dump at load in a private folder; the driver
// (here its stand-in, gmt_gpu_dump_program, which makes no CUDA call) writes
// the dump there and aborts. The crash report's reading of the dump is
// tested where the tool runs with the test double (tests/interpose,
// ExplainFaultsTest).
class ExplainFaultsTest : public LauncherTest {
 protected:
  static std::string Fixture(const std::string& name) {
    return std::string(GMT_CUDACORE_FIXTURES) + "/" + name;
  }
  RunResult RunDumping(
      const std::vector<std::string>& flags, const std::string& dump,
      std::vector<std::pair<std::string, std::string>> env = {}) {
    std::vector<std::string> args = {"run"};
    args.insert(args.end(), flags.begin(), flags.end());
    args.insert(args.end(), {"--", GMT_GPU_DUMP_PROGRAM, dump});
    env.emplace_back("TMPDIR", tmp());
    return Launch(args, env);
  }
};

TEST_F(ExplainFaultsTest, TheLibraryArmsTheDumpInAPrivateFolder) {
  RunResult r =
      RunDumping({"--explain-faults"}, Fixture("wild_write.cudacore"));
  // The launcher became the program, which the driver aborted.
  EXPECT_EQ(r.exit_code, 128 + SIGABRT) << r.Describe();
  const std::string prefix = "dump: " + tmp() + "/gpumemtrace-dump.";
  EXPECT_THAT(r.out, HasSubstr(prefix));
  // With the library injected too, the driver wrote no dump (H200).
  EXPECT_THAT(r.out, HasSubstr("injection: unset"));
}

TEST_F(ExplainFaultsTest, WithoutTheFlagNothingIsArmed) {
  RunResult r = RunDumping({}, Fixture("wild_write.cudacore"));
  EXPECT_EQ(r.exit_code, 1) << r.Describe();
  EXPECT_THAT(r.out, HasSubstr("no dump armed"));
  EXPECT_THAT(r.err, Not(HasSubstr("GPU fault")));
}

TEST_F(ExplainFaultsTest, ADumpSetUpByTheUserIsLeftToTheUser) {
  RunResult r = RunDumping({"--explain-faults"}, Fixture("wild_write.cudacore"),
                           {{"CUDA_COREDUMP_FILE", tmp() + "/mine"}});
  EXPECT_EQ(r.exit_code, 1) << r.Describe();
  EXPECT_THAT(r.err, HasSubstr("CUDA_COREDUMP_FILE is already set"));
  EXPECT_THAT(r.out, Not(HasSubstr("no dump armed")));  // never started
}

}  // namespace
}  // namespace gmt_test
