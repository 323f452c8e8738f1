// Programs built with ASan or TSan run under the tool (they used to
// crash at start: the sanitizer runtime's dlsym(RTLD_NEXT, ...) from _dl_init
// reached the tool's dlsym, whose lookup through a start-up link map crashed
// in glibc; and multi-threaded TSan programs crashed at every thread exit in
// libunwind's TSD destructor, which the tool had loaded). Built only where the
// compiler has the sanitizer runtimes and the build itself is not instrumented
// (tests/reliability/CMakeLists.txt).
#include "tests/reliability/reliability_util.h"

namespace gmt_test {
namespace {

class SanitizedProgramTest : public InterposeTest,
                             public testing::WithParamInterface<const char*> {};

TEST_P(SanitizedProgramTest, RunsUnderTheToolAndItsLeakIsReported) {
  const std::string program = GetParam();
  if (program.empty()) GTEST_SKIP() << "no sanitizer-built program here";
  RunOptions plain_options;
  plain_options.preload = false;
  plain_options.set_gmt_options = false;
  plain_options.env = {
      {"ASAN_OPTIONS", "detect_leaks=0"},
      {"TSAN_OPTIONS", std::string("suppressions=") + GMT_TSAN_SUPPRESSIONS}};
  RunResult plain = Run(program, {}, plain_options);
  ASSERT_EQ(plain.exit_code, 0) << plain.Describe();
  RunOptions options;
  // The tool comes before the ASan runtime in the load order: ASan must be
  // told that is fine (or the runtime preloaded first by hand).
  options.env = {
      {"ASAN_OPTIONS", "verify_asan_link_order=0:detect_leaks=0"},
      {"TSAN_OPTIONS", std::string("suppressions=") + GMT_TSAN_SUPPRESSIONS}};
  RunResult r = Run(program, {}, options);
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  EXPECT_EQ(r.out, plain.out);
  ASSERT_TRUE(r.has_report) << r.Describe();
  std::vector<json> leaks = LeaksWithApi(r.report, "cudaMalloc");
  ASSERT_EQ(leaks.size(), 1u) << r.Describe();
  EXPECT_EQ(leaks[0].value("bytes", 0), 5555);
  EXPECT_TRUE(StackHas(leaks[0]["stack"], "SanitizedLeak"))
      << StackFunctions(leaks[0]["stack"]);
}

INSTANTIATE_TEST_SUITE_P(Sanitizers, SanitizedProgramTest,
                         testing::Values(GMT_ASAN_PROGRAM, GMT_TSAN_PROGRAM),
                         [](const testing::TestParamInfo<const char*>& info) {
                           return info.index == 0 ? std::string("asan")
                                                  : std::string("tsan");
                         });

}  // namespace
}  // namespace gmt_test
