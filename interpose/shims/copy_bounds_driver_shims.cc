// Driver copies and sets, checked against the user's view of the blocks they
// touch before CUDA sees them (DESIGN §2, pitfall 5). See
// copy_bounds_runtime_shims.cc for the rule; here a refusal is
// CUDA_ERROR_INVALID_VALUE, what the driver answers for a range past an
// allocation's exact size.
//
// Every exported variant has its own shim (driver_hooks.inc): the _v2 forms,
// their _ptds / _ptsz per-thread twins, and the Async forms. Device-side
// pointers: CUdeviceptr arguments (cuMemcpy, cuMemcpyAsync and cuMemcpyPeer
// take unified addresses on both sides: both are checked, a host address is
// untracked and forwarded), and the DEVICE / UNIFIED sides of the 2-D and 3-D
// descriptors. Calls made by the runtime or by the tool itself run nested and
// are forwarded unchecked.
#include "interpose/device_ranges.h"
#include "interpose/guard_shim_util.h"
#include "interpose/resolve/driver_hooks.h"

using gmt::ElementBytes;
using gmt::PitchedExtent;

namespace {

// Every shim below forwards through the one checked forwarder.
template <typename Real, typename Rejected, typename Call>
CUresult Checked(const char* api, Real real, Rejected&& rejected, Call&& call) {
  return gmt::ForwardDriverUnlessRejected(api, real, rejected, call);
}

// ---- 1-D copies: (dst, src, bytes[, stream]) --------------------------------
// `kDstDevice` / `kSrcDevice`: which side is a CUdeviceptr to check.

uint64_t AsAddress(CUdeviceptr p) { return p; }
uint64_t AsAddress(const void* p) { return reinterpret_cast<uintptr_t>(p); }

template <auto& kReal, bool kDstDevice, bool kSrcDevice, typename Dst,
          typename Src, typename... Stream>
CUresult Copy1D(const char* api, Dst dst, Src src, size_t bytes,
                Stream... stream) {
  auto real = kReal.Get();
  return Checked(
      api, real,
      [&](gmt::Engine& engine) {
        return (kDstDevice &&
                gmt::AccessRejected(engine, api, AsAddress(dst), bytes)) ||
               (kSrcDevice &&
                gmt::AccessRejected(engine, api, AsAddress(src), bytes));
      },
      [&] { return real(dst, src, bytes, stream...); });
}

// cuMemcpyPeer(Async): (dst, dst_ctx, src, src_ctx, bytes[, stream]).
template <auto& kReal, typename... Stream>
CUresult CopyPeer(const char* api, CUdeviceptr dst, CUcontext dst_ctx,
                  CUdeviceptr src, CUcontext src_ctx, size_t bytes,
                  Stream... stream) {
  auto real = kReal.Get();
  return Checked(
      api, real,
      [&](gmt::Engine& engine) {
        return gmt::AccessRejected(engine, api, dst, bytes) ||
               gmt::AccessRejected(engine, api, src, bytes);
      },
      [&] { return real(dst, dst_ctx, src, src_ctx, bytes, stream...); });
}

// ---- Sets: cuMemsetD8/16/32 and cuMemsetD2D8/16/32 (+Async) -----------------

template <auto& kReal, typename Value, typename... Stream>
CUresult Set1D(const char* api, CUdeviceptr dst, Value value, size_t count,
               Stream... stream) {
  auto real = kReal.Get();
  return Checked(
      api, real,
      [&](gmt::Engine& engine) {
        return gmt::AccessRejected(engine, api, dst,
                                   ElementBytes(count, sizeof(Value)));
      },
      [&] { return real(dst, value, count, stream...); });
}

// `width` counts elements; `pitch` is in bytes.
template <auto& kReal, typename Value, typename... Stream>
CUresult Set2D(const char* api, CUdeviceptr dst, size_t pitch, Value value,
               size_t width, size_t height, Stream... stream) {
  auto real = kReal.Get();
  return Checked(
      api, real,
      [&](gmt::Engine& engine) {
        const uint64_t row = ElementBytes(width, sizeof(Value));
        return row != 0 &&
               gmt::AccessRejected(engine, api, dst,
                                   PitchedExtent(pitch, row, height));
      },
      [&] { return real(dst, pitch, value, width, height, stream...); });
}

// ---- 2-D and 3-D descriptors ------------------------------------------------

template <auto& kReal, typename... Stream>
CUresult Copy2D(const char* api, const CUDA_MEMCPY2D* p, Stream... stream) {
  auto real = kReal.Get();
  return Checked(
      api, real,
      [&](gmt::Engine& engine) {
        return p != nullptr &&
               gmt::RangesRejected(engine, api, gmt::RangesOf(*p));
      },
      [&] { return real(p, stream...); });
}

template <auto& kReal, typename... Stream>
CUresult Copy3D(const char* api, const CUDA_MEMCPY3D* p, Stream... stream) {
  auto real = kReal.Get();
  return Checked(
      api, real,
      [&](gmt::Engine& engine) {
        return p != nullptr &&
               gmt::RangesRejected(engine, api, gmt::RangesOf(*p));
      },
      [&] { return real(p, stream...); });
}

}  // namespace

