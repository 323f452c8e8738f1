// Leaks through each allocation API family, found through LD_PRELOAD: right
// api, kind, bytes, count, device, and a stack through the allocating function.
#include <string>

#include "tests/interpose/interpose_test_util.h"

namespace gmt_test {
namespace {

struct LeakCase {
  const char* mode;      // gmt_leak_program argument
  const char* api;       // expected leaks[].api
  const char* kind;      // expected leaks[].kind
  uint64_t bytes;        // total bytes of the call site
  uint64_t count;        // blocks of the call site
  int device;            // expected leaks[].device
  const char* function;  // a frame that must be on the allocation stack
};

void PrintTo(const LeakCase& c, std::ostream* os) { *os << c.mode; }

class LeakPerApiTest : public InterposeTest,
                       public testing::WithParamInterface<LeakCase> {};

TEST_P(LeakPerApiTest, ReportsTheLeakWithItsCallSite) {
  const LeakCase& c = GetParam();
  RunResult r = Run(GMT_LEAK_PROGRAM, {c.mode});
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  ASSERT_TRUE(r.has_report) << r.Describe();

  std::vector<json> leaks = LeaksWithApi(r.report, c.api);
  ASSERT_EQ(leaks.size(), 1u) << "one call site expected for " << c.api << "\n"
                              << r.Describe();
  const json& leak = leaks[0];
  EXPECT_EQ(leak.value("kind", ""), c.kind);
  EXPECT_EQ(leak.value("bytes", uint64_t{0}), c.bytes);
  EXPECT_EQ(leak.value("count", uint64_t{0}), c.count);
  EXPECT_EQ(leak.value("device", -99), c.device);
  EXPECT_TRUE(StackHas(leak["stack"], c.function))
      << "stack: " << StackFunctions(leak["stack"]);
  EXPECT_FALSE(leak.contains("released_by")) << leak.dump();

  // The cudaMalloc(999) every mode frees is not a leak.
  for (const json& l : r.report["leaks"]) {
    EXPECT_NE(l.value("bytes", uint64_t{0}), 999u) << l.dump();
  }
  EXPECT_EQ(r.report["summary"].value("errors", -1), 0) << r.Describe();
}

INSTANTIATE_TEST_SUITE_P(
    AllFamilies, LeakPerApiTest,
    testing::Values(LeakCase{"runtime", "cudaMalloc", "device", 12000, 3, 1,
                             "LeakRuntimeAllocation"},
                    LeakCase{"driver", "cuMemAlloc", "device", 10000, 2, 0,
                             "LeakDriverAllocation"},
                    LeakCase{"async", "cudaMallocAsync", "device", 6000, 1, 0,
                             "LeakAsyncAllocation"},
                    LeakCase{"pinned", "cudaMallocHost", "pinned-host", 7000, 1,
                             -1, "LeakPinnedAllocation"},
                    LeakCase{"managed", "cudaMallocManaged", "managed", 8000, 1,
                             0, "LeakManagedAllocation"},
                    LeakCase{"vmm", "cuMemCreate", "vmm-physical", 2u << 20, 1,
                             0, "LeakVmmAllocation"}),
    [](const testing::TestParamInfo<LeakCase>& info) {
      return std::string(info.param.mode);
    });

using PerThreadStreamTest = InterposeTest;

// Built with CUDA_API_PER_THREAD_DEFAULT_STREAM (nvcc --default-stream
// per-thread): the program calls cudaMallocAsync_ptsz and cuMemAlloc_v2 as
// before; the report uses the plain names.
TEST_F(PerThreadStreamTest, PtszRuntimeVariantIsTracked) {
  RunResult r = Run(GMT_LEAK_PTDS_PROGRAM, {"async"});
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  ASSERT_TRUE(r.has_report) << r.Describe();
  std::vector<json> leaks = LeaksWithApi(r.report, "cudaMallocAsync");
  ASSERT_EQ(leaks.size(), 1u) << r.Describe();
  EXPECT_EQ(leaks[0].value("bytes", uint64_t{0}), 6000u);
  EXPECT_TRUE(StackHas(leaks[0]["stack"], "LeakAsyncAllocation"))
      << StackFunctions(leaks[0]["stack"]);
}

TEST_F(PerThreadStreamTest, DriverProgramIsTracked) {
  RunResult r = Run(GMT_LEAK_PTDS_PROGRAM, {"driver"});
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  ASSERT_TRUE(r.has_report) << r.Describe();
  EXPECT_EQ(TotalBytes(LeaksWithApi(r.report, "cuMemAlloc")), 10000u)
      << r.Describe();
}

using VmmLeakTest = InterposeTest;

// Released but still mapped: the physical memory is still there at exit.
TEST_F(VmmLeakTest, ReleasedButStillMappedIsALeak) {
  RunResult r = Run(GMT_LEAK_PROGRAM, {"vmm_released_mapped"});
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  ASSERT_TRUE(r.has_report) << r.Describe();
  std::vector<json> leaks = LeaksWithApi(r.report, "cuMemCreate");
  ASSERT_EQ(leaks.size(), 1u) << r.Describe();
  EXPECT_EQ(leaks[0].value("bytes", uint64_t{0}), uint64_t{4} << 20);
  EXPECT_TRUE(StackHas(leaks[0]["stack"], "LeakVmmReleasedButMapped"))
      << StackFunctions(leaks[0]["stack"]);
}

// Unmapped, released and the range freed: nothing left.
TEST_F(VmmLeakTest, UnmappedAndReleasedIsNotALeak) {
  RunResult r = Run(GMT_LEAK_PROGRAM, {"vmm_clean"});
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  ASSERT_TRUE(r.has_report) << r.Describe();
  EXPECT_EQ(r.report["summary"].value("leaks", -1), 0) << r.Describe();
  EXPECT_EQ(r.report["summary"].value("errors", -1), 0) << r.Describe();
  EXPECT_TRUE(r.report["leaks"].empty()) << r.Describe();
}

}  // namespace
}  // namespace gmt_test
