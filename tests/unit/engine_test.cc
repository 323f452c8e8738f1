// Engine: the alloc/free protocol, error detection, VMM lifetimes, context
// teardown and leak grouping, on an Engine built from its own Options (never
// the process-wide one).
#include "lib/engine/engine.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <memory>
#include <ostream>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gmt {

// Readable failure messages: "double-free" rather than "1-byte object <03>".
void PrintTo(ErrorKind kind, std::ostream* os) { *os << ErrorKindName(kind); }
void PrintTo(Api api, std::ostream* os) { *os << ApiName(api); }

namespace {

using ::testing::HasSubstr;
using State = FreeTicket::State;

constexpr uint64_t kBase = 0x7f0000000000ull;
constexpr uint64_t kStride = uint64_t{2} << 20;
constexpr uint64_t kMiB = 1024 * 1024;
constexpr int kCudaErrorInvalidValue = 1;

Options QuietOptions() {
  Options o;
  o.print_errors = false;
  o.symbolize = false;
  o.stack_depth = 0;
  o.report = ReportFormats();  // report=none
  return o;
}

class EngineTest : public ::testing::Test {
 protected:
  explicit EngineTest(Options options = QuietOptions())
      : engine_(std::make_unique<Engine>(options)) {}

  void Alloc(uint64_t address, uint64_t bytes, Api api = Api::kCudaMalloc,
             int device = 0, uint64_t context = 0, StackId stack = kNoStack) {
    AllocEvent e;
    e.api = api;
    e.address = address;
    e.bytes = bytes;
    e.device = device;
    e.context = context;
    e.stack = stack;
    engine_->OnAlloc(e);
  }

  // A whole free as a shim does it: Begin, CUDA's answer, End.
  FreeTicket Free(uint64_t address, bool cuda_ok, Api api = Api::kCudaFree,
                  StackId stack = kNoStack) {
    FreeTicket t = engine_->BeginFree(api, address, stack);
    engine_->EndFree(t, cuda_ok, cuda_ok ? 0 : kCudaErrorInvalidValue,
                     cuda_ok ? "cudaSuccess" : "cudaErrorInvalidValue");
    return t;
  }

  bool IsLive(uint64_t address) {
    for (const AllocationRecord& r : engine_->LiveAllocations()) {
      if (r.address == address) return true;
    }
    return false;
  }

  ReportData Report() { return engine_->BuildReport("request"); }

