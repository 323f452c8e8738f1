// NVTX memory regions of a pool allocator, through the real
// NVTX v3 headers (<nvtx3/nvToolsExtMem.h>) and the tool's NVTX injection.
//
//   gmt_nvtx_mem_program pool
//     A toy pool carves one cudaMalloc(1 MiB) (PoolCreate) into regions and
//     annotates each (nvtxMemRegionsRegister / Unregister / Resize):
//       LeakyCaller       2 x 4096 bytes, never given back       -> leak
//       TidyCaller        1 x 1000, given back by region handle  -> none
//       OverflowAllocate  1 x 1000; OverflowCopy then copies 1500 bytes into
//                         it (inside the pool's block, so CUDA accepts it);
//                         given back                  -> one api-bounds error
//       ResizeCaller      1 x 100, resized to 300, given back    -> none
//     A second pool (cudaMalloc 64 KiB, heap "scratch"): ResetCaller's 3
//     regions, nvtxMemHeapReset; one more region, nvtxMemHeapUnregister,
//     cudaFree                                                   -> none
//     A third pool: one region (DroppedWithBlock), then cudaFree of the pool
//     with the region still registered: it ends with the block  -> none
//     Bad input: a null batch, a zero-size region, an unknown pointer
//     unregistered, an unsupported region type: counted, no effect.
//   The first pool is never freed: leaks are its block (1 MiB, of which 8 KiB
//   in 2 live regions) and LeakyCaller's 2 regions (8 KiB).
//
// Every line printed is a CUDA result or a fixed message: the same with and
// without the tool.
#include <nvtx3/nvToolsExt.h>
#include <nvtx3/nvToolsExtMem.h>

#include <cstring>
#include <vector>

#include "tests/interpose/programs/program_util.h"

