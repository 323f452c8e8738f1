// Guard zones on the host: layout policy, the engine's guarded alloc/free
// protocol, lazy fills, checks at sync/kernel/exit, quarantine and eviction,
// API bounds and reports — with HostDeviceOps standing in for the GPU, so
// "device" memory is host memory the test corrupts by hand.
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>

#include "gtest/gtest.h"
#include "lib/engine/engine.h"
#include "lib/guard/guard_layout.h"
#include "lib/launch/launch_args.h"
#include "lib/launch/param_layout.h"
#include "lib/report/report.h"
#include "tests/unit/host_device_ops.h"

namespace gmt {
namespace {

constexpr uint64_t kContext = 0x1000;
constexpr uint64_t kStream = 0x2000;

Options GuardOptions(CheckLevel check = CheckLevel::kSync,
                     int64_t quarantine = 1 << 20) {
  Options o;
  o.print_errors = false;
  o.symbolize = false;
  o.stack_depth = 0;
  o.report = ReportFormats();  // report=none
  o.check = check;
  o.quarantine_bytes = quarantine;
  return o;
}

// ---- Layout
// -------------------------------------------------------------------

TEST(GuardLayoutTest, FrontKeepsAlignmentAndTailCoversSlackPlusZone) {
  GuardPolicy p = GuardPolicy::FromOptions(GuardOptions());
  GuardLayout l = PlanLinear(p, 1000);
  // 512: the alignment programs get from cudaMalloc (textureAlignment).
  EXPECT_EQ(l.front, 512u);
  EXPECT_EQ(l.front % 512, 0u);
  // 1000 rounds to 1024 (24 bytes of slack), then a 4 KiB zone.
  EXPECT_EQ(l.raw_bytes, 512u + 1024u + 4096u);
}

// CUDA starts a block over 1 MiB on a 2 MiB page; the user's start under
// the tool stays on a host page (a dma-buf of it must start on one) and a
// 64 KiB GPU page (GPUDirect pinning), and the raw block is over 1 MiB too,
// so CUDA starts it on its 2 MiB page.
TEST(GuardLayoutTest, ABlockOverOneMiBKeepsItsStartOnAHostPage) {
  GuardPolicy p = GuardPolicy::FromOptions(GuardOptions());
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  ASSERT_EQ(p.host_page, page);
  for (uint64_t bytes : {(uint64_t{1} << 20) + 1, uint64_t{4} << 20,
                         (uint64_t{64} << 20) + 100}) {
    GuardLayout l = PlanLinear(p, bytes);
    EXPECT_EQ(l.front % page, 0u) << bytes;
    EXPECT_EQ(l.front % (64 << 10), 0u) << bytes;
    EXPECT_GE(l.front, p.front) << bytes;
    EXPECT_GE(l.raw_bytes, l.front + bytes) << bytes;
  }
  // Up to 1 MiB CUDA shares pages: the front stays the option's 512.
  EXPECT_EQ(PlanLinear(p, uint64_t{1} << 20).front, 512u);
  // No front zone asked for: none given.
  p.front = 0;
  EXPECT_EQ(PlanLinear(p, uint64_t{4} << 20).front, 0u);
}

TEST(GuardLayoutTest, TailZoneAdaptsToSizeWithinBounds) {
  GuardPolicy p = GuardPolicy::FromOptions(GuardOptions());
  EXPECT_EQ(TailZoneBytes(p, 1), 4096u);
  EXPECT_EQ(TailZoneBytes(p, 1 << 20), 65536u);  // size / 16
  EXPECT_EQ(TailZoneBytes(p, uint64_t{1} << 34), uint64_t{1} << 20);  // max
}

TEST(GuardLayoutTest, SkipListAndFamilies) {
  Options o = GuardOptions();
  o.guard_skip = {GuardFamily::kManaged, GuardFamily::kAsync};
  GuardPolicy p = GuardPolicy::FromOptions(o);
  EXPECT_TRUE(p.Guards(Api::kCudaMalloc));
  EXPECT_TRUE(p.Guards(Api::kCuMemAllocPitch));
  EXPECT_FALSE(p.Guards(Api::kCudaMallocManaged));
  EXPECT_FALSE(p.Guards(Api::kCuMemAllocAsync));
  EXPECT_FALSE(p.Guards(Api::kCudaMallocHost));  // host memory: never
  o.guard = false;
  EXPECT_FALSE(GuardPolicy::FromOptions(o).Guards(Api::kCudaMalloc));
}

TEST(GuardLayoutTest, PitchedRowsLeaveFrontAndTail) {
  GuardPolicy p = GuardPolicy::FromOptions(GuardOptions());
  uint64_t extra = PlanExtraRows(p, 1024, 7);
  EXPECT_EQ(extra, 1u + 4u);  // 256 B front -> 1 row; 4 KiB tail -> 4 rows
  EXPECT_EQ(FrontRows(p, 1024, extra), 1u);
  EXPECT_EQ(FrontRows(p, 1024, 1), 0u);  // no room: tail only
}

// ---- Engine with HostDeviceOps
// ---------------------------------------------------

class GuardTest : public ::testing::Test {
 protected:
  // A fresh engine (the previous one, if any, stopped first).
  void Start(Options options) {
    Stop();
    ops_ = std::make_unique<HostDeviceOps>();
    engine_ = std::make_unique<Engine>(options, ops_.get());
  }
  void SetUp() override { Start(GuardOptions()); }
  void TearDown() override { Stop(); }
  void Stop() {
    if (ops_ == nullptr) return;
    // Blocks still live or held are host memory of ours.
    engine_.reset();
    EXPECT_EQ(ops_->invalid_releases, 0);  // never a double free
    for (uint64_t raw : ops_->device_blocks) {
      std::free(reinterpret_cast<void*>(raw));
    }
    ops_.reset();
    raw_of_.clear();
  }

  // What the allocation shims do: plan, "allocate" the raw block, record.
  uint8_t* Alloc(uint64_t bytes, Api api = Api::kCudaMalloc,
                 uint64_t stream = 0) {
    std::optional<GuardLayout> plan = engine_->PlanGuard(api, bytes, stream);
    const uint64_t raw_bytes = plan ? plan->raw_bytes : bytes;
    void* raw = std::aligned_alloc(256, (raw_bytes + 255) / 256 * 256);
    std::memset(raw, 0x11, raw_bytes);  // CUDA memory holds old data
    ops_->device_blocks.insert(reinterpret_cast<uint64_t>(raw));
    AllocEvent e;
    e.api = api;
    e.bytes = bytes;
    e.device = 0;
    e.context = kContext;
    e.stream = stream;
    if (plan) {
      e.raw_address = reinterpret_cast<uint64_t>(raw);
      e.raw_bytes = plan->raw_bytes;
      e.address = e.raw_address + plan->front;
    } else {
      e.address = reinterpret_cast<uint64_t>(raw);
    }
    engine_->OnAlloc(e);
    raw_of_[e.address] = reinterpret_cast<uint64_t>(raw);
    return reinterpret_cast<uint8_t*>(e.address);
  }

  // What GuardedAlloc does for a cudaMallocAsync: Engine::AllocateLinear,
  // which may serve it with a block held for reuse instead of calling
  // "CUDA" (counted in cuda_allocs_), then the record.
  uint8_t* AllocAsync(uint64_t bytes, uint64_t stream = kStream) {
    return AllocThroughEngine(Api::kCudaMallocAsync, bytes, stream);
  }
  // The same for a cudaMalloc, which a checked block may serve too
  // (malloc_reuse).
  uint8_t* AllocDevice(uint64_t bytes) {
    return AllocThroughEngine(Api::kCudaMalloc, bytes, 0);
  }
  uint8_t* AllocThroughEngine(Api api, uint64_t bytes, uint64_t stream) {
    GuardedAllocation a = engine_->AllocateLinear(
        api, bytes, stream,
        [&](uint64_t n, uint64_t* raw) {
          ++cuda_allocs_;
          void* p = std::aligned_alloc(256, (n + 255) / 256 * 256);
          std::memset(p, 0x11, n);  // CUDA memory holds old data
          ops_->device_blocks.insert(reinterpret_cast<uint64_t>(p));
          *raw = reinterpret_cast<uint64_t>(p);
          return 0;
        },
        /*may_guard=*/true, kContext);
    EXPECT_EQ(a.result, 0);
    EXPECT_TRUE(a.guarded);
    AllocEvent e;
    e.api = api;
    e.bytes = bytes;
    e.device = 0;
    e.context = kContext;
    e.stream = stream;
    e.raw_address = a.raw;
    e.raw_bytes = a.raw_bytes;
    e.address = a.user;
    engine_->OnAlloc(e);
    raw_of_[e.address] = a.raw;
    return reinterpret_cast<uint8_t*>(e.address);
  }
  int cuda_allocs_ = 0;

  // What the free shims do. Returns whether CUDA was called (not held).
  bool Free(uint8_t* p, Api api = Api::kCudaFree, uint64_t stream = 0) {
    FreeTicket t = engine_->BeginFree(api, reinterpret_cast<uint64_t>(p),
                                      kNoStack, stream);
    engine_->EndFree(t, true, 0, "cudaSuccess");
    if (!t.held && t.state == FreeTicket::State::kRemoved &&
        ops_->device_blocks.erase(t.real_address) == 1) {
      std::free(reinterpret_cast<void*>(t.real_address));  // CUDA's free
    }
    return !t.held;
  }

  void Launch(const char* kernel, uint64_t stream = kStream) {
    engine_->BeforeLaunch(kContext, stream);
    engine_->AfterLaunch(kContext, stream, engine_->InternKernel(kernel));
  }

  std::vector<ErrorRecord> Errors() {
    return engine_->BuildReport("request").errors;
  }

  // After a synchronization the report holds one error: an underflow of
  // every byte from offset `first` (negative) to -1.
  void ExpectOneUnderflowAtTheNextSync(int64_t first) {
    engine_->OnSynchronized(kContext);
    std::vector<ErrorRecord> errors = Errors();
    ASSERT_EQ(errors.size(), 1u);
    EXPECT_EQ(errors[0].kind, ErrorKind::kOobUnderflow);
    EXPECT_EQ(errors[0].first_offset, first);
    EXPECT_EQ(errors[0].last_offset, -1);
    EXPECT_EQ(errors[0].changed_bytes, static_cast<uint64_t>(-first));
  }

  // What one free cost on the host: synchronizing calls (the one a cudaFree
  // owes the program: a context sync, or CUDA's free of a block the tool
  // held) and waits for a zone check's answer.
  struct FreeCost {
    size_t syncs = 0;
    int check_waits = 0;
    bool cuda_called = false;
  };
  FreeCost FreeAndCount(uint8_t* p) {
    const size_t syncs_before = ops_->syncs + ops_->released.size();
    const int waits_before = ops_->waits;
    FreeCost cost;
    cost.cuda_called = Free(p);
    cost.syncs = ops_->syncs + ops_->released.size() - syncs_before;
    cost.check_waits = ops_->waits - waits_before;
    return cost;
  }

  // Frees blocks of `bytes` (canaries written) until a release batch's check
  // is enqueued and not yet run.
  void FreeUntilACheckIsInFlight(uint64_t bytes) {
    for (int i = 0; i < 64 && ops_->checks_in_flight() == 0; ++i) {
      uint8_t* p = Alloc(bytes);
      Launch("k");
      Free(p);
    }
    ASSERT_EQ(ops_->checks_in_flight(), 1u);
  }

  // How often CUDA got the raw block of `user` back (its front depends on
  // its size: whole 64 KiB pages for a block over 1 MiB).
  size_t TimesReleased(const void* user) const {
    const auto raw = raw_of_.find(reinterpret_cast<uint64_t>(user));
    if (raw == raw_of_.end()) return 0;
    return std::count(ops_->released.begin(), ops_->released.end(),
                      raw->second);
  }

