// Runtime API allocation shims: forward, and record what came back. The
// driver calls these make inside cudart run nested and are not recorded again.
#include "interpose/runtime_hooks.h"
#include "lib/log.h"

using gmt::Api;
using gmt::InterceptScope;

namespace {

uint64_t StreamId(cudaStream_t stream) {
  return reinterpret_cast<uint64_t>(stream);
}

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

template <typename Call>
cudaError_t ForwardFree(Api api, const void* p, Call&& call) {
  InterceptScope scope;
  if (!scope.Recording()) return call();
  return gmt::TrackedFree(api, reinterpret_cast<uintptr_t>(p), call,
                          /*driver=*/false);
}

// What the program gets when no CUDA runtime is loaded behind the shim. That
// happens when the program links libgpumemtrace before libcudart with
// --as-needed: the linker then drops cudart. Said once, plainly.
cudaError_t NoRuntime() {
  static const bool said = [] {
    gmt::LogError(
        "a CUDA runtime call reached gpumemtrace but no libcudart is loaded: "
        "link the CUDA runtime before gpumemtrace, or with -Wl,--no-as-needed "
        "(README, 'Asking from the program')");
    return true;
  }();
  (void)said;
  return cudaErrorInitializationError;
}

}  // namespace

cudaError_t Shim_cudaMalloc(void** p, size_t bytes) {
  auto real = gmt::g_real_cudaMalloc.Get();
  if (real == nullptr) return NoRuntime();
  return TrackedAlloc(Api::kCudaMalloc, p, bytes, 0,
                      [&] { return real(p, bytes); });
}

cudaError_t Shim_cudaFree(void* p) {
  auto real = gmt::g_real_cudaFree.Get();
  if (real == nullptr) return NoRuntime();
  return ForwardFree(Api::kCudaFree, p, [&] { return real(p); });
}

cudaError_t Shim_cudaMallocManaged(void** p, size_t bytes, unsigned int flags) {
  auto real = gmt::g_real_cudaMallocManaged.Get();
  if (real == nullptr) return NoRuntime();
  return TrackedAlloc(Api::kCudaMallocManaged, p, bytes, 0,
                      [&] { return real(p, bytes, flags); });
}

cudaError_t Shim_cudaMallocAsync(void** p, size_t bytes, cudaStream_t stream) {
  auto real = gmt::g_real_cudaMallocAsync.Get();
  if (real == nullptr) return NoRuntime();
  return TrackedAlloc(Api::kCudaMallocAsync, p, bytes, StreamId(stream),
                      [&] { return real(p, bytes, stream); });
}

cudaError_t Shim_cudaMallocAsync_ptsz(void** p, size_t bytes,
                                      cudaStream_t stream) {
  auto real = gmt::g_real_cudaMallocAsync_ptsz.Get();
  if (real == nullptr) return NoRuntime();
  return TrackedAlloc(Api::kCudaMallocAsync, p, bytes, StreamId(stream),
                      [&] { return real(p, bytes, stream); });
}

cudaError_t Shim_cudaMallocFromPoolAsync(void** p, size_t bytes,
                                         cudaMemPool_t pool,
                                         cudaStream_t stream) {
  auto real = gmt::g_real_cudaMallocFromPoolAsync.Get();
  if (real == nullptr) return NoRuntime();
  return TrackedAlloc(Api::kCudaMallocFromPoolAsync, p, bytes, StreamId(stream),
                      [&] { return real(p, bytes, pool, stream); });
}

cudaError_t Shim_cudaMallocFromPoolAsync_ptsz(void** p, size_t bytes,
                                              cudaMemPool_t pool,
                                              cudaStream_t stream) {
  auto real = gmt::g_real_cudaMallocFromPoolAsync_ptsz.Get();
  if (real == nullptr) return NoRuntime();
  return TrackedAlloc(Api::kCudaMallocFromPoolAsync, p, bytes, StreamId(stream),
                      [&] { return real(p, bytes, pool, stream); });
}

cudaError_t Shim_cudaFreeAsync(void* p, cudaStream_t stream) {
  auto real = gmt::g_real_cudaFreeAsync.Get();
  if (real == nullptr) return NoRuntime();
  return ForwardFree(Api::kCudaFreeAsync, p, [&] { return real(p, stream); });
}

