// Fake runtime: the allocation API, each call implemented through the driver
// entry point the real runtime uses (cudaMalloc -> cuMemAlloc_v2,
// cudaMallocHost -> cuMemAllocHost_v2, cudaMalloc3D -> cuMemAllocPitch_v2,
// ...), so that a tool sees a runtime call reach the driver, as with the real
// runtime.

#include "tests/fake_cuda/fake_runtime.h"

using fake_cudart::DriverApi;
using fake_cudart::Prepare;
using fake_cudart::Return;

namespace {

// Element size passed to cuMemAllocPitch by cudaMallocPitch / cudaMalloc3D.
constexpr unsigned int kPitchElementBytes = 16;

CUdeviceptr ToDevice(const void* p) { return reinterpret_cast<CUdeviceptr>(p); }

// Runs `alloc(&device_pointer)` and stores the result in *out on success.
template <typename Alloc>
cudaError_t AllocInto(void** out, Alloc&& alloc) {
  CUdeviceptr p = 0;
  CUresult r = alloc(&p);
  // Out of memory nulls the pointer, as the real runtime does (measured).
  if (r == CUDA_SUCCESS || r == CUDA_ERROR_OUT_OF_MEMORY) {
    *out = reinterpret_cast<void*>(p);
  }
  return Return(r);
}

}  // namespace

// ---- Device and managed memory ----------------------------------------------

// Like the real runtime, a zero-byte request succeeds with a null pointer and
// never reaches the driver.
FAKE_CUDART_API(cudaMalloc, (void** ptr, size_t bytes)) {
  const DriverApi* d = nullptr;
  if (cudaError_t e = Prepare(&d); e != cudaSuccess) return e;
  if (ptr == nullptr) return Return(cudaErrorInvalidValue);
  if (bytes == 0) {
    *ptr = nullptr;
    return cudaSuccess;
  }
  return AllocInto(ptr, [&](CUdeviceptr* p) { return d->mem_alloc(p, bytes); });
}

FAKE_CUDART_API(cudaFree, (void* ptr)) {
  const DriverApi* d = nullptr;
  if (cudaError_t e = Prepare(&d); e != cudaSuccess) return e;
  if (ptr == nullptr) return cudaSuccess;
  return Return(d->mem_free(ToDevice(ptr)));
}

FAKE_CUDART_API(cudaStreamAttachMemAsync, (cudaStream_t stream, void* ptr,
                                           size_t length, unsigned int flags)) {
  const DriverApi* d = nullptr;
  if (cudaError_t e = Prepare(&d); e != cudaSuccess) return e;
  return Return(d->stream_attach_mem_async(reinterpret_cast<CUstream>(stream),
                                           ToDevice(ptr), length, flags));
}

FAKE_CUDART_API(cudaMallocManaged,
                (void** ptr, size_t bytes, unsigned int flags)) {
  const DriverApi* d = nullptr;
  if (cudaError_t e = Prepare(&d); e != cudaSuccess) return e;
  if (ptr == nullptr) return Return(cudaErrorInvalidValue);
  return AllocInto(ptr, [&](CUdeviceptr* p) {
    return d->mem_alloc_managed(p, bytes, flags);
  });
}

FAKE_CUDART_API(cudaMallocPitch,
                (void** ptr, size_t* pitch, size_t width, size_t height)) {
  const DriverApi* d = nullptr;
  if (cudaError_t e = Prepare(&d); e != cudaSuccess) return e;
  if (ptr == nullptr) return Return(cudaErrorInvalidValue);
  return AllocInto(ptr, [&](CUdeviceptr* p) {
    return d->mem_alloc_pitch(p, pitch, width, height, kPitchElementBytes);
  });
}

FAKE_CUDART_API(cudaMalloc3D,
                (struct cudaPitchedPtr * pitched, struct cudaExtent extent)) {
  const DriverApi* d = nullptr;
  if (cudaError_t e = Prepare(&d); e != cudaSuccess) return e;
  if (pitched == nullptr) return Return(cudaErrorInvalidValue);
  CUdeviceptr p = 0;
  size_t pitch = 0;
  CUresult r =
      d->mem_alloc_pitch(&p, &pitch, extent.width, extent.height * extent.depth,
                         kPitchElementBytes);
  if (r == CUDA_SUCCESS) {
    *pitched = cudaPitchedPtr{reinterpret_cast<void*>(p), pitch, extent.width,
                              extent.height};
  }
  return Return(r);
}

// ---- Stream-ordered allocation
// ------------------------------------------------

FAKE_CUDART_API(cudaMallocAsync,
                (void** ptr, size_t bytes, cudaStream_t stream)) {
  const DriverApi* d = nullptr;
  if (cudaError_t e = Prepare(&d); e != cudaSuccess) return e;
  if (ptr == nullptr) return Return(cudaErrorInvalidValue);
  return AllocInto(ptr, [&](CUdeviceptr* p) {
    return d->mem_alloc_async(p, bytes, reinterpret_cast<CUstream>(stream));
  });
}

