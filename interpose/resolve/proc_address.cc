// Entry points that hand out driver function pointers: cuGetProcAddress (v1,
// v2, and its self-lookup) and cudaGetDriverEntryPoint(ByVersion)(_ptsz). The
// real answer is asked first; if it is a function we shim, the program gets
// our shim and the real pointer goes into that exact variant's slot.
//
// These are never gated by the reentrancy guard: cudart looks up the driver
// lazily, often from inside another intercepted call, and every pointer it
// gets must be the shim.
#include <cstring>

#include "interpose/resolve/driver_hooks.h"
#include "interpose/resolve/runtime_hooks.h"

namespace {

void WrapDriverPointer(const char* symbol, int cuda_version, uint64_t flags,
                       void** pfn) {
  if (pfn == nullptr || *pfn == nullptr || gmt::IsDriverShim(*pfn)) return;
  const gmt::DriverHook* hook =
      gmt::HookForProcAddress(symbol, cuda_version, flags);
  if (hook == nullptr) return;
  hook->store_real(*pfn);
  *pfn = hook->shim;
}

// The runtime's own CUDA version, the one cudaGetDriverEntryPoint asks for.
int RuntimeVersion() {
  static gmt::RealSlot<cudaError_t (*)(int*)> get("cudaRuntimeGetVersion",
                                                  false);
  int version = CUDA_VERSION;
  if (auto f = get.Get(); f == nullptr || f(&version) != cudaSuccess) {
    version = CUDA_VERSION;
  }
  return version;
}

}  // namespace

CUresult Shim_cuGetProcAddress(const char* symbol, void** pfn, int cuda_version,
                               cuuint64_t flags) {
  auto real = gmt::g_real_cuGetProcAddress.Get();
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  CUresult result = real(symbol, pfn, cuda_version, flags);
  if (result == CUDA_SUCCESS)
    WrapDriverPointer(symbol, cuda_version, flags, pfn);
  return result;
}

CUresult Shim_cuGetProcAddress_v2(const char* symbol, void** pfn,
                                  int cuda_version, cuuint64_t flags,
                                  CUdriverProcAddressQueryResult* status) {
  auto real = gmt::g_real_cuGetProcAddress_v2.Get();
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  CUresult result = real(symbol, pfn, cuda_version, flags, status);
  if (result == CUDA_SUCCESS &&
      (status == nullptr || *status == CU_GET_PROC_ADDRESS_SUCCESS)) {
    WrapDriverPointer(symbol, cuda_version, flags, pfn);
  }
  return result;
}

cudaError_t Shim_cudaGetDriverEntryPoint(
    const char* symbol, void** pfn, unsigned long long flags,
    cudaDriverEntryPointQueryResult* status) {
  auto real = gmt::g_real_cudaGetDriverEntryPoint.Get();
  if (real == nullptr) return cudaErrorInitializationError;
  cudaError_t result = real(symbol, pfn, flags, status);
  if (result == cudaSuccess) {
    WrapDriverPointer(symbol, RuntimeVersion(), flags, pfn);
  }
  return result;
}

cudaError_t Shim_cudaGetDriverEntryPoint_ptsz(
    const char* symbol, void** pfn, unsigned long long flags,
    cudaDriverEntryPointQueryResult* status) {
  auto real = gmt::g_real_cudaGetDriverEntryPoint_ptsz.Get();
  if (real == nullptr) return cudaErrorInitializationError;
  cudaError_t result = real(symbol, pfn, flags, status);
  // In the per-thread build of the program, "default" means per-thread.
  if (flags == cudaEnableDefault) flags = cudaEnablePerThreadDefaultStream;
  if (result == cudaSuccess) {
    WrapDriverPointer(symbol, RuntimeVersion(), flags, pfn);
  }
  return result;
}

cudaError_t Shim_cudaGetDriverEntryPointByVersion(
    const char* symbol, void** pfn, unsigned int cuda_version,
    unsigned long long flags, cudaDriverEntryPointQueryResult* status) {
  auto real = gmt::g_real_cudaGetDriverEntryPointByVersion.Get();
  if (real == nullptr) return cudaErrorInitializationError;
  cudaError_t result = real(symbol, pfn, cuda_version, flags, status);
  if (result == cudaSuccess) {
    WrapDriverPointer(symbol, static_cast<int>(cuda_version), flags, pfn);
  }
  return result;
}

cudaError_t Shim_cudaGetDriverEntryPointByVersion_ptsz(
    const char* symbol, void** pfn, unsigned int cuda_version,
    unsigned long long flags, cudaDriverEntryPointQueryResult* status) {
  auto real = gmt::g_real_cudaGetDriverEntryPointByVersion_ptsz.Get();
  if (real == nullptr) return cudaErrorInitializationError;
  cudaError_t result = real(symbol, pfn, cuda_version, flags, status);
  if (flags == cudaEnableDefault) flags = cudaEnablePerThreadDefaultStream;
  if (result == cudaSuccess) {
    WrapDriverPointer(symbol, static_cast<int>(cuda_version), flags, pfn);
  }
  return result;
}
