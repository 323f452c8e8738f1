// leak_driver: two 512 KiB device buffers from the driver API (cuMemAlloc,
// i.e. cuMemAlloc_v2 in libcuda.so.1), never freed with cuMemFree.
//
// Expected report: one leak entry with api "cuMemAlloc", kind "device",
// count 2, bytes 1048576 (2 x 524288), device 0, with LeakDriverBuffers
// (leak_driver.cu) in its stack. A third buffer, freed by
// DriverAllocAndFree, is not reported. No errors. The program talks to the
// driver only (primary context, retained and never released, so the leak is
// still live at exit rather than released by context destruction).
#include <cuda.h>

#include <cstdio>

#include "example_check.h"

constexpr int kLeakCount = 2;
constexpr size_t kLeakBytes = 512 << 10;

__attribute__((noinline)) void LeakDriverBuffers(CUdeviceptr* out, int count,
                                                 size_t bytes) {
  for (int i = 0; i < count; ++i) {
    EXAMPLE_CHECK_CU(cuMemAlloc(&out[i], bytes));
    EXAMPLE_CHECK_CU(cuMemsetD8(out[i], 0x5a, bytes));
  }
}

__attribute__((noinline)) void DriverAllocAndFree(size_t bytes) {
  CUdeviceptr p = 0;
  EXAMPLE_CHECK_CU(cuMemAlloc(&p, bytes));
  EXAMPLE_CHECK_CU(cuMemsetD8(p, 0, bytes));
  EXAMPLE_CHECK_CU(cuMemFree(p));
}

int main() {
  EXAMPLE_CHECK_CU(cuInit(0));
  CUdevice device;
  EXAMPLE_CHECK_CU(cuDeviceGet(&device, 0));
  CUcontext context;
  EXAMPLE_CHECK_CU(cuDevicePrimaryCtxRetain(&context, device));
  EXAMPLE_CHECK_CU(cuCtxSetCurrent(context));

  CUdeviceptr leaked[kLeakCount] = {};
  LeakDriverBuffers(leaked, kLeakCount, kLeakBytes);
  DriverAllocAndFree(kLeakBytes);
  EXAMPLE_CHECK_CU(cuCtxSynchronize());
  std::printf("leak_driver: leaked %d x %zu bytes with cuMemAlloc\n",
              kLeakCount, kLeakBytes);
  return 0;
}
