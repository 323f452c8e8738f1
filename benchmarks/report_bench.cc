// Reports: BuildReport (group, symbolize) and the two writers, for 100 000
// live allocations from 100 call sites.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <vector>

#include "lib/engine/engine.h"
#include "lib/report/report.h"
#include "lib/stacks/stack_capture.h"

namespace gmt {
namespace {

constexpr int kAllocations = 100000;
constexpr int kCallSites = 100;
constexpr uint64_t kBase = 0x7f0000000000ull;

// 100 call sites: one real 16-frame stack of this binary, with a different
// (real, symbolizable) innermost address for each site.
std::vector<StackId> MakeCallSites(Engine& engine) {
  uintptr_t frames[kMaxStackFrames];
  int n = CaptureStack(frames, 16);
  uintptr_t begin = 0, end = 0;
  ModuleTextRange(reinterpret_cast<const void*>(&MakeCallSites), &begin, &end);
  std::vector<StackId> ids;
  for (int site = 0; site < kCallSites; ++site) {
    frames[0] = begin + 64 + static_cast<uintptr_t>(site) * 256;
    ids.push_back(engine.depot().Put(frames, n));
  }
  return ids;
}

Engine& LoadedEngine() {
  static Engine* const engine = [] {
    Options o;
    o.print_errors = false;
    o.report = ReportFormats();  // report=none
    auto* e = new Engine(o);
    e->NoteDevice(0, "Bench GPU", uint64_t{80} << 30);
    std::vector<StackId> sites = MakeCallSites(*e);
    for (int i = 0; i < kAllocations; ++i) {
      AllocEvent event;
      event.api = i % 10 == 0 ? Api::kCudaMallocAsync : Api::kCudaMalloc;
      event.address = kBase + uint64_t(i) * 4096;
      event.bytes = 4096 + (i % 7) * 256;
      event.device = i % 2;
      event.stack = sites[i % kCallSites];
      e->OnAlloc(event);
    }
    e->BuildReport("warm-up");  // fills the symbolizer cache once
    return e;
  }();
  return *engine;
}

void BM_BuildReport(benchmark::State& state) {
  Engine& engine = LoadedEngine();
  size_t leaks = 0;
  for (auto _ : state) {
    ReportData data = engine.BuildReport("exit");
    leaks = data.leaks.size();
    benchmark::DoNotOptimize(data);
  }
  state.counters["leak_sites"] = static_cast<double>(leaks);
}
BENCHMARK(BM_BuildReport)->Unit(benchmark::kMillisecond);

void BM_RenderJson(benchmark::State& state) {
  const ReportData data = LoadedEngine().BuildReport("exit");
  size_t bytes = 0;
  for (auto _ : state) {
    std::string json = RenderJson(data);
    bytes = json.size();
    benchmark::DoNotOptimize(json);
  }
  state.counters["bytes"] = static_cast<double>(bytes);
}
BENCHMARK(BM_RenderJson)->Unit(benchmark::kMillisecond);

void BM_RenderText(benchmark::State& state) {
  const ReportData data = LoadedEngine().BuildReport("exit");
  size_t bytes = 0;
  for (auto _ : state) {
    std::string text = RenderText(data, /*max_leaks=*/0);
    bytes = text.size();
    benchmark::DoNotOptimize(text);
  }
  state.counters["bytes"] = static_cast<double>(bytes);
}
BENCHMARK(BM_RenderText)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace gmt
