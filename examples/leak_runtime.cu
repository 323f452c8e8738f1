// leak_runtime: three 1 MiB device buffers from cudaMalloc, never freed.
//
// Expected report: one leak entry with api "cudaMalloc", kind "device",
// count 3, bytes 3145728 (3 x 1048576), device 0, whose stack has
// LeakRuntimeBuffers (leak_runtime.cu) just below the tool and main under it.
// One more buffer is allocated and freed correctly by UseAndFreeScratch and
// must NOT be reported. No errors. Built with the shared cudart, so the tool
// sees the calls through its exported cudaMalloc/cudaFree.
#include <cuda_runtime.h>

#include <cstdio>

#include "example_check.h"

constexpr int kLeakCount = 3;
constexpr size_t kLeakBytes = 1 << 20;

__global__ void FillKernel(unsigned char* p, size_t n, unsigned char v) {
  size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i < n) p[i] = v;
}

// Allocates kLeakCount buffers from one call site and forgets them.
__attribute__((noinline)) void LeakRuntimeBuffers(void** out, int count,
                                                  size_t bytes) {
  for (int i = 0; i < count; ++i) {
    EXAMPLE_CHECK_CUDA(cudaMalloc(&out[i], bytes));
  }
}

// A correctly paired allocation: must not show up as a leak.
__attribute__((noinline)) void UseAndFreeScratch(size_t bytes) {
  void* p = nullptr;
  EXAMPLE_CHECK_CUDA(cudaMalloc(&p, bytes));
  FillKernel<<<(bytes + 255) / 256, 256>>>(static_cast<unsigned char*>(p),
                                           bytes, 7);
  EXAMPLE_CHECK_CUDA(cudaDeviceSynchronize());
  EXAMPLE_CHECK_CUDA(cudaFree(p));
}

int main() {
  void* leaked[kLeakCount] = {};
  LeakRuntimeBuffers(leaked, kLeakCount, kLeakBytes);
  for (void* p : leaked) {
    FillKernel<<<(kLeakBytes + 255) / 256, 256>>>(
        static_cast<unsigned char*>(p), kLeakBytes, 1);
  }
  EXAMPLE_CHECK_CUDA(cudaDeviceSynchronize());
  UseAndFreeScratch(kLeakBytes / 2);
  std::printf("leak_runtime: leaked %d x %zu bytes with cudaMalloc\n",
              kLeakCount, kLeakBytes);
  return 0;
}
