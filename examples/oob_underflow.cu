// oob_underflow: a kernel writes the 16 bytes just BEFORE the start of a
// 4096-byte cudaMalloc block (a "p[i - 1]" style index for i = 0..15 of a
// 16-byte header that the code thinks precedes the data).
//
// Expected report (guard=1): exactly one error, kind "oob-underflow", offset
// -16, bytes 16 (first_offset -16, last_offset -1, changed_bytes 16),
// allocation {api "cudaMalloc", bytes 4096} with UnderflowAllocateTarget in
// its stack, kernels containing UnderflowHeaderKernel (check=kernel: exactly
// that one). Without the tool the 16 bytes belong to the block allocated just
// before (UnderflowAllocatePad), so nothing faults. stdout (the target's
// in-bounds checksum) is the same with and without the tool; exit 0.
#include <cuda_runtime.h>

#include <cstdio>
#include <vector>

#include "example_check.h"
#include "guard_example.h"

constexpr size_t kBytes = 4096;
constexpr int kHeaderBytes = 16;

__global__ void UnderflowFillKernel(unsigned char* p, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] = static_cast<unsigned char>(i ^ 0x5a);
}

// The bug: the "header" it updates lives at p - 16, outside the block.
__global__ void UnderflowHeaderKernel(volatile unsigned char* p, int header) {
  int i = threadIdx.x;
  if (i < header) {
    volatile unsigned char* h = p - header;
    h[i] = static_cast<unsigned char>(~h[i]);
  }
}

__attribute__((noinline)) void* UnderflowAllocatePad(size_t bytes) {
  void* p = nullptr;
  EXAMPLE_CHECK_CUDA(cudaMalloc(&p, bytes));
  return p;
}

__attribute__((noinline)) void* UnderflowAllocateTarget(size_t bytes) {
  void* p = nullptr;
  EXAMPLE_CHECK_CUDA(cudaMalloc(&p, bytes));
  return p;
}

int main() {
  void* pad = UnderflowAllocatePad(kBytes);
  auto* d = static_cast<unsigned char*>(UnderflowAllocateTarget(kBytes));
  EXAMPLE_CHECK_CUDA(cudaMemset(pad, 0x77, kBytes));
  UnderflowFillKernel<<<(kBytes + 255) / 256, 256>>>(d, kBytes);
  if (BadWriteStaysMapped(d, kBytes, -kHeaderBytes, kHeaderBytes,
                          kDevicePageBytes, "oob_underflow")) {
    UnderflowHeaderKernel<<<1, 32>>>(d, kHeaderBytes);
  }
  EXAMPLE_CHECK_CUDA(cudaGetLastError());
  EXAMPLE_CHECK_CUDA(cudaDeviceSynchronize());
  std::vector<unsigned char> h(kBytes);
  EXAMPLE_CHECK_CUDA(cudaMemcpy(h.data(), d, kBytes, cudaMemcpyDeviceToHost));
  EXAMPLE_CHECK_CUDA(cudaFree(d));
  EXAMPLE_CHECK_CUDA(cudaFree(pad));
  std::printf(
      "oob_underflow: wrote %d bytes before a %zu-byte block; "
      "in-bounds checksum %llu\n",
      kHeaderBytes, kBytes, ByteSum(h.data(), 0, kBytes));
  return 0;
}
