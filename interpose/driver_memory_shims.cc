// Driver API allocation shims: forward, and record what came back.
#include "interpose/driver_hooks.h"

using gmt::Api;
using gmt::InterceptScope;

namespace {

uint64_t StreamId(CUstream stream) {
  return reinterpret_cast<uint64_t>(stream);
}

// Forwards an allocating call; on success records *out as `bytes` of `api`.
template <typename Out, typename Call>
CUresult TrackedAlloc(Api api, Out* out, uint64_t bytes, uint64_t stream,
                      Call&& call) {
  InterceptScope scope;
  if (!scope.Recording()) return call();
  gmt::StackId stack = gmt::Engine::Get().CaptureCallStack();
  CUresult result = call();
  if (result == CUDA_SUCCESS && out != nullptr) {
    gmt::RecordAlloc(api,
                     static_cast<uint64_t>(reinterpret_cast<uintptr_t>(
                         reinterpret_cast<void*>(*out))),
                     bytes, stream, stack);
  }
  return result;
}

template <typename Call>
CUresult ForwardFree(Api api, uint64_t address, Call&& call) {
  InterceptScope scope;
  if (!scope.Recording()) return call();
  return gmt::TrackedFree(api, address, call, /*driver=*/true);
}

}  // namespace

CUresult Shim_cuMemAlloc_v2(CUdeviceptr* dptr, size_t bytes) {
  auto real = gmt::g_real_cuMemAlloc_v2.Get();
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  return TrackedAlloc(Api::kCuMemAlloc, dptr, bytes, 0,
                      [&] { return real(dptr, bytes); });
}

CUresult Shim_cuMemAllocPitch_v2(CUdeviceptr* dptr, size_t* pitch, size_t width,
                                 size_t height, unsigned int element_size) {
  auto real = gmt::g_real_cuMemAllocPitch_v2.Get();
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  InterceptScope scope;
  if (!scope.Recording()) return real(dptr, pitch, width, height, element_size);
  gmt::StackId stack = gmt::Engine::Get().CaptureCallStack();
  CUresult result = real(dptr, pitch, width, height, element_size);
  if (result == CUDA_SUCCESS && dptr != nullptr && pitch != nullptr) {
    gmt::RecordAlloc(Api::kCuMemAllocPitch, *dptr, *pitch * height, 0, stack);
  }
  return result;
}

CUresult Shim_cuMemAllocManaged(CUdeviceptr* dptr, size_t bytes,
                                unsigned int flags) {
  auto real = gmt::g_real_cuMemAllocManaged.Get();
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  return TrackedAlloc(Api::kCuMemAllocManaged, dptr, bytes, 0,
                      [&] { return real(dptr, bytes, flags); });
}

CUresult Shim_cuMemFree_v2(CUdeviceptr dptr) {
  auto real = gmt::g_real_cuMemFree_v2.Get();
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  return ForwardFree(Api::kCuMemFree, dptr, [&] { return real(dptr); });
}

CUresult Shim_cuMemAllocAsync(CUdeviceptr* dptr, size_t bytes,
                              CUstream stream) {
  auto real = gmt::g_real_cuMemAllocAsync.Get();
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  return TrackedAlloc(Api::kCuMemAllocAsync, dptr, bytes, StreamId(stream),
                      [&] { return real(dptr, bytes, stream); });
}

CUresult Shim_cuMemAllocAsync_ptsz(CUdeviceptr* dptr, size_t bytes,
                                   CUstream stream) {
  auto real = gmt::g_real_cuMemAllocAsync_ptsz.Get();
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  return TrackedAlloc(Api::kCuMemAllocAsync, dptr, bytes, StreamId(stream),
                      [&] { return real(dptr, bytes, stream); });
}

CUresult Shim_cuMemAllocFromPoolAsync(CUdeviceptr* dptr, size_t bytes,
                                      CUmemoryPool pool, CUstream stream) {
  auto real = gmt::g_real_cuMemAllocFromPoolAsync.Get();
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  return TrackedAlloc(Api::kCuMemAllocFromPoolAsync, dptr, bytes,
                      StreamId(stream),
                      [&] { return real(dptr, bytes, pool, stream); });
}

CUresult Shim_cuMemAllocFromPoolAsync_ptsz(CUdeviceptr* dptr, size_t bytes,
                                           CUmemoryPool pool, CUstream stream) {
  auto real = gmt::g_real_cuMemAllocFromPoolAsync_ptsz.Get();
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  return TrackedAlloc(Api::kCuMemAllocFromPoolAsync, dptr, bytes,
                      StreamId(stream),
                      [&] { return real(dptr, bytes, pool, stream); });
}

CUresult Shim_cuMemFreeAsync(CUdeviceptr dptr, CUstream stream) {
  auto real = gmt::g_real_cuMemFreeAsync.Get();
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  return ForwardFree(Api::kCuMemFreeAsync, dptr,
                     [&] { return real(dptr, stream); });
}

CUresult Shim_cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream stream) {
  auto real = gmt::g_real_cuMemFreeAsync_ptsz.Get();
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  return ForwardFree(Api::kCuMemFreeAsync, dptr,
                     [&] { return real(dptr, stream); });
}

CUresult Shim_cuMemHostAlloc(void** pp, size_t bytes, unsigned int flags) {
  auto real = gmt::g_real_cuMemHostAlloc.Get();
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  return TrackedAlloc(Api::kCuMemHostAlloc, pp, bytes, 0,
                      [&] { return real(pp, bytes, flags); });
}

CUresult Shim_cuMemAllocHost_v2(void** pp, size_t bytes) {
  auto real = gmt::g_real_cuMemAllocHost_v2.Get();
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  return TrackedAlloc(Api::kCuMemAllocHost, pp, bytes, 0,
                      [&] { return real(pp, bytes); });
}

CUresult Shim_cuMemFreeHost(void* p) {
  auto real = gmt::g_real_cuMemFreeHost.Get();
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  return ForwardFree(Api::kCuMemFreeHost, reinterpret_cast<uintptr_t>(p),
                     [&] { return real(p); });
}

CUresult Shim_cuMemHostRegister_v2(void* p, size_t bytes, unsigned int flags) {
  auto real = gmt::g_real_cuMemHostRegister_v2.Get();
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  InterceptScope scope;
  if (!scope.Recording()) return real(p, bytes, flags);
  gmt::StackId stack = gmt::Engine::Get().CaptureCallStack();
  CUresult result = real(p, bytes, flags);
  if (result == CUDA_SUCCESS) {
    gmt::RecordAlloc(Api::kCuMemHostRegister, reinterpret_cast<uintptr_t>(p),
                     bytes, 0, stack);
  }
  return result;
}

CUresult Shim_cuMemHostUnregister(void* p) {
  auto real = gmt::g_real_cuMemHostUnregister.Get();
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  return ForwardFree(Api::kCuMemHostUnregister, reinterpret_cast<uintptr_t>(p),
                     [&] { return real(p); });
}
