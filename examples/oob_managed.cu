// oob_managed: a kernel writes 40 bytes past the end of a 100000-byte
// cudaMallocManaged buffer (the host initialises it, the GPU overruns it,
// the host reads it back).
//
// Expected report (guard=1): exactly one error, kind "oob-write", offset
// 100000, bytes 40 (first_offset 100000, last_offset 100039, changed_bytes
// 40), allocation {api "cudaMallocManaged", bytes 100000} with
// ManagedOobAllocate in its stack, kernels containing ManagedOverrunKernel
// (check=kernel: exactly that one). Without the tool the 40 bytes are in
// the same 4 KiB page as the buffer's last byte, so nothing faults. stdout
// (the in-bounds checksum, read on the host) is the same with and without
// the tool; exit 0.
#include <cuda_runtime.h>

#include <cstdio>

#include "example_check.h"
#include "guard_example.h"

constexpr size_t kBytes = 100000;
constexpr int kOverrunBytes = 40;

__global__ void ManagedIncrementKernel(unsigned char* p, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] = static_cast<unsigned char>(p[i] + 1);
}

// The bug: `n + extra` bytes flipped where only `n` exist.
__global__ void ManagedOverrunKernel(volatile unsigned char* p, int n,
                                     int extra) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < extra) p[n + i] = static_cast<unsigned char>(~p[n + i]);
}

__attribute__((noinline)) unsigned char* ManagedOobAllocate(size_t bytes) {
  void* p = nullptr;
  EXAMPLE_CHECK_CUDA(cudaMallocManaged(&p, bytes));
  return static_cast<unsigned char*>(p);
}

int main() {
  unsigned char* m = ManagedOobAllocate(kBytes);
  for (size_t i = 0; i < kBytes; ++i) {
    m[i] = static_cast<unsigned char>(i % 251);
  }
  const int n = static_cast<int>(kBytes);
  ManagedIncrementKernel<<<(n + 255) / 256, 256>>>(m, n);
  if (BadWriteStaysMapped(m, kBytes, kBytes, kOverrunBytes, kManagedPageBytes,
                          "oob_managed")) {
    ManagedOverrunKernel<<<1, 64>>>(m, n, kOverrunBytes);
  }
  EXAMPLE_CHECK_CUDA(cudaGetLastError());
  EXAMPLE_CHECK_CUDA(cudaDeviceSynchronize());
  unsigned long long sum = ByteSum(m, 0, kBytes);
  EXAMPLE_CHECK_CUDA(cudaFree(m));
  std::printf(
      "oob_managed: wrote %d bytes past a %zu-byte managed buffer; "
      "in-bounds checksum %llu\n",
      kOverrunBytes, kBytes, sum);
  return 0;
}
