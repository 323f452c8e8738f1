// ECC and remapped-row counters of one GPU through NVML, for the memtest's
// before/after comparison. NVML comes from the tool's one loader
// (lib/platform/nvml_loader.h): loaded at run time, GMT_NVML_LIBRARY
// overriding the library for tests.
#ifndef GMT_LIB_MEMTEST_NVML_COUNTERS_H_
#define GMT_LIB_MEMTEST_NVML_COUNTERS_H_

#include <string>

#include "lib/memtest/memtest_report.h"
#include "lib/platform/nvml_loader.h"

namespace gmt::memtest {

// The counters of the GPU at `pci_bus_id` ("0000:41:00.0", as the CUDA driver
// gives it). Never fails: without NVML, or for a GPU NVML does not know,
// `available` is false and `reason` says why; a counter the GPU does not
// support (no ECC, no row remapping) is left empty.
HealthSnapshot ReadNvmlHealth(const std::string& pci_bus_id);

// The same through a given NVML (tests: LoadNvmlFrom a stand-in).
HealthSnapshot ReadNvmlHealth(const NvmlApi& nvml,
                              const std::string& pci_bus_id);

}  // namespace gmt::memtest

#endif  // GMT_LIB_MEMTEST_NVML_COUNTERS_H_
