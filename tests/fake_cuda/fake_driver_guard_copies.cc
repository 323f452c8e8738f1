// Fake driver: the rest of the copy and set family the guard-zone shims
// check (interpose/shims/copy_bounds_driver_shims.cc) — unified and peer
// copies, DtoD, 2-D and 3-D descriptors, 16-bit sets, 2-D sets — each with its
// _ptds / _ptsz twin, which behaves the same (the double has no default-stream
// semantics). Everything finishes before returning, "async" forms included.
//
// The rule kept from the real driver: every device-side range must lie inside
// one known block or mapped range, else CUDA_ERROR_INVALID_VALUE, before any
// byte is written. A 2-D or 3-D range runs from its first byte to its last
// byte touched, (rows - 1) * pitch + width; a pitch below the width (over more
// than one row) is CUDA_ERROR_INVALID_VALUE too. Unified sides (cuMemcpy,
// CU_MEMORYTYPE_UNIFIED) may also be host memory the driver does not know.
//
// Defined weak (fake_weak.h): where another file of the double defines the
// same entry point, that one is kept.
#include <cstring>

#include "tests/fake_cuda/fake_driver.h"
#include "tests/fake_cuda/fake_weak.h"

namespace fake_cuda {

// Fallback until the streams file is part of the build: every handle is
// accepted. fake_driver_streams.cc's definition replaces it.
__attribute__((weak)) bool IsValidStream(CUstream) { return true; }

}  // namespace fake_cuda

