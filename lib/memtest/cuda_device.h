// MemtestDevice on a real GPU: the CUDA driver (libcuda.so.1, opened at run
// time through the tool's driver table, lib/platform/tool_driver.h, so the
// launcher starts and explains itself on machines without a driver), the
// embedded memtest fatbin loaded with cuLibraryLoadData, one stream, the
// device's primary context.
#ifndef GMT_LIB_MEMTEST_CUDA_DEVICE_H_
#define GMT_LIB_MEMTEST_CUDA_DEVICE_H_

#include <memory>

#include "absl/status/statusor.h"
#include "lib/memtest/device.h"

namespace gmt::memtest {

// Opens device `index`. Errors say what is missing: no libcuda.so.1, a
// driver older than CUDA 12.0, no such device, the fatbin not loadable.
absl::StatusOr<std::unique_ptr<MemtestDevice>> OpenCudaMemtestDevice(int index);

}  // namespace gmt::memtest

#endif  // GMT_LIB_MEMTEST_CUDA_DEVICE_H_
