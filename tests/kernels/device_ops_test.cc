// DriverDeviceOps (lib/platform/driver_device_ops.cc) against the CPU test double
// of libcuda (tests/fake_cuda), which runs the guard kernels on the host: the
// shared scenarios of zone_scenarios.cc, one GoogleTest test each, plus what
// only the double can show.
#include <dlfcn.h>

#include <cstdlib>
#include <ostream>
#include <string>

#include "gtest/gtest.h"
#include "lib/platform/driver_device_ops.h"
#include "tests/kernels/zone_scenarios.h"

namespace gmt_test {

// Names the parameter in test listings (found by argument-dependent lookup).
void PrintTo(const Scenario& scenario, std::ostream* out) {
  *out << scenario.name;
}

namespace {

// One driver and one DriverDeviceOps for the whole process, as in the tool.
struct Process {
  TestDriver driver;
  gmt::DriverDeviceOps ops;
  std::string why;
  bool ok = driver.Open(&why);
};

Process& P() {
  static Process* const process = new Process();
  return *process;
}

class ZoneScenarioTest : public testing::TestWithParam<Scenario> {};

TEST_P(ZoneScenarioTest, Passes) {
  ASSERT_TRUE(P().ok) << P().why;
  std::vector<std::string> failures;
  {
    ScenarioContext sc(P().driver, P().ops);
    GetParam().run(sc);
    failures = sc.failures();
  }
  for (const std::string& f : failures) ADD_FAILURE() << f;
}

INSTANTIATE_TEST_SUITE_P(Fake, ZoneScenarioTest,
                         testing::ValuesIn(ZoneScenarios()),
                         [](const testing::TestParamInfo<Scenario>& info) {
                           return std::string(info.param.name);
                         });

// What the library's constructor does, then Fills: before libcuda is loaded,
// before cuInit (the double fails every call then), and after. True when the
// first two fail softly and the last works: a transient failure does not turn
// guard zones off.
bool FillBeforeAndAfterCuInit() {
  gmt::InstallDriverDeviceOps();
  gmt::DeviceOps* ops = gmt::GetDeviceOps();
  if (ops == nullptr) return false;
  const GmtZone early_zone = {0x1000, 16, 0, 0};
  if (ops->Fill(0, 0, {&early_zone, 1})) return false;
  if (dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL) == nullptr) return false;
  if (ops->Fill(0, 0, {&early_zone, 1})) return false;
  TestDriver driver;
  std::string why;
  CUdeviceptr p = 0;
  if (!driver.Open(&why) || driver.mem_alloc(&p, 64) != CUDA_SUCCESS) {
    return false;
  }
  const GmtZone zone = {p, 64, 0x5c, 0};
  return ops->Fill(0, 0, {&zone, 1}) &&
         reinterpret_cast<unsigned char*>(p)[63] == 0x5c;
}

TEST(DriverDeviceOpsTest, FailsSoftlyBeforeCuInitAndRecoversAfter) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");  // a fresh process
  EXPECT_EXIT(std::exit(FillBeforeAndAfterCuInit() ? 0 : 1),
              testing::ExitedWithCode(0), "CUDA_ERROR_NOT_INITIALIZED");
}

}  // namespace
}  // namespace gmt_test
