// The memtest's ECC and remapped-row counters (lib/memtest/nvml_counters.cc)
// through the tool's one NVML loader, against the stand-in NVML of
// fake_nvml.cc.
#include <gtest/gtest.h>

#include <cstdlib>

#include "lib/memtest/nvml_counters.h"
#include "lib/platform/nvml_loader.h"

namespace gmt::memtest {
namespace {

// fake_nvml.cc's one GPU.
constexpr char kBus[] = "0000:41:00.0";

TEST(MemtestNvml, ReadsTheCountersOfTheGpuAtTheBusId) {
  const NvmlApi nvml = LoadNvmlFrom(GMT_FAKE_NVML_PATH);
  ASSERT_TRUE(nvml.available) << nvml.reason;
  const HealthSnapshot h = ReadNvmlHealth(nvml, kBus);
  ASSERT_TRUE(h.available) << h.reason;
  EXPECT_EQ(h.ecc_volatile_corrected, 5u);
  EXPECT_EQ(h.ecc_aggregate_corrected, 40u);
  EXPECT_EQ(h.ecc_volatile_uncorrected, 0u);
  EXPECT_EQ(h.ecc_aggregate_uncorrected, 2u);
  EXPECT_EQ(h.remapped_correctable, 3u);
  EXPECT_EQ(h.remapped_uncorrectable, 1u);
  EXPECT_EQ(h.remap_pending, true);
  EXPECT_EQ(h.remap_failure, false);
}

TEST(MemtestNvml, AGpuNvmlDoesNotKnowIsUnavailableWithTheReason) {
  const NvmlApi nvml = LoadNvmlFrom(GMT_FAKE_NVML_PATH);
  const HealthSnapshot h = ReadNvmlHealth(nvml, "0000:07:00.0");
  EXPECT_FALSE(h.available);
  EXPECT_EQ(h.reason, "NVML knows no GPU at 0000:07:00.0: Fake Error");
  EXPECT_FALSE(h.ecc_volatile_uncorrected.has_value());

  const HealthSnapshot no_bus = ReadNvmlHealth(nvml, "");
  EXPECT_FALSE(no_bus.available);
  EXPECT_EQ(no_bus.reason, "the CUDA driver gave no PCI bus id");
}

TEST(MemtestNvml, WithoutNvmlTheLoadersReasonIsGiven) {
  const NvmlApi nvml = LoadNvmlFrom("libgmt-no-such-nvml.so.1");
  const HealthSnapshot h = ReadNvmlHealth(nvml, kBus);
  EXPECT_FALSE(h.available);
  EXPECT_EQ(h.reason, nvml.reason);
  EXPECT_NE(h.reason.find("libgmt-no-such-nvml.so.1 not found"),
            std::string::npos)
      << h.reason;
}

// Optional for the health reading, needed by the memtest.
TEST(MemtestNvml, AnNvmlWithoutTheBusLookupSaysWhatItLacks) {
  NvmlApi nvml = LoadNvmlFrom(GMT_FAKE_NVML_PATH);
  nvml.device_get_handle_by_pci_bus_id = nullptr;
  EXPECT_EQ(ReadNvmlHealth(nvml, kBus).reason,
            "NVML lacks nvmlDeviceGetHandleByPciBusId_v2");
  nvml = LoadNvmlFrom(GMT_FAKE_NVML_PATH);
  nvml.device_get_total_ecc_errors = nullptr;
  EXPECT_EQ(ReadNvmlHealth(nvml, kBus).reason,
            "NVML lacks nvmlDeviceGetTotalEccErrors");
}

// The launcher's call: the process-wide NVML, which GMT_NVML_LIBRARY points
// at the stand-in (set before the first load; under CTest every test is its
// own process).
TEST(MemtestNvml, TheLaunchersCallHonoursGmtNvmlLibrary) {
  setenv("GMT_NVML_LIBRARY", GMT_FAKE_NVML_PATH, 1);
  const HealthSnapshot h = ReadNvmlHealth(kBus);
  ASSERT_TRUE(h.available) << h.reason;
  EXPECT_EQ(h.ecc_aggregate_uncorrected, 2u);
}

}  // namespace
}  // namespace gmt::memtest
