// StackDepot: one id per distinct frame sequence, frames readable by id.
#include "lib/stacks/stack_depot.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace gmt {
namespace {

std::vector<uintptr_t> Frames(uintptr_t seed, int count) {
  std::vector<uintptr_t> f;
  for (int i = 0; i < count; ++i) f.push_back(0x400000 + seed * 0x1000 + i * 8);
  return f;
}

StackId Put(StackDepot& depot, const std::vector<uintptr_t>& frames) {
  return depot.Put(frames.data(), static_cast<int>(frames.size()));
}

TEST(StackDepotTest, SameFramesSameId) {
  StackDepot depot;
  std::vector<uintptr_t> a = Frames(1, 16);
  StackId id1 = Put(depot, a);
  std::vector<uintptr_t> copy = a;  // equal content, another buffer
  StackId id2 = Put(depot, copy);
  EXPECT_NE(id1, kNoStack);
  EXPECT_EQ(id1, id2);
  EXPECT_EQ(depot.size(), 1u);
}

TEST(StackDepotTest, DifferentFramesDifferentIds) {
  StackDepot depot;
  std::vector<uintptr_t> a = Frames(1, 16);
  std::vector<uintptr_t> b = a;
  b[15] += 1;  // differs in the last frame only
  std::vector<uintptr_t> prefix(a.begin(), a.begin() + 15);  // a prefix of a
  StackId ia = Put(depot, a);
  StackId ib = Put(depot, b);
  StackId ip = Put(depot, prefix);
  EXPECT_NE(ia, ib);
  EXPECT_NE(ia, ip);
  EXPECT_NE(ib, ip);
  EXPECT_EQ(depot.size(), 3u);
}

TEST(StackDepotTest, GetReturnsTheFrames) {
  StackDepot depot;
  std::vector<uintptr_t> a = Frames(7, 5);
  StackId id = Put(depot, a);
  // The depot keeps its own copy.
  std::vector<uintptr_t> expected = a;
  a.assign(a.size(), 0);
  StackView v = depot.Get(id);
  ASSERT_EQ(v.size(), expected.size());
  for (size_t i = 0; i < v.size(); ++i) EXPECT_EQ(v[i], expected[i]) << i;
}

TEST(StackDepotTest, EmptyStackIsNoStack) {
  StackDepot depot;
  uintptr_t frame = 0x1234;
  EXPECT_EQ(depot.Put(&frame, 0), kNoStack);
  EXPECT_EQ(depot.Put(nullptr, 0), kNoStack);
  EXPECT_EQ(depot.Put(&frame, -1), kNoStack);
  EXPECT_TRUE(depot.Get(kNoStack).empty());
  EXPECT_EQ(depot.size(), 0u);
}

TEST(StackDepotTest, UnknownIdGivesEmptyView) {
  StackDepot depot;
  EXPECT_TRUE(depot.Get(12345).empty());
  EXPECT_TRUE(depot.Get(0xFFFFFFFFu).empty());
  StackId id = Put(depot, Frames(1, 3));
  EXPECT_TRUE(depot.Get(id + 1).empty());
}

TEST(StackDepotTest, OneFrameAndMaxFrames) {
  StackDepot depot;
  std::vector<uintptr_t> one = Frames(3, 1);
  std::vector<uintptr_t> many = Frames(4, 64);
  StackId i1 = Put(depot, one);
  StackId i64 = Put(depot, many);
  ASSERT_EQ(depot.Get(i1).size(), 1u);
  ASSERT_EQ(depot.Get(i64).size(), 64u);
  EXPECT_EQ(depot.Get(i64)[63], many[63]);
}

TEST(StackDepotTest, ManyStacksAllDistinctNonZeroAndReadable) {
  StackDepot depot;
  constexpr int kStacks = 20000;  // several chunks per shard
  std::vector<StackId> ids;
  for (int i = 0; i < kStacks; ++i) ids.push_back(Put(depot, Frames(i, 4)));
  EXPECT_EQ(depot.size(), size_t{kStacks});
  std::vector<StackId> sorted = ids;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(std::adjacent_find(sorted.begin(), sorted.end()), sorted.end());
  for (int i = 0; i < kStacks; ++i) {
    ASSERT_NE(ids[i], kNoStack);
    StackView v = depot.Get(ids[i]);
    ASSERT_EQ(v.size(), 4u);
    EXPECT_EQ(v[0], Frames(i, 4)[0]);
    // Putting it again finds the same id.
    EXPECT_EQ(Put(depot, Frames(i, 4)), ids[i]);
  }
}

TEST(StackDepotTest, SixteenThreadsOverlappingStacksGetConsistentIds) {
  constexpr int kThreads = 16;
  constexpr int kStacks = 2000;  // shared by all threads
  StackDepot depot;
  std::vector<std::vector<StackId>> seen(kThreads,
                                         std::vector<StackId>(kStacks));
  std::atomic<int> go{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      while (go.load(std::memory_order_acquire) == 0) {
      }
      // Every thread puts every stack, starting at a different place, and
      // reads back what it got.
      for (int k = 0; k < kStacks; ++k) {
        int i = (k + t * 131) % kStacks;
        std::vector<uintptr_t> f = Frames(i, 1 + i % 16);
        StackId id = Put(depot, f);
        seen[t][i] = id;
        StackView v = depot.Get(id);
        EXPECT_EQ(std::vector<uintptr_t>(v.begin(), v.end()), f);
      }
    });
  }
  go.store(1, std::memory_order_release);
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(depot.size(), size_t{kStacks});
  for (int i = 0; i < kStacks; ++i) {
    EXPECT_NE(seen[0][i], kNoStack);
    for (int t = 1; t < kThreads; ++t) {
      ASSERT_EQ(seen[t][i], seen[0][i]) << "stack " << i << " thread " << t;
    }
  }
}

}  // namespace
}  // namespace gmt