  std::unique_ptr<Engine> engine_;
};

TEST_F(EngineTest, HappyPathUpdatesUsage) {
  Alloc(kBase, 4 * kMiB);
  Alloc(kBase + 4 * kMiB, 2 * kMiB);
  UsageFigures u = engine_->DeviceUsage(0);
  EXPECT_EQ(u.live_bytes, 6 * kMiB);
  EXPECT_EQ(u.peak_bytes, 6 * kMiB);
  EXPECT_EQ(u.allocations, 2u);
  EXPECT_EQ(u.frees, 0u);

  FreeTicket t = engine_->BeginFree(Api::kCudaFree, kBase, kNoStack);
  EXPECT_EQ(t.state, State::kRemoved);
  EXPECT_EQ(t.record.bytes, 4 * kMiB);
  // Removed before the real free: the address is already gone...
  EXPECT_FALSE(IsLive(kBase));
  engine_->EndFree(t, true, 0, "cudaSuccess");
  u = engine_->DeviceUsage(0);
  EXPECT_EQ(u.live_bytes, 2 * kMiB);
  EXPECT_EQ(u.peak_bytes, 6 * kMiB);
  EXPECT_EQ(u.frees, 1u);
  EXPECT_EQ(engine_->ErrorCount(), 0u);

  Alloc(kBase, kMiB);  // the address handed out again
  EXPECT_EQ(engine_->DeviceUsage(0).live_bytes, 3 * kMiB);
  EXPECT_EQ(engine_->DeviceUsage(0).peak_bytes, 6 * kMiB);
  Free(kBase, true);
  Free(kBase + 4 * kMiB, true);
  u = engine_->DeviceUsage(0);
  EXPECT_EQ(u.live_bytes, 0u);
  EXPECT_EQ(u.allocations, 3u);
  EXPECT_EQ(u.frees, 3u);
  EXPECT_EQ(engine_->ErrorCount(), 0u);
  EXPECT_TRUE(engine_->LiveAllocations().empty());
}

TEST_F(EngineTest, NullFreeIsIgnored) {
  FreeTicket t = Free(0, true);
  EXPECT_EQ(t.state, State::kIgnored);
  EXPECT_EQ(engine_->ErrorCount(), 0u);
  EXPECT_EQ(Report().summary.untracked_frees, 0u);
}

TEST_F(EngineTest, HostAndDeviceUsageAreSeparate) {
  Alloc(kBase, 100, Api::kCudaMallocHost, kHostDevice);
  Alloc(kBase + kStride, 200, Api::kCudaMalloc, 1);
  Alloc(kBase + 2 * kStride, 300, Api::kCudaHostRegister, kHostDevice);
  EXPECT_EQ(engine_->DeviceUsage(kHostDevice).live_bytes, 100u)
      << "registered host memory takes no new memory";
  EXPECT_EQ(engine_->DeviceUsage(1).live_bytes, 200u);
  EXPECT_EQ(engine_->DeviceUsage(0).live_bytes, 0u);
  Free(kBase, true, Api::kCudaFreeHost);
  EXPECT_EQ(engine_->DeviceUsage(kHostDevice).live_bytes, 0u);
  Free(kBase + 2 * kStride, true, Api::kCudaHostUnregister);
  EXPECT_EQ(engine_->ErrorCount(), 0u);
}

TEST_F(EngineTest, FailedFreePutsTheBlockBack) {
  Alloc(kBase, 4096);
  FreeTicket t = engine_->BeginFree(Api::kCudaFree, kBase, kNoStack);
  ASSERT_EQ(t.state, State::kRemoved);
  // A plain refusal (a sticky error such as 700 would also be reported as a
  // cuda-error: tests/unit/crash_report_test.cc).
  engine_->EndFree(t, false, 1, "cudaErrorInvalidValue");
  EXPECT_TRUE(IsLive(kBase));
  EXPECT_EQ(engine_->DeviceUsage(0).live_bytes, 4096u);
  EXPECT_EQ(engine_->DeviceUsage(0).frees, 0u);
  EXPECT_EQ(engine_->ErrorCount(), 0u);
  // And a later free still works, with no double-free.
  Free(kBase, true);
  EXPECT_FALSE(IsLive(kBase));
  EXPECT_EQ(engine_->DeviceUsage(0).live_bytes, 0u);
  EXPECT_EQ(engine_->ErrorCount(), 0u);
}

TEST_F(EngineTest, DoubleFreeIsOneErrorWithPreviousFree) {
  Alloc(kBase, 4096);
  Free(kBase, true);
  FreeTicket t = Free(kBase, false);
  EXPECT_EQ(t.state, State::kUnknown);
  ASSERT_EQ(engine_->ErrorCount(), 1u);
  ReportData r = Report();
  ASSERT_EQ(r.errors.size(), 1u);
  const ErrorRecord& e = r.errors[0];
  EXPECT_EQ(e.kind, ErrorKind::kDoubleFree);
  EXPECT_EQ(e.api, Api::kCudaFree);
  EXPECT_EQ(e.address, kBase);
  EXPECT_EQ(e.cuda_result, kCudaErrorInvalidValue);
  EXPECT_EQ(e.cuda_result_name, "cudaErrorInvalidValue");
  ASSERT_TRUE(e.previous_free.has_value());
  EXPECT_EQ(e.previous_free->free_api, Api::kCudaFree);
  EXPECT_EQ(e.previous_free->allocation.bytes, 4096u);
  ASSERT_TRUE(e.allocation.has_value());
  EXPECT_EQ(e.allocation->address, kBase);
  EXPECT_EQ(r.summary.errors, 1u);
  // Usage counted the block freed once.
  EXPECT_EQ(engine_->DeviceUsage(0).frees, 1u);
  EXPECT_EQ(engine_->DeviceUsage(0).live_bytes, 0u);
}

TEST_F(EngineTest, DoubleFreeKeepsTheStacksOfBothFrees) {
  const uintptr_t first[] = {0x1000, 0x2000};
  const uintptr_t second[] = {0x3000, 0x4000};
  StackId s1 = engine_->depot().Put(first, 2);
  StackId s2 = engine_->depot().Put(second, 2);
  Alloc(kBase, 64);
  Free(kBase, true, Api::kCudaFree, s1);
  Free(kBase, false, Api::kCudaFree, s2);
  ReportData r = Report();
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors[0].stack, s2);
  EXPECT_EQ(r.errors[0].previous_free->free_stack, s1);
  EXPECT_TRUE(r.stacks.contains(s1));
  EXPECT_TRUE(r.stacks.contains(s2));
  ASSERT_EQ(r.stacks[s1].size(), 2u);
  EXPECT_EQ(r.stacks[s1][0].address, 0x1000u);
}

