// An explicit memory pool, as a framework that keeps its own pool per device
// sets one up: cudaMemPoolCreate with a size cap, cudaMallocFromPoolAsync,
// the pool made the device's current pool so plain cudaMallocAsync draws
// from it, the owning pool of a pointer asked through the driver
// (CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE), access queries, an allocation past
// the cap that must fail cleanly, and the pool destroyed.
#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <vector>

#include "corpus_check.h"

namespace {

__global__ void Fill(unsigned* out, size_t n, unsigned seed) {
  size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x;
  if (i < n) out[i] = seed * 2654435761u + static_cast<unsigned>(i);
}

__global__ void Sum(const unsigned* in, size_t n, unsigned long long* out) {
  unsigned long long local = 0;
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < n;
       i += size_t{gridDim.x} * blockDim.x)
    local += in[i];
  atomicAdd(out, local);
}

unsigned long long HostSum(size_t n, unsigned seed) {
  unsigned long long s = 0;
  for (size_t i = 0; i < n; ++i)
    s += static_cast<unsigned>(seed * 2654435761u + static_cast<unsigned>(i));
  return s;
}

}  // namespace

int main() {
  corpus::ProgramName() = "pool_custom";
  CORPUS_CHECK(cudaSetDevice(0));
  CORPUS_CHECK(cuInit(0));

  constexpr size_t kCap = size_t{64} << 20;
  cudaMemPoolProps props{};
  props.allocType = cudaMemAllocationTypePinned;
  props.handleTypes = cudaMemHandleTypeNone;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = 0;
  props.maxSize = kCap;
  cudaMemPool_t pool;
  corpus::Rc("cudaMemPoolCreate (64 MiB cap)",
             cudaMemPoolCreate(&pool, &props));

  cudaMemLocation where{};
  where.type = cudaMemLocationTypeDevice;
  where.id = 0;
  cudaMemAccessFlags flags = cudaMemAccessFlagsProtNone;
  corpus::Rc("cudaMemPoolGetAccess device 0",
             cudaMemPoolGetAccess(&flags, pool, &where));
  std::printf("device 0 access: %d\n", static_cast<int>(flags));

  cudaStream_t stream;
  CORPUS_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  unsigned long long* sum = nullptr;
  CORPUS_CHECK(cudaMallocFromPoolAsync(reinterpret_cast<void**>(&sum),
                                       sizeof *sum, pool, stream));

  const size_t sizes[] = {1000, 4096, 1 << 20, 3 << 20, 12345, 8 << 20};
  std::vector<unsigned*> blocks;
  for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; ++k) {
    unsigned* p = nullptr;
    CORPUS_CHECK(cudaMallocFromPoolAsync(reinterpret_cast<void**>(&p),
                                         sizes[k] * sizeof(unsigned), pool,
                                         stream));
    Fill<<<static_cast<unsigned>((sizes[k] + 255) / 256), 256, 0, stream>>>(
        p, sizes[k], static_cast<unsigned>(k + 1));
    CORPUS_CHECK(cudaGetLastError());
    blocks.push_back(p);
  }
  for (size_t k = 0; k < blocks.size(); ++k) {
    CORPUS_CHECK(cudaMemsetAsync(sum, 0, sizeof *sum, stream));
    Sum<<<64, 256, 0, stream>>>(blocks[k], sizes[k], sum);
    unsigned long long got = 0;
    CORPUS_CHECK(
        cudaMemcpyAsync(&got, sum, sizeof got, cudaMemcpyDeviceToHost, stream));
    CORPUS_CHECK(cudaStreamSynchronize(stream));
    unsigned long long want = HostSum(sizes[k], static_cast<unsigned>(k + 1));
    std::printf("block %zu (%zu words): sum %s\n", k, sizes[k],
                got == want ? "right" : "WRONG");
    corpus::Expect(got == want, "block %zu sum %llu, expected %llu", k, got,
                   want);
  }

  // Which pool a pointer came from, and what else the driver says of it.
  CUmemoryPool owner = nullptr;
  corpus::Rc("cuPointerGetAttribute MEMPOOL_HANDLE",
             cuPointerGetAttribute(&owner, CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE,
                                   reinterpret_cast<CUdeviceptr>(blocks[2])));
  std::printf("owner is our pool: %s\n",
              owner == reinterpret_cast<CUmemoryPool>(pool) ? "yes" : "no");
  cudaPointerAttributes attr{};
  corpus::Rc("cudaPointerGetAttributes pool block",
             cudaPointerGetAttributes(&attr, blocks[3]));
  std::printf("pool block: type %d device %d devicePointer==ptr %s\n",
              static_cast<int>(attr.type), attr.device,
              attr.devicePointer == blocks[3] ? "yes" : "no");
  CUdeviceptr base = 0;
  size_t range = 0;
  corpus::Rc("cuMemGetAddressRange pool block",
             cuMemGetAddressRange(
                 &base, &range, reinterpret_cast<CUdeviceptr>(blocks[3]) + 8));
  std::printf(
      "pool block range: offset %lld size %zu\n",
      static_cast<long long>(reinterpret_cast<CUdeviceptr>(blocks[3]) - base),
      range);

  uint64_t used = 0;
  CORPUS_CHECK(
      cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &used));
  std::printf("pool used with %zu blocks live: %llu\n", blocks.size() + 1,
              static_cast<unsigned long long>(used));

  // Past the cap: must fail and leave the stream usable.
  void* too_big = nullptr;
  corpus::Rc("cudaMallocFromPoolAsync past the cap",
             cudaMallocFromPoolAsync(&too_big, kCap, pool, stream));
  corpus::Rc("  cudaGetLastError", cudaGetLastError());
  std::printf("failed allocation left null: %s\n",
              too_big == nullptr ? "yes" : "no");

  for (unsigned* p : blocks) CORPUS_CHECK(cudaFreeAsync(p, stream));
  CORPUS_CHECK(cudaStreamSynchronize(stream));

  // The pool as the device's current pool: cudaMallocAsync uses it.
  corpus::Rc("cudaDeviceSetMemPool", cudaDeviceSetMemPool(0, pool));
  void* from_current = nullptr;
  CORPUS_CHECK(cudaMallocAsync(&from_current, 1 << 20, stream));
  owner = nullptr;
  CORPUS_CHECK(
      cuPointerGetAttribute(&owner, CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE,
                            reinterpret_cast<CUdeviceptr>(from_current)));
  std::printf("cudaMallocAsync drew from our pool: %s\n",
              owner == reinterpret_cast<CUmemoryPool>(pool) ? "yes" : "no");
  CORPUS_CHECK(cudaFreeAsync(from_current, stream));
  CORPUS_CHECK(cudaFreeAsync(sum, stream));
  CORPUS_CHECK(cudaStreamSynchronize(stream));
  cudaMemPool_t default_pool;
  CORPUS_CHECK(cudaDeviceGetDefaultMemPool(&default_pool, 0));
  corpus::Rc("default pool back", cudaDeviceSetMemPool(0, default_pool));

  CORPUS_CHECK(
      cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &used));
  std::printf("pool used after frees: %llu\n",
              static_cast<unsigned long long>(used));
  corpus::Rc("cudaMemPoolTrimTo 0", cudaMemPoolTrimTo(pool, 0));
  uint64_t reserved = 1;
  CORPUS_CHECK(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent,
                                       &reserved));
  std::printf("pool reserved after trim: %llu\n",
              static_cast<unsigned long long>(reserved));
  corpus::Rc("cudaMemPoolDestroy", cudaMemPoolDestroy(pool));
  CORPUS_CHECK(cudaStreamDestroy(stream));
  return corpus::Finish();
}
