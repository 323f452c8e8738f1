// double_free: a device buffer released twice with cudaFree.
//
// Expected report: exactly one error, kind "double-free", api "cudaFree",
// whose stack has DoubleFreeSecondRelease (double_free.cu), whose
// "allocation" is the 65536-byte cudaMalloc from DoubleFreeAllocate and whose
// "first_free" stack has DoubleFreeFirstRelease. cudaFree(nullptr) is legal
// and must not be reported. No leaks. The CUDA return codes are printed and
// must be the same with and without the tool (the second cudaFree fails with
// cudaErrorInvalidValue on current drivers).
#include <cuda_runtime.h>

#include <cstdio>

#include "example_check.h"

constexpr size_t kBytes = 64 << 10;

void PrintResult(const char* what, cudaError_t err) {
  std::printf("double_free: %s -> %d (%s)\n", what, static_cast<int>(err),
              cudaGetErrorName(err));
}

__attribute__((noinline)) void* DoubleFreeAllocate(size_t bytes) {
  void* p = nullptr;
  EXAMPLE_CHECK_CUDA(cudaMalloc(&p, bytes));
  EXAMPLE_CHECK_CUDA(cudaMemset(p, 0, bytes));
  return p;
}

__attribute__((noinline)) cudaError_t DoubleFreeFirstRelease(void* p) {
  cudaError_t err = cudaFree(p);
  return err;
}

__attribute__((noinline)) cudaError_t DoubleFreeSecondRelease(void* p) {
  cudaError_t err = cudaFree(p);
  return err;
}

int main() {
  void* p = DoubleFreeAllocate(kBytes);
  PrintResult("first cudaFree", DoubleFreeFirstRelease(p));
  PrintResult("second cudaFree", DoubleFreeSecondRelease(p));
  PrintResult("cudaGetLastError", cudaGetLastError());
  PrintResult("cudaFree(nullptr)", cudaFree(nullptr));
  // The context is still usable afterwards.
  void* q = nullptr;
  PrintResult("cudaMalloc after", cudaMalloc(&q, kBytes));
  PrintResult("cudaFree after", cudaFree(q));
  return 0;
}
