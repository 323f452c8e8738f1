// Stream-ordered allocation through the driver API, as a framework written
// against libcuda does it: cuDeviceGetDefaultMemPool, cuMemAllocAsync and
// cuMemFreeAsync, an explicit pool from cuMemPoolCreate with
// cuMemAllocFromPoolAsync, its attributes through cuMemPoolGetAttribute and
// cuMemPoolSetAttribute, cuMemPoolTrimTo, and the pool set as the device's
// current one with cuDeviceSetMemPool.
#include <cuda.h>

#include <cstdint>
#include <cstdio>
#include <vector>

#include "corpus_check.h"

int main() {
  corpus::ProgramName() = "mempool_driver";
  CORPUS_CHECK(cuInit(0));
  CUdevice dev;
  CORPUS_CHECK(cuDeviceGet(&dev, 0));
  CUcontext ctx;
  CORPUS_CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
  CORPUS_CHECK(cuCtxSetCurrent(ctx));
  CUstream stream;
  CORPUS_CHECK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));

  CUmemoryPool default_pool;
  corpus::Rc("cuDeviceGetDefaultMemPool",
             cuDeviceGetDefaultMemPool(&default_pool, dev));
  constexpr size_t kN = 1 << 20;
  CUdeviceptr a = 0, b = 0;
  corpus::Rc("cuMemAllocAsync 4 MiB", cuMemAllocAsync(&a, kN * 4, stream));
  corpus::Rc("cuMemAllocAsync 1 MiB + 3", cuMemAllocAsync(&b, kN + 3, stream));
  CORPUS_CHECK(cuMemsetD32Async(a, 0xA5A5A5A5u, kN, stream));
  CORPUS_CHECK(cuMemsetD8Async(b, 0x3c, kN + 3, stream));
  std::vector<unsigned> host(kN);
  std::vector<unsigned char> bytes(kN + 3);
  CORPUS_CHECK(cuMemcpyDtoHAsync(host.data(), a, kN * 4, stream));
  CORPUS_CHECK(cuMemcpyDtoHAsync(bytes.data(), b, kN + 3, stream));
  CORPUS_CHECK(cuMemFreeAsync(a, stream));
  CORPUS_CHECK(cuMemFreeAsync(b, stream));
  CORPUS_CHECK(cuStreamSynchronize(stream));
  int wrong = 0;
  for (unsigned v : host)
    if (v != 0xA5A5A5A5u) ++wrong;
  for (unsigned char v : bytes)
    if (v != 0x3c) ++wrong;
  std::printf("default pool round trip: %d wrong\n", wrong);
  corpus::Expect(wrong == 0, "default pool");
  cuuint64_t used = 1;
  CORPUS_CHECK(cuMemPoolGetAttribute(default_pool,
                                     CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &used));
  std::printf("default pool used after frees: %llu\n",
              static_cast<unsigned long long>(used));

  CUmemPoolProps props{};
  props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  props.handleTypes = CU_MEM_HANDLE_TYPE_NONE;
  props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  props.location.id = 0;
  CUmemoryPool pool;
  corpus::Rc("cuMemPoolCreate", cuMemPoolCreate(&pool, &props));
  cuuint64_t threshold = 32 << 20;
  corpus::Rc("cuMemPoolSetAttribute release threshold 32 MiB",
             cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
                                   &threshold));
  std::vector<CUdeviceptr> blocks;
  for (int i = 0; i < 16; ++i) {
    CUdeviceptr p = 0;
    CORPUS_CHECK(
        cuMemAllocFromPoolAsync(&p, (i + 1) * 65536 + i, pool, stream));
    CORPUS_CHECK(cuMemsetD8Async(p, static_cast<unsigned char>(i),
                                 (i + 1) * 65536 + i, stream));
    blocks.push_back(p);
  }
  CORPUS_CHECK(cuStreamSynchronize(stream));
  wrong = 0;
  for (int i = 0; i < 16; ++i) {
    unsigned char last = 0xff;
    CORPUS_CHECK(cuMemcpyDtoH(&last, blocks[i] + (i + 1) * 65536 + i - 1, 1));
    if (last != i) ++wrong;
  }
  std::printf("16 pool blocks: %d wrong\n", wrong);
  corpus::Expect(wrong == 0, "pool blocks");
  CORPUS_CHECK(
      cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &used));
  std::printf("pool used with 16 blocks: %llu\n",
              static_cast<unsigned long long>(used));
  for (CUdeviceptr p : blocks) CORPUS_CHECK(cuMemFreeAsync(p, stream));
  CORPUS_CHECK(cuStreamSynchronize(stream));
  CORPUS_CHECK(
      cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &used));
  std::printf("pool used after frees: %llu\n",
              static_cast<unsigned long long>(used));

  corpus::Rc("cuDeviceSetMemPool", cuDeviceSetMemPool(dev, pool));
  CUmemoryPool current = nullptr;
  CORPUS_CHECK(cuDeviceGetMemPool(&current, dev));
  std::printf("current pool is ours: %s\n", current == pool ? "yes" : "no");
  CUdeviceptr c = 0;
  CORPUS_CHECK(cuMemAllocAsync(&c, 12345, stream));
  CUmemoryPool owner = nullptr;
  CORPUS_CHECK(
      cuPointerGetAttribute(&owner, CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, c));
  std::printf("cuMemAllocAsync used our pool: %s\n",
              owner == pool ? "yes" : "no");
  CORPUS_CHECK(cuMemFreeAsync(c, stream));
  CORPUS_CHECK(cuStreamSynchronize(stream));
  CORPUS_CHECK(cuDeviceSetMemPool(dev, default_pool));
  corpus::Rc("cuMemPoolTrimTo 0", cuMemPoolTrimTo(pool, 0));
  cuuint64_t reserved = 1;
  CORPUS_CHECK(cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT,
                                     &reserved));
  std::printf("pool reserved after trim: %llu\n",
              static_cast<unsigned long long>(reserved));
  corpus::Rc("cuMemPoolDestroy", cuMemPoolDestroy(pool));
  CORPUS_CHECK(cuStreamDestroy(stream));
  CORPUS_CHECK(cuDevicePrimaryCtxRelease(dev));
  return corpus::Finish();
}
