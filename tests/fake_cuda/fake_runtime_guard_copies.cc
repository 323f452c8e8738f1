// Fake runtime: the copies and sets the guard-zone shims check
// (interpose/shims/copy_bounds_runtime_shims.cc), each implemented through the
// driver entry point the real runtime would use, found through
// cuGetProcAddress (fake_runtime_lookup.h): cudaMemcpyAsync -> cuMemcpyAsync,
// cudaMemset2D -> cuMemsetD2D8, cudaMemcpy3D -> cuMemcpy3D, ... The _ptds /
// _ptsz variants ask for the driver's per-thread variant. So a tool sees the
// runtime call and, nested inside it, the driver call, as with the real
// runtime.
//
// Copy kinds: HostToDevice / DeviceToHost / DeviceToDevice make the named
// sides device memory (a 1-D copy is one unified cuMemcpy, like cudaMemcpy in
// fake_runtime_memory.cc); Default makes both sides unified. A kind out of
// range is cudaErrorInvalidMemcpyDirection. 3-D copies and sets handle linear
// memory only (no arrays).
//
// Defined weak (fake_weak.h): where another file of the double defines the
// same entry point, that one is kept.
#include <cudaTypedefs.h>

#include "tests/fake_cuda/fake_runtime.h"
#include "tests/fake_cuda/fake_runtime_lookup.h"
#include "tests/fake_cuda/fake_weak.h"

using fake_cudart::DevicePointer;
using fake_cudart::LookupDriver;
using fake_cudart::Return;

