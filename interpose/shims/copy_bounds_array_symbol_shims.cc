// Copies with one side that is not a program allocation — a CUDA array, a
// module variable (symbol) — and peer 3-D copies, checked on their
// device-pointer side against the user's view of the block it touches
// (docs/transparency.md, class a; the rule in copy_bounds_runtime_shims.cc).
//
// Arrays and module variables are never guarded, so only the pointer side is
// checked: for the runtime, the side the copy kind makes device memory
// (cudaMemcpyDefault: the pointer side too; a host address there is
// untracked); for the driver, the CUdeviceptr. The array or symbol side,
// offsets included, is CUDA's to judge. Each exported variant (_ptds, _ptsz)
// has its own shim; the ranges come from device_ranges.h.
#include "interpose/device_ranges.h"
#include "interpose/guard_shim_util.h"
#include "interpose/resolve/driver_hooks.h"
#include "interpose/resolve/runtime_hooks.h"

// ---- Runtime ----------------------------------------------------------------

cudaError_t Shim_cudaMemcpyToArray(cudaArray_t dst, size_t w_offset,
                                   size_t h_offset, const void* src,
                                   size_t count, cudaMemcpyKind kind) {
  return gmt::CheckedRuntimeCall<gmt::g_real_cudaMemcpyToArray>(
      "cudaMemcpyToArray",
      [&] { return gmt::KindRanges(kind, nullptr, 0, src, count); }, dst,
      w_offset, h_offset, src, count, kind);
}

cudaError_t Shim_cudaMemcpyToArray_ptds(cudaArray_t dst, size_t w_offset,
                                        size_t h_offset, const void* src,
                                        size_t count, cudaMemcpyKind kind) {
  return gmt::CheckedRuntimeCall<gmt::g_real_cudaMemcpyToArray_ptds>(
      "cudaMemcpyToArray",
      [&] { return gmt::KindRanges(kind, nullptr, 0, src, count); }, dst,
      w_offset, h_offset, src, count, kind);
}

cudaError_t Shim_cudaMemcpyToArrayAsync(cudaArray_t dst, size_t w_offset,
                                        size_t h_offset, const void* src,
                                        size_t count, cudaMemcpyKind kind,
                                        cudaStream_t stream) {
  return gmt::CheckedRuntimeCall<gmt::g_real_cudaMemcpyToArrayAsync>(
      "cudaMemcpyToArrayAsync",
      [&] { return gmt::KindRanges(kind, nullptr, 0, src, count); }, dst,
      w_offset, h_offset, src, count, kind, stream);
}

cudaError_t Shim_cudaMemcpyToArrayAsync_ptsz(cudaArray_t dst, size_t w_offset,
                                             size_t h_offset, const void* src,
                                             size_t count, cudaMemcpyKind kind,
                                             cudaStream_t stream) {
  return gmt::CheckedRuntimeCall<gmt::g_real_cudaMemcpyToArrayAsync_ptsz>(
      "cudaMemcpyToArrayAsync",
      [&] { return gmt::KindRanges(kind, nullptr, 0, src, count); }, dst,
      w_offset, h_offset, src, count, kind, stream);
}

cudaError_t Shim_cudaMemcpyFromArray(void* dst, cudaArray_const_t src,
                                     size_t w_offset, size_t h_offset,
                                     size_t count, cudaMemcpyKind kind) {
  return gmt::CheckedRuntimeCall<gmt::g_real_cudaMemcpyFromArray>(
      "cudaMemcpyFromArray",
      [&] { return gmt::KindRanges(kind, dst, count, nullptr, 0); }, dst, src,
      w_offset, h_offset, count, kind);
}

cudaError_t Shim_cudaMemcpyFromArray_ptds(void* dst, cudaArray_const_t src,
                                          size_t w_offset, size_t h_offset,
                                          size_t count, cudaMemcpyKind kind) {
  return gmt::CheckedRuntimeCall<gmt::g_real_cudaMemcpyFromArray_ptds>(
      "cudaMemcpyFromArray",
      [&] { return gmt::KindRanges(kind, dst, count, nullptr, 0); }, dst, src,
      w_offset, h_offset, count, kind);
}