  std::unique_ptr<HostDeviceOps> ops_;
  std::unique_ptr<Engine> engine_;
  std::map<uint64_t, uint64_t> raw_of_;  // user address -> raw, per Alloc
};

TEST_F(GuardTest, UserPointerIsAlignedAndInsideTheRawBlock) {
  uint8_t* p = Alloc(1000);
  EXPECT_EQ(reinterpret_cast<uint64_t>(p) % 256, 0u);
  std::optional<BlockView> v =
      engine_->FindBlock(reinterpret_cast<uint64_t>(p));
  ASSERT_TRUE(v);
  EXPECT_TRUE(v->guarded);
  EXPECT_EQ(v->user_bytes, 1000u);
  EXPECT_EQ(v->raw_address + 512, v->user_address);
  // An address inside a redzone still finds its block (for the user's view).
  EXPECT_TRUE(engine_->FindBlock(reinterpret_cast<uint64_t>(p) - 8));
  EXPECT_TRUE(engine_->FindBlock(reinterpret_cast<uint64_t>(p) + 1000));
}

TEST_F(GuardTest, NoGpuWorkPerAllocationUntilALaunch) {
  uint8_t* p = Alloc(4096);
  EXPECT_EQ(ops_->fills, 0);
  Free(p);
  EXPECT_EQ(ops_->fills, 0);
  EXPECT_EQ(ops_->checks, 0);
  Launch("k");
  // One launch flushes both the canaries and the freed fill, in one call.
  EXPECT_EQ(ops_->fills, 1);
  EXPECT_EQ(ops_->orders, 1);
}

TEST_F(GuardTest, TailOverrunInsideTheSlackIsReportedWithExactOffsets) {
  uint8_t* p = Alloc(1000);
  Launch("fill_overrun(float*, long)");
  std::memset(p + 1000, 0, 12);  // bytes 1000..1011: inside the 1024 slack
  engine_->OnSynchronized(kContext);
  std::vector<ErrorRecord> errors = Errors();
  ASSERT_EQ(errors.size(), 1u);
  const ErrorRecord& e = errors[0];
  EXPECT_EQ(e.kind, ErrorKind::kOobWrite);
  EXPECT_EQ(e.first_offset, 1000);
  EXPECT_EQ(e.last_offset, 1011);
  EXPECT_EQ(e.offset, 1000);
  EXPECT_EQ(e.changed_bytes, 12u);
  EXPECT_EQ(e.bytes, 12u);
  EXPECT_EQ(e.check, "sync");
  ASSERT_TRUE(e.allocation);
  EXPECT_EQ(e.allocation->bytes, 1000u);
  ASSERT_EQ(e.kernels.size(), 1u);
  EXPECT_EQ(e.kernels[0], "fill_overrun(float*, long)");
}

TEST_F(GuardTest, OneOverrunIsReportedOnce) {
  uint8_t* p = Alloc(256);
  Launch("k");
  p[300] = 7;
  engine_->OnSynchronized(kContext);
  engine_->OnSynchronized(kContext);  // re-armed: clean now
  Launch("k2");
  engine_->OnSynchronized(kContext);
  EXPECT_EQ(Errors().size(), 1u);
}

TEST_F(GuardTest, UnderflowHasNegativeOffsets) {
  uint8_t* p = Alloc(512);
  Launch("k");
  std::memset(p - 16, 1, 16);
  ExpectOneUnderflowAtTheNextSync(-16);
}

// A block over 1 MiB has 64 KiB in front (its start on a GPU page), of
// which the option's 512 bytes next to the start are canaries: an
// underflow there is found as in a small block, and the fill writes no
// more than a small block's front.
TEST_F(GuardTest, ALargeBlocksFrontCanariesAreTheLastBytesBeforeItsStart) {
  uint8_t* p = Alloc(4 << 20);
  ASSERT_EQ(
      reinterpret_cast<uint64_t>(p) - raw_of_[reinterpret_cast<uint64_t>(p)],
      64u << 10);
  p[-(64 << 10)] = 0x11;  // what CUDA's memory held before: never written
  Launch("k");
  EXPECT_EQ(p[-(64 << 10)], 0x11);
  EXPECT_EQ(p[-513], 0x11);
  EXPECT_NE(p[-512], 0x11);  // a canary
  std::memset(p - 8, 1, 8);
  ExpectOneUnderflowAtTheNextSync(-8);
}

TEST_F(GuardTest, OverrunOfAFewKibIntoTheTailZone) {
  uint8_t* p = Alloc(1 << 20);
  Launch("k");
  std::memset(p + (1 << 20), 3, 3072);
  engine_->OnSynchronized(kContext);
  std::vector<ErrorRecord> errors = Errors();
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].first_offset, 1 << 20);
  EXPECT_EQ(errors[0].last_offset, (1 << 20) + 3071);
  EXPECT_EQ(errors[0].changed_bytes, 3072u);
}

TEST_F(GuardTest, WriteAfterFreeInQuarantineIsUafWithTheFreeRecord) {
  uint8_t* p = Alloc(2048);
  Launch("k");
  EXPECT_FALSE(Free(p));      // held: CUDA not called
  EXPECT_EQ(ops_->syncs, 1);  // cudaFree's implicit device sync kept
  Launch("writer(int*)");     // the freed fill lands before this kernel
  p[10] = 0;
  p[20] = 0;
  engine_->OnSynchronized(kContext);
  std::vector<ErrorRecord> errors = Errors();
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].kind, ErrorKind::kUafWrite);
  EXPECT_EQ(errors[0].first_offset, 10);
  EXPECT_EQ(errors[0].last_offset, 20);
  EXPECT_EQ(errors[0].changed_bytes, 2u);
  ASSERT_TRUE(errors[0].previous_free);
  EXPECT_EQ(errors[0].previous_free->free_api, Api::kCudaFree);
  // Both kernels ran since the last clean check; the writer is newest.
  ASSERT_FALSE(errors[0].kernels.empty());
  EXPECT_EQ(errors[0].kernels.back(), "writer(int*)");
}

// A stream-ordered free's check owns a copy of the block while CUDA frees
// it; when CUDA refuses the free the block stays live, and what that check
// found is not found again (its canaries are rewritten, as for any finding).
TEST_F(GuardTest, AnOverrunFoundByTheCheckOfARefusedFreeIsReportedOnce) {
  uint8_t* p = AllocAsync(4000);
  Launch("k");
  p[4001] = 1;
  FreeTicket t = engine_->BeginFree(
      Api::kCudaFreeAsync, reinterpret_cast<uint64_t>(p), kNoStack, kStream);
  engine_->EndFree(t, false, 1, "cudaErrorInvalidValue");
  engine_->OnSynchronized(kContext);
  std::vector<ErrorRecord> errors = Errors();
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].kind, ErrorKind::kOobWrite);
  EXPECT_EQ(errors[0].first_offset, 4001);
  Launch("k");
  engine_->OnSynchronized(kContext);
  EXPECT_EQ(Errors().size(), 1u);
  EXPECT_EQ(p[4001], kCanaryByte);
}

// freed_check_bytes: a freed block larger than it is poisoned and checked
// at its two ends only (half each), the fill and the check over the same
// bytes; a smaller one whole.
TEST_F(GuardTest, FreedCheckBytesPoisonAndCheckTheEndsOfALargeFreedBlock) {
  Options o = GuardOptions();
  o.freed_check_bytes = 4000;  // rounded up to 4096: 2 KiB at each end
  Start(o);
  constexpr int kBytes = 64 * 1024;
  uint8_t* large = Alloc(kBytes);
  uint8_t* small = Alloc(4000);
  std::memset(large, 0x11, kBytes);
  std::memset(small, 0x11, 4000);
  Launch("k");
  EXPECT_FALSE(Free(large));
  EXPECT_FALSE(Free(small));
  const uint64_t checked = engine_->guard().Stats().bytes_checked;
  Launch("k");  // the freed patterns go in before it
  EXPECT_EQ(large[0], kFreedByte);
  EXPECT_EQ(large[2047], kFreedByte);
  EXPECT_EQ(large[2048], 0x11);  // left as the program wrote it
  EXPECT_EQ(large[kBytes - 2049], 0x11);
  EXPECT_EQ(large[kBytes - 2048], kFreedByte);
  EXPECT_EQ(large[kBytes - 1], kFreedByte);
  EXPECT_EQ(small[0], kFreedByte);
  EXPECT_EQ(small[2500], kFreedByte);
  EXPECT_EQ(small[3999], kFreedByte);
  // A write into the middle is not seen; the check reads 4 KiB of the
  // large block's freed bytes, not 64.
  large[kBytes / 2] = 0;
  engine_->OnSynchronized(kContext);
  EXPECT_TRUE(Errors().empty());
  const uint64_t read = engine_->guard().Stats().bytes_checked - checked;
  EXPECT_GE(read, 4096u + 4000u);
  EXPECT_LT(read, 4096u + 4000u + 2 * 8192u);  // and their canaries
  // Writes at both ends are one write after free, from the first change to
  // the last.
  large[100] = 0;
  large[kBytes - 10] = 0;
  engine_->OnSynchronized(kContext);
  std::vector<ErrorRecord> errors = Errors();
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].kind, ErrorKind::kUafWrite);
  EXPECT_EQ(errors[0].first_offset, 100);
  EXPECT_EQ(errors[0].last_offset, kBytes - 10);
  EXPECT_EQ(errors[0].changed_bytes, 2u);
}

// Tensor mode bounds the freed bytes by default (kTensorModeFreedCheckBytes:
// 2 MiB at each end of a larger block); freed_check_bytes=0 still asks for
// every freed byte.
TEST_F(GuardTest, TensorModePoisonsTheEndsOfALargeFreedBlockUnlessAskedForAll) {
  constexpr int kBytes = 16 << 20;
  constexpr int kHalf = static_cast<int>(kTensorModeFreedCheckBytes / 2);
  for (int64_t freed_check_bytes : {int64_t{-1}, int64_t{0}}) {
    SCOPED_TRACE(freed_check_bytes);
    Options o = GuardOptions(CheckLevel::kSync, /*quarantine=*/64 << 20);
    o.torch = true;
    o.freed_check_bytes = freed_check_bytes;
    Start(o);
    uint8_t* p = Alloc(kBytes);
    std::memset(p, 0x11, kBytes);
    Launch("k");
    EXPECT_FALSE(Free(p));
    Launch("k");  // the freed pattern goes in before it
    EXPECT_EQ(p[0], kFreedByte);
    EXPECT_EQ(p[kHalf - 1], kFreedByte);
    EXPECT_EQ(p[kBytes - kHalf], kFreedByte);
    EXPECT_EQ(p[kBytes - 1], kFreedByte);
    const uint8_t middle = freed_check_bytes == 0 ? kFreedByte : 0x11;
    EXPECT_EQ(p[kHalf], middle);
    EXPECT_EQ(p[kBytes / 2], middle);
    EXPECT_EQ(p[kBytes - kHalf - 1], middle);
    Stop();
  }
}

TEST_F(GuardTest, FreedCheckBytesSeesAWriteAtTheEndOfALargeFreedBlock) {
  Options o = GuardOptions();
  o.freed_check_bytes = 4096;
  Start(o);
  constexpr int kBytes = 64 * 1024;
  uint8_t* p = Alloc(kBytes);
  Launch("k");
  EXPECT_FALSE(Free(p));
  Launch("k");
  p[kBytes - 1] = 0;
  engine_->OnSynchronized(kContext);
  std::vector<ErrorRecord> errors = Errors();
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].kind, ErrorKind::kUafWrite);
  EXPECT_EQ(errors[0].first_offset, kBytes - 1);
  EXPECT_EQ(errors[0].last_offset, kBytes - 1);
}

TEST_F(GuardTest, QuarantineEvictsOldestBatchAndChecksIt) {
  Start(GuardOptions(CheckLevel::kSync, /*quarantine=*/64 * 1024));
  std::vector<uint8_t*> blocks;
  for (int i = 0; i < 8; ++i) blocks.push_back(Alloc(16 * 1024));
  Launch("k");
  for (uint8_t* p : blocks) Free(p);
  // 8 blocks of ~21 KiB raw each against a 64 KiB budget: the oldest went
  // back to CUDA, checked first.
  EXPECT_FALSE(ops_->released.empty());
  EXPECT_EQ(ops_->released.front(),
            reinterpret_cast<uint64_t>(blocks[0]) - 512);
  EXPECT_GE(ops_->checks, 1);
  EXPECT_TRUE(Errors().empty());
  // The quarantine keeps to its budget; what left it goes back to CUDA one
  // block per later free, as its check answers (the bound on those bytes:
  // BytesAwaitingReleaseAreBounded).
  EXPECT_LT(engine_->guard().Stats().held_bytes, 2u * 64 * 1024);
}

TEST_F(GuardTest, ChurnWithoutLaunchesCostsNoGpuWork) {
  Start(GuardOptions(CheckLevel::kSync, /*quarantine=*/64 * 1024));
  for (int i = 0; i < 100; ++i) Free(Alloc(16 * 1024));
  EXPECT_EQ(ops_->fills, 0);
  EXPECT_EQ(ops_->checks, 0);  // nothing was ever written: nothing to check
  EXPECT_GE(ops_->released.size(), 90u);
}

// ---- Frees: the check deferred, CUDA's free once it has answered
// ---------

