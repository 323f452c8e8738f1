// The device-side byte ranges that a copy, set, hint or batch element touches,
// read from each shape CUDA takes them in, and the one check every range shim
// makes with them (the rule: docs/transparency.md, class a).
//
// CUDA refuses a range that leaves an allocation even by one byte (invalid
// value). Under guard zones the raw block is larger than the user's, so CUDA
// would accept a range that runs into a redzone: the shim asks the engine
// (Engine::CheckAccess through AccessRejected) about every device-side range
// before forwarding, and answers CUDA's refusal itself. Shims only find the
// ranges here and forward; they hold no check of their own.
//
// An operand that is host memory, a CUDA array, or a range CUDA must judge by
// its shape (pitch below width, overflow) has no range here (bytes 0): it is
// never checked, CUDA decides.
#ifndef GMT_INTERPOSE_DEVICE_RANGES_H_
#define GMT_INTERPOSE_DEVICE_RANGES_H_

#include <cstddef>
#include <cstdint>

#include "interpose/guard_shim_util.h"

namespace gmt {

inline uint64_t AddressOf(const void* p) {
  return reinterpret_cast<uintptr_t>(p);
}

// [address, address + bytes) of device or unified memory; bytes 0: unchecked.
struct DeviceRange {
  uint64_t address = 0;
  uint64_t bytes = 0;
};

// The operands of one copy (a set or a hint uses `dst` only).
struct OperandRanges {
  DeviceRange dst;
  DeviceRange src;
};

// Which sides of a runtime copy of `kind` are device memory
// (cudaMemcpyDefault: both; a host address there is untracked).
bool DeviceDestination(cudaMemcpyKind kind);
bool DeviceSource(cudaMemcpyKind kind);

// A runtime copy of `kind`: each side's range when that side is device memory.
OperandRanges KindRanges(cudaMemcpyKind kind, const void* dst,
                         uint64_t dst_bytes, const void* src,
                         uint64_t src_bytes);

// Driver descriptors: the DEVICE / UNIFIED sides (arrays and host: none).
OperandRanges RangesOf(const CUDA_MEMCPY2D& p);
OperandRanges RangesOf(const CUDA_MEMCPY3D& p);
OperandRanges RangesOf(const CUDA_MEMCPY3D_PEER& p);
// Runtime descriptors: linear-to-linear copies only (with an array on either
// side the extent's width counts elements, and arrays are never guarded).
OperandRanges RangesOf(const cudaMemcpy3DParms& p);
// Both linear sides of a peer copy are device memory.
OperandRanges RangesOf(const cudaMemcpy3DPeerParms& p);
// Batch 3-D copies: pointer-to-pointer operations (element size 1, rowLength
// / layerHeight 0 = tightly packed). With an array on the other side the
// element size is the array's: not checked.
OperandRanges RangesOf(const CUDA_MEMCPY3D_BATCH_OP& op);
OperandRanges RangesOf(const cudaMemcpy3DBatchOp& op);
// Memset nodes: `height` rows of `width` elements of `elementSize`, `pitch`
// apart.
OperandRanges RangesOf(const CUDA_MEMSET_NODE_PARAMS& p);
OperandRanges RangesOf(const cudaMemsetParams& p);
// A decompression: src (srcNumBytes) and dst (dstNumBytes).
OperandRanges RangesOf(const CUmemDecompressParams& p);

// True when the engine refuses a range of `ranges` made through `api` (one
// api-bounds report per refused call).
bool RangesRejected(Engine& engine, const char* api,
                    const OperandRanges& ranges);

// The index of the first of `count` batch elements whose ranges the engine
// refuses, or `count` when none is. `ranges_of(i)`: element i's OperandRanges.
template <typename RangesOfElement>
size_t FirstRejectedElement(Engine& engine, const char* api, size_t count,
                            RangesOfElement&& ranges_of) {
  for (size_t i = 0; i < count; ++i) {
    if (RangesRejected(engine, api, ranges_of(i))) return i;
  }
  return count;
}

// True when `address` lies in a redzone of a guarded block: to the program
// no allocation holds it, so a call about it is answered as CUDA answers an
// address it does not know.
bool InRedzone(const Engine& engine, uint64_t address);

// A shim's whole body: forwards the call `args...` to the real function in
// `kReal` unless the engine refuses one of `ranges()` (OperandRanges of the
// call), then answering CUDA's invalid value (ForwardDriverUnlessRejected /
// ForwardRuntimeUnlessRejected).
template <auto& kReal, typename RangesOfCall, typename... Args>
CUresult CheckedDriverCall(const char* api, RangesOfCall&& ranges,
                           Args... args) {
  auto real = kReal.Get();
  return ForwardDriverUnlessRejected(
      api, real,
      [&](Engine& engine) { return RangesRejected(engine, api, ranges()); },
      [&] { return real(args...); });
}

template <auto& kReal, typename RangesOfCall, typename... Args>
cudaError_t CheckedRuntimeCall(const char* api, RangesOfCall&& ranges,
                               Args... args) {
  auto real = kReal.Get();
  return ForwardRuntimeUnlessRejected(
      api, real,
      [&](Engine& engine) { return RangesRejected(engine, api, ranges()); },
      [&] { return real(args...); });
}

}  // namespace gmt

#endif  // GMT_INTERPOSE_DEVICE_RANGES_H_
