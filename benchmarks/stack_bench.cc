// Stacks: capture at the call (hot), the depot (hot), symbolization (late).
#include <benchmark/benchmark.h>
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <vector>

#include "lib/stacks/stack_capture.h"
#include "lib/stacks/stack_depot.h"
#include "lib/stacks/symbolizer.h"

namespace gmt {
namespace {

constexpr int kChainDepth = 20;

// A 20-deep chain of real frames above the benchmark loop.
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

template <int Depth>
void CaptureLoop(benchmark::State& state) {
  uintptr_t frames[kMaxStackFrames];
  for (auto _ : state) {
    int n = CaptureStack(frames, Depth);
    benchmark::DoNotOptimize(n);
    if (n != Depth) state.SkipWithError("captured fewer frames than asked");
  }
}

// CaptureStack at depth 16 (what stack_depth=16 does at every call), from a
// 20-deep call chain; depth 4 and 32 for the slope. With the unwinder the
// engine loads at its start (WarmUpStackCapture: libunwind when present,
// else glibc's backtrace), as every captured stack in a traced program is.
void BM_CaptureStack(benchmark::State& state) {
  static const bool warmed = (WarmUpStackCapture(), true);
  (void)warmed;
  state.SetLabel(FastUnwinderLoaded() ? "libunwind" : "glibc backtrace");
  switch (state.range(0)) {
    case 4:
      Chain<kChainDepth>(state, CaptureLoop<4>);
      break;
    case 16:
      Chain<kChainDepth>(state, CaptureLoop<16>);
      break;
    case 32:
      Chain<kChainDepth>(state, CaptureLoop<32>);
      break;
  }
}
BENCHMARK(BM_CaptureStack)->Arg(4)->Arg(16)->Arg(32);

void BM_CaptureStack16Threads(benchmark::State& state) {
  static const bool warmed = (WarmUpStackCapture(), true);
  (void)warmed;
  Chain<kChainDepth>(state, CaptureLoop<16>);
}
BENCHMARK(BM_CaptureStack16Threads)->ThreadRange(1, 16)->UseRealTime();

// Reference only (not the library's code): walking frame pointers, which is
// what capture could cost where the program keeps them (this file is built
// with -fno-omit-frame-pointer; many programs are not).
__attribute__((noinline)) int FramePointerWalk(uintptr_t* out, int max) {
  auto* fp = static_cast<uintptr_t*>(__builtin_frame_address(0));
  int n = 0;
  while (fp != nullptr && n < max) {
    const uintptr_t ret = fp[1];
    if (ret == 0) break;
    out[n++] = ret;
    auto* next = reinterpret_cast<uintptr_t*>(fp[0]);
    if (next <= fp || next - fp > (1 << 20)) break;  // not a frame above us
    fp = next;
  }
  return n;
}

void FramePointerLoop(benchmark::State& state) {
  uintptr_t frames[kMaxStackFrames];
  for (auto _ : state) {
    int n = FramePointerWalk(frames, 16);
    benchmark::DoNotOptimize(n);
    if (n != 16) state.SkipWithError("walked fewer than 16 frames");
  }
}

void BM_ReferenceFramePointerWalk16(benchmark::State& state) {
  Chain<kChainDepth>(state, FramePointerLoop);
}
BENCHMARK(BM_ReferenceFramePointerWalk16);

// Reference only: libunwind's unw_backtrace (nongnu libunwind, libunwind.so.8,
// loaded at run time if present), which caches the unwind rule per return
// address instead of interpreting DWARF call-frame information every time.
using UnwBacktraceFn = int (*)(void**, int);

UnwBacktraceFn LibunwindBacktrace() {
  static const UnwBacktraceFn fn = [] {
    void* handle = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
    return handle ? reinterpret_cast<UnwBacktraceFn>(
                        dlsym(handle, "unw_backtrace"))
                  : nullptr;
  }();
  return fn;
}

void LibunwindLoop(benchmark::State& state) {
  UnwBacktraceFn backtrace_fn = LibunwindBacktrace();
  if (backtrace_fn == nullptr) {
    state.SkipWithError("libunwind.so.8 not found");
    return;
  }
  void* frames[kMaxStackFrames];
  for (auto _ : state) {
    int n = backtrace_fn(frames, 16);
    benchmark::DoNotOptimize(n);
    if (n != 16) state.SkipWithError("unwound fewer than 16 frames");
  }
}

void BM_ReferenceLibunwindBacktrace16(benchmark::State& state) {
  Chain<kChainDepth>(state, LibunwindLoop);
}
BENCHMARK(BM_ReferenceLibunwindBacktrace16);

std::vector<uintptr_t> MadeUpStack(uint64_t seed) {
  std::vector<uintptr_t> f(16);
  for (int i = 0; i < 16; ++i) f[i] = 0x400000 + seed * 64 + i * 0x1000;
  return f;
}

// Put of a stack already in the depot (the common case: one call site
// allocating many times).
void BM_DepotPutHit(benchmark::State& state) {
  static StackDepot* const depot = new StackDepot();
  // A few hundred call sites, all stored before the loop.
  std::vector<std::vector<uintptr_t>> stacks;
  for (int i = 0; i < 256; ++i) stacks.push_back(MadeUpStack(i));
  for (const auto& s : stacks) depot->Put(s.data(), 16);
  size_t i = 0;
  for (auto _ : state) {
    const auto& s = stacks[i++ & 255];
    benchmark::DoNotOptimize(depot->Put(s.data(), 16));
  }
}
BENCHMARK(BM_DepotPutHit)->ThreadRange(1, 16)->UseRealTime();

// Put of a stack already in the depot with the caches cold, as in a
// framework whose own work between two allocations (tens of microseconds of
// Python and C++) evicts the depot's lines: 8 MiB is touched between Puts,
// outside the timing, and 64 Ki call sites are stored, so that their table
// is past the caches too.
void BM_DepotPutHitCold(benchmark::State& state) {
  static StackDepot* const depot = new StackDepot();
  constexpr int kSites = 1 << 16;
  static const std::vector<std::vector<uintptr_t>>* const stacks = [] {
    auto* s = new std::vector<std::vector<uintptr_t>>();
    for (int i = 0; i < kSites; ++i) s->push_back(MadeUpStack(i));
    for (const auto& f : *s) depot->Put(f.data(), 16);
    return s;
  }();
  std::vector<uint64_t> pollution(1 << 20);  // 8 MiB
  size_t i = 0;
  for (auto _ : state) {
    for (size_t j = 0; j < pollution.size(); j += 8) ++pollution[j];
    benchmark::ClobberMemory();
    // A few call sites, as a training step's allocations come from a few
    // lines: the same stacks again and again, their lines evicted between.
    // The frames just captured are in the cache, as CaptureStack leaves
    // them.
    uintptr_t frames[16];
    const auto& s = (*stacks)[(i++ * 7919) % 64];
    std::copy(s.begin(), s.end(), frames);
    benchmark::ClobberMemory();
    const auto start = std::chrono::steady_clock::now();
    benchmark::DoNotOptimize(depot->Put(frames, 16));
    state.SetIterationTime(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count());
  }
}
BENCHMARK(BM_DepotPutHitCold)->Iterations(20000)->UseManualTime();

// Put of a stack never seen before: hash, miss, copy into the arena. The
// depot never frees, so the iteration count is fixed (32 MiB of frames).
void BM_DepotPutMiss(benchmark::State& state) {
  static StackDepot* const depot = new StackDepot();
  static uint64_t seed = 1u << 30;
  std::vector<uintptr_t> f = MadeUpStack(0);
  for (auto _ : state) {
    f[0] = 0x400000 + (++seed) * 16;  // a new innermost frame each time
    benchmark::DoNotOptimize(depot->Put(f.data(), 16));
  }
}
BENCHMARK(BM_DepotPutMiss)->Iterations(1 << 18);

// Return addresses inside this binary's own text, one per 4 bytes: every one
// a different address for the symbolizer's cache (libdw still looks each one
// up: function, then line table).
std::vector<uintptr_t> TextAddresses(size_t count) {
  uintptr_t begin = 0, end = 0;
  std::vector<uintptr_t> out;
  if (!ModuleTextRange(reinterpret_cast<const void*>(&TextAddresses), &begin,
                       &end)) {
    return out;
  }
  for (uintptr_t a = begin + 16; a < end && out.size() < count; a += 4) {
    out.push_back(a);
  }
  return out;
}

// Cold: a new Symbolizer (libdw session: every loaded module reported) and its
// first lookup. What the first report of a process pays once. Few iterations:
// each Symbolizer keeps its libdw session (see the unit test on leaks).
void BM_SymbolizerColdSession(benchmark::State& state) {
  uintptr_t pc = TextAddresses(1000).back();
  for (auto _ : state) {
    Symbolizer s;
    benchmark::DoNotOptimize(s.Symbolize(pc));
  }
}
BENCHMARK(BM_SymbolizerColdSession)
    ->Iterations(20)
    ->Unit(benchmark::kMicrosecond);

// Cold address: a warm Symbolizer, an address it has not seen (function
// name + file:line lookup through libdw).
void BM_SymbolizerColdAddress(benchmark::State& state) {
  constexpr size_t kAddresses = 5000;
  static Symbolizer* const symbolizer = new Symbolizer();
  static const std::vector<uintptr_t> addresses = TextAddresses(kAddresses);
  static size_t next = 0;
  symbolizer->HasLineInfo();  // load libdw outside the timing
  if (addresses.size() < kAddresses) {
    state.SkipWithError("text too small for distinct addresses");
    return;
  }
  for (auto _ : state) {
    if (next == addresses.size()) {
      state.SkipWithError("ran out of new addresses");
      break;
    }
    benchmark::DoNotOptimize(symbolizer->Symbolize(addresses[next++]));
  }
}
BENCHMARK(BM_SymbolizerColdAddress)
    ->Iterations(1000)
    ->Unit(benchmark::kMicrosecond);

// Cached: the same address again (every report after the first).
void BM_SymbolizerCached(benchmark::State& state) {
  static Symbolizer* const symbolizer = new Symbolizer();
  uintptr_t pc = TextAddresses(10).back();
  symbolizer->Symbolize(pc);
  for (auto _ : state) benchmark::DoNotOptimize(symbolizer->Symbolize(pc));
}
BENCHMARK(BM_SymbolizerCached);

// A cached 16-frame stack through SymbolizeStack (per leak site per report).
void BM_SymbolizeStackCached(benchmark::State& state) {
  static Symbolizer* const symbolizer = new Symbolizer();
  std::vector<uintptr_t> stack = TextAddresses(16);
  symbolizer->SymbolizeStack(StackView(stack));
  for (auto _ : state) {
    benchmark::DoNotOptimize(symbolizer->SymbolizeStack(StackView(stack)));
  }
}
BENCHMARK(BM_SymbolizeStackCached);

}  // namespace
}  // namespace gmt
