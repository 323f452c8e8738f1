// oob_driver: a 10000-byte block from the driver API (cuMemAlloc, in the
// runtime's primary context) overrun by a kernel launched with the runtime:
// 24 bytes written at offsets 10100..10123, i.e. not starting at the end (a
// stride bug that skips the slack and lands further out).
//
// Expected report (guard=1): exactly one error, kind "oob-write", offset
// 10100, bytes 24 (first_offset 10100, last_offset 10123, changed_bytes 24),
// allocation {api "cuMemAlloc", bytes 10000} with DriverOobAllocate in its
// stack, kernels containing DriverStrideOverrunKernel (check=kernel: exactly
// that one). stdout (the in-bounds checksum) is the same with and without the
// tool; exit 0.
#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <vector>

#include "example_check.h"
#include "guard_example.h"

constexpr size_t kBytes = 10000;
constexpr int kFirst = 10100;
constexpr int kCount = 24;

__global__ void DriverFillKernel(unsigned char* p, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] = static_cast<unsigned char>(i * 5 + 1);
}

// Writes `count` bytes from `first`, wherever that is.
__global__ void DriverStrideOverrunKernel(volatile unsigned char* p, int first,
                                          int count) {
  int i = threadIdx.x;
  if (i < count) p[first + i] = static_cast<unsigned char>(~p[first + i]);
}

__attribute__((noinline)) CUdeviceptr DriverOobAllocate(size_t bytes) {
  CUdeviceptr p = 0;
  EXAMPLE_CHECK_CU(cuMemAlloc(&p, bytes));
  return p;
}

int main() {
  // The runtime creates and makes current the primary context that the
  // driver calls below use.
  EXAMPLE_CHECK_CUDA(cudaFree(nullptr));
  CUdeviceptr dp = DriverOobAllocate(kBytes);
  auto* d = reinterpret_cast<unsigned char*>(dp);
  const int n = static_cast<int>(kBytes);
  DriverFillKernel<<<(n + 255) / 256, 256>>>(d, n);
  if (BadWriteStaysMapped(d, kBytes, kFirst, kCount, kDevicePageBytes,
                          "oob_driver")) {
    DriverStrideOverrunKernel<<<1, 32>>>(d, kFirst, kCount);
  }
  EXAMPLE_CHECK_CUDA(cudaGetLastError());
  EXAMPLE_CHECK_CUDA(cudaDeviceSynchronize());
  std::vector<unsigned char> h(kBytes);
  EXAMPLE_CHECK_CU(cuMemcpyDtoH(h.data(), dp, kBytes));
  EXAMPLE_CHECK_CU(cuMemFree(dp));
  std::printf(
      "oob_driver: wrote %d bytes at offset %d of a %zu-byte "
      "cuMemAlloc block; in-bounds checksum %llu\n",
      kCount, kFirst, kBytes, ByteSum(h.data(), 0, kBytes));
  return 0;
}
