// Fake driver: CUDA graphs with memory nodes.
//
// What the double keeps of the real driver:
//   * an alloc node's address is fixed when the node is created (the node's
//     backing is made then) and stays so for the graph's life;
//   * the memory is a device block only from a launch of the executable
//     until it is freed: by a free node (this launch's or a later graph's),
//     cuMemFree / cuMemFreeAsync, or an auto-free relaunch
//     (CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH); a launch whose
//     allocation from the previous launch is still unfreed fails with
//     CUDA_ERROR_INVALID_VALUE, as in CUDA;
//   * a free node's address must come from an alloc node
//     (CUDA_ERROR_INVALID_VALUE otherwise);
//   * cuMemAllocAsync / cuMemFreeAsync on a capturing stream add such nodes
//     to the graph being captured (fake_driver_memory.cc);
//   * the graph queries a tool enumerates with (cuGraphGetNodes,
//     cuGraphNodeGetType, cuGraphMemAllocNodeGetParams,
//     cuGraphMemFreeNodeGetParams, cuGraphChildGraphNodeGetGraph);
//   * CUPTI driver-API callbacks for node creation, instantiation, executable
//     destruction and launch, and memory records for each launch's blocks.
// Nothing runs: kernel nodes are not modelled (cuGraphAddNode of another type
// adds an empty node). An executable handle the double did not make is still
// launched as before (any non-null handle succeeds, with no memory).
#include <cupti_driver_cbid.h>

#include <algorithm>
#include <mutex>
#include <set>
#include <vector>

#include "tests/fake_cuda/fake_cupti_emit.h"
#include "tests/fake_cuda/fake_driver.h"
#include "tests/fake_cuda/fake_sticky_error.h"