cudaError_t Shim_cudaMemcpyFromArrayAsync(void* dst, cudaArray_const_t src,
                                          size_t w_offset, size_t h_offset,
                                          size_t count, cudaMemcpyKind kind,
                                          cudaStream_t stream) {
  return gmt::CheckedRuntimeCall<gmt::g_real_cudaMemcpyFromArrayAsync>(
      "cudaMemcpyFromArrayAsync",
      [&] { return gmt::KindRanges(kind, dst, count, nullptr, 0); }, dst, src,
      w_offset, h_offset, count, kind, stream);
}

cudaError_t Shim_cudaMemcpyFromArrayAsync_ptsz(void* dst, cudaArray_const_t src,
                                               size_t w_offset, size_t h_offset,
                                               size_t count,
                                               cudaMemcpyKind kind,
                                               cudaStream_t stream) {
  return gmt::CheckedRuntimeCall<gmt::g_real_cudaMemcpyFromArrayAsync_ptsz>(
      "cudaMemcpyFromArrayAsync",
      [&] { return gmt::KindRanges(kind, dst, count, nullptr, 0); }, dst, src,
      w_offset, h_offset, count, kind, stream);
}

cudaError_t Shim_cudaMemcpy2DToArray(cudaArray_t dst, size_t w_offset,
                                     size_t h_offset, const void* src,
                                     size_t spitch, size_t width, size_t height,
                                     cudaMemcpyKind kind) {
  return gmt::CheckedRuntimeCall<gmt::g_real_cudaMemcpy2DToArray>(
      "cudaMemcpy2DToArray",
      [&] {
        return gmt::KindRanges(kind, nullptr, 0, src,
                               gmt::PitchedExtent(spitch, width, height));
      },
      dst, w_offset, h_offset, src, spitch, width, height, kind);
}

cudaError_t Shim_cudaMemcpy2DToArray_ptds(cudaArray_t dst, size_t w_offset,
                                          size_t h_offset, const void* src,
                                          size_t spitch, size_t width,
                                          size_t height, cudaMemcpyKind kind) {
  return gmt::CheckedRuntimeCall<gmt::g_real_cudaMemcpy2DToArray_ptds>(
      "cudaMemcpy2DToArray",
      [&] {
        return gmt::KindRanges(kind, nullptr, 0, src,
                               gmt::PitchedExtent(spitch, width, height));
      },
      dst, w_offset, h_offset, src, spitch, width, height, kind);
}

cudaError_t Shim_cudaMemcpy2DToArrayAsync(cudaArray_t dst, size_t w_offset,
                                          size_t h_offset, const void* src,
                                          size_t spitch, size_t width,
                                          size_t height, cudaMemcpyKind kind,
                                          cudaStream_t stream) {
  return gmt::CheckedRuntimeCall<gmt::g_real_cudaMemcpy2DToArrayAsync>(
      "cudaMemcpy2DToArrayAsync",
      [&] {
        return gmt::KindRanges(kind, nullptr, 0, src,
                               gmt::PitchedExtent(spitch, width, height));
      },
      dst, w_offset, h_offset, src, spitch, width, height, kind, stream);
}

cudaError_t Shim_cudaMemcpy2DToArrayAsync_ptsz(cudaArray_t dst, size_t w_offset,
                                               size_t h_offset, const void* src,
                                               size_t spitch, size_t width,
                                               size_t height,
                                               cudaMemcpyKind kind,
                                               cudaStream_t stream) {
  return gmt::CheckedRuntimeCall<gmt::g_real_cudaMemcpy2DToArrayAsync_ptsz>(
      "cudaMemcpy2DToArrayAsync",
      [&] {
        return gmt::KindRanges(kind, nullptr, 0, src,
                               gmt::PitchedExtent(spitch, width, height));
      },
      dst, w_offset, h_offset, src, spitch, width, height, kind, stream);
}