TEST_F(EngineTest, InteriorPointerIsInvalidFreeWithOffset) {
  Alloc(kBase, 1000);
  FreeTicket t = Free(kBase + 100, false);
  EXPECT_EQ(t.state, State::kUnknown);
  ReportData r = Report();
  ASSERT_EQ(r.errors.size(), 1u);
  const ErrorRecord& e = r.errors[0];
  EXPECT_EQ(e.kind, ErrorKind::kInvalidFree);
  EXPECT_EQ(e.address, kBase + 100);
  EXPECT_EQ(e.offset, 100);
  ASSERT_TRUE(e.allocation.has_value());
  EXPECT_EQ(e.allocation->address, kBase);
  EXPECT_EQ(e.allocation->bytes, 1000u);
  EXPECT_THAT(e.detail, HasSubstr("100 bytes into"));
  // The block itself is untouched.
  EXPECT_TRUE(IsLive(kBase));
  EXPECT_EQ(engine_->DeviceUsage(0).live_bytes, 1000u);
}

TEST_F(EngineTest, UnknownPointerRefusedByCudaIsInvalidFree) {
  Free(0xdeadbeef00, false);
  ReportData r = Report();
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors[0].kind, ErrorKind::kInvalidFree);
  EXPECT_EQ(r.errors[0].address, 0xdeadbeef00u);
  EXPECT_FALSE(r.errors[0].allocation.has_value());
  EXPECT_EQ(r.summary.untracked_frees, 0u);
}

TEST_F(EngineTest, UnknownPointerAcceptedByCudaIsUntrackedNotAnError) {
  Free(0xdeadbeef00, true);
  EXPECT_EQ(engine_->ErrorCount(), 0u);
  ReportData r = Report();
  EXPECT_TRUE(r.errors.empty());
  EXPECT_EQ(r.summary.untracked_frees, 1u);
  EXPECT_EQ(engine_->DeviceUsage(0).frees, 0u);
}

// The address of a block freed earlier is handed out again by a path the tool
// does not see (a CUDA graph memory node, an allocation made inside another
// intercepted call) and the program frees it; CUDA accepts. CUDA knew the
// block, so this is an untracked free, not a double free.
TEST_F(EngineTest, AcceptedFreeOfAReusedAddressIsNotADoubleFree) {
  Alloc(kBase, 4096);
  Free(kBase, true);
  // ... kBase allocated again, unseen ...
  Free(kBase, true);
  ReportData r = Report();
  EXPECT_TRUE(r.errors.empty())
      << "reported " << ErrorKindName(r.errors[0].kind)
      << " although CUDA accepted the free: " << r.errors[0].detail;
  EXPECT_EQ(r.summary.untracked_frees, 1u);
}

TEST_F(EngineTest, ApiMismatchRefusedByCudaKeepsTheBlockLive) {
  Alloc(kBase, 4096, Api::kCudaMalloc);
  FreeTicket t = Free(kBase, false, Api::kCudaFreeHost);
  EXPECT_EQ(t.state, State::kMismatch);
  ReportData r = Report();
  ASSERT_EQ(r.errors.size(), 1u);
  const ErrorRecord& e = r.errors[0];
  EXPECT_EQ(e.kind, ErrorKind::kApiMismatch);
  EXPECT_EQ(e.api, Api::kCudaFreeHost);
  EXPECT_EQ(e.address, kBase);
  ASSERT_TRUE(e.allocation.has_value());
  EXPECT_EQ(e.allocation->api, Api::kCudaMalloc);
  EXPECT_TRUE(IsLive(kBase));
  EXPECT_EQ(engine_->DeviceUsage(0).live_bytes, 4096u);
  // The right free then succeeds quietly.
  Free(kBase, true, Api::kCudaFree);
  EXPECT_EQ(engine_->ErrorCount(), 1u);
  EXPECT_EQ(engine_->DeviceUsage(0).live_bytes, 0u);
}

TEST_F(EngineTest, ApiMismatchAcceptedByCudaReleasesTheBlock) {
  Alloc(kBase, 4096, Api::kCudaMallocHost, kHostDevice);
  Free(kBase, true, Api::kCudaFree);
  ASSERT_EQ(engine_->ErrorCount(), 1u);
  EXPECT_EQ(Report().errors[0].kind, ErrorKind::kApiMismatch);
  EXPECT_FALSE(IsLive(kBase));
  EXPECT_EQ(engine_->DeviceUsage(kHostDevice).live_bytes, 0u);
}

