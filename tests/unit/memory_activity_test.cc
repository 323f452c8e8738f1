// CUPTI memory activity: the cross-check of CUPTI's memory
// records against what the hooks saw (lib/registry/memory_activity.h), and the
// engine's use of it — an allocation no hook saw is added once, a free of it
// is no error, a hooked allocation is never added twice.
#include "lib/registry/memory_activity.h"

#include <memory>
#include <set>

#include "gtest/gtest.h"
#include "lib/core/driver_callback.h"
#include "lib/engine/engine.h"

namespace gmt {
namespace {

constexpr uint64_t kA = 0x7f2000000000ull;
constexpr uint64_t kB = kA + 0x10000;

MemoryActivity Rec(MemoryActivity::Op op, uint64_t address, uint64_t bytes,
                   uint64_t timestamp, bool async = true) {
  MemoryActivity a;
  a.op = op;
  a.address = address;
  a.bytes = bytes;
  a.timestamp = timestamp;
  a.async = async;
  a.pool = async;
  return a;
}
MemoryActivity Alloc(uint64_t address, uint64_t bytes, uint64_t t,
                     bool async = true) {
  return Rec(MemoryActivity::Op::kAlloc, address, bytes, t, async);
}
MemoryActivity Release(uint64_t address, uint64_t t) {
  return Rec(MemoryActivity::Op::kRelease, address, 0, t);
}

class SetView : public MemoryActivityCrossCheck::View {
 public:
  bool LiveAt(uint64_t address) const override { return live.count(address); }
  bool GraphAddress(uint64_t address) const override {
    return graph.count(address);
  }
  std::set<uint64_t> live;
  std::set<uint64_t> graph;
};

TEST(MemoryActivityTest, WhatAHookHoldsIsNeverAdopted) {
  MemoryActivityCrossCheck c;
  SetView view;
  view.live.insert(kA);
  c.Ingest({Alloc(kA, 100, 1)});
  EXPECT_TRUE(c.Reconcile(view, /*final=*/true).adopt.empty());
  EXPECT_EQ(c.dropped_hooked(), 1u);
  // Not even later, once the hook freed it (its release record pending).
  view.live.clear();
  EXPECT_TRUE(c.Reconcile(view, true).adopt.empty());
}

TEST(MemoryActivityTest, UnexplainedPoolMemoryIsAdoptedOnTheSecondLook) {
  MemoryActivityCrossCheck c;
  SetView view;
  c.Ingest({Alloc(kA, 100, 1)});
  // A hook may be about to record it (CUDA returned, the hook not yet).
  EXPECT_TRUE(c.Reconcile(view, false).adopt.empty());
  MemoryActivityCrossCheck::Decision d = c.Reconcile(view, false);
  ASSERT_EQ(d.adopt.size(), 1u);
  EXPECT_EQ(d.adopt[0].address, kA);
  EXPECT_EQ(d.adopt[0].bytes, 100u);
  // Once.
  EXPECT_TRUE(c.Reconcile(view, true).adopt.empty());
  EXPECT_EQ(c.adopted(), 1u);
}

TEST(MemoryActivityTest, TheFinalLookAdoptsAtOnce) {
  MemoryActivityCrossCheck c;
  SetView view;
  c.Ingest({Alloc(kA, 100, 1)});
  EXPECT_EQ(c.Reconcile(view, /*final=*/true).adopt.size(), 1u);
}

TEST(MemoryActivityTest, PlainHostAndKnownGraphMemoryAreNotItsBusiness) {
  MemoryActivityCrossCheck c;
  SetView view;
  view.graph.insert(kB);
  MemoryActivity pinned = Alloc(kA + 512, 64, 3);
  pinned.kind = MemoryKind::kPinnedHost;
  c.Ingest({Alloc(kA, 100, 1, /*async=*/false), Alloc(kB, 100, 2), pinned});
  EXPECT_TRUE(c.Reconcile(view, true).adopt.empty());
}

TEST(MemoryActivityTest, AnAdoptedBlockReleasedIsReleased) {
  MemoryActivityCrossCheck c;
  SetView view;
  c.Ingest({Alloc(kA, 100, 1)});
  ASSERT_EQ(c.Reconcile(view, true).adopt.size(), 1u);
  c.Ingest({Release(kA, 2)});
  MemoryActivityCrossCheck::Decision d = c.Reconcile(view, true);
  ASSERT_EQ(d.release.size(), 1u);
  EXPECT_EQ(d.release[0].address, kA);
  EXPECT_FALSE(c.LiveInCupti(kA));
}

TEST(MemoryActivityTest, RecordsApplyInTimestampOrder) {
  MemoryActivityCrossCheck c;
  SetView view;
  // Two threads' buffers: the reuse of kA arrives before its first release.
  c.Ingest({Alloc(kA, 200, 3), Alloc(kA, 100, 1), Release(kA, 2)});
  EXPECT_TRUE(c.LiveInCupti(kA));
  MemoryActivityCrossCheck::Decision d = c.Reconcile(view, true);
  ASSERT_EQ(d.adopt.size(), 1u);
  EXPECT_EQ(d.adopt[0].bytes, 200u);
}

TEST(MemoryActivityTest, ExplainFindsLiveOrJustReleasedMemoryNoHookHeld) {
  MemoryActivityCrossCheck c;
  SetView view;
  c.Ingest({Alloc(kA, 100, 1), Alloc(kB, 300, 2)});
  // kA: the free being decided happens before its release is recorded.
  std::optional<MemoryActivity> a = c.Explain(kA, view);
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->bytes, 100u);
  EXPECT_FALSE(c.Explain(kA, view).has_value());  // once
  // kB: released already (the free was seen inside a callback, decided now).
  c.Ingest({Release(kB, 3)});
  std::optional<MemoryActivity> b = c.Explain(kB, view);
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->bytes, 300u);
  // Nothing for an address CUPTI never saw.
  EXPECT_FALSE(c.Explain(kB + 4096, view).has_value());
}

