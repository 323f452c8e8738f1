// NVTX memory regions: the heap/region bookkeeping
// (lib/registry/nvtx_mem_regions.h), and what the engine makes of it
// (lib/engine/engine_nvtx_mem.cc): region leaks by the region's own call site,
// the pool block's coverage, region overflows of copies, regions ending with
// their heap or block, and bad input counted, never fatal.
#include "lib/registry/nvtx_mem_regions.h"

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "lib/engine/engine.h"

namespace gmt {
namespace {

using ::testing::HasSubstr;

constexpr uint64_t kPool = 0x7f0000000000ull;
constexpr uint64_t kPoolBytes = 1 << 20;

NvtxMemRegion Region(uint64_t address, uint64_t bytes, uint64_t heap = kPool) {
  NvtxMemRegion r;
  r.record.api = Api::kNvtxRegion;
  r.record.address = address;
  r.record.bytes = bytes;
  r.heap = heap;
  return r;
}

NvtxMemHeap Heap(uint64_t address, uint64_t bytes) {
  NvtxMemHeap h;
  h.handle = address;
  h.address = address;
  h.bytes = bytes;
  return h;
}

// ---- Bookkeeping ----------------------------------------------------------

TEST(NvtxMemRegionsTest, RegisterFindResizeUnregister) {
  NvtxMemRegions regions;
  EXPECT_FALSE(regions.HasRegions());
  EXPECT_FALSE(regions.Any());
  regions.AddHeap(Heap(kPool, kPoolBytes));
  EXPECT_TRUE(regions.Any());
  EXPECT_FALSE(regions.HasRegions());

  NvtxMemRegions::AddResult added = regions.AddRegion(Region(kPool + 256, 100));
  EXPECT_FALSE(added.replaced);
  EXPECT_FALSE(added.overlaps);
  EXPECT_TRUE(regions.HasRegions());
  EXPECT_EQ(regions.live_regions(), 1u);

  ASSERT_TRUE(regions.FindContaining(kPool + 256));
  ASSERT_TRUE(regions.FindContaining(kPool + 355));
  EXPECT_EQ(regions.FindContaining(kPool + 300)->record.address, kPool + 256);
  EXPECT_FALSE(regions.FindContaining(kPool + 356));
  EXPECT_FALSE(regions.FindContaining(kPool + 255));

  EXPECT_TRUE(regions.ResizeRegion(kPool + 256, 200));
  EXPECT_TRUE(regions.FindContaining(kPool + 455));
  EXPECT_FALSE(regions.ResizeRegion(kPool + 257, 10)) << "not a region start";

  EXPECT_TRUE(regions.NameRegion(kPool + 256, "weights"));
  EXPECT_EQ(regions.Live()[0].name, "weights");

  EXPECT_FALSE(regions.RemoveRegion(kPool + 300)) << "interior pointer";
  EXPECT_TRUE(regions.RemoveRegion(kPool + 256));
  EXPECT_FALSE(regions.RemoveRegion(kPool + 256)) << "already gone";
  EXPECT_FALSE(regions.HasRegions());
  EXPECT_FALSE(regions.FindContaining(kPool + 300));
}

TEST(NvtxMemRegionsTest, OverlapAndReRegistrationAreTold) {
  NvtxMemRegions regions;
  EXPECT_FALSE(regions.AddRegion(Region(kPool, 100)).overlaps);
  EXPECT_FALSE(regions.AddRegion(Region(kPool + 100, 100)).overlaps)
      << "adjacent is not overlapping";
  EXPECT_TRUE(regions.AddRegion(Region(kPool + 50, 10)).overlaps);
  EXPECT_TRUE(regions.AddRegion(Region(kPool + 150, 100)).overlaps)
      << "starts inside its predecessor";
  NvtxMemRegions::AddResult again = regions.AddRegion(Region(kPool, 100));
  EXPECT_TRUE(again.replaced);
  EXPECT_EQ(regions.live_regions(), 4u);
}

TEST(NvtxMemRegionsTest, HeapResetAndUnregisterEndTheirRegionsOnly) {
  constexpr uint64_t kOther = kPool + 4 * kPoolBytes;
  NvtxMemRegions regions;
  regions.AddHeap(Heap(kPool, kPoolBytes));
  regions.AddHeap(Heap(kOther, kPoolBytes));
  regions.AddRegion(Region(kPool, 10));
  regions.AddRegion(Region(kPool + 10, 10));
  regions.AddRegion(Region(kOther, 10, kOther));
  regions.AddRegion(Region(kPool + 2 * kPoolBytes, 10, /*heap=*/0));

  // Reset: the regions go, the heap stays.
  EXPECT_EQ(regions.EndHeap(kPool, /*remove=*/false), 2u);
  EXPECT_TRUE(regions.FindHeap(kPool));
  EXPECT_EQ(regions.live_regions(), 2u);
  EXPECT_FALSE(regions.FindContaining(kPool));
  // Unregister: the heap goes too.
  EXPECT_EQ(regions.EndHeap(kOther, /*remove=*/true), 1u);
  EXPECT_FALSE(regions.FindHeap(kOther));
  EXPECT_FALSE(regions.EndHeap(kOther, /*remove=*/true)) << "unknown now";
  EXPECT_FALSE(regions.EndHeap(0x1234, /*remove=*/false));
  // The process-wide heap (handle 0) can be reset: its regions end.
  EXPECT_EQ(regions.EndHeap(0, /*remove=*/false), 1u);
  EXPECT_FALSE(regions.HasRegions());
  EXPECT_EQ(regions.live_heaps(), 1u);
}

TEST(NvtxMemRegionsTest, ReRegisteringAHeapEndsItsRegions) {
  NvtxMemRegions regions;
  regions.AddHeap(Heap(kPool, kPoolBytes));
  regions.AddRegion(Region(kPool, 10));
  EXPECT_EQ(regions.AddHeap(Heap(kPool, 2 * kPoolBytes)), 1u);
  EXPECT_EQ(regions.FindHeap(kPool)->bytes, 2 * kPoolBytes);
  EXPECT_FALSE(regions.HasRegions());
}

TEST(NvtxMemRegionsTest, FreeingTheBlockEndsItsHeapsAndRegions) {
  NvtxMemRegions regions;
  regions.AddHeap(Heap(kPool, kPoolBytes));
  regions.AddRegion(Region(kPool, 10));
  regions.AddRegion(Region(kPool + 100, 10, /*heap=*/0));  // process-wide
  // A region of the heap registered outside the heap's memory (noted by the
  // engine): it ends with its heap all the same.
  regions.AddRegion(Region(kPool + 8 * kPoolBytes, 10));
  regions.AddRegion(Region(kPool + kPoolBytes, 10, /*heap=*/0));  // next block
  EXPECT_EQ(regions.EndWithin(kPool, kPool + kPoolBytes), 3u);
  EXPECT_FALSE(regions.FindHeap(kPool));
  ASSERT_EQ(regions.live_regions(), 1u);
  EXPECT_EQ(regions.Live()[0].record.address, kPool + kPoolBytes);
  EXPECT_FALSE(regions.Any() && regions.live_heaps() != 0);
}

TEST(NvtxMemRegionsTest, CoverageCountsLeakCheckedRegionsPerBlock) {
  NvtxMemRegions regions;
  NvtxMemRegion a = Region(kPool, 100);
  a.block = kPool;
  NvtxMemRegion b = Region(kPool + 100, 50);
  b.block = kPool;
  NvtxMemRegion layout = Region(kPool + 200, 1000);
  layout.block = kPool;
  layout.leak_checked = false;
  NvtxMemRegion outside = Region(0x1000, 10);
  regions.AddRegion(a);
  regions.AddRegion(b);
  regions.AddRegion(layout);
  regions.AddRegion(outside);
  NvtxMemRegions::CoverageMap c = regions.CoverageByBlock();
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[kPool].regions, 2u);
  EXPECT_EQ(c[kPool].bytes, 150u);
}

TEST(NvtxMemRegionsTest, ConcurrentRegistersAndUnregisters) {
  NvtxMemRegions regions;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&regions, t] {
      const uint64_t base = kPool + static_cast<uint64_t>(t) * kPoolBytes;
      for (int round = 0; round < 200; ++round) {
        for (uint64_t i = 0; i < 16; ++i) {
          regions.AddRegion(Region(base + i * 64, 64, 0));
          regions.FindContaining(base + i * 64 + 5);
        }
        for (uint64_t i = 0; i < 16; ++i) regions.RemoveRegion(base + i * 64);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_FALSE(regions.HasRegions());
}

TEST(NvtxMemProblemTest, NamesAndMeanings) {
  EXPECT_EQ(NvtxMemProblemName(NvtxMemProblem::kZeroSize), "zero_size");
  EXPECT_THAT(std::string(NvtxMemProblemMeaning(NvtxMemProblem::kOutsideBlock)),
              HasSubstr("outside every tracked CUDA block"));
  NvtxMemStats stats;
  EXPECT_FALSE(stats.Used());
  EXPECT_TRUE(stats.Note(NvtxMemProblem::kZeroSize));
  EXPECT_FALSE(stats.Note(NvtxMemProblem::kZeroSize)) << "first time only";
  EXPECT_EQ(stats.Problems(NvtxMemProblem::kZeroSize), 2u);
  EXPECT_TRUE(stats.Used());
}

// ---- The engine -----------------------------------------------------------

Options QuietOptions() {
  Options o;
  o.print_errors = false;
  o.symbolize = false;
  o.stack_depth = 0;
  o.report = ReportFormats();  // report=none
  o.reachability = false;
  return o;
}

class EngineNvtxMemTest : public ::testing::Test {
 protected:
  EngineNvtxMemTest() : engine_(std::make_unique<Engine>(QuietOptions())) {}

  // A distinct made-up stack per call site.
  StackId Site(uintptr_t pc) {
    uintptr_t frames[1] = {pc};
    return engine_->depot().Put(frames, 1);
  }

  void Alloc(uint64_t address, uint64_t bytes, StackId stack = kNoStack) {
    AllocEvent e;
    e.api = Api::kCudaMalloc;
    e.address = address;
    e.bytes = bytes;
    e.device = 0;
    e.stack = stack;
    engine_->OnAlloc(e);
  }

  void Free(uint64_t address) {
    FreeTicket t = engine_->BeginFree(Api::kCudaFree, address, kNoStack);
    engine_->EndFree(t, true, 0, "cudaSuccess");
  }

  // The pool: one cudaMalloc, registered as a sub-allocator heap.
  void MakePool() {
    Alloc(kPool, kPoolBytes, Site(0x1000));
    EXPECT_EQ(engine_->OnNvtxHeapRegister(kPool, kPoolBytes,
                                          kNvtxHeapSubAllocator, "pool"),
              kPool);
  }

  std::vector<ReportData::Leak> LeaksWithApi(const ReportData& r, Api api) {
    std::vector<ReportData::Leak> out;
    for (const ReportData::Leak& l : r.leaks) {
      if (l.api == api) out.push_back(l);
    }
    return out;
  }

  uint64_t Problems(const ReportData& r, const std::string& name) {
    for (const auto& [n, count] : r.nvtx_mem.problems) {
      if (n == name) return count;
    }
    return 0;
  }

  std::unique_ptr<Engine> engine_;
};

TEST_F(EngineNvtxMemTest, LeakedRegionIsItsOwnLeakAtItsOwnCallSite) {
  MakePool();
  const StackId asked_a = Site(0x2000);
  const StackId asked_b = Site(0x3000);
  engine_->OnNvtxRegionRegister(kPool, kPool, 4096, asked_a);
  engine_->OnNvtxRegionRegister(kPool, kPool + 4096, 1000, asked_a);
  engine_->OnNvtxRegionRegister(kPool, kPool + 8192, 512, asked_b);
  engine_->OnNvtxRegionUnregister(kPool + 8192);  // given back

  ReportData r = engine_->BuildReport("exit");
  std::vector<ReportData::Leak> regions = LeaksWithApi(r, Api::kNvtxRegion);
  ASSERT_EQ(regions.size(), 1u);
  EXPECT_EQ(regions[0].stack, asked_a) << "grouped by the region's stack";
  EXPECT_EQ(regions[0].count, 2u);
  EXPECT_EQ(regions[0].bytes, 5096u);
  EXPECT_EQ(regions[0].pool_block, kPool);
  EXPECT_EQ(regions[0].pool_api, Api::kCudaMalloc);
  EXPECT_EQ(regions[0].heap, kPool);
  EXPECT_EQ(regions[0].heap_name, "pool");
  EXPECT_EQ(regions[0].device, 0);

  // The pool's block: its own entry, saying what of it regions hold.
  std::vector<ReportData::Leak> blocks = LeaksWithApi(r, Api::kCudaMalloc);
  ASSERT_EQ(blocks.size(), 1u);
  EXPECT_EQ(blocks[0].bytes, kPoolBytes);
  EXPECT_EQ(blocks[0].nvtx_regions, 2u);
  EXPECT_EQ(blocks[0].nvtx_region_bytes, 5096u);

  // Not double counted: regions are leaked blocks, their bytes are not added.
  EXPECT_EQ(r.summary.leaks, 3u);
  EXPECT_EQ(r.summary.leaked_bytes, kPoolBytes);

  EXPECT_TRUE(r.nvtx_mem.used);
  EXPECT_EQ(r.nvtx_mem.heaps_registered, 1u);
  EXPECT_EQ(r.nvtx_mem.regions_registered, 3u);
  EXPECT_EQ(r.nvtx_mem.regions_unregistered, 1u);
  EXPECT_EQ(r.nvtx_mem.live_regions, 2u);
  EXPECT_EQ(r.nvtx_mem.live_region_bytes, 5096u);
  EXPECT_TRUE(r.nvtx_mem.problems.empty());
}

TEST_F(EngineNvtxMemTest, ResizeChangesTheLeakedBytes) {
  MakePool();
  engine_->OnNvtxRegionRegister(kPool, kPool, 100, Site(0x2000));
  engine_->OnNvtxRegionResize(kPool, 300);
  ReportData r = engine_->BuildReport("exit");
  ASSERT_EQ(LeaksWithApi(r, Api::kNvtxRegion).size(), 1u);
  EXPECT_EQ(LeaksWithApi(r, Api::kNvtxRegion)[0].bytes, 300u);
  EXPECT_EQ(r.nvtx_mem.regions_resized, 1u);
}

TEST_F(EngineNvtxMemTest, HeapResetEndsItsRegions) {
  MakePool();
  engine_->OnNvtxRegionRegister(kPool, kPool, 100, Site(0x2000));
  engine_->OnNvtxRegionRegister(kPool, kPool + 100, 100, Site(0x2000));
  engine_->OnNvtxHeapEnd(kPool, /*unregister=*/false);
  ReportData r = engine_->BuildReport("exit");
  EXPECT_TRUE(LeaksWithApi(r, Api::kNvtxRegion).empty());
  EXPECT_EQ(r.nvtx_mem.heap_resets, 1u);
  EXPECT_EQ(r.nvtx_mem.regions_ended_by_heap, 2u);
  EXPECT_EQ(LeaksWithApi(r, Api::kCudaMalloc)[0].nvtx_regions, 0u);
  // The heap is still there: new regions go into it.
  engine_->OnNvtxRegionRegister(kPool, kPool, 100, Site(0x2000));
  engine_->OnNvtxHeapEnd(kPool, /*unregister=*/true);
  r = engine_->BuildReport("exit");
  EXPECT_TRUE(LeaksWithApi(r, Api::kNvtxRegion).empty());
  EXPECT_EQ(r.nvtx_mem.heaps_unregistered, 1u);
  EXPECT_EQ(r.nvtx_mem.live_heaps, 0u);
}

TEST_F(EngineNvtxMemTest, FreeingThePoolBlockEndsItsRegions) {
  MakePool();
  engine_->OnNvtxRegionRegister(kPool, kPool, 100, Site(0x2000));
  Free(kPool);
  EXPECT_FALSE(engine_->nvtx_mem().Any());
  ReportData r = engine_->BuildReport("exit");
  EXPECT_TRUE(r.leaks.empty());
  EXPECT_EQ(r.nvtx_mem.regions_ended_by_free, 1u);
  bool noted = false;
  for (const std::string& n : r.notes) {
    noted |= n.find(
                 "still registered when the block holding them was "
                 "freed") != std::string::npos;
  }
  EXPECT_TRUE(noted);
  // The address reused by an unrelated block: no stale region there.
  Alloc(kPool, 64);
  EXPECT_EQ(engine_->CheckAccess("cudaMemset", kPool, 64),
            AccessVerdict::kForward);
  EXPECT_EQ(engine_->ErrorCount(), 0u);
}

TEST_F(EngineNvtxMemTest, CopyPastARegionNamesTheRegion) {
  MakePool();
  const StackId asked = Site(0x2000);
  engine_->OnNvtxRegionRegister(kPool, kPool + 1024, 1000, asked);
  engine_->OnNvtxRegionRegister(kPool, kPool + 2024, 1000, Site(0x3000));
  engine_->OnNvtxRegionName(kPool + 1024, "activations");

  // Inside the region, and a copy over free pool space: fine.
  EXPECT_EQ(engine_->CheckAccess("cudaMemcpy", kPool + 1024, 1000),
            AccessVerdict::kForward);
  EXPECT_EQ(engine_->CheckAccess("cudaMemcpy", kPool + 8192, 4096),
            AccessVerdict::kForward);
  EXPECT_EQ(engine_->ErrorCount(), 0u);

  // One byte into the neighbour: CUDA accepts it (inside the pool's block).
  EXPECT_EQ(engine_->CheckAccess("cudaMemcpy", kPool + 1024, 1001),
            AccessVerdict::kForward);
  ASSERT_EQ(engine_->ErrorCount(), 1u);
  ReportData r = engine_->BuildReport("request");
  const ErrorRecord& e = r.errors[0];
  EXPECT_EQ(e.kind, ErrorKind::kApiBounds);
  EXPECT_EQ(e.call, "cudaMemcpy");
  ASSERT_TRUE(e.allocation);
  EXPECT_EQ(e.allocation->api, Api::kNvtxRegion);
  EXPECT_EQ(e.allocation->address, kPool + 1024);
  EXPECT_EQ(e.allocation->bytes, 1000u);
  EXPECT_EQ(e.allocation->stack, asked) << "the region's call site";
  EXPECT_EQ(e.offset, 0);
  EXPECT_EQ(e.bytes, 1001u);
  EXPECT_EQ(e.cuda_result, 0);
  EXPECT_EQ(e.cuda_result_name, "cudaSuccess");
  EXPECT_THAT(e.detail, HasSubstr("NVTX region 'activations'"));
  EXPECT_THAT(e.detail, HasSubstr("1 bytes past the region's end"));
  EXPECT_THAT(e.detail, HasSubstr("the pool's block hides the overflow"));

  // Past the block's end as well: one error, still naming the region; CUDA
  // refuses it (no redzones here).
  engine_->OnNvtxRegionRegister(kPool, kPool + kPoolBytes - 100, 100, asked);
  EXPECT_EQ(
      engine_->CheckAccess("cuMemcpyHtoD_v2", kPool + kPoolBytes - 100, 200),
      AccessVerdict::kForward);
  ASSERT_EQ(engine_->ErrorCount(), 2u);
  r = engine_->BuildReport("request");
  EXPECT_EQ(r.errors[1].allocation->api, Api::kNvtxRegion);
  EXPECT_EQ(r.errors[1].cuda_result_name, "CUDA_ERROR_INVALID_VALUE");
  EXPECT_THAT(r.errors[1].detail, HasSubstr("it also leaves the block"));
}

TEST_F(EngineNvtxMemTest, RegionOutsideEveryBlockIsTrackedAndNoted) {
  engine_->OnNvtxRegionRegister(/*heap=*/0, 0x5000, 100, Site(0x2000));
  EXPECT_EQ(engine_->CheckAccess("cudaMemcpy", 0x5000, 101),
            AccessVerdict::kForward);
  EXPECT_EQ(engine_->ErrorCount(), 1u);
  ReportData r = engine_->BuildReport("exit");
  std::vector<ReportData::Leak> regions = LeaksWithApi(r, Api::kNvtxRegion);
  ASSERT_EQ(regions.size(), 1u);
  EXPECT_EQ(regions[0].pool_block, 0u);
  EXPECT_EQ(regions[0].heap, 0u);
  EXPECT_EQ(Problems(r, "outside_block"), 1u);
  bool noted = false;
  for (const std::string& n : r.notes) {
    noted |= n.find("outside every tracked CUDA block") != std::string::npos;
  }
  EXPECT_TRUE(noted);
  EXPECT_EQ(r.summary.leaked_bytes, 0u);
  EXPECT_EQ(r.summary.leaks, 1u);
}

TEST_F(EngineNvtxMemTest, BadInputIsCountedAndIgnored) {
  MakePool();
  engine_->OnNvtxRegionRegister(kPool, kPool, 0, kNoStack);  // zero size
  engine_->OnNvtxRegionRegister(kPool, 0, 100, kNoStack);    // null
  engine_->OnNvtxRegionRegister(kPool, ~uint64_t{0} - 10, 100, kNoStack);
  engine_->OnNvtxRegionUnregister(kPool + 12345);           // unknown
  engine_->OnNvtxRegionResize(kPool + 12345, 10);           // unknown
  engine_->OnNvtxRegionName(kPool + 12345, "x");            // unknown
  engine_->OnNvtxHeapEnd(0xdead0000, /*unregister=*/true);  // unknown
  engine_->OnNvtxHeapEnd(0, /*unregister=*/true);           // process-wide: no
  engine_->OnNvtxRegionRegister(0xbad0000, kPool, 10, kNoStack);  // no heap
  engine_->OnNvtxRegionRegister(kPool, kPool + 5, 10, kNoStack);  // overlaps
  engine_->OnNvtxRegionRegister(kPool, kPool + 2 * kPoolBytes, 10,
                                kNoStack);  // outside heap and block
  engine_->OnNvtxHeapRegister(kPool + 4096, 4096, 0, "");  // usage 0
  engine_->NoteNvtxMemProblem(NvtxMemProblem::kBadDescriptor);
  ReportData r = engine_->BuildReport("exit");
  EXPECT_EQ(Problems(r, "zero_size"), 2u);
  EXPECT_EQ(Problems(r, "bad_descriptor"), 2u);
  EXPECT_EQ(Problems(r, "unknown_region"), 3u);
  EXPECT_EQ(Problems(r, "unknown_heap"), 3u);
  EXPECT_EQ(Problems(r, "overlap"), 1u);
  EXPECT_EQ(Problems(r, "outside_heap"), 1u);
  EXPECT_EQ(Problems(r, "outside_block"), 1u);
  EXPECT_EQ(Problems(r, "unknown_usage"), 1u);
  EXPECT_EQ(r.nvtx_mem.regions_registered, 3u);
  EXPECT_EQ(r.nvtx_mem.heaps_registered, 2u);
}

TEST_F(EngineNvtxMemTest, LayoutHeapRegionsAreCheckedButNeverLeaks) {
  Alloc(kPool, kPoolBytes);
  engine_->OnNvtxHeapRegister(kPool, kPoolBytes, kNvtxHeapLayout, "struct");
  engine_->OnNvtxRegionRegister(kPool, kPool, 64, Site(0x2000));
  ReportData r = engine_->BuildReport("exit");
  EXPECT_TRUE(LeaksWithApi(r, Api::kNvtxRegion).empty());
  EXPECT_EQ(engine_->CheckAccess("cudaMemset", kPool, 65),
            AccessVerdict::kForward);
  EXPECT_EQ(engine_->ErrorCount(), 1u);
}

TEST_F(EngineNvtxMemTest, NoCallsNoSection) {
  Alloc(kPool, 100);
  ReportData r = engine_->BuildReport("exit");
  EXPECT_FALSE(r.nvtx_mem.used);
  EXPECT_EQ(r.leaks.size(), 1u);
  EXPECT_EQ(r.leaks[0].nvtx_regions, 0u);
}

TEST_F(EngineNvtxMemTest, LeakCheckOffListsNoRegionLeaks) {
  Options o = QuietOptions();
  o.leak_check = false;
  engine_ = std::make_unique<Engine>(o);
  MakePool();
  engine_->OnNvtxRegionRegister(kPool, kPool, 100, kNoStack);
  ReportData r = engine_->BuildReport("exit");
  EXPECT_TRUE(r.leaks.empty());
  EXPECT_TRUE(r.nvtx_mem.used);
  EXPECT_EQ(r.nvtx_mem.live_regions, 1u);
}

}  // namespace
}  // namespace gmt
