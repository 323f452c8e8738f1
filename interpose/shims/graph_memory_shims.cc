// Graph memory node shims (see graph_memory_shims.h): forward, then tell the
// engine about the node, the executable or the launch.
#include "interpose/shims/graph_memory_shims.h"

#include <vector>

#include "interpose/resolve/driver_hooks.h"
#include "lib/core/log.h"

using gmt::InterceptScope;

namespace gmt {
namespace {

// The graph queries the tool makes itself: the loaded libcuda's own
// functions, never a shim.
RealSlot<PFN_cuStreamIsCapturing_v10000> real_is_capturing(
    "cuStreamIsCapturing", true);
RealSlot<PFN_cuGraphGetNodes_v10000> real_get_nodes("cuGraphGetNodes", true);
RealSlot<PFN_cuGraphNodeGetType_v10000> real_node_type("cuGraphNodeGetType",
                                                       true);
RealSlot<PFN_cuGraphMemAllocNodeGetParams_v11040> real_alloc_params(
    "cuGraphMemAllocNodeGetParams", true);
RealSlot<PFN_cuGraphMemFreeNodeGetParams_v11040> real_free_params(
    "cuGraphMemFreeNodeGetParams", true);
RealSlot<PFN_cuGraphChildGraphNodeGetGraph_v10000> real_child_graph(
    "cuGraphChildGraphNodeGetGraph", true);

// Child graphs nest; a graph cannot contain itself, but the depth is bounded
// all the same.
constexpr int kMaxGraphDepth = 16;

void Collect(CUgraph graph, int depth, GraphMemory::ExecNodes* out) {
  auto get_nodes = real_get_nodes.Get();
  auto node_type = real_node_type.Get();
  if (get_nodes == nullptr || node_type == nullptr || depth > kMaxGraphDepth) {
    return;
  }
  size_t n = 0;
  if (get_nodes(graph, nullptr, &n) != CUDA_SUCCESS || n == 0) return;
  std::vector<CUgraphNode> nodes(n);
  if (get_nodes(graph, nodes.data(), &n) != CUDA_SUCCESS) return;
  nodes.resize(n);
  for (CUgraphNode node : nodes) {
    CUgraphNodeType type;
    if (node_type(node, &type) != CUDA_SUCCESS) continue;
    switch (type) {
      case CU_GRAPH_NODE_TYPE_MEM_ALLOC: {
        auto get = real_alloc_params.Get();
        CUDA_MEM_ALLOC_NODE_PARAMS p{};
        if (get != nullptr && get(node, &p) == CUDA_SUCCESS && p.dptr != 0) {
          out->allocs.push_back(GraphMemory::AllocNode{
              static_cast<uint64_t>(p.dptr), static_cast<uint64_t>(p.bytesize),
              static_cast<int32_t>(p.poolProps.location.id)});
        }
        break;
      }
      case CU_GRAPH_NODE_TYPE_MEM_FREE: {
        auto get = real_free_params.Get();
        CUdeviceptr dptr = 0;
        if (get != nullptr && get(node, &dptr) == CUDA_SUCCESS && dptr != 0) {
          out->frees.push_back(static_cast<uint64_t>(dptr));
        }
        break;
      }
      case CU_GRAPH_NODE_TYPE_GRAPH: {
        auto get = real_child_graph.Get();
        CUgraph child = nullptr;
        if (get != nullptr && get(node, &child) == CUDA_SUCCESS &&
            child != nullptr) {
          Collect(child, depth + 1, out);
        }
        break;
      }
      default:
        break;
    }
  }
}

uint64_t Id(const void* p) { return reinterpret_cast<uint64_t>(p); }

// Forwards a node-creating call; on success `note(stack)` tells the engine.
template <typename Call, typename Note>
CUresult AddNode(Call&& call, Note&& note) {
  InterceptScope scope;
  if (!scope.Recording()) return call();
  const StackId stack = Engine::Get().CaptureCallStack();
  const CUresult result = call();
  if (result == CUDA_SUCCESS) note(stack);
  return result;
}

// Forwards an instantiation; on success enumerates the graph.
template <typename Call>
CUresult Instantiate(CUgraphExec* exec, CUgraph graph, unsigned long long flags,
                     Call&& call) {
  InterceptScope scope;
  const CUresult result = call();
  if (result == CUDA_SUCCESS && scope.Recording() && exec != nullptr) {
    NoteGraphInstantiated(*exec, graph, flags);
  }
  return result;
}

}  // namespace

bool ToolStreamCapturing(uint64_t stream) {
  auto is_capturing = real_is_capturing.Get();
  if (is_capturing == nullptr) return false;
  // The engine's 0 is the legacy stream; CUDA's 0 means the same, except
  // under per-thread default streams, where the engine names that one
  // CU_STREAM_PER_THREAD already.
  CUstream s =
      stream == 0 ? CU_STREAM_LEGACY : reinterpret_cast<CUstream>(stream);
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  if (is_capturing(s, &status) != CUDA_SUCCESS) return false;
  return status != CU_STREAM_CAPTURE_STATUS_NONE;
}

GraphMemory::ExecNodes EnumerateGraphMemory(CUgraph graph) {
  GraphMemory::ExecNodes nodes;
  if (graph != nullptr) Collect(graph, 0, &nodes);
  return nodes;
}

void NoteGraphInstantiated(CUgraphExec exec, CUgraph graph,
                           unsigned long long flags) {
  Engine& engine = Engine::Get();
  if (!engine.tracking() || exec == nullptr) return;
  GraphMemory::ExecNodes nodes = EnumerateGraphMemory(graph);
  nodes.auto_free =
      (flags & CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH) != 0;
  if (!nodes.allocs.empty() || !nodes.frees.empty()) {
    LogNote(2, "graph exec %p: %zu alloc node(s), %zu free node(s)%s",
            static_cast<void*>(exec), nodes.allocs.size(), nodes.frees.size(),
            nodes.auto_free ? ", auto-free on launch" : "");
  }
  engine.OnGraphInstantiated(Id(exec), std::move(nodes));
}

void NoteGraphAllocNode(const CUDA_MEM_ALLOC_NODE_PARAMS& params,
                        StackId stack) {
  Engine::Get().OnGraphAllocNode(static_cast<uint64_t>(params.dptr),
                                 static_cast<uint64_t>(params.bytesize),
                                 static_cast<int>(params.poolProps.location.id),
                                 Api::kGraphMemAllocNode, stack);
}

void NoteGraphNode(const CUgraphNodeParams* params, StackId stack) {
  if (params == nullptr || params->type != CU_GRAPH_NODE_TYPE_MEM_ALLOC) return;
  Engine::Get().OnGraphAllocNode(
      static_cast<uint64_t>(params->alloc.dptr),
      static_cast<uint64_t>(params->alloc.bytesize),
      static_cast<int>(params->alloc.poolProps.location.id),
      Api::kGraphMemAllocNode, stack);
}

void NoteGraphLaunched(CUgraphExec exec, uint64_t context,
                       uint64_t engine_stream,
                       absl::FunctionRef<StackId()> stack) {
  Engine::Get().OnGraphLaunched(Id(exec), context, engine_stream, stack);
}

// Installed at load, before any CUDA call can reach the engine.
__attribute__((constructor)) void InstallStreamCaptureQuery() {
  SetStreamCaptureQuery(&ToolStreamCapturing);
}

}  // namespace gmt

