// Virtual memory management shims. Physical memory is a cuMemCreate handle;
// it is gone only after cuMemRelease *and* the unmap of its last mapping
// (the engine keeps that bookkeeping).
#include "interpose/alloc_shims.h"
#include "interpose/resolve/driver_hooks.h"

using gmt::Api;
using gmt::InterceptScope;

CUresult Shim_cuMemCreate(CUmemGenericAllocationHandle* handle, size_t size,
                          const CUmemAllocationProp* prop,
                          unsigned long long flags) {
  auto real = gmt::g_real_cuMemCreate.Get();
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  InterceptScope scope;
  if (!scope.Recording()) return real(handle, size, prop, flags);
  gmt::StackId stack = gmt::Engine::Get().CaptureCallStack();
  CUresult result = real(handle, size, prop, flags);
  if (result == CUDA_SUCCESS && handle != nullptr) {
    int device = -2;  // current context's device
    if (prop != nullptr && prop->location.type == CU_MEM_LOCATION_TYPE_DEVICE) {
      device = prop->location.id;
    }
    gmt::RecordAlloc(Api::kCuMemCreate, *handle, size, 0, stack, device);
  }
  return result;
}

CUresult Shim_cuMemRelease(CUmemGenericAllocationHandle handle) {
  auto real = gmt::g_real_cuMemRelease.Get();
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  return gmt::TrackedFree<CUresult>(Api::kCuMemRelease, handle,
                                    [&](uint64_t) { return real(handle); });
}

CUresult Shim_cuMemMap(CUdeviceptr ptr, size_t size, size_t offset,
                       CUmemGenericAllocationHandle handle,
                       unsigned long long flags) {
  auto real = gmt::g_real_cuMemMap.Get();
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  InterceptScope scope;
  CUresult result = real(ptr, size, offset, handle, flags);
  if (scope.Recording() && result == CUDA_SUCCESS) {
    gmt::Engine::Get().OnVmmMap(ptr, size, handle);
  }
  return result;
}

CUresult Shim_cuMemUnmap(CUdeviceptr ptr, size_t size) {
  auto real = gmt::g_real_cuMemUnmap.Get();
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  InterceptScope scope;
  CUresult result = real(ptr, size);
  if (scope.Recording() && result == CUDA_SUCCESS) {
    gmt::Engine::Get().OnVmmUnmap(ptr, size);
  }
  return result;
}

CUresult Shim_cuMemAddressReserve(CUdeviceptr* ptr, size_t size,
                                  size_t alignment, CUdeviceptr addr,
                                  unsigned long long flags) {
  auto real = gmt::g_real_cuMemAddressReserve.Get();
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  return gmt::TrackedAlloc<CUresult>(
      Api::kCuMemAddressReserve, ptr, size, 0,
      [&] { return real(ptr, size, alignment, addr, flags); });
}

CUresult Shim_cuMemAddressFree(CUdeviceptr ptr, size_t size) {
  auto real = gmt::g_real_cuMemAddressFree.Get();
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  return gmt::TrackedFree<CUresult>(Api::kCuMemAddressFree, ptr,
                                    [&](uint64_t) { return real(ptr, size); });
}
