// Runtime copies and sets, checked against the user's view of the blocks they
// touch before CUDA sees them (DESIGN §2, pitfall 5).
//
// With guard zones a block is larger than the program asked for, so CUDA
// would accept a copy that runs past the user's last byte into the redzone.
// CUDA itself rejects any copy or set that goes even one byte past an
// allocation's exact size with cudaErrorInvalidValue (measured on the H200),
// so when the engine says kReject the shim answers exactly that without
// calling CUDA; otherwise it forwards untouched.
//
// Ranges, per the CUDA rules: 1-D `count` bytes; 2-D from the first byte to
// the last byte touched, (height - 1) * pitch + width; 3-D likewise over the
// slices. Which pointers are device-side follows the copy kind
// (cudaMemcpyDefault: both; a host pointer is untracked and always forwarded).
// The check runs only in the outermost intercepted call: cudart's own calls
// into the driver (cuMemcpy*, cuMemset*) run under the same InterceptScope and
// are not checked twice. Nothing is captured unless the engine reports.
#include "interpose/device_ranges.h"
#include "interpose/guard_shim_util.h"
#include "interpose/resolve/runtime_hooks.h"

using gmt::PitchedExtent;
using gmt::VolumeExtent;

namespace {

// True when a copy of `kind` must be refused: a device-side range leaves the
// user's block.
bool CopyRejected(const char* api, cudaMemcpyKind kind, const void* dst,
                  uint64_t dst_bytes, const void* src, uint64_t src_bytes) {
  return gmt::RangesRejected(
      gmt::Engine::Get(), api,
      gmt::KindRanges(kind, dst, dst_bytes, src, src_bytes));
}

bool SetRejected(const char* api, const void* ptr, uint64_t bytes) {
  return gmt::AccessRejected(gmt::Engine::Get(), api, gmt::AddressOf(ptr),
                             bytes);
}

// Every shim below forwards through the one checked forwarder.
template <typename Real, typename Rejected, typename Call>
cudaError_t Checked(const char* api, Real real, Rejected&& rejected,
                    Call&& call) {
  return gmt::ForwardRuntimeUnlessRejected(
      api, real, [&](gmt::Engine&) { return rejected(); }, call);
}

// ---- One template per shape; `kReal` is the variant's real-function slot.

template <auto& kReal, typename... Stream>
cudaError_t Memcpy1D(const char* api, void* dst, const void* src, size_t count,
                     cudaMemcpyKind kind, Stream... stream) {
  auto real = kReal.Get();
  return Checked(
      api, real,
      [&] { return CopyRejected(api, kind, dst, count, src, count); },
      [&] { return real(dst, src, count, kind, stream...); });
}

template <auto& kReal, typename... Stream>
cudaError_t Memset1D(const char* api, void* ptr, int value, size_t count,
                     Stream... stream) {
  auto real = kReal.Get();
  return Checked(
      api, real, [&] { return SetRejected(api, ptr, count); },
      [&] { return real(ptr, value, count, stream...); });
}

template <auto& kReal, typename... Stream>
cudaError_t Memcpy2D(const char* api, void* dst, size_t dpitch, const void* src,
                     size_t spitch, size_t width, size_t height,
                     cudaMemcpyKind kind, Stream... stream) {
  auto real = kReal.Get();
  return Checked(
      api, real,
      [&] {
        return CopyRejected(api, kind, dst,
                            PitchedExtent(dpitch, width, height), src,
                            PitchedExtent(spitch, width, height));
      },
      [&] {
        return real(dst, dpitch, src, spitch, width, height, kind, stream...);
      });
}

template <auto& kReal, typename... Stream>
cudaError_t Memset2D(const char* api, void* ptr, size_t pitch, int value,
                     size_t width, size_t height, Stream... stream) {
  auto real = kReal.Get();
  return Checked(
      api, real,
      [&] {
        return SetRejected(api, ptr, PitchedExtent(pitch, width, height));
      },
      [&] { return real(ptr, pitch, value, width, height, stream...); });
}

template <auto& kReal, typename... Stream>
cudaError_t Memcpy3D(const char* api, const cudaMemcpy3DParms* p,
                     Stream... stream) {
  auto real = kReal.Get();
  return Checked(
      api, real,
      [&] {
        return p != nullptr &&
               gmt::RangesRejected(gmt::Engine::Get(), api, gmt::RangesOf(*p));
      },
      [&] { return real(p, stream...); });
}

template <auto& kReal, typename... Stream>
cudaError_t Memset3D(const char* api, cudaPitchedPtr pitched, int value,
                     cudaExtent extent, Stream... stream) {
  auto real = kReal.Get();
  return Checked(
      api, real,
      [&] {
        return SetRejected(
            api, pitched.ptr,
            VolumeExtent(pitched.pitch, pitched.ysize, extent.width,
                         extent.height, extent.depth));
      },
      [&] { return real(pitched, value, extent, stream...); });
}

}  // namespace