namespace {

bool ValidKind(cudaMemcpyKind kind) {
  return kind >= cudaMemcpyHostToHost && kind <= cudaMemcpyDefault;
}

// The driver's memory type of a side of a copy of `kind`.
CUmemorytype SideType(cudaMemcpyKind kind, bool destination) {
  switch (kind) {
    case cudaMemcpyHostToHost:
      return CU_MEMORYTYPE_HOST;
    case cudaMemcpyHostToDevice:
      return destination ? CU_MEMORYTYPE_DEVICE : CU_MEMORYTYPE_HOST;
    case cudaMemcpyDeviceToHost:
      return destination ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE;
    case cudaMemcpyDeviceToDevice:
      return CU_MEMORYTYPE_DEVICE;
    default:
      return CU_MEMORYTYPE_UNIFIED;
  }
}

// Fills one side of a driver descriptor (`HostPtr`: void* or const void*).
template <typename HostPtr>
void SetSide(CUmemorytype type, const void* p, CUmemorytype* type_out,
             HostPtr* host, CUdeviceptr* device) {
  *type_out = type;
  if (type == CU_MEMORYTYPE_HOST) {
    *host = const_cast<HostPtr>(p);
  } else {
    *device = DevicePointer(p);
  }
}

CUDA_MEMCPY2D Describe2D(void* dst, size_t dpitch, const void* src,
                         size_t spitch, size_t width, size_t height,
                         cudaMemcpyKind kind) {
  CUDA_MEMCPY2D d{};
  SetSide(SideType(kind, true), dst, &d.dstMemoryType, &d.dstHost,
          &d.dstDevice);
  SetSide(SideType(kind, false), src, &d.srcMemoryType, &d.srcHost,
          &d.srcDevice);
  d.dstPitch = dpitch;
  d.srcPitch = spitch;
  d.WidthInBytes = width;
  d.Height = height;
  return d;
}

bool Describe3D(const cudaMemcpy3DParms* p, CUDA_MEMCPY3D* d) {
  if (p == nullptr || p->srcArray != nullptr || p->dstArray != nullptr ||
      !ValidKind(p->kind)) {
    return false;
  }
  *d = CUDA_MEMCPY3D{};
  SetSide(SideType(p->kind, true), p->dstPtr.ptr, &d->dstMemoryType,
          &d->dstHost, &d->dstDevice);
  SetSide(SideType(p->kind, false), p->srcPtr.ptr, &d->srcMemoryType,
          &d->srcHost, &d->srcDevice);
  d->dstXInBytes = p->dstPos.x;
  d->dstY = p->dstPos.y;
  d->dstZ = p->dstPos.z;
  d->dstPitch = p->dstPtr.pitch;
  d->dstHeight = p->dstPtr.ysize;
  d->srcXInBytes = p->srcPos.x;
  d->srcY = p->srcPos.y;
  d->srcZ = p->srcPos.z;
  d->srcPitch = p->srcPtr.pitch;
  d->srcHeight = p->srcPtr.ysize;
  d->WidthInBytes = p->extent.width;
  d->Height = p->extent.height;
  d->Depth = p->extent.depth;
  return true;
}

// ---- Shapes, each through the driver's `name` (per-thread variant or not).

template <typename... Stream>
cudaError_t Copy1D(const char* name, bool per_thread, void* dst,
                   const void* src, size_t count, cudaMemcpyKind kind,
                   Stream... stream) {
  if (!ValidKind(kind)) return Return(cudaErrorInvalidMemcpyDirection);
  CUresult (*copy)(CUdeviceptr, CUdeviceptr, size_t, Stream...) = nullptr;
  if (cudaError_t e = LookupDriver(name, per_thread, &copy); e != cudaSuccess) {
    return e;
  }
  return Return(copy(DevicePointer(dst), DevicePointer(src), count, stream...));
}

template <typename... Stream>
cudaError_t Set1D(const char* name, bool per_thread, void* ptr, int value,
                  size_t count, Stream... stream) {
  CUresult (*set)(CUdeviceptr, unsigned char, size_t, Stream...) = nullptr;
  if (cudaError_t e = LookupDriver(name, per_thread, &set); e != cudaSuccess) {
    return e;
  }
  return Return(set(DevicePointer(ptr), static_cast<unsigned char>(value),
                    count, stream...));
}

template <typename... Stream>
cudaError_t Copy2D(const char* name, bool per_thread, void* dst, size_t dpitch,
                   const void* src, size_t spitch, size_t width, size_t height,
                   cudaMemcpyKind kind, Stream... stream) {
  if (!ValidKind(kind)) return Return(cudaErrorInvalidMemcpyDirection);
  if (height > 1 && (dpitch < width || spitch < width)) {
    return Return(cudaErrorInvalidPitchValue);
  }
  CUresult (*copy)(const CUDA_MEMCPY2D*, Stream...) = nullptr;
  if (cudaError_t e = LookupDriver(name, per_thread, &copy); e != cudaSuccess) {
    return e;
  }
  const CUDA_MEMCPY2D d =
      Describe2D(dst, dpitch, src, spitch, width, height, kind);
  return Return(copy(&d, stream...));
}

template <typename... Stream>
cudaError_t Set2D(const char* name, bool per_thread, void* ptr, size_t pitch,
                  int value, size_t width, size_t height, Stream... stream) {
  if (height > 1 && pitch < width) return Return(cudaErrorInvalidPitchValue);
  CUresult (*set)(CUdeviceptr, size_t, unsigned char, size_t, size_t,
                  Stream...) = nullptr;
  if (cudaError_t e = LookupDriver(name, per_thread, &set); e != cudaSuccess) {
    return e;
  }
  return Return(set(DevicePointer(ptr), pitch,
                    static_cast<unsigned char>(value), width, height,
                    stream...));
}

template <typename... Stream>
cudaError_t Copy3D(const char* name, bool per_thread,
                   const cudaMemcpy3DParms* p, Stream... stream) {
  CUDA_MEMCPY3D d{};
  if (!Describe3D(p, &d)) return Return(cudaErrorInvalidValue);
  CUresult (*copy)(const CUDA_MEMCPY3D*, Stream...) = nullptr;
  if (cudaError_t e = LookupDriver(name, per_thread, &copy); e != cudaSuccess) {
    return e;
  }
  return Return(copy(&d, stream...));
}

// One 2-D set per slice, like a runtime without a 3-D set in the driver.
// The whole volume is checked first (the last slice's range covers it), so
// nothing is written when it does not fit.
template <typename... Stream>
cudaError_t Set3D(const char* name, bool per_thread, cudaPitchedPtr p,
                  int value, cudaExtent e, Stream... stream) {
  if (e.width == 0 || e.height == 0 || e.depth == 0) return cudaSuccess;
  if ((e.height > 1 && p.pitch < e.width) ||
      (e.depth > 1 && p.ysize < e.height)) {
    return Return(cudaErrorInvalidValue);
  }
  CUresult (*set)(CUdeviceptr, size_t, unsigned char, size_t, size_t,
                  Stream...) = nullptr;
  if (cudaError_t err = LookupDriver(name, per_thread, &set);
      err != cudaSuccess) {
    return err;
  }
  const CUdeviceptr base = DevicePointer(p.ptr);
  const size_t slice = p.pitch * p.ysize;
  const auto byte = static_cast<unsigned char>(value);
  // The last slice first: it alone reaches the end of the volume.
  if (CUresult r = set(base + (e.depth - 1) * slice, p.pitch, byte, e.width,
                       e.height, stream...);
      r != CUDA_SUCCESS) {
    return Return(r);
  }
  for (size_t z = 0; z + 1 < e.depth; ++z) {
    if (CUresult r =
            set(base + z * slice, p.pitch, byte, e.width, e.height, stream...);
        r != CUDA_SUCCESS) {
      return Return(r);
    }
  }
  return cudaSuccess;
}

}  // namespace

