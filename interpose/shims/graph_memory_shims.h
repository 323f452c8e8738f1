// Graph memory nodes: what the shims and the CUPTI
// subscriber share to follow memory a CUDA graph allocates when it is
// launched (lib/registry/graph_memory.h has the lifetime;
// lib/engine/engine_graph.cc the registry side).
//
//   node created   cuGraphAddMemAllocNode / cuGraphAddNode(_v2) (the runtime's
//                  cudaGraphAddMemAllocNode / cudaGraphAddNode reach them):
//                  NoteGraphAllocNode with the params' dptr and the caller's
//                  stack; cudaMallocAsync & co on a capturing stream are
//                  diverted by the engine itself (StreamCapturing below)
//   instantiated   cuGraphInstantiateWithFlags / WithParams(_ptsz) (and
//                  "cuGraphInstantiate" at CUDA >= 12.0):
//                  NoteGraphInstantiated enumerates the graph's memory nodes
//   launched       cuGraphLaunch(_ptsz), cudaGraphLaunch(_ptsz):
//                  NoteGraphLaunched
//   destroyed      cuGraphExecDestroy
//
// Each entry point is a shim (driver_hooks.inc) under LD_PRELOAD and a CUPTI
// driver-API callback under injection (cupti_subscriber.cc); the thread's
// intercept depth keeps them counted once.
#ifndef GMT_INTERPOSE_SHIMS_GRAPH_MEMORY_SHIMS_H_
#define GMT_INTERPOSE_SHIMS_GRAPH_MEMORY_SHIMS_H_

#include <cuda.h>

#include <cstdint>

#include "absl/functional/function_ref.h"
#include "lib/engine/engine.h"

namespace gmt {

// The engine's StreamCaptureQuery (installed at load): the real
// cuStreamIsCapturing on the program's stream (0: the legacy stream). An
// error answers "not capturing": a capture can then not have recorded the
// call either.
bool ToolStreamCapturing(uint64_t stream);

// The memory nodes of `graph` (child graphs included), through the real
// driver. Empty when the driver lacks the graph queries.
GraphMemory::ExecNodes EnumerateGraphMemory(CUgraph graph);

// After a successful instantiation of `graph` into `exec`.
void NoteGraphInstantiated(CUgraphExec exec, CUgraph graph,
                           unsigned long long flags);

// After a successful creation of an alloc node whose params say `params`.
void NoteGraphAllocNode(const CUDA_MEM_ALLOC_NODE_PARAMS& params,
                        StackId stack);
// The same for a generic node (cuGraphAddNode): only a MEM_ALLOC node counts.
void NoteGraphNode(const CUgraphNodeParams* params, StackId stack);

// After a successful launch of `exec` on `engine_stream` of `context`.
void NoteGraphLaunched(CUgraphExec exec, uint64_t context,
                       uint64_t engine_stream,
                       absl::FunctionRef<StackId()> stack);

}  // namespace gmt

#endif  // GMT_INTERPOSE_SHIMS_GRAPH_MEMORY_SHIMS_H_
