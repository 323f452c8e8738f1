// Runtime API allocation shims: forward, and record what came back. The
// driver calls these make inside cudart run nested and are not recorded again.
#include "interpose/alloc_shims.h"
#include "interpose/guard_shim_util.h"
#include "interpose/resolve/runtime_hooks.h"
#include "lib/core/log.h"

using gmt::Api;
using gmt::InterceptScope;

namespace {

uint64_t StreamId(cudaStream_t stream) {
  return reinterpret_cast<uint64_t>(stream);
}

template <typename Call>
cudaError_t TrackedAlloc(Api api, void** out, uint64_t bytes, uint64_t stream,
                         Call&& call) {
  return gmt::TrackedAlloc<cudaError_t>(api, out, bytes, stream, call);
}

// A guarded linear allocation: `call(bytes, &raw)` makes the real call.
template <typename Call>
cudaError_t GuardedAlloc(Api api, void** out, uint64_t bytes, uint64_t stream,
                         Call&& call, cudaMemPool_t pool = nullptr) {
  return gmt::GuardedAlloc<cudaError_t>(api, out, bytes, stream, call,
                                        gmt::AddressOf(pool));
}

// `call(pointer)` frees with CUDA (the raw block when guarded).
template <typename Call>
cudaError_t ForwardFree(Api api, const void* p, Call&& call,
                        uint64_t stream = 0) {
  return gmt::TrackedFree<cudaError_t>(
      api, gmt::AddressOf(p),
      [&](uint64_t q) { return call(gmt::FromAddress<void*>(q)); }, stream);
}

}  // namespace

cudaError_t Shim_cudaMalloc(void** p, size_t bytes) {
  auto real = gmt::g_real_cudaMalloc.Get();
  if (real == nullptr) return gmt::NoRuntimeError();
  return GuardedAlloc(Api::kCudaMalloc, p, bytes, 0,
                      [&](uint64_t n, void** out) { return real(out, n); });
}

cudaError_t Shim_cudaFree(void* p) {
  auto real = gmt::g_real_cudaFree.Get();
  if (real == nullptr) return gmt::NoRuntimeError();
  return ForwardFree(Api::kCudaFree, p, [&](void* q) { return real(q); });
}

cudaError_t Shim_cudaMallocManaged(void** p, size_t bytes, unsigned int flags) {
  auto real = gmt::g_real_cudaMallocManaged.Get();
  if (real == nullptr) return gmt::NoRuntimeError();
  return GuardedAlloc(
      Api::kCudaMallocManaged, p, bytes, 0,
      [&](uint64_t n, void** out) { return real(out, n, flags); });
}

cudaError_t Shim_cudaMallocAsync(void** p, size_t bytes, cudaStream_t stream) {
  auto real = gmt::g_real_cudaMallocAsync.Get();
  if (real == nullptr) return gmt::NoRuntimeError();
  return GuardedAlloc(
      Api::kCudaMallocAsync, p, bytes, StreamId(stream),
      [&](uint64_t n, void** out) { return real(out, n, stream); });
}

cudaError_t Shim_cudaMallocAsync_ptsz(void** p, size_t bytes,
                                      cudaStream_t stream) {
  auto real = gmt::g_real_cudaMallocAsync_ptsz.Get();
  if (real == nullptr) return gmt::NoRuntimeError();
  return GuardedAlloc(
      Api::kCudaMallocAsync, p, bytes, StreamId(stream),
      [&](uint64_t n, void** out) { return real(out, n, stream); });
}

cudaError_t Shim_cudaMallocFromPoolAsync(void** p, size_t bytes,
                                         cudaMemPool_t pool,
                                         cudaStream_t stream) {
  auto real = gmt::g_real_cudaMallocFromPoolAsync.Get();
  if (real == nullptr) return gmt::NoRuntimeError();
  return GuardedAlloc(
      Api::kCudaMallocFromPoolAsync, p, bytes, StreamId(stream),
      [&](uint64_t n, void** out) { return real(out, n, pool, stream); }, pool);
}

