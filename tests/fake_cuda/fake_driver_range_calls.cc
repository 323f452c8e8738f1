// Fake driver: the calls over a range that the range shims check
// (interpose/shims/managed_range_shims.cc, batch_shims.cc,
// copy_bounds_array_symbol_shims.cc) — advice, prefetch, range attributes,
// cuPointerSetAttribute, array and peer copies, and the batches.
//
// The rule kept from the real driver: a range must lie inside one known
// allocation, else CUDA_ERROR_INVALID_VALUE before anything happens (for
// managed-range calls: one managed block, and count 0 is refused too,
// measured); a batch is refused whole when one element is
// (cuMemBatchDecompressAsync names it in *errorIndex). Everything finishes
// before returning.
#include <fcntl.h>

#include <cstring>

#include "tests/fake_cuda/fake_driver.h"

// The double's own 3-D copy (fake_driver_guard_copies.cc).
extern "C" CUresult Fake_cuMemcpy3D_v2(const CUDA_MEMCPY3D* p) __asm__(
    "cuMemcpy3D_v2");

namespace {

using fake_cuda::CheckManagedRange;
using fake_cuda::CheckMemoryRange;

CUresult Prologue(CUstream stream) {
  fake_cuda::Context* ctx = nullptr;
  if (CUresult r = fake_cuda::RequireContext(&ctx); r != CUDA_SUCCESS) return r;
  if (!fake_cuda::IsValidStream(stream)) return CUDA_ERROR_INVALID_HANDLE;
  return CUDA_SUCCESS;
}

CUresult Prefetch(CUdeviceptr ptr, size_t count, CUstream stream) {
  if (CUresult r = Prologue(stream); r != CUDA_SUCCESS) return r;
  return CheckManagedRange(ptr, count);
}

CUresult RangeBatch(CUdeviceptr* ptrs, size_t* sizes, size_t count,
                    CUstream stream) {
  if (CUresult r = Prologue(stream); r != CUDA_SUCCESS) return r;
  if (ptrs == nullptr || sizes == nullptr || count == 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  for (size_t i = 0; i < count; ++i) {
    if (CheckManagedRange(ptrs[i], sizes[i]) != CUDA_SUCCESS) {
      return CUDA_ERROR_INVALID_VALUE;
    }
  }
  return CUDA_SUCCESS;
}

CUresult Discard(CUdeviceptr* ptrs, size_t* sizes, size_t count,
                 CUstream stream) {
  if (CUresult r = RangeBatch(ptrs, sizes, count, stream); r != CUDA_SUCCESS) {
    return r;
  }
  for (size_t i = 0; i < count; ++i) {
    fake_cuda::DiscardManagedRange(ptrs[i], sizes[i]);
  }
  return CUDA_SUCCESS;
}

CUresult CopyBatch(CUdeviceptr* dsts, CUdeviceptr* srcs, size_t* sizes,
                   size_t count, CUstream stream) {
  if (CUresult r = Prologue(stream); r != CUDA_SUCCESS) return r;
  if (dsts == nullptr || srcs == nullptr || sizes == nullptr || count == 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  for (size_t i = 0; i < count; ++i) {
    if (sizes[i] == 0 || dsts[i] == 0 || srcs[i] == 0 ||
        CheckMemoryRange(dsts[i], sizes[i], false) != CUDA_SUCCESS ||
        CheckMemoryRange(srcs[i], sizes[i], false) != CUDA_SUCCESS) {
      return CUDA_ERROR_INVALID_VALUE;
    }
  }
  for (size_t i = 0; i < count; ++i) {
    std::memmove(reinterpret_cast<void*>(dsts[i]),
                 reinterpret_cast<const void*>(srcs[i]), sizes[i]);
  }
  return CUDA_SUCCESS;
}

// "Decompression" here copies: enough to judge the ranges.
CUresult Decompress(CUmemDecompressParams* params, size_t count,
                    size_t* error_index, CUstream stream) {
  if (error_index != nullptr) *error_index = SIZE_MAX;
  if (CUresult r = Prologue(stream); r != CUDA_SUCCESS) return r;
  if (params == nullptr || count == 0) return CUDA_ERROR_INVALID_VALUE;
  for (size_t i = 0; i < count; ++i) {
    const CUmemDecompressParams& p = params[i];
    const auto src = reinterpret_cast<uintptr_t>(p.src);
    const auto dst = reinterpret_cast<uintptr_t>(p.dst);
    if (p.srcNumBytes == 0 || p.dstNumBytes == 0 ||
        CheckMemoryRange(src, p.srcNumBytes, true) != CUDA_SUCCESS ||
        CheckMemoryRange(dst, p.dstNumBytes, true) != CUDA_SUCCESS) {
      if (error_index != nullptr) *error_index = i;
      return CUDA_ERROR_INVALID_VALUE;
    }
  }
  for (size_t i = 0; i < count; ++i) {
    const CUmemDecompressParams& p = params[i];
    const size_t n =
        p.srcNumBytes < p.dstNumBytes ? p.srcNumBytes : p.dstNumBytes;
    std::memmove(p.dst, p.src, n);
    if (p.dstActBytes != nullptr) *p.dstActBytes = static_cast<cuuint32_t>(n);
  }
  return CUDA_SUCCESS;
}

// An array side: [offset, offset + bytes) of the array's bytes.
CUresult ArraySide(CUarray array, size_t offset, size_t bytes, char** at) {
  void* memory = nullptr;
  size_t size = 0;
  if (!fake_cuda::ArrayMemory(array, &memory, &size)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (offset > size || bytes > size - offset) return CUDA_ERROR_INVALID_VALUE;
  *at = static_cast<char*>(memory) + offset;
  return CUDA_SUCCESS;
}

CUresult DtoA(CUarray dst, size_t offset, CUdeviceptr src, size_t bytes) {
  if (CUresult r = Prologue(nullptr); r != CUDA_SUCCESS) return r;
  char* at = nullptr;
  if (ArraySide(dst, offset, bytes, &at) != CUDA_SUCCESS ||
      CheckMemoryRange(src, bytes, true) != CUDA_SUCCESS) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  std::memmove(at, reinterpret_cast<const void*>(src), bytes);
  return CUDA_SUCCESS;
}

CUresult AtoD(CUdeviceptr dst, CUarray src, size_t offset, size_t bytes) {
  if (CUresult r = Prologue(nullptr); r != CUDA_SUCCESS) return r;
  char* at = nullptr;
  if (ArraySide(src, offset, bytes, &at) != CUDA_SUCCESS ||
      CheckMemoryRange(dst, bytes, true) != CUDA_SUCCESS) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  std::memmove(reinterpret_cast<void*>(dst), at, bytes);
  return CUDA_SUCCESS;
}

// A peer 3-D copy is a 3-D copy here: one address space, two devices.
CUresult Copy3DPeer(const CUDA_MEMCPY3D_PEER* p) {
  if (p == nullptr) return CUDA_ERROR_INVALID_VALUE;
  CUDA_MEMCPY3D d{};
  d.srcXInBytes = p->srcXInBytes;
  d.srcY = p->srcY;
  d.srcZ = p->srcZ;
  d.srcMemoryType = p->srcMemoryType;
  d.srcHost = p->srcHost;
  d.srcDevice = p->srcDevice;
  d.srcArray = p->srcArray;
  d.srcPitch = p->srcPitch;
  d.srcHeight = p->srcHeight;
  d.dstXInBytes = p->dstXInBytes;
  d.dstY = p->dstY;
  d.dstZ = p->dstZ;
  d.dstMemoryType = p->dstMemoryType;
  d.dstHost = p->dstHost;
  d.dstDevice = p->dstDevice;
  d.dstArray = p->dstArray;
  d.dstPitch = p->dstPitch;
  d.dstHeight = p->dstHeight;
  d.WidthInBytes = p->WidthInBytes;
  d.Height = p->Height;
  d.Depth = p->Depth;
  return Fake_cuMemcpy3D_v2(&d);
}

}  // namespace

// ---- Advice, prefetch, range attributes -------------------------------------

FAKE_CU_API(cuMemAdvise_v2,
            (CUdeviceptr ptr, size_t count, CUmem_advise, CUmemLocation)) {
  return Prefetch(ptr, count, nullptr);
}

FAKE_CU_API(cuMemPrefetchAsync_v2,
            (CUdeviceptr ptr, size_t count, CUmemLocation, unsigned int,
             CUstream stream)) {
  return Prefetch(ptr, count, stream);
}

FAKE_CU_API(cuMemPrefetchAsync_v2_ptsz,
            (CUdeviceptr ptr, size_t count, CUmemLocation, unsigned int,
             CUstream stream)) {
  return Prefetch(ptr, count, stream);
}

// Every attribute answers 0 here (no advice is remembered).
FAKE_CU_API(cuMemRangeGetAttribute,
            (void* data, size_t data_size, CUmem_range_attribute,
             CUdeviceptr ptr, size_t count)) {
  if (CUresult r = Prefetch(ptr, count, nullptr); r != CUDA_SUCCESS) return r;
  if (data == nullptr || data_size == 0) return CUDA_ERROR_INVALID_VALUE;
  std::memset(data, 0, data_size);
  return CUDA_SUCCESS;
}

FAKE_CU_API(cuMemRangeGetAttributes,
            (void** data, size_t* data_sizes, CUmem_range_attribute*,
             size_t num_attributes, CUdeviceptr ptr, size_t count)) {
  if (CUresult r = Prefetch(ptr, count, nullptr); r != CUDA_SUCCESS) return r;
  if (data == nullptr || data_sizes == nullptr || num_attributes == 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  for (size_t i = 0; i < num_attributes; ++i) {
    if (data[i] != nullptr) std::memset(data[i], 0, data_sizes[i]);
  }
  return CUDA_SUCCESS;
}

// SYNC_MEMOPS only, on any byte of a device or managed block; an address the
// driver does not know is invalid value.
FAKE_CU_API(cuPointerSetAttribute,
            (const void* value, CUpointer_attribute attribute,
             CUdeviceptr ptr)) {
  if (CUresult r = Prologue(nullptr); r != CUDA_SUCCESS) return r;
  if (value == nullptr || attribute != CU_POINTER_ATTRIBUTE_SYNC_MEMOPS ||
      !fake_cuda::KnownBlockAddress(ptr)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

// A dma-buf of [ptr, ptr + size): whole host pages of one device block
// (CheckDmaBufRange); the handle is a file descriptor the caller closes.
FAKE_CU_API(cuMemGetHandleForAddressRange,
            (void* handle, CUdeviceptr ptr, size_t size,
             CUmemRangeHandleType type, unsigned long long flags)) {
  if (CUresult r = Prologue(nullptr); r != CUDA_SUCCESS) return r;
  if (handle == nullptr || type != CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD ||
      (flags & ~static_cast<unsigned long long>(
                   CU_MEM_RANGE_FLAG_DMA_BUF_MAPPING_TYPE_PCIE)) != 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (CUresult r = fake_cuda::CheckDmaBufRange(ptr, size); r != CUDA_SUCCESS) {
    return r;
  }
  const int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return CUDA_ERROR_OUT_OF_MEMORY;
  *static_cast<int*>(handle) = fd;
  return CUDA_SUCCESS;
}

// ---- Arrays and peers -------------------------------------------------------

FAKE_CU_API(cuMemcpyDtoA_v2,
            (CUarray dst, size_t offset, CUdeviceptr src, size_t bytes)) {
  return DtoA(dst, offset, src, bytes);
}

FAKE_CU_API(cuMemcpyDtoA_v2_ptds,
            (CUarray dst, size_t offset, CUdeviceptr src, size_t bytes)) {
  return DtoA(dst, offset, src, bytes);
}

FAKE_CU_API(cuMemcpyAtoD_v2,
            (CUdeviceptr dst, CUarray src, size_t offset, size_t bytes)) {
  return AtoD(dst, src, offset, bytes);
}

FAKE_CU_API(cuMemcpyAtoD_v2_ptds,
            (CUdeviceptr dst, CUarray src, size_t offset, size_t bytes)) {
  return AtoD(dst, src, offset, bytes);
}

FAKE_CU_API(cuMemcpy3DPeer, (const CUDA_MEMCPY3D_PEER* p)) {
  return Copy3DPeer(p);
}

FAKE_CU_API(cuMemcpy3DPeer_ptds, (const CUDA_MEMCPY3D_PEER* p)) {
  return Copy3DPeer(p);
}

// ---- Batches ----------------------------------------------------------------

FAKE_CU_API(cuMemcpyBatchAsync_v2,
            (CUdeviceptr * dsts, CUdeviceptr* srcs, size_t* sizes, size_t count,
             CUmemcpyAttributes*, size_t*, size_t, CUstream stream)) {
  return CopyBatch(dsts, srcs, sizes, count, stream);
}

FAKE_CU_API(cuMemcpyBatchAsync_v2_ptsz,
            (CUdeviceptr * dsts, CUdeviceptr* srcs, size_t* sizes, size_t count,
             CUmemcpyAttributes*, size_t*, size_t, CUstream stream)) {
  return CopyBatch(dsts, srcs, sizes, count, stream);
}

FAKE_CU_API(cuMemPrefetchBatchAsync,
            (CUdeviceptr * ptrs, size_t* sizes, size_t count, CUmemLocation*,
             size_t*, size_t, unsigned long long, CUstream stream)) {
  return RangeBatch(ptrs, sizes, count, stream);
}

FAKE_CU_API(cuMemPrefetchBatchAsync_ptsz,
            (CUdeviceptr * ptrs, size_t* sizes, size_t count, CUmemLocation*,
             size_t*, size_t, unsigned long long, CUstream stream)) {
  return RangeBatch(ptrs, sizes, count, stream);
}

FAKE_CU_API(cuMemDiscardBatchAsync,
            (CUdeviceptr * ptrs, size_t* sizes, size_t count,
             unsigned long long, CUstream stream)) {
  return Discard(ptrs, sizes, count, stream);
}

FAKE_CU_API(cuMemDiscardBatchAsync_ptsz,
            (CUdeviceptr * ptrs, size_t* sizes, size_t count,
             unsigned long long, CUstream stream)) {
  return Discard(ptrs, sizes, count, stream);
}

FAKE_CU_API(cuMemDiscardAndPrefetchBatchAsync,
            (CUdeviceptr * ptrs, size_t* sizes, size_t count, CUmemLocation*,
             size_t*, size_t, unsigned long long, CUstream stream)) {
  return Discard(ptrs, sizes, count, stream);
}

FAKE_CU_API(cuMemDiscardAndPrefetchBatchAsync_ptsz,
            (CUdeviceptr * ptrs, size_t* sizes, size_t count, CUmemLocation*,
             size_t*, size_t, unsigned long long, CUstream stream)) {
  return Discard(ptrs, sizes, count, stream);
}

FAKE_CU_API(cuMemBatchDecompressAsync,
            (CUmemDecompressParams * params, size_t count, unsigned int,
             size_t* error_index, CUstream stream)) {
  return Decompress(params, count, error_index, stream);
}

FAKE_CU_API(cuMemBatchDecompressAsync_ptsz,
            (CUmemDecompressParams * params, size_t count, unsigned int,
             size_t* error_index, CUstream stream)) {
  return Decompress(params, count, error_index, stream);
}
