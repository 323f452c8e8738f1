// The tool's one driver table (lib/platform/tool_driver.h) in both of its
// uses, and the memtest device built on it (lib/memtest/cuda_device.cc).
//
// The binary links no libcuda; CTest runs it three ways (CMakeLists.txt):
//   with the test double on LD_LIBRARY_PATH   every suite but the two below
//   with no driver to find                    WithoutADriver.*
//   with a libcuda.so.1 that has only cuGetErrorName
//                                             IncompleteDriver.*
#include "lib/platform/tool_driver.h"

#include <dlfcn.h>

#include <set>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "lib/memtest/cuda_device.h"

namespace gmt {
namespace {

using testing::HasSubstr;
using testing::StartsWith;

bool DriverLoaded() {
  void* handle = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
  if (handle != nullptr) dlclose(handle);
  return handle != nullptr;
}

// Names every field of the table that is null; "" when none is.
std::string NullFields(const ToolDriver& d) {
  std::string nulls;
#define GMT_NULL_FIELD(field, base, exported, version) \
  if (d.field == nullptr) nulls += #exported " ";
  GMT_TOOL_DRIVER_FUNCTIONS(GMT_NULL_FIELD)
#undef GMT_NULL_FIELD
  return nulls;
}

// A driver as a lookup: every name resolves to a distinct dummy address but
// `hidden`, and each name asked for is kept.
struct StandInDriver {
  std::set<std::string> hidden;
  std::set<std::string> asked;
  char addresses[64] = {};