cudaError_t Shim_cudaMallocFromPoolAsync_ptsz(void** p, size_t bytes,
                                              cudaMemPool_t pool,
                                              cudaStream_t stream) {
  auto real = gmt::g_real_cudaMallocFromPoolAsync_ptsz.Get();
  if (real == nullptr) return gmt::NoRuntimeError();
  return GuardedAlloc(
      Api::kCudaMallocFromPoolAsync, p, bytes, StreamId(stream),
      [&](uint64_t n, void** out) { return real(out, n, pool, stream); }, pool);
}

cudaError_t Shim_cudaFreeAsync(void* p, cudaStream_t stream) {
  auto real = gmt::g_real_cudaFreeAsync.Get();
  if (real == nullptr) return gmt::NoRuntimeError();
  return ForwardFree(
      Api::kCudaFreeAsync, p, [&](void* q) { return real(q, stream); },
      StreamId(stream));
}

cudaError_t Shim_cudaFreeAsync_ptsz(void* p, cudaStream_t stream) {
  auto real = gmt::g_real_cudaFreeAsync_ptsz.Get();
  if (real == nullptr) return gmt::NoRuntimeError();
  return ForwardFree(
      Api::kCudaFreeAsync, p, [&](void* q) { return real(q, stream); },
      StreamId(stream));
}

cudaError_t Shim_cudaMallocPitch(void** p, size_t* pitch, size_t width,
                                 size_t height) {
  auto real = gmt::g_real_cudaMallocPitch.Get();
  if (real == nullptr) return gmt::NoRuntimeError();
  InterceptScope scope;
  if (!scope.Recording() || p == nullptr || pitch == nullptr || width == 0) {
    return real(p, pitch, width, height);
  }
  uint64_t user = 0;
  uint64_t row = 0;
  void* last_p = nullptr;
  size_t last_pitch = 0;
  cudaError_t result = gmt::GuardedRowsAlloc<cudaError_t>(
      Api::kCudaMallocPitch, height, gmt::LeastPitch(width), &user, &row,
      [&](uint64_t rows, uint64_t* raw, uint64_t* row_bytes) {
        last_p = *p;
        last_pitch = *pitch;
        cudaError_t r = real(&last_p, &last_pitch, width, rows);
        *raw = gmt::AddressOf(last_p);
        *row_bytes = last_pitch;
        return r;
      });
  if (result == cudaSuccess) {
    *p = gmt::FromAddress<void*>(user);
    *pitch = row;
  } else {  // what CUDA's last answer left there
    *p = last_p;
    *pitch = last_pitch;
  }
  return result;
}

cudaError_t Shim_cudaMalloc3D(cudaPitchedPtr* pitched, cudaExtent extent) {
  auto real = gmt::g_real_cudaMalloc3D.Get();
  if (real == nullptr) return gmt::NoRuntimeError();
  InterceptScope scope;
  if (!scope.Recording() || pitched == nullptr || extent.width == 0 ||
      extent.height == 0 || extent.depth == 0) {
    return real(pitched, extent);
  }
  // Slices are the rows here: the block grows by whole slices. A slice size
  // that overflows is never guarded (CUDA refuses such an extent itself).
  uint64_t least_slice = 0;
  if (__builtin_mul_overflow(gmt::LeastPitch(extent.width),
                             uint64_t{extent.height}, &least_slice)) {
    least_slice = 0;
  }
  uint64_t user = 0;
  uint64_t slice = 0;
  cudaPitchedPtr got = *pitched;
  cudaError_t result = gmt::GuardedRowsAlloc<cudaError_t>(
      Api::kCudaMalloc3D, extent.depth, least_slice, &user, &slice,
      [&](uint64_t slices, uint64_t* raw, uint64_t* slice_bytes) {
        cudaExtent e = extent;
        e.depth = slices;
        got = *pitched;
        cudaError_t r = real(&got, e);
        *raw = gmt::AddressOf(got.ptr);
        // CUDA made `slices` slices of this size: it fits.
        *slice_bytes = static_cast<uint64_t>(got.pitch) * extent.height;
        return r;
      });
  *pitched = got;  // on a failure, what CUDA's last answer left there
  if (result == cudaSuccess) pitched->ptr = gmt::FromAddress<void*>(user);
  return result;
}

