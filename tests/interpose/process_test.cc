// Process life: a fork()ed child's exit writes no report; the parent's report
// is its own.
#include <filesystem>

#include "tests/interpose/interpose_test_util.h"

namespace gmt_test {
namespace {

class ProcessTest : public InterposeTest {};

TEST_F(ProcessTest, ForkedChildWritesNoReport) {
  RunResult r = Run(GMT_FORK_PROGRAM);
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  ASSERT_TRUE(r.has_report) << r.Describe();
  EXPECT_NE(r.out.find("child-exit 0"), std::string::npos) << r.Describe();
  EXPECT_EQ(r.report.value("pid", -1), r.pid);
  EXPECT_EQ(r.report["summary"].value("leaks", -1), 1) << r.Describe();
  // Only the parent's JSON file exists in the run directory.
  int reports = 0;
  for (const auto& entry : std::filesystem::directory_iterator(
           std::filesystem::path(r.report_path).parent_path())) {
    if (entry.path().extension() == ".json") ++reports;
  }
  EXPECT_EQ(reports, 1) << r.Describe();
}

}  // namespace
}  // namespace gmt_test
