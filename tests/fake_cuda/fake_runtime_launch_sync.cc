// Fake runtime: kernel and graph launches, kernel names, synchronizing calls
// and IPC memory handles, each through the driver entry point the real
// runtime uses, found through cuGetProcAddress (fake_runtime_lookup.h); the
// _ptsz variants ask for the driver's per-thread variant.
//
// A runtime kernel handle (`func`, a host stub in a real program) is, in the
// double, the same thing as a driver one: a pointer to the kernel's name (see
// fake_driver_launch_sync.cc). cudaLaunchKernel(func) is
// cuLaunchKernel((CUfunction)func), cudaFuncGetName is cuFuncGetName,
// cudaFuncGetParamInfo is cuFuncGetParamInfo and cudaGetFuncBySymbol gives
// the handle back.
//
// Defined weak (fake_weak.h): where another file of the double defines the
// same entry point, that one is kept.
#include <cudaTypedefs.h>

#include <cstring>

#include "tests/fake_cuda/fake_runtime.h"
#include "tests/fake_cuda/fake_runtime_lookup.h"
#include "tests/fake_cuda/fake_weak.h"

using fake_cudart::DevicePointer;
using fake_cudart::LookupDriver;
using fake_cudart::Return;

namespace {

CUfunction AsFunction(const void* func) {
  return static_cast<CUfunction>(const_cast<void*>(func));
}

cudaError_t Launch(bool per_thread, const void* func, dim3 grid, dim3 block,
                   void** args, size_t shared_bytes, cudaStream_t stream) {
  PFN_cuLaunchKernel_v4000 launch = nullptr;
  if (cudaError_t e = LookupDriver("cuLaunchKernel", per_thread, &launch);
      e != cudaSuccess) {
    return e;
  }
  return Return(launch(AsFunction(func), grid.x, grid.y, grid.z, block.x,
                       block.y, block.z,
                       static_cast<unsigned int>(shared_bytes),
                       static_cast<CUstream>(stream), args, nullptr));
}

cudaError_t LaunchCooperative(bool per_thread, const void* func, dim3 grid,
                              dim3 block, void** args, size_t shared_bytes,
                              cudaStream_t stream) {
  PFN_cuLaunchCooperativeKernel_v9000 launch = nullptr;
  if (cudaError_t e =
          LookupDriver("cuLaunchCooperativeKernel", per_thread, &launch);
      e != cudaSuccess) {
    return e;
  }
  return Return(launch(AsFunction(func), grid.x, grid.y, grid.z, block.x,
                       block.y, block.z,
                       static_cast<unsigned int>(shared_bytes),
                       static_cast<CUstream>(stream), args));
}

// Launch attributes are not translated (the double has none to honour).
cudaError_t LaunchEx(bool per_thread, const cudaLaunchConfig_t* config,
                     const void* func, void** args) {
  if (config == nullptr) return Return(cudaErrorInvalidValue);
  PFN_cuLaunchKernelEx_v11060 launch = nullptr;
  if (cudaError_t e = LookupDriver("cuLaunchKernelEx", per_thread, &launch);
      e != cudaSuccess) {
    return e;
  }
  CUlaunchConfig c{};
  c.gridDimX = config->gridDim.x;
  c.gridDimY = config->gridDim.y;
  c.gridDimZ = config->gridDim.z;
  c.blockDimX = config->blockDim.x;
  c.blockDimY = config->blockDim.y;
  c.blockDimZ = config->blockDim.z;
  c.sharedMemBytes = static_cast<unsigned int>(config->dynamicSmemBytes);
  c.hStream = static_cast<CUstream>(config->stream);
  return Return(launch(&c, AsFunction(func), args, nullptr));
}

cudaError_t GraphLaunch(bool per_thread, cudaGraphExec_t exec,
                        cudaStream_t stream) {
  PFN_cuGraphLaunch_v10000 launch = nullptr;
  if (cudaError_t e = LookupDriver("cuGraphLaunch", per_thread, &launch);
      e != cudaSuccess) {
    return e;
  }
  return Return(launch(reinterpret_cast<CUgraphExec>(exec),
                       static_cast<CUstream>(stream)));
}

cudaError_t StreamSynchronize(bool per_thread, cudaStream_t stream) {
  PFN_cuStreamSynchronize_v2000 sync = nullptr;
  if (cudaError_t e = LookupDriver("cuStreamSynchronize", per_thread, &sync);
      e != cudaSuccess) {
    return e;
  }
  return Return(sync(static_cast<CUstream>(stream)));
}

}  // namespace

// ---- Launches ---------------------------------------------------------------

FAKE_CUDART_API_WEAK(cudaLaunchKernel,
                     (const void* func, dim3 grid, dim3 block, void** args,
                      size_t shared_bytes, cudaStream_t stream)) {
  return Launch(false, func, grid, block, args, shared_bytes, stream);
}

FAKE_CUDART_API_WEAK(cudaLaunchKernel_ptsz,
                     (const void* func, dim3 grid, dim3 block, void** args,
                      size_t shared_bytes, cudaStream_t stream)) {
  return Launch(true, func, grid, block, args, shared_bytes, stream);
}

FAKE_CUDART_API_WEAK(cudaLaunchKernelExC, (const cudaLaunchConfig_t* config,
                                           const void* func, void** args)) {
  return LaunchEx(false, config, func, args);
}

