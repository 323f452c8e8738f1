// Context lifecycle: when CUDA destroys a context or resets a device, it frees
// every block made in it. Those blocks leave the live set (their addresses may
// come back) and are kept as leaks "released by <call>" — the program never
// freed them itself. See docs/leaks.md, "How a device reset counts".
#include "interpose/resolve/driver_hooks.h"

using gmt::InterceptScope;

namespace {

// The device of a context, asked before it is destroyed.
int DeviceOfContext(CUcontext ctx) {
  static gmt::RealSlot<PFN_cuCtxGetDevice_v13000> get_device_v2(
      "cuCtxGetDevice_v2", true);
  if (auto get = get_device_v2.Get()) {
    CUdevice device = 0;
    if (get(&device, ctx) == CUDA_SUCCESS) return static_cast<int>(device);
  }
  return gmt::kHostDevice;
}

}  // namespace

CUresult Shim_cuCtxDestroy_v2(CUcontext ctx) {
  auto real = gmt::g_real_cuCtxDestroy_v2.Get();
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  InterceptScope scope;
  if (!scope.Recording()) return real(ctx);
  const int device = DeviceOfContext(ctx);
  if (ctx != nullptr) {
    gmt::Engine::Get().BeforeContextTeardown(device,
                                             reinterpret_cast<uint64_t>(ctx));
  }
  CUresult result = real(ctx);
  if (result == CUDA_SUCCESS) {
    gmt::Engine::Get().OnContextTeardown(
        device, reinterpret_cast<uint64_t>(ctx), "cuCtxDestroy");
  }
  return result;
}

CUresult Shim_cuDevicePrimaryCtxReset_v2(CUdevice device) {
  auto real = gmt::g_real_cuDevicePrimaryCtxReset_v2.Get();
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  InterceptScope scope;
  if (!scope.Recording()) return real(device);
  gmt::Engine::Get().BeforeContextTeardown(static_cast<int>(device), 0);
  CUresult result = real(device);
  if (result == CUDA_SUCCESS) {
    gmt::Engine::Get().OnContextTeardown(static_cast<int>(device), 0,
                                         "cuDevicePrimaryCtxReset");
  }
  return result;
}

// Dropping the last reference to a primary context destroys it, and its memory
// with it. Whether that happened is read back from the driver.
CUresult Shim_cuDevicePrimaryCtxRelease_v2(CUdevice device) {
  auto real = gmt::g_real_cuDevicePrimaryCtxRelease_v2.Get();
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  InterceptScope scope;
  if (!scope.Recording()) return real(device);
  CUresult result = real(device);
  if (result != CUDA_SUCCESS) return result;
  static gmt::RealSlot<PFN_cuDevicePrimaryCtxGetState_v7000> get_state(
      "cuDevicePrimaryCtxGetState", true);
  unsigned int flags = 0;
  int active = 1;
  if (auto get = get_state.Get();
      get != nullptr && get(device, &flags, &active) == CUDA_SUCCESS &&
      active == 0) {
    gmt::Engine::Get().OnContextTeardown(static_cast<int>(device), 0,
                                         "cuDevicePrimaryCtxRelease");
  }
  return result;
}