FAKE_CUDART_API(cudaMallocAsync_ptsz,
                (void** ptr, size_t bytes, cudaStream_t stream)) {
  const DriverApi* d = nullptr;
  if (cudaError_t e = Prepare(&d); e != cudaSuccess) return e;
  if (ptr == nullptr) return Return(cudaErrorInvalidValue);
  return AllocInto(ptr, [&](CUdeviceptr* p) {
    return d->mem_alloc_async_ptsz(p, bytes,
                                   reinterpret_cast<CUstream>(stream));
  });
}

FAKE_CUDART_API(cudaMallocFromPoolAsync,
                (void** ptr, size_t bytes, cudaMemPool_t pool,
                 cudaStream_t stream)) {
  const DriverApi* d = nullptr;
  if (cudaError_t e = Prepare(&d); e != cudaSuccess) return e;
  if (ptr == nullptr) return Return(cudaErrorInvalidValue);
  return AllocInto(ptr, [&](CUdeviceptr* p) {
    return d->mem_alloc_from_pool_async(p, bytes,
                                        reinterpret_cast<CUmemoryPool>(pool),
                                        reinterpret_cast<CUstream>(stream));
  });
}

FAKE_CUDART_API(cudaMallocFromPoolAsync_ptsz,
                (void** ptr, size_t bytes, cudaMemPool_t pool,
                 cudaStream_t stream)) {
  const DriverApi* d = nullptr;
  if (cudaError_t e = Prepare(&d); e != cudaSuccess) return e;
  if (ptr == nullptr) return Return(cudaErrorInvalidValue);
  return AllocInto(ptr, [&](CUdeviceptr* p) {
    return d->mem_alloc_from_pool_async_ptsz(
        p, bytes, reinterpret_cast<CUmemoryPool>(pool),
        reinterpret_cast<CUstream>(stream));
  });
}

FAKE_CUDART_API(cudaFreeAsync, (void* ptr, cudaStream_t stream)) {
  const DriverApi* d = nullptr;
  if (cudaError_t e = Prepare(&d); e != cudaSuccess) return e;
  if (ptr == nullptr) return cudaSuccess;
  return Return(
      d->mem_free_async(ToDevice(ptr), reinterpret_cast<CUstream>(stream)));
}

FAKE_CUDART_API(cudaFreeAsync_ptsz, (void* ptr, cudaStream_t stream)) {
  const DriverApi* d = nullptr;
  if (cudaError_t e = Prepare(&d); e != cudaSuccess) return e;
  if (ptr == nullptr) return cudaSuccess;
  return Return(d->mem_free_async_ptsz(ToDevice(ptr),
                                       reinterpret_cast<CUstream>(stream)));
}

FAKE_CUDART_API(cudaDeviceGetDefaultMemPool,
                (cudaMemPool_t * pool, int device)) {
  const DriverApi* d = nullptr;
  if (cudaError_t e = Prepare(&d); e != cudaSuccess) return e;
  if (pool == nullptr) return Return(cudaErrorInvalidValue);
  CUmemoryPool p = nullptr;
  CUresult r = d->device_get_default_mem_pool(&p, device);
  if (r == CUDA_SUCCESS) *pool = reinterpret_cast<cudaMemPool_t>(p);
  return Return(r);
}

FAKE_CUDART_API(cudaMemPoolGetAttribute,
                (cudaMemPool_t pool, cudaMemPoolAttr attribute, void* value)) {
  const DriverApi* d = nullptr;
  if (cudaError_t e = Prepare(&d); e != cudaSuccess) return e;
  return Return(d->mem_pool_get_attribute(
      reinterpret_cast<CUmemoryPool>(pool),
      static_cast<CUmemPool_attribute>(attribute), value));
}

FAKE_CUDART_API(cudaMemPoolSetAttribute,
                (cudaMemPool_t pool, cudaMemPoolAttr attribute, void* value)) {
  const DriverApi* d = nullptr;
  if (cudaError_t e = Prepare(&d); e != cudaSuccess) return e;
  return Return(d->mem_pool_set_attribute(
      reinterpret_cast<CUmemoryPool>(pool),
      static_cast<CUmemPool_attribute>(attribute), value));
}

FAKE_CUDART_API(cudaMemPoolTrimTo, (cudaMemPool_t pool, size_t keep)) {
  const DriverApi* d = nullptr;
  if (cudaError_t e = Prepare(&d); e != cudaSuccess) return e;
  return Return(
      d->mem_pool_trim_to(reinterpret_cast<CUmemoryPool>(pool), keep));
}

// ---- Pinned and registered host memory
// ----------------------------------------

FAKE_CUDART_API(cudaMallocHost, (void** ptr, size_t bytes)) {
  const DriverApi* d = nullptr;
  if (cudaError_t e = Prepare(&d); e != cudaSuccess) return e;
  return Return(d->mem_alloc_host(ptr, bytes));
}