// A block released by the wrong API (CUDA accepted it) is gone: freeing it
// again is a double free, not a free of an address nobody returned.
TEST_F(EngineTest, FreeAfterAcceptedMismatchIsADoubleFree) {
  Alloc(kBase, 4096, Api::kCudaMallocHost, kHostDevice);
  Free(kBase, true, Api::kCudaFree);       // api-mismatch, accepted
  Free(kBase, false, Api::kCudaFreeHost);  // refused: already gone
  ReportData r = Report();
  ASSERT_EQ(r.errors.size(), 2u);
  EXPECT_EQ(r.errors[0].kind, ErrorKind::kApiMismatch);
  EXPECT_EQ(r.errors[1].kind, ErrorKind::kDoubleFree)
      << "got " << ErrorKindName(r.errors[1].kind) << ": "
      << r.errors[1].detail;
}

// cudaMalloc(&p, 0) succeeds and gives p == nullptr. There is no block: it
// must not be listed as a leak, and cudaFree(nullptr) is a no-op anyway.
TEST_F(EngineTest, SuccessfulNullAllocationIsNoBlock) {
  Alloc(0, 0, Api::kCudaMalloc, 0);
  Free(0, true);
  EXPECT_TRUE(engine_->LiveAllocations().empty())
      << "a null pointer is tracked as a live block";
  ReportData r = Report();
  EXPECT_TRUE(r.leaks.empty()) << "reported as a leak of 0 bytes at 0x0";
  EXPECT_EQ(r.summary.leaks, 0u);
}

TEST_F(EngineTest, ReusedAddressWithUnseenFreeIsCountedFreed) {
  Alloc(kBase, 100);
  Alloc(kBase, 300);  // CUDA gave the address again: its free went unseen
  EXPECT_EQ(engine_->DeviceUsage(0).live_bytes, 300u);
  EXPECT_EQ(Report().summary.untracked_frees, 1u);
  EXPECT_EQ(engine_->LiveAllocations().size(), 1u);
}

constexpr uint64_t kHandle = 0x5000;
constexpr uint64_t kVa = 0x7e0000000000ull;

TEST_F(EngineTest, VmmReleasedWhileMappedCountsUntilUnmap) {
  Alloc(kHandle, 2 * kMiB, Api::kCuMemCreate, 0);
  Alloc(kVa, 2 * kMiB, Api::kCuMemAddressReserve, 0);
  EXPECT_EQ(engine_->DeviceUsage(0).live_bytes, 2 * kMiB)
      << "a reservation takes no memory";
  engine_->OnVmmMap(kVa, 2 * kMiB, kHandle);
  FreeTicket t = Free(kHandle, true, Api::kCuMemRelease);
  EXPECT_EQ(t.state, State::kRemoved);
  EXPECT_EQ(engine_->DeviceUsage(0).live_bytes, 2 * kMiB)
      << "released but still mapped: the memory is still in use";
  EXPECT_EQ(engine_->DeviceUsage(0).frees, 0u);
  engine_->OnVmmUnmap(kVa, 2 * kMiB);
  EXPECT_EQ(engine_->DeviceUsage(0).live_bytes, 0u);
  EXPECT_EQ(engine_->DeviceUsage(0).frees, 1u);
  Free(kVa, true, Api::kCuMemAddressFree);
  EXPECT_TRUE(engine_->LiveAllocations().empty());
  EXPECT_EQ(engine_->ErrorCount(), 0u);
}

TEST_F(EngineTest, VmmReleaseWithoutMapFreesAtOnce) {
  Alloc(kHandle, 2 * kMiB, Api::kCuMemCreate, 0);
  Free(kHandle, true, Api::kCuMemRelease);
  EXPECT_EQ(engine_->DeviceUsage(0).live_bytes, 0u);
  EXPECT_EQ(engine_->DeviceUsage(0).frees, 1u);
  EXPECT_TRUE(engine_->LiveAllocations().empty());
}