// ---- cudaMemcpy, cudaMemcpyAsync --------------------------------------------

cudaError_t Shim_cudaMemcpy(void* dst, const void* src, size_t count,
                            cudaMemcpyKind kind) {
  return Memcpy1D<gmt::g_real_cudaMemcpy>("cudaMemcpy", dst, src, count, kind);
}

cudaError_t Shim_cudaMemcpy_ptds(void* dst, const void* src, size_t count,
                                 cudaMemcpyKind kind) {
  return Memcpy1D<gmt::g_real_cudaMemcpy_ptds>("cudaMemcpy", dst, src, count,
                                               kind);
}

cudaError_t Shim_cudaMemcpyAsync(void* dst, const void* src, size_t count,
                                 cudaMemcpyKind kind, cudaStream_t stream) {
  return Memcpy1D<gmt::g_real_cudaMemcpyAsync>("cudaMemcpyAsync", dst, src,
                                               count, kind, stream);
}

cudaError_t Shim_cudaMemcpyAsync_ptsz(void* dst, const void* src, size_t count,
                                      cudaMemcpyKind kind,
                                      cudaStream_t stream) {
  return Memcpy1D<gmt::g_real_cudaMemcpyAsync_ptsz>("cudaMemcpyAsync", dst, src,
                                                    count, kind, stream);
}

// ---- cudaMemset, cudaMemsetAsync --------------------------------------------

cudaError_t Shim_cudaMemset(void* ptr, int value, size_t count) {
  return Memset1D<gmt::g_real_cudaMemset>("cudaMemset", ptr, value, count);
}

cudaError_t Shim_cudaMemset_ptds(void* ptr, int value, size_t count) {
  return Memset1D<gmt::g_real_cudaMemset_ptds>("cudaMemset", ptr, value, count);
}

cudaError_t Shim_cudaMemsetAsync(void* ptr, int value, size_t count,
                                 cudaStream_t stream) {
  return Memset1D<gmt::g_real_cudaMemsetAsync>("cudaMemsetAsync", ptr, value,
                                               count, stream);
}

cudaError_t Shim_cudaMemsetAsync_ptsz(void* ptr, int value, size_t count,
                                      cudaStream_t stream) {
  return Memset1D<gmt::g_real_cudaMemsetAsync_ptsz>("cudaMemsetAsync", ptr,
                                                    value, count, stream);
}

// ---- cudaMemcpy2D, cudaMemset2D (+Async) ------------------------------------

cudaError_t Shim_cudaMemcpy2D(void* dst, size_t dpitch, const void* src,
                              size_t spitch, size_t width, size_t height,
                              cudaMemcpyKind kind) {
  return Memcpy2D<gmt::g_real_cudaMemcpy2D>("cudaMemcpy2D", dst, dpitch, src,
                                            spitch, width, height, kind);
}

cudaError_t Shim_cudaMemcpy2D_ptds(void* dst, size_t dpitch, const void* src,
                                   size_t spitch, size_t width, size_t height,
                                   cudaMemcpyKind kind) {
  return Memcpy2D<gmt::g_real_cudaMemcpy2D_ptds>(
      "cudaMemcpy2D", dst, dpitch, src, spitch, width, height, kind);
}

cudaError_t Shim_cudaMemcpy2DAsync(void* dst, size_t dpitch, const void* src,
                                   size_t spitch, size_t width, size_t height,
                                   cudaMemcpyKind kind, cudaStream_t stream) {
  return Memcpy2D<gmt::g_real_cudaMemcpy2DAsync>("cudaMemcpy2DAsync", dst,
                                                 dpitch, src, spitch, width,
                                                 height, kind, stream);
}

cudaError_t Shim_cudaMemcpy2DAsync_ptsz(void* dst, size_t dpitch,
                                        const void* src, size_t spitch,
                                        size_t width, size_t height,
                                        cudaMemcpyKind kind,
                                        cudaStream_t stream) {
  return Memcpy2D<gmt::g_real_cudaMemcpy2DAsync_ptsz>(
      "cudaMemcpy2DAsync", dst, dpitch, src, spitch, width, height, kind,
      stream);
}

