// oob_few_kib: a classic off-by-N launch. A 1 MiB buffer holds 262144
// 32-bit words; the element-wise kernel has no bounds check and the host
// sizes its grid as n / 256 + 3 blocks of 256 threads ("rounded up" for a
// 3-block halo the buffer does not have), so the last three blocks write
// 768 words = 3072 bytes (3 KiB) past the end.
//
// Expected report (guard=1): exactly one error, kind "oob-write", offset
// 1048576, bytes 3072 (first_offset 1048576, last_offset 1051647,
// changed_bytes 3072: the kernel XORs every word with 0xa5a5a5a5, which
// changes every byte), allocation {api "cudaMalloc", bytes 1048576} with
// FewKibAllocate in its stack, kernels containing FewKibScrambleKernel
// (check=kernel: exactly that one). stdout (the in-bounds checksum) is the
// same with and without the tool; exit 0.
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <vector>

#include "example_check.h"
#include "guard_example.h"

constexpr size_t kBytes = 1 << 20;
constexpr int kThreads = 256;
constexpr int kExtraBlocks = 3;  // the bug

__global__ void FewKibFillKernel(uint32_t* data, size_t n) {
  size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i < n) data[i] = static_cast<uint32_t>(i) * 2654435761u;
}

// No `if (i < n)`: the grid decides how far it writes.
__global__ void FewKibScrambleKernel(volatile uint32_t* data, uint32_t key) {
  size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  data[i] = data[i] ^ key;
}

__attribute__((noinline)) uint32_t* FewKibAllocate(size_t bytes) {
  void* p = nullptr;
  EXAMPLE_CHECK_CUDA(cudaMalloc(&p, bytes));
  return static_cast<uint32_t*>(p);
}

int main() {
  uint32_t* d = FewKibAllocate(kBytes);
  const size_t n = kBytes / sizeof(uint32_t);
  FewKibFillKernel<<<(n + kThreads - 1) / kThreads, kThreads>>>(d, n);
  const int blocks = static_cast<int>(n / kThreads) + kExtraBlocks;
  const size_t overrun = static_cast<size_t>(blocks) * kThreads * 4 - kBytes;
  if (BadWriteStaysMapped(d, kBytes, kBytes, overrun, kDevicePageBytes,
                          "oob_few_kib")) {
    FewKibScrambleKernel<<<blocks, kThreads>>>(d, 0xa5a5a5a5u);
  }
  EXAMPLE_CHECK_CUDA(cudaGetLastError());
  EXAMPLE_CHECK_CUDA(cudaDeviceSynchronize());
  std::vector<unsigned char> h(kBytes);
  EXAMPLE_CHECK_CUDA(cudaMemcpy(h.data(), d, kBytes, cudaMemcpyDeviceToHost));
  EXAMPLE_CHECK_CUDA(cudaFree(d));
  std::printf(
      "oob_few_kib: %d blocks of %d threads over %zu words: %zu "
      "bytes past the end; in-bounds checksum %llu\n",
      blocks, kThreads, n, overrun, ByteSum(h.data(), 0, kBytes));
  return 0;
}
