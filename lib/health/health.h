// GPU health through NVML: one plain reading per device (the HealthReading of
// lib/report/health_reading.h), gathered through the run-time NVML loader
// (lib/platform/nvml_loader.h). The warnings and renderings are pure functions
// in lib/report/health_render.h; the Xid watcher is lib/health/xid_watch.h.
#ifndef GMT_LIB_HEALTH_HEALTH_H_
#define GMT_LIB_HEALTH_HEALTH_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "lib/report/health_reading.h"

namespace gmt {

// Reads every device now (`only_device` >= 0: that NVML index only). Never
// throws or crashes: without NVML, `available` is false with the reason.
HealthReading ReadHealth(int only_device = -1);

// The program's CUDA versions, noted by the interpose layer the first time it
// sees a device (0: unknown). Read into ReadHealth's `versions`.
void NoteCudaVersions(int runtime_version, int driver_version);

// Per-process GPU memory on `nvml_index`
// (nvmlDeviceGetComputeRunningProcesses), with names from /proc/<pid>/comm when
// readable.
struct ProcessUsage {
  uint32_t pid = 0;
  std::string name;
  std::optional<uint64_t> bytes;  // empty: NVML does not show it (no rights)
};
// Empty with `*status` set when it cannot be read.
std::vector<ProcessUsage> ReadProcessUsage(int nvml_index, std::string* status);

}  // namespace gmt

#endif  // GMT_LIB_HEALTH_HEALTH_H_
