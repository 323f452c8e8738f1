// oob_neighbour: two 4096-byte cudaMalloc blocks; a kernel writes the 64
// bytes right after the end of the first one. Without the tool those bytes
// are usually the start of the second block (silent corruption of a
// neighbour: nothing faults, nothing fails).
//
// Expected report (guard=1): exactly one error, kind "oob-write", offset
// 4096, bytes 64 (first_offset 4096, last_offset 4159, changed_bytes 64),
// allocation {api "cudaMalloc", bytes 4096} with NeighbourAllocateFirst in
// its stack (not NeighbourAllocateSecond: under the tool the write hits the
// first block's tail redzone), kernels containing NeighbourSpillKernel
// (check=kernel: exactly that one). stdout prints only the first block's
// in-bounds checksum (the second block's contents differ without the tool,
// by the very bug), the same with and without it; exit 0.
#include <cuda_runtime.h>

#include <cstdio>
#include <vector>

#include "example_check.h"
#include "guard_example.h"

constexpr size_t kBytes = 4096;
constexpr int kSpillBytes = 64;

__global__ void NeighbourFillKernel(unsigned int* a, unsigned int* b, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    a[i] = 0x01010101u * (i & 0x7f);
    b[i] = 0xdeadbeefu ^ i;
  }
}

// The bug: a "row" of 1024 + 16 words written into a 1024-word block.
__global__ void NeighbourSpillKernel(volatile unsigned int* a, int words) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < words) a[i] = ~a[i];
}

__attribute__((noinline)) void* NeighbourAllocateFirst(size_t bytes) {
  void* p = nullptr;
  EXAMPLE_CHECK_CUDA(cudaMalloc(&p, bytes));
  return p;
}

__attribute__((noinline)) void* NeighbourAllocateSecond(size_t bytes) {
  void* p = nullptr;
  EXAMPLE_CHECK_CUDA(cudaMalloc(&p, bytes));
  return p;
}

int main() {
  auto* a = static_cast<unsigned int*>(NeighbourAllocateFirst(kBytes));
  auto* b = static_cast<unsigned int*>(NeighbourAllocateSecond(kBytes));
  const int words = static_cast<int>(kBytes / 4);
  NeighbourFillKernel<<<(words + 255) / 256, 256>>>(a, b, words);
  // The kernel flips all 1024 words of a[] and then 16 more: the neighbour's.
  const int spill_words = words + kSpillBytes / 4;
  if (BadWriteStaysMapped(a, kBytes, kBytes, kSpillBytes, kDevicePageBytes,
                          "oob_neighbour")) {
    NeighbourSpillKernel<<<(spill_words + 255) / 256, 256>>>(a, spill_words);
  }
  EXAMPLE_CHECK_CUDA(cudaGetLastError());
  EXAMPLE_CHECK_CUDA(cudaDeviceSynchronize());
  std::vector<unsigned char> h(kBytes);
  EXAMPLE_CHECK_CUDA(cudaMemcpy(h.data(), a, kBytes, cudaMemcpyDeviceToHost));
  EXAMPLE_CHECK_CUDA(cudaFree(a));
  EXAMPLE_CHECK_CUDA(cudaFree(b));
  std::printf(
      "oob_neighbour: wrote %d bytes past a %zu-byte block; first "
      "block checksum %llu\n",
      kSpillBytes, kBytes, ByteSum(h.data(), 0, kBytes));
  return 0;
}
