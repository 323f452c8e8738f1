// leak_vmm: virtual memory management (cuMemCreate + cuMemAddressReserve +
// cuMemMap + cuMemSetAccess) whose physical allocation is never released.
//
// Expected report: one leak entry with api "cuMemCreate", kind
// "vmm-physical", count 1, device 0, bytes = 2 x the device's minimum
// allocation granularity (printed by the program; 4194304 on an H200 with a
// 2 MiB granularity), with LeakVmmMapping (leak_vmm.cu) in its stack. The
// address range is never unmapped or freed either, so the tool may also list
// an entry with api "cuMemAddressReserve", kind "vmm-reservation" (it does not
// count toward device usage). The handle that VmmCreateAndRelease creates and
// releases with cuMemRelease is not reported. No errors.
#include <cuda.h>

#include <cstdio>

#include "example_check.h"

CUmemAllocationProp DeviceProp(CUdevice device) {
  CUmemAllocationProp prop = {};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = device;
  return prop;
}

// Creates physical memory, maps it into a fresh address range and never
// releases any of it. Returns the mapped address.
__attribute__((noinline)) CUdeviceptr LeakVmmMapping(CUdevice device,
                                                     size_t bytes) {
  CUmemAllocationProp prop = DeviceProp(device);
  CUmemGenericAllocationHandle handle;
  EXAMPLE_CHECK_CU(cuMemCreate(&handle, bytes, &prop, 0));
  CUdeviceptr address = 0;
  EXAMPLE_CHECK_CU(cuMemAddressReserve(&address, bytes, 0, 0, 0));
  EXAMPLE_CHECK_CU(cuMemMap(address, bytes, 0, handle, 0));
  CUmemAccessDesc access = {};
  access.location = prop.location;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  EXAMPLE_CHECK_CU(cuMemSetAccess(address, bytes, &access, 1));
  return address;
}

__attribute__((noinline)) void VmmCreateAndRelease(CUdevice device,
                                                   size_t bytes) {
  CUmemAllocationProp prop = DeviceProp(device);
  CUmemGenericAllocationHandle handle;
  EXAMPLE_CHECK_CU(cuMemCreate(&handle, bytes, &prop, 0));
  EXAMPLE_CHECK_CU(cuMemRelease(handle));
}

int main() {
  EXAMPLE_CHECK_CU(cuInit(0));
  CUdevice device;
  EXAMPLE_CHECK_CU(cuDeviceGet(&device, 0));
  CUcontext context;
  EXAMPLE_CHECK_CU(cuDevicePrimaryCtxRetain(&context, device));
  EXAMPLE_CHECK_CU(cuCtxSetCurrent(context));

  CUmemAllocationProp prop = DeviceProp(device);
  size_t granularity = 0;
  EXAMPLE_CHECK_CU(cuMemGetAllocationGranularity(
      &granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
  const size_t bytes = 2 * granularity;

  CUdeviceptr address = LeakVmmMapping(device, bytes);
  EXAMPLE_CHECK_CU(cuMemsetD8(address, 0x7e, bytes));
  VmmCreateAndRelease(device, granularity);
  EXAMPLE_CHECK_CU(cuCtxSynchronize());
  std::printf("leak_vmm: leaked %zu bytes with cuMemCreate (granularity %zu)\n",
              bytes, granularity);
  return 0;
}
