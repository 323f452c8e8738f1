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

// Another thread is inside the tool (in one of its own CUDA calls, made under
// the guard lock) when the program forks. The child inherits that state but
// not the thread: its own CUDA calls must be answered as without the tool,
// never wait for a lock no thread will release (the child used to hang in
// its first cudaMalloc).
TEST_F(ProcessTest, ChildOfAForkDuringToolWorkIsNotBlocked) {
  const std::string hold = tmp() + "/hold";
  RunOptions options;
  options.env = {{"FAKE_CUDA_HOLD_FILL", hold}};
  options.timeout_s = 60;
  RunResult plain = RunPlain(GMT_FORK_PROGRAM, {"locked", hold + ".plain"});
  ASSERT_EQ(plain.exit_code, 0) << plain.Describe();
  ASSERT_NE(plain.out.find("child finished"), std::string::npos)
      << plain.Describe();
  RunResult with = Run(GMT_FORK_PROGRAM, {"locked", hold}, options);
  ASSERT_EQ(with.exit_code, 0) << with.Describe();
  // The fill really was held across the fork (else this proves nothing).
  EXPECT_TRUE(std::filesystem::exists(hold + ".held")) << with.Describe();
  EXPECT_EQ(with.out, plain.out);
}

}  // namespace
}  // namespace gmt_test
