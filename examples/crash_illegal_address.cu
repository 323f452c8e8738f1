// crash_illegal_address: a kernel writes through a wild device pointer, so the
// next synchronization returns cudaErrorIllegalAddress (700) and the context
// is lost. The program prints the code and returns 1 (as a program checking
// its errors would).
//
// Expected under the tool: the report is written at the failing call, before
// the program returns (reason "cuda-error"), and again at exit (reason
// "exit"); both carry
//   errors: one "cuda-error", call "cudaDeviceSynchronize", cuda_result 700,
//           cuda_error "cudaErrorIllegalAddress", kernels ending with
//           "write_wild(int*)", stack through main;
//   crash:  kind "cuda-error", the same call and code, recent_kernels holding
//           fill_ok and write_wild, live_blocks 2 (CrashAllocateBuffer's
//           1 MiB cudaMalloc, CrashAllocatePinned's 64 KiB cudaMallocHost).
// stdout and the exit code are the same without the tool.
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>

#include "example_check.h"

__global__ void fill_ok(int* p, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] = i;
}

__global__ void write_wild(int* p) { p[threadIdx.x] = 42; }

__attribute__((noinline)) int* CrashAllocateBuffer(size_t bytes) {
  void* p = nullptr;
  EXAMPLE_CHECK_CUDA(cudaMalloc(&p, bytes));
  return static_cast<int*>(p);
}

__attribute__((noinline)) void* CrashAllocatePinned(size_t bytes) {
  void* p = nullptr;
  EXAMPLE_CHECK_CUDA(cudaMallocHost(&p, bytes));
  return p;
}

int main() {
  const int n = (1 << 20) / sizeof(int);
  int* buffer = CrashAllocateBuffer(n * sizeof(int));
  void* pinned = CrashAllocatePinned(64 << 10);
  fill_ok<<<(n + 255) / 256, 256>>>(buffer, n);
  EXAMPLE_CHECK_CUDA(cudaDeviceSynchronize());
  std::printf("fill_ok done\n");
  // Far from any allocation: page 0 of the device's address space.
  write_wild<<<1, 32>>>(reinterpret_cast<int*>(uintptr_t{0x10}));
  cudaError_t launch = cudaGetLastError();
  std::printf("write_wild launch: %d (%s)\n", static_cast<int>(launch),
              cudaGetErrorName(launch));
  cudaError_t err = cudaDeviceSynchronize();
  std::printf("cudaDeviceSynchronize returned %d (%s)\n", static_cast<int>(err),
              cudaGetErrorName(err));
  (void)pinned;
  return err == cudaSuccess ? 0 : 1;
}
