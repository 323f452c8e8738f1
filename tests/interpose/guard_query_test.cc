// The user's view of a block (DESIGN §2, pitfall 5): address ranges, pointer
// attributes and IPC handles answer as CUDA does without the tool.
#include <string>

#include "tests/interpose/interpose_test_util.h"

namespace gmt_test {
namespace {

using GuardQueryTest = InterposeTest;

TEST_F(GuardQueryTest, DriverAnswersAsWithoutTheTool) {
  RunResult plain = RunPlain(GMT_GUARD_QUERY_PROGRAM, {"driver"});
  ASSERT_EQ(plain.exit_code, 0) << plain.Describe();
  RunResult tool = Run(GMT_GUARD_QUERY_PROGRAM, {"driver"});
  ASSERT_EQ(tool.exit_code, 0) << tool.Describe();
  ASSERT_TRUE(Contains(tool.out, "done")) << tool.Describe();
  EXPECT_EQ(tool.out, plain.out);
}

TEST_F(GuardQueryTest, RuntimeIpcAnswersAsWithoutTheTool) {
  RunResult plain = RunPlain(GMT_GUARD_QUERY_PROGRAM, {"runtime"});
  ASSERT_EQ(plain.exit_code, 0) << plain.Describe();
  RunResult tool = Run(GMT_GUARD_QUERY_PROGRAM, {"runtime"});
  ASSERT_EQ(tool.exit_code, 0) << tool.Describe();
  ASSERT_TRUE(Contains(tool.out, "done")) << tool.Describe();
  EXPECT_EQ(tool.out, plain.out);
}

// Attaching managed memory to a stream takes the allocation's start, with
// length 0 or its whole size; under the tool the program's pointer is past the
// front redzone, so CUDA once refused "start 0" with invalid-value.
TEST_F(GuardQueryTest, StreamAttachTakesTheWholeGuardedAllocation) {
  RunResult plain = RunPlain(GMT_GUARD_QUERY_PROGRAM, {"attach"});
  ASSERT_EQ(plain.exit_code, 0) << plain.Describe();
  ASSERT_TRUE(
      Contains(plain.out, "cudaStreamAttachMemAsync start 0 -> 0 cudaSuccess"))
      << plain.out;
  ASSERT_TRUE(Contains(plain.out,
                       "cudaStreamAttachMemAsync interior 0 -> 1 "
                       "cudaErrorInvalidValue"))
      << plain.out;
  RunResult tool = Run(GMT_GUARD_QUERY_PROGRAM, {"attach"});
  ASSERT_EQ(tool.exit_code, 0) << tool.Describe();
  EXPECT_EQ(tool.out, plain.out);
  ASSERT_TRUE(tool.has_report) << tool.Describe();
  EXPECT_EQ(tool.report["guard"].value("guarded", 0), 1)
      << tool.report["guard"].dump();
  EXPECT_EQ(tool.report["summary"].value("errors", -1), 0) << tool.Describe();
}

// Free memory as the program sees it does not count the tool's redzones or
// its quarantine: a 64 MiB block takes 64 MiB, and freeing it gives them back.
TEST_F(GuardQueryTest, FreeMemoryIsAsWithoutTheTool) {
  RunResult plain = RunPlain(GMT_GUARD_QUERY_PROGRAM, {"meminfo"});
  ASSERT_EQ(plain.exit_code, 0) << plain.Describe();
  ASSERT_TRUE(Contains(plain.out, "the block takes 64 MiB")) << plain.out;
  RunResult tool = Run(GMT_GUARD_QUERY_PROGRAM, {"meminfo"});
  ASSERT_EQ(tool.exit_code, 0) << tool.Describe();
  EXPECT_EQ(tool.out, plain.out);
  ASSERT_TRUE(tool.has_report) << tool.Describe();
  EXPECT_EQ(tool.report["guard"].value("guarded", 0), 1);
}

// A pool's used bytes count what the program asked for, not the redzones
// or the quarantine.
TEST_F(GuardQueryTest, PoolUsageIsAsWithoutTheTool) {
  RunResult plain = RunPlain(GMT_GUARD_QUERY_PROGRAM, {"pool"});
  ASSERT_EQ(plain.exit_code, 0) << plain.Describe();
  ASSERT_TRUE(Contains(plain.out, "used 301000 (driver 301000), high 301000"))
      << plain.out;
  // A block freed with cudaFree stays counted (CUDA's way, measured).
  ASSERT_TRUE(
      Contains(plain.out, "high -> 0 cudaSuccess\n  used 4096 (driver 4096)"))
      << plain.out;
  RunResult tool = Run(GMT_GUARD_QUERY_PROGRAM, {"pool"});
  ASSERT_EQ(tool.exit_code, 0) << tool.Describe();
  EXPECT_EQ(tool.out, plain.out);
  ASSERT_TRUE(tool.has_report) << tool.Describe();
  EXPECT_EQ(tool.report["guard"].value("guarded", 0), 3);
}

// The values themselves: the block the program allocated, nothing more.
TEST_F(GuardQueryTest, AddressRangeIsTheUsersBlock) {
  RunResult r = Run(GMT_GUARD_QUERY_PROGRAM, {"driver"});
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  EXPECT_TRUE(Contains(r.out,
                       "cuMemGetAddressRange interior -> 0 CUDA_SUCCESS\n"
                       "  base +0 size 1000\n"))
      << r.out;
  EXPECT_TRUE(Contains(r.out,
                       "cuMemGetAddressRange last -> 0 CUDA_SUCCESS\n"
                       "  base +0 size 1000\n"))
      << r.out;
  EXPECT_TRUE(Contains(r.out,
                       "cuMemGetAddressRange past -> 500 "
                       "CUDA_ERROR_NOT_FOUND\n"))
      << r.out;
  EXPECT_TRUE(Contains(r.out,
                       "cuMemGetAddressRange size only -> 0 "
                       "CUDA_SUCCESS\n  size 1000\n"))
      << r.out;
}

TEST_F(GuardQueryTest, RangeAttributesAreTheUsersBlock) {
  RunResult r = Run(GMT_GUARD_QUERY_PROGRAM, {"driver"});
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  EXPECT_TRUE(Contains(r.out,
                       "cuPointerGetAttribute interior RANGE_START_ADDR -> 0 "
                       "CUDA_SUCCESS\n  start +0\n"))
      << r.out;
  EXPECT_TRUE(Contains(r.out,
                       "cuPointerGetAttribute interior RANGE_SIZE -> 0 "
                       "CUDA_SUCCESS\n  size 1000\n"))
      << r.out;
  EXPECT_TRUE(Contains(r.out,
                       "cuPointerGetAttributes interior -> 0 CUDA_SUCCESS\n"
                       "  start +0 size 1000 type 2\n"))
      << r.out;
  // Past the last byte is no allocation to the program: no attribute at all.
  for (const char* attribute :
       {"RANGE_START_ADDR", "RANGE_SIZE", "DEVICE_POINTER", "MEMORY_TYPE"}) {
    EXPECT_TRUE(Contains(r.out, std::string("cuPointerGetAttribute past ") +
                                    attribute +
                                    " -> 1 CUDA_ERROR_INVALID_VALUE\n"))
        << attribute << "\n"
        << r.out;
  }
  EXPECT_TRUE(Contains(r.out,
                       "cuPointerGetAttributes past -> 0 CUDA_SUCCESS\n"
                       "  start +0 size 0 type 0\n"))
      << r.out;
}

// A handle maps the whole allocation: opened, the program sees its start.
TEST_F(GuardQueryTest, IpcMapsTheUsersBlock) {
  RunResult r = Run(GMT_GUARD_QUERY_PROGRAM, {"driver"});
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  EXPECT_TRUE(Contains(r.out,
                       "cuIpcGetMemHandle +16 -> 0 CUDA_SUCCESS\n"
                       "cuIpcOpenMemHandle -> 0 CUDA_SUCCESS\n"
                       "  mapped +0\n"
                       "cuMemGetAddressRange mapped -> 0 CUDA_SUCCESS\n"
                       "  base +0 size 1000\n"
                       "cuIpcCloseMemHandle -> 0 CUDA_SUCCESS\n"
                       "cuIpcCloseMemHandle again -> 1 "
                       "CUDA_ERROR_INVALID_VALUE\n"))
      << r.out;

  RunResult rt = Run(GMT_GUARD_QUERY_PROGRAM, {"runtime"});
  ASSERT_EQ(rt.exit_code, 0) << rt.Describe();
  EXPECT_TRUE(Contains(rt.out,
                       "cudaIpcOpenMemHandle -> 0 cudaSuccess\n"
                       "  mapped +0\n"
                       "cudaIpcCloseMemHandle -> 0 cudaSuccess\n"
                       "cudaIpcCloseMemHandle again -> 1 "
                       "cudaErrorInvalidValue\n"))
      << rt.out;
  // The block was freed: no leak, no error.
  ASSERT_TRUE(rt.has_report) << rt.Describe();
  EXPECT_EQ(rt.report["summary"].value("leaks", -1), 0) << rt.Describe();
  EXPECT_EQ(rt.report["summary"].value("errors", -1), 0) << rt.Describe();
}

}  // namespace
}  // namespace gmt_test