// ---- cuMemcpy, cuMemcpyAsync: unified addresses on both sides ---------------

CUresult Shim_cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t bytes) {
  return Copy1D<gmt::g_real_cuMemcpy, true, true>("cuMemcpy", dst, src, bytes);
}

CUresult Shim_cuMemcpy_ptds(CUdeviceptr dst, CUdeviceptr src, size_t bytes) {
  return Copy1D<gmt::g_real_cuMemcpy_ptds, true, true>("cuMemcpy", dst, src,
                                                       bytes);
}

CUresult Shim_cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t bytes,
                            CUstream stream) {
  return Copy1D<gmt::g_real_cuMemcpyAsync, true, true>("cuMemcpyAsync", dst,
                                                       src, bytes, stream);
}

CUresult Shim_cuMemcpyAsync_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t bytes,
                                 CUstream stream) {
  return Copy1D<gmt::g_real_cuMemcpyAsync_ptsz, true, true>(
      "cuMemcpyAsync", dst, src, bytes, stream);
}

// ---- cuMemcpyPeer (+Async) --------------------------------------------------

CUresult Shim_cuMemcpyPeer(CUdeviceptr dst, CUcontext dst_ctx, CUdeviceptr src,
                           CUcontext src_ctx, size_t bytes) {
  return CopyPeer<gmt::g_real_cuMemcpyPeer>("cuMemcpyPeer", dst, dst_ctx, src,
                                            src_ctx, bytes);
}

CUresult Shim_cuMemcpyPeer_ptds(CUdeviceptr dst, CUcontext dst_ctx,
                                CUdeviceptr src, CUcontext src_ctx,
                                size_t bytes) {
  return CopyPeer<gmt::g_real_cuMemcpyPeer_ptds>("cuMemcpyPeer", dst, dst_ctx,
                                                 src, src_ctx, bytes);
}

CUresult Shim_cuMemcpyPeerAsync(CUdeviceptr dst, CUcontext dst_ctx,
                                CUdeviceptr src, CUcontext src_ctx,
                                size_t bytes, CUstream stream) {
  return CopyPeer<gmt::g_real_cuMemcpyPeerAsync>(
      "cuMemcpyPeerAsync", dst, dst_ctx, src, src_ctx, bytes, stream);
}

CUresult Shim_cuMemcpyPeerAsync_ptsz(CUdeviceptr dst, CUcontext dst_ctx,
                                     CUdeviceptr src, CUcontext src_ctx,
                                     size_t bytes, CUstream stream) {
  return CopyPeer<gmt::g_real_cuMemcpyPeerAsync_ptsz>(
      "cuMemcpyPeerAsync", dst, dst_ctx, src, src_ctx, bytes, stream);
}

// ---- cuMemcpyHtoD / DtoH / DtoD (+Async) ------------------------------------

CUresult Shim_cuMemcpyHtoD_v2(CUdeviceptr dst, const void* src, size_t bytes) {
  return Copy1D<gmt::g_real_cuMemcpyHtoD_v2, true, false>("cuMemcpyHtoD", dst,
                                                          src, bytes);
}

CUresult Shim_cuMemcpyHtoD_v2_ptds(CUdeviceptr dst, const void* src,
                                   size_t bytes) {
  return Copy1D<gmt::g_real_cuMemcpyHtoD_v2_ptds, true, false>("cuMemcpyHtoD",
                                                               dst, src, bytes);
}

CUresult Shim_cuMemcpyDtoH_v2(void* dst, CUdeviceptr src, size_t bytes) {
  return Copy1D<gmt::g_real_cuMemcpyDtoH_v2, false, true>("cuMemcpyDtoH", dst,
                                                          src, bytes);
}

