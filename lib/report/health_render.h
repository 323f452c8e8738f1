// Health readings (lib/health/health.h) judged and rendered: pure functions,
// unit tested on made-up readings.
#ifndef GMT_LIB_REPORT_HEALTH_RENDER_H_
#define GMT_LIB_REPORT_HEALTH_RENDER_H_

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "lib/report/health_reading.h"

namespace gmt {

struct HealthWarning {
  int device = -1;   // NVML index; -1: the whole system (versions)
  std::string what;  // stable key: "ecc-uncorrected", "xid", ...
  std::string text;  // one plain sentence
};

// Every abnormal value of `reading`, one warning each. Missing values are
// never judged healthy: they produce no warning but are said "not supported"
// or "error" by the renderers.
std::vector<HealthWarning> HealthWarnings(const HealthReading& reading);

// "12.4" for 12040.
std::string CudaVersionText(int version);

// The text block. `verbose`: every value with its unit; otherwise one status
// line per device and the warnings.
std::string RenderHealthText(const HealthReading& reading, bool verbose);

// The JSON of one device (DESIGN §5 devices[].health): the figures, with null
// for a value that could not be read and its reason under "missing"; or
// {"available": false, "reason": ...}. `warnings` are those of the reading.
nlohmann::json DeviceHealthJson(const HealthReading& reading,
                                const DeviceHealth& device,
                                const std::vector<HealthWarning>& warnings);
// The whole reading (`gpumemtrace health --json`).
nlohmann::json HealthReadingJson(const HealthReading& reading);

// devices[].health of the JSON report for CUDA device `cuda_index` (taken as
// the NVML index): the figures, or {"available": false, "reason": ...}
// (NVML absent, health=0, or no such NVML device).
nlohmann::json ReportDeviceHealthJson(bool read, const HealthReading& reading,
                                      int cuda_index);

// The text report's health block: a status line, the warnings, and Xid
// events; "" when `read` is false.
std::string ReportHealthText(bool read, const HealthReading& reading);

// A short meaning for an Xid ("GPU memory page fault"), or "" when the table
// does not know it.
absl::string_view XidMeaning(uint64_t xid);

}  // namespace gmt

#endif  // GMT_LIB_REPORT_HEALTH_RENDER_H_
