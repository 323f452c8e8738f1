// Host cost of one per-kernel guard check (check=kernel): DriverDeviceOps
// enqueuing the check of two redzones on a program stream and reading its
// answer, through
//
//   inline        CheckAfterKernel with the context vouched for: one launch
//                 of gmt_check_zones_inline, the answer read from host memory
//   inline_scope  the same without that promise (the context made current)
//   table         the zone-table path every check took before: slot,
//                 staging, memset, copy, launch, copy, event (CheckAsync of
//                 the same two zones plus empty ones, more zones than one
//                 inline launch holds, which sends it there)
//
// and prints table/inline, the factor the inline path saves per check. The
// driver is whatever libcuda.so.1 the loader finds: the CPU test double
// (LD_LIBRARY_PATH=<build>/tests/fake_cuda/lib, where kernels run on the host
// at launch) or a real one, where the figure includes the GPU's own pace once
// the launch queue is full. Checks are answered in batches of kBatch, as the
// guard manager polls them at later launches.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "lib/platform/driver_device_ops.h"
#include "tests/kernels/test_driver.h"

namespace gmt {
namespace {

constexpr size_t kBatch = 64;

struct Fixture {
  gmt_test::TestDriver driver;
  DriverDeviceOps ops;
  CUdeviceptr block = 0;
  CUstream stream = nullptr;
  std::vector<GmtZone> zones;
  std::vector<GmtZone> table_zones;  // the same, padded past the inline limit
  std::string why;
  bool ok = false;

  Fixture() {
    ok = driver.Open(&why) && driver.mem_alloc(&block, 8192) == CUDA_SUCCESS &&
         driver.stream_create(&stream, CU_STREAM_NON_BLOCKING) == CUDA_SUCCESS;
    if (!ok) return;
    // A 1000-byte block's front and tail redzones.
    zones = {{block, 512, 0xcb, 0}, {block + 512 + 1000, 536, 0xcb, 0}};
    table_zones = zones;
    table_zones.resize(GMT_INLINE_MAX_ZONES + 1, GmtZone{block, 0, 0xcb, 0});
    ok = ops.Fill(context(), 0, zones) &&
         ops.SynchronizeContext(context()) == CUDA_SUCCESS;
    if (!ok) why = "the guard-zone fill failed";
  }
  uint64_t context() const {
    return reinterpret_cast<uint64_t>(driver.context);
  }
};

Fixture& F() {
  static Fixture* const fixture = new Fixture();
  return *fixture;
}

enum Path : int { kInline = 0, kInlineScope = 1, kTable = 2 };

void BM_KernelCheck(benchmark::State& state) {
  Fixture& f = F();
  if (!f.ok) {
    state.SkipWithError(f.why.c_str());
    return;
  }
  const auto path = static_cast<Path>(state.range(0));
  const uint64_t stream = reinterpret_cast<uint64_t>(f.stream);
  std::vector<uint64_t> tickets;
  tickets.reserve(kBatch);
  std::vector<GmtZoneResult> results;
  auto drain = [&] {
    for (uint64_t t : tickets) {
      if (f.ops.PollCheck(t, /*wait=*/true, &results) !=
          DeviceOps::Poll::kDone) {
        state.SkipWithError("a check did not answer kDone");
      }
    }
    tickets.clear();
  };
  for (auto _ : state) {
    const uint64_t ticket =
        path == kTable
            ? f.ops.CheckAsync(f.context(), stream, f.table_zones)
            : f.ops.CheckAfterKernel(f.context(), stream, f.zones,
                                     /*context_current=*/path == kInline);
    if (ticket == 0) {
      state.SkipWithError("the check could not be enqueued");
      break;
    }
    tickets.push_back(ticket);
    if (tickets.size() == kBatch) drain();
  }
  drain();
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_KernelCheck)
    ->ArgName("path")
    ->Arg(kInline)
    ->Arg(kInlineScope)
    ->Arg(kTable);

// The console output plus, at the end, each path's time per check against
// the inline path's.
class RatioReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& run : runs) {
      if (run.error_occurred || run.iterations == 0) continue;
      ns_[run.benchmark_name()] =
          run.GetAdjustedRealTime();  // ns per iteration (the default unit)
    }
  }
  void Finalize() override {
    ConsoleReporter::Finalize();
    const auto inline_ns = ns_.find("BM_KernelCheck/path:0");
    if (inline_ns == ns_.end() || inline_ns->second <= 0) return;
    for (const auto& [name, ns] : ns_) {
      std::printf("%-28s %10.0f ns/check  %5.2fx the inline path\n",
                  name.c_str(), ns, ns / inline_ns->second);
    }
  }

 private:
  std::map<std::string, double> ns_;
};

}  // namespace
}  // namespace gmt

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  gmt::RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  return 0;
}
