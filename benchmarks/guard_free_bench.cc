// The free path of guarded blocks on the host: cudaMalloc/cudaFree churn (64
// blocks live, a kernel every 100 pairs, the GPU workload of
// benchmarks/gpu/perf_suite.sh) through the engine, with a DeviceOps that
// does no GPU work but counts what the engine asks of it. The counters are
// per free and compare with a program without the tool, whose cudaFree makes
// one synchronizing call and never waits for a check:
//   syncs_per_free        synchronizing calls (context syncs and CUDA's frees
//                         of held blocks): 1 without the tool
//   check_waits_per_free  host waits for a zone check's answer: 0 without it
//   check_launches_per_free  zone-check launches
//   cuda_allocs_per_alloc CUDA allocations per cudaMalloc: 1 without the
//                         tool; fewer with malloc_reuse, where a checked
//                         block that left the quarantine serves it
// Args: quarantine_bytes (the default 64 MiB, and 0), malloc_reuse (1, the
// default, and 0).
//
// BM_KernelCheckedChurn: a framework's pattern without a caching allocator (a
// kernel after every allocation, its argument the new block) with thousands
// of small freed blocks held in quarantine: the host cost of filling the new
// block's redzones before the launch and, with check=kernel, of finding what
// the launch reaches (a held block too: a kernel can write through a dangling
// pointer) when the set of blocks changed since the last launch. Args: the
// quarantine's bytes (256 B .. 64 KiB blocks: ~2000 held at 64 MiB),
// check=kernel (1) or the default check=sync (0), and whether the blocks are
// stream-ordered and held as tensor mode holds them (cudaMallocAsync,
// quarantine_async).
#include <benchmark/benchmark.h>

#include <cstdint>
#include <vector>

#include "benchmarks/bench_util.h"
#include "lib/engine/engine.h"
#include "lib/guard/guard_layout.h"
#include "lib/launch/launch_args.h"

namespace gmt {
namespace {

constexpr uint64_t kContext = 0x1000;
constexpr uint64_t kBase = 0x7f0000000000ull;
constexpr uint64_t kStream = 0x5000;

// The GPU as the engine sees it, without memory: fills and checks are
// recorded, a check answers once a synchronizing call or a few polls have
// passed (the tool's stream runs it meanwhile), and every zone is clean.
class CountingDeviceOps : public DeviceOps {
 public:
  uint64_t syncs = 0;        // SynchronizeContext and Release
  uint64_t check_waits = 0;  // PollCheck with wait, Check
  uint64_t check_launches = 0;
  uint64_t fill_launches = 0;
  uint64_t ordered_releases = 0;  // CUDA's stream-ordered frees

  bool Fill(uint64_t, uint64_t, absl::Span<const GmtZone>) override {
    ++fill_launches;
    return true;
  }
  bool OrderAfterFills(uint64_t, uint64_t) override { return true; }
  bool Check(uint64_t, uint64_t, absl::Span<const GmtZone> zones,
             std::vector<GmtZoneResult>* results) override {
    ++check_waits;
    ++check_launches;
    results->assign(zones.size(), GmtZoneResult{});
    return true;
  }
  uint64_t CheckAsync(uint64_t, uint64_t,
                      absl::Span<const GmtZone> zones) override {
    ++check_launches;
    zones_[next_] = zones.size();
    polls_left_[next_] = kPollsToAnswer;
    return next_++;
  }
  Poll PollCheck(uint64_t ticket, bool wait,
                 std::vector<GmtZoneResult>* results) override {
    auto it = zones_.find(ticket);
    if (it == zones_.end()) return Poll::kFailed;
    if (wait) {
      ++check_waits;
    } else if (synced_up_to_ < ticket && --polls_left_[ticket] > 0) {
      return Poll::kPending;
    }
    results->assign(it->second, GmtZoneResult{});
    zones_.erase(it);
    polls_left_.erase(ticket);
    return Poll::kDone;
  }
  int SynchronizeContext(uint64_t) override {
    ++syncs;
    synced_up_to_ = next_ - 1;
    return 0;
  }
  int Release(Api, uint64_t, uint64_t) override {
    ++syncs;  // CUDA's free synchronizes the device
    synced_up_to_ = next_ - 1;
    return 0;
  }
  int ReleaseOrdered(uint64_t, uint64_t, uint64_t) override {
    ++ordered_releases;
    return 0;
  }
  bool Read(uint64_t, uint64_t, void*, uint64_t) override { return false; }
  bool Write(uint64_t, uint64_t, const void*, uint64_t) override {
    return false;
  }
  bool StreamCapturing(uint64_t) override { return false; }
  void ForgetContext(uint64_t) override {}

