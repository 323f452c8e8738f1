// GraphMemory: the memory CUDA graphs allocate when they run,
// which no allocation call returns at the moment it appears.
//
// A graph memory node (cuGraphAddMemAllocNode / cudaGraphAddMemAllocNode,
// cuGraphAddNode with a CU_GRAPH_NODE_TYPE_MEM_ALLOC node, or
// cudaMallocAsync / cuMemAllocAsync made on a stream being captured) gets its
// address when the node is created, and that address stays fixed for the
// life of the graph. The memory behind it exists from each launch of the
// executable graph until a free node (of this graph or a later one),
// cudaFreeAsync / cuMemFreeAsync, cudaFree / cuMemFree, or the next launch of
// a graph instantiated with CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH.
// The tool follows that lifetime:
//
//   node created        NoteAllocNode: the address, with the creating call's
//                       API and stack (the best stack there is: where the
//                       program asked for the memory)
//   graph instantiated  NoteInstantiated: the executable's alloc and free
//                       nodes, enumerated by the front end (child graphs
//                       included); only one instantiation of such a graph may
//                       exist, and the graph cannot be cloned
//   graph launched      PlanLaunch: the engine makes each alloc node's block
//                       live (counted once: an address still live is not
//                       added again) and applies the free nodes
//
// IsGraphAddress says whether an address is graph memory at all, so that a
// free the tool cannot match to a block (a launch it did not see) is never
// reported as an invalid or double free.
//
// A pure bookkeeping class: no CUDA, no registry. Thread safety: every member
// is thread-safe.
#ifndef GMT_LIB_REGISTRY_GRAPH_MEMORY_H_
#define GMT_LIB_REGISTRY_GRAPH_MEMORY_H_

#include <atomic>
#include <cstdint>
#include <optional>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "lib/core/api.h"
#include "lib/stacks/stack_depot.h"

namespace gmt {

class GraphMemory {
 public:
  // Where an alloc node was made: the API the program called and its stack.
  struct Origin {
    Api api = Api::kGraphMemAllocNode;
    StackId stack = kNoStack;
  };
  // One alloc node as the driver describes it.
  struct AllocNode {
    uint64_t address = 0;
    uint64_t bytes = 0;
    int32_t device = 0;
  };
  // The memory nodes of an executable graph.
  struct ExecNodes {
    std::vector<AllocNode> allocs;
    std::vector<uint64_t> frees;  // addresses its free nodes release
    bool auto_free = false;       // CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_...
  };
  struct LaunchAlloc {
    AllocNode node;
    Origin origin;
    bool origin_known = false;  // false: no creation was seen (stack unknown)
  };
  // What one launch does to memory, in order: allocs, then frees.
  struct LaunchPlan {
    std::vector<LaunchAlloc> allocs;
    std::vector<uint64_t> frees;
    bool auto_free = false;
  };

  GraphMemory() = default;
  GraphMemory(const GraphMemory&) = delete;
  GraphMemory& operator=(const GraphMemory&) = delete;

  // An alloc node was created at `address` (fixed from now on). A later node
  // at the same address (the graph was destroyed and the address reused)
  // replaces the origin.
  void NoteAllocNode(uint64_t address, uint64_t bytes, int32_t device,
                     Origin origin);

  // `exec` was instantiated from a graph with these memory nodes. An exec
  // without memory nodes is not kept (a launch of it costs one lookup).
  void NoteInstantiated(uint64_t exec, ExecNodes nodes);

  // `exec` was destroyed: its handle may be reused by another instantiation.
  // The memory it allocated stays live until freed (CUDA does not free it).
  void NoteExecDestroyed(uint64_t exec);

  // The memory work of one launch of `exec`, or nullopt for an exec the tool
  // knows no memory nodes of.
  std::optional<LaunchPlan> PlanLaunch(uint64_t exec) const;

  // Whether some alloc node has had `address` as its start: graph memory.
  bool IsGraphAddress(uint64_t address) const;

  // True until the first memory node or graph with memory nodes is seen: the
  // engine's fast path (one relaxed load per graph launch or async free).
  bool Empty() const { return !any_.load(std::memory_order_acquire); }

  // Execs with memory nodes currently known (tests, notes).
  size_t ExecCount() const;

 private:
  struct Address {
    uint64_t bytes = 0;
    int32_t device = 0;
    Origin origin;
    bool origin_known = false;
  };

  mutable absl::Mutex mu_;
  absl::flat_hash_map<uint64_t, Address> addresses_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<uint64_t, ExecNodes> execs_ ABSL_GUARDED_BY(mu_);
  std::atomic<bool> any_{false};
};

// Whether a block was made by a graph (explicit node or captured allocation):
// such blocks are never guarded, and a launch of an executable with
// CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH frees them.
bool IsGraphAllocApi(Api api);

// The API name a stream-ordered allocation gets when it was made on a stream
// being captured (cudaMallocAsync -> "cudaMallocAsync(captured)"); `api`
// itself for any other API.
Api CapturedVariant(Api api);

// Whether the program's `stream` (the engine's stream id: 0 is the legacy
// stream, CU_STREAM_PER_THREAD the per-thread one) is being captured into a
// graph. Installed by the front end (interpose/shims/graph_memory_shims.cc),
// which asks CUDA; tests install their own. Unset: never capturing.
using StreamCaptureQuery = bool (*)(uint64_t stream);
void SetStreamCaptureQuery(StreamCaptureQuery query);
StreamCaptureQuery GetStreamCaptureQuery();

}  // namespace gmt

#endif  // GMT_LIB_REGISTRY_GRAPH_MEMORY_H_
