// What a GPU health reading holds, as plain data: the figures NVML gives per
// device, the driver and CUDA versions, and the Xid events of the run. Every
// value carries its own status, so a missing or unsupported figure is said as
// such and never reads as "OK". Read by lib/health/health.h, judged and
// rendered by lib/report/health_render.h.
#ifndef GMT_LIB_REPORT_HEALTH_READING_H_
#define GMT_LIB_REPORT_HEALTH_READING_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gmt {

// One NVML figure: a value, or why there is none ("not supported",
// "error: <nvmlErrorString>").
template <typename T>
struct Reading {
  std::optional<T> value;
  std::string status = "not read";

  bool ok() const { return value.has_value(); }
  static Reading Of(T v) { return Reading{v, "ok"}; }
  static Reading Missing(std::string why) { return Reading{std::nullopt, why}; }
};

struct EccCounts {
  Reading<uint64_t> volatile_corrected;
  Reading<uint64_t> volatile_uncorrected;
  Reading<uint64_t> aggregate_corrected;
  Reading<uint64_t> aggregate_uncorrected;
};

struct RemappedRows {
  uint32_t corrected = 0;    // rows remapped for correctable errors
  uint32_t uncorrected = 0;  // rows remapped for uncorrectable errors
  bool pending = false;      // a remap waits for a GPU reset
  bool failure = false;      // a remap failed: the GPU should be serviced
};

// The clock-event (throttle) reason bits of nvmlClocksEventReasons.
enum ClockEventBits : uint64_t {
  kClockIdle = 0x1,
  kClockAppSetting = 0x2,
  kClockSwPowerCap = 0x4,
  kClockHwSlowdown = 0x8,
  kClockSyncBoost = 0x10,
  kClockSwThermal = 0x20,
  kClockHwThermal = 0x40,
  kClockHwPowerBrake = 0x80,
  kClockDisplaySetting = 0x100,
};

struct DeviceHealth {
  int nvml_index = 0;
  std::string name;
  std::string uuid;
  Reading<uint64_t> memory_total;
  Reading<uint64_t> memory_used;
  Reading<uint64_t> memory_reserved;  // NVML >= 510 (memory info v2)
  Reading<bool> ecc_enabled;          // current mode
  Reading<bool> ecc_pending_enabled;  // after the next reboot
  EccCounts ecc;
  Reading<uint32_t> retired_single_bit;
  Reading<uint32_t> retired_double_bit;
  Reading<bool> retired_pending;
  Reading<RemappedRows> remapped_rows;
  Reading<uint32_t> gpu_temp_c;
  Reading<uint32_t> memory_temp_c;
  Reading<uint32_t> gpu_temp_slowdown_c;
  Reading<uint32_t> gpu_temp_shutdown_c;
  Reading<uint32_t> gpu_temp_max_c;     // max operating temperature
  Reading<uint32_t> memory_temp_max_c;  // max memory temperature
  Reading<uint64_t> clock_event_reasons;
};

// Versions: the driver's, and the CUDA versions as 12040 = 12.4.
struct VersionInfo {
  Reading<std::string> driver;  // "560.35.03" (NVML)
  Reading<int> driver_cuda;     // CUDA version the driver supports
  Reading<int> runtime_cuda;    // the program's cudaRuntimeGetVersion
  Reading<int> cu_driver_cuda;  // the program's cuDriverGetVersion
};

// An Xid event recorded during the run (lib/health/xid_watch.h).
struct XidEvent {
  double time_s = 0;  // since the tool started
  int device = 0;     // NVML index
  uint64_t xid = 0;
};

struct HealthReading {
  bool available = false;
  std::string reason;  // why not available
  VersionInfo versions;
  std::vector<DeviceHealth> devices;  // NVML order
  // Xid events: whether they were watched, why not, and what came.
  bool xid_watched = false;
  std::string xid_status;
  std::vector<XidEvent> xids;
};

}  // namespace gmt

#endif  // GMT_LIB_REPORT_HEALTH_READING_H_
