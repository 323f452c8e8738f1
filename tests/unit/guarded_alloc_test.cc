// The policy of one guarded allocation (lib/guard/guarded_alloc.h), against a
// scripted CUDA: which calls are made, with which sizes, and what the program
// gets.
#include "lib/guard/guarded_alloc.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <deque>
#include <vector>

namespace gmt {
namespace {

constexpr int kInvalidValue = 1;

// Answers each call with the next scripted result (success by default) and
// records the sizes asked for.
struct ScriptedCuda {
  std::deque<int> results;
  std::vector<uint64_t> asked;
  uint64_t next_address = 0x10000;
  uint64_t pitch = 1024;
  int releases = 0;
  bool release_frees = true;

  int Next() {
    if (results.empty()) return 0;
    int r = results.front();
    results.pop_front();
    return r;
  }
  int Linear(uint64_t bytes, uint64_t* raw) {
    asked.push_back(bytes);
    int r = Next();
    if (r == 0) *raw = next_address;
    return r;
  }
  int Rows(uint64_t rows, uint64_t* raw, uint64_t* row_bytes) {
    asked.push_back(rows);
    int r = Next();
    if (r == 0) {
      *raw = next_address;
      *row_bytes = pitch;
    }
    return r;
  }
  bool Release() {
    ++releases;
    return release_frees;
  }
};

GuardedAllocation Linear(ScriptedCuda& cuda,
                         const std::optional<GuardLayout>& layout,
                         uint64_t bytes) {
  return AllocateLinear(
      layout, bytes,
      [&](uint64_t n, uint64_t* raw) { return cuda.Linear(n, raw); },
      [&] { return cuda.Release(); });
}

GuardedAllocation Rows(ScriptedCuda& cuda, const GuardPolicy& policy,
                       uint64_t rows, uint64_t extra) {
  return AllocateRows(
      policy, rows, extra,
      [&](uint64_t n, uint64_t* raw, uint64_t* pitch) {
        return cuda.Rows(n, raw, pitch);
      },
      [&] { return cuda.Release(); });
}

GuardLayout Layout() { return GuardLayout{256, 256 + 1000 + 4096}; }

TEST(GuardedAllocTest, UnguardedIsOneCallOfTheProgramsSize) {
  ScriptedCuda cuda;
  GuardedAllocation a = Linear(cuda, std::nullopt, 1000);
  EXPECT_EQ(a.result, 0);
  EXPECT_FALSE(a.guarded);
  EXPECT_FALSE(a.retried);
  EXPECT_EQ(a.user, cuda.next_address);
  EXPECT_EQ(cuda.asked, std::vector<uint64_t>({1000}));
  EXPECT_EQ(cuda.releases, 0);
}

TEST(GuardedAllocTest, GuardedBlockGivesTheUserPointerPastTheFrontZone) {
  ScriptedCuda cuda;
  GuardedAllocation a = Linear(cuda, Layout(), 1000);
  EXPECT_EQ(a.result, 0);
  EXPECT_TRUE(a.guarded);
  EXPECT_FALSE(a.retried);
  EXPECT_EQ(a.raw, cuda.next_address);
  EXPECT_EQ(a.user, cuda.next_address + 256);
  EXPECT_EQ(a.raw_bytes, Layout().raw_bytes);
  EXPECT_EQ(cuda.asked, std::vector<uint64_t>({Layout().raw_bytes}));
}

TEST(GuardedAllocTest, OutOfMemoryReleasesTheQuarantineAndRetriesGuarded) {
  ScriptedCuda cuda;
  cuda.results = {kOutOfMemory, 0};
  GuardedAllocation a = Linear(cuda, Layout(), 1000);
  EXPECT_EQ(a.result, 0);
  EXPECT_TRUE(a.guarded);
  EXPECT_TRUE(a.retried);  // the first call's failure is the runtime's now
  EXPECT_EQ(a.enlarged_error, 0);
  EXPECT_EQ(cuda.releases, 1);
  EXPECT_EQ(cuda.asked, std::vector<uint64_t>(2, Layout().raw_bytes));
}

TEST(GuardedAllocTest, StillOutOfMemoryFallsBackToTheProgramsOwnRequest) {
  ScriptedCuda cuda;
  cuda.results = {kOutOfMemory, kOutOfMemory, 0};
  GuardedAllocation a = Linear(cuda, Layout(), 1000);
  EXPECT_EQ(a.result, 0);
  EXPECT_FALSE(a.guarded);
  EXPECT_TRUE(a.retried);
  EXPECT_EQ(a.enlarged_error, kOutOfMemory);
  EXPECT_EQ(a.user, cuda.next_address);
  EXPECT_EQ(cuda.asked, std::vector<uint64_t>(
                            {Layout().raw_bytes, Layout().raw_bytes, 1000}));
}

TEST(GuardedAllocTest, NothingToReleaseSkipsTheGuardedRetry) {
  ScriptedCuda cuda;
  cuda.release_frees = false;
  cuda.results = {kOutOfMemory, 0};
  GuardedAllocation a = Linear(cuda, Layout(), 1000);
  EXPECT_EQ(a.result, 0);
  EXPECT_FALSE(a.guarded);
  EXPECT_EQ(cuda.asked, std::vector<uint64_t>({Layout().raw_bytes, 1000}));
}

TEST(GuardedAllocTest, OutOfMemoryForTheProgramsSizeIsCudasAnswer) {
  ScriptedCuda cuda;
  cuda.results = {kOutOfMemory, kOutOfMemory, kOutOfMemory};
  GuardedAllocation a = Linear(cuda, Layout(), 1000);
  EXPECT_EQ(a.result, kOutOfMemory);
  EXPECT_FALSE(a.guarded);
}

// Any other refusal of the bigger block: the program's own request decides,
// so a limit only the redzones crossed changes nothing the program sees, and
// a request CUDA refuses anyway is refused with CUDA's own code.
TEST(GuardedAllocTest, OtherRefusalOfTheBiggerBlockAsksForTheProgramsSize) {
  ScriptedCuda cuda;
  cuda.results = {kInvalidValue, 0};
  GuardedAllocation a = Linear(cuda, Layout(), 1000);
  EXPECT_EQ(a.result, 0);
  EXPECT_FALSE(a.guarded);
  EXPECT_EQ(a.enlarged_error, kInvalidValue);
  EXPECT_EQ(cuda.releases, 0);

  ScriptedCuda refusing;
  refusing.results = {kInvalidValue, kInvalidValue};
  EXPECT_EQ(Linear(refusing, Layout(), 1000).result, kInvalidValue);
}

TEST(GuardedAllocTest, RowsGuardedLeaveFrontRowsAndCountTheWholeBlock) {
  GuardPolicy policy;
  policy.front = 256;
  ScriptedCuda cuda;
  cuda.pitch = 512;
  GuardedAllocation a = Rows(cuda, policy, 100, 3);
  EXPECT_EQ(a.result, 0);
  EXPECT_TRUE(a.guarded);
  EXPECT_EQ(a.pitch, 512u);
  EXPECT_EQ(a.user, cuda.next_address + 512);  // one front row
  EXPECT_EQ(a.raw_bytes, 512u * 103);
  EXPECT_EQ(cuda.asked, std::vector<uint64_t>({103}));
}

// rows + extra rows past 2^64 would wrap to a small request that CUDA grants:
// such a request goes to CUDA as the program made it, which CUDA refuses.
TEST(GuardedAllocTest, RowsThatWouldWrapAreNeverEnlarged) {
  GuardPolicy policy;
  ScriptedCuda cuda;
  cuda.results = {kOutOfMemory};
  const uint64_t huge = ~uint64_t{0} - 1;
  GuardedAllocation a = Rows(cuda, policy, huge, 5);
  EXPECT_EQ(a.result, kOutOfMemory);
  EXPECT_EQ(cuda.asked, std::vector<uint64_t>({huge}));
}

TEST(GuardedAllocTest, LeastPitchAndExtraRowsRefuseWhatOverflows) {
  EXPECT_EQ(LeastPitch(1), 512u);
  EXPECT_EQ(LeastPitch(512), 512u);
  EXPECT_EQ(LeastPitch(513), 1024u);
  EXPECT_EQ(LeastPitch(~uint64_t{0} - 100), 0u);
  GuardPolicy policy;
  EXPECT_EQ(PlanExtraRows(policy, uint64_t{1} << 40, uint64_t{1} << 30), 0u);
  EXPECT_GT(PlanExtraRows(policy, 512, 1000), 0u);
}

}  // namespace
}  // namespace gmt