TEST_F(GuardTest, QuarantinedFreesNeverWaitForACheck) {
  Start(GuardOptions(CheckLevel::kSync, /*quarantine=*/64 * 1024));
  ops_->deferred = true;
  std::vector<uint8_t*> blocks;
  for (int i = 0; i < 40; ++i) blocks.push_back(Alloc(16 * 1024));
  Launch("k");  // canaries written: every eviction has zones to check
  for (uint8_t* p : blocks) {
    FreeCost cost = FreeAndCount(p);
    EXPECT_FALSE(cost.cuda_called);
    EXPECT_EQ(cost.check_waits, 0);
    // Exactly the synchronization cudaFree gives, never a second one.
    EXPECT_EQ(cost.syncs, 1u);
  }
  EXPECT_GE(ops_->checks, 2);  // eviction batches, on the tool's stream
  // Evicted blocks went back to CUDA one per free, oldest first, once each.
  ASSERT_FALSE(ops_->released.empty());
  for (size_t i = 0; i < ops_->released.size(); ++i) {
    EXPECT_EQ(ops_->released[i], reinterpret_cast<uint64_t>(blocks[i]) - 512);
  }
  EXPECT_TRUE(Errors().empty());
}

TEST_F(GuardTest, AFreeReleasesAnAnsweredBlockInsteadOfSynchronizing) {
  Options o = GuardOptions(CheckLevel::kSync, /*quarantine=*/64 * 1024);
  o.malloc_reuse = false;  // every block leaving goes back to CUDA
  Start(o);
  ops_->deferred = true;
  FreeUntilACheckIsInFlight(16 * 1024);
  EXPECT_TRUE(ops_->released.empty());  // the check has not answered
  ops_->RunChecks();                    // the GPU ran it
  const int syncs = ops_->syncs;
  FreeCost cost = FreeAndCount(Alloc(16 * 1024));
  EXPECT_EQ(cost.syncs, 1u);
  EXPECT_EQ(ops_->syncs, syncs);  // CUDA's free of the oldest block was it
  EXPECT_EQ(ops_->released.size(), 1u);
}

TEST_F(GuardTest, WriteAfterFreeFoundByADeferredCheckKeepsItsDetail) {
  Start(GuardOptions(CheckLevel::kSync, /*quarantine=*/64 * 1024));
  ops_->deferred = true;
  uint8_t* a = Alloc(16 * 1024);
  Launch("k");
  EXPECT_FALSE(Free(a));
  Launch("writer(int*)");  // the freed fill lands before it
  a[5] = 0;
  FreeUntilACheckIsInFlight(16 * 1024);
  EXPECT_TRUE(Errors().empty());  // not answered yet
  ops_->RunChecks();
  Free(Alloc(16 * 1024));  // the next free collects the answer
  std::vector<ErrorRecord> errors = Errors();
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].kind, ErrorKind::kUafWrite);
  EXPECT_EQ(errors[0].check, "quarantine");
  EXPECT_EQ(errors[0].first_offset, 5);
  EXPECT_EQ(errors[0].changed_bytes, 1u);
  ASSERT_TRUE(errors[0].allocation);
  EXPECT_EQ(errors[0].allocation->address, reinterpret_cast<uint64_t>(a));
  ASSERT_TRUE(errors[0].previous_free);
  EXPECT_EQ(errors[0].previous_free->free_api, Api::kCudaFree);
  ASSERT_FALSE(errors[0].kernels.empty());
  EXPECT_EQ(errors[0].kernels.back(), "k");
  EXPECT_EQ(TimesReleased(a), 1u);
}

TEST_F(GuardTest, BytesAwaitingReleaseAreBounded) {
  constexpr uint64_t kBudget = 1 << 20;
  Start(GuardOptions(CheckLevel::kSync, kBudget));
  ops_->deferred = true;
  // The bound on bytes awaiting release is at least 16 MiB: blocks of
  // 12 MiB put two batches over it.
  for (int i = 0; i < 4; ++i) {
    uint8_t* p = Alloc(12 << 20);
    Launch("k");
    FreeCost cost = FreeAndCount(p);
    EXPECT_EQ(cost.check_waits, 0);  // answered blocks went back first
    EXPECT_LE(engine_->guard().Stats().held_bytes,
              kBudget + (uint64_t{16} << 20));
  }
  // A block larger than the bound waits for its own check at its free.
  uint8_t* big = Alloc(40 << 20);
  Launch("k");
  FreeCost cost = FreeAndCount(big);
  EXPECT_EQ(cost.check_waits, 1);
  EXPECT_EQ(TimesReleased(big), 1u);
  EXPECT_EQ(engine_->guard().Stats().release_waits, 1u);
  EXPECT_LE(engine_->guard().Stats().held_bytes,
            kBudget + (uint64_t{16} << 20));
}

TEST_F(GuardTest, OutOfMemoryReleasesBlocksAwaitingTheirCheck) {
  Start(GuardOptions(CheckLevel::kSync, /*quarantine=*/64 * 1024));
  ops_->deferred = true;
  std::vector<uint8_t*> blocks;
  for (int i = 0; i < 6; ++i) blocks.push_back(Alloc(16 * 1024));
  Launch("k");
  for (uint8_t* p : blocks) Free(p);
  ASSERT_GT(engine_->guard().HeldBytes(0), 0u);
  std::vector<GuardFinding> findings;
  const uint64_t released = engine_->guard().ReleaseQuarantine(&findings);
  EXPECT_TRUE(findings.empty());
  EXPECT_GT(released, 0u);
  EXPECT_EQ(engine_->guard().HeldBytes(0), 0u);
  EXPECT_EQ(ops_->checks_in_flight(), 0u);
  for (uint8_t* p : blocks) EXPECT_EQ(TimesReleased(p), 1u);
}

TEST_F(GuardTest, QuarantineOffChecksAtFreeWithoutWaiting) {
  Start(GuardOptions(CheckLevel::kSync, /*quarantine=*/0));
  ops_->deferred = true;
  uint8_t* p = Alloc(1000);
  Launch("k");
  p[1003] = 9;
  FreeCost cost = FreeAndCount(p);
  // Held until its check has answered; cudaFree's own sync, no wait.
  EXPECT_FALSE(cost.cuda_called);
  EXPECT_EQ(cost.syncs, 1u);
  EXPECT_EQ(cost.check_waits, 0);
  EXPECT_EQ(ops_->fills, 1);  // canaries only: no freed fill without one
  // Nothing to report before the check has run on the GPU.
  engine_->OnSynchronized(kContext);
  EXPECT_TRUE(Errors().empty());
  // The program's device-wide sync has run the tool's enqueued check too;
  // the engine, told of the sync, answers it without a wait of its own.
  ops_->RunChecks();
  const int waits = ops_->waits;
  engine_->OnSynchronized(kContext);
  EXPECT_EQ(ops_->waits, waits);
  std::vector<ErrorRecord> errors = Errors();
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].kind, ErrorKind::kOobWrite);
  EXPECT_EQ(errors[0].check, "free");
  EXPECT_EQ(errors[0].first_offset, 1003);
  ASSERT_TRUE(errors[0].previous_free);
  // The program's view: the bytes held for the check count as free.
  EXPECT_GT(engine_->guard().HeldBytes(0), 0u);
  engine_->CheckAllZones("exit");
  EXPECT_EQ(TimesReleased(p), 1u);
  EXPECT_EQ(engine_->guard().HeldBytes(0), 0u);
  EXPECT_EQ(Errors().size(), 1u);
}

TEST_F(GuardTest, QuarantineOffBlockNeverWrittenGoesStraightToCuda) {
  Start(GuardOptions(CheckLevel::kSync, /*quarantine=*/0));
  FreeCost cost = FreeAndCount(Alloc(1000));
  EXPECT_TRUE(cost.cuda_called);
  EXPECT_EQ(cost.syncs, 0u);  // CUDA's own free synchronizes
  EXPECT_EQ(ops_->checks, 0);
}

TEST_F(GuardTest, QuarantineOffChurnBatchesItsChecks) {
  Start(GuardOptions(CheckLevel::kSync, /*quarantine=*/0));
  ops_->deferred = true;
  // The workload in small: a kernel every 100 pairs, 64 live.
  std::vector<uint8_t*> window(64, nullptr);
  int frees = 0;
  for (int i = 0; i < 2000; ++i) {
    uint8_t*& slot = window[i % window.size()];
    if (slot != nullptr) {
      FreeCost cost = FreeAndCount(slot);
      EXPECT_EQ(cost.check_waits, 0);
      EXPECT_LE(cost.syncs, 1u);
      ++frees;
    }
    slot = Alloc(256 + (i * 7919) % 8192);
    if (i % 100 == 99) Launch("k");
  }
  EXPECT_LE(ops_->checks, frees / 32);  // one launch for many frees
  EXPECT_GT(ops_->checks, 0);
  for (uint8_t* p : window) Free(p);
  engine_->CheckAllZones("exit");
  EXPECT_EQ(engine_->guard().HeldBytes(0), 0u);
  EXPECT_EQ(ops_->invalid_releases, 0);  // never twice
  EXPECT_TRUE(ops_->device_blocks.empty());
  EXPECT_TRUE(Errors().empty());
}

TEST_F(GuardTest, ExitWithFreesAwaitingTheirCheckReportsAndReleasesThem) {
  Start(GuardOptions(CheckLevel::kSync, /*quarantine=*/64 * 1024));
  ops_->deferred = true;
  uint8_t* a = Alloc(16 * 1024);
  Launch("k");
  Free(a);
  FreeUntilACheckIsInFlight(16 * 1024);
  a[(16 * 1024) + 8] = 1;  // a late kernel, before the check ran
  engine_->CheckAllZones("exit");
  std::vector<ErrorRecord> errors = Errors();
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].kind, ErrorKind::kOobWrite);
  EXPECT_EQ(errors[0].check, "quarantine");
  EXPECT_TRUE(errors[0].previous_free);
  EXPECT_EQ(TimesReleased(a), 1u);
  ReportData r = engine_->BuildReport("exit");
  EXPECT_TRUE(r.leaks.empty());  // the tool's own holds are no leaks
  EXPECT_EQ(r.errors.size(), 1u);
}

TEST_F(GuardTest, TeardownWithFreesAwaitingTheirCheckReportsAndDropsThem) {
  Start(GuardOptions(CheckLevel::kSync, /*quarantine=*/64 * 1024));
  ops_->deferred = true;
  uint8_t* a = Alloc(16 * 1024);
  Launch("k");
  Free(a);
  FreeUntilACheckIsInFlight(16 * 1024);
  a[-3] = 1;
  engine_->BeforeContextTeardown(0, kContext);
  std::vector<ErrorRecord> errors = Errors();
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].kind, ErrorKind::kOobUnderflow);
  // The context's memory goes with it: CUDA is not asked to free it.
  EXPECT_EQ(TimesReleased(a), 0u);
  EXPECT_EQ(engine_->guard().HeldBytes(0), 0u);
}

TEST_F(GuardTest, KernelModeNamesExactlyTheKernel) {
  Start(GuardOptions(CheckLevel::kKernel));
  uint8_t* p = Alloc(1000);
  Launch("clean_a");
  Launch("clean_b");
  engine_->BeforeLaunch(kContext, kStream);
  p[1000] = 1;  // this kernel's write
  engine_->AfterLaunch(kContext, kStream, engine_->InternKernel("bad_kernel"));
  Launch("clean_c");
  engine_->OnSynchronized(kContext);
  std::vector<ErrorRecord> errors = Errors();
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].check, "kernel");
  ASSERT_EQ(errors[0].kernels.size(), 1u);
  EXPECT_EQ(errors[0].kernels[0], "bad_kernel");
  EXPECT_GE(ops_->async_checks, 4);
  EXPECT_EQ(ops_->checks, 1);  // the sync check, clean after re-arming
}

// ---- check=kernel: the blocks a kernel's arguments reach -----------------

// The parameter layouts the driver would give, by function handle; a handle
// it does not know answers kUnknown (an old driver).
class TestParamLayouts : public ParamLayoutSource {
 public:
  Answer Query(KernelHandleKind, const void* function,
               ParamLayout* layout) override {
    ++queries;
    auto it = layouts.find(function);
    if (it == layouts.end()) return Answer::kUnknown;
    *layout = it->second;
    return Answer::kKnown;
  }
  std::map<const void*, ParamLayout> layouts;
  int queries = 0;
};

// fill(float*, int): offsets 0 and 8.
char g_fill[] = "fill";
// copy(Args24 by value, int): the struct at 0 (24 bytes), the int at 24.
char g_copy[] = "copy";
// step(int, float): no pointer.
char g_step[] = "step";
// Not known to the "driver".
char g_mystery[] = "mystery";

class KernelScopeTest : public GuardTest {
 protected:
  void SetUp() override {
    layouts_.layouts[g_fill] = ParamLayout{{{0, 8}, {8, 4}}};
    layouts_.layouts[g_copy] = ParamLayout{{{0, 24}, {24, 4}}};
    layouts_.layouts[g_step] = ParamLayout{{{0, 4}, {4, 4}}};
    SetParamLayoutSource(&layouts_);
    Start(GuardOptions(CheckLevel::kKernel));
  }
  void TearDown() override {
    SetParamLayoutSource(nullptr);
    GuardTest::TearDown();
  }

