// Graph copy and set nodes, checked when they are made or updated: CUDA
// validates a node's ranges against the allocations then (invalid value for a
// range past an allocation's end), not when the graph runs, so a range that
// runs into a redzone is refused here, as CUDA refuses it without the tool
// (docs/transparency.md, class a). The ranges are those of the matching copy
// or set call (device_ranges.h): 3-D descriptors, 1-D copies by kind, memset
// nodes as pitched sets. Nothing is refused at launch: a node made before its
// block was freed is CUDA's concern, as without the tool.
#include "interpose/device_ranges.h"
#include "interpose/guard_shim_util.h"
#include "interpose/resolve/driver_hooks.h"
#include "interpose/resolve/runtime_hooks.h"

// ---- Runtime ----------------------------------------------------------------

cudaError_t Shim_cudaGraphAddMemcpyNode(cudaGraphNode_t* node,
                                        cudaGraph_t graph,
                                        const cudaGraphNode_t* deps,
                                        size_t num_deps,
                                        const cudaMemcpy3DParms* params) {
  return gmt::CheckedRuntimeCall<gmt::g_real_cudaGraphAddMemcpyNode>(
      "cudaGraphAddMemcpyNode",
      [&] {
        return params == nullptr ? gmt::OperandRanges{}
                                 : gmt::RangesOf(*params);
      },
      node, graph, deps, num_deps, params);
}

cudaError_t Shim_cudaGraphAddMemcpyNode1D(cudaGraphNode_t* node,
                                          cudaGraph_t graph,
                                          const cudaGraphNode_t* deps,
                                          size_t num_deps, void* dst,
                                          const void* src, size_t count,
                                          cudaMemcpyKind kind) {
  return gmt::CheckedRuntimeCall<gmt::g_real_cudaGraphAddMemcpyNode1D>(
      "cudaGraphAddMemcpyNode1D",
      [&] { return gmt::KindRanges(kind, dst, count, src, count); }, node,
      graph, deps, num_deps, dst, src, count, kind);
}

cudaError_t Shim_cudaGraphAddMemsetNode(cudaGraphNode_t* node,
                                        cudaGraph_t graph,
                                        const cudaGraphNode_t* deps,
                                        size_t num_deps,
                                        const cudaMemsetParams* params) {
  return gmt::CheckedRuntimeCall<gmt::g_real_cudaGraphAddMemsetNode>(
      "cudaGraphAddMemsetNode",
      [&] {
        return params == nullptr ? gmt::OperandRanges{}
                                 : gmt::RangesOf(*params);
      },
      node, graph, deps, num_deps, params);
}

cudaError_t Shim_cudaGraphMemcpyNodeSetParams(cudaGraphNode_t node,
                                              const cudaMemcpy3DParms* params) {
  return gmt::CheckedRuntimeCall<gmt::g_real_cudaGraphMemcpyNodeSetParams>(
      "cudaGraphMemcpyNodeSetParams",
      [&] {
        return params == nullptr ? gmt::OperandRanges{}
                                 : gmt::RangesOf(*params);
      },
      node, params);
}

cudaError_t Shim_cudaGraphMemcpyNodeSetParams1D(cudaGraphNode_t node, void* dst,
                                                const void* src, size_t count,
                                                cudaMemcpyKind kind) {
  return gmt::CheckedRuntimeCall<gmt::g_real_cudaGraphMemcpyNodeSetParams1D>(
      "cudaGraphMemcpyNodeSetParams1D",
      [&] { return gmt::KindRanges(kind, dst, count, src, count); }, node, dst,
      src, count, kind);
}

cudaError_t Shim_cudaGraphMemsetNodeSetParams(cudaGraphNode_t node,
                                              const cudaMemsetParams* params) {
  return gmt::CheckedRuntimeCall<gmt::g_real_cudaGraphMemsetNodeSetParams>(
      "cudaGraphMemsetNodeSetParams",
      [&] {
        return params == nullptr ? gmt::OperandRanges{}
                                 : gmt::RangesOf(*params);
      },
      node, params);
}

cudaError_t Shim_cudaGraphExecMemcpyNodeSetParams(
    cudaGraphExec_t exec, cudaGraphNode_t node,
    const cudaMemcpy3DParms* params) {
  return gmt::CheckedRuntimeCall<gmt::g_real_cudaGraphExecMemcpyNodeSetParams>(
      "cudaGraphExecMemcpyNodeSetParams",
      [&] {
        return params == nullptr ? gmt::OperandRanges{}
                                 : gmt::RangesOf(*params);
      },
      exec, node, params);
}

