// oob_slack: a kernel writes 12 bytes just past the end of a 1000-byte
// cudaMalloc block: bytes 1000..1011, inside the 1024 bytes the allocator
// really handed out, so CUDA itself (and compute-sanitizer's
// allocation-granular checks on the rounded size) cannot notice.
//
// Expected report (guard=1, any check mode): exactly one error, kind
// "oob-write", offset 1000, bytes 12 (first_offset 1000, last_offset 1011,
// changed_bytes 12), allocation {api "cudaMalloc", bytes 1000} with
// OobSlackAllocate in its stack, kernels containing OobSlackOverrunKernel
// (check=kernel: exactly that one kernel), check "sync" (the
// cudaDeviceSynchronize right after the launch) or "kernel". The overrun
// flips every byte it touches (p[i] = ~p[i]), so all 12 differ from any
// canary. stdout (an in-bounds checksum) is the same with and without the
// tool; the program exits 0 either way.
#include <cuda_runtime.h>

#include <cstdio>
#include <vector>

#include "example_check.h"
#include "guard_example.h"

constexpr size_t kBytes = 1000;
constexpr int kOverrunFirst = 1000;  // == kBytes: starts at the end
constexpr int kOverrunCount = 12;

__global__ void OobSlackFillKernel(unsigned char* p, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] = static_cast<unsigned char>(i * 7 + 3);
}

// The bug: the caller passes a range that starts at the end of the block.
__global__ void OobSlackOverrunKernel(volatile unsigned char* p, int first,
                                      int count) {
  int i = threadIdx.x;
  if (i < count) p[first + i] = static_cast<unsigned char>(~p[first + i]);
}

__attribute__((noinline)) unsigned char* OobSlackAllocate(size_t bytes) {
  void* p = nullptr;
  EXAMPLE_CHECK_CUDA(cudaMalloc(&p, bytes));
  return static_cast<unsigned char*>(p);
}

__attribute__((noinline)) void OobSlackRun(unsigned char* d) {
  OobSlackFillKernel<<<(kBytes + 255) / 256, 256>>>(d, kBytes);
  if (BadWriteStaysMapped(d, kBytes, kOverrunFirst, kOverrunCount,
                          kDevicePageBytes, "oob_slack")) {
    OobSlackOverrunKernel<<<1, 32>>>(d, kOverrunFirst, kOverrunCount);
  }
  EXAMPLE_CHECK_CUDA(cudaGetLastError());
  EXAMPLE_CHECK_CUDA(cudaDeviceSynchronize());
}

int main() {
  unsigned char* d = OobSlackAllocate(kBytes);
  OobSlackRun(d);
  std::vector<unsigned char> h(kBytes);
  EXAMPLE_CHECK_CUDA(cudaMemcpy(h.data(), d, kBytes, cudaMemcpyDeviceToHost));
  EXAMPLE_CHECK_CUDA(cudaFree(d));
  std::printf(
      "oob_slack: wrote %d bytes at offset %d of a %zu-byte block; "
      "in-bounds checksum %llu\n",
      kOverrunCount, kOverrunFirst, kBytes, ByteSum(h.data(), 0, kBytes));
  return 0;
}