cudaError_t Shim_cudaMemcpy2DFromArray(void* dst, size_t dpitch,
                                       cudaArray_const_t src, size_t w_offset,
                                       size_t h_offset, size_t width,
                                       size_t height, cudaMemcpyKind kind) {
  return gmt::CheckedRuntimeCall<gmt::g_real_cudaMemcpy2DFromArray>(
      "cudaMemcpy2DFromArray",
      [&] {
        return gmt::KindRanges(
            kind, dst, gmt::PitchedExtent(dpitch, width, height), nullptr, 0);
      },
      dst, dpitch, src, w_offset, h_offset, width, height, kind);
}

cudaError_t Shim_cudaMemcpy2DFromArray_ptds(void* dst, size_t dpitch,
                                            cudaArray_const_t src,
                                            size_t w_offset, size_t h_offset,
                                            size_t width, size_t height,
                                            cudaMemcpyKind kind) {
  return gmt::CheckedRuntimeCall<gmt::g_real_cudaMemcpy2DFromArray_ptds>(
      "cudaMemcpy2DFromArray",
      [&] {
        return gmt::KindRanges(
            kind, dst, gmt::PitchedExtent(dpitch, width, height), nullptr, 0);
      },
      dst, dpitch, src, w_offset, h_offset, width, height, kind);
}

cudaError_t Shim_cudaMemcpy2DFromArrayAsync(void* dst, size_t dpitch,
                                            cudaArray_const_t src,
                                            size_t w_offset, size_t h_offset,
                                            size_t width, size_t height,
                                            cudaMemcpyKind kind,
                                            cudaStream_t stream) {
  return gmt::CheckedRuntimeCall<gmt::g_real_cudaMemcpy2DFromArrayAsync>(
      "cudaMemcpy2DFromArrayAsync",
      [&] {
        return gmt::KindRanges(
            kind, dst, gmt::PitchedExtent(dpitch, width, height), nullptr, 0);
      },
      dst, dpitch, src, w_offset, h_offset, width, height, kind, stream);
}

cudaError_t Shim_cudaMemcpy2DFromArrayAsync_ptsz(
    void* dst, size_t dpitch, cudaArray_const_t src, size_t w_offset,
    size_t h_offset, size_t width, size_t height, cudaMemcpyKind kind,
    cudaStream_t stream) {
  return gmt::CheckedRuntimeCall<gmt::g_real_cudaMemcpy2DFromArrayAsync_ptsz>(
      "cudaMemcpy2DFromArrayAsync",
      [&] {
        return gmt::KindRanges(
            kind, dst, gmt::PitchedExtent(dpitch, width, height), nullptr, 0);
      },
      dst, dpitch, src, w_offset, h_offset, width, height, kind, stream);
}

cudaError_t Shim_cudaMemcpyToSymbol(const void* symbol, const void* src,
                                    size_t count, size_t offset,
                                    cudaMemcpyKind kind) {
  return gmt::CheckedRuntimeCall<gmt::g_real_cudaMemcpyToSymbol>(
      "cudaMemcpyToSymbol",
      [&] { return gmt::KindRanges(kind, nullptr, 0, src, count); }, symbol,
      src, count, offset, kind);
}

cudaError_t Shim_cudaMemcpyToSymbol_ptds(const void* symbol, const void* src,
                                         size_t count, size_t offset,
                                         cudaMemcpyKind kind) {
  return gmt::CheckedRuntimeCall<gmt::g_real_cudaMemcpyToSymbol_ptds>(
      "cudaMemcpyToSymbol",
      [&] { return gmt::KindRanges(kind, nullptr, 0, src, count); }, symbol,
      src, count, offset, kind);
}

cudaError_t Shim_cudaMemcpyToSymbolAsync(const void* symbol, const void* src,
                                         size_t count, size_t offset,
                                         cudaMemcpyKind kind,
                                         cudaStream_t stream) {
  return gmt::CheckedRuntimeCall<gmt::g_real_cudaMemcpyToSymbolAsync>(
      "cudaMemcpyToSymbolAsync",
      [&] { return gmt::KindRanges(kind, nullptr, 0, src, count); }, symbol,
      src, count, offset, kind, stream);
}