// ---- 1-D --------------------------------------------------------------------

FAKE_CUDART_API_WEAK(cudaMemcpy_ptds, (void* dst, const void* src, size_t count,
                                       cudaMemcpyKind kind)) {
  return Copy1D("cuMemcpy", true, dst, src, count, kind);
}

FAKE_CUDART_API_WEAK(cudaMemcpyAsync,
                     (void* dst, const void* src, size_t count,
                      cudaMemcpyKind kind, cudaStream_t stream)) {
  return Copy1D("cuMemcpyAsync", false, dst, src, count, kind,
                static_cast<CUstream>(stream));
}

FAKE_CUDART_API_WEAK(cudaMemcpyAsync_ptsz,
                     (void* dst, const void* src, size_t count,
                      cudaMemcpyKind kind, cudaStream_t stream)) {
  return Copy1D("cuMemcpyAsync", true, dst, src, count, kind,
                static_cast<CUstream>(stream));
}

FAKE_CUDART_API_WEAK(cudaMemset_ptds, (void* ptr, int value, size_t count)) {
  return Set1D("cuMemsetD8", true, ptr, value, count);
}

FAKE_CUDART_API_WEAK(cudaMemsetAsync, (void* ptr, int value, size_t count,
                                       cudaStream_t stream)) {
  return Set1D("cuMemsetD8Async", false, ptr, value, count,
               static_cast<CUstream>(stream));
}

FAKE_CUDART_API_WEAK(cudaMemsetAsync_ptsz, (void* ptr, int value, size_t count,
                                            cudaStream_t stream)) {
  return Set1D("cuMemsetD8Async", true, ptr, value, count,
               static_cast<CUstream>(stream));
}

// The contexts are the devices' primary ones; the double ignores them.
FAKE_CUDART_API_WEAK(cudaMemcpyPeer,
                     (void* dst, int /*dst_device*/, const void* src,
                      int /*src_device*/, size_t count)) {
  CUresult (*copy)(CUdeviceptr, CUcontext, CUdeviceptr, CUcontext, size_t) =
      nullptr;
  if (cudaError_t e = LookupDriver("cuMemcpyPeer", false, &copy);
      e != cudaSuccess) {
    return e;
  }
  return Return(
      copy(DevicePointer(dst), nullptr, DevicePointer(src), nullptr, count));
}

FAKE_CUDART_API_WEAK(cudaMemcpyPeerAsync,
                     (void* dst, int /*dst_device*/, const void* src,
                      int /*src_device*/, size_t count, cudaStream_t stream)) {
  CUresult (*copy)(CUdeviceptr, CUcontext, CUdeviceptr, CUcontext, size_t,
                   CUstream) = nullptr;
  if (cudaError_t e = LookupDriver("cuMemcpyPeerAsync", false, &copy);
      e != cudaSuccess) {
    return e;
  }
  return Return(copy(DevicePointer(dst), nullptr, DevicePointer(src), nullptr,
                     count, static_cast<CUstream>(stream)));
}

// ---- 2-D --------------------------------------------------------------------

FAKE_CUDART_API_WEAK(cudaMemcpy2D,
                     (void* dst, size_t dpitch, const void* src, size_t spitch,
                      size_t width, size_t height, cudaMemcpyKind kind)) {
  return Copy2D("cuMemcpy2D", false, dst, dpitch, src, spitch, width, height,
                kind);
}