CUresult Shim_cuMemcpyDtoH_v2_ptds(void* dst, CUdeviceptr src, size_t bytes) {
  return Copy1D<gmt::g_real_cuMemcpyDtoH_v2_ptds, false, true>("cuMemcpyDtoH",
                                                               dst, src, bytes);
}

CUresult Shim_cuMemcpyDtoD_v2(CUdeviceptr dst, CUdeviceptr src, size_t bytes) {
  return Copy1D<gmt::g_real_cuMemcpyDtoD_v2, true, true>("cuMemcpyDtoD", dst,
                                                         src, bytes);
}

CUresult Shim_cuMemcpyDtoD_v2_ptds(CUdeviceptr dst, CUdeviceptr src,
                                   size_t bytes) {
  return Copy1D<gmt::g_real_cuMemcpyDtoD_v2_ptds, true, true>("cuMemcpyDtoD",
                                                              dst, src, bytes);
}

CUresult Shim_cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void* src,
                                   size_t bytes, CUstream stream) {
  return Copy1D<gmt::g_real_cuMemcpyHtoDAsync_v2, true, false>(
      "cuMemcpyHtoDAsync", dst, src, bytes, stream);
}

CUresult Shim_cuMemcpyHtoDAsync_v2_ptsz(CUdeviceptr dst, const void* src,
                                        size_t bytes, CUstream stream) {
  return Copy1D<gmt::g_real_cuMemcpyHtoDAsync_v2_ptsz, true, false>(
      "cuMemcpyHtoDAsync", dst, src, bytes, stream);
}

CUresult Shim_cuMemcpyDtoHAsync_v2(void* dst, CUdeviceptr src, size_t bytes,
                                   CUstream stream) {
  return Copy1D<gmt::g_real_cuMemcpyDtoHAsync_v2, false, true>(
      "cuMemcpyDtoHAsync", dst, src, bytes, stream);
}

CUresult Shim_cuMemcpyDtoHAsync_v2_ptsz(void* dst, CUdeviceptr src,
                                        size_t bytes, CUstream stream) {
  return Copy1D<gmt::g_real_cuMemcpyDtoHAsync_v2_ptsz, false, true>(
      "cuMemcpyDtoHAsync", dst, src, bytes, stream);
}

CUresult Shim_cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src,
                                   size_t bytes, CUstream stream) {
  return Copy1D<gmt::g_real_cuMemcpyDtoDAsync_v2, true, true>(
      "cuMemcpyDtoDAsync", dst, src, bytes, stream);
}

CUresult Shim_cuMemcpyDtoDAsync_v2_ptsz(CUdeviceptr dst, CUdeviceptr src,
                                        size_t bytes, CUstream stream) {
  return Copy1D<gmt::g_real_cuMemcpyDtoDAsync_v2_ptsz, true, true>(
      "cuMemcpyDtoDAsync", dst, src, bytes, stream);
}

// ---- cuMemcpy2D, cuMemcpy2DUnaligned, cuMemcpy3D (+Async) -------------------

CUresult Shim_cuMemcpy2D_v2(const CUDA_MEMCPY2D* p) {
  return Copy2D<gmt::g_real_cuMemcpy2D_v2>("cuMemcpy2D", p);
}

CUresult Shim_cuMemcpy2D_v2_ptds(const CUDA_MEMCPY2D* p) {
  return Copy2D<gmt::g_real_cuMemcpy2D_v2_ptds>("cuMemcpy2D", p);
}

CUresult Shim_cuMemcpy2DUnaligned_v2(const CUDA_MEMCPY2D* p) {
  return Copy2D<gmt::g_real_cuMemcpy2DUnaligned_v2>("cuMemcpy2DUnaligned", p);
}

CUresult Shim_cuMemcpy2DUnaligned_v2_ptds(const CUDA_MEMCPY2D* p) {
  return Copy2D<gmt::g_real_cuMemcpy2DUnaligned_v2_ptds>("cuMemcpy2DUnaligned",
                                                         p);
}

CUresult Shim_cuMemcpy2DAsync_v2(const CUDA_MEMCPY2D* p, CUstream stream) {
  return Copy2D<gmt::g_real_cuMemcpy2DAsync_v2>("cuMemcpy2DAsync", p, stream);
}