  // A launch of `function` with `params` as the program passes them;
  // `during` runs "on the GPU" between the launch and its check.
  void LaunchWith(
      const char* function, void** params,
      const std::function<void()>& during = [] {}) {
    LaunchArgs args;
    args.kind = KernelHandleKind::kRuntime;
    args.function = function;
    args.params = params;
    engine_->BeforeLaunch(kContext, kStream);
    during();
    engine_->AfterLaunch(kContext, kStream, engine_->InternKernel(function),
                         &args);
  }

  TestParamLayouts layouts_;
};

TEST_F(KernelScopeTest, PointerArgumentChecksOnlyThatBlock) {
  uint8_t* a = Alloc(1000);
  uint8_t* b = Alloc(1000);
  Launch("warm_up");  // arms both blocks
  const int before = ops_->async_checks;
  int n = 1000;
  void* params[] = {&a, &n};
  LaunchWith(g_fill, params, [&] { b[1000] = 7; });  // not this kernel's
  EXPECT_EQ(ops_->async_checks, before + 1);
  EXPECT_EQ(ops_->last_async_zones, 2u);  // a's front and tail
  EXPECT_TRUE(Errors().empty());
  // b's overrun is still found, at the next synchronization.
  engine_->OnSynchronized(kContext);
  std::vector<ErrorRecord> errors = Errors();
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].check, "sync");
  EXPECT_EQ(errors[0].allocation->address, reinterpret_cast<uint64_t>(b));
}

// A large block's redzones are read per kernel only next to the block (8 KiB
// each side), so the check stays one small launch; an overrun deeper in the
// tail is found at the next synchronization, by the whole zone.
TEST_F(KernelScopeTest, PerKernelCheckReadsTheZonesNextToALargeBlock) {
  constexpr uint64_t kBytes = uint64_t{4} << 20;  // tail zone: 256 KiB
  uint8_t* a = Alloc(kBytes);
  uint8_t* c = Alloc(kBytes);
  Launch("warm_up");
  int n = 0;
  void* params_a[] = {&a, &n};
  LaunchWith(g_fill, params_a, [&] { a[kBytes + 100] = 7; });
  EXPECT_EQ(ops_->last_async_zones, 2u);
  EXPECT_LE(ops_->last_async_bytes, uint64_t{16} << 10);
  void* params_c[] = {&c, &n};
  LaunchWith(g_fill, params_c, [&] { c[kBytes + (100 << 10)] = 7; });
  engine_->OnSynchronized(kContext);
  std::vector<ErrorRecord> errors = Errors();
  ASSERT_EQ(errors.size(), 2u);
  for (const ErrorRecord& e : errors) {
    EXPECT_EQ(e.kind, ErrorKind::kOobWrite);
    const bool near = e.allocation->address == reinterpret_cast<uint64_t>(a);
    EXPECT_EQ(e.check, near ? "kernel" : "sync");
  }
}

TEST_F(KernelScopeTest, PointerInsideAStructArgumentCounts) {
  uint8_t* a = Alloc(1000);
  Alloc(1000);
  Launch("warm_up");
  struct Args24 {
    uint64_t count;
    uint8_t* data;  // at offset 8
    uint32_t flags;
  } s{3, a, 0};
  int n = 0;
  void* params[] = {&s, &n};
  LaunchWith(g_copy, params, [&] { a[-1] = 1; });
  EXPECT_EQ(ops_->last_async_zones, 2u);
  engine_->OnSynchronized(kContext);  // collects the kernel's check
  std::vector<ErrorRecord> errors = Errors();
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].kind, ErrorKind::kOobUnderflow);
  EXPECT_EQ(errors[0].check, "kernel");
}

TEST_F(KernelScopeTest, PointerIntoTheTailRedzoneCountsForItsBlock) {
  uint8_t* a = Alloc(1000);
  Alloc(1000);
  Launch("warm_up");
  uint8_t* end = a + 1000;  // one past the end: in the tail redzone
  int n = 0;
  void* params[] = {&end, &n};
  LaunchWith(g_fill, params, [&] { a[1010] = 1; });
  EXPECT_EQ(ops_->last_async_zones, 2u);
  engine_->OnSynchronized(kContext);  // collects the kernel's check
  std::vector<ErrorRecord> errors = Errors();
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].first_offset, 1010);
}

TEST_F(KernelScopeTest, KernelWithoutPointersCostsNoCheck) {
  Alloc(1000);
  Launch("warm_up");
  const int before = ops_->async_checks;
  int i = 5;
  float f = 1.0f;
  void* params[] = {&i, &f};
  LaunchWith(g_step, params);
  // A pointer to memory the tool does not guard reaches nothing either.
  std::vector<uint8_t> host(64);
  uint8_t* h = host.data();
  int n = 0;
  void* fill_params[] = {&h, &n};
  LaunchWith(g_fill, fill_params);
  EXPECT_EQ(ops_->async_checks, before);
}

TEST_F(KernelScopeTest, OverrunIsAttributedToTheKernelThatReachedIt) {
  uint8_t* a = Alloc(1000);
  Launch("warm_up");
  int n = 0;
  void* params[] = {&a, &n};
  LaunchWith(g_fill, params, [&] { a[1000] = 1; });
  Launch("clean_after");
  std::vector<ErrorRecord> errors = Errors();
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].kind, ErrorKind::kOobWrite);
  EXPECT_EQ(errors[0].check, "kernel");
  ASSERT_EQ(errors[0].kernels.size(), 1u);
  EXPECT_EQ(errors[0].kernels[0], "fill");
  EXPECT_EQ(FoundBy(errors[0]),
            "by the check after kernel fill (check=kernel)");
}

TEST_F(KernelScopeTest, UnknownLayoutFallsBackToEveryZone) {
  Alloc(1000);
  Alloc(1000);
  Launch("warm_up");
  const int before = ops_->async_checks;
  uint8_t* nothing = nullptr;
  void* params[] = {&nothing};
  LaunchWith(g_mystery, params);
  LaunchWith(g_mystery, params);
  EXPECT_EQ(ops_->async_checks, before + 2);
  EXPECT_EQ(ops_->last_async_zones, 4u);  // both blocks
  // The driver is asked once per function; "unknown" is remembered.
  int mystery_queries = layouts_.queries;
  LaunchWith(g_mystery, params);
  EXPECT_EQ(layouts_.queries, mystery_queries);
  // A launch whose arguments are not seen at all (a graph launch).
  engine_->BeforeLaunch(kContext, kStream);
  engine_->AfterLaunch(kContext, kStream, engine_->InternKernel("graph"),
                       nullptr);
  EXPECT_EQ(ops_->last_async_zones, 4u);
}

// Seen inside a CUPTI callback: the words are copied at once, the check is
// made at the next launch, after the program's arguments are gone.
TEST_F(KernelScopeTest, DeferredLaunchKeepsItsArgumentWords) {
  uint8_t* a = Alloc(1000);
  Alloc(1000);
  Launch("warm_up");
  const int before = ops_->async_checks;
  {
    uint8_t* arg = a;
    int n = 0;
    void* params[] = {&arg, &n};
    LaunchArgs args;
    args.function = g_fill;
    args.params = params;
    engine_->BeforeLaunch(kContext, kStream);
    a[1000] = 1;
    engine_->AfterLaunchDeferred(kContext, kStream,
                                 engine_->InternKernel("fill"), &args);
    arg = nullptr;  // the program's argument memory changes
  }
  EXPECT_EQ(ops_->async_checks, before);  // owed, not made
  engine_->OnSynchronized(kContext);
  std::vector<ErrorRecord> errors = Errors();
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].check, "kernel");
  EXPECT_EQ(ops_->async_checks, before + 1);
}

// The launch shims call right after the program's launch, in its context:
// the check need not make it current. A check owed from a CUPTI callback is
// made later, perhaps on another thread: it must.
TEST_F(KernelScopeTest, OnlyAChecksOwnLaunchVouchesForTheContext) {
  uint8_t* a = Alloc(1000);
  Launch("warm_up");
  int n = 0;
  void* params[] = {&a, &n};
  LaunchWith(g_fill, params);
  EXPECT_TRUE(ops_->last_context_current);
  LaunchArgs args;
  args.function = g_fill;
  args.params = params;
  engine_->AfterLaunchDeferred(kContext, kStream, engine_->InternKernel("fill"),
                               &args);
  const int before = ops_->kernel_checks;
  engine_->OnSynchronized(kContext);
  EXPECT_EQ(ops_->kernel_checks, before + 1);
  EXPECT_FALSE(ops_->last_context_current);
}

// Findings overwritten before they were read: nothing is reported in their
// name, no later kernel is blamed for the zones they left changed, and the
// next synchronization's full check reports them, naming the kernels since
// the last clean check. Then per-kernel checks resume.
TEST_F(KernelScopeTest, LostFindingsAreReportedByTheNextSynchronization) {
  uint8_t* a = Alloc(1000);
  Launch("warm_up");
  engine_->OnSynchronized(kContext);  // clean up to here
  ops_->lose_findings = true;
  int n = 0;
  void* params[] = {&a, &n};
  LaunchWith(g_fill, params, [&] { a[1000] = 1; });
  LaunchWith(g_fill, params);  // answers the lost check first
  const int before = ops_->kernel_checks;
  LaunchWith(g_fill, params);
  EXPECT_EQ(ops_->kernel_checks, before);  // none while the loss is owed
  EXPECT_TRUE(Errors().empty());
  ops_->lose_findings = false;
  engine_->OnSynchronized(kContext);
  std::vector<ErrorRecord> errors = Errors();
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].check, "sync");
  EXPECT_EQ(errors[0].first_offset, 1000);
  ASSERT_FALSE(errors[0].kernels.empty());
  EXPECT_EQ(errors[0].kernels.back(), "fill");
  LaunchWith(g_fill, params);
  EXPECT_EQ(ops_->kernel_checks, before + 1);
}

// ---- Suspects: check=sync names the kernel once a write repeats ---------

// A training step that overruns the same block every step, between two
// clean kernels, with a synchronization at its end.
class SuspectTest : public GuardTest {
 protected:
  void Step(uint8_t* p, int64_t offset) {
    Launch("scale");
    engine_->BeforeLaunch(kContext, kStream);
    p[offset] = 1;  // the overrun, as the kernel below runs
    engine_->AfterLaunch(kContext, kStream, engine_->InternKernel("overrun"));
    Launch("reduce");
    engine_->OnSynchronized(kContext);
  }
};

TEST_F(SuspectTest, TheRepeatOfAWriteFoundAtASyncNamesItsKernel) {
  uint8_t* p = Alloc(1000);
  Launch("warm_up");
  engine_->OnSynchronized(kContext);  // clean up to here
  for (int step = 0; step < 3; ++step) Step(p, 1000 + step);
  std::vector<ErrorRecord> errors = Errors();
  ASSERT_EQ(errors.size(), 3u);
  EXPECT_EQ(errors[0].check, "sync");
  EXPECT_EQ(errors[0].kernels,
            (std::vector<std::string>{"scale", "overrun", "reduce"}));
  EXPECT_TRUE(errors[0].suspects_checked);
  for (size_t i = 1; i < errors.size(); ++i) {
    EXPECT_EQ(errors[i].check, "suspect");
    EXPECT_EQ(FoundBy(errors[i]),
              "by the check after kernel overrun (a suspect since an earlier "
              "finding)");
    EXPECT_EQ(errors[i].kernels, std::vector<std::string>{"overrun"});
    EXPECT_EQ(errors[i].first_offset, static_cast<int64_t>(1000 + i));
    EXPECT_FALSE(errors[i].suspects_checked);
  }
  EXPECT_EQ(engine_->guard().Stats().suspects, 3u);
  EXPECT_EQ(engine_->guard().Stats().suspect_checks, 6u);
}

TEST_F(SuspectTest, OffKeepsEveryFindingAtItsSynchronization) {
  Options o = GuardOptions(CheckLevel::kSync);
  o.suspect_checks = false;
  Start(o);
  uint8_t* p = Alloc(1000);
  Launch("warm_up");
  engine_->OnSynchronized(kContext);
  const int before = ops_->async_checks;
  for (int step = 0; step < 3; ++step) Step(p, 1000 + step);
  std::vector<ErrorRecord> errors = Errors();
  ASSERT_EQ(errors.size(), 3u);
  for (const ErrorRecord& e : errors) {
    EXPECT_EQ(e.check, "sync");
    EXPECT_EQ(e.kernels.size(), 3u);
    EXPECT_FALSE(e.suspects_checked);
  }
  EXPECT_EQ(ops_->async_checks, before);  // no check after any kernel
  EXPECT_EQ(engine_->guard().Stats().suspects, 0u);
}

TEST_F(SuspectTest, KernelsNeverNamedCostNoCheck) {
  uint8_t* p = Alloc(1000);
  Launch("warm_up");
  engine_->OnSynchronized(kContext);
  Step(p, 1000);  // scale, overrun and reduce become suspects
  ASSERT_EQ(Errors().size(), 1u);
  const int before = ops_->async_checks;
  Launch("other");
  Launch("warm_up");  // ran before the last clean check: not named
  EXPECT_EQ(ops_->async_checks, before);
  Launch("scale");
  EXPECT_EQ(ops_->async_checks, before + 1);
}

