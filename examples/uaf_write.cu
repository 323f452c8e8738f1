// uaf_write: a 64 KiB cudaMalloc block is freed, then a kernel still writes
// 32 bytes into it (a stale pointer kept by "the other stage");
// cudaDeviceSynchronize follows.
//
// Expected report (guard=1, default quarantine): exactly one error, kind
// "uaf-write", offset 128, bytes 32 (first_offset 128, last_offset 159,
// changed_bytes 32), allocation {api "cudaMalloc", bytes 65536} with
// UafWriteAllocate in its stack, first_free {api "cudaFree"} with
// UafWriteRelease in its stack, kernels containing UafStaleWriteKernel
// (check=kernel: exactly that one). Without the tool the freed bytes stay
// mapped (UafKeeperAllocate's live block shares their 2 MiB page), so
// nothing faults. stdout (the keeper's checksum) is the same with and without
// the tool; exit 0.
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <vector>

#include "example_check.h"
#include "guard_example.h"

constexpr size_t kBytes = 64 << 10;
constexpr int kStaleOffset = 128;
constexpr int kStaleBytes = 32;

__global__ void UafFillKernel(unsigned char* p, int n, int salt) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] = static_cast<unsigned char>(i * 13 + salt);
}

__global__ void UafStaleWriteKernel(volatile unsigned char* stale, int offset,
                                    int count) {
  int i = threadIdx.x;
  if (i < count) {
    stale[offset + i] = static_cast<unsigned char>(~stale[offset + i]);
  }
}

__attribute__((noinline)) unsigned char* UafKeeperAllocate(size_t bytes) {
  void* p = nullptr;
  EXAMPLE_CHECK_CUDA(cudaMalloc(&p, bytes));
  return static_cast<unsigned char*>(p);
}

__attribute__((noinline)) unsigned char* UafWriteAllocate(size_t bytes) {
  void* p = nullptr;
  EXAMPLE_CHECK_CUDA(cudaMalloc(&p, bytes));
  return static_cast<unsigned char*>(p);
}

__attribute__((noinline)) void UafWriteRelease(void* p) {
  EXAMPLE_CHECK_CUDA(cudaFree(p));
}

int main() {
  unsigned char* keeper = UafKeeperAllocate(kBytes);
  unsigned char* block = UafWriteAllocate(kBytes);
  const int n = static_cast<int>(kBytes);
  UafFillKernel<<<(n + 255) / 256, 256>>>(keeper, n, 1);
  UafFillKernel<<<(n + 255) / 256, 256>>>(block, n, 2);
  // Only write into the freed block if a live block (the keeper) keeps its
  // page mapped when the tool is absent.
  const bool safe =
      reinterpret_cast<uintptr_t>(keeper) / kDevicePageBytes ==
      reinterpret_cast<uintptr_t>(block + kStaleOffset) / kDevicePageBytes;
  if (!safe) {
    std::fprintf(stderr,
                 "uaf_write: freed block not in the keeper's 2 MiB "
                 "page; the stale write is skipped\n");
  }
  UafWriteRelease(block);
  if (safe) UafStaleWriteKernel<<<1, 32>>>(block, kStaleOffset, kStaleBytes);
  EXAMPLE_CHECK_CUDA(cudaGetLastError());
  EXAMPLE_CHECK_CUDA(cudaDeviceSynchronize());
  std::vector<unsigned char> h(kBytes);
  EXAMPLE_CHECK_CUDA(
      cudaMemcpy(h.data(), keeper, kBytes, cudaMemcpyDeviceToHost));
  EXAMPLE_CHECK_CUDA(cudaFree(keeper));
  std::printf(
      "uaf_write: wrote %d bytes at offset %d of a freed %zu-byte "
      "block; keeper checksum %llu\n",
      kStaleBytes, kStaleOffset, kBytes, ByteSum(h.data(), 0, kBytes));
  return 0;
}
