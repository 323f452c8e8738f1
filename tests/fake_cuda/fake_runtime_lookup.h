// For the fake runtime's guard-zone entry points (fake_runtime_guard_copies.cc,
// fake_runtime_launch_sync.cc): a driver entry point that the runtime's table
// (fake_runtime.h, DriverApi) does not hold, looked up the runtime's way —
// cuGetProcAddress with cudaVersion 13000 and the default or per-thread flag —
// on every call, so that a tool hooking cuGetProcAddress sees each lookup.
#ifndef GMT_TESTS_FAKE_CUDA_FAKE_RUNTIME_LOOKUP_H_
#define GMT_TESTS_FAKE_CUDA_FAKE_RUNTIME_LOOKUP_H_

#include <cstdint>

#include "tests/fake_cuda/fake_runtime.h"

namespace fake_cudart {

// Prepare()s the thread (driver loaded, context current) and finds `name`.
// cudaErrorNotSupported (recorded as the last error) when the driver lacks it.
template <typename Fn>
cudaError_t LookupDriver(const char* name, bool per_thread, Fn* fn) {
  const DriverApi* d = nullptr;
  if (cudaError_t e = Prepare(&d); e != cudaSuccess) return e;
  void* p = nullptr;
  CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  const cuuint64_t flags = per_thread
                               ? CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM
                               : CU_GET_PROC_ADDRESS_DEFAULT;
  if (d->get_proc_address(name, &p, kRuntimeVersion, flags, &status) !=
          CUDA_SUCCESS ||
      status != CU_GET_PROC_ADDRESS_SUCCESS || p == nullptr) {
    return Return(cudaErrorNotSupported);
  }
  *fn = reinterpret_cast<Fn>(p);
  return cudaSuccess;
}

inline CUdeviceptr DevicePointer(const void* p) {
  return static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(p));
}

}  // namespace fake_cudart

#endif  // GMT_TESTS_FAKE_CUDA_FAKE_RUNTIME_LOOKUP_H_