TEST_F(EngineTest, VmmUnmapBeforeReleaseFreesAtRelease) {
  Alloc(kHandle, 2 * kMiB, Api::kCuMemCreate, 0);
  engine_->OnVmmMap(kVa, 2 * kMiB, kHandle);
  engine_->OnVmmUnmap(kVa, 2 * kMiB);
  EXPECT_EQ(engine_->DeviceUsage(0).live_bytes, 2 * kMiB);
  Free(kHandle, true, Api::kCuMemRelease);
  EXPECT_EQ(engine_->DeviceUsage(0).live_bytes, 0u);
  EXPECT_EQ(engine_->ErrorCount(), 0u);
}

TEST_F(EngineTest, VmmTwoMappingsNeedTwoUnmaps) {
  Alloc(kHandle, 2 * kMiB, Api::kCuMemCreate, 0);
  engine_->OnVmmMap(kVa, 2 * kMiB, kHandle);
  engine_->OnVmmMap(kVa + 16 * kMiB, 2 * kMiB, kHandle);
  Free(kHandle, true, Api::kCuMemRelease);
  engine_->OnVmmUnmap(kVa, 2 * kMiB);
  EXPECT_EQ(engine_->DeviceUsage(0).live_bytes, 2 * kMiB);
  engine_->OnVmmUnmap(kVa + 16 * kMiB, 2 * kMiB);
  EXPECT_EQ(engine_->DeviceUsage(0).live_bytes, 0u);
}

TEST_F(EngineTest, VmmHandlesAndPointersAreSeparateKeySpaces) {
  // A handle value that equals a device pointer must not collide with it.
  Alloc(kBase, 4096, Api::kCudaMalloc, 0);
  Alloc(kBase, 2 * kMiB, Api::kCuMemCreate, 0);
  EXPECT_EQ(Report().summary.untracked_frees, 0u);
  Free(kBase, true, Api::kCuMemRelease);
  EXPECT_TRUE(IsLive(kBase));
  EXPECT_EQ(engine_->DeviceUsage(0).live_bytes, 4096u);
  EXPECT_EQ(engine_->ErrorCount(), 0u);
}

TEST_F(EngineTest, VmmDoubleReleaseIsADoubleFree) {
  Alloc(kHandle, 2 * kMiB, Api::kCuMemCreate, 0);
  Free(kHandle, true, Api::kCuMemRelease);
  Free(kHandle, false, Api::kCuMemRelease);
  ReportData r = Report();
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors[0].kind, ErrorKind::kDoubleFree);
}

// cuMemRelease of a handle that is still mapped keeps the memory until the
// unmap; releasing the same handle a second time is still a double free.
TEST_F(EngineTest, VmmSecondReleaseWhileMappedIsADoubleFree) {
  Alloc(kHandle, 2 * kMiB, Api::kCuMemCreate, 0);
  engine_->OnVmmMap(kVa, 2 * kMiB, kHandle);
  Free(kHandle, true, Api::kCuMemRelease);
  // The driver refuses the second release (the handle is gone for it).
  Free(kHandle, false, Api::kCuMemRelease);
  ReportData r = Report();
  ASSERT_EQ(r.errors.size(), 1u)
      << "the second cuMemRelease of a mapped handle went unreported";
  EXPECT_EQ(r.errors[0].kind, ErrorKind::kDoubleFree);
  engine_->OnVmmUnmap(kVa, 2 * kMiB);
  EXPECT_EQ(engine_->DeviceUsage(0).live_bytes, 0u);
}

TEST_F(EngineTest, ContextTeardownMovesBlocksToLeaks) {
  constexpr uint64_t kCtxA = 0xA000, kCtxB = 0xB000;
  Alloc(kBase, 4 * kMiB, Api::kCudaMalloc, 0, kCtxA);
  Alloc(kBase + kStride, kMiB, Api::kCudaMallocHost, kHostDevice, kCtxA);
  Alloc(kBase + 2 * kStride, 8 * kMiB, Api::kCudaMalloc, 0, kCtxB);
  engine_->OnContextTeardown(0, kCtxA, "cuCtxDestroy");
  EXPECT_FALSE(IsLive(kBase));
  EXPECT_FALSE(IsLive(kBase + kStride));
  EXPECT_TRUE(IsLive(kBase + 2 * kStride));
  EXPECT_EQ(engine_->DeviceUsage(0).live_bytes, 8 * kMiB);
  EXPECT_EQ(engine_->DeviceUsage(kHostDevice).live_bytes, 0u);

  ReportData r = Report();
  ASSERT_EQ(r.leaks.size(), 3u);
  int released = 0;
  for (const ReportData::Leak& leak : r.leaks) {
    if (leak.address == kBase + 2 * kStride) {
      EXPECT_EQ(leak.released_by, "");
    } else {
      EXPECT_EQ(leak.released_by, "cuCtxDestroy");
      ++released;
    }
  }
  EXPECT_EQ(released, 2);
  EXPECT_EQ(r.summary.leaks, 3u);
  EXPECT_EQ(r.summary.leaked_bytes, 13 * kMiB);

  // The address may be handed out again without a false replacement.
  Alloc(kBase, 64, Api::kCudaMalloc, 0, kCtxB);
  EXPECT_EQ(Report().summary.untracked_frees, 0u);
}