FAKE_CUDART_API_WEAK(cudaMemcpy2D_ptds,
                     (void* dst, size_t dpitch, const void* src, size_t spitch,
                      size_t width, size_t height, cudaMemcpyKind kind)) {
  return Copy2D("cuMemcpy2D", true, dst, dpitch, src, spitch, width, height,
                kind);
}

FAKE_CUDART_API_WEAK(cudaMemcpy2DAsync,
                     (void* dst, size_t dpitch, const void* src, size_t spitch,
                      size_t width, size_t height, cudaMemcpyKind kind,
                      cudaStream_t stream)) {
  return Copy2D("cuMemcpy2DAsync", false, dst, dpitch, src, spitch, width,
                height, kind, static_cast<CUstream>(stream));
}

FAKE_CUDART_API_WEAK(cudaMemcpy2DAsync_ptsz,
                     (void* dst, size_t dpitch, const void* src, size_t spitch,
                      size_t width, size_t height, cudaMemcpyKind kind,
                      cudaStream_t stream)) {
  return Copy2D("cuMemcpy2DAsync", true, dst, dpitch, src, spitch, width,
                height, kind, static_cast<CUstream>(stream));
}

FAKE_CUDART_API_WEAK(cudaMemset2D, (void* ptr, size_t pitch, int value,
                                    size_t width, size_t height)) {
  return Set2D("cuMemsetD2D8", false, ptr, pitch, value, width, height);
}

FAKE_CUDART_API_WEAK(cudaMemset2D_ptds, (void* ptr, size_t pitch, int value,
                                         size_t width, size_t height)) {
  return Set2D("cuMemsetD2D8", true, ptr, pitch, value, width, height);
}

FAKE_CUDART_API_WEAK(cudaMemset2DAsync,
                     (void* ptr, size_t pitch, int value, size_t width,
                      size_t height, cudaStream_t stream)) {
  return Set2D("cuMemsetD2D8Async", false, ptr, pitch, value, width, height,
               static_cast<CUstream>(stream));
}

FAKE_CUDART_API_WEAK(cudaMemset2DAsync_ptsz,
                     (void* ptr, size_t pitch, int value, size_t width,
                      size_t height, cudaStream_t stream)) {
  return Set2D("cuMemsetD2D8Async", true, ptr, pitch, value, width, height,
               static_cast<CUstream>(stream));
}

// ---- 3-D --------------------------------------------------------------------

FAKE_CUDART_API_WEAK(cudaMemcpy3D, (const cudaMemcpy3DParms* p)) {
  return Copy3D("cuMemcpy3D", false, p);
}

FAKE_CUDART_API_WEAK(cudaMemcpy3D_ptds, (const cudaMemcpy3DParms* p)) {
  return Copy3D("cuMemcpy3D", true, p);
}

FAKE_CUDART_API_WEAK(cudaMemcpy3DAsync,
                     (const cudaMemcpy3DParms* p, cudaStream_t stream)) {
  return Copy3D("cuMemcpy3DAsync", false, p, static_cast<CUstream>(stream));
}

FAKE_CUDART_API_WEAK(cudaMemcpy3DAsync_ptsz,
                     (const cudaMemcpy3DParms* p, cudaStream_t stream)) {
  return Copy3D("cuMemcpy3DAsync", true, p, static_cast<CUstream>(stream));
}

FAKE_CUDART_API_WEAK(cudaMemset3D,
                     (cudaPitchedPtr p, int value, cudaExtent extent)) {
  return Set3D("cuMemsetD2D8", false, p, value, extent);
}

FAKE_CUDART_API_WEAK(cudaMemset3D_ptds,
                     (cudaPitchedPtr p, int value, cudaExtent extent)) {
  return Set3D("cuMemsetD2D8", true, p, value, extent);
}

FAKE_CUDART_API_WEAK(cudaMemset3DAsync,
                     (cudaPitchedPtr p, int value, cudaExtent extent,
                      cudaStream_t stream)) {
  return Set3D("cuMemsetD2D8Async", false, p, value, extent,
               static_cast<CUstream>(stream));
}

FAKE_CUDART_API_WEAK(cudaMemset3DAsync_ptsz,
                     (cudaPitchedPtr p, int value, cudaExtent extent,
                      cudaStream_t stream)) {
  return Set3D("cuMemsetD2D8Async", true, p, value, extent,
               static_cast<CUstream>(stream));
}
