// Leaks one known block set per allocation API family, each from its own
// noinline function so the report's stack can be checked.
//
//   gmt_leak_program MODE      MODE: runtime driver async pinned managed vmm
//                                    vmm_released_mapped vmm_clean all
//
//   runtime   3 x cudaMalloc(4000) on device 1          (LeakRuntimeAllocation)
//   driver    2 x cuMemAlloc(5000) on device 0          (LeakDriverAllocation)
//   async     1 x cudaMallocAsync(6000) on device 0     (LeakAsyncAllocation)
//   pinned    1 x cudaMallocHost(7000)                  (LeakPinnedAllocation)
//   managed   1 x cudaMallocManaged(8000) on device 0   (LeakManagedAllocation)
//   vmm       cuMemCreate(2 MiB) mapped, never released (LeakVmmAllocation)
//   vmm_released_mapped  cuMemCreate(4 MiB), released but still mapped
//   vmm_clean            create, map, unmap, release, free: no leak
// Every mode also allocates and frees one cudaMalloc(999) block (not a leak).
#include <cstring>
#include <string>

#include "tests/interpose/programs/program_util.h"

constexpr size_t k2M = size_t{2} << 20;

NOINLINE void FreedAllocation() {
  void* p = nullptr;
  Rt("cudaMalloc(999)", cudaMalloc(&p, 999));
  Rt("cudaFree", cudaFree(p));
}

NOINLINE void LeakRuntimeAllocation() {
  Rt("cudaSetDevice(1)", cudaSetDevice(1));
  for (int i = 0; i < 3; ++i) {
    void* p = nullptr;
    Rt("cudaMalloc(4000)", cudaMalloc(&p, 4000));
  }
  Rt("cudaSetDevice(0)", cudaSetDevice(0));
}

NOINLINE void LeakDriverAllocation() {
  DriverSetup(0);
  for (int i = 0; i < 2; ++i) {
    CUdeviceptr p = 0;
    Cu("cuMemAlloc(5000)", cuMemAlloc(&p, 5000));
  }
  AfterCall();
}

NOINLINE void LeakAsyncAllocation() {
  void* p = nullptr;
  Rt("cudaMallocAsync(6000)", cudaMallocAsync(&p, 6000, nullptr));
  AfterCall();
}

NOINLINE void LeakPinnedAllocation() {
  void* p = nullptr;
  Rt("cudaMallocHost(7000)", cudaMallocHost(&p, 7000));
  std::memset(p, 0, 7000);
  AfterCall();
}

NOINLINE void LeakManagedAllocation() {
  void* p = nullptr;
  Rt("cudaMallocManaged(8000)",
     cudaMallocManaged(&p, 8000, cudaMemAttachGlobal));
  AfterCall();
}

// Physical memory of `bytes` mapped at a fresh reservation; returns the handle.
NOINLINE CUmemGenericAllocationHandle CreateAndMap(size_t bytes,
                                                   CUdeviceptr* va) {
  DriverSetup(0);
  CUmemAllocationProp prop = {};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = 0;
  CUmemGenericAllocationHandle handle = 0;
  Cu("cuMemCreate", cuMemCreate(&handle, bytes, &prop, 0));
  Cu("cuMemAddressReserve", cuMemAddressReserve(va, bytes, 0, 0, 0));
  Cu("cuMemMap", cuMemMap(*va, bytes, 0, handle, 0));
  CUmemAccessDesc access = {};
  access.location = prop.location;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  Cu("cuMemSetAccess", cuMemSetAccess(*va, bytes, &access, 1));
  std::memset(reinterpret_cast<void*>(*va), 1, 64);
  return handle;
}

NOINLINE void LeakVmmAllocation() {
  CUdeviceptr va = 0;
  CreateAndMap(k2M, &va);
  AfterCall();
}

NOINLINE void LeakVmmReleasedButMapped() {
  CUdeviceptr va = 0;
  CUmemGenericAllocationHandle handle = CreateAndMap(2 * k2M, &va);
  Cu("cuMemRelease", cuMemRelease(handle));
  AfterCall();
}

NOINLINE void VmmClean() {
  CUdeviceptr va = 0;
  CUmemGenericAllocationHandle handle = CreateAndMap(k2M, &va);
  Cu("cuMemUnmap", cuMemUnmap(va, k2M));
  Cu("cuMemRelease", cuMemRelease(handle));
  Cu("cuMemAddressFree", cuMemAddressFree(va, k2M));
}

int main(int argc, char** argv) {
  std::string mode = argc > 1 ? argv[1] : "all";
  bool all = mode == "all";
  FreedAllocation();
  if (all || mode == "runtime") LeakRuntimeAllocation();
  if (all || mode == "driver") LeakDriverAllocation();
  if (all || mode == "async") LeakAsyncAllocation();
  if (all || mode == "pinned") LeakPinnedAllocation();
  if (all || mode == "managed") LeakManagedAllocation();
  if (all || mode == "vmm") LeakVmmAllocation();
  if (mode == "vmm_released_mapped") LeakVmmReleasedButMapped();
  if (mode == "vmm_clean") VmmClean();
  std::printf("done\n");
  return 0;
}