// One kernel since the last clean check: the finding names it already.
TEST_F(SuspectTest, AFindingThatNamesOneKernelMakesNoSuspect) {
  uint8_t* p = Alloc(1000);
  Launch("warm_up");
  engine_->OnSynchronized(kContext);
  engine_->BeforeLaunch(kContext, kStream);
  p[1000] = 1;
  engine_->AfterLaunch(kContext, kStream, engine_->InternKernel("overrun"));
  engine_->OnSynchronized(kContext);
  std::vector<ErrorRecord> errors = Errors();
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].kernels, std::vector<std::string>{"overrun"});
  EXPECT_FALSE(errors[0].suspects_checked);
  EXPECT_EQ(engine_->guard().Stats().suspects, 0u);
}

// A suspect's check, like check=kernel's, covers the blocks its arguments
// reach: the blocks made before the first suspect as well as after.
class SuspectScopeTest : public KernelScopeTest {
 protected:
  void SetUp() override {
    KernelScopeTest::SetUp();
    Start(GuardOptions(CheckLevel::kSync));
  }
};

TEST_F(SuspectScopeTest, ASuspectsCheckCoversWhatItsArgumentsReach) {
  uint8_t* a = Alloc(1000);
  uint8_t* b = Alloc(1000);
  Launch("warm_up");
  engine_->OnSynchronized(kContext);
  int n = 0;
  void* params_a[] = {&a, &n};
  LaunchWith(g_fill, params_a, [&] { a[1000] = 1; });
  Launch("other");
  const int before = ops_->async_checks;
  engine_->OnSynchronized(kContext);  // fill and other become suspects
  ASSERT_EQ(Errors().size(), 1u);
  EXPECT_TRUE(Errors()[0].suspects_checked);
  // b's overrun while fill runs on a: not in fill's reach, found at the
  // synchronization, naming the one kernel since the last clean check.
  LaunchWith(g_fill, params_a, [&] { b[1000] = 1; });
  EXPECT_EQ(ops_->async_checks, before + 1);  // fill's
  EXPECT_EQ(ops_->last_async_zones, 2u);      // a's front and tail
  engine_->OnSynchronized(kContext);
  // A block made after the first suspect is reached too.
  uint8_t* c = Alloc(1000);
  Launch("warm_up");
  engine_->OnSynchronized(kContext);
  void* params_c[] = {&c, &n};
  LaunchWith(g_fill, params_c, [&] { c[-1] = 1; });
  EXPECT_EQ(ops_->last_async_zones, 2u);
  engine_->OnSynchronized(kContext);
  std::vector<ErrorRecord> errors = Errors();
  ASSERT_EQ(errors.size(), 3u);
  EXPECT_EQ(errors[1].check, "sync");
  EXPECT_EQ(errors[1].allocation->address, reinterpret_cast<uint64_t>(b));
  EXPECT_EQ(errors[1].kernels, std::vector<std::string>{"fill"});
  EXPECT_EQ(errors[2].check, "suspect");
  EXPECT_EQ(errors[2].kind, ErrorKind::kOobUnderflow);
  EXPECT_EQ(errors[2].allocation->address, reinterpret_cast<uint64_t>(c));
  EXPECT_EQ(errors[2].kernels, std::vector<std::string>{"fill"});
}

TEST_F(GuardTest, SyncFindingSaysItWasFoundAtASynchronization) {
  uint8_t* p = Alloc(1000);
  Launch("k");
  p[1000] = 1;
  engine_->OnSynchronized(kContext);
  std::vector<ErrorRecord> errors = Errors();
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(FoundBy(errors[0]), "at a synchronization (check=sync)");
}

// A synchronization's zone list is kept while nothing changes, and every
// change between two synchronizations is in the second one's check: a new
// block, a free into quarantine (its freed bytes become a zone), a zone
// re-armed after a finding, a block given back to CUDA.
TEST_F(GuardTest, EachSynchronizationSeesWhatChangedSinceTheLast) {
  uint8_t* a = Alloc(1000);
  Launch("k");
  engine_->OnSynchronized(kContext);
  EXPECT_EQ(ops_->last_tool_zones, 2u);  // a's front and tail
  engine_->OnSynchronized(kContext);
  EXPECT_EQ(ops_->last_tool_zones, 2u);

  uint8_t* b = Alloc(1000);
  Launch("k");
  b[1000] = 1;
  engine_->OnSynchronized(kContext);
  EXPECT_EQ(ops_->last_tool_zones, 4u);
  engine_->OnSynchronized(kContext);  // collects the finding; re-arms b
  std::vector<ErrorRecord> errors = Errors();
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].kind, ErrorKind::kOobWrite);
  EXPECT_EQ(errors[0].allocation->address, reinterpret_cast<uint64_t>(b));

  ASSERT_FALSE(Free(a));  // held: its bytes are a zone from its fill on
  Launch("k");            // the freed pattern and b's tail, refilled
  a[10] = 5;
  b[1001] = 2;  // b's tail again, after its refill
  engine_->OnSynchronized(kContext);
  EXPECT_EQ(ops_->last_tool_zones, 5u);
  engine_->OnSynchronized(kContext);
  errors = Errors();
  ASSERT_EQ(errors.size(), 3u);
  int uaf = 0, oob = 0;
  for (const ErrorRecord& e : errors) {
    uaf += e.kind == ErrorKind::kUafWrite ? 1 : 0;
    oob += e.kind == ErrorKind::kOobWrite ? 1 : 0;
  }
  EXPECT_EQ(uaf, 1);
  EXPECT_EQ(oob, 2);
}

// A synchronization costs the program one enqueued check, never a host wait
// for its answer; the answer is collected at a later poll, and it names the
// kernels run since the last clean check.
TEST_F(GuardTest, SyncCheckIsEnqueuedNotWaitedFor) {
  ops_->deferred = true;
  uint8_t* p = Alloc(1000);
  Launch("writer");
  p[1000] = 1;
  engine_->OnSynchronized(kContext);
  EXPECT_EQ(ops_->checks, 1);
  EXPECT_EQ(ops_->waits, 0);
  EXPECT_TRUE(Errors().empty());
  Launch("later");
  ops_->RunChecks();  // the GPU got to it
  engine_->OnSynchronized(kContext);
  std::vector<ErrorRecord> errors = Errors();
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].check, "sync");
  EXPECT_EQ(errors[0].first_offset, 1000);
  // Collected after "later" was launched: both are candidates.
  EXPECT_EQ(errors[0].kernels, (std::vector<std::string>{"writer", "later"}));
}

// Exit waits for a sync check still in flight: no finding is lost.
TEST_F(GuardTest, ExitCollectsASyncCheckInFlight) {
  ops_->deferred = true;
  uint8_t* p = Alloc(1000);
  Launch("k");
  p[1003] = 1;
  engine_->OnSynchronized(kContext);
  EXPECT_TRUE(Errors().empty());
  engine_->CheckAllZones("exit");
  std::vector<ErrorRecord> errors = Errors();
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].first_offset, 1003);
}

TEST_F(GuardTest, StreamOrderedBlocksAreFilledAtTheNextLaunchOnTheirStream) {
  constexpr uint64_t kOther = 0x3000;
  uint8_t* p = Alloc(1000, Api::kCudaMallocAsync, kStream);
  EXPECT_EQ(ops_->fills, 0);
  Launch("elsewhere", kOther);  // another stream's order is not the block's
  EXPECT_EQ(ops_->fills, 0);
  Launch("k");
  EXPECT_EQ(ops_->fills, 1);
  p[1000] = 1;
  // Not held without quarantine_async: its pool's figures stay the
  // program's.
  EXPECT_TRUE(Free(p, Api::kCudaFreeAsync, kStream));
  engine_->OnSynchronized(kContext);  // answers the async check at free
  std::vector<ErrorRecord> errors = Errors();
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].check, "free");
  EXPECT_EQ(errors[0].allocation->api, Api::kCudaMallocAsync);
}

// quarantine_async=1 (torch mode): stream-ordered frees are held too.
Options AsyncQuarantine(int64_t quarantine = 1 << 20) {
  Options o = GuardOptions(CheckLevel::kSync, quarantine);
  o.quarantine_async = true;
  return o;
}

TEST_F(GuardTest, StreamOrderedFreeIsQuarantinedWithoutAHostWait) {
  Start(AsyncQuarantine());
  uint8_t* p = Alloc(1000, Api::kCudaMallocAsync, kStream);
  Launch("k");
  const int fills_before = ops_->fills;
  EXPECT_FALSE(Free(p, Api::kCudaFreeAsync, kStream));  // held
  // The freed pattern goes in on the free's stream, before its next kernel;
  // nothing waited: neither a synchronization nor a check's answer.
  Launch("next");
  EXPECT_EQ(ops_->fills, fills_before + 1);
  EXPECT_EQ(ops_->syncs, 0);
  EXPECT_EQ(ops_->waits, 0);
  EXPECT_TRUE(ops_->released_ordered.empty());
  p[10] = 0;  // a kernel writing through the stale pointer
  engine_->OnSynchronized(kContext);
  std::vector<ErrorRecord> errors = Errors();
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].kind, ErrorKind::kUafWrite);
  EXPECT_EQ(errors[0].first_offset, 10);
  ASSERT_TRUE(errors[0].previous_free);
  EXPECT_EQ(errors[0].previous_free->free_api, Api::kCudaFreeAsync);
  EXPECT_EQ(errors[0].allocation->api, Api::kCudaMallocAsync);
}

TEST_F(GuardTest, StreamOrderedEvictionChecksThenFreesOnTheSameStream) {
  Start(AsyncQuarantine(/*quarantine=*/64 * 1024));
  std::vector<uint8_t*> blocks;
  for (int i = 0; i < 8; ++i) {
    blocks.push_back(Alloc(16 * 1024, Api::kCudaMallocAsync, kStream));
  }
  Launch("k");
  blocks[0][16 * 1024 + 3] = 1;  // an overrun nobody has checked yet
  for (uint8_t* p : blocks) EXPECT_FALSE(Free(p, Api::kCudaFreeAsync, kStream));
  // Over the budget: the oldest left the quarantine, each with one check on
  // the stream and CUDA's stream-ordered free right behind it; no wait.
  ASSERT_FALSE(ops_->released_ordered.empty());
  EXPECT_EQ(ops_->released_ordered.front(),
            reinterpret_cast<uint64_t>(blocks[0]) - 512);
  EXPECT_TRUE(ops_->released.empty());  // no synchronous free
  EXPECT_GE(ops_->async_checks, 1);
  EXPECT_EQ(ops_->syncs, 0);
  EXPECT_EQ(ops_->waits, 0);
  EXPECT_LT(engine_->guard().Stats().held_bytes, 2u * 64 * 1024);
  engine_->OnSynchronized(kContext);
  std::vector<ErrorRecord> errors = Errors();
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].kind, ErrorKind::kOobWrite);
  EXPECT_EQ(errors[0].first_offset, 16 * 1024 + 3);
  EXPECT_EQ(errors[0].check, "quarantine");
}

TEST_F(GuardTest, DestroyingAStreamReleasesTheBlocksHeldOnIt) {
  Start(AsyncQuarantine());
  constexpr uint64_t kOther = 0x3000;
  uint8_t* a = Alloc(1000, Api::kCudaMallocAsync, kStream);
  uint8_t* b = Alloc(1000, Api::kCudaMallocAsync, kOther);
  Launch("k");
  Launch("k", kOther);
  EXPECT_FALSE(Free(a, Api::kCudaFreeAsync, kStream));
  EXPECT_FALSE(Free(b, Api::kCudaFreeAsync, kOther));
  a[1003] = 1;  // an overrun found on its way out
  engine_->BeforeStreamDestroy(kStream);
  // Only the destroyed stream's block left, checked on its way out; the
  // other stays held.
  ASSERT_EQ(ops_->released_ordered.size(), 1u);
  EXPECT_EQ(ops_->released_ordered[0], reinterpret_cast<uint64_t>(a) - 512);
  EXPECT_EQ(engine_->guard().Stats().evicted, 1u);
  engine_->OnSynchronized(kContext);
  std::vector<ErrorRecord> errors = Errors();
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].first_offset, 1003);
  EXPECT_EQ(errors[0].check, "quarantine");
}

