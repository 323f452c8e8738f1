// Graph memory nodes: GraphMemory's bookkeeping, and the
// engine's side of it — blocks that appear at a graph launch, counted once,
// freed by free nodes and auto-free relaunches, captured stream-ordered
// allocations diverted until launch, and frees of graph memory never taken
// for the program's errors.
#include "lib/registry/graph_memory.h"

#include <memory>

#include "gtest/gtest.h"
#include "lib/engine/engine.h"

namespace gmt {
namespace {

constexpr uint64_t kNode = 0x7f1000000000ull;
constexpr uint64_t kExec = 0xe0e0;
constexpr uint64_t kCapturing = 0x5100;  // the stream under capture in tests

// ---- GraphMemory ------------------------------------------------------------

TEST(GraphMemoryTest, PlanCarriesTheNodesOriginAndItsFrees) {
  GraphMemory g;
  EXPECT_TRUE(g.Empty());
  EXPECT_FALSE(g.PlanLaunch(kExec).has_value());
  g.NoteAllocNode(kNode, 4096, 1, {Api::kGraphMemAllocNode, StackId{7}});
  EXPECT_FALSE(g.Empty());
  EXPECT_TRUE(g.IsGraphAddress(kNode));
  EXPECT_FALSE(g.IsGraphAddress(kNode + 256));
  GraphMemory::ExecNodes nodes;
  nodes.allocs.push_back({kNode, 4096, 1});
  nodes.allocs.push_back({kNode + 8192, 512, 0});  // made before the tool came
  nodes.frees.push_back(kNode + 8192);
  g.NoteInstantiated(kExec, nodes);
  std::optional<GraphMemory::LaunchPlan> plan = g.PlanLaunch(kExec);
  ASSERT_TRUE(plan.has_value());
  ASSERT_EQ(plan->allocs.size(), 2u);
  EXPECT_TRUE(plan->allocs[0].origin_known);
  EXPECT_EQ(plan->allocs[0].origin.stack, StackId{7});
  EXPECT_EQ(plan->allocs[0].node.device, 1);
  EXPECT_FALSE(plan->allocs[1].origin_known);
  EXPECT_EQ(plan->frees, std::vector<uint64_t>{kNode + 8192});
  // Enumerated addresses are graph memory too.
  EXPECT_TRUE(g.IsGraphAddress(kNode + 8192));
}

TEST(GraphMemoryTest, ExecsWithoutMemoryNodesAreNotKept) {
  GraphMemory g;
  g.NoteAllocNode(kNode, 64, 0, {});
  g.NoteInstantiated(kExec, {});
  EXPECT_EQ(g.ExecCount(), 0u);
  EXPECT_FALSE(g.PlanLaunch(kExec).has_value());
  GraphMemory::ExecNodes nodes;
  nodes.allocs.push_back({kNode, 64, 0});
  g.NoteInstantiated(kExec, nodes);
  EXPECT_EQ(g.ExecCount(), 1u);
  // A reused handle instantiated from a graph without memory nodes.
  g.NoteInstantiated(kExec, {});
  EXPECT_FALSE(g.PlanLaunch(kExec).has_value());
  g.NoteInstantiated(kExec, nodes);
  g.NoteExecDestroyed(kExec);
  EXPECT_FALSE(g.PlanLaunch(kExec).has_value());
}

TEST(GraphMemoryTest, CapturedVariantsNameTheStreamOrderedApis) {
  EXPECT_EQ(ApiName(CapturedVariant(Api::kCudaMallocAsync)),
            "cudaMallocAsync(captured)");
  EXPECT_EQ(CapturedVariant(Api::kCuMemAllocFromPoolAsync),
            Api::kCuMemAllocFromPoolAsyncCaptured);
  EXPECT_EQ(CapturedVariant(Api::kCudaMalloc), Api::kCudaMalloc);
  EXPECT_TRUE(IsGraphAllocApi(Api::kGraphMemAllocNode));
  EXPECT_TRUE(IsGraphAllocApi(Api::kCuMemAllocAsyncCaptured));
  EXPECT_FALSE(IsGraphAllocApi(Api::kCudaMallocAsync));
}

// ---- The engine
// ---------------------------------------------------------------

Options QuietOptions() {
  Options o;
  o.print_errors = false;
  o.symbolize = false;
  o.stack_depth = 0;
  o.report = ReportFormats();  // report=none
  return o;
}

bool CapturingQuery(uint64_t stream) { return stream == kCapturing; }

class EngineGraphTest : public ::testing::Test {
 protected:
  EngineGraphTest() : engine_(std::make_unique<Engine>(QuietOptions())) {
    SetStreamCaptureQuery(&CapturingQuery);
  }
  ~EngineGraphTest() override { SetStreamCaptureQuery(nullptr); }

