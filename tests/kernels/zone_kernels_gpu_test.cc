// The guard-zone kernels and DriverDeviceOps on a real GPU: the scenarios of
// zone_scenarios.cc (the same ones device_ops_test runs against the CPU test
// double), then the scan rate of a check against the device's copy bandwidth.
//
// Exit status: 0 all passed, 1 a scenario failed, 77 no CUDA driver or device
// (CTest SKIP_RETURN_CODE). Links no CUDA library: libcuda.so.1 is opened at
// run time, as the tool does.
//
// Output, one line for the measurement (parsed by scripts):
//   scan_rate_gbps=<check GB/s> copy_gbps=<cuMemcpyDtoD GB/s> ratio=<scan/copy>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "lib/platform/driver_device_ops.h"
#include "tests/kernels/zone_scenarios.h"

namespace gmt_test {
namespace {

constexpr int kSkip = 77;

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since)
      .count();
}

// Checks ~1 GiB of zones (64 x 16 MiB) `kRounds` times through
// DeviceOps::Check and copies the same bytes with cuMemcpyDtoD as often.
// GB/s are bytes of zone (or bytes copied) per second, 1e9 bytes a GB.
bool MeasureScanRate(TestDriver& d, gmt::DeviceOps& ops) {
  constexpr uint64_t kZoneBytes = uint64_t{16} << 20;
  constexpr int kZones = 64;
  constexpr uint64_t kTotal = kZoneBytes * kZones;
  constexpr int kRounds = 10;
  if (d.memcpy_dtod == nullptr) {
    std::printf("scan rate: cuMemcpyDtoD_v2 missing\n");
    return false;
  }
  CUdeviceptr zones_block = 0, copy_to = 0;
  CUresult r = d.mem_alloc(&zones_block, kTotal);
  if (r == CUDA_SUCCESS) r = d.mem_alloc(&copy_to, kTotal);
  if (r != CUDA_SUCCESS) {
    std::printf("scan rate: cuMemAlloc of 2 x 1 GiB: %s\n", d.Name(r).c_str());
    if (zones_block != 0) d.mem_free(zones_block);
    return false;
  }
  std::vector<GmtZone> zones;
  for (int i = 0; i < kZones; ++i) {
    zones.push_back({zones_block + i * kZoneBytes, kZoneBytes, 0xa5, 0});
  }
  const uint64_t context = reinterpret_cast<uint64_t>(d.context);
  std::vector<GmtZoneResult> results;
  bool ok = ops.Fill(context, 0, zones) &&
            ops.Check(context, 0, zones, &results);  // warm-up
  double scan_seconds = 0, copy_seconds = 0;
  if (ok) {
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < kRounds && ok; ++i) {
      ok = ops.Check(context, 0, zones, &results);
    }
    scan_seconds = Seconds(start);
  }
  for (const GmtZoneResult& z : results) ok = ok && z.changed_bytes == 0;
  if (ok) {
    r = d.memcpy_dtod(copy_to, zones_block, kTotal);  // warm-up
    if (r == CUDA_SUCCESS) r = d.ctx_synchronize();
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < kRounds && r == CUDA_SUCCESS; ++i) {
      r = d.memcpy_dtod(copy_to, zones_block, kTotal);
    }
    if (r == CUDA_SUCCESS) r = d.ctx_synchronize();
    copy_seconds = Seconds(start);
    ok = r == CUDA_SUCCESS;
  }
  d.mem_free(zones_block);
  d.mem_free(copy_to);
  if (!ok) {
    std::printf("scan rate: a fill, check or copy failed\n");
    return false;
  }
  const double scan_gbps = kTotal * double{kRounds} / scan_seconds / 1e9;
  const double copy_gbps = kTotal * double{kRounds} / copy_seconds / 1e9;
  std::printf("scan_rate_gbps=%.1f copy_gbps=%.1f ratio=%.2f\n", scan_gbps,
              copy_gbps, scan_gbps / copy_gbps);
  return true;
}

int Main() {
  static TestDriver driver;
  std::string why;
  if (!driver.Open(&why)) {
    std::printf("SKIP: %s\n", why.c_str());
    return kSkip;
  }
  char name[256] = "";
  driver.device_get_name(name, sizeof(name), 0);
  std::printf("device 0: %s\n", name);
  static gmt::DriverDeviceOps ops;
  int failed = 0;
  for (const Scenario& scenario : ZoneScenarios()) {
    std::vector<std::string> failures;
    {
      ScenarioContext sc(driver, ops);
      scenario.run(sc);
      failures = sc.failures();
    }
    std::printf("%s %s\n", failures.empty() ? "PASS" : "FAIL", scenario.name);
    for (const std::string& f : failures) std::printf("  %s\n", f.c_str());
    if (!failures.empty()) ++failed;
  }
  std::printf("%d of %zu scenarios failed\n", failed, ZoneScenarios().size());
  const bool measured = MeasureScanRate(driver, ops);
  std::fflush(stdout);
  return failed == 0 && measured ? 0 : 1;
}

}  // namespace
}  // namespace gmt_test

int main() { return gmt_test::Main(); }