cudaError_t Shim_cudaMemcpyToSymbolAsync_ptsz(const void* symbol,
                                              const void* src, size_t count,
                                              size_t offset,
                                              cudaMemcpyKind kind,
                                              cudaStream_t stream) {
  return gmt::CheckedRuntimeCall<gmt::g_real_cudaMemcpyToSymbolAsync_ptsz>(
      "cudaMemcpyToSymbolAsync",
      [&] { return gmt::KindRanges(kind, nullptr, 0, src, count); }, symbol,
      src, count, offset, kind, stream);
}

cudaError_t Shim_cudaMemcpyFromSymbol(void* dst, const void* symbol,
                                      size_t count, size_t offset,
                                      cudaMemcpyKind kind) {
  return gmt::CheckedRuntimeCall<gmt::g_real_cudaMemcpyFromSymbol>(
      "cudaMemcpyFromSymbol",
      [&] { return gmt::KindRanges(kind, dst, count, nullptr, 0); }, dst,
      symbol, count, offset, kind);
}

cudaError_t Shim_cudaMemcpyFromSymbol_ptds(void* dst, const void* symbol,
                                           size_t count, size_t offset,
                                           cudaMemcpyKind kind) {
  return gmt::CheckedRuntimeCall<gmt::g_real_cudaMemcpyFromSymbol_ptds>(
      "cudaMemcpyFromSymbol",
      [&] { return gmt::KindRanges(kind, dst, count, nullptr, 0); }, dst,
      symbol, count, offset, kind);
}

cudaError_t Shim_cudaMemcpyFromSymbolAsync(void* dst, const void* symbol,
                                           size_t count, size_t offset,
                                           cudaMemcpyKind kind,
                                           cudaStream_t stream) {
  return gmt::CheckedRuntimeCall<gmt::g_real_cudaMemcpyFromSymbolAsync>(
      "cudaMemcpyFromSymbolAsync",
      [&] { return gmt::KindRanges(kind, dst, count, nullptr, 0); }, dst,
      symbol, count, offset, kind, stream);
}

cudaError_t Shim_cudaMemcpyFromSymbolAsync_ptsz(void* dst, const void* symbol,
                                                size_t count, size_t offset,
                                                cudaMemcpyKind kind,
                                                cudaStream_t stream) {
  return gmt::CheckedRuntimeCall<gmt::g_real_cudaMemcpyFromSymbolAsync_ptsz>(
      "cudaMemcpyFromSymbolAsync",
      [&] { return gmt::KindRanges(kind, dst, count, nullptr, 0); }, dst,
      symbol, count, offset, kind, stream);
}

cudaError_t Shim_cudaMemcpy3DPeer(const cudaMemcpy3DPeerParms* p) {
  return gmt::CheckedRuntimeCall<gmt::g_real_cudaMemcpy3DPeer>(
      "cudaMemcpy3DPeer",
      [&] { return p == nullptr ? gmt::OperandRanges{} : gmt::RangesOf(*p); },
      p);
}

cudaError_t Shim_cudaMemcpy3DPeer_ptds(const cudaMemcpy3DPeerParms* p) {
  return gmt::CheckedRuntimeCall<gmt::g_real_cudaMemcpy3DPeer_ptds>(
      "cudaMemcpy3DPeer",
      [&] { return p == nullptr ? gmt::OperandRanges{} : gmt::RangesOf(*p); },
      p);
}

cudaError_t Shim_cudaMemcpy3DPeerAsync(const cudaMemcpy3DPeerParms* p,
                                       cudaStream_t stream) {
  return gmt::CheckedRuntimeCall<gmt::g_real_cudaMemcpy3DPeerAsync>(
      "cudaMemcpy3DPeerAsync",
      [&] { return p == nullptr ? gmt::OperandRanges{} : gmt::RangesOf(*p); },
      p, stream);
}

