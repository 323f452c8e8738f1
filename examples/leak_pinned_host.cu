// leak_pinned_host: page-locked host memory that is never given back.
//
// Expected report: two leak entries, both kind "pinned-host" on device -1
// (host): api "cudaMallocHost", count 2, bytes 131072 (2 x 64 KiB), with
// LeakPinnedWithMallocHost (leak_pinned_host.cu) in its stack; and api
// "cudaHostAlloc", count 1, bytes 262144, with LeakPinnedWithHostAlloc in its
// stack. The cudaMallocHost buffer freed with cudaFreeHost by
// PinnedAllocAndFree is not reported. No errors.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstring>

#include "example_check.h"

constexpr int kMallocHostCount = 2;
constexpr size_t kMallocHostBytes = 64 << 10;
constexpr size_t kHostAllocBytes = 256 << 10;

__attribute__((noinline)) void LeakPinnedWithMallocHost(void** out, int count,
                                                        size_t bytes) {
  for (int i = 0; i < count; ++i) {
    EXAMPLE_CHECK_CUDA(cudaMallocHost(&out[i], bytes));
    std::memset(out[i], 0x11, bytes);
  }
}

__attribute__((noinline)) void* LeakPinnedWithHostAlloc(size_t bytes) {
  void* p = nullptr;
  EXAMPLE_CHECK_CUDA(cudaHostAlloc(&p, bytes, cudaHostAllocPortable));
  std::memset(p, 0x22, bytes);
  return p;
}

__attribute__((noinline)) void PinnedAllocAndFree(size_t bytes) {
  void* p = nullptr;
  EXAMPLE_CHECK_CUDA(cudaMallocHost(&p, bytes));
  std::memset(p, 0x33, bytes);
  EXAMPLE_CHECK_CUDA(cudaFreeHost(p));
}

int main() {
  void* leaked[kMallocHostCount] = {};
  LeakPinnedWithMallocHost(leaked, kMallocHostCount, kMallocHostBytes);
  void* leaked_host_alloc = LeakPinnedWithHostAlloc(kHostAllocBytes);
  PinnedAllocAndFree(kMallocHostBytes);
  // Use the buffers so they are not optimised away.
  void* device = nullptr;
  EXAMPLE_CHECK_CUDA(cudaMalloc(&device, kHostAllocBytes));
  EXAMPLE_CHECK_CUDA(cudaMemcpy(device, leaked_host_alloc, kHostAllocBytes,
                                cudaMemcpyHostToDevice));
  EXAMPLE_CHECK_CUDA(
      cudaMemcpy(leaked[0], device, kMallocHostBytes, cudaMemcpyDeviceToHost));
  EXAMPLE_CHECK_CUDA(cudaFree(device));
  std::printf(
      "leak_pinned_host: leaked %d x %zu bytes with cudaMallocHost and %zu "
      "bytes with cudaHostAlloc (first byte %d)\n",
      kMallocHostCount, kMallocHostBytes, kHostAllocBytes,
      static_cast<unsigned char*>(leaked[0])[0]);
  return 0;
}
