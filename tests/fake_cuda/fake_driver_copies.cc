// Fake driver: the explicit-direction copies (HtoD, DtoH) and the
// stream-ordered sets that DriverDeviceOps uses, synchronous and "async"
// alike (the double finishes all work before returning). The device side of
// every copy or set must lie inside one known block or mapped range, as in the
// real driver: CUDA_ERROR_INVALID_VALUE otherwise. (fake_driver_guard_copies.cc
// has weak definitions of the same entry points with the same contract; these
// strong ones are kept.)
#include <cstring>

#include "tests/fake_cuda/fake_cupti_emit.h"
#include "tests/fake_cuda/fake_driver.h"

namespace {

using fake_cuda::CheckMemoryRange;

// One copy between host memory and `device`, which must be device (or
// pinned / mapped) memory.
CUresult Copy(uintptr_t device, void* host, size_t bytes, bool to_device,
              CUstream stream) {
  fake_cuda::Context* ctx = nullptr;
  if (CUresult r = fake_cuda::RequireContext(&ctx); r != CUDA_SUCCESS) return r;
  if (!fake_cuda::IsValidStream(stream)) return CUDA_ERROR_INVALID_HANDLE;
  if (bytes == 0) return CUDA_SUCCESS;
  if (device == 0 || host == nullptr) return CUDA_ERROR_INVALID_VALUE;
  // The host side may be pageable memory, but pinned memory the double knows
  // must hold the whole range too.
  if (CheckMemoryRange(device, bytes, /*need_device=*/true) != CUDA_SUCCESS ||
      CheckMemoryRange(reinterpret_cast<uintptr_t>(host), bytes,
                       /*need_device=*/false) != CUDA_SUCCESS) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  void* device_bytes = reinterpret_cast<void*>(device);
  if (to_device) {
    std::memmove(device_bytes, host, bytes);
  } else {
    std::memmove(host, device_bytes, bytes);
  }
  return CUDA_SUCCESS;
}

template <typename T>
CUresult Set(CUdeviceptr dst, T value, size_t count, CUstream stream) {
  fake_cuda::Context* ctx = nullptr;
  if (CUresult r = fake_cuda::RequireContext(&ctx); r != CUDA_SUCCESS) return r;
  if (!fake_cuda::IsValidStream(stream)) return CUDA_ERROR_INVALID_HANDLE;
  if (count == 0) return CUDA_SUCCESS;
  if (dst % sizeof(T) != 0 ||
      CheckMemoryRange(dst, count * sizeof(T), /*need_device=*/true) !=
          CUDA_SUCCESS) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  T* p = reinterpret_cast<T*>(dst);
  for (size_t i = 0; i < count; ++i) p[i] = value;
  return CUDA_SUCCESS;
}

}  // namespace

FAKE_CU_API(cuMemcpyHtoD_v2, (CUdeviceptr dst, const void* src, size_t bytes)) {
  return Copy(dst, const_cast<void*>(src), bytes, true, nullptr);
}

FAKE_CU_API(cuMemcpyDtoH_v2, (void* dst, CUdeviceptr src, size_t bytes)) {
  return Copy(src, dst, bytes, false, nullptr);
}

FAKE_CU_API(cuMemcpyHtoDAsync_v2,
            (CUdeviceptr dst, const void* src, size_t bytes, CUstream stream)) {
  fake_cuda::CheckCallFromLaunchCallback("cuMemcpyHtoDAsync_v2");
  return Copy(dst, const_cast<void*>(src), bytes, true, stream);
}

FAKE_CU_API(cuMemcpyDtoHAsync_v2,
            (void* dst, CUdeviceptr src, size_t bytes, CUstream stream)) {
  fake_cuda::CheckCallFromLaunchCallback("cuMemcpyDtoHAsync_v2");
  return Copy(src, dst, bytes, false, stream);
}

FAKE_CU_API(cuMemsetD8Async, (CUdeviceptr dst, unsigned char value,
                              size_t count, CUstream stream)) {
  fake_cuda::CheckCallFromLaunchCallback("cuMemsetD8Async");
  return Set<unsigned char>(dst, value, count, stream);
}

FAKE_CU_API(cuMemsetD32Async, (CUdeviceptr dst, unsigned int value,
                               size_t count, CUstream stream)) {
  return Set<unsigned int>(dst, value, count, stream);
}
