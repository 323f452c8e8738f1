// Fake runtime: finding the driver, contexts, devices, errors.
#include <dlfcn.h>

#include <mutex>

#include "tests/fake_cuda/fake_runtime.h"

namespace fake_cudart {
namespace {

constexpr int kMaxDevices = 16;

// Per-device runtime state: the primary context the runtime retained.
struct RuntimeState {
  std::mutex mu;
  bool retained[kMaxDevices] = {};
  CUcontext primary[kMaxDevices] = {};
};

RuntimeState& State() {
  static RuntimeState* const state = new RuntimeState();  // leaked on purpose
  return *state;
}

thread_local int t_device = 0;
thread_local cudaError_t t_last_error = cudaSuccess;

template <typename Fn>
bool Resolve(decltype(&::cuGetProcAddress_v2) get_proc, const char* name,
             cuuint64_t flags, Fn* out) {
  void* fn = nullptr;
  CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  if (get_proc(name, &fn, kRuntimeVersion, flags, &status) != CUDA_SUCCESS ||
      status != CU_GET_PROC_ADDRESS_SUCCESS || fn == nullptr) {
    return false;
  }
  *out = reinterpret_cast<Fn>(fn);
  return true;
}

DriverApi* LoadDriver() {
  void* handle = dlopen("libcuda.so.1", RTLD_NOW);
  if (handle == nullptr) return nullptr;
  auto bootstrap = reinterpret_cast<decltype(&::cuGetProcAddress_v2)>(
      dlsym(handle, "cuGetProcAddress_v2"));
  if (bootstrap == nullptr) return nullptr;
  auto* d = new DriverApi();
  constexpr cuuint64_t kDefault = CU_GET_PROC_ADDRESS_DEFAULT;
  constexpr cuuint64_t kPerThread =
      CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
  // The real runtime looks cuGetProcAddress up through itself, then uses what
  // it got for everything else.
  bool ok =
      Resolve(bootstrap, "cuGetProcAddress", kDefault, &d->get_proc_address);
  auto get = d->get_proc_address;
  ok = ok && Resolve(get, "cuInit", kDefault, &d->init) &&
       Resolve(get, "cuDriverGetVersion", kDefault, &d->driver_get_version) &&
       Resolve(get, "cuDeviceGetCount", kDefault, &d->device_get_count) &&
       Resolve(get, "cuCtxGetCurrent", kDefault, &d->ctx_get_current) &&
       Resolve(get, "cuCtxSetCurrent", kDefault, &d->ctx_set_current) &&
       Resolve(get, "cuCtxSynchronize", kDefault, &d->ctx_synchronize) &&
       Resolve(get, "cuDevicePrimaryCtxRetain", kDefault,
               &d->primary_ctx_retain) &&
       Resolve(get, "cuDevicePrimaryCtxReset", kDefault,
               &d->primary_ctx_reset) &&
       Resolve(get, "cuMemAlloc", kDefault, &d->mem_alloc) &&
       Resolve(get, "cuMemAllocPitch", kDefault, &d->mem_alloc_pitch) &&
       Resolve(get, "cuMemAllocManaged", kDefault, &d->mem_alloc_managed) &&
       Resolve(get, "cuStreamAttachMemAsync", kDefault,
               &d->stream_attach_mem_async) &&
       Resolve(get, "cuMemFree", kDefault, &d->mem_free) &&
       Resolve(get, "cuMemAllocAsync", kDefault, &d->mem_alloc_async) &&
       Resolve(get, "cuMemAllocAsync", kPerThread, &d->mem_alloc_async_ptsz) &&
       Resolve(get, "cuMemAllocFromPoolAsync", kDefault,
               &d->mem_alloc_from_pool_async) &&
       Resolve(get, "cuMemAllocFromPoolAsync", kPerThread,
               &d->mem_alloc_from_pool_async_ptsz) &&
       Resolve(get, "cuMemFreeAsync", kDefault, &d->mem_free_async) &&
       Resolve(get, "cuMemFreeAsync", kPerThread, &d->mem_free_async_ptsz) &&
       Resolve(get, "cuDeviceGetDefaultMemPool", kDefault,
               &d->device_get_default_mem_pool) &&
       Resolve(get, "cuMemPoolGetAttribute", kDefault,
               &d->mem_pool_get_attribute) &&
       Resolve(get, "cuMemPoolTrimTo", kDefault, &d->mem_pool_trim_to) &&
       Resolve(get, "cuMemPoolSetAttribute", kDefault,
               &d->mem_pool_set_attribute) &&
       Resolve(get, "cuMemHostAlloc", kDefault, &d->mem_host_alloc) &&
       Resolve(get, "cuMemAllocHost", kDefault, &d->mem_alloc_host) &&
       Resolve(get, "cuMemFreeHost", kDefault, &d->mem_free_host) &&
       Resolve(get, "cuMemHostRegister", kDefault, &d->mem_host_register) &&
       Resolve(get, "cuMemHostUnregister", kDefault, &d->mem_host_unregister) &&
       Resolve(get, "cuArrayCreate", kDefault, &d->array_create) &&
       Resolve(get, "cuArrayDestroy", kDefault, &d->array_destroy) &&
       Resolve(get, "cuMemGetInfo", kDefault, &d->mem_get_info) &&
       Resolve(get, "cuMemcpy", kDefault, &d->mem_copy) &&
       Resolve(get, "cuMemsetD8", kDefault, &d->memset_d8);
  if (!ok) {
    delete d;
    return nullptr;
  }
  return d;
}

// Binds the primary context of `device` to the calling thread, retaining it
// the first time (and again after cudaDeviceReset).
CUresult BindPrimary(const DriverApi* d, int device) {
  RuntimeState& s = State();
  CUcontext ctx = nullptr;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    if (!s.retained[device]) {
      if (CUresult r = d->primary_ctx_retain(&s.primary[device], device);
          r != CUDA_SUCCESS) {
        return r;
      }
      s.retained[device] = true;
    }
    ctx = s.primary[device];
  }
  return d->ctx_set_current(ctx);
}

// cuInit once per process; its result is remembered like the real runtime's.
CUresult InitOnce(const DriverApi* d) {
  static const CUresult result = d->init(0);
  return result;
}

}  // namespace

