// Driver API allocation shims: forward, and record what came back.
#include "interpose/alloc_shims.h"
#include "interpose/resolve/driver_hooks.h"

using gmt::Api;
using gmt::InterceptScope;

namespace {

uint64_t StreamId(CUstream stream) {
  return reinterpret_cast<uint64_t>(stream);
}

template <typename Out, typename Call>
CUresult TrackedAlloc(Api api, Out* out, uint64_t bytes, uint64_t stream,
                      Call&& call) {
  return gmt::TrackedAlloc<CUresult>(api, out, bytes, stream, call);
}

// A guarded linear allocation: `call(bytes, &raw)` makes the real call.
template <typename Call>
CUresult GuardedAlloc(Api api, CUdeviceptr* out, uint64_t bytes,
                      uint64_t stream, Call&& call,
                      CUmemoryPool pool = nullptr) {
  return gmt::GuardedAlloc<CUresult>(api, out, bytes, stream, call,
                                     gmt::AddressOf(pool));
}

// `call(pointer)` frees with CUDA (the raw block when guarded).
template <typename Call>
CUresult ForwardFree(Api api, uint64_t address, Call&& call,
                     uint64_t stream = 0) {
  return gmt::TrackedFree<CUresult>(api, address, call, stream);
}

}  // namespace

CUresult Shim_cuMemAlloc_v2(CUdeviceptr* dptr, size_t bytes) {
  auto real = gmt::g_real_cuMemAlloc_v2.Get();
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  return GuardedAlloc(
      Api::kCuMemAlloc, dptr, bytes, 0,
      [&](uint64_t n, CUdeviceptr* out) { return real(out, n); });
}

CUresult Shim_cuMemAllocPitch_v2(CUdeviceptr* dptr, size_t* pitch, size_t width,
                                 size_t height, unsigned int element_size) {
  auto real = gmt::g_real_cuMemAllocPitch_v2.Get();
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  InterceptScope scope;
  if (!scope.Recording() || dptr == nullptr || pitch == nullptr || width == 0) {
    return real(dptr, pitch, width, height, element_size);
  }
  uint64_t user = 0;
  uint64_t row = 0;
  CUdeviceptr last_dptr = 0;
  size_t last_pitch = 0;
  CUresult result = gmt::GuardedRowsAlloc<CUresult>(
      Api::kCuMemAllocPitch, height, gmt::LeastPitch(width), &user, &row,
      [&](uint64_t rows, uint64_t* raw, uint64_t* row_bytes) {
        last_dptr = *dptr;
        last_pitch = *pitch;
        CUresult r = real(&last_dptr, &last_pitch, width, rows, element_size);
        *raw = last_dptr;
        *row_bytes = last_pitch;
        return r;
      });
  if (result == CUDA_SUCCESS) {
    *dptr = user;
    *pitch = row;
  } else {  // what CUDA's last answer left there
    *dptr = last_dptr;
    *pitch = last_pitch;
  }
  return result;
}

CUresult Shim_cuMemAllocManaged(CUdeviceptr* dptr, size_t bytes,
                                unsigned int flags) {
  auto real = gmt::g_real_cuMemAllocManaged.Get();
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  return GuardedAlloc(
      Api::kCuMemAllocManaged, dptr, bytes, 0,
      [&](uint64_t n, CUdeviceptr* out) { return real(out, n, flags); });
}

CUresult Shim_cuMemFree_v2(CUdeviceptr dptr) {
  auto real = gmt::g_real_cuMemFree_v2.Get();
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  return ForwardFree(Api::kCuMemFree, dptr,
                     [&](uint64_t p) { return real(p); });
}

CUresult Shim_cuMemAllocAsync(CUdeviceptr* dptr, size_t bytes,
                              CUstream stream) {
  auto real = gmt::g_real_cuMemAllocAsync.Get();
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  return GuardedAlloc(
      Api::kCuMemAllocAsync, dptr, bytes, StreamId(stream),
      [&](uint64_t n, CUdeviceptr* out) { return real(out, n, stream); });
}

CUresult Shim_cuMemAllocAsync_ptsz(CUdeviceptr* dptr, size_t bytes,
                                   CUstream stream) {
  auto real = gmt::g_real_cuMemAllocAsync_ptsz.Get();
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  return GuardedAlloc(
      Api::kCuMemAllocAsync, dptr, bytes, StreamId(stream),
      [&](uint64_t n, CUdeviceptr* out) { return real(out, n, stream); });
}

CUresult Shim_cuMemAllocFromPoolAsync(CUdeviceptr* dptr, size_t bytes,
                                      CUmemoryPool pool, CUstream stream) {
  auto real = gmt::g_real_cuMemAllocFromPoolAsync.Get();
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  return GuardedAlloc(
      Api::kCuMemAllocFromPoolAsync, dptr, bytes, StreamId(stream),
      [&](uint64_t n, CUdeviceptr* out) { return real(out, n, pool, stream); },
      pool);
}

CUresult Shim_cuMemAllocFromPoolAsync_ptsz(CUdeviceptr* dptr, size_t bytes,
                                           CUmemoryPool pool, CUstream stream) {
  auto real = gmt::g_real_cuMemAllocFromPoolAsync_ptsz.Get();
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  return GuardedAlloc(
      Api::kCuMemAllocFromPoolAsync, dptr, bytes, StreamId(stream),
      [&](uint64_t n, CUdeviceptr* out) { return real(out, n, pool, stream); },
      pool);
}

CUresult Shim_cuMemFreeAsync(CUdeviceptr dptr, CUstream stream) {
  auto real = gmt::g_real_cuMemFreeAsync.Get();
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  return ForwardFree(
      Api::kCuMemFreeAsync, dptr, [&](uint64_t p) { return real(p, stream); },
      StreamId(stream));
}

CUresult Shim_cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream stream) {
  auto real = gmt::g_real_cuMemFreeAsync_ptsz.Get();
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  return ForwardFree(
      Api::kCuMemFreeAsync, dptr, [&](uint64_t p) { return real(p, stream); },
      StreamId(stream));
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
  return ForwardFree(Api::kCuMemFreeHost, gmt::AddressOf(p), [&](uint64_t q) {
    return real(gmt::FromAddress<void*>(q));
  });
}

CUresult Shim_cuMemHostRegister_v2(void* p, size_t bytes, unsigned int flags) {
  auto real = gmt::g_real_cuMemHostRegister_v2.Get();
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  InterceptScope scope;
  if (!scope.Recording()) return real(p, bytes, flags);
  gmt::StackId stack = gmt::Engine::Get().CaptureCallStack();
  CUresult result = real(p, bytes, flags);
  if (result == CUDA_SUCCESS) {
    gmt::RecordAlloc(Api::kCuMemHostRegister, gmt::AddressOf(p), bytes, 0,
                     stack);
  }
  return result;
}

CUresult Shim_cuMemHostUnregister(void* p) {
  auto real = gmt::g_real_cuMemHostUnregister.Get();
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  return ForwardFree(
      Api::kCuMemHostUnregister, gmt::AddressOf(p),
      [&](uint64_t q) { return real(gmt::FromAddress<void*>(q)); });
}
