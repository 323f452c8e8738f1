// One cudaMalloc + cudaFree pair, as the program sees it. Linked against the
// stand-in runtime (fake_runtime_for_bench.cc); run_interpose_bench.sh runs it
// plain and with libgpumemtrace.so preloaded, and the difference is the tool's
// cost per pair.
//
// The loops run at the bottom of a 20-deep call chain so that a 16-frame
// capture (GMT_OPTIONS=stack_depth=16) finds 16 frames to unwind, as in a real
// program.
#include <benchmark/benchmark.h>

#include <cstddef>
#include <cstdint>

extern "C" int cudaMalloc(void** p, size_t bytes);
extern "C" int cudaFree(void* p);

namespace {

#ifdef GMT_BENCH_BYTES
constexpr size_t kBytes = GMT_BENCH_BYTES;  // small: no mmap per block
#else
constexpr size_t kBytes = size_t{1} << 20;
#endif
constexpr int kChainDepth = 20;

__attribute__((noinline)) void MallocFreeLoop(benchmark::State& state) {
  for (auto _ : state) {
    void* p = nullptr;
    if (cudaMalloc(&p, kBytes) != 0) state.SkipWithError("cudaMalloc failed");
    benchmark::DoNotOptimize(p);
    cudaFree(p);
  }
}

// 256 blocks live at all times: each iteration frees the oldest and allocates
// a new one, so the tool's registry is not empty and addresses rotate.
__attribute__((noinline)) void RingLoop(benchmark::State& state) {
  constexpr int kLive = 256;
  void* ring[kLive];
  for (void*& p : ring) cudaMalloc(&p, kBytes);
  int i = 0;
  for (auto _ : state) {
    cudaFree(ring[i]);
    if (cudaMalloc(&ring[i], kBytes) != 0) state.SkipWithError("cudaMalloc");
    i = (i + 1) % kLive;
  }
  for (void* p : ring) cudaFree(p);
}

template <int N>
__attribute__((noinline)) void Chain(benchmark::State& state,
                                     void (*loop)(benchmark::State&)) {
  Chain<N - 1>(state, loop);
  benchmark::ClobberMemory();  // not a tail call: the frame stays
}

template <>
__attribute__((noinline)) void Chain<0>(benchmark::State& state,
                                        void (*loop)(benchmark::State&)) {
  loop(state);
  benchmark::ClobberMemory();
}

void BM_MallocFree(benchmark::State& state) {
  Chain<kChainDepth>(state, MallocFreeLoop);
}
BENCHMARK(BM_MallocFree)->Threads(1)->Threads(2)->UseRealTime();

void BM_MallocFreeRing(benchmark::State& state) {
  Chain<kChainDepth>(state, RingLoop);
}
BENCHMARK(BM_MallocFreeRing)->UseRealTime();

}  // namespace