const DriverApi* Driver() {
  static const DriverApi* const driver = LoadDriver();
  return driver;
}

cudaError_t ToRuntimeError(CUresult result) {
  switch (result) {
    case CUDA_SUCCESS:
      return cudaSuccess;
    case CUDA_ERROR_INVALID_VALUE:
      return cudaErrorInvalidValue;
    case CUDA_ERROR_OUT_OF_MEMORY:
      return cudaErrorMemoryAllocation;
    case CUDA_ERROR_NOT_INITIALIZED:
      return cudaErrorInitializationError;
    case CUDA_ERROR_NO_DEVICE:
      return cudaErrorNoDevice;
    case CUDA_ERROR_INVALID_DEVICE:
      return cudaErrorInvalidDevice;
    case CUDA_ERROR_INVALID_CONTEXT:
      return cudaErrorDeviceUninitialized;
    case CUDA_ERROR_INVALID_HANDLE:
      return cudaErrorInvalidResourceHandle;
    case CUDA_ERROR_NOT_FOUND:
      return cudaErrorSymbolNotFound;
    case CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED:
      return cudaErrorHostMemoryAlreadyRegistered;
    case CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED:
      return cudaErrorHostMemoryNotRegistered;
    case CUDA_ERROR_NOT_SUPPORTED:
      return cudaErrorNotSupported;
    // Planted sticky faults (fake_sticky_error.h): the same numbers.
    case CUDA_ERROR_ILLEGAL_ADDRESS:
      return cudaErrorIllegalAddress;
    case CUDA_ERROR_LAUNCH_FAILED:
      return cudaErrorLaunchFailure;
    default:
      return cudaErrorUnknown;
  }
}

cudaError_t Return(cudaError_t error) {
  if (error != cudaSuccess) t_last_error = error;
  return error;
}