cudaError_t Shim_cudaGraphExecMemcpyNodeSetParams1D(cudaGraphExec_t exec,
                                                    cudaGraphNode_t node,
                                                    void* dst, const void* src,
                                                    size_t count,
                                                    cudaMemcpyKind kind) {
  return gmt::CheckedRuntimeCall<
      gmt::g_real_cudaGraphExecMemcpyNodeSetParams1D>(
      "cudaGraphExecMemcpyNodeSetParams1D",
      [&] { return gmt::KindRanges(kind, dst, count, src, count); }, exec, node,
      dst, src, count, kind);
}

cudaError_t Shim_cudaGraphExecMemsetNodeSetParams(
    cudaGraphExec_t exec, cudaGraphNode_t node,
    const cudaMemsetParams* params) {
  return gmt::CheckedRuntimeCall<gmt::g_real_cudaGraphExecMemsetNodeSetParams>(
      "cudaGraphExecMemsetNodeSetParams",
      [&] {
        return params == nullptr ? gmt::OperandRanges{}
                                 : gmt::RangesOf(*params);
      },
      exec, node, params);
}

// ---- Driver -----------------------------------------------------------------

CUresult Shim_cuGraphAddMemcpyNode(CUgraphNode* node, CUgraph graph,
                                   const CUgraphNode* deps, size_t num_deps,
                                   const CUDA_MEMCPY3D* params, CUcontext ctx) {
  return gmt::CheckedDriverCall<gmt::g_real_cuGraphAddMemcpyNode>(
      "cuGraphAddMemcpyNode",
      [&] {
        return params == nullptr ? gmt::OperandRanges{}
                                 : gmt::RangesOf(*params);
      },
      node, graph, deps, num_deps, params, ctx);
}

CUresult Shim_cuGraphAddMemsetNode(CUgraphNode* node, CUgraph graph,
                                   const CUgraphNode* deps, size_t num_deps,
                                   const CUDA_MEMSET_NODE_PARAMS* params,
                                   CUcontext ctx) {
  return gmt::CheckedDriverCall<gmt::g_real_cuGraphAddMemsetNode>(
      "cuGraphAddMemsetNode",
      [&] {
        return params == nullptr ? gmt::OperandRanges{}
                                 : gmt::RangesOf(*params);
      },
      node, graph, deps, num_deps, params, ctx);
}

CUresult Shim_cuGraphMemcpyNodeSetParams(CUgraphNode node,
                                         const CUDA_MEMCPY3D* params) {
  return gmt::CheckedDriverCall<gmt::g_real_cuGraphMemcpyNodeSetParams>(
      "cuGraphMemcpyNodeSetParams",
      [&] {
        return params == nullptr ? gmt::OperandRanges{}
                                 : gmt::RangesOf(*params);
      },
      node, params);
}

CUresult Shim_cuGraphMemsetNodeSetParams(
    CUgraphNode node, const CUDA_MEMSET_NODE_PARAMS* params) {
  return gmt::CheckedDriverCall<gmt::g_real_cuGraphMemsetNodeSetParams>(
      "cuGraphMemsetNodeSetParams",
      [&] {
        return params == nullptr ? gmt::OperandRanges{}
                                 : gmt::RangesOf(*params);
      },
      node, params);
}

CUresult Shim_cuGraphExecMemcpyNodeSetParams(CUgraphExec exec, CUgraphNode node,
                                             const CUDA_MEMCPY3D* params,
                                             CUcontext ctx) {
  return gmt::CheckedDriverCall<gmt::g_real_cuGraphExecMemcpyNodeSetParams>(
      "cuGraphExecMemcpyNodeSetParams",
      [&] {
        return params == nullptr ? gmt::OperandRanges{}
                                 : gmt::RangesOf(*params);
      },
      exec, node, params, ctx);
}

CUresult Shim_cuGraphExecMemsetNodeSetParams(
    CUgraphExec exec, CUgraphNode node, const CUDA_MEMSET_NODE_PARAMS* params,
    CUcontext ctx) {
  return gmt::CheckedDriverCall<gmt::g_real_cuGraphExecMemsetNodeSetParams>(
      "cuGraphExecMemsetNodeSetParams",
      [&] {
        return params == nullptr ? gmt::OperandRanges{}
                                 : gmt::RangesOf(*params);
      },
      exec, node, params, ctx);
}
