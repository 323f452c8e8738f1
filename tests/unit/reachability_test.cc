// Reachability (lib/leaks/reachability.h): the flood fill on made-up memory,
// and the Linux scanner (lib/leaks/reachability_linux.h) on this very process,
// with made-up "device" addresses held in a global, a heap object, another
// thread's stack, or nowhere.
#include "lib/leaks/reachability.h"

#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "lib/core/tool_thread.h"
#include "lib/leaks/reachability_linux.h"

namespace gmt {
namespace {

// Memory made of word arrays at chosen addresses; everything else unreadable.
class FakeMemory : public MemoryReader {
 public:
  // Returns the region's words for the test to fill.
  std::vector<uint64_t>& Map(uint64_t base, size_t words) {
    auto& region = regions_[base];
    region.assign(words, 0);
    return region;
  }
  size_t Read(uint64_t address, void* out, size_t bytes) override {
    auto it = regions_.upper_bound(address);
    if (it == regions_.begin()) return 0;
    --it;
    uint64_t end = it->first + it->second.size() * 8;
    if (address >= end) return 0;
    size_t n = static_cast<size_t>(std::min<uint64_t>(bytes, end - address));
    std::memcpy(out,
                reinterpret_cast<const char*>(it->second.data()) +
                    (address - it->first),
                n);
    ++reads_;
    return n;
  }
  int reads_ = 0;

 private:
  std::map<uint64_t, std::vector<uint64_t>> regions_;
};

// Heap objects at chosen ranges.
class FakeHeap : public HeapOracle {
 public:
  void Add(uint64_t begin, uint64_t end) { objects_.push_back({begin, end}); }
  std::optional<AddressRange> ObjectAt(uint64_t address) override {
    for (const AddressRange& o : objects_) {
      if (o.Contains(address)) return o;
    }
    return std::nullopt;
  }