// The fills of every allocation and free between two launches on a stream go
// in as one, before the second launch: not one per call (each is a driver
// call on the program's thread).
TEST_F(GuardTest, StreamOrderedFillsBetweenLaunchesAreOneFill) {
  Start(AsyncQuarantine());
  std::vector<uint8_t*> blocks;
  for (int i = 0; i < 4; ++i) {
    blocks.push_back(Alloc(1000 + i, Api::kCudaMallocAsync, kStream));
  }
  Launch("k");
  EXPECT_EQ(ops_->fills, 1);
  EXPECT_FALSE(Free(blocks[0], Api::kCudaFreeAsync, kStream));
  EXPECT_FALSE(Free(blocks[1], Api::kCudaFreeAsync, kStream));
  uint8_t* fresh = Alloc(3000, Api::kCudaMallocAsync, kStream);
  EXPECT_EQ(ops_->fills, 1);
  Launch("k");
  EXPECT_EQ(ops_->fills, 2);
  Launch("k");  // nothing new to write
  EXPECT_EQ(ops_->fills, 2);
  // All of them armed: an overrun of the new block, a write through a freed
  // one's stale pointer.
  fresh[3000] = 1;
  blocks[1][7] = 0;
  engine_->OnSynchronized(kContext);
  std::vector<ErrorRecord> errors = Errors();
  ASSERT_EQ(errors.size(), 2u);
  EXPECT_NE(errors[0].kind, errors[1].kind);
  for (const ErrorRecord& e : errors) {
    EXPECT_TRUE(e.kind == ErrorKind::kOobWrite ||
                e.kind == ErrorKind::kUafWrite)
        << static_cast<int>(e.kind);
  }
}

// A block whose zones were never written (no launch on its stream since) is
// never checked: what its memory held before is not an overrun. And its
// pattern is never written after it went back to CUDA.
TEST_F(GuardTest,
       StreamOrderedBlockGoneBeforeALaunchIsNeitherFilledNorChecked) {
  Start(AsyncQuarantine(/*quarantine=*/4096));
  uint8_t* p = Alloc(1000, Api::kCudaMallocAsync, kStream);
  p[1000] = 1;  // not a canary: nothing was written there yet
  p[-1] = 2;
  EXPECT_FALSE(Free(p, Api::kCudaFreeAsync, kStream));
  uint8_t* q = Alloc(8192, Api::kCudaMallocAsync, kStream);
  EXPECT_FALSE(Free(q, Api::kCudaFreeAsync, kStream));  // evicts p, then q
  ASSERT_FALSE(ops_->released_ordered.empty());
  Launch("k");
  EXPECT_EQ(ops_->fills, 0);
  engine_->OnSynchronized(kContext);
  engine_->CheckAllZones("exit");
  EXPECT_TRUE(Errors().empty());
}

// A launch on a stream being captured leaves the fills waiting: enqueued
// there they would become nodes of the graph.
TEST_F(GuardTest, StreamOrderedFillsWaitOutACapture) {
  Start(AsyncQuarantine());
  uint8_t* p = Alloc(1000, Api::kCudaMallocAsync, kStream);
  ops_->capturing = true;
  Launch("captured");
  EXPECT_EQ(ops_->fills, 0);
  ops_->capturing = false;
  Launch("k");
  EXPECT_EQ(ops_->fills, 1);
  p[1001] = 1;
  engine_->OnSynchronized(kContext);
  EXPECT_EQ(Errors().size(), 1u);
}

TEST_F(GuardTest, StreamOrderedFreeWhileCapturingIsNotHeld) {
  Start(AsyncQuarantine());
  uint8_t* p = Alloc(1000, Api::kCudaMallocAsync, kStream);
  ops_->capturing = true;  // a fill now would become a node of the graph
  EXPECT_TRUE(Free(p, Api::kCudaFreeAsync, kStream));
}

TEST_F(GuardTest, OutOfMemoryFreesTheStreamOrderedQuarantineAndSyncs) {
  Start(AsyncQuarantine());
  std::vector<uint8_t*> blocks;
  for (int i = 0; i < 4; ++i) {
    blocks.push_back(Alloc(4096, Api::kCudaMallocAsync, kStream));
  }
  for (uint8_t* p : blocks) Free(p, Api::kCudaFreeAsync, kStream);
  ASSERT_TRUE(ops_->released_ordered.empty());
  std::vector<GuardFinding> findings;
  const uint64_t released = engine_->guard().ReleaseQuarantine(&findings);
  EXPECT_TRUE(findings.empty());
  EXPECT_EQ(ops_->released_ordered.size(), 4u);
  EXPECT_GE(released, 4u * 4096);
  // The retry may be on another stream: the frees must have run.
  EXPECT_EQ(ops_->syncs, 1);
  EXPECT_EQ(engine_->guard().Stats().held_bytes, 0u);
}

// Reuse (quarantine_reuse, on with quarantine_async): a block that left the
// quarantine and whose check found it intact serves the next allocation of
// its size, with no CUDA call and no canary fill, on any stream.
class GuardReuseTest : public GuardTest {
 protected:
  static constexpr uint64_t kBytes = 16 * 1024;
  void SetUp() override { Start(AsyncQuarantine(/*quarantine=*/64 * 1024)); }
  // Eight blocks allocated, filled, then freed one launch apart: the oldest
  // leave the 64 KiB quarantine, their pattern written.
  std::vector<uint8_t*> ChurnEight() {
    std::vector<uint8_t*> blocks;
    for (int i = 0; i < 8; ++i) blocks.push_back(AllocAsync(kBytes));
    Launch("k");
    for (uint8_t* p : blocks) {
      EXPECT_FALSE(Free(p, Api::kCudaFreeAsync, kStream));
      Launch("k");
    }
    return blocks;
  }
  bool IsOneOf(const uint8_t* p, const std::vector<uint8_t*>& blocks) {
    return std::find(blocks.begin(), blocks.end(), p) != blocks.end();
  }
  // A reused block's canaries are armed for its new lifetime (of `bytes`):
  // an overrun of it is reported as the new block's, with no free before it.
  void ExpectAnOverrunIsTheNewBlocks(uint8_t* p, uint64_t bytes = kBytes) {
    p[bytes + 5] = 1;
    engine_->OnSynchronized(kContext);
    std::vector<ErrorRecord> errors = Errors();
    ASSERT_EQ(errors.size(), 1u);
    EXPECT_EQ(errors[0].kind, ErrorKind::kOobWrite);
    EXPECT_EQ(errors[0].first_offset, static_cast<int64_t>(bytes + 5));
    EXPECT_FALSE(errors[0].previous_free);
  }
};

TEST_F(GuardReuseTest, ACheckedBlockServesTheNextAllocationOfItsSize) {
  std::vector<uint8_t*> old = ChurnEight();
  ASSERT_EQ(cuda_allocs_, 8);
  // Another stream: the block's free has completed (its check behind it
  // answered), as CUDA's pool reuses a completed free for any stream.
  constexpr uint64_t kOther = 0x3000;
  uint8_t* p = AllocAsync(kBytes, kOther);
  EXPECT_EQ(cuda_allocs_, 8);  // no CUDA call
  EXPECT_TRUE(IsOneOf(p, old));
  EXPECT_EQ(engine_->guard().Stats().reused, 1u);
  // Its canaries are in place: nothing to write before the next kernel.
  const int fills = ops_->fills;
  Launch("k", kOther);
  EXPECT_EQ(ops_->fills, fills);
  // ... and armed: an overrun of the new block is the new block's.
  ExpectAnOverrunIsTheNewBlocks(p);
  // Another size is CUDA's.
  AllocAsync(kBytes + 1);
  EXPECT_EQ(cuda_allocs_, 9);
  EXPECT_EQ(ops_->invalid_releases, 0);
}

TEST_F(GuardReuseTest, MissesAreCountedWithWhyTheyMissed) {
  ops_->deferred = true;  // checks run when the test says so
  // Nothing of the size anywhere yet: the first miss is looked at.
  AllocAsync(kBytes + 64);
  GuardStats g = engine_->guard().Stats();
  EXPECT_EQ(g.reuse_misses, 1u);
  EXPECT_EQ(g.reuse_miss_none, 1u);
  // Eight freed, the oldest evicted with their checks still on the way, the
  // newest in quarantine: an allocation of their size on another stream
  // (not ordered behind those checks) is looked at (the 17th miss) and
  // finds one being checked.
  ChurnEight();
  constexpr uint64_t kOther = 0x3000;
  g = engine_->guard().Stats();
  const uint64_t before = g.reuse_misses;
  for (uint64_t m = before; m % GuardManager::kReuseMissSampleEvery != 0; ++m) {
    AllocAsync(kBytes * 4);  // a size never freed: misses, not looked at
  }
  AllocAsync(kBytes, kOther);
  g = engine_->guard().Stats();
  EXPECT_EQ(g.reused_in_flight, 0u);
  EXPECT_EQ(g.reused, 0u);
  EXPECT_EQ(g.reuse_miss_none, 1u);
  EXPECT_EQ(g.reuse_miss_checking, 1u);
  EXPECT_EQ(g.reuse_miss_quarantine, 0u);
  // Once answered, the same size is served: not a miss.
  ops_->RunChecks();
  engine_->OnSynchronized(kContext);
  const uint64_t misses = engine_->guard().Stats().reuse_misses;
  AllocAsync(kBytes, kOther);
  g = engine_->guard().Stats();
  EXPECT_EQ(g.reused, 1u);
  EXPECT_EQ(g.reuse_misses, misses);
}

TEST_F(GuardReuseTest, AMissWhoseBlocksAreInQuarantineSaysSo) {
  // Two freed, both within the 64 KiB quarantine: nothing evicted yet.
  uint8_t* a = AllocAsync(kBytes);
  uint8_t* b = AllocAsync(kBytes);
  Launch("k");
  EXPECT_FALSE(Free(a, Api::kCudaFreeAsync, kStream));
  EXPECT_FALSE(Free(b, Api::kCudaFreeAsync, kStream));
  Launch("k");
  for (uint64_t m = engine_->guard().Stats().reuse_misses;
       m % GuardManager::kReuseMissSampleEvery != 0; ++m) {
    AllocAsync(kBytes * 4);
  }
  const GuardStats before = engine_->guard().Stats();
  AllocAsync(kBytes);
  const GuardStats after = engine_->guard().Stats();
  EXPECT_EQ(after.reuse_misses, before.reuse_misses + 1);
  EXPECT_EQ(after.reuse_miss_quarantine, before.reuse_miss_quarantine + 1);
  EXPECT_EQ(after.reuse_miss_checking, before.reuse_miss_checking);
}

TEST_F(GuardReuseTest, ABlockWrittenAfterItsFreeIsReportedAndGivenBack) {
  std::vector<uint8_t*> blocks;
  for (int i = 0; i < 8; ++i) blocks.push_back(AllocAsync(kBytes));
  Launch("k");
  EXPECT_FALSE(Free(blocks[0], Api::kCudaFreeAsync, kStream));
  Launch("k");
  blocks[0][100] = 7;  // a kernel writing through the stale pointer
  for (size_t i = 1; i < blocks.size(); ++i) {
    EXPECT_FALSE(Free(blocks[i], Api::kCudaFreeAsync, kStream));
    Launch("k");
  }
  // Its check on the way out found it: reported, and the block went back to
  // CUDA on the tool's stream (its free had completed) instead of waiting
  // for reuse.
  engine_->OnSynchronized(kContext);
  std::vector<ErrorRecord> errors = Errors();
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].kind, ErrorKind::kUafWrite);
  EXPECT_EQ(errors[0].first_offset, 100);
  EXPECT_EQ(errors[0].check, "quarantine");
  const uint64_t raw = raw_of_[reinterpret_cast<uint64_t>(blocks[0])];
  ASSERT_EQ(std::count(ops_->released_ordered.begin(),
                       ops_->released_ordered.end(), raw),
            1);
  EXPECT_EQ(ops_->released_ordered_streams[0], 0u);
  for (int i = 0; i < 4; ++i) EXPECT_NE(AllocAsync(kBytes), blocks[0]);
}

// Another stream is not ordered behind the check: its allocation waits for
// the answer.
TEST_F(GuardReuseTest, NoBlockIsTakenOnAnotherStreamBeforeItsCheckHasAnswered) {
  ops_->deferred = true;  // checks run when the test says so
  std::vector<uint8_t*> old = ChurnEight();
  constexpr uint64_t kOther = 0x3000;
  const int before = cuda_allocs_;
  uint8_t* p = AllocAsync(kBytes, kOther);
  EXPECT_EQ(cuda_allocs_, before + 1);  // the checks are still on their way
  EXPECT_FALSE(IsOneOf(p, old));
  ops_->RunChecks();
  engine_->OnSynchronized(kContext);  // a poll collects their answers
  uint8_t* q = AllocAsync(kBytes, kOther);
  EXPECT_EQ(cuda_allocs_, before + 1);
  EXPECT_TRUE(IsOneOf(q, old));
}

