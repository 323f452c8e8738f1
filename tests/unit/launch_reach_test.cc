// lib/launch: reading a launch's parameter words (kernelParams with a layout,
// the packed `extra` buffer), finding the blocks they point into, and the
// per-function layout cache.
#include "lib/launch/launch_reach.h"

#include <chrono>
#include <cstring>
#include <new>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "lib/launch/param_layout.h"

namespace gmt {
namespace {

constexpr uint64_t kBlock = 0x7f0000000000;

TEST(ReadArgWordsTest, PointerAndStructWordsAtTheirBufferOffsets) {
  // k(int, struct {uint64 n; void* p; uint32 flags;}, float*):
  // int at 0, the struct at 8 (24 bytes), the pointer at 32.
  ParamLayout layout{{{0, 4}, {8, 24}, {32, 8}}};
  int i = 3;
  struct {
    uint64_t n;
    uint64_t p;
    uint32_t flags;
  } s;
  std::memset(&s, 0, sizeof(s));  // its padding too, as in a real buffer
  s.n = 2;
  s.p = kBlock + 64;
  uint64_t ptr = kBlock + 4096;
  void* params[] = {&i, &s, &ptr};
  LaunchArgs args;
  args.params = params;
  std::vector<ArgWord> words;
  ASSERT_TRUE(ReadArgWords(args, &layout, &words));
  // Small values (the int, n, flags) are never addresses.
  ASSERT_EQ(words.size(), 2u);
  EXPECT_EQ(words[0].value, kBlock + 64);
  EXPECT_EQ(words[0].param, 1u);
  EXPECT_EQ(words[0].offset, 16u);
  EXPECT_EQ(words[1].value, kBlock + 4096);
  EXPECT_EQ(words[1].param, 2u);
  EXPECT_EQ(words[1].offset, 32u);
}

TEST(ReadArgWordsTest, ParamsWithoutALayoutCannotBeRead) {
  uint64_t ptr = kBlock;
  void* params[] = {&ptr};
  LaunchArgs args;
  args.params = params;
  std::vector<ArgWord> words;
  EXPECT_FALSE(ReadArgWords(args, nullptr, &words));
  // No parameters at all: nothing to read, and that is known.
  LaunchArgs none;
  EXPECT_TRUE(ReadArgWords(none, nullptr, &words));
  EXPECT_TRUE(words.empty());
}

TEST(ReadArgWordsTest, ExtraBufferIsReadWithoutALayout) {
  alignas(8) unsigned char buffer[24] = {};
  const uint64_t ptr = kBlock + 8;
  std::memcpy(buffer + 16, &ptr, 8);
  size_t size = sizeof(buffer);
  void* extra[] = {reinterpret_cast<void*>(kLaunchParamBufferPointer), buffer,
                   reinterpret_cast<void*>(kLaunchParamBufferSize), &size,
                   reinterpret_cast<void*>(kLaunchParamEnd)};
  LaunchArgs args;
  args.extra = extra;
  std::vector<ArgWord> words;
  ASSERT_TRUE(ReadArgWords(args, nullptr, &words));
  ASSERT_EQ(words.size(), 1u);
  EXPECT_EQ(words[0].value, ptr);
  EXPECT_EQ(words[0].offset, 16u);
  EXPECT_EQ(words[0].param, kNoParam);
  // Without the size the buffer cannot be read.
  void* no_size[] = {reinterpret_cast<void*>(kLaunchParamBufferPointer), buffer,
                     reinterpret_cast<void*>(kLaunchParamEnd)};
  args.extra = no_size;
  EXPECT_FALSE(ReadArgWords(args, nullptr, &words));
}

TEST(ReadArgWordsTest, AtMostTheWordsAsked) {
  // k(struct {void* p[64];}, float*): a framework's kilobyte of parameters.
  ParamLayout layout{{{0, 512}, {512, 8}}};
  uint64_t table[64];
  for (int k = 0; k < 64; ++k) table[k] = kBlock + 256 * k;
  uint64_t ptr = kBlock + 0x100000;
  void* params[] = {table, &ptr};
  LaunchArgs args;
  args.params = params;
  std::vector<ArgWord> words;
  ASSERT_TRUE(ReadArgWords(args, &layout, &words, 8));
  ASSERT_EQ(words.size(), 8u);
  EXPECT_EQ(words[7].value, kBlock + 256 * 7);
  words.clear();
  ASSERT_TRUE(ReadArgWords(args, &layout, &words));  // all of them
  ASSERT_EQ(words.size(), 65u);
  EXPECT_EQ(words[64].value, ptr);
  // A parameter past the limit that cannot be read still says so.
  void* missing[] = {table, nullptr};
  args.params = missing;
  words.clear();
  EXPECT_FALSE(ReadArgWords(args, &layout, &words, 8));
  // The packed buffer: the same limit.
  size_t size = sizeof(table);
  void* extra[] = {reinterpret_cast<void*>(kLaunchParamBufferPointer), table,
                   reinterpret_cast<void*>(kLaunchParamBufferSize), &size,
                   reinterpret_cast<void*>(kLaunchParamEnd)};
  LaunchArgs packed;
  packed.extra = extra;
  words.clear();
  ASSERT_TRUE(ReadArgWords(packed, nullptr, &words, 3));
  EXPECT_EQ(words.size(), 3u);
}

TEST(BlockRangesTest, FindsTheBlockIncludingOnePastItsEnd) {
  BlockRanges ranges;
  ranges.Add(kBlock + 0x2000, kBlock + 0x3000);
  ranges.Add(kBlock, kBlock + 0x1000);
  ranges.Add(kBlock + 0x3000, kBlock + 0x4000);
  EXPECT_EQ(ranges.Find(kBlock + 10), kBlock);
  EXPECT_EQ(ranges.Find(kBlock + 0x1000), kBlock);  // one past the end
  EXPECT_EQ(ranges.Find(kBlock + 0x1001), 0u);
  EXPECT_EQ(ranges.Find(kBlock - 1), 0u);
  // One past the end of a block where the next one starts: the next one.
  EXPECT_EQ(ranges.Find(kBlock + 0x3000), kBlock + 0x3000);
  std::vector<ArgWord> words = {{kBlock + 0x2100, 0, 0},
                                {kBlock + 8, 1, 8},
                                {kBlock + 0x2200, 2, 16},
                                {kBlock + 0x9000, 3, 24}};
  EXPECT_EQ(ReachedBlocks(words, ranges),
            (std::vector<uint64_t>{kBlock + 0x2000, kBlock}));
}

// The index follows blocks as they come and go: a removed block is found no
// more (nor one past its end, which then falls in no block), a block added
// again at the same start takes its new extent, and removing a block nobody
// added changes nothing.
TEST(BlockRangesTest, FollowsBlocksAsTheyComeAndGo) {
  BlockRanges ranges;
  ranges.Add(kBlock, kBlock + 0x1000);
  ranges.Add(kBlock + 0x2000, kBlock + 0x3000);
  ranges.Remove(kBlock + 0x2000);
  EXPECT_EQ(ranges.size(), 1u);
  EXPECT_EQ(ranges.Find(kBlock + 0x2100), 0u);
  EXPECT_EQ(ranges.Find(kBlock + 0x3000), 0u);
  EXPECT_EQ(ranges.Find(kBlock + 0x10), kBlock);
  ranges.Remove(kBlock + 0x5000);
  EXPECT_EQ(ranges.size(), 1u);
  ranges.Add(kBlock, kBlock + 0x4000);  // the same start, a larger block
  EXPECT_EQ(ranges.size(), 1u);
  EXPECT_EQ(ranges.Find(kBlock + 0x3800), kBlock);
  ranges.Remove(kBlock);
  EXPECT_EQ(ranges.Find(kBlock + 0x10), 0u);
  EXPECT_EQ(ranges.size(), 0u);
}

// Find answers words outside the span of all blocks without the tree; that
// span must follow the first and the last block as they come and go, or a
// block added below the first, or past the last, would not be found.
TEST(BlockRangesTest, FindsBlocksAtEitherEndAsTheSpanMoves) {
  BlockRanges ranges;
  EXPECT_EQ(ranges.Find(kBlock), 0u);  // empty
  ranges.Add(kBlock + 0x4000, kBlock + 0x5000);
  ranges.Add(kBlock, kBlock + 0x1000);           // below the first
  ranges.Add(kBlock + 0x8000, kBlock + 0x9000);  // past the last
  EXPECT_EQ(ranges.Find(kBlock), kBlock);
  EXPECT_EQ(ranges.Find(kBlock + 0x9000), kBlock + 0x8000);  // one past
  EXPECT_EQ(ranges.Find(kBlock + 0x9001), 0u);
  ranges.Remove(kBlock);
  ranges.Remove(kBlock + 0x8000);
  EXPECT_EQ(ranges.Find(kBlock + 0x10), 0u);
  EXPECT_EQ(ranges.Find(kBlock + 0x8010), 0u);
  EXPECT_EQ(ranges.Find(kBlock + 0x4010), kBlock + 0x4000);
  EXPECT_EQ(ranges.Find(kBlock + 0x5000), kBlock + 0x4000);
  ranges.Add(kBlock + 0x4000, kBlock + 0x6000);  // the last one grown
  EXPECT_EQ(ranges.Find(kBlock + 0x5800), kBlock + 0x4000);
  ranges.Clear();
  EXPECT_EQ(ranges.Find(kBlock + 0x4010), 0u);
  EXPECT_EQ(ranges.size(), 0u);
  // Addresses at the extremes of the word range, with and without blocks.
  EXPECT_EQ(ranges.Find(~uint64_t{0}), 0u);
  ranges.Add(~uint64_t{0} - 0x1000, ~uint64_t{0});
  EXPECT_EQ(ranges.Find(~uint64_t{0}), ~uint64_t{0} - 0x1000);
  EXPECT_EQ(ranges.Find(0), 0u);
}

// Consecutive words into one block name it once, and a block reached again
// after another is not named twice either.
TEST(BlockRangesTest, ReachedBlocksNamesEachBlockOnce) {
  BlockRanges ranges;
  ranges.Add(kBlock, kBlock + 0x1000);
  ranges.Add(kBlock + 0x2000, kBlock + 0x3000);
  std::vector<ArgWord> words = {{kBlock + 8, 0, 0},
                                {kBlock + 0x1000, 1, 8},
                                {kBlock + 0x2008, 2, 16},
                                {kBlock + 0x10, 3, 24}};
  EXPECT_EQ(ReachedBlocks(words, ranges),
            (std::vector<uint64_t>{kBlock, kBlock + 0x2000}));
}

class CountingSource : public ParamLayoutSource {
 public:
  Answer Query(KernelHandleKind, const void*, ParamLayout* layout) override {
    ++queries;
    layout->params = {{0, 8}};
    return answer;
  }
  Answer answer = Answer::kKnown;
  int queries = 0;
};

// A cache made where a destroyed one was (an engine per test, or per
// fork) must not answer with the old one's layouts: each thread remembers its
// last answer, and it used to name the cache by its address. The old layout
// is freed memory; its sizes were garbage, and reading a launch's arguments
// with them crashed.
TEST(ParamLayoutCacheTest, ACacheAtADestroyedOnesAddressAsksAfresh) {
  CountingSource source;
  int f = 0;
  alignas(ParamLayoutCache) unsigned char storage[sizeof(ParamLayoutCache)];
  auto* first = new (storage) ParamLayoutCache();
  const ParamLayout* old_layout =
      first->Get(&source, KernelHandleKind::kDriver, &f);
  ASSERT_NE(old_layout, nullptr);
  // Asked again: now this thread's last answer.
  ASSERT_EQ(first->Get(&source, KernelHandleKind::kDriver, &f), old_layout);
  first->~ParamLayoutCache();
  auto* second = new (storage) ParamLayoutCache();
  bool asked = false;
  const ParamLayout* layout =
      second->Get(&source, KernelHandleKind::kDriver, &f, &asked);
  EXPECT_TRUE(asked);
  EXPECT_EQ(source.queries, 2);
  ASSERT_NE(layout, nullptr);
  EXPECT_EQ(layout->params.size(), 1u);
  second->~ParamLayoutCache();
}

TEST(ParamLayoutCacheTest, AsksOncePerFunctionUnlessToldToAskAgain) {
  CountingSource source;
  ParamLayoutCache cache;
  int f = 0;
  int g = 0;
  bool first = false;
  const ParamLayout* layout =
      cache.Get(&source, KernelHandleKind::kDriver, &f, &first);
  ASSERT_NE(layout, nullptr);
  EXPECT_TRUE(first);
  EXPECT_EQ(cache.Get(&source, KernelHandleKind::kDriver, &f, &first), layout);
  EXPECT_FALSE(first);
  EXPECT_EQ(source.queries, 1);
  // "Not now": not remembered, but not asked again at once either (every
  // launch asks); asked again after a moment.
  source.answer = ParamLayoutSource::Answer::kNotNow;
  EXPECT_EQ(cache.Get(&source, KernelHandleKind::kDriver, &g), nullptr);
  EXPECT_EQ(cache.Get(&source, KernelHandleKind::kDriver, &g), nullptr);
  EXPECT_EQ(source.queries, 2);
  std::this_thread::sleep_for(std::chrono::milliseconds(80));
  EXPECT_EQ(cache.Get(&source, KernelHandleKind::kDriver, &g), nullptr);
  EXPECT_EQ(source.queries, 3);
  source.answer = ParamLayoutSource::Answer::kUnknown;
  EXPECT_EQ(cache.Get(&source, KernelHandleKind::kRuntime, &g), nullptr);
  EXPECT_EQ(cache.Get(&source, KernelHandleKind::kRuntime, &g), nullptr);
  EXPECT_EQ(source.queries, 4);  // remembered
}

}  // namespace
}  // namespace gmt
