// crash_segv: a host segfault after some CUDA work. The process must die by
// SIGSEGV with and without the tool.
//
// Expected under the tool: a report with reason "crash" written from the
// signal handler, and
//   crash: kind "signal", signal 11, signal_name "SIGSEGV", code_name
//          "SEGV_MAPERR", fault_address "0x0", recent_kernels holding
//          touch_buffer(float*, int), live_blocks 2 (SegvAllocateDevice's
//          1 MiB cudaMalloc, SegvAllocateManaged's 64 KiB cudaMallocManaged);
//   leaks: both blocks (live when the process died);
// and the line "caught SIGSEGV" on stderr.
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>

#include "example_check.h"

__global__ void touch_buffer(float* p, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] = 1.0f;
}

__attribute__((noinline)) float* SegvAllocateDevice(size_t bytes) {
  void* p = nullptr;
  EXAMPLE_CHECK_CUDA(cudaMalloc(&p, bytes));
  return static_cast<float*>(p);
}

__attribute__((noinline)) float* SegvAllocateManaged(size_t bytes) {
  void* p = nullptr;
  EXAMPLE_CHECK_CUDA(cudaMallocManaged(&p, bytes));
  return static_cast<float*>(p);
}

__attribute__((noinline)) void SegvDereference(volatile int* p) {
  *p = 7;  // p is null
  asm volatile("" ::: "memory");
}

int main(int argc, char** argv) {
  const int n = (1 << 20) / sizeof(float);
  float* device = SegvAllocateDevice(n * sizeof(float));
  float* managed = SegvAllocateManaged(64 << 10);
  touch_buffer<<<(n + 255) / 256, 256>>>(device, n);
  touch_buffer<<<64, 256>>>(managed, (64 << 10) / sizeof(float));
  EXAMPLE_CHECK_CUDA(cudaDeviceSynchronize());
  std::printf("managed[0] = %.1f\n", managed[0]);
  std::fflush(stdout);
  // argc is 1: a null pointer the compiler cannot see through.
  SegvDereference(
      reinterpret_cast<volatile int*>(static_cast<uintptr_t>(argc - 1)));
  std::printf("survived\n");
  (void)argv;
  return 0;
}