// On the stream its check went on, a block whose check has not answered is
// taken at once: the check reads its zones before anything the program does
// there with the new tensor (as CUDA's pool hands a block freed on a stream
// to that stream's next allocation). When the GPU's queue is long the next
// tensor of a size is asked for before the check has run: on an H100 whose
// CNN step waited for the GPU, reuse served 6 600-10 700 of 29 900 tensors
// while it waited for answers.
TEST_F(GuardReuseTest, AnAllocationOnTheChecksStreamTakesABlockInFlight) {
  ops_->deferred = true;
  std::vector<uint8_t*> old = ChurnEight();
  ASSERT_GT(ops_->checks_in_flight(), 0u);
  const int before = cuda_allocs_;
  uint8_t* p = AllocAsync(kBytes, kStream);
  EXPECT_EQ(cuda_allocs_, before);  // no CUDA call
  EXPECT_TRUE(IsOneOf(p, old));
  GuardStats g = engine_->guard().Stats();
  EXPECT_EQ(g.reused, 1u);
  EXPECT_EQ(g.reused_in_flight, 1u);
  ops_->RunChecks();
  engine_->OnSynchronized(kContext);
  EXPECT_TRUE(Errors().empty());
  // Once the check has answered, its canaries are the new tensor's.
  ExpectAnOverrunIsTheNewBlocks(p);
  EXPECT_EQ(ops_->invalid_releases, 0);
}

// What the in-flight check finds was done to the block's last lifetime: it
// is reported with that lifetime's free, once; the canaries are written
// again for the new tensor, and its own bytes are never painted with the
// freed pattern (a re-arm of the freed bytes once did that to whatever
// block lived at the address).
TEST_F(GuardReuseTest, WhatAnInFlightCheckFindsIsTheLastLifetimes) {
  ops_->deferred = true;
  std::vector<uint8_t*> blocks;
  for (int i = 0; i < 8; ++i) blocks.push_back(AllocAsync(kBytes));
  Launch("k");
  EXPECT_FALSE(Free(blocks[0], Api::kCudaFreeAsync, kStream));
  Launch("k");                // its freed pattern goes in
  blocks[0][100] = 7;         // a stale write
  blocks[0][kBytes + 3] = 9;  // and one past its end
  for (size_t i = 1; i < blocks.size(); ++i) {
    EXPECT_FALSE(Free(blocks[i], Api::kCudaFreeAsync, kStream));
    Launch("k");
  }
  uint8_t* p = AllocAsync(kBytes, kStream);
  ASSERT_EQ(p, blocks[0]);  // the oldest check's block
  ASSERT_EQ(engine_->guard().Stats().reused_in_flight, 1u);
  ops_->RunChecks();  // the GPU reaches the check before the tensor's work
  std::memset(p, 0x22, kBytes);  // the new tensor's data
  engine_->OnSynchronized(kContext);
  std::vector<ErrorRecord> errors = Errors();
  ASSERT_EQ(errors.size(), 2u);
  std::sort(errors.begin(), errors.end(),
            [](const ErrorRecord& a, const ErrorRecord& b) {
              return a.first_offset < b.first_offset;
            });
  EXPECT_EQ(errors[0].kind, ErrorKind::kUafWrite);
  EXPECT_EQ(errors[0].first_offset, 100);
  EXPECT_TRUE(errors[0].previous_free);
  EXPECT_EQ(errors[1].kind, ErrorKind::kOobWrite);
  EXPECT_EQ(errors[1].first_offset, static_cast<int64_t>(kBytes + 3));
  EXPECT_TRUE(errors[1].previous_free);
  Launch("k");  // the canaries are written again before it
  engine_->OnSynchronized(kContext);
  EXPECT_EQ(Errors().size(), 2u);  // nothing more, nothing twice
  EXPECT_EQ(std::count(p, p + kBytes, 0x22), static_cast<long>(kBytes));
  EXPECT_EQ(p[kBytes + 3], kCanaryByte);
}

TEST_F(GuardReuseTest, OutOfMemoryGivesTheHeldBlocksBack) {
  ChurnEight();
  ASSERT_GT(engine_->guard().Stats().held_bytes, 0u);
  std::vector<GuardFinding> findings;
  EXPECT_GT(engine_->guard().ReleaseQuarantine(&findings), 0u);
  EXPECT_TRUE(findings.empty());
  EXPECT_EQ(engine_->guard().Stats().held_bytes, 0u);
  EXPECT_GE(ops_->syncs, 1);  // a retry on another stream finds them free
  const int before = cuda_allocs_;
  AllocAsync(kBytes);
  EXPECT_EQ(cuda_allocs_, before + 1);
}

TEST_F(GuardReuseTest, ADevicePoolSetByTheProgramEndsReuse) {
  ChurnEight();
  engine_->OnDeviceMemPool(0, 0x7700);
  const int before = cuda_allocs_;
  AllocAsync(kBytes);
  EXPECT_EQ(cuda_allocs_, before + 1);
}

// A block leaving the quarantine for reuse is checked behind its free on
// its stream at the eviction (its answer gates its reuse, and an eager
// framework allocates the next tensor of a shape it just freed before its
// next launch), riding on the fill that the evicting free left due there:
// one launch for both, none at the launch after. Every reuse check of the
// churn went that way, and each served.
TEST_F(GuardReuseTest,
       TheCheckOfABlockLeavingTheQuarantineRidesOnTheFreesFill) {
  std::vector<uint8_t*> blocks;
  for (int i = 0; i < 8; ++i) blocks.push_back(AllocAsync(kBytes));
  Launch("k");
  for (uint8_t* p : blocks) {
    const int checks = ops_->async_checks;
    const int rides = ops_->check_fills;
    EXPECT_FALSE(Free(p, Api::kCudaFreeAsync, kStream));
    EXPECT_EQ(ops_->async_checks - checks, ops_->check_fills - rides)
        << "a check of its own at the free";
    const int after_free = ops_->async_checks;
    const int fills = ops_->fills;
    Launch("k");
    EXPECT_EQ(ops_->async_checks, after_free) << "a check left for the launch";
    if (ops_->check_fills > rides) {
      EXPECT_EQ(ops_->fills, fills) << "the freed pattern written twice";
    }
  }
  EXPECT_GT(ops_->check_fills, 0);
  EXPECT_EQ(ops_->async_checks, ops_->check_fills);
  EXPECT_EQ(ops_->overlaps, 0);
  engine_->OnSynchronized(kContext);
  const int before = cuda_allocs_;
  uint8_t* p = AllocAsync(kBytes);
  EXPECT_EQ(cuda_allocs_, before);
  EXPECT_TRUE(IsOneOf(p, blocks));
  EXPECT_EQ(ops_->invalid_releases, 0);
}

// With no fill due on their stream, the checks go alone at the eviction
// (their blocks then serve after the answer is polled), and a trim gives
// those blocks back to CUDA. Here the frees of another stream push the
// first stream's blocks out of the quarantine.
TEST_F(GuardReuseTest, ACheckWithNoFillDueOnItsStreamGoesAloneAtTheEviction) {
  constexpr uint64_t kOther = 0x3000;
  for (bool trim : {false, true}) {
    Start(AsyncQuarantine(/*quarantine=*/64 * 1024));
    std::vector<uint8_t*> mine, others;
    for (int i = 0; i < 3; ++i) mine.push_back(AllocAsync(kBytes));
    for (int i = 0; i < 3; ++i) others.push_back(AllocAsync(kBytes, kOther));
    Launch("k");
    Launch("k", kOther);
    for (uint8_t* p : mine) {
      EXPECT_FALSE(Free(p, Api::kCudaFreeAsync, kStream));
      Launch("k");
    }
    const int checks = ops_->async_checks;
    const int rides = ops_->check_fills;
    for (uint8_t* p : others) {
      EXPECT_FALSE(Free(p, Api::kCudaFreeAsync, kOther));
      Launch("k", kOther);
    }
    // Out of the quarantine, and checked at once, without a fill of theirs.
    EXPECT_GT(engine_->guard().Stats().held_bytes, 0u);
    EXPECT_GT(ops_->async_checks - checks, ops_->check_fills - rides);
    const int made = ops_->async_checks;
    const int before = cuda_allocs_;
    if (trim) {
      std::vector<GuardFinding> findings;
      EXPECT_GT(engine_->guard().ReleaseHeldOrdered(0, &findings), 0u);
      for (uint8_t* p : mine) {
        const uint64_t raw = raw_of_[reinterpret_cast<uint64_t>(p)];
        EXPECT_EQ(std::count(ops_->released_ordered.begin(),
                             ops_->released_ordered.end(), raw),
                  1);
      }
      AllocAsync(kBytes);
      EXPECT_EQ(cuda_allocs_, before + 1);
    } else {
      engine_->OnSynchronized(kContext);
      EXPECT_EQ(ops_->async_checks, made) << "a check left for the sync";
      EXPECT_TRUE(IsOneOf(AllocAsync(kBytes), mine));
      EXPECT_EQ(cuda_allocs_, before);
    }
    EXPECT_EQ(ops_->invalid_releases, 0);
  }
}

// One eviction's checks on a stream are at most what one launch's check
// holds (32 zones: ten blocks of three, or eight of four when
// freed_check_bytes splits their freed bytes in two): an eviction of more
// sends them as several checks, each within the bound.
TEST_F(GuardReuseTest, OneEvictionsChecksAreBoundedByOneLaunch) {
  for (int64_t freed_check_bytes : {0, 4096}) {
    SCOPED_TRACE(freed_check_bytes);
    // Their freed patterns written (a launch after each free), then pushed
    // out of the quarantine together by a large free on another stream.
    constexpr uint64_t kOther = 0x3000;
    // A block takes 20.5 KiB with its zones: all twelve fit.
    Options o = AsyncQuarantine(/*quarantine=*/13 * 21 * 1024);
    o.freed_check_bytes = freed_check_bytes;
    Start(o);
    std::vector<uint8_t*> mine;
    for (int i = 0; i < 12; ++i) mine.push_back(AllocAsync(kBytes));
    uint8_t* large = AllocAsync(12 * kBytes, kOther);
    Launch("k");
    Launch("k", kOther);
    for (uint8_t* p : mine) {
      EXPECT_FALSE(Free(p, Api::kCudaFreeAsync, kStream));
      Launch("k");
    }
    ops_->deferred = true;  // the checks' tables stay to be looked at
    const int checks = ops_->async_checks;
    ops_->max_check_zones = 0;
    EXPECT_FALSE(Free(large, Api::kCudaFreeAsync, kOther));
    // All twelve of `mine` left the quarantine at that free: more than one
    // check, none over one launch's zones.
    EXPECT_GE(ops_->async_checks - checks, 2);
    EXPECT_GT(ops_->max_check_zones, 0u);
    EXPECT_LE(ops_->max_check_zones, size_t{GMT_INLINE_MAX_ZONES});
    EXPECT_EQ(ops_->overlaps, 0);
  }
}

TEST_F(GuardReuseTest, OffWithQuarantineReuseZero) {
  Options o = AsyncQuarantine(64 * 1024);
  o.quarantine_reuse = false;
  Start(o);
  ChurnEight();
  AllocAsync(kBytes);
  EXPECT_EQ(cuda_allocs_, 9);
  EXPECT_EQ(engine_->guard().Stats().reused, 0u);
}

// Reuse of cudaMalloc blocks (malloc_reuse, on by default): a block that
// left the quarantine and whose check found it intact serves a later
// cudaMalloc it fits, with no CUDA call; the program's free still
// synchronizes, and it is told a buffer id of its own.
class GuardDeviceReuseTest : public GuardReuseTest {
 protected:
  void SetUp() override {
    Start(GuardOptions(CheckLevel::kSync, /*quarantine=*/64 * 1024));
  }
  // Eight blocks allocated, written, then freed one launch apart: the
  // oldest leave the 64 KiB quarantine with their pattern written.
  std::vector<uint8_t*> ChurnEightDevice() {
    std::vector<uint8_t*> blocks;
    for (int i = 0; i < 8; ++i) blocks.push_back(AllocDevice(kBytes));
    Launch("k");
    for (uint8_t* p : blocks) {
      EXPECT_FALSE(Free(p));
      Launch("k");
    }
    return blocks;
  }
  std::optional<uint64_t> BufferIdOf(const uint8_t* p) {
    std::optional<BlockView> view =
        engine_->FindBlock(reinterpret_cast<uint64_t>(p));
    if (!view) return std::nullopt;
    return engine_->ReusedBufferId(*view);
  }
};

TEST_F(GuardDeviceReuseTest, ACheckedBlockServesALaterCudaMallocOfItsSize) {
  std::vector<uint8_t*> old = ChurnEightDevice();
  ASSERT_EQ(cuda_allocs_, 8);
  uint8_t* p = AllocDevice(kBytes);
  EXPECT_EQ(cuda_allocs_, 8);  // no CUDA call
  EXPECT_TRUE(IsOneOf(p, old));
  EXPECT_EQ(engine_->guard().Stats().reused, 1u);
  // Its canaries are in place: nothing to write before the next kernel.
  const int fills = ops_->fills;
  Launch("k");
  EXPECT_EQ(ops_->fills, fills);
  ExpectAnOverrunIsTheNewBlocks(p);
  EXPECT_EQ(ops_->invalid_releases, 0);
}

