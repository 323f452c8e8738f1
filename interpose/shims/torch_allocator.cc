// PyTorch's pluggable-allocator entry points:
//
//   torch.cuda.memory.change_current_allocator(
//       torch.cuda.memory.CUDAPluggableAllocator(
//           "<path>/libgpumemtrace.so", "gmt_torch_malloc", "gmt_torch_free"))
//
// PyTorch's caching allocator carves tensors out of large cudaMalloc segments,
// so a write past one tensor lands in its neighbour or in cached free space,
// where no redzone is. Through these entry points every tensor is its own
// cudaMalloc, and so its own tracked block with its own redzones.
//
// They only forward to the cudaMalloc / cudaFree shims, which record, guard
// and report exactly as for a direct call. PyTorch calls them with the
// current device (it sets it before allocating), so no device switch is made.
#include <sys/types.h>

#include "interpose/resolve/runtime_hooks.h"

extern "C" {

// CUDAPluggableAllocator's alloc_fn: void*(ssize_t size, int device,
// cudaStream_t stream). Returns null when CUDA refuses; the runtime's sticky
// "last error" is cleared then, as PyTorch's own allocator does, so that a
// later cudaGetLastError() check in PyTorch does not see a stale failure.
__attribute__((visibility("default"))) void* gmt_torch_malloc(
    ssize_t size, int /*device*/, cudaStream_t /*stream*/) {
  if (size < 0) return nullptr;
  void* p = nullptr;
  if (Shim_cudaMalloc(&p, static_cast<size_t>(size)) != cudaSuccess) {
    (void)Shim_cudaGetLastError();
    return nullptr;
  }
  return p;
}

// CUDAPluggableAllocator's free_fn: void(void* ptr, ssize_t size, int device,
// cudaStream_t stream). cudaFree waits for the device, so work still queued
// on `stream` that uses the block finishes first.
__attribute__((visibility("default"))) void gmt_torch_free(
    void* p, ssize_t /*size*/, int /*device*/, cudaStream_t /*stream*/) {
  if (Shim_cudaFree(p) != cudaSuccess) (void)Shim_cudaGetLastError();
}

}  // extern "C"
