// Suppressions through the shims: with the fake runtime, a
// suppressed error and a suppressed leak leave the JSON report's lists, are
// counted as suppressed, are not printed when found, and no longer trip
// exitcode; the rule each report suggests silences exactly its record.
#include <fstream>
#include <regex>

#include "tests/interpose/interpose_test_util.h"

namespace gmt_test {
namespace {

using SuppressionsTest = InterposeTest;

RunOptions WithOptions(const std::string& extra) {
  RunOptions o;
  o.gmt_options = "report=json:report_path=<dir>/r.%p.json" + extra;
  return o;
}

std::string WriteFile(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
  return path;
}

TEST_F(SuppressionsTest, SuggestedRuleSilencesTheErrorAndTheExitCode) {
  // First run: one double free, reported, failing the exit code.
  RunResult first =
      Run(GMT_ERROR_PROGRAM, {"double_free"}, WithOptions(":exitcode=23"));
  ASSERT_EQ(first.exit_code, 23) << first.Describe();
  ASSERT_TRUE(first.has_report) << first.Describe();
  std::vector<json> errors = ErrorsOfKind(first.report, "double-free");
  ASSERT_EQ(errors.size(), 1u) << first.Describe();
  const std::string rule = errors[0].value("suppression", "");
  EXPECT_EQ(rule, "double-free:fun:DoubleFreeSecond") << errors[0].dump(1);
  EXPECT_EQ(first.report["summary"].value("suppressed_errors", -1), 0);
  EXPECT_TRUE(first.report["suppressions"].empty());
  // Printed when found, with the rule.
  EXPECT_NE(first.err.find("to suppress: " + rule), std::string::npos)
      << first.err;

  // Second run with that rule: nothing reported, nothing printed, exit 0.
  std::string supp =
      WriteFile(tmp() + "/known.supp", "# known\n" + rule + "\n");
  RunResult second = Run(GMT_ERROR_PROGRAM, {"double_free"},
                         WithOptions(":exitcode=23:suppressions=" + supp));
  ASSERT_EQ(second.exit_code, 0) << second.Describe();
  ASSERT_TRUE(second.has_report) << second.Describe();
  EXPECT_TRUE(second.report["errors"].empty()) << second.report.dump(1);
  EXPECT_EQ(second.report["summary"].value("errors", -1), 0);
  EXPECT_EQ(second.report["summary"].value("suppressed_errors", -1), 1);
  ASSERT_EQ(second.report["suppressions"].size(), 1u);
  EXPECT_EQ(second.report["suppressions"][0].value("rule", ""), rule);
  EXPECT_EQ(second.report["suppressions"][0].value("file", ""), supp);
  EXPECT_EQ(second.report["suppressions"][0].value("line", 0), 2);
  EXPECT_EQ(second.report["suppressions"][0].value("hits", 0), 1);
  EXPECT_EQ(second.err.find("ERROR: double-free"), std::string::npos)
      << second.err;
  // The program still saw exactly what CUDA returned.
  EXPECT_NE(second.out.find("cudaFree#2 -> 1 cudaErrorInvalidValue"),
            std::string::npos)
      << second.out;
}

TEST_F(SuppressionsTest, SuppressedLeakLeavesTheReportAndTheExitCode) {
  RunResult first =
      Run(GMT_LEAK_PROGRAM, {"runtime"}, WithOptions(":exitcode=9"));
  ASSERT_EQ(first.exit_code, 9) << first.Describe();
  std::vector<json> leaks = LeaksWithApi(first.report, "cudaMalloc");
  ASSERT_EQ(leaks.size(), 1u) << first.Describe();
  EXPECT_EQ(leaks[0].value("suppression", ""),
            "leak:fun:LeakRuntimeAllocation");

  std::string supp =
      WriteFile(tmp() + "/leak.supp",
                "leak:fun:LeakRuntimeAllocation\noob-write:fun:unused\n");
  RunResult second = Run(GMT_LEAK_PROGRAM, {"runtime"},
                         WithOptions(":exitcode=9:suppressions=" + supp));
  ASSERT_EQ(second.exit_code, 0) << second.Describe();
  EXPECT_TRUE(second.report["leaks"].empty()) << second.report.dump(1);
  EXPECT_EQ(second.report["summary"].value("leaks", -1), 0);
  EXPECT_EQ(second.report["summary"].value("suppressed_leaks", -1), 3);
  ASSERT_EQ(second.report["suppressions"].size(), 2u);
  EXPECT_EQ(second.report["suppressions"][0].value("hits", 0), 1);
  EXPECT_EQ(second.report["suppressions"][1].value("hits", -1), 0);
}

TEST_F(SuppressionsTest, RuleForAnotherSiteKeepsTheLeak) {
  std::string supp = WriteFile(tmp() + "/other.supp",
                               "leak:fun:main\n"
                               "leak:mod:libother.so\n");
  // `main` is on the leak's stack too: a rule naming an outer frame works.
  RunResult r =
      Run(GMT_LEAK_PROGRAM, {"runtime"}, WithOptions(":suppressions=" + supp));
  ASSERT_TRUE(r.has_report) << r.Describe();
  EXPECT_EQ(r.report["summary"].value("leaks", -1), 0) << r.Describe();
  std::string supp2 =
      WriteFile(tmp() + "/other2.supp", "leak:mod:libother.so\n");
  RunResult r2 =
      Run(GMT_LEAK_PROGRAM, {"runtime"}, WithOptions(":suppressions=" + supp2));
  EXPECT_EQ(r2.report["summary"].value("leaks", -1), 3) << r2.Describe();
  EXPECT_EQ(r2.report["summary"].value("suppressed_leaks", -1), 0);
}

TEST_F(SuppressionsTest, BadFileIsAClearErrorAndNothingIsSuppressed) {
  std::string supp =
      WriteFile(tmp() + "/bad.supp", "leak:*\noob-read:kernel_x\n");
  RunResult r = Run(GMT_LEAK_PROGRAM, {"runtime"},
                    WithOptions(":exitcode=9:suppressions=" + supp));
  EXPECT_EQ(r.exit_code, 9) << r.Describe();
  ASSERT_TRUE(r.has_report) << r.Describe();
  EXPECT_EQ(r.report["summary"].value("leaks", -1), 3);
  EXPECT_NE(r.err.find(supp + ":2: unknown kind 'oob-read'"), std::string::npos)
      << r.err;
  bool noted = false;
  for (const json& note : r.report["notes"]) {
    noted = noted || note.get<std::string>().find("suppressions not applied") !=
                         std::string::npos;
  }
  EXPECT_TRUE(noted) << r.report["notes"].dump();
}

TEST_F(SuppressionsTest, RankInReportPath) {
  RunOptions o;
  o.gmt_options = "report=json:report_path=<dir>/r.%r.%p.json";
  o.env = {{"OMPI_COMM_WORLD_RANK", "3"}};
  RunResult r = Run(GMT_LEAK_PROGRAM, {"runtime"}, o);
  // The fixture looks for r.<pid>.json; this one is named by rank too.
  EXPECT_FALSE(r.has_report);
  const std::string path =
      tmp() + "/run1/r.3." + std::to_string(r.pid) + ".json";
  std::ifstream in(path);
  ASSERT_TRUE(in.good()) << "no report at " << path << "\n" << r.Describe();
  json report = json::parse(in);
  EXPECT_EQ(report["summary"].value("leaks", -1), 3);
}

}  // namespace
}  // namespace gmt_test
