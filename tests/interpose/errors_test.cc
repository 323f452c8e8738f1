// Wrong frees: reported with the right kind and stacks, and the program still
// gets exactly what CUDA returned.
#include <regex>

#include "tests/interpose/interpose_test_util.h"

namespace gmt_test {
namespace {

using ErrorsTest = InterposeTest;

TEST_F(ErrorsTest, DoubleFreeHasAllThreeStacks) {
  RunResult r = Run(GMT_ERROR_PROGRAM, {"double_free"});
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  EXPECT_TRUE(Contains(r.out, "cudaFree#1 -> 0 cudaSuccess")) << r.out;
  EXPECT_TRUE(Contains(r.out, "cudaFree#2 -> 1 cudaErrorInvalidValue"))
      << r.out;
  ASSERT_TRUE(r.has_report) << r.Describe();

  std::vector<json> errors = ErrorsOfKind(r.report, "double-free");
  ASSERT_EQ(errors.size(), 1u) << r.Describe();
  const json& e = errors[0];
  EXPECT_EQ(e.value("api", ""), "cudaFree");
  EXPECT_EQ(e.value("cuda_result", -1), 1);
  EXPECT_EQ(e.value("cuda_error", ""), "cudaErrorInvalidValue");
  EXPECT_TRUE(StackHas(e["stack"], "DoubleFreeSecond"))
      << "second free: " << StackFunctions(e["stack"]);
  ASSERT_TRUE(e.contains("allocation")) << e.dump(1);
  EXPECT_EQ(e["allocation"].value("api", ""), "cudaMalloc");
  EXPECT_EQ(e["allocation"].value("bytes", uint64_t{0}), 3000u);
  EXPECT_TRUE(StackHas(e["allocation"]["stack"], "DoubleFreeAllocate"))
      << "allocation: " << StackFunctions(e["allocation"]["stack"]);
  ASSERT_TRUE(e.contains("first_free")) << e.dump(1);
  EXPECT_EQ(e["first_free"].value("api", ""), "cudaFree");
  EXPECT_TRUE(StackHas(e["first_free"]["stack"], "DoubleFreeFirst"))
      << "first free: " << StackFunctions(e["first_free"]["stack"]);

  EXPECT_EQ(r.report["summary"].value("errors", -1), 1) << r.Describe();
  EXPECT_EQ(r.report["summary"].value("leaks", -1), 0) << r.Describe();
  // print_errors (default on): the error is printed when found.
  EXPECT_TRUE(std::regex_search(r.err, std::regex("==" + std::to_string(r.pid) +
                                                  "== ERROR: double-free")))
      << r.err;
}

TEST_F(ErrorsTest, DriverDoubleFree) {
  RunResult r = Run(GMT_ERROR_PROGRAM, {"driver_double_free"});
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  EXPECT_TRUE(Contains(r.out, "cuMemFree#2 -> 1 CUDA_ERROR_INVALID_VALUE"))
      << r.out;
  ASSERT_TRUE(r.has_report) << r.Describe();
  std::vector<json> errors = ErrorsOfKind(r.report, "double-free");
  ASSERT_EQ(errors.size(), 1u) << r.Describe();
  EXPECT_EQ(errors[0].value("api", ""), "cuMemFree");
  EXPECT_EQ(errors[0].value("cuda_error", ""), "CUDA_ERROR_INVALID_VALUE");
  EXPECT_EQ(errors[0]["allocation"].value("bytes", uint64_t{0}), 2500u);
  EXPECT_TRUE(
      StackHas(errors[0]["allocation"]["stack"], "DriverDoubleFreeAllocate"))
      << StackFunctions(errors[0]["allocation"]["stack"]);
}

TEST_F(ErrorsTest, InteriorPointerIsInvalidFreeWithOffset) {
  RunResult r = Run(GMT_ERROR_PROGRAM, {"interior_free"});
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  EXPECT_TRUE(Contains(r.out, "cudaFree(p+16) -> 1 cudaErrorInvalidValue"))
      << r.out;
  EXPECT_TRUE(Contains(r.out, "cudaFree(p) -> 0 cudaSuccess")) << r.out;
  ASSERT_TRUE(r.has_report) << r.Describe();
  std::vector<json> errors = ErrorsOfKind(r.report, "invalid-free");
  ASSERT_EQ(errors.size(), 1u) << r.Describe();
  const json& e = errors[0];
  EXPECT_GT(e.value("offset", int64_t{0}), 0) << e.dump(1);
  EXPECT_EQ(e.value("offset", int64_t{0}), 16) << e.dump(1);
  EXPECT_TRUE(StackHas(e["stack"], "InteriorFree"))
      << StackFunctions(e["stack"]);
  // The block itself was then freed properly.
  EXPECT_EQ(r.report["summary"].value("leaks", -1), 0) << r.Describe();
  EXPECT_EQ(r.report["summary"].value("errors", -1), 1) << r.Describe();
}

TEST_F(ErrorsTest, HostPointerIsInvalidFree) {
  RunResult r = Run(GMT_ERROR_PROGRAM, {"host_free"});
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  EXPECT_TRUE(Contains(r.out, "cudaFree(malloc) -> 1 cudaErrorInvalidValue"))
      << r.out;
  ASSERT_TRUE(r.has_report) << r.Describe();
  std::vector<json> errors = ErrorsOfKind(r.report, "invalid-free");
  ASSERT_EQ(errors.size(), 1u) << r.Describe();
  EXPECT_EQ(errors[0].value("api", ""), "cudaFree");
  EXPECT_TRUE(StackHas(errors[0]["stack"], "HostFree"))
      << StackFunctions(errors[0]["stack"]);
  EXPECT_EQ(r.report["summary"].value("errors", -1), 1) << r.Describe();
}

TEST_F(ErrorsTest, FreeHostOnDeviceMemoryIsApiMismatch) {
  RunResult r = Run(GMT_ERROR_PROGRAM, {"mismatch"});
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  // The return code is CUDA's, unchanged; the block stays usable.
  EXPECT_TRUE(
      Contains(r.out, "cudaFreeHost(device) -> 1 cudaErrorInvalidValue"))
      << r.out;
  EXPECT_TRUE(Contains(r.out, "cudaFree -> 0 cudaSuccess")) << r.out;
  ASSERT_TRUE(r.has_report) << r.Describe();
  std::vector<json> errors = ErrorsOfKind(r.report, "api-mismatch");
  ASSERT_EQ(errors.size(), 1u) << r.Describe();
  EXPECT_EQ(errors[0].value("api", ""), "cudaFreeHost");
  ASSERT_TRUE(errors[0].contains("allocation")) << errors[0].dump(1);
  EXPECT_EQ(errors[0]["allocation"].value("api", ""), "cudaMalloc");
  EXPECT_EQ(errors[0]["allocation"].value("bytes", uint64_t{0}), 512u);
  EXPECT_EQ(r.report["summary"].value("errors", -1), 1) << r.Describe();
  EXPECT_EQ(r.report["summary"].value("leaks", -1), 0) << r.Describe();
}

}  // namespace
}  // namespace gmt_test
