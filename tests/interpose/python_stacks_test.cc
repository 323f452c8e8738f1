// Python frames in allocation stacks: a Python program (python_alloc.py)
// allocates through the test double with ctypes while holding the GIL; the
// leak's stack carries the native frames up to the interpreter, then the
// script's functions with their lines, innermost first.
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "tests/interpose/interpose_test_util.h"

namespace gmt_test {
namespace {

// The frames of `stack` whose module is "python": "function file:line".
std::vector<std::string> PythonFrames(const json& stack) {
  std::vector<std::string> out;
  for (const json& f : stack) {
    if (f.value("module", "") != "python") continue;
    std::string file = f.value("file", "");
    const size_t slash = file.rfind('/');
    if (slash != std::string::npos) file = file.substr(slash + 1);
    out.push_back(f.value("function", "") + " " + file + ":" +
                  std::to_string(f.value("line", 0)));
  }
  return out;
}

// The interpreter: GMT_TEST_PYTHON3 when set (CTest runs the tests once per
// CPython version it finds), else the one CMake found.
std::string Python3() {
  const char* chosen = std::getenv("GMT_TEST_PYTHON3");
  return chosen != nullptr && chosen[0] != '\0' ? chosen : GMT_PYTHON3;
}

// A method's name as the report gives it: CPython 3.10's code objects have
// no qualified name, so the class is not in it there.
std::string Method(const std::string& qualified) {
  const char* minor = std::getenv("GMT_TEST_PYTHON_MINOR");
  if (minor == nullptr || std::string(minor) != "10") return qualified;
  return qualified.substr(qualified.rfind('.') + 1);
}

class PythonStacksTest : public InterposeTest {
 protected:
  void SetUp() override {
    if (Python3().empty() || access(Python3().c_str(), X_OK) != 0) {
      GTEST_SKIP() << "no python3";
    }
  }
  RunResult RunScript(const std::string& mode,
                      const std::string& extra_options = "") {
    RunOptions options;
    if (!extra_options.empty()) {
      options.gmt_options =
          "report=json:report_path=<dir>/r.%p.json:" + extra_options;
    }
    return Run(Python3(), {GMT_PYTHON_ALLOC_SCRIPT, mode}, options);
  }
};

// The one leak's stack in `r`'s report: the native frames first (ctypes'
// call), then the script's four lines, innermost first.
void ExpectTheScriptsLines(const RunResult& r) {
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  ASSERT_TRUE(r.has_report) << r.Describe();
  std::vector<json> leaks = LeaksWithApi(r.report, "cudaMalloc");
  ASSERT_EQ(leaks.size(), 1u) << r.Describe();
  const json& stack = leaks[0]["stack"];
  const std::vector<std::string> python = PythonFrames(stack);
  ASSERT_GE(python.size(), 4u) << StackFunctions(stack);
  EXPECT_EQ(python[0], "allocate_block python_alloc.py:29");
  EXPECT_EQ(python[1], Method("Model.build") + " python_alloc.py:37");
  EXPECT_EQ(python[2], "main python_alloc.py:49");
  EXPECT_EQ(python[3], "<module> python_alloc.py:131");
  ASSERT_FALSE(stack.empty());
  EXPECT_NE(stack[0].value("module", ""), "python");
}

TEST_F(PythonStacksTest, LeakStackNamesTheScriptsLinesAfterTheNativeFrames) {
  RunResult r = RunScript("leak");
  ExpectTheScriptsLines(r);
  if (HasFatalFailure()) return;
  // A copy: LeaksWithApi returns its leaks by value.
  const json stack = LeaksWithApi(r.report, "cudaMalloc")[0]["stack"];
  // None of the interpreter's own loop: the Python frames stand for it.
  EXPECT_FALSE(StackHas(stack, "_PyEval_EvalFrameDefault"))
      << StackFunctions(stack);
}

TEST_F(PythonStacksTest, AnExceptionBeingHandledIsLeftAlone) {
  RunResult r = RunScript("raised");
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  EXPECT_TRUE(Contains(r.out, "exception kept: KeyError('pending')"))
      << r.Describe();
  ASSERT_TRUE(r.has_report) << r.Describe();
  std::vector<json> leaks = LeaksWithApi(r.report, "cudaMalloc");
  ASSERT_EQ(leaks.size(), 1u) << r.Describe();
  const std::vector<std::string> python = PythonFrames(leaks[0]["stack"]);
  ASSERT_GE(python.size(), 3u) << StackFunctions(leaks[0]["stack"]);
  EXPECT_EQ(python[2], "main python_alloc.py:45");
}

// PyTorch's operators release the GIL before they allocate: the frames are
// then read from the interpreter's structures, not through its API, and name
// the same lines.
TEST_F(PythonStacksTest, AThreadThatReleasedTheGilGetsTheSameFrames) {
  ExpectTheScriptsLines(RunScript("released"));
}

// Frames read without the GIL are cached per thread by code object and
// instruction: functions of one shape made and dropped in turn (their code
// and name objects may take a dropped one's address) must each be named, at
// each of their two lines.
TEST_F(PythonStacksTest, FunctionsMadeAndDroppedInTurnAreEachNamed) {
  RunResult r = RunScript("redefined");
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  ASSERT_TRUE(r.has_report) << r.Describe();
  std::vector<std::string> seen;
  for (const json& leak : LeaksWithApi(r.report, "cudaMalloc")) {
    const std::vector<std::string> python = PythonFrames(leak["stack"]);
    ASSERT_GE(python.size(), 2u) << StackFunctions(leak["stack"]);
    EXPECT_EQ(python[0], "allocate_block python_alloc.py:29");
    const uint64_t bytes = leak.value("bytes", uint64_t{0});
    seen.push_back(python[1] + (bytes == 4096 ? " a" : " b"));
  }
  std::sort(seen.begin(), seen.end());
  std::vector<std::string> expected;
  for (const char* name :
       {"fifth", "first", "fourth", "second", "sixth", "third"}) {
    expected.push_back(std::string(name) + " python_alloc.py:53 a");
    expected.push_back(std::string(name) + " python_alloc.py:54 b");
  }
  EXPECT_EQ(seen, expected);
}

// The text of the report's cuda-error (the report at the sticky error).
std::string CudaErrorDetail(const RunResult& r) {
  std::string detail;
  for (const json& e : r.report["errors"]) {
    if (e.value("kind", "") == "cuda-error") detail = e.value("detail", "");
  }
  return detail;
}

// The report at a sticky CUDA error names the script's line that launched
// the faulting kernel next to the native one: a Triton kernel or a PyTorch
// operator is launched from C, below the script that asked for it.
void ExpectLaunchFromThePythonLine(const RunResult& r) {
  ASSERT_TRUE(r.has_report) << r.Describe();
  const std::string detail = CudaErrorDetail(r);
  EXPECT_TRUE(Contains(detail, "The newest launch: fake_fault_illegal_address"))
      << detail;
  EXPECT_TRUE(Contains(detail, ", from Python at launch_faulting_kernel ("))
      << detail;
  EXPECT_TRUE(Contains(detail, "python_alloc.py:87)")) << detail;
}

TEST_F(PythonStacksTest, StickyErrorNamesTheLaunchingScriptLine) {
  ExpectLaunchFromThePythonLine(RunScript("fault"));
}

TEST_F(PythonStacksTest, StickyErrorNamesTheLaunchingScriptLineWithTheGil) {
  ExpectLaunchFromThePythonLine(RunScript("fault_gil"));
}

// Launched by an installed package's function: the script's line below it
// is named, not the library's.
TEST_F(PythonStacksTest, StickyErrorNamesTheScriptLineBelowALibrary) {
  RunResult r = RunScript("fault_lib");
  ASSERT_TRUE(r.has_report) << r.Describe();
  const std::string detail = CudaErrorDetail(r);
  EXPECT_TRUE(Contains(detail, ", from Python at launch_through_a_library ("))
      << detail;
  EXPECT_TRUE(Contains(detail, "python_alloc.py:117)")) << detail;
  EXPECT_FALSE(Contains(detail, "fakelib.py")) << detail;
}

TEST_F(PythonStacksTest, OffByOptionGivesTheNativeStackOnly) {
  RunResult r = RunScript("leak", "python_stacks=0");
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  ASSERT_TRUE(r.has_report) << r.Describe();
  std::vector<json> leaks = LeaksWithApi(r.report, "cudaMalloc");
  ASSERT_EQ(leaks.size(), 1u) << r.Describe();
  EXPECT_TRUE(PythonFrames(leaks[0]["stack"]).empty())
      << StackFunctions(leaks[0]["stack"]);
}

}  // namespace
}  // namespace gmt_test