cudaError_t Shim_cudaMallocHost(void** p, size_t bytes) {
  auto real = gmt::g_real_cudaMallocHost.Get();
  if (real == nullptr) return gmt::NoRuntimeError();
  return TrackedAlloc(Api::kCudaMallocHost, p, bytes, 0,
                      [&] { return real(p, bytes); });
}

cudaError_t Shim_cudaHostAlloc(void** p, size_t bytes, unsigned int flags) {
  auto real = gmt::g_real_cudaHostAlloc.Get();
  if (real == nullptr) return gmt::NoRuntimeError();
  return TrackedAlloc(Api::kCudaHostAlloc, p, bytes, 0,
                      [&] { return real(p, bytes, flags); });
}

cudaError_t Shim_cudaFreeHost(void* p) {
  auto real = gmt::g_real_cudaFreeHost.Get();
  if (real == nullptr) return gmt::NoRuntimeError();
  return ForwardFree(Api::kCudaFreeHost, p, [&](void* q) { return real(q); });
}

cudaError_t Shim_cudaHostRegister(void* p, size_t bytes, unsigned int flags) {
  auto real = gmt::g_real_cudaHostRegister.Get();
  if (real == nullptr) return gmt::NoRuntimeError();
  InterceptScope scope;
  if (!scope.Recording()) return real(p, bytes, flags);
  gmt::StackId stack = gmt::Engine::Get().CaptureCallStack();
  cudaError_t result = real(p, bytes, flags);
  if (result == cudaSuccess) {
    gmt::RecordAlloc(Api::kCudaHostRegister, gmt::AddressOf(p), bytes, 0,
                     stack);
  }
  return result;
}

cudaError_t Shim_cudaHostUnregister(void* p) {
  auto real = gmt::g_real_cudaHostUnregister.Get();
  if (real == nullptr) return gmt::NoRuntimeError();
  return ForwardFree(Api::kCudaHostUnregister, p,
                     [&](void* q) { return real(q); });
}

cudaError_t Shim_cudaMallocArray(cudaArray_t* array,
                                 const cudaChannelFormatDesc* desc,
                                 size_t width, size_t height,
                                 unsigned int flags) {
  auto real = gmt::g_real_cudaMallocArray.Get();
  if (real == nullptr) return gmt::NoRuntimeError();
  InterceptScope scope;
  if (!scope.Recording()) return real(array, desc, width, height, flags);
  gmt::StackId stack = gmt::Engine::Get().CaptureCallStack();
  cudaError_t result = real(array, desc, width, height, flags);
  if (result == cudaSuccess && array != nullptr && desc != nullptr) {
    // Element size from the channel bits; the driver may pad more.
    const uint64_t element =
        (static_cast<uint64_t>(desc->x) + desc->y + desc->z + desc->w + 7) / 8;
    const uint64_t bytes = element * width * (height ? height : 1);
    gmt::RecordAlloc(Api::kCudaMallocArray, gmt::AddressOf(*array), bytes, 0,
                     stack);
  }
  return result;
}

cudaError_t Shim_cudaFreeArray(cudaArray_t array) {
  auto real = gmt::g_real_cudaFreeArray.Get();
  if (real == nullptr) return gmt::NoRuntimeError();
  return ForwardFree(Api::kCudaFreeArray, array, [&](void* q) {
    return real(static_cast<cudaArray_t>(q));
  });
}

cudaError_t Shim_cudaDeviceReset() {
  auto real = gmt::g_real_cudaDeviceReset.Get();
  if (real == nullptr) return gmt::NoRuntimeError();
  InterceptScope scope;
  if (!scope.Recording()) return real();
  // cudaDeviceReset resets the runtime's current device, which is set even
  // on a thread whose context is not current yet.
  static gmt::RealSlot<cudaError_t (*)(int*)> get_device("cudaGetDevice",
                                                         false);
  int device = gmt::CurrentCallContext().device;
  if (auto get = get_device.Get();
      get != nullptr && get(&device) != cudaSuccess) {
    device = gmt::kHostDevice;
  }
  if (device != gmt::kHostDevice) {
    gmt::Engine::Get().BeforeContextTeardown(device, 0);
  }
  cudaError_t result = real();
  if (result == cudaSuccess && device != gmt::kHostDevice) {
    gmt::Engine::Get().OnContextTeardown(device, 0, "cudaDeviceReset");
  }
  return result;
}
