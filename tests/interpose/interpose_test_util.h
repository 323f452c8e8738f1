// Helpers shared by the interposition tests: a fixture that runs test
// programs in a per-test temporary directory, and readers for the JSON report
// (DESIGN.md §5).
#ifndef GMT_TESTS_INTERPOSE_INTERPOSE_TEST_UTIL_H_
#define GMT_TESTS_INTERPOSE_INTERPOSE_TEST_UTIL_H_

#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "gtest/gtest.h"
#include "tests/interpose/child_process.h"

namespace gmt_test {

using nlohmann::json;

// Each Run() gets its own subdirectory of the test's temporary directory.
class InterposeTest : public testing::Test {
 protected:
  RunResult Run(const std::string& program,
                const std::vector<std::string>& args = {},
                const RunOptions& options = {}) {
    std::string dir = tmp_.path() + "/run" + std::to_string(++runs_);
    std::filesystem::create_directories(dir);
    return RunProgram(program, args, dir, options);
  }
  // Without the tool (no LD_PRELOAD, no GMT_OPTIONS).
  RunResult RunPlain(const std::string& program,
                     const std::vector<std::string>& args = {}) {
    RunOptions options;
    options.preload = false;
    options.set_gmt_options = false;
    return Run(program, args, options);
  }
  const std::string& tmp() const { return tmp_.path(); }

  // Runs `program args` without the tool, then with it: both exit 0, the
  // tool's run gets to the program's last line ("done"), and the program
  // prints the same in both.
  void ExpectSameOutputAsWithout(const std::string& program,
                                 const std::vector<std::string>& args) {
    RunResult plain = RunPlain(program, args);
    ASSERT_EQ(plain.exit_code, 0) << plain.Describe();
    RunResult tool = Run(program, args);
    ASSERT_EQ(tool.exit_code, 0) << tool.Describe();
    ASSERT_NE(tool.out.find("done"), std::string::npos) << tool.Describe();
    EXPECT_EQ(tool.out, plain.out);
  }

 private:
  ScopedTempDir tmp_;
  int runs_ = 0;
};

inline bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

inline std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// What a range program (guard_copy_program, guard_range_program) printed:
// its in-bounds calls ("<call> in -> CODE", "<call> end -> CODE") and its
// calls one byte past ("<call> past -> CODE"). Each in-bounds call must have
// succeeded (0) and each past one been refused with invalid value (1, in the
// runtime and the driver alike): a line that did not fails the test.
struct RangeCalls {
  int in = 0;
  int past = 0;
};
inline RangeCalls CheckRangeCalls(const std::string& out) {
  RangeCalls calls;
  for (const std::string& line : Lines(out)) {
    if (Contains(line, " in -> ") || Contains(line, " end -> ")) {
      ++calls.in;
      EXPECT_TRUE(Contains(line, " -> 0 ")) << line;
    } else if (Contains(line, " past -> ")) {
      ++calls.past;
      EXPECT_TRUE(Contains(line, " -> 1 ")) << line;
    }
  }
  return calls;
}

// The entries of report["leaks"] whose "api" is `api`.
inline std::vector<json> LeaksWithApi(const json& report,
                                      std::string_view api) {
  std::vector<json> out;
  if (!report.contains("leaks")) return out;
  for (const json& leak : report["leaks"]) {
    if (leak.value("api", "") == api) out.push_back(leak);
  }
  return out;
}

// The entries of report["errors"] whose "kind" is `kind`.
inline std::vector<json> ErrorsOfKind(const json& report,
                                      std::string_view kind) {
  std::vector<json> out;
  if (!report.contains("errors")) return out;
  for (const json& error : report["errors"]) {
    if (error.value("kind", "") == kind) out.push_back(error);
  }
  return out;
}

// Whether some frame's "function" contains `function`.
inline bool StackHas(const json& stack, std::string_view function) {
  if (!stack.is_array()) return false;
  for (const json& frame : stack) {
    if (frame.value("function", "").find(function) != std::string::npos) {
      return true;
    }
  }
  return false;
}

// "f1 | f2 | ..." for failure messages.
inline std::string StackFunctions(const json& stack) {
  std::string out;
  if (!stack.is_array()) return "(no stack)";
  for (const json& frame : stack) {
    if (!out.empty()) out += " | ";
    out += frame.value("function", "?");
  }
  return out.empty() ? "(empty stack)" : out;
}

// Sum of "count" / "bytes" over leak entries.
inline uint64_t TotalCount(const std::vector<json>& leaks) {
  uint64_t n = 0;
  for (const json& l : leaks) n += l.value("count", uint64_t{0});
  return n;
}
inline uint64_t TotalBytes(const std::vector<json>& leaks) {
  uint64_t n = 0;
  for (const json& l : leaks) n += l.value("bytes", uint64_t{0});
  return n;
}

// Lines of `text` that start with the tool's "==<pid>== " prefix.
inline std::vector<std::string> ToolLines(const std::string& text, int pid) {
  std::vector<std::string> out;
  std::string prefix = "==" + std::to_string(pid) + "== ";
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(start, end - start);
    if (line.rfind(prefix, 0) == 0) out.push_back(line.substr(prefix.size()));
    start = end + 1;
  }
  return out;
}

}  // namespace gmt_test

#endif  // GMT_TESTS_INTERPOSE_INTERPOSE_TEST_UTIL_H_
