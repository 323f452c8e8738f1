// Batch calls, each element by the rule of its single call
// (docs/transparency.md, class d): every element's device ranges are checked
// against the user's bytes before the batch is forwarded (device_ranges.h),
// and a batch with a refused element is refused whole, as CUDA refuses it
// (invalid value; cuMemBatchDecompressAsync also names the element in
// *errorIndex). Elements CUDA must judge itself (size 0, host memory, CUDA
// arrays) pass unchecked.
//
//   cuMemcpyBatchAsync, cudaMemcpyBatchAsync       dsts[i], srcs[i], sizes[i]
//   cuMemcpy3DBatchAsync, cudaMemcpy3DBatchAsync   pointer-to-pointer ops
//   cuMemPrefetchBatchAsync, cudaMemPrefetch...    dptrs[i], sizes[i]
//   cuMemDiscardBatchAsync, cudaMemDiscard...      dptrs[i], sizes[i], shrunk
//   cuMemDiscardAndPrefetchBatchAsync, cuda...     discard shrunk, prefetch all
//   cuMemBatchDecompressAsync                      src / dst of each element
//
// A discard makes the contents of whole pages indeterminate. The first and
// last pages of a guarded managed block also hold its redzones, whose
// canaries a discard would destroy (a false overrun report). A discard is a
// hint, so discarding less is invisible to the program: each range of a
// guarded block is shrunk to the whole pages of the largest size the driver
// uses for managed memory (2 MiB) that lie inside the user's bytes; ranges
// left empty are dropped, and a batch left empty is not made at all (CUDA
// would have discarded pages the program no longer reads as written).
#include <optional>
#include <type_traits>
#include <vector>

#include "interpose/device_ranges.h"
#include "interpose/guard_shim_util.h"
#include "interpose/resolve/driver_hooks.h"
#include "interpose/resolve/runtime_hooks.h"