  void Launch(uint64_t exec, StackId launch_stack = kNoStack) {
    engine_->OnGraphLaunched(exec, /*context=*/0, /*stream=*/0,
                             [launch_stack] { return launch_stack; });
  }
  // One whole free as a shim makes it.
  void Free(Api api, uint64_t address, bool cuda_ok, uint64_t stream = 0) {
    FreeTicket t = engine_->BeginFree(api, address, kNoStack, stream);
    engine_->EndFree(t, cuda_ok, cuda_ok ? 0 : 1,
                     cuda_ok ? "cudaSuccess" : "cudaErrorInvalidValue");
  }
  std::optional<AllocationRecord> Live(uint64_t address) {
    for (const AllocationRecord& r : engine_->LiveAllocations()) {
      if (r.address == address) return r;
    }
    return std::nullopt;
  }
  // An exec with one alloc node at kNode (and a free node of it, if asked).
  void OneNodeExec(bool free_node, bool auto_free = false) {
    engine_->OnGraphAllocNode(kNode, 4096, 0, Api::kGraphMemAllocNode,
                              StackId{42});
    GraphMemory::ExecNodes nodes;
    nodes.allocs.push_back({kNode, 4096, 0});
    if (free_node) nodes.frees.push_back(kNode);
    nodes.auto_free = auto_free;
    engine_->OnGraphInstantiated(kExec, nodes);
  }
  ReportData::Summary Summary() {
    return engine_->BuildReport("request").summary;
  }

  std::unique_ptr<Engine> engine_;
};

TEST_F(EngineGraphTest, NothingIsLiveUntilTheLaunch) {
  OneNodeExec(/*free_node=*/false);
  EXPECT_FALSE(Live(kNode));
  Launch(kExec);
  std::optional<AllocationRecord> r = Live(kNode);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->api, Api::kGraphMemAllocNode);
  EXPECT_EQ(r->bytes, 4096u);
  EXPECT_EQ(r->stack, StackId{42});  // the node's creation, not the launch
  EXPECT_EQ(Summary().allocations, 1u);
  EXPECT_EQ(engine_->ErrorCount(), 0u);
}

TEST_F(EngineGraphTest, AStillLiveBlockIsCountedOnce) {
  OneNodeExec(false);
  Launch(kExec);
  Launch(kExec);  // CUDA would refuse it: the first block is unfreed
  EXPECT_EQ(Summary().allocations, 1u);
}

TEST_F(EngineGraphTest, FreeNodesFreeAtEachLaunch) {
  OneNodeExec(/*free_node=*/true);
  Launch(kExec);
  Launch(kExec);
  EXPECT_FALSE(Live(kNode));
  ReportData::Summary s = Summary();
  EXPECT_EQ(s.allocations, 2u);
  EXPECT_EQ(s.frees, 2u);
  EXPECT_EQ(engine_->DeviceUsage(0).live_bytes, 0u);
}

TEST_F(EngineGraphTest, AutoFreeRelaunchFreesThePreviousBlock) {
  OneNodeExec(false, /*auto_free=*/true);
  Launch(kExec);
  Launch(kExec);
  ASSERT_TRUE(Live(kNode));
  ReportData::Summary s = Summary();
  EXPECT_EQ(s.allocations, 2u);
  EXPECT_EQ(s.frees, 1u);
  Free(Api::kCudaFree, kNode, true);
  EXPECT_EQ(engine_->ErrorCount(), 0u);
}

TEST_F(EngineGraphTest, UnknownNodesTakeTheLaunchStack) {
  GraphMemory::ExecNodes nodes;
  nodes.allocs.push_back({kNode, 128, 0});  // its creation was not seen
  engine_->OnGraphInstantiated(kExec, nodes);
  Launch(kExec, StackId{99});
  std::optional<AllocationRecord> r = Live(kNode);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->api, Api::kGraphMemAllocNode);
  EXPECT_EQ(r->stack, StackId{99});
}