CUresult Shim_cuMemcpy2DAsync_v2_ptsz(const CUDA_MEMCPY2D* p, CUstream stream) {
  return Copy2D<gmt::g_real_cuMemcpy2DAsync_v2_ptsz>("cuMemcpy2DAsync", p,
                                                     stream);
}

CUresult Shim_cuMemcpy3D_v2(const CUDA_MEMCPY3D* p) {
  return Copy3D<gmt::g_real_cuMemcpy3D_v2>("cuMemcpy3D", p);
}

CUresult Shim_cuMemcpy3D_v2_ptds(const CUDA_MEMCPY3D* p) {
  return Copy3D<gmt::g_real_cuMemcpy3D_v2_ptds>("cuMemcpy3D", p);
}

CUresult Shim_cuMemcpy3DAsync_v2(const CUDA_MEMCPY3D* p, CUstream stream) {
  return Copy3D<gmt::g_real_cuMemcpy3DAsync_v2>("cuMemcpy3DAsync", p, stream);
}

CUresult Shim_cuMemcpy3DAsync_v2_ptsz(const CUDA_MEMCPY3D* p, CUstream stream) {
  return Copy3D<gmt::g_real_cuMemcpy3DAsync_v2_ptsz>("cuMemcpy3DAsync", p,
                                                     stream);
}

// ---- cuMemsetD8 / D16 / D32 (+Async) ----------------------------------------

CUresult Shim_cuMemsetD8_v2(CUdeviceptr dst, unsigned char value, size_t n) {
  return Set1D<gmt::g_real_cuMemsetD8_v2>("cuMemsetD8", dst, value, n);
}

CUresult Shim_cuMemsetD8_v2_ptds(CUdeviceptr dst, unsigned char value,
                                 size_t n) {
  return Set1D<gmt::g_real_cuMemsetD8_v2_ptds>("cuMemsetD8", dst, value, n);
}

CUresult Shim_cuMemsetD16_v2(CUdeviceptr dst, unsigned short value, size_t n) {
  return Set1D<gmt::g_real_cuMemsetD16_v2>("cuMemsetD16", dst, value, n);
}

CUresult Shim_cuMemsetD16_v2_ptds(CUdeviceptr dst, unsigned short value,
                                  size_t n) {
  return Set1D<gmt::g_real_cuMemsetD16_v2_ptds>("cuMemsetD16", dst, value, n);
}

CUresult Shim_cuMemsetD32_v2(CUdeviceptr dst, unsigned int value, size_t n) {
  return Set1D<gmt::g_real_cuMemsetD32_v2>("cuMemsetD32", dst, value, n);
}

CUresult Shim_cuMemsetD32_v2_ptds(CUdeviceptr dst, unsigned int value,
                                  size_t n) {
  return Set1D<gmt::g_real_cuMemsetD32_v2_ptds>("cuMemsetD32", dst, value, n);
}

CUresult Shim_cuMemsetD8Async(CUdeviceptr dst, unsigned char value, size_t n,
                              CUstream stream) {
  return Set1D<gmt::g_real_cuMemsetD8Async>("cuMemsetD8Async", dst, value, n,
                                            stream);
}

CUresult Shim_cuMemsetD8Async_ptsz(CUdeviceptr dst, unsigned char value,
                                   size_t n, CUstream stream) {
  return Set1D<gmt::g_real_cuMemsetD8Async_ptsz>("cuMemsetD8Async", dst, value,
                                                 n, stream);
}

CUresult Shim_cuMemsetD16Async(CUdeviceptr dst, unsigned short value, size_t n,
                               CUstream stream) {
  return Set1D<gmt::g_real_cuMemsetD16Async>("cuMemsetD16Async", dst, value, n,
                                             stream);
}

CUresult Shim_cuMemsetD16Async_ptsz(CUdeviceptr dst, unsigned short value,
                                    size_t n, CUstream stream) {
  return Set1D<gmt::g_real_cuMemsetD16Async_ptsz>("cuMemsetD16Async", dst,
                                                  value, n, stream);
}

CUresult Shim_cuMemsetD32Async(CUdeviceptr dst, unsigned int value, size_t n,
                               CUstream stream) {
  return Set1D<gmt::g_real_cuMemsetD32Async>("cuMemsetD32Async", dst, value, n,
                                             stream);
}

