// Engine members for graph memory nodes (lib/registry/graph_memory.h):
// the registry side of a graph's allocations and frees, which happen when the
// graph is launched rather than when a call returns a pointer.
#include "lib/core/clock.h"
#include "lib/core/log.h"
#include "lib/engine/engine.h"
#include "lib/guard/guard_layout.h"

namespace gmt {

void Engine::OnGraphAllocNode(uint64_t address, uint64_t bytes, int device,
                              Api api, StackId stack) {
  if (!tracking() || address == 0) return;
  graph_memory_.NoteAllocNode(address, bytes, device,
                              GraphMemory::Origin{api, stack});
}

void Engine::OnGraphInstantiated(uint64_t exec, GraphMemory::ExecNodes nodes) {
  if (!tracking() || exec == 0) return;
  graph_memory_.NoteInstantiated(exec, std::move(nodes));
}

void Engine::OnGraphExecDestroyed(uint64_t exec) {
  graph_memory_.NoteExecDestroyed(exec);
}

void Engine::OnGraphLaunched(uint64_t exec, uint64_t context, uint64_t stream,
                             absl::FunctionRef<StackId()> launch_stack) {
  if (!tracking() || graph_memory_.Empty()) return;
  std::optional<GraphMemory::LaunchPlan> plan = graph_memory_.PlanLaunch(exec);
  if (!plan) return;
  StackId fallback = kNoStack;
  bool fallback_taken = false;
  for (const GraphMemory::LaunchAlloc& a : plan->allocs) {
    if (std::optional<AllocationRecord> live = pointers_.Find(a.node.address)) {
      // Still live from an earlier launch. With auto-free the launch frees it
      // first (as cuMemFreeAsync would); without, CUDA refuses such a launch,
      // so this one cannot have succeeded with it unfreed: count once.
      if (!plan->auto_free || !IsGraphAllocApi(live->api)) continue;
      GraphRelease(Api::kGraphAutoFree, a.node.address);
    }
    AllocEvent event;
    event.api = a.origin.api;
    event.address = a.node.address;
    event.bytes = a.node.bytes;
    event.device = a.node.device;
    event.stream = stream;
    event.context = context;
    if (a.origin_known) {
      event.stack = a.origin.stack;
    } else {
      if (!fallback_taken) {
        fallback = launch_stack();
        fallback_taken = true;
      }
      event.stack = fallback;
    }
    OnAlloc(event);
  }
  for (uint64_t address : plan->frees)
    GraphRelease(Api::kGraphFreeNode, address);
}

void Engine::GraphRelease(Api api, uint64_t address) {
  FreedRecord freed;
  freed.free_thread = CurrentThreadIndex();
  freed.free_time_ns = NowNs();
  freed.free_api = api;
  Registry::TakeResult taken =
      pointers_.Take(address, ApiReleasableKinds(api), freed);
  // Nothing live there: a launch or node the tool did not see made it, or it
  // was freed already; a graph never errs at launch time, so neither does
  // the tool.
  if (taken.outcome != Registry::TakeResult::Outcome::kTaken) return;
  AccountFree(taken.record);
}

bool Engine::DivertCapturedAlloc(const AllocEvent& event) {
  if (FamilyOf(event.api) != GuardFamily::kAsync) return false;
  StreamCaptureQuery capturing = GetStreamCaptureQuery();
  if (capturing == nullptr || !capturing(event.stream)) return false;
  // Not memory yet: an alloc node of the graph being captured. Its block
  // appears at each launch of that graph (OnGraphLaunched).
  graph_memory_.NoteAllocNode(
      event.address, event.bytes, event.device,
      GraphMemory::Origin{CapturedVariant(event.api), event.stack});
  LogNote(2, "%s of 0x%llx on a capturing stream: a graph memory node",
          std::string(ApiName(event.api)).c_str(),
          static_cast<unsigned long long>(event.address));
  return true;
}

bool Engine::IsCapturedGraphFree(Api api, uint64_t address, uint64_t stream) {
  if (api != Api::kCudaFreeAsync && api != Api::kCuMemFreeAsync) return false;
  if (graph_memory_.Empty()) return false;  // nothing captured yet
  StreamCaptureQuery capturing = GetStreamCaptureQuery();
  if (capturing == nullptr || !capturing(stream)) return false;
  // Graph memory (this capture's or an earlier graph's), or nothing live: a
  // free node, applied at launch. A live ordinary block freed inside a
  // capture keeps the ordinary protocol.
  if (graph_memory_.IsGraphAddress(address)) return true;
  return !pointers_.Find(address).has_value();
}

}  // namespace gmt
