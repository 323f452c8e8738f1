// nvtx_mem_pool: a toy pool allocator annotated with NVTX's memory API, the
// way RMM-style pools describe their sub-allocations to compute-sanitizer.
//
// The pool takes one cudaMalloc(4 MiB) (PoolCreate), registers it as an
// NVTX_MEM_HEAP_USAGE_TYPE_SUB_ALLOCATOR heap named "toy pool" and hands out
// 256-byte aligned regions, each registered with nvtxMemRegionsRegister and
// given back with nvtxMemRegionsUnregister. The pool lives until the process
// ends (a global pool): its block is never freed.
//
//   LeakyRequest     4096 bytes, filled by a kernel, never given back
//   TidyRequest      3 x 1024 bytes, used by a kernel and given back
//   OverflowRequest  1000 bytes; OverflowCopy copies 1500 bytes into it:
//                    500 bytes past the region, into the next region, still
//                    inside the pool's block, so CUDA accepts it
//
// Expected report (nvtx_mem=1, the default):
//   * leaks: one "nvtx-region" entry from LeakyRequest (count 1, 4096
//     bytes, pool_api "cudaMalloc", heap_name "toy pool"), and the pool's
//     block, one "cudaMalloc" entry from PoolCreate (4 MiB, nvtx_regions 1,
//     nvtx_region_bytes 4096); summary.leaks 2, summary.leaked_bytes 4 MiB,
//     summary.nvtx_region_leaks 1;
//   * errors: exactly one api-bounds from OverflowCopy (call "cudaMemcpy",
//     bytes 1500, cuda_error "cudaSuccess") whose allocation is the
//     1000-byte nvtx-region registered under OverflowRequest;
//   * nvtx_mem: 1 heap, 5 regions registered, 4 unregistered, 1 live.
// With nvtx_mem=0 the pool is opaque: no nvtx-region leak, no error.
// Without the tool: the same output and exit code (the overflow succeeds).
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>
#include <nvtx3/nvToolsExtMem.h>

#include <cstdio>
#include <cstring>
#include <vector>

#include "example_check.h"

namespace {

constexpr size_t kPoolBytes = 4 << 20;

struct Pool {
  char* base = nullptr;
  size_t used = 0;
  nvtxDomainHandle_t domain = nullptr;
  nvtxMemHeapHandle_t heap = nullptr;
};

Pool g_pool;  // lives until exit, like a framework's pool

__global__ void Fill(unsigned char* p, size_t n, unsigned char v) {
  size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i < n) p[i] = v;
}

__attribute__((noinline)) void PoolCreate() {
  // compute-sanitizer wants the runtime initialized before NVTX memory calls.
  EXAMPLE_CHECK_CUDA(cudaFree(nullptr));
  g_pool.domain = nvtxDomainCreateA("toy_pool");
  EXAMPLE_CHECK_CUDA(cudaMalloc(&g_pool.base, kPoolBytes));
  nvtxMemVirtualRangeDesc_t range = {};
  range.size = kPoolBytes;
  range.ptr = g_pool.base;
  nvtxMemHeapDesc_t desc = {};
  desc.extCompatID = NVTX_EXT_COMPATID_MEM;
  desc.structSize = sizeof(desc);
  desc.usage = NVTX_MEM_HEAP_USAGE_TYPE_SUB_ALLOCATOR;
  desc.type = NVTX_MEM_TYPE_VIRTUAL_ADDRESS;
  desc.typeSpecificDescSize = sizeof(range);
  desc.typeSpecificDesc = &range;
  desc.messageType = NVTX_MESSAGE_TYPE_ASCII;
  desc.message.ascii = "toy pool";
  g_pool.heap = nvtxMemHeapRegister(g_pool.domain, &desc);
}

__attribute__((noinline)) void* PoolAllocate(size_t bytes) {
  if (g_pool.used + bytes > kPoolBytes) return nullptr;
  void* ptr = g_pool.base + g_pool.used;
  g_pool.used += (bytes + 255) / 256 * 256;
  nvtxMemVirtualRangeDesc_t range = {};
  range.size = bytes;
  range.ptr = ptr;
  nvtxMemRegionsRegisterBatch_t batch = {};
  batch.extCompatID = NVTX_EXT_COMPATID_MEM;
  batch.structSize = sizeof(batch);
  batch.regionType = NVTX_MEM_TYPE_VIRTUAL_ADDRESS;
  batch.heap = g_pool.heap;
  batch.regionCount = 1;
  batch.regionDescElementSize = sizeof(range);
  batch.regionDescElements = &range;
  nvtxMemRegionsRegister(g_pool.domain, &batch);
  return ptr;
}

// A bump pool: memory goes back only when the pool dies; the region ends now.
__attribute__((noinline)) void PoolRelease(void* ptr) {
  nvtxMemRegionRef_t ref;
  ref.pointer = ptr;
  nvtxMemRegionsUnregisterBatch_t batch = {};
  batch.extCompatID = NVTX_EXT_COMPATID_MEM;
  batch.structSize = sizeof(batch);
  batch.refType = NVTX_MEM_REGION_REF_TYPE_POINTER;
  batch.refCount = 1;
  batch.refElementSize = sizeof(ref);
  batch.refElements = &ref;
  nvtxMemRegionsUnregister(g_pool.domain, &batch);
}

__attribute__((noinline)) void LeakyRequest() {
  auto* p = static_cast<unsigned char*>(PoolAllocate(4096));
  Fill<<<16, 256>>>(p, 4096, 1);
  EXAMPLE_CHECK_CUDA(cudaDeviceSynchronize());
}

__attribute__((noinline)) void TidyRequest() {
  std::vector<void*> held;
  for (int i = 0; i < 3; ++i) held.push_back(PoolAllocate(1024));
  for (void* p : held) {
    Fill<<<4, 256>>>(static_cast<unsigned char*>(p), 1024, 2);
  }
  EXAMPLE_CHECK_CUDA(cudaDeviceSynchronize());
  for (void* p : held) PoolRelease(p);
}

__attribute__((noinline)) void* OverflowRequest() { return PoolAllocate(1000); }

__attribute__((noinline)) cudaError_t OverflowCopy(void* region) {
  static unsigned char host[1500];
  std::memset(host, 3, sizeof(host));
  // The bug: the region is 1000 bytes.
  return cudaMemcpy(region, host, sizeof(host), cudaMemcpyHostToDevice);
}

}  // namespace

int main() {
  PoolCreate();
  LeakyRequest();
  TidyRequest();
  void* region = OverflowRequest();
  cudaError_t copied = OverflowCopy(region);
  EXAMPLE_CHECK_CUDA(cudaDeviceSynchronize());
  PoolRelease(region);
  std::printf(
      "nvtx_mem_pool: 4096-byte region leaked; 1500-byte copy into a "
      "1000-byte region -> %d (%s)\n",
      static_cast<int>(copied), cudaGetErrorName(copied));
  return 0;
}
