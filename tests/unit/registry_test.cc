// Registry: live blocks by address, interior lookups, the bounded memory of
// freed blocks, and thread safety.
#include "lib/registry/registry.h"

#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace gmt {
namespace {

// CUDA-like addresses: 256-byte aligned, in a high range, 2 MiB apart.
constexpr uint64_t kBase = 0x7f0000000000ull;
constexpr uint64_t kStride = uint64_t{2} << 20;

AllocationRecord Block(uint64_t address, uint64_t bytes,
                       Api api = Api::kCudaMalloc, int32_t device = 0) {
  AllocationRecord r;
  r.address = address;
  r.bytes = bytes;
  r.api = api;
  r.kind = ApiMemoryKind(api);
  r.device = device;
  return r;
}

FreedRecord Freed(uint64_t address, uint64_t bytes,
                  Api free_api = Api::kCudaFree) {
  FreedRecord f;
  f.allocation = Block(address, bytes);
  f.free_api = free_api;
  return f;
}

TEST(RegistryTest, InsertFindErase) {
  Registry registry(16);
  EXPECT_EQ(registry.live_count(), 0u);
  EXPECT_FALSE(registry.Find(kBase).has_value());

  EXPECT_FALSE(registry.Insert(Block(kBase, 4096)).has_value());
  EXPECT_FALSE(registry.Insert(Block(kBase + kStride, 100)).has_value());
  EXPECT_EQ(registry.live_count(), 2u);

  std::optional<AllocationRecord> found = registry.Find(kBase);
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->address, kBase);
  EXPECT_EQ(found->bytes, 4096u);
  EXPECT_EQ(found->api, Api::kCudaMalloc);
  // Find is by start address only.
  EXPECT_FALSE(registry.Find(kBase + 256).has_value());

  std::optional<AllocationRecord> erased = registry.Erase(kBase);
  ASSERT_TRUE(erased.has_value());
  EXPECT_EQ(erased->bytes, 4096u);
  EXPECT_FALSE(registry.Find(kBase).has_value());
  EXPECT_FALSE(registry.Erase(kBase).has_value());
  EXPECT_EQ(registry.live_count(), 1u);
  EXPECT_TRUE(registry.Find(kBase + kStride).has_value());
}

TEST(RegistryTest, InsertOverLiveAddressReturnsTheReplacedRecord) {
  Registry registry(16);
  ASSERT_FALSE(registry.Insert(Block(kBase, 111)).has_value());
  std::optional<AllocationRecord> replaced =
      registry.Insert(Block(kBase, 222, Api::kCudaMallocAsync));
  ASSERT_TRUE(replaced.has_value());
  EXPECT_EQ(replaced->bytes, 111u);
  EXPECT_EQ(replaced->api, Api::kCudaMalloc);
  EXPECT_EQ(registry.live_count(), 1u);
  EXPECT_EQ(registry.Find(kBase)->bytes, 222u);
  EXPECT_EQ(registry.Find(kBase)->api, Api::kCudaMallocAsync);
}

TEST(RegistryTest, FindContainingInteriorPointers) {
  Registry registry(16);
  registry.Insert(Block(kBase, 1000));
  registry.Insert(Block(kBase + kStride, 4096));

  EXPECT_EQ(registry.FindContaining(kBase)->address, kBase);
  EXPECT_EQ(registry.FindContaining(kBase + 1)->address, kBase);
  EXPECT_EQ(registry.FindContaining(kBase + 999)->address, kBase);
  // One past the end belongs to nobody.
  EXPECT_FALSE(registry.FindContaining(kBase + 1000).has_value());
  EXPECT_FALSE(registry.FindContaining(kBase - 1).has_value());
  EXPECT_EQ(registry.FindContaining(kBase + kStride + 4095)->address,
            kBase + kStride);
  EXPECT_FALSE(registry.FindContaining(kBase + kStride + 4096).has_value());
}

TEST(RegistryTest, FindContainingZeroByteBlockHoldsNothing) {
  Registry registry(16);
  registry.Insert(Block(kBase, 0));
  EXPECT_FALSE(registry.FindContaining(kBase).has_value());
  EXPECT_TRUE(registry.Find(kBase).has_value());
}