// The bug this guards: relaunching a graph whose block the program frees
// with cudaFreeAsync each time made the second free a "double-free" (and a
// cudaFreeAsync of a graph block the tool never saw an "invalid-free").
TEST_F(EngineGraphTest, FreesOfGraphMemoryAreNeverInvalidOrDouble) {
  OneNodeExec(false);
  Launch(kExec);
  Free(Api::kCudaFreeAsync, kNode, true);
  Launch(kExec);
  Free(Api::kCudaFreeAsync, kNode, true);
  EXPECT_EQ(engine_->ErrorCount(), 0u);
  // Launches the tool did not see: still no error.
  Free(Api::kCudaFreeAsync, kNode, true);
  Free(Api::kCudaFree, kNode, true);
  EXPECT_EQ(engine_->ErrorCount(), 0u);
  // A synchronous free CUDA refused is the program's error all the same.
  Free(Api::kCudaFree, kNode, false);
  EXPECT_EQ(engine_->ErrorCount(), 1u);
}

TEST_F(EngineGraphTest, CapturedAllocationsWaitForTheLaunch) {
  AllocEvent e;
  e.api = Api::kCudaMallocAsync;
  e.address = kNode;
  e.bytes = 8192;
  e.device = 0;
  e.stream = kCapturing;
  e.stack = StackId{5};
  engine_->OnAlloc(e);
  EXPECT_FALSE(Live(kNode));
  EXPECT_TRUE(engine_->graph_memory().IsGraphAddress(kNode));
  // The captured free is a free node: nothing happens now.
  FreeTicket t =
      engine_->BeginFree(Api::kCudaFreeAsync, kNode, kNoStack, kCapturing);
  EXPECT_EQ(t.state, FreeTicket::State::kIgnored);
  engine_->EndFree(t, true, 0, "cudaSuccess");
  EXPECT_EQ(engine_->ErrorCount(), 0u);
  GraphMemory::ExecNodes nodes;
  nodes.allocs.push_back({kNode, 8192, 0});
  engine_->OnGraphInstantiated(kExec, nodes);
  Launch(kExec);
  std::optional<AllocationRecord> r = Live(kNode);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(ApiName(r->api), "cudaMallocAsync(captured)");
  EXPECT_EQ(r->stack, StackId{5});
  EXPECT_EQ(Summary().allocations, 1u);
}

TEST_F(EngineGraphTest, OnlyStreamOrderedAllocationsAreDiverted) {
  AllocEvent e;
  e.api = Api::kCudaMalloc;  // not capturable: an ordinary block
  e.address = kNode;
  e.bytes = 64;
  e.stream = kCapturing;
  engine_->OnAlloc(e);
  EXPECT_TRUE(Live(kNode));
  AllocEvent a;
  a.api = Api::kCuMemAllocAsync;
  a.address = kNode + 4096;
  a.bytes = 64;
  a.stream = 0;  // not capturing
  engine_->OnAlloc(a);
  EXPECT_TRUE(Live(kNode + 4096));
}

}  // namespace
}  // namespace gmt