namespace fake_cuda {
namespace {

struct Graph;

struct Node {
  CUgraphNodeType type = CU_GRAPH_NODE_TYPE_EMPTY;
  CUdeviceptr dptr = 0;  // alloc: its address; free: what it frees
  size_t bytes = 0;
  int device = 0;
  Graph* child = nullptr;  // CU_GRAPH_NODE_TYPE_GRAPH
};

struct Graph {
  std::vector<Node*> nodes;
};

struct AllocNode {
  CUdeviceptr dptr;
  size_t bytes;
  int device;
};

struct Exec {
  std::vector<AllocNode> allocs;
  std::vector<CUdeviceptr> frees;
  bool auto_free = false;
};

struct Graphs {
  std::mutex mu;
  std::set<const Graph*> graphs;
  std::set<const Node*> nodes;
  std::set<const Exec*> execs;
  std::set<CUdeviceptr> alloc_addresses;  // every alloc node's address
  // Destroyed graphs: kept, not freed, as their nodes are (a child-graph
  // node may still point at one), and held here so that they are not leaks.
  std::vector<const Graph*> destroyed;
};

// Leaked on purpose: graphs may be destroyed from static destructors.
Graphs& G() {
  static Graphs* const graphs = new Graphs();
  return *graphs;
}

Graph* LiveGraph(CUgraph graph) {
  auto* g = reinterpret_cast<Graph*>(graph);
  return G().graphs.count(g) != 0 ? g : nullptr;
}

Node* LiveNode(CUgraphNode node) {
  auto* n = reinterpret_cast<Node*>(node);
  return G().nodes.count(n) != 0 ? n : nullptr;
}

// Under G().mu.
CUresult AddNodeLocked(Graph* g, Node node, CUgraphNode* out) {
  auto* n = new Node(node);
  g->nodes.push_back(n);
  G().nodes.insert(n);
  if (out != nullptr) *out = reinterpret_cast<CUgraphNode>(n);
  return CUDA_SUCCESS;
}

CUresult AddAllocLocked(Graph* g, size_t bytes, int device, CUdeviceptr* dptr,
                        CUgraphNode* out) {
  CUdeviceptr p = 0;
  if (CUresult r = MakeGraphBacking(bytes, &p); r != CUDA_SUCCESS) return r;
  Node n;
  n.type = CU_GRAPH_NODE_TYPE_MEM_ALLOC;
  n.dptr = p;
  n.bytes = bytes;
  n.device = device;
  G().alloc_addresses.insert(p);
  *dptr = p;
  return AddNodeLocked(g, n, out);
}

CUresult AddFreeLocked(Graph* g, CUdeviceptr dptr, CUgraphNode* out) {
  if (G().alloc_addresses.count(dptr) == 0) return CUDA_ERROR_INVALID_VALUE;
  Node n;
  n.type = CU_GRAPH_NODE_TYPE_MEM_FREE;
  n.dptr = dptr;
  return AddNodeLocked(g, n, out);
}

void Collect(const Graph* g, Exec* e, int depth) {
  if (depth > 16) return;
  for (const Node* n : g->nodes) {
    switch (n->type) {
      case CU_GRAPH_NODE_TYPE_MEM_ALLOC:
        e->allocs.push_back(AllocNode{n->dptr, n->bytes, n->device});
        break;
      case CU_GRAPH_NODE_TYPE_MEM_FREE:
        e->frees.push_back(n->dptr);
        break;
      case CU_GRAPH_NODE_TYPE_GRAPH:
        if (n->child != nullptr) Collect(n->child, e, depth + 1);
        break;
      default:
        break;
    }
  }
}

CUresult Instantiate(CUgraphExec* exec, CUgraph graph,
                     unsigned long long flags) {
  if (!Initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (exec == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<std::mutex> lock(G().mu);
  Graph* g = LiveGraph(graph);
  if (g == nullptr) return CUDA_ERROR_INVALID_VALUE;
  auto* e = new Exec();
  Collect(g, e, 0);
  e->auto_free = (flags & CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH) != 0;
  G().execs.insert(e);
  *exec = reinterpret_cast<CUgraphExec>(e);
  return CUDA_SUCCESS;
}

CUresult Launch(CUgraphExec exec, CUstream stream) {
  Context* ctx = nullptr;
  if (CUresult r = RequireContext(&ctx); r != CUDA_SUCCESS) return r;
  if (CUresult r = StickyError(); r != CUDA_SUCCESS) return r;
  if (exec == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!IsValidStream(stream)) return CUDA_ERROR_INVALID_HANDLE;
  Exec copy;
  {
    std::lock_guard<std::mutex> lock(G().mu);
    auto* e = reinterpret_cast<const Exec*>(exec);
    if (G().execs.count(e) == 0) return CUDA_SUCCESS;  // no graph of ours
    copy = *e;
  }
  // An allocation of the previous launch still unfreed: CUDA refuses,
  // unless the exec frees it itself.
  for (const AllocNode& a : copy.allocs) {
    if (CheckMemoryRange(a.dptr, 1, /*need_device=*/true) != CUDA_SUCCESS) {
      continue;
    }
    if (!copy.auto_free) return CUDA_ERROR_INVALID_VALUE;
    UnmapGraphBlock(a.dptr);
  }
  for (const AllocNode& a : copy.allocs) {
    MapGraphBlock(a.dptr, a.bytes, a.device, ctx);
  }
  for (CUdeviceptr d : copy.frees) UnmapGraphBlock(d);
  return CUDA_SUCCESS;
}

}  // namespace

CUgraph NewGraph() {
  std::lock_guard<std::mutex> lock(G().mu);
  auto* g = new Graph();
  G().graphs.insert(g);
  return reinterpret_cast<CUgraph>(g);
}

CUresult CaptureAllocNode(CUgraph graph, size_t bytes, int device,
                          CUdeviceptr* dptr) {
  if (dptr == nullptr || bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<std::mutex> lock(G().mu);
  Graph* g = LiveGraph(graph);
  if (g == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return AddAllocLocked(g, bytes, device, dptr, nullptr);
}

CUresult CaptureFreeNode(CUgraph graph, CUdeviceptr dptr) {
  std::lock_guard<std::mutex> lock(G().mu);
  Graph* g = LiveGraph(graph);
  if (g == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return AddFreeLocked(g, dptr, nullptr);
}

}  // namespace fake_cuda

using fake_cuda::G;

// ---- Graphs
// -------------------------------------------------------------------

FAKE_CU_API(cuGraphCreate, (CUgraph * graph, unsigned int flags)) {
  if (!fake_cuda::Initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (graph == nullptr || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  *graph = fake_cuda::NewGraph();
  return CUDA_SUCCESS;
}

FAKE_CU_API(cuGraphDestroy, (CUgraph graph)) {
  if (!fake_cuda::Initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  std::lock_guard<std::mutex> lock(G().mu);
  fake_cuda::Graph* g = fake_cuda::LiveGraph(graph);
  if (g == nullptr) return CUDA_ERROR_INVALID_VALUE;
  // Nodes stay known: an executable made from the graph still holds their
  // addresses, and those stay reserved.
  G().graphs.erase(g);
  G().destroyed.push_back(g);
  return CUDA_SUCCESS;
}

FAKE_CU_API(cuGraphAddMemAllocNode,
            (CUgraphNode * node, CUgraph graph, const CUgraphNode* deps,
             size_t count, CUDA_MEM_ALLOC_NODE_PARAMS* params)) {
  const struct {
    CUgraphNode* node;
    CUgraph graph;
    const CUgraphNode* deps;
    size_t count;
    CUDA_MEM_ALLOC_NODE_PARAMS* params;
  } cupti{node, graph, deps, count, params};
  return fake_cuda::WithCuptiCallbacks(
      CUPTI_DRIVER_TRACE_CBID_cuGraphAddMemAllocNode, "cuGraphAddMemAllocNode",
      &cupti, nullptr, [&]() -> CUresult {
        if (!fake_cuda::Initialized()) return CUDA_ERROR_NOT_INITIALIZED;
        if (node == nullptr || params == nullptr || params->bytesize == 0) {
          return CUDA_ERROR_INVALID_VALUE;
        }
        std::lock_guard<std::mutex> lock(G().mu);
        fake_cuda::Graph* g = fake_cuda::LiveGraph(graph);
        if (g == nullptr) return CUDA_ERROR_INVALID_VALUE;
        return fake_cuda::AddAllocLocked(g, params->bytesize,
                                         params->poolProps.location.id,
                                         &params->dptr, node);
      });
}

FAKE_CU_API(cuGraphAddMemFreeNode,
            (CUgraphNode * node, CUgraph graph, const CUgraphNode* /*deps*/,
             size_t /*count*/, CUdeviceptr dptr)) {
  if (!fake_cuda::Initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (node == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<std::mutex> lock(G().mu);
  fake_cuda::Graph* g = fake_cuda::LiveGraph(graph);
  if (g == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return fake_cuda::AddFreeLocked(g, dptr, node);
}

// Copy and set nodes: CUDA validates their ranges against the allocations
// when the node is made (invalid value for a range past an allocation's
// end); the double checks the device sides then and runs nothing.
namespace {

// Bytes from the first to one past the last byte of `rows` rows of `width`
// bytes `pitch` apart, over `depth` slices of `slice_rows` rows; false when
// the shape is invalid.
bool NodeSpan(size_t pitch, size_t slice_rows, size_t width, size_t rows,
              size_t depth, size_t* span) {
  if (width == 0 || rows == 0 || depth == 0) return false;
  if (depth > 1 && slice_rows < rows) return false;
  const size_t all_rows = (depth - 1) * slice_rows + rows;
  if (all_rows > 1 && pitch < width) return false;
  *span = (all_rows - 1) * pitch + width;
  return true;
}

bool NodeSideOk(CUmemorytype type, CUdeviceptr device, size_t x, size_t y,
                size_t z, size_t pitch, size_t slice_rows,
                const CUDA_MEMCPY3D& p) {
  if (type != CU_MEMORYTYPE_DEVICE && type != CU_MEMORYTYPE_UNIFIED) {
    return true;
  }
  size_t span = 0;
  return device != 0 &&
         NodeSpan(pitch, slice_rows, p.WidthInBytes, p.Height, p.Depth,
                  &span) &&
         fake_cuda::CheckMemoryRange(device + (z * slice_rows + y) * pitch + x,
                                     span, type == CU_MEMORYTYPE_DEVICE) ==
             CUDA_SUCCESS;
}

CUresult AddCheckedNode(CUgraphNode* node, CUgraph graph, bool ranges_ok,
                        CUgraphNodeType type) {
  if (!fake_cuda::Initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (node == nullptr || !ranges_ok) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<std::mutex> lock(G().mu);
  fake_cuda::Graph* g = fake_cuda::LiveGraph(graph);
  if (g == nullptr) return CUDA_ERROR_INVALID_VALUE;
  fake_cuda::Node n;
  n.type = type;
  return fake_cuda::AddNodeLocked(g, n, node);
}

}  // namespace

FAKE_CU_API(cuGraphAddMemsetNode,
            (CUgraphNode * node, CUgraph graph, const CUgraphNode* /*deps*/,
             size_t /*count*/, const CUDA_MEMSET_NODE_PARAMS* p,
             CUcontext /*ctx*/)) {
  size_t span = 0;
  const bool ok =
      p != nullptr &&
      (p->elementSize == 1 || p->elementSize == 2 || p->elementSize == 4) &&
      NodeSpan(p->pitch, p->height, p->width * p->elementSize, p->height, 1,
               &span) &&
      fake_cuda::CheckMemoryRange(p->dst, span, true) == CUDA_SUCCESS;
  return AddCheckedNode(node, graph, ok, CU_GRAPH_NODE_TYPE_MEMSET);
}

FAKE_CU_API(cuGraphAddMemcpyNode,
            (CUgraphNode * node, CUgraph graph, const CUgraphNode* /*deps*/,
             size_t /*count*/, const CUDA_MEMCPY3D* p, CUcontext /*ctx*/)) {
  const bool ok = p != nullptr &&
                  NodeSideOk(p->dstMemoryType, p->dstDevice, p->dstXInBytes,
                             p->dstY, p->dstZ, p->dstPitch, p->dstHeight, *p) &&
                  NodeSideOk(p->srcMemoryType, p->srcDevice, p->srcXInBytes,
                             p->srcY, p->srcZ, p->srcPitch, p->srcHeight, *p);
  return AddCheckedNode(node, graph, ok, CU_GRAPH_NODE_TYPE_MEMCPY);
}

FAKE_CU_API(cuGraphAddChildGraphNode,
            (CUgraphNode * node, CUgraph graph, const CUgraphNode* /*deps*/,
             size_t /*count*/, CUgraph child)) {
  if (!fake_cuda::Initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (node == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<std::mutex> lock(G().mu);
  fake_cuda::Graph* g = fake_cuda::LiveGraph(graph);
  fake_cuda::Graph* c = fake_cuda::LiveGraph(child);
  if (g == nullptr || c == nullptr || g == c) return CUDA_ERROR_INVALID_VALUE;
  fake_cuda::Node n;
  n.type = CU_GRAPH_NODE_TYPE_GRAPH;
  n.child = c;  // the real driver clones it; the double shares it
  return fake_cuda::AddNodeLocked(g, n, node);
}

namespace {

CUresult AddGenericNode(CUgraphNode* node, CUgraph graph,
                        CUgraphNodeParams* params) {
  if (!fake_cuda::Initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (node == nullptr || params == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<std::mutex> lock(G().mu);
  fake_cuda::Graph* g = fake_cuda::LiveGraph(graph);
  if (g == nullptr) return CUDA_ERROR_INVALID_VALUE;
  switch (params->type) {
    case CU_GRAPH_NODE_TYPE_MEM_ALLOC:
      if (params->alloc.bytesize == 0) return CUDA_ERROR_INVALID_VALUE;
      return fake_cuda::AddAllocLocked(g, params->alloc.bytesize,
                                       params->alloc.poolProps.location.id,
                                       &params->alloc.dptr, node);
    case CU_GRAPH_NODE_TYPE_MEM_FREE:
      return fake_cuda::AddFreeLocked(g, params->free.dptr, node);
    default: {
      fake_cuda::Node n;
      n.type = params->type;
      return fake_cuda::AddNodeLocked(g, n, node);
    }
  }
}

}  // namespace

FAKE_CU_API(cuGraphAddNode,
            (CUgraphNode * node, CUgraph graph, const CUgraphNode* deps,
             size_t count, CUgraphNodeParams* params)) {
  const struct {
    CUgraphNode* node;
    CUgraph graph;
    const CUgraphNode* deps;
    size_t count;
    CUgraphNodeParams* params;
  } cupti{node, graph, deps, count, params};
  return fake_cuda::WithCuptiCallbacks(
      CUPTI_DRIVER_TRACE_CBID_cuGraphAddNode, "cuGraphAddNode", &cupti, nullptr,
      [&] { return AddGenericNode(node, graph, params); });
}

FAKE_CU_API(cuGraphAddNode_v2,
            (CUgraphNode * node, CUgraph graph, const CUgraphNode* deps,
             const CUgraphEdgeData* edges, size_t count,
             CUgraphNodeParams* params)) {
  const struct {
    CUgraphNode* node;
    CUgraph graph;
    const CUgraphNode* deps;
    const CUgraphEdgeData* edges;
    size_t count;
    CUgraphNodeParams* params;
  } cupti{node, graph, deps, edges, count, params};
  return fake_cuda::WithCuptiCallbacks(
      CUPTI_DRIVER_TRACE_CBID_cuGraphAddNode_v2, "cuGraphAddNode_v2", &cupti,
      nullptr, [&] { return AddGenericNode(node, graph, params); });
}

// ---- The queries a tool enumerates with -------------------------------------

FAKE_CU_API(cuGraphGetNodes,
            (CUgraph graph, CUgraphNode* nodes, size_t* count)) {
  if (!fake_cuda::Initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (count == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<std::mutex> lock(G().mu);
  fake_cuda::Graph* g = fake_cuda::LiveGraph(graph);
  if (g == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (nodes == nullptr) {
    *count = g->nodes.size();
    return CUDA_SUCCESS;
  }
  const size_t n = std::min(*count, g->nodes.size());
  for (size_t i = 0; i < n; ++i) {
    nodes[i] = reinterpret_cast<CUgraphNode>(g->nodes[i]);
  }
  *count = n;
  return CUDA_SUCCESS;
}

FAKE_CU_API(cuGraphNodeGetType, (CUgraphNode node, CUgraphNodeType* type)) {
  if (!fake_cuda::Initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (type == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<std::mutex> lock(G().mu);
  fake_cuda::Node* n = fake_cuda::LiveNode(node);
  if (n == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *type = n->type;
  return CUDA_SUCCESS;
}

FAKE_CU_API(cuGraphMemAllocNodeGetParams,
            (CUgraphNode node, CUDA_MEM_ALLOC_NODE_PARAMS* params)) {
  if (!fake_cuda::Initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (params == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<std::mutex> lock(G().mu);
  fake_cuda::Node* n = fake_cuda::LiveNode(node);
  if (n == nullptr || n->type != CU_GRAPH_NODE_TYPE_MEM_ALLOC) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  *params = CUDA_MEM_ALLOC_NODE_PARAMS{};
  params->poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  params->poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  params->poolProps.location.id = n->device;
  params->bytesize = n->bytes;
  params->dptr = n->dptr;
  return CUDA_SUCCESS;
}

FAKE_CU_API(cuGraphMemFreeNodeGetParams,
            (CUgraphNode node, CUdeviceptr* dptr)) {
  if (!fake_cuda::Initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (dptr == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<std::mutex> lock(G().mu);
  fake_cuda::Node* n = fake_cuda::LiveNode(node);
  if (n == nullptr || n->type != CU_GRAPH_NODE_TYPE_MEM_FREE) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  *dptr = n->dptr;
  return CUDA_SUCCESS;
}

FAKE_CU_API(cuGraphChildGraphNodeGetGraph, (CUgraphNode node, CUgraph* graph)) {
  if (!fake_cuda::Initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (graph == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<std::mutex> lock(G().mu);
  fake_cuda::Node* n = fake_cuda::LiveNode(node);
  if (n == nullptr || n->type != CU_GRAPH_NODE_TYPE_GRAPH) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  *graph = reinterpret_cast<CUgraph>(n->child);
  return CUDA_SUCCESS;
}

// ---- Executables
// ---------------------------------------------------------------

FAKE_CU_API(cuGraphInstantiateWithFlags,
            (CUgraphExec * exec, CUgraph graph, unsigned long long flags)) {
  const struct {
    CUgraphExec* exec;
    CUgraph graph;
    unsigned long long flags;
  } cupti{exec, graph, flags};
  return fake_cuda::WithCuptiCallbacks(
      CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithFlags,
      "cuGraphInstantiateWithFlags", &cupti, nullptr,
      [&] { return fake_cuda::Instantiate(exec, graph, flags); });
}

namespace {

CUresult InstantiateWithParams(CUpti_CallbackId cbid, const char* name,
                               CUgraphExec* exec, CUgraph graph,
                               CUDA_GRAPH_INSTANTIATE_PARAMS* params) {
  const struct {
    CUgraphExec* exec;
    CUgraph graph;
    CUDA_GRAPH_INSTANTIATE_PARAMS* params;
  } cupti{exec, graph, params};
  return fake_cuda::WithCuptiCallbacks(cbid, name, &cupti, nullptr, [&] {
    if (params == nullptr) return CUDA_ERROR_INVALID_VALUE;
    CUresult r = fake_cuda::Instantiate(exec, graph, params->flags);
    params->result_out = r == CUDA_SUCCESS ? CUDA_GRAPH_INSTANTIATE_SUCCESS
                                           : CUDA_GRAPH_INSTANTIATE_ERROR;
    return r;
  });
}

}  // namespace

FAKE_CU_API(cuGraphInstantiateWithParams,
            (CUgraphExec * exec, CUgraph graph,
             CUDA_GRAPH_INSTANTIATE_PARAMS* params)) {
  return InstantiateWithParams(
      CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithParams,
      "cuGraphInstantiateWithParams", exec, graph, params);
}

FAKE_CU_API(cuGraphInstantiateWithParams_ptsz,
            (CUgraphExec * exec, CUgraph graph,
             CUDA_GRAPH_INSTANTIATE_PARAMS* params)) {
  return InstantiateWithParams(
      CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithParams_ptsz,
      "cuGraphInstantiateWithParams_ptsz", exec, graph, params);
}

FAKE_CU_API(cuGraphExecDestroy, (CUgraphExec exec)) {
  const CUgraphExec cupti = exec;
  return fake_cuda::WithCuptiCallbacks(
      CUPTI_DRIVER_TRACE_CBID_cuGraphExecDestroy, "cuGraphExecDestroy", &cupti,
      nullptr, [&]() -> CUresult {
        if (!fake_cuda::Initialized()) return CUDA_ERROR_NOT_INITIALIZED;
        std::lock_guard<std::mutex> lock(G().mu);
        auto* e = reinterpret_cast<fake_cuda::Exec*>(exec);
        if (G().execs.erase(e) == 0) return CUDA_ERROR_INVALID_VALUE;
        delete e;  // its allocations stay until freed, as in CUDA
        return CUDA_SUCCESS;
      });
}

// Strong: replaces the weak launch of fake_driver_launch_sync.cc.
FAKE_CU_API(cuGraphLaunch, (CUgraphExec exec, CUstream stream)) {
  const struct {
    CUgraphExec exec;
    CUstream stream;
  } cupti{exec, stream};
  return fake_cuda::WithCuptiCallbacks(
      CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch, "cuGraphLaunch", &cupti, nullptr,
      [&] { return fake_cuda::Launch(exec, stream); });
}

FAKE_CU_API(cuGraphLaunch_ptsz, (CUgraphExec exec, CUstream stream)) {
  const struct {
    CUgraphExec exec;
    CUstream stream;
  } cupti{exec, stream};
  return fake_cuda::WithCuptiCallbacks(
      CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz, "cuGraphLaunch_ptsz", &cupti,
      nullptr, [&] { return fake_cuda::Launch(exec, stream); });
}