 private:
  static constexpr int kPollsToAnswer = 4;
  uint64_t next_ = 1;
  uint64_t synced_up_to_ = 0;
  absl::flat_hash_map<uint64_t, size_t> zones_;
  absl::flat_hash_map<uint64_t, int> polls_left_;
};

// The engine's work alone: no stacks, nothing printed, no report.
Options QuietOptions() {
  Options o;
  o.stack_depth = 0;
  o.print_errors = false;
  o.report = ReportFormats();  // report=none
  return o;
}

// The program's allocations as the engine hears of them: sizes from a fixed
// xorshift sequence, 256 B and up, guarded as the engine plans, at addresses
// never reused (the engine's view only, no memory behind them).
class Allocations {
 public:
  explicit Allocations(Engine& engine) : engine_(engine) {}

  // A block of 256 .. 256 + range - 1 bytes; returns the program's pointer.
  // Through Engine::AllocateLinear, as the allocation shims go: a checked
  // block may serve it instead of "CUDA" (counted in cuda_allocs()).
  uint64_t Next(uint64_t range, Api api = Api::kCudaMalloc,
                uint64_t stream = 0) {
    sizes_ ^= sizes_ << 13;
    sizes_ ^= sizes_ >> 7;
    sizes_ ^= sizes_ << 17;
    const uint64_t bytes = 256 + sizes_ % range;
    GuardedAllocation a = engine_.AllocateLinear(
        api, bytes, stream,
        [&](uint64_t n, uint64_t* raw) {
          ++cuda_allocs_;
          *raw = next_raw_;
          next_raw_ += (n + 4095) / 4096 * 4096;
          return 0;
        },
        /*may_guard=*/true, kContext);
    AllocEvent e;
    e.api = api;
    e.bytes = bytes;
    e.device = 0;
    e.context = kContext;
    e.stream = stream;
    e.raw_address = a.raw;
    e.raw_bytes = a.raw_bytes;
    e.address = a.user;
    engine_.OnAlloc(e);
    last_bytes_ = bytes;
    return e.address;
  }
  uint64_t last_bytes() const { return last_bytes_; }
  uint64_t cuda_allocs() const { return cuda_allocs_; }

