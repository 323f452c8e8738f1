#include "lib/registry/graph_memory.h"

#include <utility>

namespace gmt {
namespace {
std::atomic<StreamCaptureQuery> g_capture_query{nullptr};
}  // namespace

void GraphMemory::NoteAllocNode(uint64_t address, uint64_t bytes,
                                int32_t device, Origin origin) {
  if (address == 0) return;
  absl::MutexLock lock(&mu_);
  Address& a = addresses_[address];
  a.bytes = bytes;
  a.device = device;
  a.origin = origin;
  a.origin_known = true;
  any_.store(true, std::memory_order_release);
}

void GraphMemory::NoteInstantiated(uint64_t exec, ExecNodes nodes) {
  absl::MutexLock lock(&mu_);
  if (nodes.allocs.empty() && nodes.frees.empty()) {
    execs_.erase(exec);  // a reused handle must not keep an old plan
    return;
  }
  for (const AllocNode& n : nodes.allocs) {
    if (n.address == 0) continue;
    Address& a = addresses_[n.address];  // a node made before the tool came
    a.bytes = n.bytes;
    a.device = n.device;
  }
  execs_[exec] = std::move(nodes);
  any_.store(true, std::memory_order_release);
}

void GraphMemory::NoteExecDestroyed(uint64_t exec) {
  if (Empty()) return;
  absl::MutexLock lock(&mu_);
  execs_.erase(exec);
}

std::optional<GraphMemory::LaunchPlan> GraphMemory::PlanLaunch(
    uint64_t exec) const {
  if (Empty()) return std::nullopt;
  absl::MutexLock lock(&mu_);
  auto it = execs_.find(exec);
  if (it == execs_.end()) return std::nullopt;
  LaunchPlan plan;
  plan.auto_free = it->second.auto_free;
  plan.frees = it->second.frees;
  plan.allocs.reserve(it->second.allocs.size());
  for (const AllocNode& n : it->second.allocs) {
    LaunchAlloc a;
    a.node = n;
    if (auto known = addresses_.find(n.address); known != addresses_.end()) {
      a.origin = known->second.origin;
      a.origin_known = known->second.origin_known;
    }
    plan.allocs.push_back(a);
  }
  return plan;
}

bool GraphMemory::IsGraphAddress(uint64_t address) const {
  if (Empty() || address == 0) return false;
  absl::MutexLock lock(&mu_);
  return addresses_.contains(address);
}

size_t GraphMemory::ExecCount() const {
  absl::MutexLock lock(&mu_);
  return execs_.size();
}

bool IsGraphAllocApi(Api api) {
  switch (api) {
    case Api::kGraphMemAllocNode:
    case Api::kCudaMallocAsyncCaptured:
    case Api::kCudaMallocFromPoolAsyncCaptured:
    case Api::kCuMemAllocAsyncCaptured:
    case Api::kCuMemAllocFromPoolAsyncCaptured:
      return true;
    default:
      return false;
  }
}

Api CapturedVariant(Api api) {
  switch (api) {
    case Api::kCudaMallocAsync:
      return Api::kCudaMallocAsyncCaptured;
    case Api::kCudaMallocFromPoolAsync:
      return Api::kCudaMallocFromPoolAsyncCaptured;
    case Api::kCuMemAllocAsync:
      return Api::kCuMemAllocAsyncCaptured;
    case Api::kCuMemAllocFromPoolAsync:
      return Api::kCuMemAllocFromPoolAsyncCaptured;
    default:
      return api;
  }
}

void SetStreamCaptureQuery(StreamCaptureQuery query) {
  g_capture_query.store(query, std::memory_order_release);
}

StreamCaptureQuery GetStreamCaptureQuery() {
  return g_capture_query.load(std::memory_order_acquire);
}

}  // namespace gmt
