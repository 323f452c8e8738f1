// Registry: the per-call cost of the live-block map, alone and under threads.
// Arg deadlock_detection: Abseil's debug-mode Mutex deadlock detector on (1,
// what the library runs with today on Debian's Abseil) or off (0).
#include <benchmark/benchmark.h>

#include <cstdint>
#include <random>
#include <vector>

#include "benchmarks/bench_util.h"
#include "lib/registry/registry.h"

namespace gmt {
namespace {

constexpr uint64_t kBase = 0x7f0000000000ull;
constexpr int kAddressesPerThread = 4096;

AllocationRecord Block(uint64_t address) {
  AllocationRecord r;
  r.address = address;
  r.bytes = 1 << 20;
  r.api = Api::kCudaMalloc;
  r.kind = MemoryKind::kDevice;
  r.device = 0;
  return r;
}

// Each thread works in its own address range, 256-byte aligned like CUDA's.
uint64_t ThreadBase(const benchmark::State& state) {
  return kBase + (static_cast<uint64_t>(state.thread_index()) << 40);
}

Registry& SharedRegistry() {
  static Registry* const registry = new Registry(65536);
  return *registry;
}

// Insert + Erase: a block's life in the map.
void BM_RegistryInsertErase(benchmark::State& state) {
  SetAbslDeadlockDetection(state.range(0) != 0);
  Registry& registry = SharedRegistry();
  const uint64_t base = ThreadBase(state);
  uint64_t i = 0;
  for (auto _ : state) {
    const uint64_t a = base + (i++ % kAddressesPerThread) * 256;
    registry.Insert(Block(a));
    benchmark::DoNotOptimize(registry.Erase(a));
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_RegistryInsertErase)
    ->ArgName("deadlock_detection")
    ->Arg(1)
    ->Arg(0)
    ->ThreadRange(1, 16)
    ->UseRealTime();

// Insert + Take: what the engine's free path does (remove and remember the
// free in the bounded history, under one lock).
void BM_RegistryInsertTake(benchmark::State& state) {
  SetAbslDeadlockDetection(state.range(0) != 0);
  Registry& registry = SharedRegistry();
  const uint64_t base = ThreadBase(state);
  FreedRecord freed;
  freed.free_api = Api::kCudaFree;
  const uint32_t mask = KindBit(MemoryKind::kDevice);
  uint64_t i = 0;
  for (auto _ : state) {
    const uint64_t a = base + (i++ % kAddressesPerThread) * 256;
    registry.Insert(Block(a));
    benchmark::DoNotOptimize(registry.Take(a, mask, freed));
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_RegistryInsertTake)
    ->ArgName("deadlock_detection")
    ->Arg(1)
    ->Arg(0)
    ->ThreadRange(1, 16)
    ->UseRealTime();

// Find among 100 000 live blocks (random hits).
void BM_RegistryFind(benchmark::State& state) {
  SetAbslDeadlockDetection(state.range(0) != 0);
  constexpr int kLive = 100000;
  static Registry* const registry = [] {
    auto* r = new Registry(1024);
    for (int i = 0; i < kLive; ++i) r->Insert(Block(kBase + uint64_t(i) * 512));
    return r;
  }();
  std::mt19937_64 rng(state.thread_index() + 1);
  std::vector<uint64_t> keys(4096);
  for (uint64_t& k : keys) k = kBase + (rng() % kLive) * 512;
  size_t i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(registry->Find(keys[i++ & 4095]));
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_RegistryFind)
    ->ArgName("deadlock_detection")
    ->Arg(1)
    ->Arg(0)
    ->ThreadRange(1, 16)
    ->UseRealTime();

}  // namespace
}  // namespace gmt