cudaError_t Prepare(const DriverApi** api) {
  const DriverApi* d = Driver();
  if (d == nullptr) return Return(cudaErrorInsufficientDriver);
  if (CUresult r = InitOnce(d); r != CUDA_SUCCESS) return Return(r);
  CUcontext current = nullptr;
  if (CUresult r = d->ctx_get_current(&current); r != CUDA_SUCCESS) {
    return Return(r);
  }
  bool rebind = current == nullptr;
  if (!rebind) {
    // Our primary context after cudaDeviceReset: retain it again.
    RuntimeState& s = State();
    std::lock_guard<std::mutex> lock(s.mu);
    rebind = current == s.primary[t_device] && !s.retained[t_device];
  }
  if (rebind) {
    if (CUresult r = BindPrimary(d, t_device); r != CUDA_SUCCESS) {
      return Return(r);
    }
  }
  *api = d;
  return cudaSuccess;
}

}  // namespace fake_cudart

using fake_cudart::Driver;
using fake_cudart::DriverApi;
using fake_cudart::Prepare;
using fake_cudart::Return;

FAKE_CUDART_API(cudaGetDeviceCount, (int* count)) {
  const DriverApi* d = Driver();
  if (d == nullptr) return Return(cudaErrorInsufficientDriver);
  if (count == nullptr) return Return(cudaErrorInvalidValue);
  if (CUresult r = fake_cudart::InitOnce(d); r != CUDA_SUCCESS) {
    return Return(r);
  }
  return Return(d->device_get_count(count));
}

FAKE_CUDART_API(cudaSetDevice, (int device)) {
  int count = 0;
  if (cudaError_t e = Fake_cudaGetDeviceCount(&count); e != cudaSuccess) {
    return e;
  }
  if (device < 0 || device >= count || device >= fake_cudart::kMaxDevices) {
    return Return(cudaErrorInvalidDevice);
  }
  fake_cudart::t_device = device;
  return Return(fake_cudart::BindPrimary(Driver(), device));
}

FAKE_CUDART_API(cudaGetDevice, (int* device)) {
  if (device == nullptr) return Return(cudaErrorInvalidValue);
  *device = fake_cudart::t_device;
  return cudaSuccess;
}

FAKE_CUDART_API(cudaDeviceSynchronize, ()) {
  const DriverApi* d = nullptr;
  if (cudaError_t e = Prepare(&d); e != cudaSuccess) return e;
  return Return(d->ctx_synchronize(nullptr));
}

// Destroys every allocation of the current device's primary context (through
// cuDevicePrimaryCtxReset_v2); the next runtime call retains it again.
FAKE_CUDART_API(cudaDeviceReset, ()) {
  const DriverApi* d = nullptr;
  if (cudaError_t e = Prepare(&d); e != cudaSuccess) return e;
  int device = fake_cudart::t_device;
  CUresult r = d->primary_ctx_reset(device);
  if (r == CUDA_SUCCESS) {
    std::lock_guard<std::mutex> lock(fake_cudart::State().mu);
    fake_cudart::State().retained[device] = false;
  }
  return Return(r);
}

FAKE_CUDART_API(cudaGetLastError, ()) {
  cudaError_t e = fake_cudart::t_last_error;
  fake_cudart::t_last_error = cudaSuccess;
  return e;
}

FAKE_CUDART_API(cudaPeekAtLastError, ()) { return fake_cudart::t_last_error; }

FAKE_CUDART_API(cudaDriverGetVersion, (int* version)) {
  if (version == nullptr) return Return(cudaErrorInvalidValue);
  const DriverApi* d = Driver();
  if (d == nullptr) {
    *version = 0;
    return cudaSuccess;
  }
  return Return(d->driver_get_version(version));
}

FAKE_CUDART_API(cudaRuntimeGetVersion, (int* version)) {
  if (version == nullptr) return Return(cudaErrorInvalidValue);
  *version = fake_cudart::kRuntimeVersion;
  return cudaSuccess;
}
