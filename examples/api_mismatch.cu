// api_mismatch: device memory from cudaMalloc handed to cudaFreeHost.
//
// Expected report: exactly one error, kind "api-mismatch", api
// "cudaFreeHost", with MismatchFreeHost (api_mismatch.cu) in its stack and
// the 131072-byte cudaMalloc from MismatchAllocate as its "allocation". The
// wrong call fails (the return codes are printed, and must be the same with
// and without the tool), the allocation stays live, and the correct cudaFree
// in MismatchProperFree then releases it: no leaks, no further errors.
#include <cuda_runtime.h>

#include <cstdio>

#include "example_check.h"

constexpr size_t kBytes = 128 << 10;

void PrintResult(const char* what, cudaError_t err) {
  std::printf("api_mismatch: %s -> %d (%s)\n", what, static_cast<int>(err),
              cudaGetErrorName(err));
}

__attribute__((noinline)) void* MismatchAllocate(size_t bytes) {
  void* p = nullptr;
  EXAMPLE_CHECK_CUDA(cudaMalloc(&p, bytes));
  EXAMPLE_CHECK_CUDA(cudaMemset(p, 0, bytes));
  return p;
}

__attribute__((noinline)) cudaError_t MismatchFreeHost(void* p) {
  cudaError_t err = cudaFreeHost(p);
  return err;
}

__attribute__((noinline)) cudaError_t MismatchProperFree(void* p) {
  cudaError_t err = cudaFree(p);
  return err;
}

int main() {
  void* p = MismatchAllocate(kBytes);
  PrintResult("cudaFreeHost(device pointer)", MismatchFreeHost(p));
  PrintResult("cudaGetLastError", cudaGetLastError());
  PrintResult("cudaFree(device pointer)", MismatchProperFree(p));
  return 0;
}
