// Runs a test program as a child process, optionally under the tool, and
// collects what it printed and the JSON report it wrote.
//
//   gmt_test::ScopedTempDir dir;
//   gmt_test::RunResult r = gmt_test::RunProgram(GMT_LEAK_PROGRAM, {"runtime"},
//                                                dir.path(), {});
//   ASSERT_TRUE(r.has_report) << r.Describe();
//   EXPECT_EQ(r.report["summary"]["leaks"], 3);
//
// The child gets LD_LIBRARY_PATH = the fake CUDA directory (nothing else), and
// with `preload` LD_PRELOAD = libgpumemtrace.so. Its stdout and stderr go to
// files in the run's directory. The paths come from compile definitions
// (GMT_TOOL_PATH, GMT_FAKE_CUDA_DIR), so tests do not depend on the working
// directory.
#ifndef GMT_TESTS_INTERPOSE_CHILD_PROCESS_H_
#define GMT_TESTS_INTERPOSE_CHILD_PROCESS_H_

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

namespace gmt_test {

// A fresh directory under $TMPDIR (or /tmp), removed on destruction unless
// the current test failed (its path is then printed, for post-mortems).
class ScopedTempDir {
 public:
  ScopedTempDir();
  ~ScopedTempDir();
  ScopedTempDir(const ScopedTempDir&) = delete;
  ScopedTempDir& operator=(const ScopedTempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

struct RunOptions {
  bool preload = true;
  // GMT_OPTIONS for the child. Unset (nullopt-like: `set_gmt_options` false)
  // leaves GMT_OPTIONS out of the environment. By default the tool is asked
  // for a JSON report at <dir>/r.%p.json.
  bool set_gmt_options = true;
  std::string gmt_options;  // empty: "report=json:report_path=<dir>/r.%p.json"
  std::vector<std::pair<std::string, std::string>> env;  // extra variables
  int timeout_s = 120;
};

// A run of the program alone: no preload, no GMT_OPTIONS.
inline RunOptions WithoutTheTool() {
  RunOptions options;
  options.preload = false;
  options.set_gmt_options = false;
  return options;
}

struct RunResult {
  int pid = -1;
  int exit_code = -1;  // the exit status, or 128 + signal
  bool timed_out = false;
  std::string out;  // the child's stdout
  std::string err;  // the child's stderr
  std::string report_path;
  bool has_report = false;
  nlohmann::json report;     // parsed from report_path when has_report
  std::string report_error;  // why there is no report

  // Exit code, both streams and the report problem, for failure messages.
  std::string Describe() const;
};

// The environment RunProgram gives a child: the inherited one without the
// tool's and the double's variables, then the double's library path, the
// preload, GMT_OPTIONS (<dir> replaced) and `options.env`.
std::vector<std::string> ChildEnvironment(const std::string& dir,
                                          const RunOptions& options);

// Runs `program args...` in `dir` (its working directory too) and waits.
RunResult RunProgram(const std::string& program,
                     const std::vector<std::string>& args,
                     const std::string& dir, const RunOptions& options);

// Reads a whole file; empty when missing.
std::string ReadFile(const std::string& path);

}  // namespace gmt_test

#endif  // GMT_TESTS_INTERPOSE_CHILD_PROCESS_H_
