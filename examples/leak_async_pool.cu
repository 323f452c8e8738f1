// leak_async_pool: stream-ordered allocations (cudaMallocAsync from the
// device's default memory pool) of which only some are given back.
//
// Expected report: one leak entry with api "cudaMallocAsync", kind "device",
// count 4, bytes 1048576 (4 x 256 KiB), device 0, with LeakAsyncBuffers
// (leak_async_pool.cu) in its stack. The buffer that AsyncAllocAndFree
// releases with cudaFreeAsync is not reported. No errors. (The pool may keep
// the physical memory cached after cudaFreeAsync; that is not a leak.)
#include <cuda_runtime.h>

#include <cstdio>

#include "example_check.h"

constexpr int kLeakCount = 4;
constexpr size_t kLeakBytes = 256 << 10;

__global__ void FillKernel(unsigned char* p, size_t n, unsigned char v) {
  size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i < n) p[i] = v;
}

__attribute__((noinline)) void LeakAsyncBuffers(void** out, int count,
                                                size_t bytes,
                                                cudaStream_t stream) {
  for (int i = 0; i < count; ++i) {
    EXAMPLE_CHECK_CUDA(cudaMallocAsync(&out[i], bytes, stream));
    FillKernel<<<(bytes + 255) / 256, 256, 0, stream>>>(
        static_cast<unsigned char*>(out[i]), bytes, 3);
  }
}

__attribute__((noinline)) void AsyncAllocAndFree(size_t bytes,
                                                 cudaStream_t stream) {
  void* p = nullptr;
  EXAMPLE_CHECK_CUDA(cudaMallocAsync(&p, bytes, stream));
  FillKernel<<<(bytes + 255) / 256, 256, 0, stream>>>(
      static_cast<unsigned char*>(p), bytes, 4);
  EXAMPLE_CHECK_CUDA(cudaFreeAsync(p, stream));
}

int main() {
  cudaStream_t stream;
  EXAMPLE_CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  void* leaked[kLeakCount] = {};
  LeakAsyncBuffers(leaked, kLeakCount, kLeakBytes, stream);
  AsyncAllocAndFree(kLeakBytes, stream);
  EXAMPLE_CHECK_CUDA(cudaStreamSynchronize(stream));
  EXAMPLE_CHECK_CUDA(cudaStreamDestroy(stream));
  std::printf("leak_async_pool: leaked %d x %zu bytes with cudaMallocAsync\n",
              kLeakCount, kLeakBytes);
  return 0;
}