 private:
  Engine& engine_;
  uint64_t next_raw_ = kBase;
  uint64_t sizes_ = 0x2545F4914F6CDD1Dull;
  uint64_t last_bytes_ = 0;
  uint64_t cuda_allocs_ = 0;
};

void BM_GuardedChurnFreePath(benchmark::State& state) {
  SetAbslDeadlockDetection(false);
  Options o = QuietOptions();
  o.quarantine_bytes = state.range(0);
  o.malloc_reuse = state.range(1) != 0;
  CountingDeviceOps ops;
  Engine engine(o, &ops);
  constexpr int kWindow = 64;
  std::vector<uint64_t> window(kWindow, 0);
  Allocations allocations(engine);
  uint64_t frees = 0;
  uint64_t i = 0;
  for (auto _ : state) {
    uint64_t& slot = window[i % kWindow];
    if (slot != 0) {
      FreeTicket t = engine.BeginFree(Api::kCudaFree, slot, kNoStack);
      engine.EndFree(t, true, 0, "cudaSuccess");
      if (!t.held) ++ops.syncs;  // CUDA's own free synchronizes
      ++frees;
    }
    slot = allocations.Next(1 << 20);
    if (++i % 100 == 0) {
      engine.BeforeLaunch(kContext, 0);
      engine.AfterLaunch(kContext, 0, 1);
    }
  }
  const double n = frees > 0 ? static_cast<double>(frees) : 1.0;
  state.counters["syncs_per_free"] = static_cast<double>(ops.syncs) / n;
  state.counters["check_waits_per_free"] =
      static_cast<double>(ops.check_waits) / n;
  state.counters["check_launches_per_free"] =
      static_cast<double>(ops.check_launches) / n;
  state.counters["cuda_allocs_per_alloc"] =
      static_cast<double>(allocations.cuda_allocs()) /
      static_cast<double>(std::max<uint64_t>(1, i));
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_GuardedChurnFreePath)
    ->ArgNames({"quarantine_bytes", "malloc_reuse"})
    ->Args({64 << 20, 1})
    ->Args({64 << 20, 0})
    ->Args({0, 1})
    ->Iterations(200000);

void BM_KernelCheckedChurn(benchmark::State& state) {
  SetAbslDeadlockDetection(false);
  Options o = QuietOptions();
  o.check = state.range(1) != 0 ? CheckLevel::kKernel : CheckLevel::kSync;
  o.quarantine_bytes = state.range(0);
  // Tensor mode's stream-ordered blocks (cudaMallocAsync on one stream),
  // held in quarantine as torch=1 holds them.
  const bool ordered = state.range(2) != 0;
  o.quarantine_async = ordered;
  const Api alloc_api = ordered ? Api::kCudaMallocAsync : Api::kCudaMalloc;
  const Api free_api = ordered ? Api::kCudaFreeAsync : Api::kCudaFree;
  const uint64_t stream = ordered ? kStream : 0;
  CountingDeviceOps ops;
  Engine engine(o, &ops);
  constexpr int kWindow = 64;
  std::vector<uint64_t> window(kWindow, 0);
  Allocations allocations(engine);
  uint64_t i = 0;
  // The kernel's packed parameter buffer: the new block, and a count.
  struct Params {
    uint64_t block;
    uint64_t count;
  } params{};
  size_t params_size = sizeof(params);
  void* extra[] = {reinterpret_cast<void*>(kLaunchParamBufferPointer), &params,
                   reinterpret_cast<void*>(kLaunchParamBufferSize),
                   &params_size, reinterpret_cast<void*>(kLaunchParamEnd)};
  LaunchArgs args;
  args.extra = extra;
  const uint64_t launches_before = ops.check_launches;
  const uint64_t fills_before = ops.fill_launches;
  for (auto _ : state) {
    uint64_t& slot = window[i % kWindow];
    if (slot != 0) {
      FreeTicket t = engine.BeginFree(free_api, slot, kNoStack, stream);
      engine.EndFree(t, true, 0, "cudaSuccess");
    }
    slot = allocations.Next(64 << 10, alloc_api, stream);
    params = {slot, allocations.last_bytes() / 4};
    engine.BeforeLaunch(kContext, stream);
    engine.AfterLaunch(kContext, stream, 1, &args);
    ++i;
  }
  // The GPU work each program kernel brings along: the tool's launches and
  // CUDA frees (what the host side cannot show).
  const double kernels = static_cast<double>(i > 0 ? i : 1);
  state.counters["check_launches_per_kernel"] =
      static_cast<double>(ops.check_launches - launches_before) / kernels;
  state.counters["fill_launches_per_kernel"] =
      static_cast<double>(ops.fill_launches - fills_before) / kernels;
  state.counters["releases_per_kernel"] =
      static_cast<double>(ops.syncs + ops.ordered_releases) / kernels;
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_KernelCheckedChurn)
    ->ArgNames({"quarantine_bytes", "check_kernel", "stream_ordered"})
    ->Args({64 << 20, 1, 0})
    ->Args({0, 1, 0})
    ->Args({64 << 20, 0, 0})
    ->Args({64 << 20, 0, 1})
    ->Args({64 << 20, 1, 1})
    ->Iterations(50000);

// BM_SyncCheckWithHeldBlocks: the host cost of one synchronization's check
// (check=sync, the default: every zone of every block, held ones whole) with
// ~2000 small blocks held in a 64 MiB quarantine and 64 live: an inference
// loop that reads a result back every step pays it each time. Arg: 1 when
// a block is allocated and freed between synchronizations (the zone list
// changes), 0 when nothing changes.
void BM_SyncCheckWithHeldBlocks(benchmark::State& state) {
  SetAbslDeadlockDetection(false);
  Options o = QuietOptions();
  o.quarantine_bytes = 64 << 20;
  CountingDeviceOps ops;
  Engine engine(o, &ops);
  Allocations allocations(engine);
  auto alloc = [&] { return allocations.Next(64 << 10); };
  auto free = [&](uint64_t address) {
    FreeTicket t = engine.BeginFree(Api::kCudaFree, address, kNoStack);
    engine.EndFree(t, true, 0, "cudaSuccess");
  };
  for (int i = 0; i < 64; ++i) alloc();
  for (int i = 0; i < 4000; ++i) free(alloc());  // fills the quarantine
  engine.BeforeLaunch(kContext, 0);              // their fills
  engine.OnSynchronized(kContext);
  const bool churn = state.range(0) != 0;
  for (auto _ : state) {
    if (churn) free(alloc());
    engine.OnStreamSynchronized(kContext, 0);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_SyncCheckWithHeldBlocks)
    ->ArgName("churn")
    ->Arg(0)
    ->Arg(1)
    ->Iterations(5000);

}  // namespace
}  // namespace gmt