namespace {

using gmt::AddressOf;
using gmt::DeviceRange;
using gmt::OperandRanges;

// The largest page the driver migrates or drops managed memory by.
constexpr uint64_t kDiscardPage = uint64_t{2} << 20;

template <typename Pointer>
uint64_t Address(Pointer p) {
  if constexpr (std::is_pointer_v<Pointer>) {
    return AddressOf(p);
  } else {
    return static_cast<uint64_t>(p);
  }
}

// The driver's or the runtime's forwarder, by what the call returns (a
// driver and a runtime stream are the same type).
template <typename Real, typename Rejected, typename Call>
auto ForwardUnlessRejected(const char* api, Real real, Rejected& rejected,
                           Call& call) {
  if constexpr (std::is_same_v<decltype(call()), CUresult>) {
    return gmt::ForwardDriverUnlessRejected(api, real, rejected, call);
  } else {
    return gmt::ForwardRuntimeUnlessRejected(api, real, rejected, call);
  }
}

// Element i of a (pointer, size) batch as one range.
template <typename Pointer>
auto ElementRange(Pointer const* ptrs, const size_t* sizes) {
  return [=](size_t i) {
    return OperandRanges{{Address(ptrs[i]), sizes[i]}, {}};
  };
}

// True when a (pointer, size) batch has an element the engine refuses.
template <typename Pointer>
bool RangeBatchRejected(gmt::Engine& engine, const char* api,
                        Pointer const* ptrs, const size_t* sizes,
                        size_t count) {
  if (ptrs == nullptr || sizes == nullptr) return false;
  return gmt::FirstRejectedElement(engine, api, count,
                                   ElementRange(ptrs, sizes)) < count;
}

// The part of `r` a discard may reach (see the top of this file).
DeviceRange DiscardablePart(const gmt::Engine& engine, DeviceRange r) {
  const std::optional<gmt::BlockView> view = engine.FindBlock(r.address);
  if (!view || !view->guarded || r.bytes == 0) return r;
  const uint64_t first =
      (r.address + kDiscardPage - 1) / kDiscardPage * kDiscardPage;
  const uint64_t end = (r.address + r.bytes) / kDiscardPage * kDiscardPage;
  return end > first ? DeviceRange{first, end - first} : DeviceRange{};
}

// A (pointer, size) batch with its discardable parts; empty ranges dropped.
template <typename Pointer>
struct ShrunkBatch {
  std::vector<Pointer> ptrs;
  std::vector<size_t> sizes;
  bool changed = false;
};

template <typename Pointer>
ShrunkBatch<Pointer> Shrink(Pointer const* ptrs, const size_t* sizes,
                            size_t count) {
  ShrunkBatch<Pointer> out;
  if (ptrs == nullptr || sizes == nullptr) return out;
  const gmt::Engine& engine = gmt::Engine::Get();
  for (size_t i = 0; i < count; ++i) {
    const DeviceRange part =
        DiscardablePart(engine, {Address(ptrs[i]), sizes[i]});
    if (part.address != Address(ptrs[i]) || part.bytes != sizes[i]) {
      out.changed = true;
    }
    if (part.bytes == 0) continue;
    if constexpr (std::is_pointer_v<Pointer>) {
      out.ptrs.push_back(reinterpret_cast<Pointer>(part.address));
    } else {
      out.ptrs.push_back(static_cast<Pointer>(part.address));
    }
    out.sizes.push_back(part.bytes);
  }
  return out;
}

// ---- Copies -----------------------------------------------------------------

template <auto& kReal>
CUresult CopyBatch(const char* api, CUdeviceptr* dsts, CUdeviceptr* srcs,
                   size_t* sizes, size_t count, CUmemcpyAttributes* attrs,
                   size_t* attrs_idxs, size_t num_attrs, CUstream stream) {
  auto real = kReal.Get();
  return gmt::ForwardDriverUnlessRejected(
      api, real,
      [&](gmt::Engine& engine) {
        return dsts != nullptr && srcs != nullptr && sizes != nullptr &&
               gmt::FirstRejectedElement(engine, api, count, [&](size_t i) {
                 return OperandRanges{{dsts[i], sizes[i]}, {srcs[i], sizes[i]}};
               }) < count;
      },
      [&] {
        return real(dsts, srcs, sizes, count, attrs, attrs_idxs, num_attrs,
                    stream);
      });
}

template <auto& kReal>
cudaError_t RuntimeCopyBatch(const char* api, void* const* dsts,
                             const void* const* srcs, const size_t* sizes,
                             size_t count, cudaMemcpyAttributes* attrs,
                             size_t* attrs_idxs, size_t num_attrs,
                             cudaStream_t stream) {
  auto real = kReal.Get();
  return gmt::ForwardRuntimeUnlessRejected(
      api, real,
      [&](gmt::Engine& engine) {
        return dsts != nullptr && srcs != nullptr && sizes != nullptr &&
               gmt::FirstRejectedElement(engine, api, count, [&](size_t i) {
                 return OperandRanges{{AddressOf(dsts[i]), sizes[i]},
                                      {AddressOf(srcs[i]), sizes[i]}};
               }) < count;
      },
      [&] {
        return real(dsts, srcs, sizes, count, attrs, attrs_idxs, num_attrs,
                    stream);
      });
}

// cuMemcpy3DBatchAsync and its runtime twin: (numOps, opList, flags, stream).
template <auto& kReal, typename Op, typename Stream>
auto Copy3DBatch(const char* api, size_t count, Op* ops,
                 unsigned long long flags, Stream stream) {
  auto real = kReal.Get();
  auto rejected = [&](gmt::Engine& engine) {
    return ops != nullptr &&
           gmt::FirstRejectedElement(engine, api, count, [&](size_t i) {
             return gmt::RangesOf(ops[i]);
           }) < count;
  };
  auto call = [&] { return real(count, ops, flags, stream); };
  return ForwardUnlessRejected(api, real, rejected, call);
}

// ---- Prefetch ---------------------------------------------------------------

template <auto& kReal, typename Pointer, typename Location, typename Stream>
auto PrefetchBatch(const char* api, Pointer* ptrs, size_t* sizes, size_t count,
                   Location* locations, size_t* location_idxs,
                   size_t num_locations, unsigned long long flags,
                   Stream stream) {
  auto real = kReal.Get();
  auto rejected = [&](gmt::Engine& engine) {
    return RangeBatchRejected(engine, api, ptrs, sizes, count);
  };
  auto call = [&] {
    return real(ptrs, sizes, count, locations, location_idxs, num_locations,
                flags, stream);
  };
  return ForwardUnlessRejected(api, real, rejected, call);
}

// ---- Discard ----------------------------------------------------------------

template <typename Result>
Result Success() {
  return static_cast<Result>(0);  // CUDA_SUCCESS, cudaSuccess
}

template <auto& kReal, typename Pointer, typename Stream>
auto DiscardBatch(const char* api, Pointer* ptrs, size_t* sizes, size_t count,
                  unsigned long long flags, Stream stream) {
  auto real = kReal.Get();
  auto rejected = [&](gmt::Engine& engine) {
    return RangeBatchRejected(engine, api, ptrs, sizes, count);
  };
  auto call = [&] {
    ShrunkBatch<Pointer> shrunk = Shrink(ptrs, sizes, count);
    if (!shrunk.changed) return real(ptrs, sizes, count, flags, stream);
    if (shrunk.ptrs.empty())
      return Success<decltype(real(ptrs, sizes, count, flags, stream))>();
    return real(shrunk.ptrs.data(), shrunk.sizes.data(), shrunk.ptrs.size(),
                flags, stream);
  };
  return ForwardUnlessRejected(api, real, rejected, call);
}

// Discard and prefetch: when a range must be shrunk, the discard of the shrunk
// ranges then the prefetch of all of them, which CUDA documents as the same.
template <auto& kReal, auto& kDiscard, auto& kPrefetch, typename Pointer,
          typename Location, typename Stream>
auto DiscardAndPrefetchBatch(const char* api, Pointer* ptrs, size_t* sizes,
                             size_t count, Location* locations,
                             size_t* location_idxs, size_t num_locations,
                             unsigned long long flags, Stream stream) {
  auto real = kReal.Get();
  auto rejected = [&](gmt::Engine& engine) {
    return RangeBatchRejected(engine, api, ptrs, sizes, count);
  };
  auto call = [&] {
    ShrunkBatch<Pointer> shrunk = Shrink(ptrs, sizes, count);
    auto discard = kDiscard.Get();
    auto prefetch = kPrefetch.Get();
    if (!shrunk.changed || discard == nullptr || prefetch == nullptr) {
      return real(ptrs, sizes, count, locations, location_idxs, num_locations,
                  flags, stream);
    }
    if (!shrunk.ptrs.empty()) {
      const auto result = discard(shrunk.ptrs.data(), shrunk.sizes.data(),
                                  shrunk.ptrs.size(), flags, stream);
      if (result != Success<std::remove_const_t<decltype(result)>>())
        return result;
    }
    return prefetch(ptrs, sizes, count, locations, location_idxs, num_locations,
                    flags, stream);
  };
  return ForwardUnlessRejected(api, real, rejected, call);
}

// ---- Decompression ----------------------------------------------------------

template <auto& kReal>
CUresult DecompressBatch(CUmemDecompressParams* params, size_t count,
                         unsigned int flags, size_t* error_index,
                         CUstream stream) {
  constexpr const char* kApi = "cuMemBatchDecompressAsync";
  auto real = kReal.Get();
  return gmt::ForwardDriverUnlessRejected(
      kApi, real,
      [&](gmt::Engine& engine) {
        if (params == nullptr) return false;
        const size_t refused = gmt::FirstRejectedElement(
            engine, kApi, count,
            [&](size_t i) { return gmt::RangesOf(params[i]); });
        if (refused == count) return false;
        if (error_index != nullptr) *error_index = refused;
        return true;
      },
      [&] { return real(params, count, flags, error_index, stream); });
}

}  // namespace