 private:
  std::vector<AddressRange> objects_;
};

constexpr uint64_t kGlobals = 0x10000;
constexpr uint64_t kHeap = 0x20000;
constexpr uint64_t kDevice = 0x7f0000000000;

std::vector<AddressRange> ThreeBlocks() {
  return {{kDevice, kDevice + 4096},
          {kDevice + 8192, kDevice + 8192 + 512},
          {kDevice + 65536, kDevice + 65536 + 256}};
}

TEST(FloodFill, PointerInARootMakesItsBlockReachableOthersLost) {
  FakeMemory memory;
  FakeHeap heap;
  memory.Map(kGlobals, 16)[3] = kDevice + 8192;
  ReachResult r =
      FloodFill({{kGlobals, kGlobals + 128}}, ThreeBlocks(), memory, heap, {});
  EXPECT_EQ(r.reachable, (std::vector<bool>{false, true, false}));
  EXPECT_FALSE(r.truncated);
  EXPECT_EQ(r.roots, 1u);
  EXPECT_EQ(r.bytes_scanned, 128u);
}

TEST(FloodFill, InteriorPointerCounts) {
  FakeMemory memory;
  FakeHeap heap;
  memory.Map(kGlobals, 4)[0] = kDevice + 4095;  // last byte of block 0
  ReachResult r =
      FloodFill({{kGlobals, kGlobals + 32}}, ThreeBlocks(), memory, heap, {});
  EXPECT_EQ(r.reachable, (std::vector<bool>{true, false, false}));
}

TEST(FloodFill, OnePastTheEndIsNotInside) {
  FakeMemory memory;
  FakeHeap heap;
  memory.Map(kGlobals, 4)[0] = kDevice + 8192 + 512;
  ReachResult r =
      FloodFill({{kGlobals, kGlobals + 32}}, ThreeBlocks(), memory, heap, {});
  EXPECT_EQ(r.reachable, (std::vector<bool>{false, false, false}));
}

TEST(FloodFill, FollowsHeapObjectsReachedFromRoots) {
  FakeMemory memory;
  FakeHeap heap;
  // global -> object A (interior pointer) -> object B -> block 2
  memory.Map(kGlobals, 4)[1] = kHeap + 40;
  std::vector<uint64_t>& a = memory.Map(kHeap, 8);
  a[7] = kHeap + 0x100;
  memory.Map(kHeap + 0x100, 4)[2] = kDevice + 65536 + 8;
  heap.Add(kHeap, kHeap + 64);
  heap.Add(kHeap + 0x100, kHeap + 0x120);
  ReachResult r =
      FloodFill({{kGlobals, kGlobals + 32}}, ThreeBlocks(), memory, heap, {});
  EXPECT_EQ(r.reachable, (std::vector<bool>{false, false, true}));
  EXPECT_EQ(r.heap_objects, 2u);
  // The chain says why: the global's word -> A, A's last word -> B, and B's
  // third word points at the block.
  ASSERT_EQ(r.via_chain[2].size(), 2u);
  EXPECT_EQ(r.via_chain[2][0].word, kGlobals + 8);
  EXPECT_EQ(r.via_chain[2][0].object, kHeap);
  EXPECT_EQ(r.via_chain[2][0].object_size, 64u);
  EXPECT_EQ(r.via_chain[2][1].word, kHeap + 56);
  EXPECT_EQ(r.via_chain[2][1].object, kHeap + 0x100);
  EXPECT_EQ(r.via_word[2], kHeap + 0x100 + 16);
  EXPECT_EQ(r.via_root[2], 0);
}

// The runtime's handle of a fat binary (its first word points to the
// module's wrapper, which starts with the fat binary magic) leads into the
// runtime's tables: not followed, so the block only it reaches is lost.
TEST(FloodFill, FatBinaryHandleIsNotFollowed) {
  FakeMemory memory;
  FakeHeap heap;
  std::vector<uint64_t>& globals = memory.Map(kGlobals, 8);
  globals[0] = 0x1466243b1;    // the wrapper: magic, version 1
  globals[4] = kHeap;          // the handle variable
  globals[5] = kHeap + 0x100;  // an ordinary object of the program
  std::vector<uint64_t>& handle = memory.Map(kHeap, 8);
  handle[0] = kGlobals;  // -> the wrapper
  handle[3] = kDevice;   // the runtime's copy of a block
  memory.Map(kHeap + 0x100, 4)[1] = kDevice + 8192;
  heap.Add(kHeap, kHeap + 64);
  heap.Add(kHeap + 0x100, kHeap + 0x120);
  ReachResult r =
      FloodFill({{kGlobals, kGlobals + 64}}, ThreeBlocks(), memory, heap, {});
  EXPECT_EQ(r.reachable, (std::vector<bool>{false, true, false}));
  EXPECT_EQ(r.runtime_objects, 1u);
  // Without the magic it is an ordinary object.
  globals[0] = 0x1466243b2;
  r = FloodFill({{kGlobals, kGlobals + 64}}, ThreeBlocks(), memory, heap, {});
  EXPECT_EQ(r.reachable, (std::vector<bool>{true, true, false}));
}

TEST(FloodFill, HeapObjectsNotReachedAreNotScanned) {
  FakeMemory memory;
  FakeHeap heap;
  memory.Map(kGlobals, 4);
  memory.Map(kHeap, 8)[0] = kDevice;  // e.g. the driver's own table
  heap.Add(kHeap, kHeap + 64);
  ReachResult r =
      FloodFill({{kGlobals, kGlobals + 32}}, ThreeBlocks(), memory, heap, {});
  EXPECT_EQ(r.reachable, (std::vector<bool>{false, false, false}));
  EXPECT_EQ(r.heap_objects, 0u);
}

TEST(FloodFill, CyclesEndAndEachObjectIsReadOnce) {
  FakeMemory memory;
  FakeHeap heap;
  memory.Map(kGlobals, 4)[0] = kHeap;
  memory.Map(kHeap, 4)[0] = kHeap + 0x100;
  memory.Map(kHeap + 0x100, 4)[0] = kHeap;  // back to the first
  heap.Add(kHeap, kHeap + 32);
  heap.Add(kHeap + 0x100, kHeap + 0x120);
  ReachResult r =
      FloodFill({{kGlobals, kGlobals + 32}}, ThreeBlocks(), memory, heap, {});
  EXPECT_EQ(r.heap_objects, 2u);
  EXPECT_EQ(r.bytes_scanned, 32u + 32u + 32u);
}

TEST(FloodFill, DeviceBlocksAreNeverReadAsHostObjects) {
  // With the test double, device memory is host memory that may hold
  // anything; a block's contents must not make another block reachable even
  // when the oracle would call the block a heap object.
  FakeMemory memory;
  FakeHeap heap;
  memory.Map(kGlobals, 4)[0] = kDevice;
  memory.Map(kDevice, 512)[0] = kDevice + 8192;
  heap.Add(kDevice, kDevice + 4096);
  ReachResult r =
      FloodFill({{kGlobals, kGlobals + 32}}, ThreeBlocks(), memory, heap, {});
  EXPECT_EQ(r.reachable, (std::vector<bool>{true, false, false}));
}

TEST(FloodFill, UnreadableHolesInARootAreSkipped) {
  FakeMemory memory;
  FakeHeap heap;
  // A root of three pages whose middle page is unreadable.
  memory.Map(kGlobals, 512);
  memory.Map(kGlobals + 8192, 512)[5] = kDevice;
  ReachResult r = FloodFill({{kGlobals, kGlobals + 3 * 4096}}, ThreeBlocks(),
                            memory, heap, {});
  EXPECT_EQ(r.reachable, (std::vector<bool>{true, false, false}));
}

TEST(FloodFill, ByteBoundTruncatesAndLeavesTheRestUnproven) {
  FakeMemory memory;
  FakeHeap heap;
  std::vector<uint64_t>& g = memory.Map(kGlobals, 1 << 16);
  g[0] = kDevice;
  g[(1 << 16) - 1] = kDevice + 8192;  // at the very end of 512 KiB
  ReachLimits limits;
  limits.max_bytes = 64 * 1024;
  ReachResult r = FloodFill({{kGlobals, kGlobals + (8u << 16)}}, ThreeBlocks(),
                            memory, heap, limits);
  EXPECT_TRUE(r.truncated);
  EXPECT_TRUE(r.reachable[0]);
  EXPECT_FALSE(r.reachable[1]);
  EXPECT_LE(r.bytes_scanned, 64u * 1024);
}

TEST(FloodFill, StopsReadingOnceEveryBlockIsReachable) {
  FakeMemory memory;
  FakeHeap heap;
  std::vector<uint64_t>& g = memory.Map(kGlobals, 1 << 16);
  g[0] = kDevice;
  g[1] = kDevice + 8192;
  g[2] = kDevice + 65536;
  ReachResult r = FloodFill({{kGlobals, kGlobals + (8u << 16)}}, ThreeBlocks(),
                            memory, heap, {});
  EXPECT_EQ(r.reachable, (std::vector<bool>{true, true, true}));
  EXPECT_EQ(memory.reads_, 1);
}

// A reader whose PointerHoldingParts leaves one range out.
class MemoryWithSkippedRange : public FakeMemory {
 public:
  explicit MemoryWithSkippedRange(AddressRange skipped) : skipped_(skipped) {}
  void PointerHoldingParts(const AddressRange& range,
                           std::vector<AddressRange>* parts) override {
    if (range.end <= skipped_.begin || range.begin >= skipped_.end) {
      parts->push_back(range);
      return;
    }
    if (range.begin < skipped_.begin) {
      parts->push_back({range.begin, skipped_.begin});
    }
    if (range.end > skipped_.end) parts->push_back({skipped_.end, range.end});
  }