TEST(MemoryActivityTest, ExplainNeverCoversWhatAHookHeld) {
  MemoryActivityCrossCheck c;
  SetView view;
  view.live.insert(kA);
  c.Ingest({Alloc(kA, 100, 1)});
  c.Reconcile(view, false);  // kA: a hook's
  view.live.clear();         // the hook freed it; CUPTI's release is pending
  EXPECT_FALSE(c.Explain(kA, view).has_value());  // a second free: an error
}

// ---- The engine, with a source of records
// ---------------------------------------

class ListSource : public MemoryActivitySource {
 public:
  void Drain(bool flush, std::vector<MemoryActivity>* out) override {
    ++drains;
    if (flush) ++flushes;
    out->insert(out->end(), pending.begin(), pending.end());
    pending.clear();
  }
  std::vector<MemoryActivity> pending;
  int drains = 0;
  int flushes = 0;
};

Options QuietOptions() {
  Options o;
  o.print_errors = false;
  o.symbolize = false;
  o.stack_depth = 0;
  o.report = ReportFormats();  // report=none
  return o;
}

class EngineActivityTest : public ::testing::Test {
 protected:
  EngineActivityTest() : engine_(std::make_unique<Engine>(QuietOptions())) {
    SetMemoryActivitySource(&source_);
  }
  ~EngineActivityTest() override { SetMemoryActivitySource(nullptr); }

  void Free(Api api, uint64_t address, bool cuda_ok) {
    FreeTicket t = engine_->BeginFree(api, address, kNoStack);
    engine_->EndFree(t, cuda_ok, cuda_ok ? 0 : 1,
                     cuda_ok ? "CUDA_SUCCESS" : "CUDA_ERROR_INVALID_VALUE");
  }
  ReportData::Summary Summary() {
    return engine_->BuildReport("request").summary;
  }
  bool Live(uint64_t address) {
    for (const AllocationRecord& r : engine_->LiveAllocations()) {
      if (r.address == address) return r.api == Api::kCuptiActivity;
    }
    return false;
  }