// ---- Driver -----------------------------------------------------------------

CUresult Shim_cuMemcpyBatchAsync_v2(CUdeviceptr* dsts, CUdeviceptr* srcs,
                                    size_t* sizes, size_t count,
                                    CUmemcpyAttributes* attrs,
                                    size_t* attrs_idxs, size_t num_attrs,
                                    CUstream stream) {
  return CopyBatch<gmt::g_real_cuMemcpyBatchAsync_v2>(
      "cuMemcpyBatchAsync", dsts, srcs, sizes, count, attrs, attrs_idxs,
      num_attrs, stream);
}

CUresult Shim_cuMemcpyBatchAsync_v2_ptsz(CUdeviceptr* dsts, CUdeviceptr* srcs,
                                         size_t* sizes, size_t count,
                                         CUmemcpyAttributes* attrs,
                                         size_t* attrs_idxs, size_t num_attrs,
                                         CUstream stream) {
  return CopyBatch<gmt::g_real_cuMemcpyBatchAsync_v2_ptsz>(
      "cuMemcpyBatchAsync", dsts, srcs, sizes, count, attrs, attrs_idxs,
      num_attrs, stream);
}

CUresult Shim_cuMemcpy3DBatchAsync_v2(size_t count, CUDA_MEMCPY3D_BATCH_OP* ops,
                                      unsigned long long flags,
                                      CUstream stream) {
  return Copy3DBatch<gmt::g_real_cuMemcpy3DBatchAsync_v2>(
      "cuMemcpy3DBatchAsync", count, ops, flags, stream);
}

CUresult Shim_cuMemcpy3DBatchAsync_v2_ptsz(size_t count,
                                           CUDA_MEMCPY3D_BATCH_OP* ops,
                                           unsigned long long flags,
                                           CUstream stream) {
  return Copy3DBatch<gmt::g_real_cuMemcpy3DBatchAsync_v2_ptsz>(
      "cuMemcpy3DBatchAsync", count, ops, flags, stream);
}