 private:
  AddressRange skipped_;
};

TEST(FloodFill, ReadsOnlyThePartsTheReaderSaysCanHoldPointers) {
  // Globals of 3 pages; the reader says the middle one cannot hold a
  // pointer (in the process: a page never touched, code): what it holds is
  // never read, what the other two hold is found.
  MemoryWithSkippedRange memory({kGlobals + 4096, kGlobals + 8192});
  std::vector<uint64_t>& g = memory.Map(kGlobals, 3 * 512);
  g[0] = kDevice + 16;            // first page
  g[512 + 3] = kDevice + 8192;    // skipped page
  g[1024 + 7] = kDevice + 65536;  // last page
  FakeHeap heap;
  ReachResult r = FloodFill({{kGlobals, kGlobals + 3 * 4096}}, ThreeBlocks(),
                            memory, heap, ReachLimits{});
  EXPECT_TRUE(r.reachable[0]);
  EXPECT_FALSE(r.reachable[1]);
  EXPECT_TRUE(r.reachable[2]);
  EXPECT_EQ(r.bytes_scanned, 2u * 4096);
}

TEST(FloodFill, LongChainKeepsItsEndsAndCountsTheMiddle) {
  // A root -> 20 heap objects in a list -> a block: the chain shows the
  // first and last kMaxReachHops / 2 objects, and how many were left out.
  constexpr int kObjects = 20;
  FakeMemory memory;
  FakeHeap heap;
  memory.Map(kGlobals, 1)[0] = kHeap;
  for (int i = 0; i < kObjects; ++i) {
    const uint64_t at = kHeap + uint64_t(i) * 0x100;
    heap.Add(at, at + 64);
    memory.Map(at, 8)[1] = i + 1 < kObjects ? at + 0x100 : kDevice;
  }
  ReachResult r = FloodFill({{kGlobals, kGlobals + 8}}, ThreeBlocks(), memory,
                            heap, ReachLimits{});
  ASSERT_TRUE(r.reachable[0]);
  ASSERT_EQ(r.via_chain[0].size(), kMaxReachHops);
  EXPECT_EQ(r.via_chain_elided[0], uint32_t{kObjects - kMaxReachHops});
  EXPECT_EQ(r.via_chain[0][0].object, kHeap);
  EXPECT_EQ(r.via_chain[0][0].word, kGlobals);
  EXPECT_EQ(r.via_chain[0][kMaxReachHops / 2 - 1].object,
            kHeap + (kMaxReachHops / 2 - 1) * 0x100);
  EXPECT_EQ(r.via_chain[0][kMaxReachHops / 2].object,
            kHeap + (kObjects - kMaxReachHops / 2) * 0x100);
  EXPECT_EQ(r.via_chain[0].back().object, kHeap + (kObjects - 1) * 0x100);
  EXPECT_EQ(r.via_word[0], kHeap + (kObjects - 1) * 0x100 + 8);
}

// An allocator's globals: an early word leads into a long list (the rest of
// the program's heap), a later one to an object that holds the block. Depth
// first, the list is walked to its end before the later word's object is
// read; with the root searched breadth first, two links find the block.
TEST(FloodFill, NearRootsFindAShortChainBeforeALongOne) {
  constexpr int kList = 500;
  constexpr uint64_t kHolder = kHeap - 0x1000;
  FakeMemory memory;
  FakeHeap heap;
  std::vector<uint64_t>& root = memory.Map(kGlobals, 2);
  root[0] = kHolder;  // read last by the depth-first fill (a stack)
  root[1] = kHeap;    // the list's head
  // Large objects (a node of a big structure), each read alone.
  constexpr uint64_t kNode = 32 * 1024;
  for (int i = 0; i < kList; ++i) {
    const uint64_t at = kHeap + uint64_t(i) * kNode;
    heap.Add(at, at + kNode);
    memory.Map(at, 8)[1] = i + 1 < kList ? at + kNode : 0;
  }
  heap.Add(kHolder, kHolder + 64);
  memory.Map(kHolder, 8)[3] = kDevice + 16;
  const std::vector<AddressRange> blocks = {{kDevice, kDevice + 4096}};

  ReachResult depth_first = FloodFill({{kGlobals, kGlobals + 16}}, blocks,
                                      memory, heap, ReachLimits{});
  ASSERT_TRUE(depth_first.reachable[0]);
  EXPECT_GT(depth_first.heap_objects, uint64_t{kList});

  ReachResult near = FloodFill({{kGlobals, kGlobals + 16}}, blocks, memory,
                               heap, ReachLimits{}, {}, /*near_roots=*/1);
  ASSERT_TRUE(near.reachable[0]);
  EXPECT_LE(near.heap_objects, 3u);
  EXPECT_LT(near.bytes_scanned, depth_first.bytes_scanned);
  ASSERT_EQ(near.via_chain[0].size(), 1u);
  EXPECT_EQ(near.via_chain[0][0].object, kHolder);
  EXPECT_EQ(near.via_chain[0][0].word, kGlobals);
  EXPECT_EQ(near.via_word[0], kHolder + 3 * 8);
}

// The breadth-first search stops kNearLinks links out; what lies deeper is
// still found by the depth-first fill, and a block nothing holds stays lost.
TEST(FloodFill, NearRootsLeaveDeeperChainsToTheDepthFirstFill) {
  constexpr int kList = 10;  // deeper than kNearLinks
  FakeMemory memory;
  FakeHeap heap;
  memory.Map(kGlobals, 1)[0] = kHeap;
  for (int i = 0; i < kList; ++i) {
    const uint64_t at = kHeap + uint64_t(i) * 0x100;
    heap.Add(at, at + 64);
    memory.Map(at, 8)[1] = i + 1 < kList ? at + 0x100 : kDevice;
  }
  memory.Map(kGlobals + 0x1000, 1)[0] = kDevice + 8192;  // a later root
  ReachResult r = FloodFill(
      {{kGlobals, kGlobals + 8}, {kGlobals + 0x1000, kGlobals + 0x1008}},
      ThreeBlocks(), memory, heap, ReachLimits{}, {},
      /*near_roots=*/1);
  EXPECT_TRUE(r.reachable[0]);
  EXPECT_EQ(r.via_chain[0].size() + r.via_chain_elided[0], uint64_t{kList});
  EXPECT_TRUE(r.reachable[1]);
  EXPECT_EQ(r.via_root[1], 1);
  EXPECT_FALSE(r.reachable[2]);
  EXPECT_FALSE(r.truncated);
}

// ---- Which memory can hold a pointer (reachability_linux.h) ---------------
MappingInfo Mapping(uint64_t begin, uint64_t end, const char* perms,
                    const char* path) {
  MappingInfo m;
  m.begin = begin;
  m.end = end;
  m.readable = perms[0] == 'r';
  m.writable = perms[1] == 'w';
  m.executable = perms[2] == 'x';
  m.shared = perms[3] == 's';
  m.path = path;
  return m;
}

TEST(PointerHoldingMappings, WritableOrAnonymousMemoryIsScanned) {
  for (const MappingInfo& m : {
           Mapping(0, 1, "rw-p", ""),  // anonymous
           Mapping(0, 1, "rw-p", "[heap]"), Mapping(0, 1, "rw-p", "[stack]"),
           Mapping(0, 1, "rw-p", "/usr/lib/libfoo.so"),   // data, bss
           Mapping(0, 1, "rw-s", "/dev/shm/ring"),        // shared file
           Mapping(0, 1, "rw-s", "/dev/zero (deleted)"),  // shared anon
           Mapping(0, 1, "r--p", ""),  // written, then mprotected
       }) {
    EXPECT_TRUE(MappingCanHoldPointers(m)) << m.path;
  }
}

TEST(PointerHoldingMappings, CodeDevicesAndTheKernelsPagesAreNot) {
  for (const MappingInfo& m : {
           Mapping(0, 1, "---p", ""),  // reservation, guard page
           Mapping(0, 1, "r-xp", "/usr/lib/libfoo.so"),
           Mapping(0, 1, "r--p", "/usr/lib/libfoo.so"),  // rodata, RELRO
           Mapping(0, 1, "r--p", "[vvar]"),
           Mapping(0, 1, "r-xp", "[vdso]"),
           Mapping(0, 1, "--xp", "[vsyscall]"),
           Mapping(0, 1, "rw-s", "/dev/nvidiactl"),
           Mapping(0, 1, "rw-s", "/dev/nvidia0"),
           Mapping(0, 1, "rw-s", "/dev/nvidia-uvm"),
           Mapping(0, 1, "rw-s", "/dev/dri/renderD128"),
       }) {
    EXPECT_FALSE(MappingCanHoldPointers(m)) << m.path;
  }
}

// Pages touched: a set of page numbers.
class FakeResidency : public PageResidency {
 public:
  explicit FakeResidency(std::vector<uint64_t> touched)
      : touched_(std::move(touched)) {}
  bool Touched(uint64_t first_page, size_t pages,
               std::vector<bool>* touched) override {
    ++asked_;
    touched->assign(pages, false);
    for (uint64_t p : touched_) {
      if (p >= first_page && p < first_page + pages) {
        (*touched)[p - first_page] = true;
      }
    }
    return true;
  }
  int asked_ = 0;

