// GPU health: the warnings and renderings on made-up
// readings, and the NVML loader on a machine without NVML.
#include "lib/health/health.h"

#include <gtest/gtest.h>

#include <cstdlib>

#include "lib/health/xid_watch.h"
#include "lib/platform/nvml_loader.h"
#include "lib/report/health_render.h"

namespace gmt {
namespace {

// A device where every value was read and is normal.
DeviceHealth HealthyDevice() {
  DeviceHealth d;
  d.nvml_index = 0;
  d.name = "NVIDIA H200";
  d.memory_total = Reading<uint64_t>::Of(uint64_t{143771} << 20);
  d.memory_used = Reading<uint64_t>::Of(uint64_t{500} << 20);
  d.memory_reserved = Reading<uint64_t>::Of(uint64_t{300} << 20);
  d.ecc_enabled = Reading<bool>::Of(true);
  d.ecc_pending_enabled = Reading<bool>::Of(true);
  d.ecc.volatile_corrected = Reading<uint64_t>::Of(3);
  d.ecc.volatile_uncorrected = Reading<uint64_t>::Of(0);
  d.ecc.aggregate_corrected = Reading<uint64_t>::Of(12);
  d.ecc.aggregate_uncorrected = Reading<uint64_t>::Of(0);
  d.retired_single_bit = Reading<uint32_t>::Of(0);
  d.retired_double_bit = Reading<uint32_t>::Of(0);
  d.retired_pending = Reading<bool>::Of(false);
  d.remapped_rows = Reading<RemappedRows>::Of(RemappedRows{1, 0, false, false});
  d.gpu_temp_c = Reading<uint32_t>::Of(41);
  d.memory_temp_c = Reading<uint32_t>::Of(45);
  d.gpu_temp_slowdown_c = Reading<uint32_t>::Of(90);
  d.gpu_temp_shutdown_c = Reading<uint32_t>::Of(95);
  d.gpu_temp_max_c = Reading<uint32_t>::Of(87);
  d.memory_temp_max_c = Reading<uint32_t>::Of(95);
  d.clock_event_reasons = Reading<uint64_t>::Of(kClockIdle);
  return d;
}

HealthReading Healthy() {
  HealthReading r;
  r.available = true;
  r.versions.driver = Reading<std::string>::Of("570.86.15");
  r.versions.driver_cuda = Reading<int>::Of(12080);
  r.versions.runtime_cuda = Reading<int>::Of(12040);
  r.versions.cu_driver_cuda = Reading<int>::Of(12080);
  r.xid_status = "watched on 1 device";
  r.devices.push_back(HealthyDevice());
  return r;
}

std::vector<std::string> Whats(const HealthReading& r) {
  std::vector<std::string> out;
  for (const HealthWarning& w : HealthWarnings(r)) out.push_back(w.what);
  return out;
}

bool Has(const std::vector<std::string>& v, const std::string& what) {
  return std::find(v.begin(), v.end(), what) != v.end();
}

TEST(HealthWarnings, HealthyReadingHasNone) {
  EXPECT_TRUE(HealthWarnings(Healthy()).empty());
  const std::string text = RenderHealthText(Healthy(), false);
  EXPECT_NE(text.find("GPU 0 NVIDIA H200: no abnormal value"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("WARNING"), std::string::npos) << text;
}

// Each abnormal value on its own produces its own warning.
TEST(HealthWarnings, EveryAbnormalValueWarns) {
  struct Case {
    const char* what;
    void (*spoil)(HealthReading&);
  } cases[] = {
      {"ecc-uncorrected",
       [](HealthReading& r) {
         r.devices[0].ecc.volatile_uncorrected = Reading<uint64_t>::Of(1);
       }},
      {"ecc-uncorrected",
       [](HealthReading& r) {
         r.devices[0].ecc.aggregate_uncorrected = Reading<uint64_t>::Of(2);
       }},
      {"ecc-off",
       [](HealthReading& r) {
         r.devices[0].ecc_enabled = Reading<bool>::Of(false);
       }},
      {"retired-pages-pending",
       [](HealthReading& r) {
         r.devices[0].retired_pending = Reading<bool>::Of(true);
       }},
      {"retired-pages",
       [](HealthReading& r) {
         r.devices[0].retired_double_bit = Reading<uint32_t>::Of(4);
       }},
      {"remap-pending",
       [](HealthReading& r) {
         r.devices[0].remapped_rows =
             Reading<RemappedRows>::Of(RemappedRows{0, 1, true, false});
       }},
      {"remap-failure",
       [](HealthReading& r) {
         r.devices[0].remapped_rows =
             Reading<RemappedRows>::Of(RemappedRows{0, 0, false, true});
       }},
      {"memory-hot",
       [](HealthReading& r) {
         r.devices[0].memory_temp_c = Reading<uint32_t>::Of(92);
       }},
      {"gpu-hot",
       [](HealthReading& r) {
         r.devices[0].gpu_temp_c = Reading<uint32_t>::Of(88);
       }},
      {"clocks-throttled",
       [](HealthReading& r) {
         r.devices[0].clock_event_reasons =
             Reading<uint64_t>::Of(kClockHwSlowdown);
       }},
      {"clocks-throttled",
       [](HealthReading& r) {
         r.devices[0].clock_event_reasons =
             Reading<uint64_t>::Of(kClockSwThermal);
       }},
      {"clocks-throttled",
       [](HealthReading& r) {
         r.devices[0].clock_event_reasons =
             Reading<uint64_t>::Of(kClockHwThermal);
       }},
      {"clocks-throttled",
       [](HealthReading& r) {
         r.devices[0].clock_event_reasons =
             Reading<uint64_t>::Of(kClockHwPowerBrake);
       }},
      {"driver-too-old",
       [](HealthReading& r) {
         r.versions.runtime_cuda = Reading<int>::Of(13000);
       }},
      {"xid",
       [](HealthReading& r) {
         r.xids.push_back(XidEvent{1.5, 0, 79});
       }},
  };
  for (const Case& c : cases) {
    HealthReading r = Healthy();
    c.spoil(r);
    const std::vector<std::string> whats = Whats(r);
    EXPECT_EQ(whats.size(), 1u) << c.what;
    EXPECT_TRUE(Has(whats, c.what)) << c.what;
    const std::string text = RenderHealthText(r, false);
    EXPECT_NE(text.find("WARNING"), std::string::npos) << c.what << "\n"
                                                       << text;
    // Per-device warnings are counted on the device's status line.
    if (std::string(c.what) != "driver-too-old") {
      EXPECT_NE(text.find("GPU 0 NVIDIA H200: 1 warning"), std::string::npos)
          << c.what << "\n"
          << text;
    }
  }
}

TEST(HealthWarnings, DriverCheckFallsBackOnTheProgramsDriverVersion) {
  HealthReading r = Healthy();
  r.versions.driver_cuda = Reading<int>::Missing("not supported (old NVML)");
  r.versions.cu_driver_cuda = Reading<int>::Of(12020);
  EXPECT_TRUE(Has(Whats(r), "driver-too-old"));
  const std::string text = HealthWarnings(r)[0].text;
  EXPECT_NE(text.find("12.4"), std::string::npos) << text;
  EXPECT_NE(text.find("12.2"), std::string::npos) << text;
}

TEST(HealthWarnings, XidIsNamedWithItsMeaning) {
  HealthReading r = Healthy();
  r.xids.push_back(XidEvent{2.0, 0, 48});
  r.xids.push_back(XidEvent{2.5, 0, 12345});
  std::vector<HealthWarning> w = HealthWarnings(r);
  ASSERT_EQ(w.size(), 2u);
  EXPECT_NE(w[0].text.find("Xid 48"), std::string::npos) << w[0].text;
  EXPECT_NE(w[0].text.find("double-bit"), std::string::npos) << w[0].text;
  EXPECT_NE(w[1].text.find("Xid catalogue"), std::string::npos) << w[1].text;
  for (uint64_t xid :
       {13, 31, 43, 45, 48, 61, 62, 63, 64, 74, 79, 92, 94, 95, 119, 120}) {
    EXPECT_FALSE(XidMeaning(xid).empty()) << xid;
  }
}

// Values that could not be read produce no warning, but are never shown as
// normal: the text says why, the JSON has null and the reason.
TEST(HealthReport, UnsupportedValuesAreSaidSoNeverOk) {
  HealthReading r = Healthy();
  DeviceHealth& d = r.devices[0];
  d.ecc_enabled = d.ecc_pending_enabled =
      Reading<bool>::Missing("not supported");
  d.ecc.volatile_uncorrected = Reading<uint64_t>::Missing("not supported");
  d.remapped_rows = Reading<RemappedRows>::Missing("error: Unknown Error");
  d.memory_temp_c = Reading<uint32_t>::Missing("not supported");
  d.clock_event_reasons =
      Reading<uint64_t>::Missing("not supported (old NVML)");
  EXPECT_TRUE(HealthWarnings(r).empty());
  const std::string text = RenderHealthText(r, true);
  EXPECT_NE(text.find("ECC: enabled not supported"), std::string::npos) << text;
  EXPECT_NE(text.find("remapped rows: error: Unknown Error"), std::string::npos)
      << text;
  EXPECT_NE(text.find("memory not supported"), std::string::npos) << text;
  EXPECT_NE(text.find("clock event reasons: not supported (old NVML)"),
            std::string::npos)
      << text;
  nlohmann::json j = HealthReadingJson(r);
  const nlohmann::json& dev = j["devices"][0];
  EXPECT_TRUE(dev["ecc_enabled"].is_null());
  EXPECT_EQ(dev["missing"]["ecc_enabled"], "not supported");
  EXPECT_TRUE(dev["remapped_rows"].is_null());
  EXPECT_EQ(dev["missing"]["remapped_rows"], "error: Unknown Error");
  EXPECT_TRUE(dev["memory_temp_c"].is_null());
  EXPECT_EQ(dev["gpu_temp_c"], 41);
  EXPECT_FALSE(dev["missing"].contains("gpu_temp_c"));
}

TEST(HealthReport, VerboseTextHasEveryValueWithUnits) {
  const std::string text = RenderHealthText(Healthy(), true);
  for (const char* part :
       {"driver 570.86.15", "driver CUDA 12.8", "program runtime CUDA 12.4",
        "memory: total 140.40 GiB", "used 0.49 GiB", "ECC: enabled yes",
        "corrected 3 volatile / 12 aggregate", "retired pages: single-bit 0",
        "remapped rows: correctable 1, uncorrectable 0, pending no, failure no",
        "temperature: GPU 41 C (slowdown 90 C, shutdown 95 C, max 87 C), "
        "memory 45 C (max 95 C)",
        "clock event reasons: 0x1 (idle)"}) {
    EXPECT_NE(text.find(part), std::string::npos) << part << "\n" << text;
  }
}

TEST(HealthReport, JsonHasFiguresAndWarnings) {
  HealthReading r = Healthy();
  r.devices[0].ecc.aggregate_uncorrected = Reading<uint64_t>::Of(7);
  nlohmann::json j = ReportDeviceHealthJson(true, r, 0);
  EXPECT_EQ(j["available"], true);
  EXPECT_EQ(j["name"], "NVIDIA H200");
  EXPECT_EQ(j["memory_total_bytes"], uint64_t{143771} << 20);
  EXPECT_EQ(j["ecc_uncorrected_aggregate"], 7);
  EXPECT_EQ(j["remapped_rows"]["correctable"], 1);
  EXPECT_EQ(j["driver_version"], "570.86.15");
  ASSERT_EQ(j["warnings"].size(), 1u);
  EXPECT_EQ(j["warnings"][0]["what"], "ecc-uncorrected");
  // A CUDA device NVML does not know, health off, and NVML absent.
  EXPECT_EQ(ReportDeviceHealthJson(true, r, 3)["available"], false);
  EXPECT_EQ(ReportDeviceHealthJson(false, r, 0)["available"], false);
  HealthReading absent;
  absent.reason = "libnvidia-ml.so.1 not found (x)";
  nlohmann::json a = ReportDeviceHealthJson(true, absent, 0);
  EXPECT_EQ(a["available"], false);
  EXPECT_EQ(a["reason"], "libnvidia-ml.so.1 not found (x)");
}

TEST(NvmlLoader, MissingLibraryIsUnavailableWithTheReason) {
  NvmlApi api = LoadNvmlFrom("libgmt-no-such-nvml.so.1");
  EXPECT_FALSE(api.available);
  EXPECT_NE(api.reason.find("libgmt-no-such-nvml.so.1 not found"),
            std::string::npos)
      << api.reason;
  EXPECT_EQ(api.init, nullptr);
}

TEST(NvmlLoader, LibraryWithoutNvmlIsUnavailable) {
  // libc has none of NVML's functions.
  NvmlApi api = LoadNvmlFrom("libc.so.6");
  EXPECT_FALSE(api.available);
  EXPECT_NE(api.reason.find("lacks nvmlInit_v2"), std::string::npos)
      << api.reason;
}

// Without NVML on this machine (CI), the reading says "unavailable" and why;
// with it (a GPU machine), it lists devices. Either way it never crashes.
TEST(ReadHealth, SaysWhyWhenUnavailable) {
  setenv("GMT_NVML_LIBRARY", "libgmt-no-such-nvml.so.1", 1);
  HealthReading r = ReadHealth();
  EXPECT_FALSE(r.available);
  EXPECT_NE(r.reason.find("not found"), std::string::npos) << r.reason;
  EXPECT_TRUE(r.devices.empty());
  EXPECT_TRUE(HealthWarnings(r).empty());
  const std::string text = ReportHealthText(true, r);
  EXPECT_EQ(text.rfind("GPU health: unavailable: ", 0), 0u) << text;
  std::string status;
  EXPECT_TRUE(ReadProcessUsage(0, &status).empty());
  EXPECT_NE(status.find("NVML unavailable"), std::string::npos) << status;
  EXPECT_FALSE(StartXidWatch());
  bool watched = true;
  std::vector<XidEvent> events;
  XidSnapshot(&watched, &status, &events);
  EXPECT_FALSE(watched);
  EXPECT_NE(status.find("NVML unavailable"), std::string::npos) << status;
}

}  // namespace
}  // namespace gmt