// Blocks released by a teardown were not freed by the program: usage drops,
// the free count does not.
TEST_F(EngineTest, TeardownLowersUsageButCountsNoFrees) {
  Alloc(kBase, 4 * kMiB, Api::kCudaMalloc, 0, 0xA000);
  Alloc(kBase + kStride, kMiB, Api::kCudaMalloc, 0, 0xA000);
  Free(kBase + kStride, true);
  engine_->OnContextTeardown(0, 0xA000, "cuCtxDestroy");
  UsageFigures u = engine_->DeviceUsage(0);
  EXPECT_EQ(u.live_bytes, 0u);
  EXPECT_EQ(u.peak_bytes, 5 * kMiB);
  EXPECT_EQ(u.allocations, 2u);
  EXPECT_EQ(u.frees, 1u);
  ReportData r = Report();
  EXPECT_EQ(r.summary.frees, 1u);
  ASSERT_EQ(r.leaks.size(), 1u);
  EXPECT_EQ(r.leaks[0].released_by, "cuCtxDestroy");
}

// Once exit has begun, contexts torn down by the runtime's own shutdown do not
// turn live blocks into "released by" entries: they stay plain leaks.
TEST_F(EngineTest, TeardownDuringExitLeavesBlocksLive) {
  Alloc(kBase, kMiB, Api::kCudaMalloc, 0, 0xA000);
  engine_->MarkExiting();
  engine_->OnContextTeardown(0, 0xA000, "cuCtxDestroy");
  EXPECT_TRUE(IsLive(kBase));
  ReportData r = Report();
  ASSERT_EQ(r.leaks.size(), 1u);
  EXPECT_EQ(r.leaks[0].released_by, "");
  EXPECT_EQ(engine_->DeviceUsage(0).live_bytes, kMiB);
}

TEST_F(EngineTest, DeviceResetDropsThatDeviceOnly) {
  Alloc(kBase, kMiB, Api::kCudaMalloc, 0, 0xA000);
  Alloc(kBase + kStride, kMiB, Api::kCudaMallocHost, kHostDevice, 0xA000);
  Alloc(kBase + 2 * kStride, kMiB, Api::kCudaMalloc, 1, 0xB000);
  Alloc(kBase + 3 * kStride, kMiB, Api::kCudaMalloc, 0, 0);  // no context
  engine_->OnContextTeardown(0, 0, "cudaDeviceReset");
  EXPECT_FALSE(IsLive(kBase));
  EXPECT_FALSE(IsLive(kBase + kStride));
  EXPECT_TRUE(IsLive(kBase + 2 * kStride));
  EXPECT_FALSE(IsLive(kBase + 3 * kStride));
  EXPECT_EQ(engine_->DeviceUsage(1).live_bytes, kMiB);
}

