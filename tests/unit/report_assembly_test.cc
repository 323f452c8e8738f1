// AssembleReport and the leak grouping, on made-up state (no engine): leaks
// grouped by call site, a call site split by reachability, blocks released
// by a teardown, bytes that are not memory, NVTX ranges and region coverage,
// suppressions, the crash section, the timeline, and the notes in order.
#include "lib/report/report_assembly.h"

#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "lib/report/leak_groups.h"
#include "lib/report/report_state.h"

namespace gmt {

void PrintTo(Api api, std::ostream* os) { *os << ApiName(api); }

namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr uint64_t kBase = 0x7f0000000000ull;
constexpr uint64_t kStride = uint64_t{2} << 20;
constexpr uint64_t kMiB = 1024 * 1024;

AllocationRecord Block(uint64_t address, uint64_t bytes,
                       Api api = Api::kCudaMalloc, int device = 0,
                       StackId stack = kNoStack) {
  AllocationRecord r;
  r.address = address;
  r.bytes = bytes;
  r.api = api;
  r.kind = ApiMemoryKind(api);
  r.device = device;
  r.stack = stack;
  r.time_ns = static_cast<int64_t>(address & 0xffffff) + 1;
  r.thread = 1;
  return r;
}

// A symbolizer that names stack N "Site<N>" and counts its calls.
class FakeSymbolizer {
 public:
  std::vector<SymbolizedFrame> operator()(StackId id) {
    ++calls_[id];
    return {SymbolizedFrame{0x400000 + id, absl::StrCat("Site", id),
                            "/src/app.cu", static_cast<int>(id), "app"}};
  }
  const std::map<StackId, int>& calls() const { return calls_; }

