// invalid_free: cudaFree on pointers that no allocation returned.
//
// Expected report: exactly two errors of kind "invalid-free", api
// "cudaFree": one for an interior pointer (base + 4096) of the 65536-byte
// cudaMalloc from InvalidFreeAllocate, with offset 4096, the allocation
// attached and InvalidFreeInterior (invalid_free.cu) in its stack; one for a
// plain host pointer from malloc(), with InvalidFreeHostPointer in its stack.
// The buffer is then freed correctly, so there are no leaks. The CUDA return
// codes are printed and must be the same with and without the tool (both bad
// frees fail with cudaErrorInvalidValue on current drivers).
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

#include "example_check.h"

constexpr size_t kBytes = 64 << 10;
constexpr size_t kInteriorOffset = 4096;

void PrintResult(const char* what, cudaError_t err) {
  std::printf("invalid_free: %s -> %d (%s)\n", what, static_cast<int>(err),
              cudaGetErrorName(err));
}

__attribute__((noinline)) char* InvalidFreeAllocate(size_t bytes) {
  void* p = nullptr;
  EXAMPLE_CHECK_CUDA(cudaMalloc(&p, bytes));
  EXAMPLE_CHECK_CUDA(cudaMemset(p, 0, bytes));
  return static_cast<char*>(p);
}

__attribute__((noinline)) cudaError_t InvalidFreeInterior(char* base) {
  cudaError_t err = cudaFree(base + kInteriorOffset);
  return err;
}

__attribute__((noinline)) cudaError_t InvalidFreeHostPointer(void* host) {
  cudaError_t err = cudaFree(host);
  return err;
}

int main() {
  char* p = InvalidFreeAllocate(kBytes);
  PrintResult("cudaFree(interior pointer)", InvalidFreeInterior(p));
  PrintResult("cudaGetLastError", cudaGetLastError());
  void* host = std::malloc(4096);
  PrintResult("cudaFree(host pointer)", InvalidFreeHostPointer(host));
  PrintResult("cudaGetLastError", cudaGetLastError());
  std::free(host);
  PrintResult("cudaFree(base pointer)", cudaFree(p));
  return 0;
}
