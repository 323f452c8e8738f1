// static_cudart: the leak_runtime bug in a program linked with nvcc's default
// STATIC cudart (libcudart_static.a), so there is no cudaMalloc symbol for
// LD_PRELOAD to interpose: the runtime inside the executable dlopen()s
// libcuda.so.1 and looks the driver up with dlsym / cuGetProcAddress.
//
// Expected report: the three 1 MiB buffers are still tracked, through the
// tool's dlsym / cuGetProcAddress hooks, as one leak entry of count 3 and
// bytes 3145728 on device 0; its api is the driver entry point the static
// runtime used ("cuMemAlloc", or "cudaMalloc" if the tool can tell), and its
// stack contains LeakStaticRuntimeBuffers (static_cudart.cu), below some
// frames of the static runtime. The freed scratch buffer is not reported.
// No errors.
#include <cuda_runtime.h>

#include <cstdio>

#include "example_check.h"

constexpr int kLeakCount = 3;
constexpr size_t kLeakBytes = 1 << 20;

__global__ void FillKernel(unsigned char* p, size_t n, unsigned char v) {
  size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i < n) p[i] = v;
}

__attribute__((noinline)) void LeakStaticRuntimeBuffers(void** out, int count,
                                                        size_t bytes) {
  for (int i = 0; i < count; ++i) {
    EXAMPLE_CHECK_CUDA(cudaMalloc(&out[i], bytes));
  }
}

__attribute__((noinline)) void StaticUseAndFreeScratch(size_t bytes) {
  void* p = nullptr;
  EXAMPLE_CHECK_CUDA(cudaMalloc(&p, bytes));
  FillKernel<<<(bytes + 255) / 256, 256>>>(static_cast<unsigned char*>(p),
                                           bytes, 7);
  EXAMPLE_CHECK_CUDA(cudaDeviceSynchronize());
  EXAMPLE_CHECK_CUDA(cudaFree(p));
}

int main() {
  void* leaked[kLeakCount] = {};
  LeakStaticRuntimeBuffers(leaked, kLeakCount, kLeakBytes);
  for (void* p : leaked) {
    FillKernel<<<(kLeakBytes + 255) / 256, 256>>>(
        static_cast<unsigned char*>(p), kLeakBytes, 1);
  }
  EXAMPLE_CHECK_CUDA(cudaDeviceSynchronize());
  StaticUseAndFreeScratch(kLeakBytes / 2);
  std::printf("static_cudart: leaked %d x %zu bytes with cudaMalloc\n",
              kLeakCount, kLeakBytes);
  return 0;
}