TEST(RegistryTest, EraseIfRemovesExactlyTheMatchingBlocks) {
  Registry registry(16);
  for (int i = 0; i < 100; ++i) {
    registry.Insert(Block(kBase + i * kStride, 256, Api::kCudaMalloc,
                          /*device=*/i % 3));
  }
  std::vector<AllocationRecord> removed =
      registry.EraseIf([](const AllocationRecord& r) { return r.device == 1; });
  EXPECT_EQ(removed.size(), 33u);
  for (const AllocationRecord& r : removed) EXPECT_EQ(r.device, 1);
  EXPECT_EQ(registry.live_count(), 67u);
  for (const AllocationRecord& r : registry.Live()) EXPECT_NE(r.device, 1);
  // Nothing matches any more.
  EXPECT_TRUE(
      registry.EraseIf([](const AllocationRecord& r) { return r.device == 1; })
          .empty());
}

TEST(RegistryTest, LiveReturnsEveryBlock) {
  Registry registry(16);
  for (int i = 0; i < 500; ++i) registry.Insert(Block(kBase + i * kStride, i));
  std::vector<AllocationRecord> live = registry.Live();
  ASSERT_EQ(live.size(), 500u);
  uint64_t total = 0;
  for (const AllocationRecord& r : live) total += r.bytes;
  EXPECT_EQ(total, 499u * 500u / 2);
}

TEST(RegistryTest, RememberedFreeIsFound) {
  Registry registry(16);
  EXPECT_FALSE(registry.FindFreed(kBase).has_value());
  registry.RememberFreed(Freed(kBase, 4096, Api::kCudaFreeAsync));
  std::optional<FreedRecord> f = registry.FindFreed(kBase);
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->allocation.bytes, 4096u);
  EXPECT_EQ(f->free_api, Api::kCudaFreeAsync);
}

TEST(RegistryTest, ZeroFreedCapacityRemembersNothing) {
  Registry registry(0);
  registry.RememberFreed(Freed(kBase, 1));
  EXPECT_FALSE(registry.FindFreed(kBase).has_value());
}

// registry.h: "`freed_capacity`: how many freed blocks are remembered in all
// (FIFO)". After N + k frees of distinct blocks the k oldest are forgotten and
// the N newest are all remembered, whatever their addresses.
TEST(RegistryTest, FreedHistoryIsAFifoOfCapacityN) {
  constexpr int kCapacity = 1000;
  constexpr int kExtra = 100;
  Registry registry(kCapacity);
  for (int i = 0; i < kCapacity; ++i) {
    registry.RememberFreed(Freed(kBase + i * kStride, i + 1));
  }
  int remembered = 0;
  for (int i = 0; i < kCapacity; ++i) {
    if (registry.FindFreed(kBase + i * kStride)) ++remembered;
  }
  EXPECT_EQ(remembered, kCapacity)
      << "frees forgotten before the capacity was reached";

  for (int i = kCapacity; i < kCapacity + kExtra; ++i) {
    registry.RememberFreed(Freed(kBase + i * kStride, i + 1));
  }
  int oldest_remembered = 0;
  for (int i = 0; i < kExtra; ++i) {
    if (registry.FindFreed(kBase + i * kStride)) ++oldest_remembered;
  }
  int newest_forgotten = 0;
  for (int i = kExtra; i < kCapacity + kExtra; ++i) {
    if (!registry.FindFreed(kBase + i * kStride)) ++newest_forgotten;
  }
  EXPECT_EQ(oldest_remembered, 0) << "the oldest frees must be evicted first";
  EXPECT_EQ(newest_forgotten, 0) << "the newest N frees must all be remembered";
}

// The same property at a small capacity, where the bound is easy to see.
TEST(RegistryTest, FreedHistorySmallCapacityIsABound) {
  Registry registry(4);
  for (int i = 0; i < 100; ++i) {
    registry.RememberFreed(Freed(kBase + i * kStride, 1));
  }
  int remembered = 0;
  for (int i = 0; i < 100; ++i) {
    if (registry.FindFreed(kBase + i * kStride)) ++remembered;
  }
  EXPECT_EQ(remembered, 4) << "capacity 4 must remember exactly 4 frees";
  for (int i = 96; i < 100; ++i) {
    EXPECT_TRUE(registry.FindFreed(kBase + i * kStride)) << i;
  }
}

