// leak_reachable: one block truly lost, one cache kept in a global.
//
// Expected report (reachability=1, the default): two cudaMalloc leak entries,
//   * 1 MiB from DropOnlyPointer, "state": "lost" (its only pointer was
//     overwritten: "definitely lost");
//   * 4 x 256 KiB from FillCache, "state": "reachable" (g_cache, a global,
//     still points to them at exit: "still reachable", like a framework's
//     cache).
// reachability.ran is true and lost_bytes == 1048576,
// reachable_bytes == 1048576. No errors.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstring>

#include "example_check.h"

constexpr size_t kLostBytes = 1 << 20;
constexpr int kCacheEntries = 4;
constexpr size_t kCacheBytes = 256 << 10;

// A cache that lives until the process dies.
void* g_cache[kCacheEntries];
void* volatile g_scratch;

__global__ void FillKernel(unsigned char* p, size_t n, unsigned char v) {
  size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i < n) p[i] = v;
}

__attribute__((noinline)) void FillCache() {
  for (int i = 0; i < kCacheEntries; ++i) {
    EXAMPLE_CHECK_CUDA(cudaMalloc(&g_cache[i], kCacheBytes));
  }
}

// Uses a block, then loses the only pointer to it.
__attribute__((noinline)) void DropOnlyPointer() {
  EXAMPLE_CHECK_CUDA(cudaMalloc(const_cast<void**>(&g_scratch), kLostBytes));
  FillKernel<<<(kLostBytes + 255) / 256, 256>>>(
      static_cast<unsigned char*>(g_scratch), kLostBytes, 3);
  EXAMPLE_CHECK_CUDA(cudaDeviceSynchronize());
  g_scratch = nullptr;
}

// Clears the stack below main, where stale copies of the dropped pointer may
// lie (frames of returned calls), as LeakSanitizer's own tests do.
__attribute__((noinline)) void ScrubStack() {
  volatile char scratch[64 * 1024];
  std::memset(const_cast<char*>(scratch), 0, sizeof(scratch));
  asm volatile("" : : "r"(scratch) : "memory");
}

int main() {
  FillCache();
  DropOnlyPointer();
  ScrubStack();
  std::printf("leak_reachable: dropped %zu bytes, cached %d x %zu bytes\n",
              kLostBytes, kCacheEntries, kCacheBytes);
  return 0;
}
