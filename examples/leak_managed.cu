// leak_managed: unified (managed) memory that is never freed.
//
// Expected report: one leak entry with api "cudaMallocManaged", kind
// "managed", count 1, bytes 4194304 (4 MiB), device 0, with
// LeakManagedBuffer (leak_managed.cu) in its stack. The managed buffer that
// ManagedAllocAndFree frees with cudaFree is not reported. No errors.
#include <cuda_runtime.h>

#include <cstdio>

#include "example_check.h"

constexpr size_t kLeakBytes = 4 << 20;

__global__ void IotaKernel(int* p, size_t n) {
  size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i < n) p[i] = static_cast<int>(i);
}

__attribute__((noinline)) int* LeakManagedBuffer(size_t bytes) {
  int* p = nullptr;
  EXAMPLE_CHECK_CUDA(cudaMallocManaged(&p, bytes));
  return p;
}

__attribute__((noinline)) long long ManagedAllocAndFree(size_t bytes) {
  int* p = nullptr;
  EXAMPLE_CHECK_CUDA(cudaMallocManaged(&p, bytes));
  size_t n = bytes / sizeof(int);
  IotaKernel<<<(n + 255) / 256, 256>>>(p, n);
  EXAMPLE_CHECK_CUDA(cudaDeviceSynchronize());
  long long sum = 0;
  for (size_t i = 0; i < n; ++i) sum += p[i];
  EXAMPLE_CHECK_CUDA(cudaFree(p));
  return sum;
}

int main() {
  int* leaked = LeakManagedBuffer(kLeakBytes);
  size_t n = kLeakBytes / sizeof(int);
  IotaKernel<<<(n + 255) / 256, 256>>>(leaked, n);
  EXAMPLE_CHECK_CUDA(cudaDeviceSynchronize());
  long long sum = ManagedAllocAndFree(64 << 10);
  std::printf(
      "leak_managed: leaked %zu bytes with cudaMallocManaged (last=%d, "
      "sum=%lld)\n",
      kLeakBytes, leaked[n - 1], sum);
  return 0;
}
