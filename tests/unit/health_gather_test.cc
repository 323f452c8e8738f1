// The NVML gather path of lib/health/health.cc and lib/health/xid_watch.cc
// against the stand-in NVML of fake_nvml.cc (GMT_NVML_LIBRARY, set before the
// first load: its own test binary, so the loader's cache starts empty).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <thread>

#include "absl/strings/match.h"
#include "lib/health/health.h"
#include "lib/health/xid_watch.h"
#include "lib/report/health_render.h"

namespace gmt {
namespace {

constexpr uint64_t kGiB = uint64_t{1} << 30;

class HealthGather : public testing::Test {
 protected:
  static void SetUpTestSuite() {
    setenv("GMT_NVML_LIBRARY", GMT_FAKE_NVML_PATH, 1);
  }
};

TEST_F(HealthGather, ReadsEveryValueAndSaysWhatIsUnsupported) {
  NoteCudaVersions(12040, 12080);
  HealthReading r = ReadHealth();
  ASSERT_TRUE(r.available) << r.reason;
  EXPECT_EQ(*r.versions.driver.value, "570.86.15");
  EXPECT_EQ(*r.versions.driver_cuda.value, 12080);
  EXPECT_EQ(*r.versions.runtime_cuda.value, 12040);
  ASSERT_EQ(r.devices.size(), 1u);
  const DeviceHealth& d = r.devices[0];
  EXPECT_EQ(d.name, "NVIDIA H200");
  EXPECT_EQ(d.uuid, "GPU-fake");
  EXPECT_EQ(*d.memory_total.value, 140 * kGiB);
  EXPECT_EQ(*d.memory_used.value, kGiB);
  EXPECT_EQ(*d.memory_reserved.value, kGiB / 2);
  EXPECT_TRUE(*d.ecc_enabled.value);
  EXPECT_EQ(*d.ecc.volatile_corrected.value, 5u);
  EXPECT_EQ(*d.ecc.aggregate_corrected.value, 40u);
  EXPECT_EQ(*d.ecc.volatile_uncorrected.value, 0u);
  EXPECT_EQ(*d.ecc.aggregate_uncorrected.value, 2u);
  EXPECT_EQ(*d.retired_single_bit.value, 1u);  // via "insufficient size"
  EXPECT_EQ(*d.retired_double_bit.value, 0u);
  EXPECT_FALSE(*d.retired_pending.value);
  EXPECT_EQ(d.remapped_rows.value->corrected, 3u);
  EXPECT_TRUE(d.remapped_rows.value->pending);
  EXPECT_EQ(*d.gpu_temp_c.value, 50u);
  EXPECT_EQ(*d.gpu_temp_slowdown_c.value, 90u);
  EXPECT_EQ(*d.memory_temp_max_c.value, 95u);
  EXPECT_FALSE(d.memory_temp_c.ok());
  EXPECT_EQ(d.memory_temp_c.status, "not supported");
  EXPECT_EQ(*d.clock_event_reasons.value, uint64_t{kClockHwThermal});

  std::vector<std::string> whats;
  for (const HealthWarning& w : HealthWarnings(r)) whats.push_back(w.what);
  EXPECT_EQ(whats, (std::vector<std::string>{"ecc-uncorrected", "remap-pending",
                                             "clocks-throttled"}));
  const std::string text = RenderHealthText(r, true);
  EXPECT_NE(text.find("memory not supported"), std::string::npos) << text;
  EXPECT_NE(text.find("GPU 0 NVIDIA H200: 3 warnings"), std::string::npos)
      << text;
}

// NVML's _v2 query fails on some drivers that are fine: the version then
// comes from the older query, and the line never reads "driver CUDA error".
TEST_F(HealthGather, DriverCudaVersionFallsBackWhenNvmlV2Fails) {
  setenv("FAKE_NVML_CUDA_VERSION", "v2-fails", 1);
  HealthReading r = ReadHealth();
  ASSERT_TRUE(r.versions.driver_cuda.ok()) << r.versions.driver_cuda.status;
  EXPECT_EQ(*r.versions.driver_cuda.value, 12080);
  EXPECT_EQ(RenderHealthText(r, false).find("driver CUDA error"),
            std::string::npos)
      << RenderHealthText(r, false);
  // Both fail and no driver library is loaded here: the first reason, named.
  setenv("FAKE_NVML_CUDA_VERSION", "both-fail", 1);
  r = ReadHealth();
  unsetenv("FAKE_NVML_CUDA_VERSION");
  EXPECT_FALSE(r.versions.driver_cuda.ok());
  EXPECT_EQ(r.versions.driver_cuda.status, "error: Unknown Error");
}

TEST_F(HealthGather, OnlyDeviceAndMissingDevice) {
  EXPECT_EQ(ReadHealth(0).devices.size(), 1u);
  HealthReading none = ReadHealth(5);
  EXPECT_FALSE(none.available);
  EXPECT_NE(none.reason.find("no device 5"), std::string::npos) << none.reason;
}

TEST_F(HealthGather, ProcessUsageRetriesWhenTheListGrows) {
  std::string status;
  std::vector<ProcessUsage> p = ReadProcessUsage(0, &status);
  EXPECT_EQ(status, "ok");
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[0].pid, 1u);
  EXPECT_EQ(*p[0].bytes, 4 * kGiB);
  EXPECT_FALSE(p[0].name.empty());  // /proc/1/comm is readable
  EXPECT_EQ(p[1].pid, 4242u);
  EXPECT_FALSE(p[1].bytes.has_value());  // hidden by NVML
}

TEST_F(HealthGather, XidEventsAreRecordedAndNamed) {
  ASSERT_TRUE(StartXidWatch());
  bool watched = false;
  std::string status;
  std::vector<XidEvent> events;
  for (int i = 0; i < 200 && events.empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    XidSnapshot(&watched, &status, &events);
  }
  EXPECT_TRUE(watched);
  // Since when: an Xid before the registration is not seen (NVML).
  EXPECT_TRUE(absl::StartsWith(status, "watched on 1 device since ")) << status;
  EXPECT_TRUE(absl::EndsWith(status, " s (an Xid before that is not seen)"))
      << status;
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].xid, 79u);
  EXPECT_EQ(events[0].device, 0);
  HealthReading r = ReadHealth();
  ASSERT_EQ(r.xids.size(), 1u);
  bool named = false;
  for (const HealthWarning& w : HealthWarnings(r)) {
    named |= w.what == "xid" &&
             w.text.find("fallen off the bus") != std::string::npos;
  }
  EXPECT_TRUE(named);
  EXPECT_TRUE(StopXidWatch(/*wait_ms=*/2000));
}

}  // namespace
}  // namespace gmt