cudaError_t Shim_cudaMemset2D(void* ptr, size_t pitch, int value, size_t width,
                              size_t height) {
  return Memset2D<gmt::g_real_cudaMemset2D>("cudaMemset2D", ptr, pitch, value,
                                            width, height);
}

cudaError_t Shim_cudaMemset2D_ptds(void* ptr, size_t pitch, int value,
                                   size_t width, size_t height) {
  return Memset2D<gmt::g_real_cudaMemset2D_ptds>("cudaMemset2D", ptr, pitch,
                                                 value, width, height);
}

cudaError_t Shim_cudaMemset2DAsync(void* ptr, size_t pitch, int value,
                                   size_t width, size_t height,
                                   cudaStream_t stream) {
  return Memset2D<gmt::g_real_cudaMemset2DAsync>(
      "cudaMemset2DAsync", ptr, pitch, value, width, height, stream);
}

cudaError_t Shim_cudaMemset2DAsync_ptsz(void* ptr, size_t pitch, int value,
                                        size_t width, size_t height,
                                        cudaStream_t stream) {
  return Memset2D<gmt::g_real_cudaMemset2DAsync_ptsz>(
      "cudaMemset2DAsync", ptr, pitch, value, width, height, stream);
}

// ---- cudaMemcpy3D, cudaMemset3D (+Async) ------------------------------------

cudaError_t Shim_cudaMemcpy3D(const cudaMemcpy3DParms* p) {
  return Memcpy3D<gmt::g_real_cudaMemcpy3D>("cudaMemcpy3D", p);
}

cudaError_t Shim_cudaMemcpy3D_ptds(const cudaMemcpy3DParms* p) {
  return Memcpy3D<gmt::g_real_cudaMemcpy3D_ptds>("cudaMemcpy3D", p);
}

cudaError_t Shim_cudaMemcpy3DAsync(const cudaMemcpy3DParms* p,
                                   cudaStream_t stream) {
  return Memcpy3D<gmt::g_real_cudaMemcpy3DAsync>("cudaMemcpy3DAsync", p,
                                                 stream);
}

cudaError_t Shim_cudaMemcpy3DAsync_ptsz(const cudaMemcpy3DParms* p,
                                        cudaStream_t stream) {
  return Memcpy3D<gmt::g_real_cudaMemcpy3DAsync_ptsz>("cudaMemcpy3DAsync", p,
                                                      stream);
}

cudaError_t Shim_cudaMemset3D(cudaPitchedPtr pitched, int value,
                              cudaExtent extent) {
  return Memset3D<gmt::g_real_cudaMemset3D>("cudaMemset3D", pitched, value,
                                            extent);
}

cudaError_t Shim_cudaMemset3D_ptds(cudaPitchedPtr pitched, int value,
                                   cudaExtent extent) {
  return Memset3D<gmt::g_real_cudaMemset3D_ptds>("cudaMemset3D", pitched, value,
                                                 extent);
}

cudaError_t Shim_cudaMemset3DAsync(cudaPitchedPtr pitched, int value,
                                   cudaExtent extent, cudaStream_t stream) {
  return Memset3D<gmt::g_real_cudaMemset3DAsync>("cudaMemset3DAsync", pitched,
                                                 value, extent, stream);
}

cudaError_t Shim_cudaMemset3DAsync_ptsz(cudaPitchedPtr pitched, int value,
                                        cudaExtent extent,
                                        cudaStream_t stream) {
  return Memset3D<gmt::g_real_cudaMemset3DAsync_ptsz>(
      "cudaMemset3DAsync", pitched, value, extent, stream);
}

// ---- cudaMemcpyPeer (+Async): both sides are device memory ------------------

cudaError_t Shim_cudaMemcpyPeer(void* dst, int dst_device, const void* src,
                                int src_device, size_t count) {
  auto real = gmt::g_real_cudaMemcpyPeer.Get();
  return Checked(
      "cudaMemcpyPeer", real,
      [&] {
        return CopyRejected("cudaMemcpyPeer", cudaMemcpyDeviceToDevice, dst,
                            count, src, count);
      },
      [&] { return real(dst, dst_device, src, src_device, count); });
}

cudaError_t Shim_cudaMemcpyPeerAsync(void* dst, int dst_device, const void* src,
                                     int src_device, size_t count,
                                     cudaStream_t stream) {
  auto real = gmt::g_real_cudaMemcpyPeerAsync.Get();
  return Checked(
      "cudaMemcpyPeerAsync", real,
      [&] {
        return CopyRejected("cudaMemcpyPeerAsync", cudaMemcpyDeviceToDevice,
                            dst, count, src, count);
      },
      [&] { return real(dst, dst_device, src, src_device, count, stream); });
}
