// ECC and remapped-row counters of one GPU through NVML, loaded at run time
// (dlopen libnvidia-ml.so.1), for the memtest's before/after comparison.
// Kept to this one file so it can move onto a shared NVML loader later.
#ifndef GMT_LIB_MEMTEST_NVML_COUNTERS_H_
#define GMT_LIB_MEMTEST_NVML_COUNTERS_H_

#include <string>

#include "lib/memtest/memtest_report.h"

namespace gmt::memtest {

// The counters of the GPU at `pci_bus_id` ("0000:41:00.0", as the CUDA driver
// gives it). Never fails: without NVML, or for a GPU NVML does not know,
// `available` is false and `reason` says why; a counter the GPU does not
// support (no ECC, no row remapping) is left empty.
HealthSnapshot ReadNvmlHealth(const std::string& pci_bus_id);

}  // namespace gmt::memtest

#endif  // GMT_LIB_MEMTEST_NVML_COUNTERS_H_
