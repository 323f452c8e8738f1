// Fake runtime: the range calls the range shims check
// (interpose/shims/managed_range_shims.cc, batch_shims.cc,
// graph_node_bounds_shims.cc, copy_bounds_array_symbol_shims.cc), each
// through the driver entry point the real runtime would use, found through
// cuGetProcAddress (fake_runtime_lookup.h), so a tool sees the runtime call
// and, nested inside it, the driver call.
//
// Module variables: the double has no modules, so a symbol is the variable's
// own host bytes (a copy to it is a unified cuMemcpy to symbol + offset).
#include <cudaTypedefs.h>

#include <vector>

#include "tests/fake_cuda/fake_runtime.h"
#include "tests/fake_cuda/fake_runtime_lookup.h"

using fake_cudart::DevicePointer;
using fake_cudart::LookupDriver;
using fake_cudart::Return;

namespace {

CUmemLocation DriverLocation(cudaMemLocation location) {
  CUmemLocation l{};
  l.type = static_cast<CUmemLocationType>(location.type);
  l.id = location.id;
  return l;
}

}  // namespace

FAKE_CUDART_API(cudaMemAdvise,
                (const void* ptr, size_t count, cudaMemoryAdvise advice,
                 cudaMemLocation location)) {
  PFN_cuMemAdvise_v12020 advise = nullptr;
  if (cudaError_t e = LookupDriver("cuMemAdvise", false, &advise);
      e != cudaSuccess) {
    return e;
  }
  return Return(advise(DevicePointer(ptr), count,
                       static_cast<CUmem_advise>(advice),
                       DriverLocation(location)));
}

FAKE_CUDART_API(cudaMemPrefetchAsync,
                (const void* ptr, size_t count, cudaMemLocation location,
                 unsigned int flags, cudaStream_t stream)) {
  PFN_cuMemPrefetchAsync_v12020 prefetch = nullptr;
  if (cudaError_t e = LookupDriver("cuMemPrefetchAsync", false, &prefetch);
      e != cudaSuccess) {
    return e;
  }
  return Return(prefetch(DevicePointer(ptr), count, DriverLocation(location),
                         flags, stream));
}

FAKE_CUDART_API(cudaMemRangeGetAttribute,
                (void* data, size_t data_size, cudaMemRangeAttribute attribute,
                 const void* ptr, size_t count)) {
  PFN_cuMemRangeGetAttribute_v8000 get = nullptr;
  if (cudaError_t e = LookupDriver("cuMemRangeGetAttribute", false, &get);
      e != cudaSuccess) {
    return e;
  }
  return Return(get(data, data_size,
                    static_cast<CUmem_range_attribute>(attribute),
                    DevicePointer(ptr), count));
}

FAKE_CUDART_API(cudaMemcpyBatchAsync,
                (void* const* dsts, const void* const* srcs,
                 const size_t* sizes, size_t count,
                 cudaMemcpyAttributes* /*attrs*/, size_t* /*attrs_idxs*/,
                 size_t /*num_attrs*/, cudaStream_t stream)) {
  PFN_cuMemcpyBatchAsync_v13000 batch = nullptr;
  if (cudaError_t e = LookupDriver("cuMemcpyBatchAsync", false, &batch);
      e != cudaSuccess) {
    return e;
  }
  if (dsts == nullptr || srcs == nullptr || sizes == nullptr) {
    return Return(cudaErrorInvalidValue);
  }
  std::vector<CUdeviceptr> d(count), s(count);
  std::vector<size_t> n(sizes, sizes + count);
  for (size_t i = 0; i < count; ++i) {
    d[i] = DevicePointer(dsts[i]);
    s[i] = DevicePointer(srcs[i]);
  }
  return Return(
      batch(d.data(), s.data(), n.data(), count, nullptr, nullptr, 0, stream));
}

FAKE_CUDART_API(cudaGraphAddMemsetNode,
                (cudaGraphNode_t * node, cudaGraph_t graph,
                 const cudaGraphNode_t* deps, size_t num_deps,
                 const cudaMemsetParams* params)) {
  PFN_cuGraphAddMemsetNode_v10000 add = nullptr;
  if (cudaError_t e = LookupDriver("cuGraphAddMemsetNode", false, &add);
      e != cudaSuccess) {
    return e;
  }
  if (params == nullptr) return Return(cudaErrorInvalidValue);
  CUDA_MEMSET_NODE_PARAMS p{};
  p.dst = DevicePointer(params->dst);
  p.pitch = params->pitch;
  p.value = params->value;
  p.elementSize = params->elementSize;
  p.width = params->width;
  p.height = params->height;
  return Return(add(
      reinterpret_cast<CUgraphNode*>(node), reinterpret_cast<CUgraph>(graph),
      reinterpret_cast<const CUgraphNode*>(deps), num_deps, &p, nullptr));
}

FAKE_CUDART_API(cudaMemcpyToSymbol,
                (const void* symbol, const void* src, size_t count,
                 size_t offset, cudaMemcpyKind kind)) {
  PFN_cuMemcpy_v4000 copy = nullptr;
  if (cudaError_t e = LookupDriver("cuMemcpy", false, &copy);
      e != cudaSuccess) {
    return e;
  }
  if (symbol == nullptr) return Return(cudaErrorInvalidSymbol);
  if (kind != cudaMemcpyHostToDevice && kind != cudaMemcpyDeviceToDevice &&
      kind != cudaMemcpyDefault) {
    return Return(cudaErrorInvalidMemcpyDirection);
  }
  return Return(
      copy(DevicePointer(symbol) + offset, DevicePointer(src), count));
}