// The grouping itself (entries, their order and examples) is tested on
// made-up state in report_assembly_test.cc; here, that the engine's picture
// feeds it: the live blocks and not the freed one, the usage figures, the
// depot's stacks.
TEST_F(EngineTest, BuildReportGroupsTheLiveBlocksByCallSite) {
  const uintptr_t f1[] = {0x1111, 0x2222};
  const uintptr_t f2[] = {0x3333};
  StackId s1 = engine_->depot().Put(f1, 2);
  StackId s2 = engine_->depot().Put(f2, 1);
  // s1/cudaMalloc/device 0: three blocks, 6 MiB.
  Alloc(kBase, 1 * kMiB, Api::kCudaMalloc, 0, 0, s1);
  Alloc(kBase + kStride, 2 * kMiB, Api::kCudaMalloc, 0, 0, s1);
  Alloc(kBase + 2 * kStride, 3 * kMiB, Api::kCudaMalloc, 0, 0, s1);
  // s2: one block of 10 MiB.
  Alloc(kBase + 3 * kStride, 10 * kMiB, Api::kCudaMalloc, 0, 0, s2);
  // s1 but another device, and s1 but another API: separate groups.
  Alloc(kBase + 4 * kStride, 512, Api::kCudaMalloc, 1, 0, s1);
  Alloc(kBase + 5 * kStride, 256, Api::kCudaMallocManaged, 0, 0, s1);
  // Freed blocks are not leaks.
  Alloc(kBase + 6 * kStride, 100 * kMiB, Api::kCudaMalloc, 0, 0, s1);
  Free(kBase + 6 * kStride, true);

  ReportData r = Report();
  ASSERT_EQ(r.leaks.size(), 4u);
  EXPECT_EQ(r.leaks[0].stack, s2);
  EXPECT_EQ(r.leaks[1].stack, s1);
  EXPECT_EQ(r.leaks[1].count, 3u);
  for (size_t i = 1; i < r.leaks.size(); ++i) {
    EXPECT_GE(r.leaks[i - 1].bytes, r.leaks[i].bytes);
  }
  EXPECT_EQ(r.summary.leaks, 6u);
  EXPECT_EQ(r.summary.leaked_bytes, 16 * kMiB + 768);
  EXPECT_EQ(r.summary.allocations, 7u);
  EXPECT_EQ(r.summary.frees, 1u);
  EXPECT_EQ(r.summary.live_bytes_at_exit, 16 * kMiB + 768);
  // Every referenced stack is in the table.
  EXPECT_TRUE(r.stacks.contains(s1));
  EXPECT_TRUE(r.stacks.contains(s2));
  // Devices listed in index order, with their own figures.
  ASSERT_EQ(r.devices.size(), 2u);
  EXPECT_EQ(r.devices[0].index, 0);
  EXPECT_EQ(r.devices[1].index, 1);
  EXPECT_EQ(r.devices[1].live_bytes, 512u);
}

TEST_F(EngineTest, LeakCheckOffListsNoLeaks) {
  Options o = QuietOptions();
  o.leak_check = false;
  engine_ = std::make_unique<Engine>(o);
  Alloc(kBase, 100);
  ReportData r = Report();
  EXPECT_TRUE(r.leaks.empty());
  EXPECT_FALSE(r.leak_check);
}

// The exit scan tells lost blocks from reachable ones; with no candidate
// left (none live, or every leak silenced by a rule) it does not run.
TEST_F(EngineTest, ReachabilityScanRunsOnlyForLeakCandidates) {
  Options o = QuietOptions();
  engine_ = std::make_unique<Engine>(o);
  engine_->ScanReachability();
  EXPECT_FALSE(Report().reachability.ran) << "nothing live";

  engine_ = std::make_unique<Engine>(o);
  Alloc(0x6f0000100000, 4096);
  engine_->ScanReachability();
  EXPECT_TRUE(Report().reachability.ran);

  const std::string rules = testing::TempDir() + "/leaks.supp";
  {
    std::FILE* f = std::fopen(rules.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs("leak:*\n", f);
    std::fclose(f);
  }
  o.suppressions = rules;
  engine_ = std::make_unique<Engine>(o);
  Alloc(0x6f0000100000, 4096);
  engine_->ScanReachability();
  EXPECT_FALSE(Report().reachability.ran) << "every leak is suppressed";
}

// Health is read through NVML into the picture, except for a crash report,
// which may be written from a signal handler.
TEST_F(EngineTest, CrashReportReadsNoHealth) {
  Options o = QuietOptions();
  o.health = true;
  engine_ = std::make_unique<Engine>(o);
  EXPECT_FALSE(engine_->BuildReport("crash").health_read);
  EXPECT_TRUE(engine_->BuildReport("request").health_read);
  o.health = false;
  engine_ = std::make_unique<Engine>(o);
  EXPECT_FALSE(engine_->BuildReport("request").health_read);
}

// A sticky CUDA error is recorded once, and its crash section, with the
// blocks live at the time of each report, goes into every later report.
TEST_F(EngineTest, StickyErrorPutsACrashSectionInLaterReports) {
  Options o = QuietOptions();
  o.health = false;
  engine_ = std::make_unique<Engine>(o);
  Alloc(kBase, kMiB);
  EXPECT_FALSE(Report().crash.present);
  engine_->OnStickyError("cudaDeviceSynchronize", 700,
                         "cudaErrorIllegalAddress");
  Alloc(kBase + kStride, 2 * kMiB);
  ReportData r = Report();
  ASSERT_TRUE(r.crash.present);
  EXPECT_EQ(r.crash.kind, "cuda-error");
  EXPECT_EQ(r.crash.call, "cudaDeviceSynchronize");
  EXPECT_EQ(r.crash.cuda_result_name, "cudaErrorIllegalAddress");
  EXPECT_EQ(r.crash.live_blocks, 2u);
  EXPECT_EQ(r.crash.live_bytes, 3 * kMiB);
  EXPECT_EQ(r.crash.health_status, "see devices[].health");
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors[0].kind, ErrorKind::kCudaError);
}