CUresult Shim_cuMemsetD32Async_ptsz(CUdeviceptr dst, unsigned int value,
                                    size_t n, CUstream stream) {
  return Set1D<gmt::g_real_cuMemsetD32Async_ptsz>("cuMemsetD32Async", dst,
                                                  value, n, stream);
}

// ---- cuMemsetD2D8 / D2D16 / D2D32 (+Async) ----------------------------------

CUresult Shim_cuMemsetD2D8_v2(CUdeviceptr dst, size_t pitch,
                              unsigned char value, size_t width,
                              size_t height) {
  return Set2D<gmt::g_real_cuMemsetD2D8_v2>("cuMemsetD2D8", dst, pitch, value,
                                            width, height);
}

CUresult Shim_cuMemsetD2D8_v2_ptds(CUdeviceptr dst, size_t pitch,
                                   unsigned char value, size_t width,
                                   size_t height) {
  return Set2D<gmt::g_real_cuMemsetD2D8_v2_ptds>("cuMemsetD2D8", dst, pitch,
                                                 value, width, height);
}

CUresult Shim_cuMemsetD2D16_v2(CUdeviceptr dst, size_t pitch,
                               unsigned short value, size_t width,
                               size_t height) {
  return Set2D<gmt::g_real_cuMemsetD2D16_v2>("cuMemsetD2D16", dst, pitch, value,
                                             width, height);
}

CUresult Shim_cuMemsetD2D16_v2_ptds(CUdeviceptr dst, size_t pitch,
                                    unsigned short value, size_t width,
                                    size_t height) {
  return Set2D<gmt::g_real_cuMemsetD2D16_v2_ptds>("cuMemsetD2D16", dst, pitch,
                                                  value, width, height);
}

CUresult Shim_cuMemsetD2D32_v2(CUdeviceptr dst, size_t pitch,
                               unsigned int value, size_t width,
                               size_t height) {
  return Set2D<gmt::g_real_cuMemsetD2D32_v2>("cuMemsetD2D32", dst, pitch, value,
                                             width, height);
}

CUresult Shim_cuMemsetD2D32_v2_ptds(CUdeviceptr dst, size_t pitch,
                                    unsigned int value, size_t width,
                                    size_t height) {
  return Set2D<gmt::g_real_cuMemsetD2D32_v2_ptds>("cuMemsetD2D32", dst, pitch,
                                                  value, width, height);
}

CUresult Shim_cuMemsetD2D8Async(CUdeviceptr dst, size_t pitch,
                                unsigned char value, size_t width,
                                size_t height, CUstream stream) {
  return Set2D<gmt::g_real_cuMemsetD2D8Async>("cuMemsetD2D8Async", dst, pitch,
                                              value, width, height, stream);
}

CUresult Shim_cuMemsetD2D8Async_ptsz(CUdeviceptr dst, size_t pitch,
                                     unsigned char value, size_t width,
                                     size_t height, CUstream stream) {
  return Set2D<gmt::g_real_cuMemsetD2D8Async_ptsz>(
      "cuMemsetD2D8Async", dst, pitch, value, width, height, stream);
}

CUresult Shim_cuMemsetD2D16Async(CUdeviceptr dst, size_t pitch,
                                 unsigned short value, size_t width,
                                 size_t height, CUstream stream) {
  return Set2D<gmt::g_real_cuMemsetD2D16Async>("cuMemsetD2D16Async", dst, pitch,
                                               value, width, height, stream);
}

CUresult Shim_cuMemsetD2D16Async_ptsz(CUdeviceptr dst, size_t pitch,
                                      unsigned short value, size_t width,
                                      size_t height, CUstream stream) {
  return Set2D<gmt::g_real_cuMemsetD2D16Async_ptsz>(
      "cuMemsetD2D16Async", dst, pitch, value, width, height, stream);
}

CUresult Shim_cuMemsetD2D32Async(CUdeviceptr dst, size_t pitch,
                                 unsigned int value, size_t width,
                                 size_t height, CUstream stream) {
  return Set2D<gmt::g_real_cuMemsetD2D32Async>("cuMemsetD2D32Async", dst, pitch,
                                               value, width, height, stream);
}

CUresult Shim_cuMemsetD2D32Async_ptsz(CUdeviceptr dst, size_t pitch,
                                      unsigned int value, size_t width,
                                      size_t height, CUstream stream) {
  return Set2D<gmt::g_real_cuMemsetD2D32Async_ptsz>(
      "cuMemsetD2D32Async", dst, pitch, value, width, height, stream);
}