cudaError_t Shim_cudaFreeAsync_ptsz(void* p, cudaStream_t stream) {
  auto real = gmt::g_real_cudaFreeAsync_ptsz.Get();
  if (real == nullptr) return NoRuntime();
  return ForwardFree(Api::kCudaFreeAsync, p, [&] { return real(p, stream); });
}

cudaError_t Shim_cudaMallocPitch(void** p, size_t* pitch, size_t width,
                                 size_t height) {
  auto real = gmt::g_real_cudaMallocPitch.Get();
  if (real == nullptr) return NoRuntime();
  InterceptScope scope;
  if (!scope.Recording()) return real(p, pitch, width, height);
  gmt::StackId stack = gmt::Engine::Get().CaptureCallStack();
  cudaError_t result = real(p, pitch, width, height);
  if (result == cudaSuccess && p != nullptr && pitch != nullptr) {
    gmt::RecordAlloc(Api::kCudaMallocPitch, reinterpret_cast<uintptr_t>(*p),
                     *pitch * height, 0, stack);
  }
  return result;
}

cudaError_t Shim_cudaMalloc3D(cudaPitchedPtr* pitched, cudaExtent extent) {
  auto real = gmt::g_real_cudaMalloc3D.Get();
  if (real == nullptr) return NoRuntime();
  InterceptScope scope;
  if (!scope.Recording()) return real(pitched, extent);
  gmt::StackId stack = gmt::Engine::Get().CaptureCallStack();
  cudaError_t result = real(pitched, extent);
  if (result == cudaSuccess && pitched != nullptr) {
    const uint64_t bytes = static_cast<uint64_t>(pitched->pitch) *
                           extent.height * (extent.depth ? extent.depth : 1);
    gmt::RecordAlloc(Api::kCudaMalloc3D,
                     reinterpret_cast<uintptr_t>(pitched->ptr), bytes, 0,
                     stack);
  }
  return result;
}

cudaError_t Shim_cudaMallocHost(void** p, size_t bytes) {
  auto real = gmt::g_real_cudaMallocHost.Get();
  if (real == nullptr) return NoRuntime();
  return TrackedAlloc(Api::kCudaMallocHost, p, bytes, 0,
                      [&] { return real(p, bytes); });
}

cudaError_t Shim_cudaHostAlloc(void** p, size_t bytes, unsigned int flags) {
  auto real = gmt::g_real_cudaHostAlloc.Get();
  if (real == nullptr) return NoRuntime();
  return TrackedAlloc(Api::kCudaHostAlloc, p, bytes, 0,
                      [&] { return real(p, bytes, flags); });
}

cudaError_t Shim_cudaFreeHost(void* p) {
  auto real = gmt::g_real_cudaFreeHost.Get();
  if (real == nullptr) return NoRuntime();
  return ForwardFree(Api::kCudaFreeHost, p, [&] { return real(p); });
}

cudaError_t Shim_cudaHostRegister(void* p, size_t bytes, unsigned int flags) {
  auto real = gmt::g_real_cudaHostRegister.Get();
  if (real == nullptr) return NoRuntime();
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
  if (real == nullptr) return NoRuntime();
  return ForwardFree(Api::kCudaHostUnregister, p, [&] { return real(p); });
}

cudaError_t Shim_cudaMallocArray(cudaArray_t* array,
                                 const cudaChannelFormatDesc* desc,
                                 size_t width, size_t height,
                                 unsigned int flags) {
  auto real = gmt::g_real_cudaMallocArray.Get();
  if (real == nullptr) return NoRuntime();
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
  if (real == nullptr) return NoRuntime();
  return ForwardFree(Api::kCudaFreeArray, array, [&] { return real(array); });
}

cudaError_t Shim_cudaDeviceReset() {
  auto real = gmt::g_real_cudaDeviceReset.Get();
  if (real == nullptr) return NoRuntime();
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
  cudaError_t result = real();
  if (result == cudaSuccess && device != gmt::kHostDevice) {
    gmt::Engine::Get().OnContextTeardown(device, 0, "cudaDeviceReset");
  }
  return result;
}