 private:
  std::vector<uint64_t> touched_;
};

constexpr uint64_t kPage = 4096;

TEST(PointerHoldingParts, SkipsUnreadableCodeAndDeviceMappings) {
  const std::vector<MappingInfo> maps = {
      Mapping(10 * kPage, 12 * kPage, "rw-p", ""),
      Mapping(12 * kPage, 13 * kPage, "---p", ""),
      Mapping(13 * kPage, 14 * kPage, "r-xp", "/lib/libx.so"),
      Mapping(14 * kPage, 15 * kPage, "rw-s", "/dev/nvidia0"),
      Mapping(15 * kPage, 16 * kPage, "rw-p", "/lib/libx.so"),
  };
  std::vector<AddressRange> parts;
  // From inside the first mapping to inside the last; a hole before them.
  PointerHoldingParts({9 * kPage, 15 * kPage + 100}, maps, nullptr, &parts);
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(parts[0].begin, 10 * kPage);
  EXPECT_EQ(parts[0].end, 12 * kPage);
  EXPECT_EQ(parts[1].begin, 15 * kPage);
  EXPECT_EQ(parts[1].end, 15 * kPage + 100);
}

TEST(PointerHoldingParts, PagesNeverTouchedOfAPrivateMappingAreSkipped) {
  // 64 pages, of which pages 3 and 40-41 were touched: a pointer can only
  // be there.
  const std::vector<MappingInfo> maps = {
      Mapping(100 * kPage, 164 * kPage, "rw-p", "")};
  FakeResidency residency({103, 140, 141});
  std::vector<AddressRange> parts;
  PointerHoldingParts({100 * kPage + 8, 164 * kPage}, maps, &residency, &parts);
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(parts[0].begin, 103 * kPage);
  EXPECT_EQ(parts[0].end, 104 * kPage);
  EXPECT_EQ(parts[1].begin, 140 * kPage);
  EXPECT_EQ(parts[1].end, 142 * kPage);
}

TEST(PointerHoldingParts, SharedMappingsAndSmallPiecesAreReadWhole) {
  // A shared mapping's pages may hold what another mapping of it wrote; a
  // few pages cost less to read than to ask about.
  const std::vector<MappingInfo> maps = {
      Mapping(100 * kPage, 164 * kPage, "rw-s", "/dev/shm/x"),
      Mapping(200 * kPage, 204 * kPage, "rw-p", "")};
  FakeResidency residency({});
  std::vector<AddressRange> parts;
  PointerHoldingParts({100 * kPage, 164 * kPage}, maps, &residency, &parts);
  PointerHoldingParts({200 * kPage, 204 * kPage}, maps, &residency, &parts);
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(parts[0].size(), 64 * kPage);
  EXPECT_EQ(parts[1].size(), 4 * kPage);
  EXPECT_EQ(residency.asked_, 0);
}

TEST(CudaModules, NamesOfTheCudaLibrariesAndTheTool) {
  for (const char* path :
       {"/usr/lib/x86_64-linux-gnu/libcuda.so.1", "libcuda.so.580.82.07",
        "libcudart.so.13", "/opt/x/libcupti.so.2025.1", "libnvidia-ml.so.1",
        "libnvrtc.so.13", "libcublas.so.13", "libcublasLt.so.13",
        "libcudnn_ops.so.9", "libnccl.so.2", "libcufft.so.12",
        "libcurand.so.10", "libcusparse.so.12", "libcusolver.so.11",
        "libnvJitLink.so.13", "/work/build/interpose/libgpumemtrace.so",
        // The test double's stand-ins (tests/fake_cuda/CMakeLists.txt).
        "/b/tests/fake_cuda/lib/libcuda.so.1",
        "/b/tests/fake_cuda/lib/libcudart.so.13"}) {
    EXPECT_TRUE(IsCudaOrToolModule(path)) << path;
  }
  for (const char* path :
       {"libc.so.6", "libc10_cuda.so", "libtorch_cuda.so", "libstdc++.so.6",
        "/usr/bin/python3.12", "", "libcudaprog.so", "myapp"}) {
    EXPECT_FALSE(IsCudaOrToolModule(path)) << path;
  }
}

// ---- The real process ------------------------------------------------------
// "Device" addresses nothing maps; the test keeps them as plain integers in
// the places a program would keep pointers.
constexpr uint64_t kInGlobal = 0x6f0000001000;
constexpr uint64_t kInHeap = 0x6f0000002000;
constexpr uint64_t kOnThreadStack = 0x6f0000003000;
constexpr uint64_t kNowhere = 0x6f0000004000;
constexpr uint64_t kBlockBytes = 0x800;

volatile uint64_t g_pointer;
struct HeapHolder {
  uint64_t padding[5];
  uint64_t pointer;
};
HeapHolder* volatile g_holder;

std::atomic<bool> g_thread_ready{false};
std::atomic<bool> g_thread_stop{false};

void* HoldOnStack(void*) {
  // Built from two halves so the whole value sits only in this frame.
  volatile uint64_t local = kOnThreadStack / 2;
  local = local * 2 + 0x10;  // an interior pointer
  g_thread_ready.store(true);
  while (!g_thread_stop.load()) usleep(1000);  // blocked in a syscall
  return reinterpret_cast<void*>(local);
}

// The blocks exist only below this frame (like the engine's copies).
__attribute__((noinline)) ProcessReach ScanFromHere() {
  uint64_t stack_from = reinterpret_cast<uint64_t>(__builtin_frame_address(0));
  std::vector<AddressRange> blocks;
  for (uint64_t b : {kInGlobal, kInHeap, kOnThreadStack, kNowhere}) {
    blocks.push_back({b, b + kBlockBytes});
  }
  ReachLimits limits;
  limits.max_bytes = uint64_t{1} << 36;
  return ScanProcess(blocks, stack_from, {}, limits);
}

TEST(ScanProcess, FindsGlobalsHeapObjectsAndOtherThreadsStacks) {
  g_pointer = kInGlobal + 8;
  g_holder = new HeapHolder{};
  g_holder->pointer = kInHeap;
  pthread_t thread;
  ASSERT_EQ(pthread_create(&thread, nullptr, &HoldOnStack, nullptr), 0);
  while (!g_thread_ready.load()) usleep(1000);
  usleep(20000);  // into its sleep

  ProcessReach scan = ScanFromHere();
  g_thread_stop.store(true);
  pthread_join(thread, nullptr);

  ASSERT_EQ(scan.result.reachable.size(), 4u);
  EXPECT_TRUE(scan.result.reachable[0]) << "held in a global";
  EXPECT_TRUE(scan.result.reachable[1]) << "held in a heap object";
  EXPECT_TRUE(scan.result.reachable[2])
      << "held on another thread's stack; threads " << scan.threads
      << " unknown " << scan.threads_unknown << " excluded "
      << scan.threads_excluded;
  EXPECT_FALSE(scan.result.reachable[3]) << "held nowhere";
  EXPECT_FALSE(scan.result.truncated);
  EXPECT_GE(scan.threads, 2u);
  EXPECT_GT(scan.modules, 0u);
  EXPECT_GT(scan.result.bytes_scanned, 0u);
  EXPECT_GT(scan.ns, 0);
  delete g_holder;
  g_holder = nullptr;
}

// The globals of the modules whose code allocated the blocks are scanned
// first (the fill stops once every block is found); the verdicts stay.
TEST(ScanProcess, AllocatingModulesGlobalsAreScannedFirst) {
  g_pointer = kInGlobal;
  // Code of libstdc++ (a module whose globals are roots) "allocated" them.
  const uint64_t allocating = reinterpret_cast<uint64_t>(&std::get_terminate);
  std::vector<AddressRange> blocks = {{kInGlobal, kInGlobal + kBlockBytes},
                                      {kNowhere, kNowhere + kBlockBytes}};
  ReachLimits limits;
  limits.max_bytes = uint64_t{1} << 36;
  ProcessReach scan = ScanProcess(
      blocks, reinterpret_cast<uint64_t>(__builtin_frame_address(0)), {},
      limits, {}, {allocating});
  ASSERT_FALSE(scan.root_labels.empty());
  EXPECT_NE(scan.root_labels[0].find("libstdc++"), std::string::npos)
      << scan.root_labels[0];
  ASSERT_EQ(scan.result.reachable.size(), 2u);
  EXPECT_TRUE(scan.result.reachable[0]) << "held in the program's global";
  EXPECT_FALSE(scan.result.reachable[1]);
  // Without it, the program's own globals come first, as the loader lists.
  ProcessReach plain = ScanProcess(
      blocks, reinterpret_cast<uint64_t>(__builtin_frame_address(0)), {},
      limits);
  ASSERT_FALSE(plain.root_labels.empty());
  EXPECT_EQ(plain.root_labels[0].find("libstdc++"), std::string::npos)
      << plain.root_labels[0];
  EXPECT_EQ(plain.result.reachable, scan.result.reachable);
  g_pointer = 0;
}

// A global the CUDA runtime keeps in a program's module (its name is one
// cuda_runtime_globals.h recognizes): a pointer held only there is the
// runtime's, not the program's.
extern "C" {
volatile uint64_t gmt_reach_test__cudaFatCubinHandle = 0;
}

TEST(ScanProcess, APointerHeldOnlyInTheRuntimesGlobalsIsNoPath) {
  g_pointer = 0;
  gmt_reach_test__cudaFatCubinHandle = kInGlobal;
  ProcessReach scan = ScanFromHere();
  if (scan.modules_with_symbols == 0) {
    gmt_reach_test__cudaFatCubinHandle = 0;
    GTEST_SKIP() << "this test program has no symbol table";
  }
  EXPECT_FALSE(scan.result.reachable[0])
      << "via " << scan.root_labels[scan.result.via_root[0]];
  EXPECT_GE(scan.runtime_globals_bytes, sizeof(uint64_t));
  // Held by the program as well: reachable, through the program's global.
  g_pointer = kInGlobal;
  scan = ScanFromHere();
  EXPECT_TRUE(scan.result.reachable[0]);
  if (scan.result.reachable[0]) {
    EXPECT_EQ(scan.result.via_word[0], reinterpret_cast<uint64_t>(&g_pointer));
  }
  gmt_reach_test__cudaFatCubinHandle = 0;
  g_pointer = 0;
}

// Symbol tables (millions of symbols in a framework's modules) are read only
// for the modules whose globals begin a found chain: none when no block is
// reachable, only this program's when its global holds the block.
TEST(ScanProcess, SymbolTablesAreReadOnlyWhereAChainBegins) {
  g_pointer = 0;
  ProcessReach scan = ScanFromHere();
  EXPECT_EQ(scan.modules_with_symbols, 0u);
  g_pointer = kInGlobal;
  scan = ScanFromHere();
  EXPECT_TRUE(scan.result.reachable[0]);
  EXPECT_LE(scan.modules_with_symbols, 1u);
  g_pointer = 0;
}

TEST(ScanProcess, OverwrittenPointerIsLost) {
  g_pointer = kInGlobal;
  g_pointer = 0;
  ProcessReach scan = ScanFromHere();
  EXPECT_FALSE(scan.result.reachable[0]);
}

TEST(ScanProcess, TimeBoundTruncates) {
  g_pointer = 0;
  std::vector<AddressRange> blocks = {{kNowhere, kNowhere + kBlockBytes}};
  ReachLimits limits;
  limits.deadline_ns = 1;  // long past
  ProcessReach scan = ScanProcess(
      blocks, reinterpret_cast<uint64_t>(__builtin_frame_address(0)), {},
      limits);
  EXPECT_TRUE(scan.result.truncated);
  EXPECT_FALSE(scan.result.reachable[0]);
}

TEST(ScanProcess, StacksOfTheToolsThreadsAreNoRoots) {
  // A thread of the tool's (lib/core/tool_thread.h) holds a block's address
  // on its stack: listed as the tool's, it is no root; a program thread
  // holding the same is one.
  std::atomic<bool> ready{false}, stop{false};
  ASSERT_TRUE(StartToolThread([&] {
    volatile uint64_t local = kNowhere / 2;
    local = local * 2;
    ready.store(true);
    while (!stop.load()) usleep(1000);
    (void)local;
  }));
  while (!ready.load()) usleep(1000);
  usleep(20000);
  std::vector<AddressRange> tool;
  for (const auto& [begin, end] : ToolThreadStacks()) {
    tool.push_back({begin, end});
  }
  ASSERT_FALSE(tool.empty());
  const uint64_t stack_from =
      reinterpret_cast<uint64_t>(__builtin_frame_address(0));
  std::vector<AddressRange> blocks = {{kNowhere, kNowhere + kBlockBytes}};
  ReachLimits limits;
  limits.max_bytes = uint64_t{1} << 36;
  ProcessReach as_tool = ScanProcess(blocks, stack_from, {}, limits, tool);
  ProcessReach as_program = ScanProcess(blocks, stack_from, {}, limits, {});
  stop.store(true);
  usleep(20000);
  EXPECT_FALSE(as_tool.result.reachable[0]);
  EXPECT_TRUE(as_program.result.reachable[0])
      << "the test's pointer was not where the scan looks";
}

TEST(ToolThread, StackIsAMappingOfItsOwnBetweenInaccessiblePages) {
  // Found as a thread stack by its mapping alone (where the kernel does not
  // tell a thread's stack pointer, as in some containers), and never merged
  // with a neighbouring anonymous mapping of the program's.
  std::atomic<bool> ready{false}, stop{false};
  ASSERT_TRUE(StartToolThread([&] {
    ready.store(true);
    while (!stop.load()) usleep(1000);
  }));
  while (!ready.load()) usleep(1000);
  const auto stacks = ToolThreadStacks();
  ASSERT_FALSE(stacks.empty());
  const auto [begin, end] = stacks.back();
  struct Perm {
    uint64_t begin, end;
    std::string perms;
  };
  std::vector<Perm> maps;
  FILE* f = std::fopen("/proc/self/maps", "re");
  ASSERT_NE(f, nullptr);
  char line[512];
  while (std::fgets(line, sizeof(line), f)) {
    unsigned long b = 0, e = 0;
    char perms[8] = {0};
    if (std::sscanf(line, "%lx-%lx %7s", &b, &e, perms) == 3) {
      maps.push_back({b, e, perms});
    }
  }
  std::fclose(f);
  stop.store(true);
  bool own = false, guard_below = false, guard_above = false;
  for (const Perm& m : maps) {
    if (m.begin == begin && m.end == end) own = m.perms == "rw-p";
    if (m.begin < begin && m.end >= begin) guard_below = m.perms == "---p";
    if (m.begin <= end && m.end > end) guard_above = m.perms == "---p";
  }
  EXPECT_TRUE(own) << "the stack is not exactly one read-write mapping";
  EXPECT_TRUE(guard_below);
  EXPECT_TRUE(guard_above);
}

TEST(ScanProcess, PointerInATouchedPageOfALargelyUntouchedBufferIsFound) {
  // 64 MiB from malloc (its own mapping), one page in the middle written:
  // the pages never touched are skipped, the one written is read.
  constexpr size_t kBytes = size_t{64} << 20;
  std::unique_ptr<uint64_t, decltype(&std::free)> owner(
      static_cast<uint64_t*>(std::malloc(kBytes)), &std::free);
  uint64_t* buffer = owner.get();
  ASSERT_NE(buffer, nullptr);
  buffer[kBytes / 16] = kInHeap + 0x10;
  g_holder = new HeapHolder{};
  g_holder->pointer = reinterpret_cast<uint64_t>(buffer);
  ProcessReach scan = ScanFromHere();
  EXPECT_TRUE(scan.result.reachable[1]);
  EXPECT_FALSE(scan.result.reachable[3]);
  // Far less than the buffer was read.
  EXPECT_LT(scan.result.bytes_scanned, uint64_t{kBytes / 4});
  delete g_holder;
  g_holder = nullptr;
}

TEST(ScanProcess, HeapListedAsSeveralMappingsIsOneArena) {
  // The kernel splits [heap] where part of it gets other flags (here
  // MADV_NOHUGEPAGE on its upper part): an object below the split is still
  // found.
  g_pointer = 0;
  g_holder = new HeapHolder{};
  g_holder->pointer = kInHeap;
  std::vector<void*> filler;
  for (int i = 0; i < 4096; ++i) filler.push_back(std::malloc(256));
  // Freed on every way out, the skips included.
  struct Cleanup {
    std::vector<void*>* filler;
    ~Cleanup() {
      for (void* p : *filler) std::free(p);
      delete g_holder;
      g_holder = nullptr;
    }
  } cleanup{&filler};
  const uint64_t holder = reinterpret_cast<uint64_t>(g_holder);
  uint64_t heap_end = 0;
  {
    FILE* f = std::fopen("/proc/self/maps", "re");
    ASSERT_NE(f, nullptr);
    char line[512];
    while (std::fgets(line, sizeof(line), f) != nullptr) {
      unsigned long long b = 0, e = 0;
      if (std::strstr(line, "[heap]") != nullptr &&
          std::sscanf(line, "%llx-%llx", &b, &e) == 2 && holder >= b &&
          holder < e) {
        heap_end = e;
      }
    }
    std::fclose(f);
  }
  if (heap_end == 0) GTEST_SKIP() << "the holder is not in [heap]";
  const uint64_t split = ((holder + 4095) & ~uint64_t{4095}) + 4096;
  if (split >= heap_end || madvise(reinterpret_cast<void*>(split),
                                   heap_end - split, MADV_NOHUGEPAGE) != 0) {
    GTEST_SKIP() << "could not split [heap]";
  }
  int heap_mappings = 0;
  {
    FILE* f = std::fopen("/proc/self/maps", "re");
    char line[512];
    while (std::fgets(line, sizeof(line), f) != nullptr) {
      heap_mappings += std::strstr(line, "[heap]") != nullptr;
    }
    std::fclose(f);
  }
  if (heap_mappings < 2) GTEST_SKIP() << "[heap] stayed one mapping";
  ProcessReach scan = ScanFromHere();
  EXPECT_TRUE(scan.result.reachable[1]) << heap_mappings << " [heap] mappings";
}

}  // namespace
}  // namespace gmt
