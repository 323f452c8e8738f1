// Contexts that take their memory with them.
//
//   gmt_context_program MODE   MODE: ctx_destroy primary_release
//                                    vmm_after_destroy
//
//   ctx_destroy      cuCtxCreate, cuMemAlloc(1500) (LeakInCreatedContext),
//                    cuCtxDestroy; then a new context allocates and frees
//                    1500 bytes again (the driver may hand out the same
//                    address)
//   primary_release  cuDevicePrimaryCtxRetain, cuMemAlloc(1700)
//                    (LeakBeforePrimaryRelease), cuDevicePrimaryCtxRelease: the
//                    last reference, so the driver destroys the context and its
//                    memory; then retain again, allocate and free 1700 bytes
//   vmm_after_destroy  a VMM reservation and a physical allocation mapped
//                    into it in a created context; cuCtxDestroy; then the
//                    program unmaps, releases and frees the reservation, as
//                    it may: both belong to the process, not the context
#include <string>

#include "tests/interpose/programs/program_util.h"

NOINLINE void LeakInCreatedContext() {
  CUdeviceptr p = 0;
  Cu("cuMemAlloc(1500)", cuMemAlloc(&p, 1500));
  AfterCall();
}

NOINLINE void AllocAndFree(size_t bytes) {
  CUdeviceptr p = 0;
  Cu("cuMemAlloc", cuMemAlloc(&p, bytes));
  Cu("cuMemFree", cuMemFree(p));
}

NOINLINE void CtxDestroy() {
  Cu("cuInit", cuInit(0));
  CUcontext ctx = nullptr;
  Cu("cuCtxCreate", cuCtxCreate(&ctx, nullptr, 0, 0));
  LeakInCreatedContext();
  Cu("cuCtxDestroy", cuCtxDestroy(ctx));
  Cu("cuCtxCreate", cuCtxCreate(&ctx, nullptr, 0, 0));
  AllocAndFree(1500);
  Cu("cuCtxDestroy", cuCtxDestroy(ctx));
}

NOINLINE void LeakBeforePrimaryRelease() {
  CUdeviceptr p = 0;
  Cu("cuMemAlloc(1700)", cuMemAlloc(&p, 1700));
  AfterCall();
}

NOINLINE void PrimaryRelease() {
  DriverSetup(0);
  LeakBeforePrimaryRelease();
  Cu("cuDevicePrimaryCtxRelease", cuDevicePrimaryCtxRelease(0));
  DriverSetup(0);
  AllocAndFree(1700);
}

NOINLINE void VmmAfterDestroy() {
  Cu("cuInit", cuInit(0));
  CUcontext ctx = nullptr;
  Cu("cuCtxCreate", cuCtxCreate(&ctx, nullptr, 0, 0));
  CUmemAllocationProp prop = {};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = 0;
  size_t granularity = 0;
  Cu("cuMemGetAllocationGranularity",
     cuMemGetAllocationGranularity(&granularity, &prop,
                                   CU_MEM_ALLOC_GRANULARITY_MINIMUM));
  const size_t bytes = granularity * 2;
  CUdeviceptr va = 0;
  Cu("cuMemAddressReserve", cuMemAddressReserve(&va, bytes * 2, 0, 0, 0));
  CUmemGenericAllocationHandle handle = 0;
  Cu("cuMemCreate", cuMemCreate(&handle, bytes, &prop, 0));
  Cu("cuMemMap", cuMemMap(va, bytes, 0, handle, 0));
  Cu("cuCtxDestroy", cuCtxDestroy(ctx));
  Cu("cuMemUnmap", cuMemUnmap(va, bytes));
  Cu("cuMemRelease", cuMemRelease(handle));
  Cu("cuMemAddressFree", cuMemAddressFree(va, bytes * 2));
}

int main(int argc, char** argv) {
  std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "ctx_destroy") {
    CtxDestroy();
  } else if (mode == "primary_release") {
    PrimaryRelease();
  } else if (mode == "vmm_after_destroy") {
    VmmAfterDestroy();
  } else {
    std::fprintf(stderr, "unknown mode '%s'\n", mode.c_str());
    return 2;
  }
  std::printf("done\n");
  return 0;
}