namespace {

using fake_cuda::CheckMemoryRange;

// The common preamble: a current context and a stream the double knows.
CUresult Prologue(CUstream stream) {
  fake_cuda::Context* ctx = nullptr;
  if (CUresult r = fake_cuda::RequireContext(&ctx); r != CUDA_SUCCESS) return r;
  if (!fake_cuda::IsValidStream(stream)) return CUDA_ERROR_INVALID_HANDLE;
  return CUDA_SUCCESS;
}

// A 1-D copy; `*_device`: that side must be device memory (else it may also
// be unknown host memory).
CUresult Copy(uintptr_t dst, bool dst_device, uintptr_t src, bool src_device,
              size_t bytes, CUstream stream) {
  if (CUresult r = Prologue(stream); r != CUDA_SUCCESS) return r;
  if (bytes == 0) return CUDA_SUCCESS;
  if (dst == 0 || src == 0 ||
      CheckMemoryRange(dst, bytes, dst_device) != CUDA_SUCCESS ||
      CheckMemoryRange(src, bytes, src_device) != CUDA_SUCCESS) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  std::memmove(reinterpret_cast<void*>(dst), reinterpret_cast<void*>(src),
               bytes);
  return CUDA_SUCCESS;
}

// Bytes from the first to one past the last byte of `rows` rows of `width`
// bytes, `pitch` apart; false when the shape is invalid.
bool Span(size_t pitch, size_t width, size_t rows, size_t* span) {
  if (rows > 1 && pitch < width) return false;
  *span = rows == 0 || width == 0 ? 0 : (rows - 1) * pitch + width;
  return true;
}

// A 2-D set of `rows` rows of `width` elements of T, `pitch` bytes apart.
template <typename T>
CUresult Set2D(CUdeviceptr dst, size_t pitch, T value, size_t width,
               size_t rows, CUstream stream) {
  if (CUresult r = Prologue(stream); r != CUDA_SUCCESS) return r;
  size_t span = 0;
  if (!Span(pitch, width * sizeof(T), rows, &span)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (span == 0) return CUDA_SUCCESS;
  if (dst % sizeof(T) != 0 ||
      CheckMemoryRange(dst, span, /*need_device=*/true) != CUDA_SUCCESS) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  for (size_t row = 0; row < rows; ++row) {
    T* p = reinterpret_cast<T*>(dst + row * pitch);
    for (size_t i = 0; i < width; ++i) p[i] = value;
  }
  return CUDA_SUCCESS;
}

template <typename T>
CUresult Set1D(CUdeviceptr dst, T value, size_t count, CUstream stream) {
  return Set2D<T>(dst, count * sizeof(T), value, count, 1, stream);
}

// One side of a 2-D / 3-D descriptor: its first byte, and whether it must be
// device memory. False for arrays (the double has none here) or bad types.
bool SideStart(CUmemorytype type, const void* host, CUdeviceptr device,
               size_t offset, uintptr_t* start, bool* need_device) {
  switch (type) {
    case CU_MEMORYTYPE_HOST:
      *start = reinterpret_cast<uintptr_t>(host) + offset;
      *need_device = false;
      return host != nullptr;
    case CU_MEMORYTYPE_DEVICE:
      *start = device + offset;
      *need_device = true;
      return device != 0;
    case CU_MEMORYTYPE_UNIFIED:
      *start = device + offset;
      *need_device = false;
      return device != 0;
    default:
      return false;
  }
}

// Copies `depth` slices of `rows` rows of `width` bytes. Pitches in bytes;
// slice heights in rows.
CUresult CopyVolume(uintptr_t dst, size_t dst_pitch, size_t dst_slice_rows,
                    bool dst_device, uintptr_t src, size_t src_pitch,
                    size_t src_slice_rows, bool src_device, size_t width,
                    size_t rows, size_t depth) {
  if (width == 0 || rows == 0 || depth == 0) return CUDA_SUCCESS;
  if (depth > 1 && (dst_slice_rows < rows || src_slice_rows < rows)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  size_t dst_span = 0, src_span = 0;
  const size_t dst_rows = (depth - 1) * dst_slice_rows + rows;
  const size_t src_rows = (depth - 1) * src_slice_rows + rows;
  if (!Span(dst_pitch, width, dst_rows, &dst_span) ||
      !Span(src_pitch, width, src_rows, &src_span) ||
      CheckMemoryRange(dst, dst_span, dst_device) != CUDA_SUCCESS ||
      CheckMemoryRange(src, src_span, src_device) != CUDA_SUCCESS) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  for (size_t z = 0; z < depth; ++z) {
    for (size_t y = 0; y < rows; ++y) {
      std::memmove(
          reinterpret_cast<void*>(dst + (z * dst_slice_rows + y) * dst_pitch),
          reinterpret_cast<const void*>(src +
                                        (z * src_slice_rows + y) * src_pitch),
          width);
    }
  }
  return CUDA_SUCCESS;
}

CUresult Copy2D(const CUDA_MEMCPY2D* p, CUstream stream) {
  if (CUresult r = Prologue(stream); r != CUDA_SUCCESS) return r;
  if (p == nullptr) return CUDA_ERROR_INVALID_VALUE;
  uintptr_t dst = 0, src = 0;
  bool dst_device = false, src_device = false;
  if (!SideStart(p->dstMemoryType, p->dstHost, p->dstDevice,
                 p->dstY * p->dstPitch + p->dstXInBytes, &dst, &dst_device) ||
      !SideStart(p->srcMemoryType, p->srcHost, p->srcDevice,
                 p->srcY * p->srcPitch + p->srcXInBytes, &src, &src_device)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  return CopyVolume(dst, p->dstPitch, p->Height, dst_device, src, p->srcPitch,
                    p->Height, src_device, p->WidthInBytes, p->Height, 1);
}

CUresult Copy3D(const CUDA_MEMCPY3D* p, CUstream stream) {
  if (CUresult r = Prologue(stream); r != CUDA_SUCCESS) return r;
  if (p == nullptr) return CUDA_ERROR_INVALID_VALUE;
  uintptr_t dst = 0, src = 0;
  bool dst_device = false, src_device = false;
  if (!SideStart(
          p->dstMemoryType, p->dstHost, p->dstDevice,
          (p->dstZ * p->dstHeight + p->dstY) * p->dstPitch + p->dstXInBytes,
          &dst, &dst_device) ||
      !SideStart(
          p->srcMemoryType, p->srcHost, p->srcDevice,
          (p->srcZ * p->srcHeight + p->srcY) * p->srcPitch + p->srcXInBytes,
          &src, &src_device)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  return CopyVolume(dst, p->dstPitch, p->dstHeight, dst_device, src,
                    p->srcPitch, p->srcHeight, src_device, p->WidthInBytes,
                    p->Height, p->Depth);
}

}  // namespace

// ---- Unified and peer copies ------------------------------------------------

FAKE_CU_API_WEAK(cuMemcpy_ptds,
                 (CUdeviceptr dst, CUdeviceptr src, size_t bytes)) {
  return Copy(dst, false, src, false, bytes, nullptr);
}

FAKE_CU_API_WEAK(cuMemcpyAsync, (CUdeviceptr dst, CUdeviceptr src, size_t bytes,
                                 CUstream stream)) {
  return Copy(dst, false, src, false, bytes, stream);
}

FAKE_CU_API_WEAK(cuMemcpyAsync_ptsz, (CUdeviceptr dst, CUdeviceptr src,
                                      size_t bytes, CUstream stream)) {
  return Copy(dst, false, src, false, bytes, stream);
}

// The contexts are not checked: the double's memory is visible everywhere.
FAKE_CU_API_WEAK(cuMemcpyPeer, (CUdeviceptr dst, CUcontext, CUdeviceptr src,
                                CUcontext, size_t bytes)) {
  return Copy(dst, true, src, true, bytes, nullptr);
}

FAKE_CU_API_WEAK(cuMemcpyPeer_ptds,
                 (CUdeviceptr dst, CUcontext, CUdeviceptr src, CUcontext,
                  size_t bytes)) {
  return Copy(dst, true, src, true, bytes, nullptr);
}

FAKE_CU_API_WEAK(cuMemcpyPeerAsync,
                 (CUdeviceptr dst, CUcontext, CUdeviceptr src, CUcontext,
                  size_t bytes, CUstream stream)) {
  return Copy(dst, true, src, true, bytes, stream);
}

FAKE_CU_API_WEAK(cuMemcpyPeerAsync_ptsz,
                 (CUdeviceptr dst, CUcontext, CUdeviceptr src, CUcontext,
                  size_t bytes, CUstream stream)) {
  return Copy(dst, true, src, true, bytes, stream);
}

// ---- HtoD / DtoH / DtoD -----------------------------------------------------

FAKE_CU_API_WEAK(cuMemcpyHtoD_v2_ptds,
                 (CUdeviceptr dst, const void* src, size_t bytes)) {
  return Copy(dst, true, reinterpret_cast<uintptr_t>(src), false, bytes,
              nullptr);
}

FAKE_CU_API_WEAK(cuMemcpyDtoH_v2_ptds,
                 (void* dst, CUdeviceptr src, size_t bytes)) {
  return Copy(reinterpret_cast<uintptr_t>(dst), false, src, true, bytes,
              nullptr);
}

FAKE_CU_API_WEAK(cuMemcpyDtoD_v2,
                 (CUdeviceptr dst, CUdeviceptr src, size_t bytes)) {
  return Copy(dst, true, src, true, bytes, nullptr);
}

FAKE_CU_API_WEAK(cuMemcpyDtoD_v2_ptds,
                 (CUdeviceptr dst, CUdeviceptr src, size_t bytes)) {
  return Copy(dst, true, src, true, bytes, nullptr);
}

FAKE_CU_API_WEAK(cuMemcpyHtoDAsync_v2_ptsz, (CUdeviceptr dst, const void* src,
                                             size_t bytes, CUstream stream)) {
  return Copy(dst, true, reinterpret_cast<uintptr_t>(src), false, bytes,
              stream);
}

FAKE_CU_API_WEAK(cuMemcpyDtoHAsync_v2_ptsz,
                 (void* dst, CUdeviceptr src, size_t bytes, CUstream stream)) {
  return Copy(reinterpret_cast<uintptr_t>(dst), false, src, true, bytes,
              stream);
}

FAKE_CU_API_WEAK(cuMemcpyDtoDAsync_v2, (CUdeviceptr dst, CUdeviceptr src,
                                        size_t bytes, CUstream stream)) {
  return Copy(dst, true, src, true, bytes, stream);
}

FAKE_CU_API_WEAK(cuMemcpyDtoDAsync_v2_ptsz, (CUdeviceptr dst, CUdeviceptr src,
                                             size_t bytes, CUstream stream)) {
  return Copy(dst, true, src, true, bytes, stream);
}

// ---- 2-D and 3-D copies -----------------------------------------------------

FAKE_CU_API_WEAK(cuMemcpy2D_v2, (const CUDA_MEMCPY2D* p)) {
  return Copy2D(p, nullptr);
}

FAKE_CU_API_WEAK(cuMemcpy2D_v2_ptds, (const CUDA_MEMCPY2D* p)) {
  return Copy2D(p, nullptr);
}

FAKE_CU_API_WEAK(cuMemcpy2DUnaligned_v2, (const CUDA_MEMCPY2D* p)) {
  return Copy2D(p, nullptr);
}

FAKE_CU_API_WEAK(cuMemcpy2DUnaligned_v2_ptds, (const CUDA_MEMCPY2D* p)) {
  return Copy2D(p, nullptr);
}

FAKE_CU_API_WEAK(cuMemcpy2DAsync_v2,
                 (const CUDA_MEMCPY2D* p, CUstream stream)) {
  return Copy2D(p, stream);
}

FAKE_CU_API_WEAK(cuMemcpy2DAsync_v2_ptsz,
                 (const CUDA_MEMCPY2D* p, CUstream stream)) {
  return Copy2D(p, stream);
}

FAKE_CU_API_WEAK(cuMemcpy3D_v2, (const CUDA_MEMCPY3D* p)) {
  return Copy3D(p, nullptr);
}

FAKE_CU_API_WEAK(cuMemcpy3D_v2_ptds, (const CUDA_MEMCPY3D* p)) {
  return Copy3D(p, nullptr);
}

FAKE_CU_API_WEAK(cuMemcpy3DAsync_v2,
                 (const CUDA_MEMCPY3D* p, CUstream stream)) {
  return Copy3D(p, stream);
}

FAKE_CU_API_WEAK(cuMemcpy3DAsync_v2_ptsz,
                 (const CUDA_MEMCPY3D* p, CUstream stream)) {
  return Copy3D(p, stream);
}

// ---- Sets -------------------------------------------------------------------

FAKE_CU_API_WEAK(cuMemsetD8_v2_ptds,
                 (CUdeviceptr dst, unsigned char value, size_t n)) {
  return Set1D<unsigned char>(dst, value, n, nullptr);
}

FAKE_CU_API_WEAK(cuMemsetD16_v2,
                 (CUdeviceptr dst, unsigned short value, size_t n)) {
  return Set1D<unsigned short>(dst, value, n, nullptr);
}

FAKE_CU_API_WEAK(cuMemsetD16_v2_ptds,
                 (CUdeviceptr dst, unsigned short value, size_t n)) {
  return Set1D<unsigned short>(dst, value, n, nullptr);
}

FAKE_CU_API_WEAK(cuMemsetD32_v2,
                 (CUdeviceptr dst, unsigned int value, size_t n)) {
  return Set1D<unsigned int>(dst, value, n, nullptr);
}

FAKE_CU_API_WEAK(cuMemsetD32_v2_ptds,
                 (CUdeviceptr dst, unsigned int value, size_t n)) {
  return Set1D<unsigned int>(dst, value, n, nullptr);
}

FAKE_CU_API_WEAK(cuMemsetD8Async_ptsz, (CUdeviceptr dst, unsigned char value,
                                        size_t n, CUstream stream)) {
  return Set1D<unsigned char>(dst, value, n, stream);
}

FAKE_CU_API_WEAK(cuMemsetD16Async, (CUdeviceptr dst, unsigned short value,
                                    size_t n, CUstream stream)) {
  return Set1D<unsigned short>(dst, value, n, stream);
}

FAKE_CU_API_WEAK(cuMemsetD16Async_ptsz, (CUdeviceptr dst, unsigned short value,
                                         size_t n, CUstream stream)) {
  return Set1D<unsigned short>(dst, value, n, stream);
}

FAKE_CU_API_WEAK(cuMemsetD32Async_ptsz, (CUdeviceptr dst, unsigned int value,
                                         size_t n, CUstream stream)) {
  return Set1D<unsigned int>(dst, value, n, stream);
}

FAKE_CU_API_WEAK(cuMemsetD2D8_v2,
                 (CUdeviceptr dst, size_t pitch, unsigned char value,
                  size_t width, size_t height)) {
  return Set2D<unsigned char>(dst, pitch, value, width, height, nullptr);
}

FAKE_CU_API_WEAK(cuMemsetD2D8_v2_ptds,
                 (CUdeviceptr dst, size_t pitch, unsigned char value,
                  size_t width, size_t height)) {
  return Set2D<unsigned char>(dst, pitch, value, width, height, nullptr);
}

FAKE_CU_API_WEAK(cuMemsetD2D16_v2,
                 (CUdeviceptr dst, size_t pitch, unsigned short value,
                  size_t width, size_t height)) {
  return Set2D<unsigned short>(dst, pitch, value, width, height, nullptr);
}

FAKE_CU_API_WEAK(cuMemsetD2D16_v2_ptds,
                 (CUdeviceptr dst, size_t pitch, unsigned short value,
                  size_t width, size_t height)) {
  return Set2D<unsigned short>(dst, pitch, value, width, height, nullptr);
}

FAKE_CU_API_WEAK(cuMemsetD2D32_v2,
                 (CUdeviceptr dst, size_t pitch, unsigned int value,
                  size_t width, size_t height)) {
  return Set2D<unsigned int>(dst, pitch, value, width, height, nullptr);
}

FAKE_CU_API_WEAK(cuMemsetD2D32_v2_ptds,
                 (CUdeviceptr dst, size_t pitch, unsigned int value,
                  size_t width, size_t height)) {
  return Set2D<unsigned int>(dst, pitch, value, width, height, nullptr);
}

FAKE_CU_API_WEAK(cuMemsetD2D8Async,
                 (CUdeviceptr dst, size_t pitch, unsigned char value,
                  size_t width, size_t height, CUstream stream)) {
  return Set2D<unsigned char>(dst, pitch, value, width, height, stream);
}

FAKE_CU_API_WEAK(cuMemsetD2D8Async_ptsz,
                 (CUdeviceptr dst, size_t pitch, unsigned char value,
                  size_t width, size_t height, CUstream stream)) {
  return Set2D<unsigned char>(dst, pitch, value, width, height, stream);
}

FAKE_CU_API_WEAK(cuMemsetD2D16Async,
                 (CUdeviceptr dst, size_t pitch, unsigned short value,
                  size_t width, size_t height, CUstream stream)) {
  return Set2D<unsigned short>(dst, pitch, value, width, height, stream);
}

FAKE_CU_API_WEAK(cuMemsetD2D16Async_ptsz,
                 (CUdeviceptr dst, size_t pitch, unsigned short value,
                  size_t width, size_t height, CUstream stream)) {
  return Set2D<unsigned short>(dst, pitch, value, width, height, stream);
}

FAKE_CU_API_WEAK(cuMemsetD2D32Async,
                 (CUdeviceptr dst, size_t pitch, unsigned int value,
                  size_t width, size_t height, CUstream stream)) {
  return Set2D<unsigned int>(dst, pitch, value, width, height, stream);
}

FAKE_CU_API_WEAK(cuMemsetD2D32Async_ptsz,
                 (CUdeviceptr dst, size_t pitch, unsigned int value,
                  size_t width, size_t height, CUstream stream)) {
  return Set2D<unsigned int>(dst, pitch, value, width, height, stream);
}