TEST_F(GuardDeviceReuseTest, AShorterAllocationGetsItsTailCanariesWritten) {
  std::vector<uint8_t*> old = ChurnEightDevice();
  // 100 bytes shorter: the same raw block fits it. The bytes between the
  // two ends held the last owner's freed pattern; unless they are written
  // as canaries, the next check reads them as an overrun.
  constexpr uint64_t kShorter = kBytes - 100;
  uint8_t* p = AllocDevice(kShorter);
  EXPECT_EQ(cuda_allocs_, 8);
  EXPECT_TRUE(IsOneOf(p, old));
  const int fills = ops_->fills;
  Launch("k");
  EXPECT_EQ(ops_->fills, fills + 1);
  engine_->OnSynchronized(kContext);
  EXPECT_TRUE(Errors().empty());
  // ... and an overrun of the new end is the new block's.
  ExpectAnOverrunIsTheNewBlocks(p, kShorter);
}

TEST_F(GuardDeviceReuseTest, OnlyABlockAtMostAnEighthLargerServes) {
  std::vector<uint8_t*> old = ChurnEightDevice();
  // 15 KiB plans a raw block within 1/8 of a 16 KiB one's; 12 KiB does not.
  EXPECT_TRUE(IsOneOf(AllocDevice(15 * 1024), old));
  EXPECT_EQ(cuda_allocs_, 8);
  EXPECT_FALSE(IsOneOf(AllocDevice(12 * 1024), old));
  EXPECT_FALSE(IsOneOf(AllocDevice(2 * kBytes), old));
  EXPECT_EQ(cuda_allocs_, 10);
}

TEST_F(GuardDeviceReuseTest, TheFreeStillSynchronizesAsCudasDoes) {
  ChurnEightDevice();
  uint8_t* p = AllocDevice(kBytes);
  Launch("k");
  FreeCost cost = FreeAndCount(p);
  EXPECT_FALSE(cost.cuda_called);  // held
  EXPECT_EQ(cost.syncs, 1u);       // but the device was synchronized
  EXPECT_EQ(cost.check_waits, 0);
}

TEST_F(GuardDeviceReuseTest, AWriteAfterFreeItsCheckFindsIsReportedNotReused) {
  std::vector<uint8_t*> blocks;
  for (int i = 0; i < 8; ++i) blocks.push_back(AllocDevice(kBytes));
  Launch("k");
  ASSERT_FALSE(Free(blocks[0]));
  Launch("k");
  blocks[0][10] = 7;  // a kernel writing through the stale pointer
  for (int i = 1; i < 8; ++i) {
    ASSERT_FALSE(Free(blocks[i]));
    Launch("k");
  }
  engine_->OnSynchronized(kContext);
  std::vector<ErrorRecord> errors = Errors();
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].kind, ErrorKind::kUafWrite);
  EXPECT_TRUE(errors[0].previous_free);
  // It went back to CUDA (at a later free) instead of waiting for reuse.
  EXPECT_EQ(TimesReleased(blocks[0]), 1u);
  EXPECT_EQ(TimesReleased(blocks[1]), 0u);  // held for reuse
}

TEST_F(GuardDeviceReuseTest, ABlockSharedOutsideTheProcessIsNeverReused) {
  std::vector<uint8_t*> blocks;
  for (int i = 0; i < 8; ++i) blocks.push_back(AllocDevice(kBytes));
  engine_->NoteBlockShared(reinterpret_cast<uint64_t>(blocks[0]) + 64);
  Launch("k");
  for (uint8_t* p : blocks) {
    ASSERT_FALSE(Free(p));
    Launch("k");
  }
  // It went back to CUDA when it left the quarantine; the others wait.
  EXPECT_EQ(TimesReleased(blocks[0]), 1u);
  EXPECT_EQ(TimesReleased(blocks[1]), 0u);
  AllocDevice(kBytes);
  EXPECT_EQ(engine_->guard().Stats().reused, 1u);
}

TEST_F(GuardDeviceReuseTest, AReusedBlockHasABufferIdOfItsOwn) {
  uint8_t* fresh = AllocDevice(kBytes);
  ChurnEightDevice();
  EXPECT_FALSE(BufferIdOf(fresh).has_value());  // CUDA's answer stands
  uint8_t* a = AllocDevice(kBytes);
  uint8_t* b = AllocDevice(kBytes);
  std::optional<uint64_t> id_a = BufferIdOf(a);
  std::optional<uint64_t> id_b = BufferIdOf(b);
  ASSERT_TRUE(id_a.has_value());
  ASSERT_TRUE(id_b.has_value());
  EXPECT_NE(*id_a, *id_b);
  EXPECT_NE(*id_a & (uint64_t{1} << 63), 0u);  // never one CUDA gives
}

TEST_F(GuardDeviceReuseTest, HeldBlocksAreFreeMemoryUntilTaken) {
  ChurnEightDevice();
  const uint64_t held = engine_->guard().HeldBytes(0);
  ASSERT_GT(held, 0u);
  AllocDevice(kBytes);
  EXPECT_LT(engine_->guard().HeldBytes(0), held);
}

TEST_F(GuardDeviceReuseTest, OutOfMemoryGivesTheHeldBlocksBack) {
  std::vector<uint8_t*> old = ChurnEightDevice();
  ASSERT_GT(engine_->guard().Stats().held_bytes, 0u);
  std::vector<GuardFinding> findings;
  EXPECT_GT(engine_->guard().ReleaseQuarantine(&findings), 0u);
  EXPECT_TRUE(findings.empty());
  EXPECT_EQ(engine_->guard().Stats().held_bytes, 0u);
  EXPECT_EQ(engine_->guard().HeldBytes(0), 0u);
  for (uint8_t* p : old) EXPECT_EQ(TimesReleased(p), 1u);
  AllocDevice(kBytes);
  EXPECT_EQ(cuda_allocs_, 9);
}

TEST_F(GuardDeviceReuseTest, NoBlockIsServedWhileAStreamCaptureIsInProgress) {
  std::vector<uint8_t*> old = ChurnEightDevice();
  // CUDA may refuse a cudaMalloc then (a global-mode capture): it answers.
  engine_->guard().NoteCaptureBegun();
  EXPECT_FALSE(IsOneOf(AllocDevice(kBytes), old));
  EXPECT_EQ(cuda_allocs_, 9);
  engine_->guard().NoteCaptureEnded();
  EXPECT_TRUE(IsOneOf(AllocDevice(kBytes), old));
  EXPECT_EQ(cuda_allocs_, 9);
}

TEST_F(GuardDeviceReuseTest, OffWithMallocReuseZero) {
  Options o = GuardOptions(CheckLevel::kSync, /*quarantine=*/64 * 1024);
  o.malloc_reuse = false;
  Start(o);
  ChurnEightDevice();
  AllocDevice(kBytes);
  EXPECT_EQ(cuda_allocs_, 9);
  EXPECT_EQ(engine_->guard().Stats().reused, 0u);
}

TEST_F(GuardTest, CaptureLeavesStreamOrderedBlocksUnguarded) {
  ops_->capturing = true;
  uint8_t* p = Alloc(1000, Api::kCudaMallocAsync, kStream);
  std::optional<BlockView> v =
      engine_->FindBlock(reinterpret_cast<uint64_t>(p));
  ASSERT_TRUE(v);
  EXPECT_FALSE(v->guarded);
  EXPECT_EQ(engine_->guard().Stats().unguarded_capture, 1u);
}

TEST_F(GuardTest, CheckNoneNeverChecks) {
  Start(GuardOptions(CheckLevel::kNone));
  uint8_t* p = Alloc(100);
  Launch("k");
  p[100] = 1;
  engine_->OnSynchronized(kContext);
  engine_->CheckAllZones("exit");
  EXPECT_EQ(ops_->checks, 0);
  EXPECT_TRUE(Errors().empty());
}

TEST_F(GuardTest, ExitCheckFindsWhatNoSyncSaw) {
  Start(GuardOptions(CheckLevel::kExit));
  uint8_t* p = Alloc(100);
  Launch("k");
  p[150] = 1;
  engine_->OnSynchronized(kContext);  // check=exit: not at sync points
  EXPECT_TRUE(Errors().empty());
  engine_->CheckAllZones("exit");
  std::vector<ErrorRecord> errors = Errors();
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].check, "exit");
}

TEST_F(GuardTest, FailedChecksAreCountedNotReported) {
  uint8_t* p = Alloc(100);
  Launch("k");
  p[100] = 1;
  ops_->fail_checks = true;
  engine_->OnSynchronized(kContext);
  EXPECT_TRUE(Errors().empty());
  ReportData r = engine_->BuildReport("request");
  EXPECT_EQ(r.guard.check_failures, 1u);
  EXPECT_FALSE(r.notes.empty());
}

TEST_F(GuardTest, ApiBoundsRejectsWhatCudaWouldHaveRejected) {
  uint8_t* p = Alloc(1000);
  const uint64_t a = reinterpret_cast<uint64_t>(p);
  EXPECT_EQ(engine_->CheckAccess("cudaMemset", a, 1000),
            AccessVerdict::kForward);
  EXPECT_EQ(engine_->CheckAccess("cudaMemset", a + 10, 990),
            AccessVerdict::kForward);
  EXPECT_EQ(engine_->CheckAccess("cudaMemset", a, 1001),
            AccessVerdict::kReject);
  EXPECT_EQ(engine_->CheckAccess("cuMemcpyHtoD_v2", a - 8, 16),
            AccessVerdict::kReject);
  EXPECT_EQ(engine_->CheckAccess("cudaMemset", 0x10, 1000),
            AccessVerdict::kForward);  // untracked: CUDA decides
  std::vector<ErrorRecord> errors = Errors();
  ASSERT_EQ(errors.size(), 2u);
  EXPECT_EQ(errors[0].kind, ErrorKind::kApiBounds);
  EXPECT_EQ(errors[0].call, "cudaMemset");
  EXPECT_EQ(errors[0].offset, 0);
  EXPECT_EQ(errors[0].bytes, 1001u);
  EXPECT_EQ(errors[0].cuda_result_name, "cudaErrorInvalidValue");
  EXPECT_EQ(errors[1].offset, -8);
  EXPECT_EQ(errors[1].cuda_result_name, "CUDA_ERROR_INVALID_VALUE");
}

TEST_F(GuardTest, ApiBoundsOnUnguardedBlocksForwardsButReports) {
  Options o = GuardOptions();
  o.guard = false;
  Start(o);
  uint8_t* p = Alloc(1000);
  EXPECT_EQ(
      engine_->CheckAccess("cudaMemcpy", reinterpret_cast<uint64_t>(p), 1024),
      AccessVerdict::kForward);
  EXPECT_EQ(Errors().size(), 1u);
}

TEST_F(GuardTest, IpcHeaderLetsAPeerFindTheUserStart) {
  uint8_t* p = Alloc(4096);
  const uint64_t user = reinterpret_cast<uint64_t>(p);
  const uint64_t raw = engine_->PrepareIpcExport(user).value_or(0);
  EXPECT_EQ(raw, user - 512);
  // Any byte of the block exports it; a redzone byte is in no block.
  EXPECT_EQ(engine_->PrepareIpcExport(user + 100), std::optional(raw));
  EXPECT_EQ(engine_->PrepareIpcExport(user - 8), std::nullopt);
  EXPECT_EQ(engine_->IpcUserAddress(kContext, raw), user);
  // The header is not reported as an underflow.
  Launch("k");
  engine_->OnSynchronized(kContext);
  EXPECT_TRUE(Errors().empty());
  // Memory without a header answers as itself.
  uint8_t* q = Alloc(100, Api::kCudaMallocHost);
  EXPECT_EQ(engine_->IpcUserAddress(kContext, reinterpret_cast<uint64_t>(q)),
            reinterpret_cast<uint64_t>(q));
}

TEST_F(GuardTest, TeardownTakesTheFinalPictureThenForgets) {
  uint8_t* p = Alloc(100);
  Launch("k");
  p[100] = 1;
  engine_->BeforeContextTeardown(0, kContext);
  EXPECT_EQ(Errors().size(), 1u);
  EXPECT_EQ(Errors()[0].check, "teardown");
  engine_->OnSynchronized(kContext);  // forgotten: nothing more
  EXPECT_EQ(Errors().size(), 1u);
}

TEST_F(GuardTest, ReportCountsGuardedBlocks) {
  Alloc(100);
  Alloc(100, Api::kCudaMallocHost);
  ReportData r = engine_->BuildReport("request");
  EXPECT_TRUE(r.guard.enabled);
  EXPECT_EQ(r.guard.guarded, 1u);
  EXPECT_EQ(r.guard.check, "sync");
}

}  // namespace
}  // namespace gmt