CUresult Shim_cuMemPrefetchBatchAsync(CUdeviceptr* ptrs, size_t* sizes,
                                      size_t count, CUmemLocation* locations,
                                      size_t* location_idxs,
                                      size_t num_locations,
                                      unsigned long long flags,
                                      CUstream stream) {
  return PrefetchBatch<gmt::g_real_cuMemPrefetchBatchAsync>(
      "cuMemPrefetchBatchAsync", ptrs, sizes, count, locations, location_idxs,
      num_locations, flags, stream);
}

CUresult Shim_cuMemPrefetchBatchAsync_ptsz(
    CUdeviceptr* ptrs, size_t* sizes, size_t count, CUmemLocation* locations,
    size_t* location_idxs, size_t num_locations, unsigned long long flags,
    CUstream stream) {
  return PrefetchBatch<gmt::g_real_cuMemPrefetchBatchAsync_ptsz>(
      "cuMemPrefetchBatchAsync", ptrs, sizes, count, locations, location_idxs,
      num_locations, flags, stream);
}

CUresult Shim_cuMemDiscardBatchAsync(CUdeviceptr* ptrs, size_t* sizes,
                                     size_t count, unsigned long long flags,
                                     CUstream stream) {
  return DiscardBatch<gmt::g_real_cuMemDiscardBatchAsync>(
      "cuMemDiscardBatchAsync", ptrs, sizes, count, flags, stream);
}

CUresult Shim_cuMemDiscardBatchAsync_ptsz(CUdeviceptr* ptrs, size_t* sizes,
                                          size_t count,
                                          unsigned long long flags,
                                          CUstream stream) {
  return DiscardBatch<gmt::g_real_cuMemDiscardBatchAsync_ptsz>(
      "cuMemDiscardBatchAsync", ptrs, sizes, count, flags, stream);
}

CUresult Shim_cuMemDiscardAndPrefetchBatchAsync(
    CUdeviceptr* ptrs, size_t* sizes, size_t count, CUmemLocation* locations,
    size_t* location_idxs, size_t num_locations, unsigned long long flags,
    CUstream stream) {
  return DiscardAndPrefetchBatch<gmt::g_real_cuMemDiscardAndPrefetchBatchAsync,
                                 gmt::g_real_cuMemDiscardBatchAsync,
                                 gmt::g_real_cuMemPrefetchBatchAsync>(
      "cuMemDiscardAndPrefetchBatchAsync", ptrs, sizes, count, locations,
      location_idxs, num_locations, flags, stream);
}

CUresult Shim_cuMemDiscardAndPrefetchBatchAsync_ptsz(
    CUdeviceptr* ptrs, size_t* sizes, size_t count, CUmemLocation* locations,
    size_t* location_idxs, size_t num_locations, unsigned long long flags,
    CUstream stream) {
  return DiscardAndPrefetchBatch<
      gmt::g_real_cuMemDiscardAndPrefetchBatchAsync_ptsz,
      gmt::g_real_cuMemDiscardBatchAsync_ptsz,
      gmt::g_real_cuMemPrefetchBatchAsync_ptsz>(
      "cuMemDiscardAndPrefetchBatchAsync", ptrs, sizes, count, locations,
      location_idxs, num_locations, flags, stream);
}

CUresult Shim_cuMemBatchDecompressAsync(CUmemDecompressParams* params,
                                        size_t count, unsigned int flags,
                                        size_t* error_index, CUstream stream) {
  return DecompressBatch<gmt::g_real_cuMemBatchDecompressAsync>(
      params, count, flags, error_index, stream);
}

CUresult Shim_cuMemBatchDecompressAsync_ptsz(CUmemDecompressParams* params,
                                             size_t count, unsigned int flags,
                                             size_t* error_index,
                                             CUstream stream) {
  return DecompressBatch<gmt::g_real_cuMemBatchDecompressAsync_ptsz>(
      params, count, flags, error_index, stream);
}

// ---- Runtime ----------------------------------------------------------------

cudaError_t Shim_cudaMemcpyBatchAsync(void* const* dsts,
                                      const void* const* srcs,
                                      const size_t* sizes, size_t count,
                                      cudaMemcpyAttributes* attrs,
                                      size_t* attrs_idxs, size_t num_attrs,
                                      cudaStream_t stream) {
  return RuntimeCopyBatch<gmt::g_real_cudaMemcpyBatchAsync>(
      "cudaMemcpyBatchAsync", dsts, srcs, sizes, count, attrs, attrs_idxs,
      num_attrs, stream);
}