// A re-freed address keeps its newest record, even once the FIFO slot of its
// older free is recycled. Capacity 1 behaves the same whether the bound is
// global or per shard.
TEST(RegistryTest, RefreedAddressKeepsItsNewestRecord) {
  Registry registry(1);
  registry.RememberFreed(Freed(kBase, 111, Api::kCudaFree));
  registry.RememberFreed(Freed(kBase, 222, Api::kCudaFreeAsync));
  std::optional<FreedRecord> f = registry.FindFreed(kBase);
  ASSERT_TRUE(f.has_value()) << "evicting the stale slot dropped the new free";
  EXPECT_EQ(f->allocation.bytes, 222u);
  EXPECT_EQ(f->free_api, Api::kCudaFreeAsync);
  // And once more: the slot now holding the second free is recycled by a
  // third free of the same address.
  registry.RememberFreed(Freed(kBase, 333));
  ASSERT_TRUE(registry.FindFreed(kBase).has_value());
  EXPECT_EQ(registry.FindFreed(kBase)->allocation.bytes, 333u);
}

TEST(RegistryTest, RefreedAddressInALargerHistory) {
  constexpr int kCapacity = 256;
  Registry registry(kCapacity);
  // A first free of kBase, then it is freed again (reused and freed) after a
  // few others; its first FIFO slot becomes the oldest.
  registry.RememberFreed(Freed(kBase, 111));
  for (int i = 1; i < 10; ++i) {
    registry.RememberFreed(Freed(kBase + i * kStride, 1));
  }
  registry.RememberFreed(Freed(kBase, 222));
  // Enough frees elsewhere to evict the first free of kBase (cap + 9 frees in
  // all), but only capacity - 1 since its second free: that one must stay.
  for (int i = 10; i < 10 + kCapacity - 2; ++i) {
    registry.RememberFreed(Freed(kBase + i * kStride, 1));
  }
  std::optional<FreedRecord> f = registry.FindFreed(kBase);
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->allocation.bytes, 222u);
}

TEST(RegistryTest, SixteenThreadInsertEraseStormKeepsExactCount) {
  constexpr int kThreads = 16;
  constexpr int kPerThread = 20000;
  Registry registry(4096);
  std::atomic<int> go{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      while (go.load(std::memory_order_acquire) == 0) {
      }
      // Each thread owns a disjoint range; it inserts every block, erases
      // the even ones and checks its own view as it goes.
      const uint64_t base = kBase + (static_cast<uint64_t>(t) << 36);
      for (int i = 0; i < kPerThread; ++i) {
        const uint64_t a = base + uint64_t(i) * 256;
        EXPECT_FALSE(registry.Insert(Block(a, 256)).has_value());
        if (i % 2 == 1) {
          const uint64_t prev = base + uint64_t(i - 1) * 256;
          EXPECT_TRUE(registry.Erase(prev).has_value());
          FreedRecord f;
          f.allocation = Block(prev, 256);
          registry.RememberFreed(f);
        }
        if (i % 1000 == 0) {
          EXPECT_TRUE(registry.Find(a).has_value());
        }
      }
    });
  }
  go.store(1, std::memory_order_release);
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(registry.live_count(), size_t{kThreads} * kPerThread / 2);
  EXPECT_EQ(registry.Live().size(), size_t{kThreads} * kPerThread / 2);
}

// Two threads racing to erase the same blocks: each block is erased exactly
// once.
TEST(RegistryTest, ConcurrentEraseOfTheSameBlockSucceedsOnce) {
  constexpr int kBlocks = 50000;
  Registry registry(16);
  for (int i = 0; i < kBlocks; ++i) registry.Insert(Block(kBase + i * 256, 1));
  std::atomic<int> wins{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      int mine = 0;
      for (int i = 0; i < kBlocks; ++i) {
        if (registry.Erase(kBase + i * 256)) ++mine;
      }
      wins.fetch_add(mine);
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(wins.load(), kBlocks);
  EXPECT_EQ(registry.live_count(), 0u);
}

}  // namespace
}  // namespace gmt
