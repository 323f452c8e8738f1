// Allocations through driver entry points obtained with cuGetProcAddress (v1
// and v2, default and per-thread flags) and cudaGetDriverEntryPointByVersion
// are all tracked, under the driver API's name.
#include "tests/interpose/interpose_test_util.h"

namespace gmt_test {
namespace {

class ProcAddressTest : public InterposeTest {
 protected:
  void SetUp() override {
    r_ = Run(GMT_PROC_PROGRAM);
    ASSERT_EQ(r_.exit_code, 0) << r_.Describe();
    ASSERT_TRUE(r_.has_report) << r_.Describe();
  }

  // The leak entry of `api` whose stack passes through `function`.
  void ExpectLeak(const char* api, uint64_t bytes, const char* function) {
    for (const json& leak : LeaksWithApi(r_.report, api)) {
      if (StackHas(leak["stack"], function)) {
        EXPECT_EQ(leak.value("bytes", uint64_t{0}), bytes) << leak.dump(1);
        EXPECT_EQ(leak.value("count", uint64_t{0}), 1u) << leak.dump(1);
        EXPECT_EQ(leak.value("device", -99), 0) << leak.dump(1);
        return;
      }
    }
    ADD_FAILURE() << "no " << api << " leak of " << bytes << " bytes from "
                  << function << "\n"
                  << r_.Describe();
  }

  RunResult r_;
};

TEST_F(ProcAddressTest, CuGetProcAddressV2Default) {
  ExpectLeak("cuMemAlloc", 1111, "ProcAllocDirect");
}

TEST_F(ProcAddressTest, CudaGetDriverEntryPointByVersion) {
  ExpectLeak("cuMemAlloc", 2222, "ProcAllocViaRuntime");
}

TEST_F(ProcAddressTest, PerThreadFlagGivesTrackedPtszVariant) {
  ExpectLeak("cuMemAllocAsync", 3333, "ProcAllocAsyncPtsz");
}

TEST_F(ProcAddressTest, CuGetProcAddressV1FromSelfLookup) {
  ExpectLeak("cuMemAlloc", 5555, "ProcAllocThroughV1");
}

TEST_F(ProcAddressTest, ExactCounts) {
  const json& s = r_.report["summary"];
  EXPECT_EQ(s.value("allocations", -1), 5) << r_.Describe();
  EXPECT_EQ(s.value("frees", -1), 1) << r_.Describe();
  EXPECT_EQ(s.value("leaks", -1), 4) << r_.Describe();
  EXPECT_EQ(s.value("errors", -1), 0) << r_.Describe();
}

TEST_F(ProcAddressTest, LookupsStillSucceedForTheProgram) {
  EXPECT_NE(r_.out.find("cuMemAlloc status 0"), std::string::npos) << r_.out;
  EXPECT_NE(r_.out.find("cuMemAllocAsync status 0"), std::string::npos)
      << r_.out;
  EXPECT_NE(r_.out.find("entry point status 0"), std::string::npos) << r_.out;
  EXPECT_EQ(r_.out.find("-> 500"), std::string::npos) << r_.out;
}

// dlopen("libcuda.so.1") + dlsym, the statically linked runtime's way in.
class DlsymTest : public InterposeTest {
 protected:
  void SetUp() override {
    r_ = Run(GMT_DLSYM_PROGRAM);
    ASSERT_EQ(r_.exit_code, 0) << r_.Describe();
    ASSERT_TRUE(r_.has_report) << r_.Describe();
  }
  RunResult r_;
};

TEST_F(DlsymTest, DriverSymbolFromDlsymIsTracked) {
  bool found = false;
  for (const json& leak : LeaksWithApi(r_.report, "cuMemAlloc")) {
    if (StackHas(leak["stack"], "LeakThroughDlsym(")) {
      found = true;
      EXPECT_EQ(leak.value("bytes", uint64_t{0}), 1212u) << leak.dump();
    }
  }
  EXPECT_TRUE(found) << r_.Describe();
}

TEST_F(DlsymTest, ProcAddressV1FromDlsymIsTracked) {
  bool found = false;
  for (const json& leak : LeaksWithApi(r_.report, "cuMemAlloc")) {
    if (StackHas(leak["stack"], "LeakThroughDlsymV1")) {
      found = true;
      EXPECT_EQ(leak.value("bytes", uint64_t{0}), 1313u) << leak.dump();
    }
  }
  EXPECT_TRUE(found) << r_.Describe();
  EXPECT_EQ(r_.report["summary"].value("allocations", -1), 2) << r_.Describe();
}

// Names the tool does not handle resolve to the driver itself.
TEST_F(DlsymTest, UnhandledNamesAreLeftAlone) {
  for (const char* name : {"cuInit", "cuDeviceGetName", "cuCtxSetCurrent",
                           "cuDeviceTotalMem_v2", "cuArrayCreate_v2"}) {
    EXPECT_NE(r_.out.find(std::string("dlsym ") + name + " from libcuda.so.1"),
              std::string::npos)
        << name << "\n"
        << r_.out;
  }
  EXPECT_NE(r_.out.find("dlsym cuNoSuchFunction null"), std::string::npos)
      << r_.out;
}

}  // namespace
}  // namespace gmt_test