TEST_F(EngineTest, NoteDeviceAppearsInTheReport) {
  EXPECT_FALSE(engine_->DeviceKnown(0));
  engine_->NoteDevice(0, "NVIDIA H200", 150 * 1024 * kMiB);
  EXPECT_TRUE(engine_->DeviceKnown(0));
  Alloc(kBase, 100);
  ReportData r = Report();
  ASSERT_EQ(r.devices.size(), 1u);
  EXPECT_EQ(r.devices[0].name, "NVIDIA H200");
  EXPECT_EQ(r.devices[0].total_bytes, 150 * 1024 * kMiB);
  EXPECT_EQ(r.devices[0].peak_bytes, 100u);
}

TEST_F(EngineTest, CaptureCallStackHonoursStackDepth) {
  EXPECT_EQ(engine_->CaptureCallStack(), kNoStack);  // stack_depth=0
  Options o = QuietOptions();
  o.stack_depth = 4;
  Engine deep(o);
  StackId id = deep.CaptureCallStack();
  ASSERT_NE(id, kNoStack);
  EXPECT_GE(deep.depot().Get(id).size(), 1u);
  EXPECT_LE(deep.depot().Get(id).size(), 4u);
}

TEST_F(EngineTest, ConcurrentAllocFreeKeepsExactFigures) {
  constexpr int kThreads = 16;
  constexpr int kPairs = 5000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      const uint64_t base = kBase + (uint64_t(t) << 36);
      for (int i = 0; i < kPairs; ++i) {
        Alloc(base + uint64_t(i) * 256, 256);
        Free(base + uint64_t(i) * 256, true);
      }
      Alloc(base, 1000);  // one survivor per thread
    });
  }
  for (std::thread& th : threads) th.join();
  UsageFigures u = engine_->DeviceUsage(0);
  EXPECT_EQ(u.live_bytes, uint64_t{kThreads} * 1000);
  EXPECT_EQ(u.allocations, uint64_t{kThreads} * (kPairs + 1));
  EXPECT_EQ(u.frees, uint64_t{kThreads} * kPairs);
  EXPECT_EQ(engine_->ErrorCount(), 0u);
  EXPECT_EQ(engine_->LiveAllocations().size(), size_t{kThreads});
}

// Two threads free the same block at once; CUDA accepts one and refuses the
// other. Exactly one error per round (a double free) must come out, never an
// invalid free.
TEST_F(EngineTest, RacingFreesOfOneBlockGiveOneDoubleFree) {
  constexpr int kRounds = 2000;
  int invalid = 0;
  for (int round = 0; round < kRounds; ++round) {
    const uint64_t a = kBase + uint64_t(round) * 256;
    Alloc(a, 256);
    std::atomic<int> go{0};
    absl::Mutex cuda_mu;
    bool cuda_freed = false;
    auto free_it = [&] {
      go.fetch_add(1);
      while (go.load() < 2) {
      }
      FreeTicket t;
      bool ok;
      {
        // The driver sees the frees in the order the engine did: the first
        // frees the block, the second is refused.
        absl::MutexLock lock(&cuda_mu);
        t = engine_->BeginFree(Api::kCudaFree, a, kNoStack);
        ok = !cuda_freed;
        cuda_freed = true;
      }
      engine_->EndFree(t, ok, ok ? 0 : 1, ok ? "cudaSuccess" : "bad");
    };
    std::thread t1(free_it), t2(free_it);
    t1.join();
    t2.join();
  }
  ReportData r = Report();
  EXPECT_EQ(r.errors.size(), size_t{kRounds});
  for (const ErrorRecord& e : r.errors) {
    if (e.kind == ErrorKind::kInvalidFree) ++invalid;
  }
  // BeginFree removes and remembers under one lock, so the second free always
  // finds the first one's history.
  EXPECT_EQ(invalid, 0);
  EXPECT_EQ(engine_->DeviceUsage(0).frees, uint64_t{kRounds});
}

}  // namespace
}  // namespace gmt