FAKE_CUDART_API_WEAK(cudaLaunchKernelExC_ptsz,
                     (const cudaLaunchConfig_t* config, const void* func,
                      void** args)) {
  return LaunchEx(true, config, func, args);
}

FAKE_CUDART_API_WEAK(cudaLaunchCooperativeKernel,
                     (const void* func, dim3 grid, dim3 block, void** args,
                      size_t shared_bytes, cudaStream_t stream)) {
  return LaunchCooperative(false, func, grid, block, args, shared_bytes,
                           stream);
}

FAKE_CUDART_API_WEAK(cudaLaunchCooperativeKernel_ptsz,
                     (const void* func, dim3 grid, dim3 block, void** args,
                      size_t shared_bytes, cudaStream_t stream)) {
  return LaunchCooperative(true, func, grid, block, args, shared_bytes, stream);
}

FAKE_CUDART_API_WEAK(cudaGraphLaunch,
                     (cudaGraphExec_t exec, cudaStream_t stream)) {
  return GraphLaunch(false, exec, stream);
}

FAKE_CUDART_API_WEAK(cudaGraphLaunch_ptsz,
                     (cudaGraphExec_t exec, cudaStream_t stream)) {
  return GraphLaunch(true, exec, stream);
}

FAKE_CUDART_API_WEAK(cudaFuncGetName, (const char** name, const void* func)) {
  PFN_cuFuncGetName_v12030 get = nullptr;
  if (cudaError_t e = LookupDriver("cuFuncGetName", false, &get);
      e != cudaSuccess) {
    return e;
  }
  return Return(get(name, AsFunction(func)));
}

// ---- Kernel parameters ------------------------------------------------------
// The layout is the driver's (fake_driver_kernel_params.cc).

FAKE_CUDART_API_WEAK(cudaFuncGetParamInfo, (const void* func, size_t index,
                                            size_t* offset, size_t* size)) {
  PFN_cuFuncGetParamInfo_v12040 get = nullptr;
  if (cudaError_t e = LookupDriver("cuFuncGetParamInfo", false, &get);
      e != cudaSuccess) {
    return e;
  }
  return Return(get(AsFunction(func), index, offset, size));
}

// The double's host stub is its function handle.
FAKE_CUDART_API_WEAK(cudaGetFuncBySymbol,
                     (cudaFunction_t * function, const void* symbol)) {
  if (function == nullptr) return Return(cudaErrorInvalidValue);
  if (symbol == nullptr) return Return(cudaErrorInvalidDeviceFunction);
  *function = static_cast<cudaFunction_t>(const_cast<void*>(symbol));
  return cudaSuccess;
}

// ---- Synchronizing calls ----------------------------------------------------
// cudaDeviceSynchronize is in fake_runtime_driver.cc.

FAKE_CUDART_API_WEAK(cudaStreamSynchronize, (cudaStream_t stream)) {
  return StreamSynchronize(false, stream);
}

FAKE_CUDART_API_WEAK(cudaStreamSynchronize_ptsz, (cudaStream_t stream)) {
  return StreamSynchronize(true, stream);
}

FAKE_CUDART_API_WEAK(cudaEventSynchronize, (cudaEvent_t event)) {
  PFN_cuEventSynchronize_v2000 sync = nullptr;
  if (cudaError_t e = LookupDriver("cuEventSynchronize", false, &sync);
      e != cudaSuccess) {
    return e;
  }
  return Return(sync(reinterpret_cast<CUevent>(event)));
}

// ---- IPC memory handles -----------------------------------------------------

static_assert(sizeof(cudaIpcMemHandle_t) == sizeof(CUipcMemHandle));

FAKE_CUDART_API_WEAK(cudaIpcGetMemHandle,
                     (cudaIpcMemHandle_t * handle, void* ptr)) {
  PFN_cuIpcGetMemHandle_v4010 get = nullptr;
  if (cudaError_t e = LookupDriver("cuIpcGetMemHandle", false, &get);
      e != cudaSuccess) {
    return e;
  }
  if (handle == nullptr) return Return(cudaErrorInvalidValue);
  CUipcMemHandle h{};
  CUresult r = get(&h, DevicePointer(ptr));
  if (r == CUDA_SUCCESS) std::memcpy(handle, &h, sizeof(h));
  return Return(r);
}

FAKE_CUDART_API_WEAK(cudaIpcOpenMemHandle,
                     (void** ptr, cudaIpcMemHandle_t handle,
                      unsigned int flags)) {
  PFN_cuIpcOpenMemHandle_v11000 open = nullptr;
  if (cudaError_t e = LookupDriver("cuIpcOpenMemHandle", false, &open);
      e != cudaSuccess) {
    return e;
  }
  if (ptr == nullptr) return Return(cudaErrorInvalidValue);
  CUipcMemHandle h{};
  std::memcpy(&h, &handle, sizeof(h));
  CUdeviceptr p = 0;
  CUresult r = open(&p, h, flags);
  if (r == CUDA_SUCCESS) *ptr = reinterpret_cast<void*>(p);
  return Return(r);
}

FAKE_CUDART_API_WEAK(cudaIpcCloseMemHandle, (void* ptr)) {
  PFN_cuIpcCloseMemHandle_v4010 close = nullptr;
  if (cudaError_t e = LookupDriver("cuIpcCloseMemHandle", false, &close);
      e != cudaSuccess) {
    return e;
  }
  return Return(close(DevicePointer(ptr)));
}