namespace {

struct Pool {
  char* base = nullptr;
  size_t bytes = 0;
  size_t used = 0;
  nvtxDomainHandle_t domain = nullptr;
  nvtxMemHeapHandle_t heap = nullptr;
};

NOINLINE Pool PoolCreate(size_t bytes, const char* name) {
  Pool p;
  p.bytes = bytes;
  p.domain = nvtxDomainCreateA("gmt_pool");
  Rt("cudaMalloc(pool)", cudaMalloc(reinterpret_cast<void**>(&p.base), bytes));
  nvtxMemVirtualRangeDesc_t range = {};
  range.size = bytes;
  range.ptr = p.base;
  nvtxMemHeapDesc_t desc = {};
  desc.extCompatID = NVTX_EXT_COMPATID_MEM;
  desc.structSize = sizeof(desc);
  desc.usage = NVTX_MEM_HEAP_USAGE_TYPE_SUB_ALLOCATOR;
  desc.type = NVTX_MEM_TYPE_VIRTUAL_ADDRESS;
  desc.typeSpecificDescSize = sizeof(range);
  desc.typeSpecificDesc = &range;
  desc.messageType = NVTX_MESSAGE_TYPE_ASCII;
  desc.message.ascii = name;
  p.heap = nvtxMemHeapRegister(p.domain, &desc);
  AfterCall();
  return p;
}

// Bump allocation, 256-byte aligned; the region is annotated. `handle`: the
// region handle NVTX gives back, when wanted.
NOINLINE void* PoolAlloc(Pool& p, size_t bytes,
                         nvtxMemRegionHandle_t* handle = nullptr) {
  void* ptr = p.base + p.used;
  p.used += (bytes + 255) / 256 * 256;
  nvtxMemVirtualRangeDesc_t range = {};
  range.size = bytes;
  range.ptr = ptr;
  nvtxMemRegionsRegisterBatch_t batch = {};
  batch.extCompatID = NVTX_EXT_COMPATID_MEM;
  batch.structSize = sizeof(batch);
  batch.regionType = NVTX_MEM_TYPE_VIRTUAL_ADDRESS;
  batch.heap = p.heap;
  batch.regionCount = 1;
  batch.regionDescElementSize = sizeof(range);
  batch.regionDescElements = &range;
  batch.regionHandleElementsOut = handle;
  nvtxMemRegionsRegister(p.domain, &batch);
  AfterCall();
  return ptr;
}

void PoolUnregister(Pool& p, uint32_t ref_type, nvtxMemRegionRef_t ref) {
  nvtxMemRegionsUnregisterBatch_t batch = {};
  batch.extCompatID = NVTX_EXT_COMPATID_MEM;
  batch.structSize = sizeof(batch);
  batch.refType = ref_type;
  batch.refCount = 1;
  batch.refElementSize = sizeof(ref);
  batch.refElements = &ref;
  nvtxMemRegionsUnregister(p.domain, &batch);
}

NOINLINE void PoolFree(Pool& p, void* ptr) {
  nvtxMemRegionRef_t ref;
  ref.pointer = ptr;
  PoolUnregister(p, NVTX_MEM_REGION_REF_TYPE_POINTER, ref);
  AfterCall();
}

NOINLINE void PoolResize(Pool& p, void* ptr, size_t bytes) {
  nvtxMemVirtualRangeDesc_t range = {};
  range.size = bytes;
  range.ptr = ptr;
  nvtxMemRegionsResizeBatch_t batch = {};
  batch.extCompatID = NVTX_EXT_COMPATID_MEM;
  batch.structSize = sizeof(batch);
  batch.regionType = NVTX_MEM_TYPE_VIRTUAL_ADDRESS;
  batch.regionDescCount = 1;
  batch.regionDescElementSize = sizeof(range);
  batch.regionDescElements = &range;
  nvtxMemRegionsResize(p.domain, &batch);
  AfterCall();
}

NOINLINE void* LeakyCaller(Pool& p) {
  void* ptr = PoolAlloc(p, 4096);
  AfterCall();
  return ptr;
}

NOINLINE void TidyCaller(Pool& p) {
  nvtxMemRegionHandle_t handle = nullptr;
  void* ptr = PoolAlloc(p, 1000, &handle);
  Rt("cudaMemset(tidy)", cudaMemset(ptr, 1, 1000));
  // Given back by the handle NVTX returned (the tool's: the address; NVTX
  // without a tool leaves it null, and unregistering null does nothing).
  nvtxMemRegionRef_t ref;
  ref.handle = handle;
  PoolUnregister(p, NVTX_MEM_REGION_REF_TYPE_HANDLE, ref);
  AfterCall();
}

NOINLINE void* OverflowAllocate(Pool& p) {
  void* ptr = PoolAlloc(p, 1000);
  AfterCall();
  return ptr;
}

NOINLINE void OverflowCopy(void* region) {
  static char host[1500];
  std::memset(host, 7, sizeof(host));
  // 500 bytes past the region, still inside the pool's block.
  Rt("cudaMemcpy(overflow)",
     cudaMemcpy(region, host, sizeof(host), cudaMemcpyHostToDevice));
  AfterCall();
}

NOINLINE void ResizeCaller(Pool& p) {
  void* ptr = PoolAlloc(p, 100);
  PoolResize(p, ptr, 300);
  Rt("cudaMemset(resized)", cudaMemset(ptr, 2, 300));
  PoolFree(p, ptr);
  AfterCall();
}

NOINLINE void ResetCaller(Pool& p) {
  for (int i = 0; i < 3; ++i) PoolAlloc(p, 512);
  AfterCall();
}

NOINLINE void DroppedWithBlock(Pool& p) {
  PoolAlloc(p, 64);
  AfterCall();
}

// What a buggy pool might pass: counted by the tool, ignored.
NOINLINE void BadInput(Pool& p) {
  nvtxMemRegionsRegister(p.domain, nullptr);
  nvtxMemVirtualRangeDesc_t range = {};
  range.size = 0;
  range.ptr = p.base;
  nvtxMemRegionsRegisterBatch_t batch = {};
  batch.extCompatID = NVTX_EXT_COMPATID_MEM;
  batch.structSize = sizeof(batch);
  batch.regionType = NVTX_MEM_TYPE_VIRTUAL_ADDRESS;
  batch.heap = p.heap;
  batch.regionCount = 1;
  batch.regionDescElementSize = sizeof(range);
  batch.regionDescElements = &range;
  nvtxMemRegionsRegister(p.domain, &batch);  // zero size
  batch.regionType = 0x11;                   // a CUDA array: not supported
  nvtxMemRegionsRegister(p.domain, &batch);
  nvtxMemRegionRef_t ref;
  ref.pointer = p.base + p.bytes - 1;  // never registered
  PoolUnregister(p, NVTX_MEM_REGION_REF_TYPE_POINTER, ref);
  AfterCall();
}

volatile int g_leaky_calls = 2;

int RunPool() {
  Pool pool = PoolCreate(1 << 20, "main pool");
  // One call site, twice (a volatile bound: the loop must not be unrolled
  // into two call sites).
  for (int i = 0; i < g_leaky_calls; ++i) LeakyCaller(pool);
  TidyCaller(pool);
  void* region = OverflowAllocate(pool);
  OverflowCopy(region);
  PoolFree(pool, region);
  ResizeCaller(pool);
  BadInput(pool);

  Pool scratch = PoolCreate(64 << 10, "scratch");
  ResetCaller(scratch);
  nvtxMemHeapReset(scratch.domain, scratch.heap);
  scratch.used = 0;
  PoolAlloc(scratch, 128);
  nvtxMemHeapUnregister(scratch.domain, scratch.heap);
  Rt("cudaFree(scratch)", cudaFree(scratch.base));

  Pool dropped = PoolCreate(4096, "dropped");
  DroppedWithBlock(dropped);
  Rt("cudaFree(dropped)", cudaFree(dropped.base));
  std::printf("pool done\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 2 && std::strcmp(argv[1], "pool") == 0) return RunPool();
  std::fprintf(stderr, "usage: gmt_nvtx_mem_program pool\n");
  return 2;
}
