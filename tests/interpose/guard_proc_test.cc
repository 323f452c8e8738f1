// cuGetProcAddress hands out the tool's shim for every driver entry point the
// guard zones need, for exactly the variant the driver would give (version,
// _ptds / _ptsz by flag; DESIGN §2, pitfall 1), and the runtime entry points
// resolve to the tool.
#include <sstream>
#include <string>
#include <vector>

#include "tests/interpose/interpose_test_util.h"

namespace gmt_test {
namespace {

using GuardProcTest = InterposeTest;

std::vector<std::string> LinesWith(const std::string& text,
                                   const std::string& part) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.find(part) != std::string::npos) lines.push_back(line);
  }
  return lines;
}

// The lookup lines ("<base> <version> default|per-thread -> ...").
std::vector<std::string> Lookups(const std::string& text) {
  std::vector<std::string> lines = LinesWith(text, " default -> ");
  for (const std::string& line : LinesWith(text, " per-thread -> ")) {
    lines.push_back(line);
  }
  return lines;
}

TEST_F(GuardProcTest, EveryVariantResolvesToItsShim) {
  RunResult r = Run(GMT_GUARD_PROC_PROGRAM);
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  std::vector<std::string> lookups = Lookups(r.out);
  EXPECT_GE(lookups.size(), 70u) << r.out;
  for (const std::string& line : lookups) {
    EXPECT_NE(line.find(" match in libgpumemtrace.so"), std::string::npos)
        << line;
    EXPECT_NE(line.find("(result 0 status 0)"), std::string::npos) << line;
  }
}

// The same lookups without the tool: the double itself gives each variant,
// so the table the test checks is the driver's, not ours.
TEST_F(GuardProcTest, WithoutTheToolTheDriverGivesTheSameVariants) {
  RunResult r = RunPlain(GMT_GUARD_PROC_PROGRAM);
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  std::vector<std::string> lookups = Lookups(r.out);
  EXPECT_GE(lookups.size(), 70u) << r.out;
  for (const std::string& line : lookups) {
    EXPECT_NE(line.find(" match in libcuda.so.1"), std::string::npos) << line;
  }
}

TEST_F(GuardProcTest, RuntimeEntryPointsAreTheTools) {
  RunResult r = Run(GMT_GUARD_PROC_PROGRAM);
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  std::vector<std::string> symbols = LinesWith(r.out, "runtime ");
  EXPECT_GE(symbols.size(), 40u) << r.out;
  for (const std::string& line : symbols) {
    EXPECT_NE(line.find(" in libgpumemtrace.so"), std::string::npos) << line;
  }
}

}  // namespace
}  // namespace gmt_test
