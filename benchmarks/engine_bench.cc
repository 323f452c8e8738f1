// Engine: one tracked allocation + free, as a shim records it (capture, alloc
// event, BeginFree, EndFree), without stacks and with 16-frame stacks, under
// 1..16 threads. This is the engine's share of the interposed cost; the shim's
// own (recursion guard, context lookup, the real call) comes on top.
#include <benchmark/benchmark.h>

#include <cstdint>

#include "benchmarks/bench_util.h"
#include "lib/engine/engine.h"

namespace gmt {
namespace {

constexpr uint64_t kBase = 0x7f0000000000ull;
constexpr int kAddressesPerThread = 4096;
constexpr int kChainDepth = 20;

Engine& EngineWithDepth(int depth) {
  auto make = [](int d) {
    Options o;
    o.stack_depth = d;
    o.print_errors = false;
    o.report = ReportFormats();  // report=none
    return new Engine(o);
  };
  static Engine* const no_stacks = make(0);
  static Engine* const stacks16 = make(16);
  return depth == 0 ? *no_stacks : *stacks16;
}

__attribute__((noinline)) void PairLoop(benchmark::State& state) {
  SetAbslDeadlockDetection(state.range(1) != 0);
  Engine& engine = EngineWithDepth(static_cast<int>(state.range(0)));
  const uint64_t base =
      kBase + (static_cast<uint64_t>(state.thread_index()) << 40);
  uint64_t i = 0;
  for (auto _ : state) {
    const uint64_t a = base + (i++ % kAddressesPerThread) * 256;
    AllocEvent event;
    event.api = Api::kCudaMalloc;
    event.address = a;
    event.bytes = 1 << 20;
    event.device = 0;
    event.context = 0x1000;
    event.stack = engine.CaptureCallStack();
    engine.OnAlloc(event);
    FreeTicket t =
        engine.BeginFree(Api::kCudaFree, a, engine.CaptureCallStack());
    engine.EndFree(t, true, 0, "cudaSuccess");
  }
  state.SetItemsProcessed(state.iterations());
}

template <int N>
__attribute__((noinline)) void Chain(benchmark::State& state) {
  Chain<N - 1>(state);
  benchmark::ClobberMemory();  // not a tail call: the frame stays
}

template <>
__attribute__((noinline)) void Chain<0>(benchmark::State& state) {
  PairLoop(state);
  benchmark::ClobberMemory();
}

// Args: stack_depth (0 or 16), and whether Abseil's debug-mode deadlock
// detection is on (1, what the library runs with today) or off (0).
void BM_EngineAllocFreePair(benchmark::State& state) {
  Chain<kChainDepth>(state);
}
BENCHMARK(BM_EngineAllocFreePair)
    ->ArgNames({"stack_depth", "deadlock_detection"})
    ->Args({0, 1})
    ->Args({0, 0})
    ->Args({16, 1})
    ->Args({16, 0})
    ->ThreadRange(1, 16)
    ->UseRealTime();

// A pair without stacks while N other blocks are live (Arg: N), one thread:
// how the cost grows with the size of the live set.
void BM_EnginePairWithLiveBlocks(benchmark::State& state) {
  SetAbslDeadlockDetection(true);
  Options o;
  o.stack_depth = 0;
  o.print_errors = false;
  Engine engine(o);
  const int64_t live = state.range(0);
  AllocEvent event;
  event.api = Api::kCudaMalloc;
  event.bytes = 1 << 20;
  event.device = 0;
  for (int64_t i = 0; i < live; ++i) {
    event.address = kBase + uint64_t(i) * 4096;
    engine.OnAlloc(event);
  }
  const uint64_t base = kBase + (uint64_t{1} << 40);
  uint64_t i = 0;
  for (auto _ : state) {
    event.address = base + (i++ % kAddressesPerThread) * 256;
    engine.OnAlloc(event);
    FreeTicket t = engine.BeginFree(Api::kCudaFree, event.address, kNoStack);
    engine.EndFree(t, true, 0, "cudaSuccess");
  }
}
BENCHMARK(BM_EnginePairWithLiveBlocks)
    ->ArgName("live")
    ->Arg(0)
    ->Arg(1000)
    ->Arg(100000)
    ->Arg(1000000);

}  // namespace
}  // namespace gmt
