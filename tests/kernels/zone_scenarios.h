// Guard-zone scenarios shared by two test programs: device_ops_test (CPU,
// GoogleTest, against the test double in tests/fake_cuda) and
// zone_kernels_gpu_test (the real driver and GPU). Each scenario fills zones
// through a DeviceOps, overwrites chosen bytes, checks, and compares every
// zone's result with what a host model of the same writes predicts, exactly.
//
// Failures are collected as text rather than thrown or asserted, so one body
// serves both harnesses: GoogleTest turns each into ADD_FAILURE, the GPU
// program prints them.
#ifndef GMT_TESTS_KERNELS_ZONE_SCENARIOS_H_
#define GMT_TESTS_KERNELS_ZONE_SCENARIOS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/zone_abi.h"
#include "lib/guard/device_ops.h"
#include "tests/kernels/test_driver.h"

namespace gmt_test {

class ScenarioContext {
 public:
  ScenarioContext(TestDriver& driver, gmt::DeviceOps& ops)
      : driver_(driver), ops_(ops) {}
  // Frees what Alloc gave out.
  ~ScenarioContext();
  ScenarioContext(const ScenarioContext&) = delete;
  ScenarioContext& operator=(const ScenarioContext&) = delete;

  TestDriver& driver() { return driver_; }
  gmt::DeviceOps& ops() { return ops_; }
  uint64_t context() const {
    return reinterpret_cast<uint64_t>(driver_.context);
  }

  // Device memory for the scenario (zero-filled); 0 after a failure.
  uint64_t Alloc(uint64_t bytes);
  void Fail(const std::string& what) { failures_.push_back(what); }
  const std::vector<std::string>& failures() const { return failures_; }

 private:
  TestDriver& driver_;
  gmt::DeviceOps& ops_;
  std::vector<uint64_t> blocks_;
  std::vector<std::string> failures_;
};

struct Scenario {
  const char* name;
  void (*run)(ScenarioContext& sc);
};

// Every scenario, in a fixed order.
const std::vector<Scenario>& ZoneScenarios();

// One write the program "did": `bytes` at `address`.
struct Write {
  uint64_t address;
  std::vector<uint8_t> bytes;
};

// The results a check must give for `zones` after `writes` (applied in order
// over freshly filled zones), per zone_abi.h: changed_bytes, ~first offset,
// last offset + 1; all zero for a clean zone.
std::vector<GmtZoneResult> ExpectedResults(const std::vector<GmtZone>& zones,
                                           const std::vector<Write>& writes);

// The summary the check kernel must give for the same.
GmtCheckSummary ExpectedSummary(const std::vector<GmtZoneResult>& results);

}  // namespace gmt_test

#endif  // GMT_TESTS_KERNELS_ZONE_SCENARIOS_H_