cudaError_t Shim_cudaMemcpyBatchAsync_ptsz(void* const* dsts,
                                           const void* const* srcs,
                                           const size_t* sizes, size_t count,
                                           cudaMemcpyAttributes* attrs,
                                           size_t* attrs_idxs, size_t num_attrs,
                                           cudaStream_t stream) {
  return RuntimeCopyBatch<gmt::g_real_cudaMemcpyBatchAsync_ptsz>(
      "cudaMemcpyBatchAsync", dsts, srcs, sizes, count, attrs, attrs_idxs,
      num_attrs, stream);
}

cudaError_t Shim_cudaMemcpy3DBatchAsync(size_t count, cudaMemcpy3DBatchOp* ops,
                                        unsigned long long flags,
                                        cudaStream_t stream) {
  return Copy3DBatch<gmt::g_real_cudaMemcpy3DBatchAsync>(
      "cudaMemcpy3DBatchAsync", count, ops, flags, stream);
}

cudaError_t Shim_cudaMemcpy3DBatchAsync_ptsz(size_t count,
                                             cudaMemcpy3DBatchOp* ops,
                                             unsigned long long flags,
                                             cudaStream_t stream) {
  return Copy3DBatch<gmt::g_real_cudaMemcpy3DBatchAsync_ptsz>(
      "cudaMemcpy3DBatchAsync", count, ops, flags, stream);
}

cudaError_t Shim_cudaMemPrefetchBatchAsync(
    void** ptrs, size_t* sizes, size_t count, cudaMemLocation* locations,
    size_t* location_idxs, size_t num_locations, unsigned long long flags,
    cudaStream_t stream) {
  return PrefetchBatch<gmt::g_real_cudaMemPrefetchBatchAsync>(
      "cudaMemPrefetchBatchAsync", ptrs, sizes, count, locations, location_idxs,
      num_locations, flags, stream);
}

cudaError_t Shim_cudaMemPrefetchBatchAsync_ptsz(
    void** ptrs, size_t* sizes, size_t count, cudaMemLocation* locations,
    size_t* location_idxs, size_t num_locations, unsigned long long flags,
    cudaStream_t stream) {
  return PrefetchBatch<gmt::g_real_cudaMemPrefetchBatchAsync_ptsz>(
      "cudaMemPrefetchBatchAsync", ptrs, sizes, count, locations, location_idxs,
      num_locations, flags, stream);
}

cudaError_t Shim_cudaMemDiscardBatchAsync(void** ptrs, size_t* sizes,
                                          size_t count,
                                          unsigned long long flags,
                                          cudaStream_t stream) {
  return DiscardBatch<gmt::g_real_cudaMemDiscardBatchAsync>(
      "cudaMemDiscardBatchAsync", ptrs, sizes, count, flags, stream);
}

cudaError_t Shim_cudaMemDiscardBatchAsync_ptsz(void** ptrs, size_t* sizes,
                                               size_t count,
                                               unsigned long long flags,
                                               cudaStream_t stream) {
  return DiscardBatch<gmt::g_real_cudaMemDiscardBatchAsync_ptsz>(
      "cudaMemDiscardBatchAsync", ptrs, sizes, count, flags, stream);
}

cudaError_t Shim_cudaMemDiscardAndPrefetchBatchAsync(
    void** ptrs, size_t* sizes, size_t count, cudaMemLocation* locations,
    size_t* location_idxs, size_t num_locations, unsigned long long flags,
    cudaStream_t stream) {
  return DiscardAndPrefetchBatch<
      gmt::g_real_cudaMemDiscardAndPrefetchBatchAsync,
      gmt::g_real_cudaMemDiscardBatchAsync,
      gmt::g_real_cudaMemPrefetchBatchAsync>(
      "cudaMemDiscardAndPrefetchBatchAsync", ptrs, sizes, count, locations,
      location_idxs, num_locations, flags, stream);
}

cudaError_t Shim_cudaMemDiscardAndPrefetchBatchAsync_ptsz(
    void** ptrs, size_t* sizes, size_t count, cudaMemLocation* locations,
    size_t* location_idxs, size_t num_locations, unsigned long long flags,
    cudaStream_t stream) {
  return DiscardAndPrefetchBatch<
      gmt::g_real_cudaMemDiscardAndPrefetchBatchAsync_ptsz,
      gmt::g_real_cudaMemDiscardBatchAsync_ptsz,
      gmt::g_real_cudaMemPrefetchBatchAsync_ptsz>(
      "cudaMemDiscardAndPrefetchBatchAsync", ptrs, sizes, count, locations,
      location_idxs, num_locations, flags, stream);
}