cudaError_t Shim_cudaMemcpy3DPeerAsync_ptsz(const cudaMemcpy3DPeerParms* p,
                                            cudaStream_t stream) {
  return gmt::CheckedRuntimeCall<gmt::g_real_cudaMemcpy3DPeerAsync_ptsz>(
      "cudaMemcpy3DPeerAsync",
      [&] { return p == nullptr ? gmt::OperandRanges{} : gmt::RangesOf(*p); },
      p, stream);
}

// ---- Driver -----------------------------------------------------------------

CUresult Shim_cuMemcpyAtoD_v2(CUdeviceptr dst, CUarray src, size_t src_offset,
                              size_t bytes) {
  return gmt::CheckedDriverCall<gmt::g_real_cuMemcpyAtoD_v2>(
      "cuMemcpyAtoD",
      [&] {
        return gmt::OperandRanges{{dst, bytes}, {}};
      },
      dst, src, src_offset, bytes);
}

CUresult Shim_cuMemcpyAtoD_v2_ptds(CUdeviceptr dst, CUarray src,
                                   size_t src_offset, size_t bytes) {
  return gmt::CheckedDriverCall<gmt::g_real_cuMemcpyAtoD_v2_ptds>(
      "cuMemcpyAtoD",
      [&] {
        return gmt::OperandRanges{{dst, bytes}, {}};
      },
      dst, src, src_offset, bytes);
}

CUresult Shim_cuMemcpyDtoA_v2(CUarray dst, size_t dst_offset, CUdeviceptr src,
                              size_t bytes) {
  return gmt::CheckedDriverCall<gmt::g_real_cuMemcpyDtoA_v2>(
      "cuMemcpyDtoA",
      [&] {
        return gmt::OperandRanges{{}, {src, bytes}};
      },
      dst, dst_offset, src, bytes);
}

CUresult Shim_cuMemcpyDtoA_v2_ptds(CUarray dst, size_t dst_offset,
                                   CUdeviceptr src, size_t bytes) {
  return gmt::CheckedDriverCall<gmt::g_real_cuMemcpyDtoA_v2_ptds>(
      "cuMemcpyDtoA",
      [&] {
        return gmt::OperandRanges{{}, {src, bytes}};
      },
      dst, dst_offset, src, bytes);
}

CUresult Shim_cuMemcpy3DPeer(const CUDA_MEMCPY3D_PEER* p) {
  return gmt::CheckedDriverCall<gmt::g_real_cuMemcpy3DPeer>(
      "cuMemcpy3DPeer",
      [&] { return p == nullptr ? gmt::OperandRanges{} : gmt::RangesOf(*p); },
      p);
}

CUresult Shim_cuMemcpy3DPeer_ptds(const CUDA_MEMCPY3D_PEER* p) {
  return gmt::CheckedDriverCall<gmt::g_real_cuMemcpy3DPeer_ptds>(
      "cuMemcpy3DPeer",
      [&] { return p == nullptr ? gmt::OperandRanges{} : gmt::RangesOf(*p); },
      p);
}

CUresult Shim_cuMemcpy3DPeerAsync(const CUDA_MEMCPY3D_PEER* p,
                                  CUstream stream) {
  return gmt::CheckedDriverCall<gmt::g_real_cuMemcpy3DPeerAsync>(
      "cuMemcpy3DPeerAsync",
      [&] { return p == nullptr ? gmt::OperandRanges{} : gmt::RangesOf(*p); },
      p, stream);
}

CUresult Shim_cuMemcpy3DPeerAsync_ptsz(const CUDA_MEMCPY3D_PEER* p,
                                       CUstream stream) {
  return gmt::CheckedDriverCall<gmt::g_real_cuMemcpy3DPeerAsync_ptsz>(
      "cuMemcpy3DPeerAsync",
      [&] { return p == nullptr ? gmt::OperandRanges{} : gmt::RangesOf(*p); },
      p, stream);
}