  auto Lookup() {
    return [this](const char* name) { return Find(name); };
  }
  void* Find(const char* name) {
    const bool first = asked.insert(name).second;
    EXPECT_TRUE(first) << name << " asked twice";
    if (hidden.count(name) != 0) return nullptr;
    return &addresses[asked.size() % sizeof(addresses)];
  }
};

// First: nothing may have loaded libcuda before this runs (under CTest every
// test is its own process). The double is on LD_LIBRARY_PATH, so a dlopen
// would find it: only the tool's restraint keeps it out.
TEST(LibraryCase, NeverLoadsTheDriverItself) {
  if (DriverLoaded()) GTEST_SKIP() << "libcuda.so.1 is loaded already";
  const char* missing = nullptr;
  EXPECT_EQ(GetToolDriver(&missing), nullptr);
  EXPECT_STREQ(missing, "cuGetErrorName");
  EXPECT_FALSE(DriverLoaded());
}

TEST(ToolDriverTable, EveryFunctionResolvesByItsExportedName) {
  StandInDriver driver;
  ToolDriver d;
  EXPECT_EQ(ResolveToolDriver(driver.Lookup(), kToolDriverLauncherVersion, &d),
            nullptr);
  EXPECT_EQ(NullFields(d), "");
  EXPECT_EQ(d.cuda_free, nullptr);  // not a driver function
  EXPECT_EQ(driver.asked.count("cuCtxPushCurrent_v2"), 1u);
  EXPECT_EQ(driver.asked.count("cuMemAlloc_v2"), 1u);
  EXPECT_EQ(driver.asked.count("cuDevicePrimaryCtxRelease_v2"), 1u);
  EXPECT_EQ(driver.asked.count("cuMemAlloc"), 0u);  // the _v1 ABI
}

// A driver older than 12.0 still serves the library (guard kernels off), not
// the launcher.
TEST(ToolDriverTable, NewerFunctionsAreNeededOnlyFromDriversThatHaveThem) {
  StandInDriver driver;
  driver.hidden = {"cuLibraryLoadData", "cuDevicePrimaryCtxRelease_v2"};
  ToolDriver library;
  EXPECT_EQ(
      ResolveToolDriver(driver.Lookup(), kToolDriverLibraryVersion, &library),
      nullptr);
  EXPECT_EQ(NullFields(library),
            "cuDevicePrimaryCtxRelease_v2 cuLibraryLoadData ");

  StandInDriver again;
  again.hidden = driver.hidden;
  ToolDriver launcher;
  EXPECT_STREQ(
      ResolveToolDriver(again.Lookup(), kToolDriverLauncherVersion, &launcher),
      "cuDevicePrimaryCtxRelease_v2");
}

TEST(ToolDriverTable, ResolvingStopsAtTheFirstMissingFunction) {
  StandInDriver driver;
  driver.hidden = {"cuCtxPushCurrent_v2", "cuLaunchKernel"};
  ToolDriver d;
  EXPECT_STREQ(
      ResolveToolDriver(driver.Lookup(), kToolDriverLibraryVersion, &d),
      "cuCtxPushCurrent_v2");
  EXPECT_NE(d.ctx_get_current, nullptr);  // before it in the list
  EXPECT_EQ(driver.asked.count("cuLaunchKernel"), 0u);
}

TEST(LauncherCase, OpensTheDriverAndResolvesEveryFunction) {
  absl::StatusOr<const ToolDriver*> opened = OpenToolDriver();
  ASSERT_TRUE(opened.ok()) << opened.status();
  const ToolDriver& d = **opened;
  EXPECT_EQ(NullFields(d), "");
  EXPECT_TRUE(DriverLoaded());
  // Exactly libcuda's own definitions.
  void* libcuda = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
  ASSERT_NE(libcuda, nullptr);
  EXPECT_EQ(reinterpret_cast<void*>(d.mem_alloc),
            dlsym(libcuda, "cuMemAlloc_v2"));
  EXPECT_EQ(reinterpret_cast<void*>(d.device_get_pci_bus_id),
            dlsym(libcuda, "cuDeviceGetPCIBusId"));
  dlclose(libcuda);
  EXPECT_STREQ(ToolResultName(d, CUDA_ERROR_INVALID_VALUE),
               "CUDA_ERROR_INVALID_VALUE");
  // The same table on every call.
  absl::StatusOr<const ToolDriver*> again = OpenToolDriver();
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, *opened);
}

// Once the launcher loaded the driver, the library's way finds it too, with
// the same functions.
TEST(LauncherCase, TheLibraryCaseFindsTheOpenedDriver) {
  absl::StatusOr<const ToolDriver*> opened = OpenToolDriver();
  ASSERT_TRUE(opened.ok()) << opened.status();
  const ToolDriver* loaded = GetToolDriver();
  ASSERT_NE(loaded, nullptr);
  EXPECT_EQ(loaded->launch_kernel, (*opened)->launch_kernel);
  EXPECT_EQ(loaded->library_load_data, (*opened)->library_load_data);
}

TEST(MemtestOnTheTestDouble, NoSuchDeviceSaysHowManyThereAre) {
  auto device = memtest::OpenCudaMemtestDevice(7);
  ASSERT_FALSE(device.ok());
  EXPECT_EQ(device.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(device.status().message(),
            "no CUDA device 7 (2 device(s) present)");
}

// The double runs only the guard kernels: opening gets as far as looking up
// the memtest kernels, through every driver call before that (and the
// destructor's releases after it).
TEST(MemtestOnTheTestDouble, OpensUpToTheMemtestKernels) {
  auto device = memtest::OpenCudaMemtestDevice(0);
  ASSERT_FALSE(device.ok());
  EXPECT_EQ(device.status().message(),
            "cuLibraryGetKernel: CUDA_ERROR_NOT_FOUND (500)");
}

TEST(WithoutADriver, TheLauncherSaysSo) {
  if (dlopen("libcuda.so.1", RTLD_LAZY) != nullptr) {
    GTEST_SKIP() << "this machine has a CUDA driver";
  }
  absl::StatusOr<const ToolDriver*> opened = OpenToolDriver();
  ASSERT_FALSE(opened.ok());
  EXPECT_EQ(opened.status().code(), absl::StatusCode::kFailedPrecondition);
  const std::string message(opened.status().message());
  EXPECT_THAT(message,
              StartsWith("no CUDA driver: cannot open libcuda.so.1 ("));
  EXPECT_THAT(message, HasSubstr("); is the NVIDIA driver installed?"));

  auto device = memtest::OpenCudaMemtestDevice(0);
  ASSERT_FALSE(device.ok());
  EXPECT_EQ(device.status().message(), opened.status().message());
}

TEST(IncompleteDriver, TheLauncherNamesTheMissingFunctionAndTheVersion) {
  absl::StatusOr<const ToolDriver*> opened = OpenToolDriver();
  ASSERT_FALSE(opened.ok());
  EXPECT_EQ(opened.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(opened.status().message(),
            "the CUDA driver lacks cuInit (a CUDA 12.0 or newer driver is "
            "needed)");
  auto device = memtest::OpenCudaMemtestDevice(0);
  ASSERT_FALSE(device.ok());
  EXPECT_EQ(device.status().message(), opened.status().message());
}

}  // namespace
}  // namespace gmt
