// Runtime API allocation shims: forward, and record what came back. The
// driver calls these make inside cudart run nested and are not recorded again.
#include "interpose/guard_shim_util.h"
#include "interpose/guarded_alloc.h"
#include "interpose/resolve/runtime_hooks.h"
#include "lib/core/log.h"

using gmt::Api;
using gmt::InterceptScope;

namespace {

uint64_t StreamId(cudaStream_t stream) {
  return reinterpret_cast<uint64_t>(stream);
}

// The least pitch CUDA picks for a row of `width` bytes (512-byte pitch
// alignment on current GPUs; a larger real pitch only grows the redzones).
uint64_t RoundUp512(uint64_t width) { return (width + 511) / 512 * 512; }

template <typename Call>
cudaError_t TrackedAlloc(Api api, void** out, uint64_t bytes, uint64_t stream,
                         Call&& call) {
  InterceptScope scope;
  if (!scope.Recording()) return call();
  gmt::StackId stack = gmt::Engine::Get().CaptureCallStack();
  cudaError_t result = call();
  if (result == cudaSuccess && out != nullptr) {
    gmt::RecordAlloc(api, reinterpret_cast<uintptr_t>(*out), bytes, stream,
                     stack);
  }
  return result;
}

// A guarded linear allocation: `call(bytes, &raw)` makes the real call.
template <typename Call>
cudaError_t GuardedAlloc(Api api, void** out, uint64_t bytes, uint64_t stream,
                         Call&& call) {
  InterceptScope scope;
  if (!scope.Recording() || out == nullptr) {
    void* raw = nullptr;
    cudaError_t r = call(bytes, out != nullptr ? out : &raw);
    return r;
  }
  gmt::StackId stack = gmt::Engine::Get().CaptureCallStack();
  uint64_t user = 0;
  cudaError_t result = gmt::GuardedLinearAlloc(
      api, bytes, stream, stack, &user, [&](uint64_t n, uint64_t* raw) {
        void* p = nullptr;
        cudaError_t r = call(n, &p);
        *raw = reinterpret_cast<uintptr_t>(p);
        return r;
      });
  if (result == cudaSuccess) *out = reinterpret_cast<void*>(user);
  return result;
}

// `call(pointer)` frees with CUDA (the raw block when guarded).
template <typename Call>
cudaError_t ForwardFree(Api api, const void* p, Call&& call,
                        uint64_t stream = 0) {
  InterceptScope scope;
  if (!scope.Recording()) return call(const_cast<void*>(p));
  return gmt::TrackedFree(
      api, reinterpret_cast<uintptr_t>(p),
      [&](uint64_t ptr) { return call(reinterpret_cast<void*>(ptr)); },
      /*driver=*/false, stream);
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
      [&](uint64_t n, void** out) { return real(out, n, pool, stream); });
}

cudaError_t Shim_cudaMallocFromPoolAsync_ptsz(void** p, size_t bytes,
                                              cudaMemPool_t pool,
                                              cudaStream_t stream) {
  auto real = gmt::g_real_cudaMallocFromPoolAsync_ptsz.Get();
  if (real == nullptr) return gmt::NoRuntimeError();
  return GuardedAlloc(
      Api::kCudaMallocFromPoolAsync, p, bytes, StreamId(stream),
      [&](uint64_t n, void** out) { return real(out, n, pool, stream); });
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
  gmt::StackId stack = gmt::Engine::Get().CaptureCallStack();
  uint64_t user = 0;
  uint64_t row = 0;
  cudaError_t result = gmt::GuardedRowsAlloc(
      Api::kCudaMallocPitch, height, RoundUp512(width), stack, &user, &row,
      [&](uint64_t rows, uint64_t* raw, uint64_t* row_bytes) {
        void* q = nullptr;
        size_t got_pitch = 0;
        cudaError_t r = real(&q, &got_pitch, width, rows);
        *raw = reinterpret_cast<uintptr_t>(q);
        *row_bytes = got_pitch;
        return r;
      });
  if (result == cudaSuccess) {
    *p = reinterpret_cast<void*>(user);
    *pitch = row;
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
  gmt::StackId stack = gmt::Engine::Get().CaptureCallStack();
  // Slices are the rows here: the block grows by whole slices.
  uint64_t user = 0;
  uint64_t slice = 0;
  cudaPitchedPtr got{};
  cudaError_t result = gmt::GuardedRowsAlloc(
      Api::kCudaMalloc3D, extent.depth,
      RoundUp512(extent.width) * extent.height, stack, &user, &slice,
      [&](uint64_t slices, uint64_t* raw, uint64_t* slice_bytes) {
        cudaExtent e = extent;
        e.depth = slices;
        cudaError_t r = real(&got, e);
        *raw = reinterpret_cast<uintptr_t>(got.ptr);
        *slice_bytes = static_cast<uint64_t>(got.pitch) * extent.height;
        return r;
      });
  if (result == cudaSuccess) {
    *pitched = got;
    pitched->ptr = reinterpret_cast<void*>(user);
  }
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
    gmt::RecordAlloc(Api::kCudaHostRegister, reinterpret_cast<uintptr_t>(p),
                     bytes, 0, stack);
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
    gmt::RecordAlloc(Api::kCudaMallocArray, reinterpret_cast<uintptr_t>(*array),
                     bytes, 0, stack);
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