  ListSource source_;
  std::unique_ptr<Engine> engine_;
};

TEST_F(EngineActivityTest, AFreeOfMemoryNoHookSawIsOrdinary) {
  source_.pending = {Alloc(kA, 4096, 1)};
  Free(Api::kCuMemFreeAsync, kA, true);
  EXPECT_EQ(source_.flushes, 1);  // outside a callback: flushed at once
  EXPECT_EQ(engine_->ErrorCount(), 0u);
  ReportData::Summary s = Summary();
  EXPECT_EQ(s.allocations, 1u);
  EXPECT_EQ(s.frees, 1u);
  EXPECT_EQ(s.untracked_frees, 0u);
}

TEST_F(EngineActivityTest, HookedBlocksAreNotAddedAgain) {
  AllocEvent e;
  e.api = Api::kCudaMallocAsync;
  e.address = kA;
  e.bytes = 4096;
  engine_->OnAlloc(e);
  source_.pending = {Alloc(kA, 4096, 1)};
  EXPECT_EQ(engine_->ReconcileActivity(true), 0u);
  engine_->MarkExiting();
  EXPECT_EQ(engine_->ReconcileActivity(true), 0u);
  EXPECT_EQ(Summary().allocations, 1u);
}

TEST_F(EngineActivityTest, NeverFreedMemoryNoHookSawLeaksAtExit) {
  source_.pending = {Alloc(kA, 2048, 1)};
  EXPECT_EQ(engine_->ReconcileActivity(true), 0u);  // first look: wait
  engine_->MarkExiting();
  EXPECT_EQ(engine_->ReconcileActivity(true), 1u);
  EXPECT_TRUE(Live(kA));
  ReportData r = engine_->BuildReport("request");
  ASSERT_EQ(r.summary.leaks, 1u);
  EXPECT_EQ(r.summary.leaked_bytes, 2048u);
  // CUPTI later saw it released (a path no hook saw): it leaves the registry.
  source_.pending = {Release(kA, 2)};
  engine_->ReconcileActivity(true);
  EXPECT_FALSE(Live(kA));
}

// Inside a CUPTI callback nothing is flushed; a free that would be an error
// waits for the next reconciliation, which reports it only if the records do
// not explain it.
TEST_F(EngineActivityTest, FreesInsideCallbacksAreDecidedAfterAFlush) {
  {
    DriverCallbackScope in_callback;
    Free(Api::kCuMemFree, kA, false);  // CUDA refused: an error, if not ours
    Free(Api::kCuMemFree, kB, false);
  }
  EXPECT_EQ(source_.flushes, 0);
  EXPECT_EQ(engine_->ErrorCount(), 0u);  // not decided yet
  // The flush brings kA's allocation (and its release): kA is explained.
  source_.pending = {Alloc(kA, 64, 1), Release(kA, 2)};
  engine_->ReconcileActivity(true);
  EXPECT_EQ(engine_->ErrorCount(), 1u);  // kB's
  ReportData r = engine_->BuildReport("request");
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors[0].kind, ErrorKind::kInvalidFree);
  EXPECT_EQ(r.errors[0].address, kB);
  EXPECT_EQ(r.summary.allocations, 1u);
  EXPECT_EQ(r.summary.frees, 1u);
}

TEST_F(EngineActivityTest, ADoubleFreeStaysOne) {
  AllocEvent e;
  e.api = Api::kCuMemAllocAsync;
  e.address = kA;
  e.bytes = 64;
  engine_->OnAlloc(e);
  Free(Api::kCuMemFreeAsync, kA, true);
  // CUPTI's records of the hooked allocation and its release.
  source_.pending = {Alloc(kA, 64, 1), Release(kA, 2)};
  Free(Api::kCuMemFree, kA, false);
  EXPECT_EQ(engine_->ErrorCount(), 1u);
  ReportData r = engine_->BuildReport("request");
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors[0].kind, ErrorKind::kDoubleFree);
}

}  // namespace
}  // namespace gmt
