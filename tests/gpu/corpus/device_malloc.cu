// Device-side dynamic allocation, as graph and tree codes use it: the device
// heap sized with cudaDeviceSetLimit(cudaLimitMallocHeapSize), kernels that
// malloc/free and new/delete per thread and per block, a block whose pointer
// is handed from one kernel to the next through global memory, and the limit
// read back. Every device allocation is freed on the device.
#include <cuda_runtime.h>

#include <cstdio>

#include "corpus_check.h"

namespace {

__device__ int* g_handoff[64];

// Each thread allocates a small array, fills it, sums it, frees it.
__global__ void PerThread(int* sums, int len) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  int* a = static_cast<int*>(malloc(len * sizeof(int)));
  if (a == nullptr) {
    sums[t] = -1;
    return;
  }
  for (int i = 0; i < len; ++i) a[i] = t + i;
  int s = 0;
  for (int i = 0; i < len; ++i) s += a[i];
  sums[t] = s;
  free(a);
}

// One allocation per block, with new[], left for the next kernel.
__global__ void BlockAllocate(int len) {
  __shared__ int* block_array;
  if (threadIdx.x == 0) block_array = new int[len];
  __syncthreads();
  if (block_array != nullptr)
    for (int i = threadIdx.x; i < len; i += blockDim.x)
      block_array[i] = blockIdx.x * 1000 + i;
  if (threadIdx.x == 0) g_handoff[blockIdx.x] = block_array;
}

__global__ void BlockConsume(int len, long long* sums) {
  int* a = g_handoff[blockIdx.x];
  __shared__ long long s;
  if (threadIdx.x == 0) s = 0;
  __syncthreads();
  if (a != nullptr)
    for (int i = threadIdx.x; i < len; i += blockDim.x)
      atomicAdd(reinterpret_cast<unsigned long long*>(&s),
                static_cast<unsigned long long>(a[i]));
  __syncthreads();
  if (threadIdx.x == 0) {
    sums[blockIdx.x] = a != nullptr ? s : -1;
    delete[] a;
    g_handoff[blockIdx.x] = nullptr;
  }
}

}  // namespace

int main() {
  corpus::ProgramName() = "device_malloc";
  CORPUS_CHECK(cudaSetDevice(0));
  corpus::Rc("cudaDeviceSetLimit heap 64 MiB",
             cudaDeviceSetLimit(cudaLimitMallocHeapSize, size_t{64} << 20));
  size_t heap = 0;
  CORPUS_CHECK(cudaDeviceGetLimit(&heap, cudaLimitMallocHeapSize));
  std::printf("device heap: %zu bytes\n", heap);

  constexpr int kThreads = 64 * 256;
  constexpr int kLen = 50;
  int* sums = nullptr;
  CORPUS_CHECK(cudaMalloc(&sums, kThreads * sizeof(int)));
  PerThread<<<64, 256>>>(sums, kLen);
  CORPUS_CHECK(cudaGetLastError());
  int host[kThreads];
  CORPUS_CHECK(cudaMemcpy(host, sums, sizeof host, cudaMemcpyDeviceToHost));
  int wrong = 0, failed = 0;
  for (int t = 0; t < kThreads; ++t) {
    if (host[t] == -1)
      ++failed;
    else if (host[t] != kLen * t + kLen * (kLen - 1) / 2)
      ++wrong;
  }
  std::printf("per-thread malloc: %d failed, %d wrong\n", failed, wrong);
  corpus::Expect(failed == 0 && wrong == 0, "per-thread malloc");

  constexpr int kBlockLen = 10000;
  long long* block_sums = nullptr;
  CORPUS_CHECK(cudaMalloc(&block_sums, 64 * sizeof(long long)));
  BlockAllocate<<<64, 128>>>(kBlockLen);
  BlockConsume<<<64, 128>>>(kBlockLen, block_sums);
  CORPUS_CHECK(cudaGetLastError());
  long long bs[64];
  CORPUS_CHECK(cudaMemcpy(bs, block_sums, sizeof bs, cudaMemcpyDeviceToHost));
  wrong = 0;
  for (int b = 0; b < 64; ++b) {
    long long want = 1000ll * b * kBlockLen +
                     static_cast<long long>(kBlockLen) * (kBlockLen - 1) / 2;
    if (bs[b] != want) ++wrong;
  }
  std::printf("block new[]/delete[] across kernels: %d wrong\n", wrong);
  corpus::Expect(wrong == 0, "block allocations");

  CORPUS_CHECK(cudaFree(block_sums));
  CORPUS_CHECK(cudaFree(sums));
  return corpus::Finish();
}