 private:
  std::map<StackId, int> calls_;
};

ReportData Assemble(ReportState state) {
  FakeSymbolizer symbolizer;
  return AssembleReport(std::move(state),
                        [&](StackId id) { return symbolizer(id); });
}

ReportState BaseState() {
  ReportState s;
  s.version = "test";
  s.pid = 4242;
  s.reason = "exit";
  return s;
}

const ReportData::Leak* FindLeak(const ReportData& r, StackId stack,
                                 const std::string& state) {
  for (const ReportData::Leak& leak : r.leaks) {
    if (leak.stack == stack && leak.state == state) return &leak;
  }
  return nullptr;
}

TEST(AssembleReportTest, GroupsLeaksByCallSiteLargestFirst) {
  constexpr StackId s1 = 1, s2 = 2;
  ReportState s = BaseState();
  // s1/cudaMalloc/device 0: three blocks, 6 MiB.
  s.live.push_back(Block(kBase, 1 * kMiB, Api::kCudaMalloc, 0, s1));
  s.live.push_back(Block(kBase + kStride, 2 * kMiB, Api::kCudaMalloc, 0, s1));
  s.live.push_back(
      Block(kBase + 2 * kStride, 3 * kMiB, Api::kCudaMalloc, 0, s1));
  // s2: one block of 10 MiB.
  s.live.push_back(
      Block(kBase + 3 * kStride, 10 * kMiB, Api::kCudaMalloc, 0, s2));
  // s1 but another device, and s1 but another API: separate groups.
  s.live.push_back(Block(kBase + 4 * kStride, 512, Api::kCudaMalloc, 1, s1));
  s.live.push_back(
      Block(kBase + 5 * kStride, 256, Api::kCudaMallocManaged, 0, s1));
  // Usage, as the engine counted it (one block freed).
  UsageFigures d0{16 * kMiB + 256, 116 * kMiB, 6, 1};
  UsageFigures d1{512, 512, 1, 0};
  s.devices.push_back({1, "", 0, d1});  // any order
  s.devices.push_back({0, "NVIDIA H200", 150 * 1024 * kMiB, d0});

  ReportData r = Assemble(std::move(s));
  ASSERT_EQ(r.leaks.size(), 4u);
  EXPECT_EQ(r.leaks[0].stack, s2);
  EXPECT_EQ(r.leaks[0].count, 1u);
  EXPECT_EQ(r.leaks[0].bytes, 10 * kMiB);
  EXPECT_EQ(r.leaks[1].stack, s1);
  EXPECT_EQ(r.leaks[1].count, 3u);
  EXPECT_EQ(r.leaks[1].bytes, 6 * kMiB);
  EXPECT_EQ(r.leaks[1].device, 0);
  EXPECT_EQ(r.leaks[1].api, Api::kCudaMalloc);
  EXPECT_EQ(r.leaks[1].address, kBase) << "the first block is the example";
  EXPECT_EQ(r.leaks[2].bytes, 512u);
  EXPECT_EQ(r.leaks[2].device, 1);
  EXPECT_EQ(r.leaks[3].bytes, 256u);
  EXPECT_EQ(r.leaks[3].api, Api::kCudaMallocManaged);
  for (size_t i = 1; i < r.leaks.size(); ++i) {
    EXPECT_GE(r.leaks[i - 1].bytes, r.leaks[i].bytes);
  }
  EXPECT_EQ(r.summary.leaks, 6u);
  EXPECT_EQ(r.summary.leaked_bytes, 16 * kMiB + 768);
  // Every referenced stack is in the table, symbolized.
  ASSERT_TRUE(r.stacks.contains(s1));
  ASSERT_TRUE(r.stacks.contains(s2));
  EXPECT_EQ(r.stacks.at(s1)[0].function, "Site1");
  // Devices in index order, with their own figures; the summary adds them.
  ASSERT_EQ(r.devices.size(), 2u);
  EXPECT_EQ(r.devices[0].index, 0);
  EXPECT_EQ(r.devices[0].name, "NVIDIA H200");
  EXPECT_EQ(r.devices[0].peak_bytes, 116 * kMiB);
  EXPECT_EQ(r.devices[1].index, 1);
  EXPECT_EQ(r.devices[1].live_bytes, 512u);
  EXPECT_EQ(r.summary.allocations, 7u);
  EXPECT_EQ(r.summary.frees, 1u);
  EXPECT_EQ(r.summary.live_bytes_at_exit, 16 * kMiB + 768);
  EXPECT_EQ(r.host.index, kHostDevice);
}

TEST(AssembleReportTest, LeakCheckOffListsNoLeaks) {
  ReportState s = BaseState();
  s.leak_check = false;
  s.live.push_back(Block(kBase, 100));
  s.released.push_back({Block(kBase + kStride, 100), "cuCtxDestroy"});
  ReportData r = Assemble(std::move(s));
  EXPECT_TRUE(r.leaks.empty());
  EXPECT_FALSE(r.leak_check);
  EXPECT_EQ(r.summary.leaks, 0u);
}

TEST(AssembleReportTest, ReachabilitySplitsOneCallSiteIntoLostAndReachable) {
  constexpr StackId site = 7;
  ReportState s = BaseState();
  const AllocationRecord a = Block(kBase, kMiB, Api::kCudaMalloc, 0, site);
  const AllocationRecord b =
      Block(kBase + kStride, 2 * kMiB, Api::kCudaMalloc, 0, site);
  const AllocationRecord c =
      Block(kBase + 2 * kStride, 4 * kMiB, Api::kCudaMalloc, 0, site);
  AllocationRecord reused =
      Block(kBase + 3 * kStride, 8, Api::kCudaMalloc, 0, site);
  s.live = {a, b, c, reused};
  s.reach_verdicts[a.address] = {a.time_ns, "lost", ""};
  s.reach_verdicts[b.address] = {b.time_ns, "reachable",
                                 "globals of libcache.so (word at 0x10)"};
  s.reach_verdicts[c.address] = {c.time_ns, "lost", ""};
  // A verdict on an earlier block at the same address: not this one's.
  s.reach_verdicts[reused.address] = {reused.time_ns - 1, "lost", ""};
  s.reachability.ran = true;
  s.reachability.roots = 12;

  ReportData r = Assemble(std::move(s));
  ASSERT_EQ(r.leaks.size(), 3u);
  const ReportData::Leak* lost = FindLeak(r, site, "lost");
  const ReportData::Leak* reachable = FindLeak(r, site, "reachable");
  const ReportData::Leak* unanalysed = FindLeak(r, site, "");
  ASSERT_NE(lost, nullptr);
  ASSERT_NE(reachable, nullptr);
  ASSERT_NE(unanalysed, nullptr);
  EXPECT_EQ(lost->count, 2u);
  EXPECT_EQ(lost->bytes, 5 * kMiB);
  EXPECT_EQ(lost->reachable_via, "");
  EXPECT_EQ(reachable->count, 1u);
  EXPECT_EQ(reachable->address, b.address);
  EXPECT_EQ(reachable->reachable_via, "globals of libcache.so (word at 0x10)");
  EXPECT_EQ(unanalysed->count, 1u);
  // The scan's figures, and the totals counted from the entries.
  EXPECT_TRUE(r.reachability.ran);
  EXPECT_EQ(r.reachability.roots, 12u);
  EXPECT_EQ(r.reachability.lost_blocks, 2u);
  EXPECT_EQ(r.reachability.lost_bytes, 5 * kMiB);
  EXPECT_EQ(r.reachability.reachable_blocks, 1u);
  EXPECT_EQ(r.reachability.reachable_bytes, 2 * kMiB);
  EXPECT_EQ(r.reachability.unknown_blocks, 0u);
  EXPECT_EQ(r.leaks[0].state, "lost") << "largest first";
}

TEST(AssembleReportTest, ReleasedByTeardownIsAnEntryOfItsOwn) {
  constexpr StackId site = 3;
  ReportState s = BaseState();
  const AllocationRecord live = Block(kBase, kMiB, Api::kCudaMalloc, 0, site);
  const AllocationRecord gone =
      Block(kBase + kStride, 4 * kMiB, Api::kCudaMalloc, 0, site);
  s.live = {live};
  s.released.push_back({gone, "cuCtxDestroy"});
  s.released.push_back({Block(kBase + 2 * kStride, kMiB, Api::kCudaMallocHost,
                              kHostDevice, site),
                        "cuCtxDestroy"});
  // Neither a verdict nor region coverage applies to a released block.
  s.reach_verdicts[gone.address] = {gone.time_ns, "lost", ""};
  s.nvtx_mem.coverage[gone.address] = {2, 4096};
  s.nvtx_mem.coverage[live.address] = {1, 100};

  ReportData r = Assemble(std::move(s));
  ASSERT_EQ(r.leaks.size(), 3u);
  int released = 0;
  for (const ReportData::Leak& leak : r.leaks) {
    if (leak.address == live.address) {
      EXPECT_EQ(leak.released_by, "");
      EXPECT_EQ(leak.nvtx_regions, 1u);
      EXPECT_EQ(leak.nvtx_region_bytes, 100u);
    } else {
      EXPECT_EQ(leak.released_by, "cuCtxDestroy");
      EXPECT_EQ(leak.state, "");
      EXPECT_EQ(leak.nvtx_regions, 0u);
      ++released;
    }
  }
  EXPECT_EQ(released, 2);
  EXPECT_EQ(r.summary.leaks, 3u);
  EXPECT_EQ(r.summary.leaked_bytes, 6 * kMiB);
}

TEST(AssembleReportTest, ReservationsAndRegistrationsAreListedNotCounted) {
  ReportState s = BaseState();
  s.live.push_back(Block(kBase, kMiB, Api::kCudaMalloc, 0, 1));
  s.live.push_back(
      Block(kBase + kStride, 64 * kMiB, Api::kCuMemAddressReserve, 0, 2));
  s.live.push_back(Block(kBase + 2 * kStride, 8 * kMiB, Api::kCudaHostRegister,
                         kHostDevice, 3));
  ReportData r = Assemble(std::move(s));
  EXPECT_EQ(r.leaks.size(), 3u);
  EXPECT_EQ(r.summary.leaks, 3u);
  EXPECT_EQ(r.summary.leaked_bytes, kMiB);
  // Reserved address space is said apart from memory in every format.
  const LeakedReservations reserved = CountLeakedReservations(r.leaks);
  EXPECT_EQ(reserved.count, 1u);
  EXPECT_EQ(reserved.bytes, 64 * kMiB);
  const std::string text = RenderText(r, 0, false);
  EXPECT_THAT(text, testing::HasSubstr(
                        "of which 1 address range reserved with "
                        "cuMemAddressReserve and never freed, 64.0 MiB of "
                        "virtual address space"));
  EXPECT_THAT(text, testing::HasSubstr("LEAK: 64.0 MiB of address space in 1 "
                                       "range from cuMemAddressReserve"));
  EXPECT_THAT(text, testing::HasSubstr(
                        "3 leaked blocks (1.0 MiB) (1 of them address range: "
                        "64.0 MiB of address space, not memory)"));
  const std::string json = RenderJson(r);
  EXPECT_THAT(json, testing::HasSubstr("\"reservation_leaks\": 1"));
  EXPECT_THAT(json, testing::HasSubstr(absl::StrCat(
                        "\"reservation_leaked_bytes\": ", 64 * kMiB)));
}

TEST(AssembleReportTest, NvtxRangesNameTheEntriesAndTheirSection) {
  ReportState s = BaseState();
  AllocationRecord fwd = Block(kBase, kMiB, Api::kCudaMalloc, 0, 5);
  fwd.nvtx_range = 1;
  AllocationRecord bwd =
      Block(kBase + kStride, 2 * kMiB, Api::kCudaMalloc, 0, 5);
  bwd.nvtx_range = 2;
  s.live = {fwd, bwd};
  s.nvtx_seen = true;
  s.nvtx_ranges = {{1, "train/forward", 3, 3 * kMiB},
                   {2, "train/backward", 1, 2 * kMiB}};
  ReportData r = Assemble(std::move(s));
  ASSERT_EQ(r.leaks.size(), 2u) << "one entry per range a site ran in";
  EXPECT_EQ(r.leaks[0].nvtx_range, "train/backward");
  EXPECT_EQ(r.leaks[1].nvtx_range, "train/forward");
  ASSERT_EQ(r.nvtx_ranges.size(), 2u);
  EXPECT_EQ(r.nvtx_ranges[0].name, "train/backward");
  EXPECT_EQ(r.nvtx_ranges[0].live_blocks, 1u);
  EXPECT_EQ(r.nvtx_ranges[1].name, "train/forward");
  EXPECT_EQ(r.nvtx_ranges[1].allocations, 3u);
  EXPECT_EQ(r.nvtx_ranges[1].live_bytes, kMiB);
}

TEST(AssembleReportTest, NoNvtxRangeNoSection) {
  ReportState s = BaseState();
  s.live.push_back(Block(kBase, kMiB));
  ReportData r = Assemble(std::move(s));
  EXPECT_TRUE(r.nvtx_ranges.empty());
  ASSERT_EQ(r.leaks.size(), 1u);
  EXPECT_EQ(r.leaks[0].nvtx_range, "");
}

NvtxMemRegion Region(uint64_t heap, uint64_t address, uint64_t bytes,
                     StackId stack, uint64_t block) {
  NvtxMemRegion region;
  region.heap = heap;
  region.block = block;
  region.block_api = block != 0 ? Api::kCudaMalloc : Api::kUnknown;
  region.record = Block(address, bytes, Api::kNvtxRegion, 0, stack);
  return region;
}

TEST(AssembleReportTest, RegionsAreLeaksOfTheirOwnInsideTheirPoolsEntry) {
  constexpr uint64_t kPool = kBase;
  constexpr uint64_t kPoolBytes = 16 * kMiB;
  ReportState s = BaseState();
  s.live.push_back(Block(kPool, kPoolBytes, Api::kCudaMalloc, 0, 1));
  ReportState::NvtxMem& m = s.nvtx_mem;
  m.used = true;
  m.counters[NvtxMemStats::kHeapsRegistered] = 1;
  m.counters[NvtxMemStats::kRegionsRegistered] = 4;
  m.counters[NvtxMemStats::kRegionsUnregistered] = 1;
  m.live_heaps = 1;
  m.live_regions = {Region(kPool, kPool, 4096, 2, kPool),
                    Region(kPool, kPool + 4096, 1000, 2, kPool),
                    Region(/*heap=*/0, 0x5000, 100, 3, /*block=*/0)};
  NvtxMemRegion layout = Region(kPool, kPool + 8192, 64, 4, kPool);
  layout.leak_checked = false;  // a layout heap's: never a leak
  m.live_regions.push_back(layout);
  m.heap_names[kPool] = "pool";
  m.coverage[kPool] = {2, 5096};

  ReportData r = Assemble(std::move(s));
  std::vector<const ReportData::Leak*> regions;
  const ReportData::Leak* pool = nullptr;
  for (const ReportData::Leak& leak : r.leaks) {
    if (leak.api == Api::kNvtxRegion) regions.push_back(&leak);
    if (leak.api == Api::kCudaMalloc) pool = &leak;
  }
  ASSERT_EQ(regions.size(), 2u);
  EXPECT_EQ(regions[0]->stack, 2u) << "grouped by the region's stack";
  EXPECT_EQ(regions[0]->count, 2u);
  EXPECT_EQ(regions[0]->bytes, 5096u);
  EXPECT_EQ(regions[0]->pool_block, kPool);
  EXPECT_EQ(regions[0]->pool_api, Api::kCudaMalloc);
  EXPECT_EQ(regions[0]->heap, kPool);
  EXPECT_EQ(regions[0]->heap_name, "pool");
  EXPECT_EQ(regions[1]->pool_block, 0u);
  EXPECT_EQ(regions[1]->heap_name, "");
  ASSERT_NE(pool, nullptr);
  EXPECT_EQ(pool->nvtx_regions, 2u);
  EXPECT_EQ(pool->nvtx_region_bytes, 5096u);
  EXPECT_EQ(&r.leaks[0], pool) << "largest first, regions included";
  // Regions are leaked blocks; their bytes are the pool's, counted once.
  EXPECT_EQ(r.summary.leaks, 4u);
  EXPECT_EQ(r.summary.leaked_bytes, kPoolBytes);
  EXPECT_TRUE(r.nvtx_mem.used);
  EXPECT_EQ(r.nvtx_mem.heaps_registered, 1u);
  EXPECT_EQ(r.nvtx_mem.regions_registered, 4u);
  EXPECT_EQ(r.nvtx_mem.regions_unregistered, 1u);
  EXPECT_EQ(r.nvtx_mem.live_heaps, 1u);
  EXPECT_EQ(r.nvtx_mem.live_regions, 4u);
  EXPECT_EQ(r.nvtx_mem.live_region_bytes, 4096u + 1000 + 100 + 64);
  EXPECT_TRUE(r.stacks.contains(2));
}

TEST(AssembleReportTest, LeakCheckOffKeepsTheRegionSectionWithoutLeaks) {
  ReportState s = BaseState();
  s.leak_check = false;
  s.nvtx_mem.used = true;
  s.nvtx_mem.live_regions = {Region(kBase, kBase, 100, 2, kBase)};
  ReportData r = Assemble(std::move(s));
  EXPECT_TRUE(r.leaks.empty());
  EXPECT_TRUE(r.nvtx_mem.used);
  EXPECT_EQ(r.nvtx_mem.live_regions, 1u);
}

TEST(AssembleReportTest, SuppressionsFilterTheSymbolizedPicture) {
  ReportState s = BaseState();
  s.live.push_back(Block(kBase, kMiB, Api::kCudaMalloc, 0, 8));
  s.live.push_back(Block(kBase + kStride, kMiB, Api::kCudaMalloc, 0, 9));
  ErrorRecord e;
  e.kind = ErrorKind::kDoubleFree;
  e.stack = 8;
  s.errors.push_back(e);
  std::string error;
  ASSERT_TRUE(Suppressions::Parse("leak:fun:Site8\ndouble-free:fun:Site8\n",
                                  "app.supp", &s.suppressions, &error))
      << error;
  ReportData r = Assemble(std::move(s));
  ASSERT_EQ(r.leaks.size(), 1u);
  EXPECT_EQ(r.leaks[0].stack, 9u);
  EXPECT_EQ(r.leaks[0].suppression, "leak:fun:Site9") << "suggested";
  EXPECT_TRUE(r.errors.empty());
  EXPECT_EQ(r.summary.leaks, 1u);
  EXPECT_EQ(r.summary.errors, 0u);
  EXPECT_EQ(r.summary.suppressed_leaks, 1u);
  EXPECT_EQ(r.summary.suppressed_errors, 1u);
  ASSERT_EQ(r.suppressions.size(), 2u);
  EXPECT_EQ(r.suppressions[0].hits, 1u);
  EXPECT_EQ(r.suppressions[1].line, 2);
}

TEST(AssembleReportTest, NotesComeInTheirOrder) {
  ReportState s = BaseState();
  s.reachability.ran = true;
  s.reachability.truncated = true;
  s.reachability_max_ms = 10;
  s.reachability_max_bytes = 4096;
  s.nvtx_mem.used = true;
  s.nvtx_mem.problems[static_cast<int>(NvtxMemProblem::kZeroSize)] = 2;
  s.nvtx_mem.counters[NvtxMemStats::kRegionsEndedByFree] = 3;
  s.guard.unguarded_oom = 1;
  s.guard.unguarded_capture = 2;
  s.guard.check_failures = 3;
  s.guard.fill_failures = 4;
  s.health_read = true;
  s.oom_reports_suppressed = 1;
  TimelineSnapshot timeline;
  timeline.capacity = 1;
  timeline.recorded = 2;
  timeline.dropped = 1;
  timeline.events.resize(1);
  s.timeline = timeline;
  s.timeline_events = 1;
  s.suppressions_error = "app.supp:2: 'nonsense' is not a rule";
  s.stack_depth = 16;
  s.symbolize = true;
  s.fast_unwinder = false;
  s.line_info = false;
  ReportData r = Assemble(std::move(s));
  EXPECT_THAT(
      r.notes,
      ElementsAre(
          HasSubstr("reachability scan hit its bound "
                    "(reachability_max_ms=10, reachability_max_bytes=4096)"),
          HasSubstr("NVTX memory API: 2 heaps or regions of size 0"),
          HasSubstr("NVTX memory API: 3 regions were still registered when "
                    "the block holding them was freed"),
          HasSubstr("1 allocations got no redzones"),
          HasSubstr("2 stream-ordered allocations made during graph capture"),
          HasSubstr("3 guard-zone checks could not run"),
          HasSubstr("4 guard-zone fills could not run"),
          HasSubstr("1 out-of-memory failure was not reported again"),
          HasSubstr("timeline: kept the newest 1 of 2 allocation/free events "
                    "(timeline_events=1)"),
          HasSubstr("suppressions not applied: app.supp:2: 'nonsense'"),
          HasSubstr("libunwind.so.8 could not be loaded"),
          HasSubstr("libdw.so.1 could not be loaded")));
}

TEST(AssembleReportTest, TorchModeSaysWhatItGuardedOrWhyNothing) {
  ReportState s = BaseState();
  s.torch_mode = true;
  s.stream_ordered_allocations = 3628;
  s.segment_allocations = 2;
  EXPECT_THAT(Assemble(s).notes,
              ElementsAre(HasSubstr("torch mode: 3628 stream-ordered "
                                    "allocations")));
  s.stream_ordered_allocations = 0;
  EXPECT_THAT(Assemble(s).notes,
              ElementsAre(HasSubstr("did not take its cudaMallocAsync "
                                    "backend")));
  s.torch_mode = false;  // not asked for: not said
  EXPECT_TRUE(Assemble(s).notes.empty());
}

TEST(AssembleReportTest, QuietStateHasNoNotes) {
  ReportState s = BaseState();
  s.oom_reports_suppressed = 3;  // health not read: not said
  s.stack_depth = 0;             // no stacks: unwinder and libdw do not matter
  s.fast_unwinder = false;
  s.line_info = false;
  s.reachability.truncated = true;  // never ran
  ReportData r = Assemble(std::move(s));
  EXPECT_TRUE(r.notes.empty()) << r.notes[0];
  EXPECT_FALSE(r.health_read);
}

TEST(AssembleReportTest, EachStackIsSymbolizedOnceAndNoStackNever) {
  ReportState s = BaseState();
  s.live.push_back(Block(kBase, kMiB, Api::kCudaMalloc, 0, 4));
  s.live.push_back(Block(kBase + kStride, kMiB, Api::kCudaMalloc, 1, 4));
  s.live.push_back(
      Block(kBase + 2 * kStride, kMiB, Api::kCudaMalloc, 0, kNoStack));
  ErrorRecord e;
  e.kind = ErrorKind::kInvalidFree;
  e.stack = 4;
  e.allocation = Block(kBase, kMiB, Api::kCudaMalloc, 0, 5);
  s.errors.push_back(e);
  s.growth.push_back(ReportData::Growth{6, 5, 0, kMiB, 1.0, 2.0});
  s.growth_samples = 9;
  FakeSymbolizer symbolizer;
  ReportData r =
      AssembleReport(std::move(s), [&](StackId id) { return symbolizer(id); });
  EXPECT_EQ(symbolizer.calls(),
            (std::map<StackId, int>{{4, 1}, {5, 1}, {6, 1}}));
  EXPECT_FALSE(r.stacks.contains(kNoStack));
  ASSERT_EQ(r.growth.size(), 1u);
  EXPECT_EQ(r.growth[0].rises, 5u);
  EXPECT_EQ(r.growth_samples, 9u);
  EXPECT_EQ(r.summary.errors, 1u);
}

TEST(AssembleReportTest, CrashNamesTheBlockAtTheFaultAndTheLargestLive) {
  ReportState s = BaseState();
  s.reason = "crash";
  for (uint64_t i = 0; i < kMaxCrashListedLive + 8; ++i) {
    s.live.push_back(Block(kBase + i * kStride, 1000 + i, Api::kCudaMalloc, 0,
                           static_cast<StackId>(100 + i)));
  }
  const AllocationRecord managed =
      Block(kBase + 100 * kStride, 4096, Api::kCudaMallocManaged, 0, 7);
  s.live.push_back(managed);
  // A registration: listed, not counted as live bytes.
  s.live.push_back(Block(kBase + 200 * kStride, 8 * kMiB,
                         Api::kCudaHostRegister, kHostDevice, 8));
  ReportData::Crash& c = s.crash;
  c.present = true;
  c.kind = "signal";
  c.signal = 11;
  c.has_fault_address = true;
  c.fault_address = managed.address + 4096 + 10;  // just past its end
  c.skipped.push_back("guard zones: not checked at the crash");

  ReportData r = Assemble(std::move(s));
  const ReportData::Crash& out = r.crash;
  ASSERT_TRUE(out.present);
  ASSERT_TRUE(out.has_fault_block);
  EXPECT_EQ(out.fault_block.address, managed.address);
  EXPECT_EQ(out.fault_offset, 4096 + 10);
  EXPECT_EQ(out.live_blocks, kMaxCrashListedLive + 10);
  uint64_t counted = 4096;
  for (uint64_t i = 0; i < kMaxCrashListedLive + 8; ++i) counted += 1000 + i;
  EXPECT_EQ(out.live_bytes, counted);
  ASSERT_EQ(out.live.size(), kMaxCrashListedLive);
  EXPECT_EQ(out.live[0].bytes, 8 * kMiB) << "largest first";
  EXPECT_EQ(out.live[1].bytes, 4096u);
  EXPECT_THAT(out.recent_kernels_note, HasSubstr("no kernel launch"));
  EXPECT_THAT(out.health_status, HasSubstr("not read at the crash"));
  EXPECT_EQ(out.skipped.size(), 1u);
  EXPECT_TRUE(r.stacks.contains(7)) << "the fault block's stack";
  EXPECT_TRUE(r.stacks.contains(8)) << "a listed block's stack";
}

TEST(AssembleReportTest, CrashFarFromEveryBlockNamesNone) {
  ReportState s = BaseState();
  s.live.push_back(Block(kBase, 4096, Api::kCudaMallocManaged, 0, 7));
  s.live.push_back(Block(kBase + kStride, 4096, Api::kCudaMalloc, 0, 7));
  s.crash.present = true;
  s.crash.kind = "cuda-error";
  s.crash.has_fault_address = true;
  s.crash.fault_address = kBase + 4096 + kCrashNearBytes + 1;
  s.crash.recent_kernels.push_back({"fill", 0x10, 0x20, 0.5});
  ReportData r = Assemble(std::move(s));
  EXPECT_FALSE(r.crash.has_fault_block);
  EXPECT_EQ(r.crash.recent_kernels_note, "");
  EXPECT_EQ(r.crash.health_status, "see devices[].health");
}

TEST(AssembleReportTest, NoCrashNoSection) {
  ReportState s = BaseState();
  s.live.push_back(Block(kBase, 4096));
  ReportData r = Assemble(std::move(s));
  EXPECT_FALSE(r.crash.present);
  EXPECT_TRUE(r.crash.live.empty());
}

TEST(AssembleReportTest, TimelineAndTheLiveBlocksTheVizWritersDraw) {
  ReportState s = BaseState();
  s.leak_check = false;  // only the timeline refers to stacks
  s.live.push_back(Block(kBase, 4096, Api::kCudaMalloc, 0, 11));
  s.live.push_back(
      Block(kBase + kStride, kMiB, Api::kCuMemAddressReserve, 0, 12));
  TimelineSnapshot t;
  t.capacity = 16;
  t.recorded = 1;
  TimelineEvent event;
  event.kind = TimelineKind::kAlloc;
  event.address = kBase;
  event.bytes = 4096;
  event.live_bytes = 4096;
  event.stack = 13;
  event.device = 0;
  t.events.push_back(event);
  s.timeline = t;
  s.wants_live_blocks = true;
  ReportData r = Assemble(std::move(s));
  EXPECT_TRUE(r.timeline.recorded);
  ASSERT_EQ(r.timeline.events.size(), 1u);
  ASSERT_EQ(r.timeline.series[0].size(), 1u);
  ASSERT_EQ(r.timeline.live.size(), 1u) << "no reservation: it takes no memory";
  EXPECT_EQ(r.timeline.live[0].address, kBase);
  EXPECT_TRUE(r.stacks.contains(11));
  EXPECT_FALSE(r.stacks.contains(12));
  EXPECT_TRUE(r.stacks.contains(13)) << "an event's stack";
}

TEST(AssembleReportTest, NoTimelineWantedNoSection) {
  ReportState s = BaseState();
  s.live.push_back(Block(kBase, 4096, Api::kCudaMalloc, 0, 11));
  ReportData r = Assemble(std::move(s));
  EXPECT_FALSE(r.timeline.recorded);
  EXPECT_TRUE(r.timeline.live.empty());
}

TEST(AssembleReportTest, HealthAsRead) {
  ReportState s = BaseState();
  s.health_read = true;
  s.health.available = false;
  s.health.reason = "libnvidia-ml.so.1 not found";
  ReportData r = Assemble(std::move(s));
  EXPECT_TRUE(r.health_read);
  EXPECT_EQ(r.health.reason, "libnvidia-ml.so.1 not found");
}

TEST(LeakGroupsTest, RangeNamesComeFromTheTotals) {
  NvtxRangeNames names = RangeNamesOf({{1, "a", 0, 0}, {2, "a/b", 0, 0}});
  EXPECT_EQ(RangeNameOf(names, 2), "a/b");
  EXPECT_EQ(RangeNameOf(names, kNoNvtxRange), "");
  EXPECT_EQ(RangeNameOf(names, 99), "");
}

TEST(LeakGroupsTest, EqualBytesKeepTheirKeyOrder) {
  std::vector<AllocationRecord> live = {
      Block(kBase + kStride, 100, Api::kCudaMalloc, 0, 2),
      Block(kBase, 100, Api::kCudaMalloc, 0, 1)};
  std::vector<ReportData::Leak> leaks = GroupBlockLeaks(live, {}, {}, {}, {});
  ASSERT_EQ(leaks.size(), 2u);
  EXPECT_EQ(leaks[0].stack, 1u);
  EXPECT_EQ(leaks[1].stack, 2u);
}

}  // namespace
}  // namespace gmt
