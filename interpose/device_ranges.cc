#include "interpose/device_ranges.h"

#include <optional>

namespace gmt {
namespace {

bool DeviceSide(CUmemorytype type) {
  return type == CU_MEMORYTYPE_DEVICE || type == CU_MEMORYTYPE_UNIFIED;
}

// A driver 3-D descriptor (CUDA_MEMCPY3D and its peer twin have the same
// fields): each DEVICE / UNIFIED side from its first byte over the volume.
template <typename Descriptor>
OperandRanges Volume3D(const Descriptor& p) {
  OperandRanges r;
  if (DeviceSide(p.dstMemoryType)) {
    r.dst = {p.dstDevice + (p.dstZ * p.dstHeight + p.dstY) * p.dstPitch +
                 p.dstXInBytes,
             VolumeExtent(p.dstPitch, p.dstHeight, p.WidthInBytes, p.Height,
                          p.Depth)};
  }
  if (DeviceSide(p.srcMemoryType)) {
    r.src = {p.srcDevice + (p.srcZ * p.srcHeight + p.srcY) * p.srcPitch +
                 p.srcXInBytes,
             VolumeExtent(p.srcPitch, p.srcHeight, p.WidthInBytes, p.Height,
                          p.Depth)};
  }
  return r;
}

// The linear side of a runtime 3-D copy at `pos` over `e`.
DeviceRange Linear3D(const cudaPitchedPtr& p, const cudaPos& pos,
                     const cudaExtent& e) {
  if (p.ptr == nullptr) return {};
  return {AddressOf(p.ptr) + (pos.z * p.ysize + pos.y) * p.pitch + pos.x,
          VolumeExtent(p.pitch, p.ysize, e.width, e.height, e.depth)};
}

// A pointer operand of a batch 3-D copy (element size 1): rowLength and
// layerHeight 0 mean tightly packed by the extent.
template <typename Pointer>
DeviceRange BatchOperand(uint64_t address, const Pointer& ptr, uint64_t width,
                         uint64_t height, uint64_t depth) {
  const uint64_t row = ptr.rowLength == 0 ? width : ptr.rowLength;
  const uint64_t layer = ptr.layerHeight == 0 ? height : ptr.layerHeight;
  return {address, VolumeExtent(row, layer, width, height, depth)};
}

}  // namespace

bool DeviceDestination(cudaMemcpyKind kind) {
  return kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice ||
         kind == cudaMemcpyDefault;
}

bool DeviceSource(cudaMemcpyKind kind) {
  return kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice ||
         kind == cudaMemcpyDefault;
}

OperandRanges KindRanges(cudaMemcpyKind kind, const void* dst,
                         uint64_t dst_bytes, const void* src,
                         uint64_t src_bytes) {
  OperandRanges r;
  if (DeviceDestination(kind)) r.dst = {AddressOf(dst), dst_bytes};
  if (DeviceSource(kind)) r.src = {AddressOf(src), src_bytes};
  return r;
}

OperandRanges RangesOf(const CUDA_MEMCPY2D& p) {
  OperandRanges r;
  if (DeviceSide(p.dstMemoryType)) {
    r.dst = {p.dstDevice + p.dstY * p.dstPitch + p.dstXInBytes,
             PitchedExtent(p.dstPitch, p.WidthInBytes, p.Height)};
  }
  if (DeviceSide(p.srcMemoryType)) {
    r.src = {p.srcDevice + p.srcY * p.srcPitch + p.srcXInBytes,
             PitchedExtent(p.srcPitch, p.WidthInBytes, p.Height)};
  }
  return r;
}

OperandRanges RangesOf(const CUDA_MEMCPY3D& p) { return Volume3D(p); }

OperandRanges RangesOf(const CUDA_MEMCPY3D_PEER& p) { return Volume3D(p); }

OperandRanges RangesOf(const cudaMemcpy3DParms& p) {
  if (p.srcArray != nullptr || p.dstArray != nullptr) return {};
  const OperandRanges linear{Linear3D(p.dstPtr, p.dstPos, p.extent),
                             Linear3D(p.srcPtr, p.srcPos, p.extent)};
  return KindRanges(p.kind, reinterpret_cast<const void*>(linear.dst.address),
                    linear.dst.bytes,
                    reinterpret_cast<const void*>(linear.src.address),
                    linear.src.bytes);
}

OperandRanges RangesOf(const cudaMemcpy3DPeerParms& p) {
  OperandRanges r;
  if (p.dstArray == nullptr) r.dst = Linear3D(p.dstPtr, p.dstPos, p.extent);
  if (p.srcArray == nullptr) r.src = Linear3D(p.srcPtr, p.srcPos, p.extent);
  return r;
}

OperandRanges RangesOf(const CUDA_MEMCPY3D_BATCH_OP& op) {
  if (op.src.type != CU_MEMCPY_OPERAND_TYPE_POINTER ||
      op.dst.type != CU_MEMCPY_OPERAND_TYPE_POINTER) {
    return {};
  }
  const CUextent3D& e = op.extent;
  return {BatchOperand(op.dst.op.ptr.ptr, op.dst.op.ptr, e.width, e.height,
                       e.depth),
          BatchOperand(op.src.op.ptr.ptr, op.src.op.ptr, e.width, e.height,
                       e.depth)};
}

OperandRanges RangesOf(const cudaMemcpy3DBatchOp& op) {
  if (op.src.type != cudaMemcpyOperandTypePointer ||
      op.dst.type != cudaMemcpyOperandTypePointer) {
    return {};
  }
  const cudaExtent& e = op.extent;
  return {BatchOperand(AddressOf(op.dst.op.ptr.ptr), op.dst.op.ptr, e.width,
                       e.height, e.depth),
          BatchOperand(AddressOf(op.src.op.ptr.ptr), op.src.op.ptr, e.width,
                       e.height, e.depth)};
}

OperandRanges RangesOf(const CUDA_MEMSET_NODE_PARAMS& p) {
  const uint64_t row = ElementBytes(p.width, p.elementSize);
  return {{p.dst, row == 0 ? 0 : PitchedExtent(p.pitch, row, p.height)}, {}};
}

OperandRanges RangesOf(const cudaMemsetParams& p) {
  const uint64_t row = ElementBytes(p.width, p.elementSize);
  return {
      {AddressOf(p.dst), row == 0 ? 0 : PitchedExtent(p.pitch, row, p.height)},
      {}};
}

OperandRanges RangesOf(const CUmemDecompressParams& p) {
  return {{AddressOf(p.dst), p.dstNumBytes}, {AddressOf(p.src), p.srcNumBytes}};
}

bool InRedzone(const Engine& engine, uint64_t address) {
  const std::optional<BlockView> view = engine.FindBlock(address);
  return view && view->guarded &&
         (address < view->user_address ||
          address - view->user_address >= view->user_bytes);
}

bool RangesRejected(Engine& engine, const char* api,
                    const OperandRanges& ranges) {
  return AccessRejected(engine, api, ranges.dst.address, ranges.dst.bytes) ||
         AccessRejected(engine, api, ranges.src.address, ranges.src.bytes);
}

}  // namespace gmt
