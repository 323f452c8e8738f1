// Fake runtime: CUDA graphs with memory nodes and stream capture, each
// forwarded to the driver the runtime's way (looked up through cuGetProcAddress
// at cudaVersion 13000, so a tool hooking that sees every call):
// cudaGraphInstantiate asks for "cuGraphInstantiate" (at 12000+ the driver
// hands out cuGraphInstantiateWithFlags), cudaGraphInstantiateWithFlags for
// "cuGraphInstantiateWithFlags". Streams come from cudaStreamCreate here too,
// for capture.
#include <cudaTypedefs.h>

#include <cstdint>

#include "tests/fake_cuda/fake_runtime.h"
#include "tests/fake_cuda/fake_runtime_lookup.h"

using fake_cudart::LookupDriver;
using fake_cudart::Return;

FAKE_CUDART_API(cudaStreamCreate, (cudaStream_t * stream)) {
  PFN_cuStreamCreate_v2000 create = nullptr;
  if (cudaError_t e = LookupDriver("cuStreamCreate", false, &create);
      e != cudaSuccess) {
    return e;
  }
  return Return(create(reinterpret_cast<CUstream*>(stream), CU_STREAM_DEFAULT));
}

FAKE_CUDART_API(cudaStreamDestroy, (cudaStream_t stream)) {
  PFN_cuStreamDestroy_v4000 destroy = nullptr;
  if (cudaError_t e = LookupDriver("cuStreamDestroy", false, &destroy);
      e != cudaSuccess) {
    return e;
  }
  return Return(destroy(reinterpret_cast<CUstream>(stream)));
}

FAKE_CUDART_API(cudaStreamBeginCapture,
                (cudaStream_t stream, cudaStreamCaptureMode mode)) {
  PFN_cuStreamBeginCapture_v10010 begin = nullptr;
  if (cudaError_t e = LookupDriver("cuStreamBeginCapture", false, &begin);
      e != cudaSuccess) {
    return e;
  }
  return Return(begin(reinterpret_cast<CUstream>(stream),
                      static_cast<CUstreamCaptureMode>(mode)));
}

FAKE_CUDART_API(cudaStreamEndCapture,
                (cudaStream_t stream, cudaGraph_t* graph)) {
  PFN_cuStreamEndCapture_v10000 end = nullptr;
  if (cudaError_t e = LookupDriver("cuStreamEndCapture", false, &end);
      e != cudaSuccess) {
    return e;
  }
  return Return(end(reinterpret_cast<CUstream>(stream),
                    reinterpret_cast<CUgraph*>(graph)));
}

// Built with per-thread default streams, a program calls these; the double's
// streams are the same either way, so they are the calls above.
FAKE_CUDART_API(cudaStreamBeginCapture_ptsz,
                (cudaStream_t stream, cudaStreamCaptureMode mode)) {
  return Fake_cudaStreamBeginCapture(stream, mode);
}

FAKE_CUDART_API(cudaStreamEndCapture_ptsz,
                (cudaStream_t stream, cudaGraph_t* graph)) {
  return Fake_cudaStreamEndCapture(stream, graph);
}

FAKE_CUDART_API(cudaGraphCreate, (cudaGraph_t * graph, unsigned int flags)) {
  PFN_cuGraphCreate_v10000 create = nullptr;
  if (cudaError_t e = LookupDriver("cuGraphCreate", false, &create);
      e != cudaSuccess) {
    return e;
  }
  return Return(create(reinterpret_cast<CUgraph*>(graph), flags));
}

FAKE_CUDART_API(cudaGraphDestroy, (cudaGraph_t graph)) {
  PFN_cuGraphDestroy_v10000 destroy = nullptr;
  if (cudaError_t e = LookupDriver("cuGraphDestroy", false, &destroy);
      e != cudaSuccess) {
    return e;
  }
  return Return(destroy(reinterpret_cast<CUgraph>(graph)));
}

FAKE_CUDART_API(cudaGraphAddMemAllocNode,
                (cudaGraphNode_t * node, cudaGraph_t graph,
                 const cudaGraphNode_t* deps, size_t count,
                 cudaMemAllocNodeParams* params)) {
  PFN_cuGraphAddMemAllocNode_v11040 add = nullptr;
  if (cudaError_t e = LookupDriver("cuGraphAddMemAllocNode", false, &add);
      e != cudaSuccess) {
    return e;
  }
  if (params == nullptr) return Return(cudaErrorInvalidValue);
  CUDA_MEM_ALLOC_NODE_PARAMS p{};
  p.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  p.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  p.poolProps.location.id = params->poolProps.location.id;
  p.bytesize = params->bytesize;
  cudaError_t e = Return(add(
      reinterpret_cast<CUgraphNode*>(node), reinterpret_cast<CUgraph>(graph),
      reinterpret_cast<const CUgraphNode*>(deps), count, &p));
  if (e == cudaSuccess) {
    params->dptr = reinterpret_cast<void*>(static_cast<uintptr_t>(p.dptr));
  }
  return e;
}

FAKE_CUDART_API(cudaGraphAddMemFreeNode,
                (cudaGraphNode_t * node, cudaGraph_t graph,
                 const cudaGraphNode_t* deps, size_t count, void* dptr)) {
  PFN_cuGraphAddMemFreeNode_v11040 add = nullptr;
  if (cudaError_t e = LookupDriver("cuGraphAddMemFreeNode", false, &add);
      e != cudaSuccess) {
    return e;
  }
  return Return(add(reinterpret_cast<CUgraphNode*>(node),
                    reinterpret_cast<CUgraph>(graph),
                    reinterpret_cast<const CUgraphNode*>(deps), count,
                    fake_cudart::DevicePointer(dptr)));
}

FAKE_CUDART_API(cudaGraphInstantiate,
                (cudaGraphExec_t * exec, cudaGraph_t graph,
                 unsigned long long flags)) {
  PFN_cuGraphInstantiateWithFlags_v11040 instantiate = nullptr;
  if (cudaError_t e = LookupDriver("cuGraphInstantiate", false, &instantiate);
      e != cudaSuccess) {
    return e;
  }
  return Return(instantiate(reinterpret_cast<CUgraphExec*>(exec),
                            reinterpret_cast<CUgraph>(graph), flags));
}

FAKE_CUDART_API(cudaGraphInstantiateWithFlags,
                (cudaGraphExec_t * exec, cudaGraph_t graph,
                 unsigned long long flags)) {
  PFN_cuGraphInstantiateWithFlags_v11040 instantiate = nullptr;
  if (cudaError_t e =
          LookupDriver("cuGraphInstantiateWithFlags", false, &instantiate);
      e != cudaSuccess) {
    return e;
  }
  return Return(instantiate(reinterpret_cast<CUgraphExec*>(exec),
                            reinterpret_cast<CUgraph>(graph), flags));
}

FAKE_CUDART_API(cudaGraphExecDestroy, (cudaGraphExec_t exec)) {
  PFN_cuGraphExecDestroy_v10000 destroy = nullptr;
  if (cudaError_t e = LookupDriver("cuGraphExecDestroy", false, &destroy);
      e != cudaSuccess) {
    return e;
  }
  return Return(destroy(reinterpret_cast<CUgraphExec>(exec)));
}