// ---- Shims ------------------------------------------------------------------

CUresult Shim_cuGraphAddMemAllocNode(CUgraphNode* node, CUgraph graph,
                                     const CUgraphNode* deps, size_t count,
                                     CUDA_MEM_ALLOC_NODE_PARAMS* params) {
  auto real = gmt::g_real_cuGraphAddMemAllocNode.Get();
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  return gmt::AddNode([&] { return real(node, graph, deps, count, params); },
                      [&](gmt::StackId stack) {
                        if (params != nullptr) {
                          gmt::NoteGraphAllocNode(*params, stack);
                        }
                      });
}

CUresult Shim_cuGraphAddNode(CUgraphNode* node, CUgraph graph,
                             const CUgraphNode* deps, size_t count,
                             CUgraphNodeParams* params) {
  auto real = gmt::g_real_cuGraphAddNode.Get();
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  return gmt::AddNode(
      [&] { return real(node, graph, deps, count, params); },
      [&](gmt::StackId stack) { gmt::NoteGraphNode(params, stack); });
}

CUresult Shim_cuGraphAddNode_v2(CUgraphNode* node, CUgraph graph,
                                const CUgraphNode* deps,
                                const CUgraphEdgeData* edges, size_t count,
                                CUgraphNodeParams* params) {
  auto real = gmt::g_real_cuGraphAddNode_v2.Get();
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  return gmt::AddNode(
      [&] { return real(node, graph, deps, edges, count, params); },
      [&](gmt::StackId stack) { gmt::NoteGraphNode(params, stack); });
}

CUresult Shim_cuGraphInstantiateWithFlags(CUgraphExec* exec, CUgraph graph,
                                          unsigned long long flags) {
  auto real = gmt::g_real_cuGraphInstantiateWithFlags.Get();
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  return gmt::Instantiate(exec, graph, flags,
                          [&] { return real(exec, graph, flags); });
}

CUresult Shim_cuGraphInstantiateWithParams(
    CUgraphExec* exec, CUgraph graph, CUDA_GRAPH_INSTANTIATE_PARAMS* params) {
  auto real = gmt::g_real_cuGraphInstantiateWithParams.Get();
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  return gmt::Instantiate(exec, graph, params != nullptr ? params->flags : 0,
                          [&] { return real(exec, graph, params); });
}

CUresult Shim_cuGraphInstantiateWithParams_ptsz(
    CUgraphExec* exec, CUgraph graph, CUDA_GRAPH_INSTANTIATE_PARAMS* params) {
  auto real = gmt::g_real_cuGraphInstantiateWithParams_ptsz.Get();
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  return gmt::Instantiate(exec, graph, params != nullptr ? params->flags : 0,
                          [&] { return real(exec, graph, params); });
}

CUresult Shim_cuGraphExecDestroy(CUgraphExec exec) {
  auto real = gmt::g_real_cuGraphExecDestroy.Get();
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  InterceptScope scope;
  const CUresult result = real(exec);
  if (result == CUDA_SUCCESS && scope.Recording()) {
    gmt::Engine::Get().OnGraphExecDestroyed(gmt::Id(exec));
  }
  return result;
}