FAKE_CUDART_API(cudaHostAlloc, (void** ptr, size_t bytes, unsigned int flags)) {
  const DriverApi* d = nullptr;
  if (cudaError_t e = Prepare(&d); e != cudaSuccess) return e;
  // cudaHostAllocPortable / Mapped / WriteCombined are the driver's
  // CU_MEMHOSTALLOC_* bits.
  return Return(d->mem_host_alloc(ptr, bytes, flags));
}

FAKE_CUDART_API(cudaFreeHost, (void* ptr)) {
  const DriverApi* d = nullptr;
  if (cudaError_t e = Prepare(&d); e != cudaSuccess) return e;
  if (ptr == nullptr) return cudaSuccess;
  return Return(d->mem_free_host(ptr));
}

FAKE_CUDART_API(cudaHostRegister,
                (void* ptr, size_t bytes, unsigned int flags)) {
  const DriverApi* d = nullptr;
  if (cudaError_t e = Prepare(&d); e != cudaSuccess) return e;
  return Return(d->mem_host_register(ptr, bytes, flags));
}

FAKE_CUDART_API(cudaHostUnregister, (void* ptr)) {
  const DriverApi* d = nullptr;
  if (cudaError_t e = Prepare(&d); e != cudaSuccess) return e;
  return Return(d->mem_host_unregister(ptr));
}

// ---- Arrays
// --------------------------------------------------------------------

namespace {

bool ArrayFormat(const cudaChannelFormatDesc& desc, CUarray_format* format,
                 unsigned int* channels) {
  *channels = (desc.x > 0) + (desc.y > 0) + (desc.z > 0) + (desc.w > 0);
  switch (desc.f) {
    case cudaChannelFormatKindFloat:
      *format = desc.x == 32 ? CU_AD_FORMAT_FLOAT : CU_AD_FORMAT_HALF;
      return desc.x == 32 || desc.x == 16;
    case cudaChannelFormatKindUnsigned:
      *format = desc.x == 8    ? CU_AD_FORMAT_UNSIGNED_INT8
                : desc.x == 16 ? CU_AD_FORMAT_UNSIGNED_INT16
                               : CU_AD_FORMAT_UNSIGNED_INT32;
      return desc.x == 8 || desc.x == 16 || desc.x == 32;
    case cudaChannelFormatKindSigned:
      *format = desc.x == 8    ? CU_AD_FORMAT_SIGNED_INT8
                : desc.x == 16 ? CU_AD_FORMAT_SIGNED_INT16
                               : CU_AD_FORMAT_SIGNED_INT32;
      return desc.x == 8 || desc.x == 16 || desc.x == 32;
    default:
      return false;
  }
}

}  // namespace

FAKE_CUDART_API(cudaMallocArray,
                (cudaArray_t * array, const struct cudaChannelFormatDesc* desc,
                 size_t width, size_t height, unsigned int /*flags*/)) {
  const DriverApi* d = nullptr;
  if (cudaError_t e = Prepare(&d); e != cudaSuccess) return e;
  CUDA_ARRAY_DESCRIPTOR ad = {};
  if (array == nullptr || desc == nullptr ||
      !ArrayFormat(*desc, &ad.Format, &ad.NumChannels) || ad.NumChannels == 0) {
    return Return(cudaErrorInvalidValue);
  }
  ad.Width = width;
  ad.Height = height;
  CUarray handle = nullptr;
  CUresult r = d->array_create(&handle, &ad);
  if (r == CUDA_SUCCESS) *array = reinterpret_cast<cudaArray_t>(handle);
  return Return(r);
}

FAKE_CUDART_API(cudaFreeArray, (cudaArray_t array)) {
  const DriverApi* d = nullptr;
  if (cudaError_t e = Prepare(&d); e != cudaSuccess) return e;
  if (array == nullptr) return cudaSuccess;
  return Return(d->array_destroy(reinterpret_cast<CUarray>(array)));
}

// ---- Queries and copies
// ---------------------------------------------------------

FAKE_CUDART_API(cudaMemGetInfo, (size_t * free_bytes, size_t* total_bytes)) {
  const DriverApi* d = nullptr;
  if (cudaError_t e = Prepare(&d); e != cudaSuccess) return e;
  return Return(d->mem_get_info(free_bytes, total_bytes));
}

FAKE_CUDART_API(cudaMemset, (void* ptr, int value, size_t bytes)) {
  const DriverApi* d = nullptr;
  if (cudaError_t e = Prepare(&d); e != cudaSuccess) return e;
  return Return(
      d->memset_d8(ToDevice(ptr), static_cast<unsigned char>(value), bytes));
}

// Unified addressing: every kind is one cuMemcpy.
FAKE_CUDART_API(cudaMemcpy, (void* dst, const void* src, size_t bytes,
                             enum cudaMemcpyKind kind)) {
  const DriverApi* d = nullptr;
  if (cudaError_t e = Prepare(&d); e != cudaSuccess) return e;
  if (kind < cudaMemcpyHostToHost || kind > cudaMemcpyDefault) {
    return Return(cudaErrorInvalidMemcpyDirection);
  }
  return Return(d->mem_copy(ToDevice(dst), ToDevice(src), bytes));
}
