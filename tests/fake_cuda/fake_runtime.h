// Internal pieces of the fake CUDA runtime (libcudart.so.13 test double and
// the fake_cudart_static archive built from the same sources).
//
// Like the real libcudart, the fake runtime never links libcuda: on first use
// it does dlopen("libcuda.so.1", RTLD_NOW), dlsym(handle,
// "cuGetProcAddress_v2"), asks that function for itself ("cuGetProcAddress")
// and then for every driver entry point it uses, with cudaVersion = 13000 and
// CU_GET_PROC_ADDRESS_DEFAULT (CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM
// for the _ptsz runtime variants). A tool that hooks dlsym and cuGetProcAddress
// therefore sees every driver call the runtime makes, exactly as with the real
// runtime.
#ifndef GMT_TESTS_FAKE_CUDA_FAKE_RUNTIME_H_
#define GMT_TESTS_FAKE_CUDA_FAKE_RUNTIME_H_

#include <cuda.h>
#include <cuda_runtime_api.h>

// Export visibility: the shared libcudart exports the runtime API; the static
// flavour (FAKE_CUDART_STATIC) keeps it hidden so that a program linking it
// does not export cudaMalloc & co. to an LD_PRELOADed interposer.
#if defined(FAKE_CUDART_STATIC)
#define FAKE_CUDART_VISIBILITY __attribute__((visibility("hidden")))
#else
#define FAKE_CUDART_VISIBILITY __attribute__((visibility("default")))
#endif

// Defines a runtime entry point under its real symbol name (see FAKE_CU_API in
// fake_driver.h for why the C++ name differs):
//
//   FAKE_CUDART_API(cudaMalloc, (void** ptr, size_t bytes)) { ... }
#define FAKE_CUDART_API(name, params)                                       \
  extern "C" FAKE_CUDART_VISIBILITY cudaError_t Fake_##name params __asm__( \
      #name);                                                               \
  extern "C" cudaError_t Fake_##name params

namespace fake_cudart {

// The CUDA version this runtime asks the driver for.
inline constexpr int kRuntimeVersion = 13000;

// Driver entry points as cuGetProcAddress returned them. Types are those of
// the variant chosen at cudaVersion 13000 (cuCtxSynchronize and cuCtxGetDevice
// resolve to their CUDA 13 "_v2" forms, which take a context argument).
struct DriverApi {
  decltype(&::cuGetProcAddress_v2) get_proc_address = nullptr;
  decltype(&::cuInit) init = nullptr;
  decltype(&::cuDriverGetVersion) driver_get_version = nullptr;
  decltype(&::cuDeviceGetCount) device_get_count = nullptr;
  decltype(&::cuCtxGetCurrent) ctx_get_current = nullptr;
  decltype(&::cuCtxSetCurrent) ctx_set_current = nullptr;
  decltype(&::cuCtxSynchronize_v2) ctx_synchronize = nullptr;
  decltype(&::cuDevicePrimaryCtxRetain) primary_ctx_retain = nullptr;
  decltype(&::cuDevicePrimaryCtxReset_v2) primary_ctx_reset = nullptr;
  decltype(&::cuMemAlloc_v2) mem_alloc = nullptr;
  decltype(&::cuMemAllocPitch_v2) mem_alloc_pitch = nullptr;
  decltype(&::cuMemAllocManaged) mem_alloc_managed = nullptr;
  decltype(&::cuStreamAttachMemAsync) stream_attach_mem_async = nullptr;
  decltype(&::cuMemFree_v2) mem_free = nullptr;
  decltype(&::cuMemAllocAsync) mem_alloc_async = nullptr;
  decltype(&::cuMemAllocAsync) mem_alloc_async_ptsz = nullptr;
  decltype(&::cuMemAllocFromPoolAsync) mem_alloc_from_pool_async = nullptr;
  decltype(&::cuMemAllocFromPoolAsync) mem_alloc_from_pool_async_ptsz = nullptr;
  decltype(&::cuMemFreeAsync) mem_free_async = nullptr;
  decltype(&::cuMemFreeAsync) mem_free_async_ptsz = nullptr;
  decltype(&::cuDeviceGetDefaultMemPool) device_get_default_mem_pool = nullptr;
  decltype(&::cuMemPoolGetAttribute) mem_pool_get_attribute = nullptr;
  decltype(&::cuMemPoolTrimTo) mem_pool_trim_to = nullptr;
  decltype(&::cuMemPoolSetAttribute) mem_pool_set_attribute = nullptr;
  decltype(&::cuMemHostAlloc) mem_host_alloc = nullptr;
  decltype(&::cuMemAllocHost_v2) mem_alloc_host = nullptr;
  decltype(&::cuMemFreeHost) mem_free_host = nullptr;
  decltype(&::cuMemHostRegister_v2) mem_host_register = nullptr;
  decltype(&::cuMemHostUnregister) mem_host_unregister = nullptr;
  decltype(&::cuArrayCreate_v2) array_create = nullptr;
  decltype(&::cuArrayDestroy) array_destroy = nullptr;
  decltype(&::cuMemGetInfo_v2) mem_get_info = nullptr;
  decltype(&::cuMemcpy) mem_copy = nullptr;
  decltype(&::cuMemsetD8_v2) memset_d8 = nullptr;
};

// The driver table, loaded on first use; null when libcuda.so.1 cannot be
// loaded or lacks an entry point (calls then fail with
// cudaErrorInsufficientDriver).
const DriverApi* Driver();

// The error the real runtime reports for a driver result.
cudaError_t ToRuntimeError(CUresult result);

// Records a failure as the thread's last error (cudaGetLastError) and returns
// it unchanged.
cudaError_t Return(cudaError_t error);
inline cudaError_t Return(CUresult result) {
  return Return(ToRuntimeError(result));
}

// What every runtime call that needs a device does first: loads the driver,
// cuInit, and makes sure the thread has a current context (the primary context
// of the thread's device, retained once) unless the program set one itself.
// On success *api is the driver table.
cudaError_t Prepare(const DriverApi** api);

}  // namespace fake_cudart

#endif  // GMT_TESTS_FAKE_CUDA_FAKE_RUNTIME_H_
