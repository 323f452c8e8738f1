// The memtest end to end on the CPU: the kernels' own code
// (kernels/memtest_kernels.cu, compiled as host C++ and run thread by thread by
// device_code_on_host.h) behind a host MemtestDevice, driven by the real run
// loop (lib/memtest/runner.cc). Checks the pattern values, both sweep
// directions, the fault-injection hook (stored and flaky), a stuck bit seen by
// every pattern, chunking and the setup errors.
#include <algorithm>
#include <cstdlib>
#include <map>
#include <set>
#include <vector>

#include "gtest/gtest.h"
#include "tests/kernels/device_code_on_host.h"
// After the shim: the kernels themselves.
#include "kernels/memtest_kernels.cu"
#include "lib/memtest/device.h"
#include "lib/memtest/runner.h"

namespace gmt_test {
namespace {

using gmt::memtest::AllTests;
using gmt::memtest::MemtestConfig;
using gmt::memtest::MemtestReport;
using gmt::memtest::ReadClass;
using gmt::memtest::RunMemtest;
using gmt::memtest::RunnerHooks;
using MTest = gmt::memtest::Test;

constexpr uint64_t kMiB = uint64_t{1} << 20;

// Host memory behind the MemtestDevice contract; launches run at once on a
// small odd grid (3 blocks of 64 threads), so the grid-stride and remainder
// paths all run.
class HostDevice : public gmt::memtest::MemtestDevice {
 public:
  explicit HostDevice(uint64_t free_bytes) : free_(free_bytes) {}
  ~HostDevice() override {
    for (auto& [address, bytes] : blocks_)
      std::free(reinterpret_cast<void*>(address));
  }

  int Index() const override { return 0; }
  std::string Name() const override { return "host double"; }
  std::string PciBusId() const override { return ""; }
  absl::Status MemInfo(uint64_t* free_bytes, uint64_t* total) override {
    *free_bytes = free_;
    *total = free_ + in_use_;
    return absl::OkStatus();
  }
  absl::Status Allocate(uint64_t bytes, uint64_t* address) override {
    if (bytes > largest_block_ || bytes > free_) {
      return absl::ResourceExhaustedError("out of memory");
    }
    // aligned_alloc's size must be a multiple of the alignment (C11 7.22.3.1);
    // glibc lets it pass, sanitizer allocators fail the call.
    void* p = std::aligned_alloc(256, (bytes + 255) / 256 * 256);
    if (p == nullptr) return absl::ResourceExhaustedError("host");
    *address = reinterpret_cast<uint64_t>(p);
    blocks_[*address] = bytes;
    free_ -= bytes;
    in_use_ += bytes;
    return absl::OkStatus();
  }
  void Free(uint64_t address) override {
    auto it = blocks_.find(address);
    if (it == blocks_.end()) return;
    free_ += it->second;
    in_use_ -= it->second;
    std::free(reinterpret_cast<void*>(address));
    blocks_.erase(it);
  }
  absl::Status ResetLogs(size_t slots) override {
    logs_.assign(slots, GmtMemtestLog{});
    return absl::OkStatus();
  }
  absl::Status ReadLogs(size_t slots,
                        std::vector<GmtMemtestLog>* logs) override {
    logs->assign(logs_.begin(), logs_.begin() + std::min(slots, logs_.size()));
    return absl::OkStatus();
  }
  absl::Status Write(const GmtMemtestPattern& p, uint64_t base,
                     uint64_t vectors, uint64_t first_index) override {
    RunGrid(3, 64, gmt_memtest_write, p, base, vectors, first_index);
    ApplyStuckBits();
    return absl::OkStatus();
  }
  absl::Status Verify(const GmtMemtestPattern& expect,
                      const GmtMemtestPattern& next, uint32_t flags,
                      uint64_t base, uint64_t vectors, uint64_t first_index,
                      size_t slot) override {
    if (slot >= logs_.size()) return absl::InvalidArgumentError("slot");
    RunGrid(3, 64, gmt_memtest_verify, expect, next, uint64_t{flags}, base,
            vectors, first_index, &logs_[slot]);
    ApplyStuckBits();
    return absl::OkStatus();
  }
  absl::Status Flip(uint64_t address, uint64_t mask) override {
    ++flips_;
    RunGrid(1, 32, gmt_memtest_flip, address, mask);
    return absl::OkStatus();
  }
  absl::Status Copy(uint64_t dst, uint64_t src, uint64_t bytes) override {
    std::memmove(reinterpret_cast<void*>(dst), reinterpret_cast<void*>(src),
                 bytes);
    return absl::OkStatus();
  }
  absl::Status Synchronize() override { return sync_error_; }
  absl::Status ReadWord(uint64_t address, uint64_t* value) override {
    std::memcpy(value, reinterpret_cast<void*>(address), 8);
    return absl::OkStatus();
  }
  absl::Status WriteWord(uint64_t address, uint64_t value) override {
    std::memcpy(reinterpret_cast<void*>(address), &value, 8);
    return absl::OkStatus();
  }

  // A bit stuck at 1: forced after every launch.
  void StickBitAt(uint64_t region_offset, int bit) {
    stuck_offset_ = region_offset;
    stuck_mask_ = uint64_t{1} << bit;
  }
  uint64_t largest_block_ = ~uint64_t{0};
  absl::Status sync_error_;
  int flips_ = 0;

 private:
  void ApplyStuckBits() {
    if (stuck_mask_ == 0) return;
    uint64_t offset = 0;
    for (auto& [address, bytes] : blocks_) {
      // Blocks in address order need not be allocation order; the test
      // device allocates ascending in practice, checked by the caller.
      if (stuck_offset_ >= offset && stuck_offset_ < offset + bytes) {
        *reinterpret_cast<uint64_t*>(address + stuck_offset_ - offset) |=
            stuck_mask_;
      }
      offset += bytes;
    }
  }

  uint64_t free_;
  uint64_t in_use_ = 0;
  std::map<uint64_t, uint64_t> blocks_;
  std::vector<GmtMemtestLog> logs_;
  uint64_t stuck_offset_ = 0, stuck_mask_ = 0;
};

MemtestConfig Config(uint64_t bytes, std::vector<MTest> tests) {
  MemtestConfig c;
  c.size.percent = false;
  c.size.bytes = bytes;
  c.tests = std::move(tests);
  return c;
}

// ---- the kernels themselves
// ---------------------------------------------------

struct Buffer {
  explicit Buffer(uint64_t words)
      : data(static_cast<uint64_t*>(  // size rounded as aligned_alloc wants
            std::aligned_alloc(256, (words * 8 + 255) / 256 * 256))),
        words(words) {}
  ~Buffer() { std::free(data); }
  uint64_t base() const { return reinterpret_cast<uint64_t>(data); }
  uint64_t* data;
  uint64_t words;
};

TEST(MemtestKernels, WriteStoresTheValueFunctionForEveryKind) {
  Buffer b(1000);                  // 500 vectors: not a multiple of the grid
  constexpr uint64_t kFirst = 40;  // word index of the buffer's start
  for (uint64_t kind = 0; kind < GMT_MEMTEST_KIND_COUNT; ++kind) {
    GmtMemtestPattern p{kind, 7, 0x0123456789abcdefull, 99};
    RunGrid(3, 64, gmt_memtest_write, p, b.base(), b.words / 2, kFirst);
    for (uint64_t i = 0; i < b.words; ++i) {
      ASSERT_EQ(b.data[i], GmtMemtestValue(&p, kFirst + i, b.base() + 8 * i))
          << "kind " << kind << " word " << i;
    }
  }
}

TEST(MemtestKernels, PatternValuesAreTheClassicOnes) {
  GmtMemtestPattern w1{GMT_MEMTEST_WALK1, 3, 0, 0};
  EXPECT_EQ(GmtMemtestValue(&w1, 0, 0), uint64_t{1} << 3);
  EXPECT_EQ(GmtMemtestValue(&w1, 61, 0), uint64_t{1} << 0);  // (61+3)%64
  GmtMemtestPattern w0{GMT_MEMTEST_WALK0, 0, 0, 0};
  EXPECT_EQ(GmtMemtestValue(&w0, 5, 0), ~(uint64_t{1} << 5));
  GmtMemtestPattern a{GMT_MEMTEST_ADDRESS, 0, 0, 0};
  EXPECT_EQ(GmtMemtestValue(&a, 9, 0x7f0012345678), 0x7f0012345678u);
  GmtMemtestPattern ai{GMT_MEMTEST_ADDRESS_INV, 0, 0, 0};
  EXPECT_EQ(GmtMemtestValue(&ai, 9, 0x10), ~uint64_t{0x10});
  GmtMemtestPattern m{GMT_MEMTEST_MOD20, 4, 0x5555555555555555ull, 0};
  int pattern_words = 0;
  for (uint64_t i = 0; i < 100; ++i) {
    const uint64_t v = GmtMemtestValue(&m, i, 0);
    EXPECT_TRUE(v == 0x5555555555555555ull || v == 0xaaaaaaaaaaaaaaaaull);
    if (v == 0x5555555555555555ull) {
      ++pattern_words;
      EXPECT_EQ(i % 20, 4u);
    }
  }
  EXPECT_EQ(pattern_words, 5);
  // Random: regenerated from (seed, index) alone, different per seed, and
  // not trivially repeating.
  GmtMemtestPattern r1{GMT_MEMTEST_RANDOM, 0, 0, 1},
      r2{GMT_MEMTEST_RANDOM, 0, 0, 2};
  std::set<uint64_t> seen;
  for (uint64_t i = 0; i < 4096; ++i) {
    EXPECT_EQ(GmtMemtestValue(&r1, i, 0), GmtMemtestValue(&r1, i, 12345));
    EXPECT_NE(GmtMemtestValue(&r1, i, 0), GmtMemtestValue(&r2, i, 0));
    seen.insert(GmtMemtestValue(&r1, i, 0));
  }
  EXPECT_EQ(seen.size(), 4096u);
}

TEST(MemtestKernels, VerifyCountsEveryMismatchAndRecordsUpToCapacity) {
  Buffer b(4096);
  GmtMemtestPattern p{GMT_MEMTEST_RANDOM, 0, 0, 5};
  RunGrid(3, 64, gmt_memtest_write, p, b.base(), b.words / 2, uint64_t{0});
  GmtMemtestLog log{};
  RunGrid(3, 64, gmt_memtest_verify, p, GmtMemtestPattern{}, uint64_t{0},
          b.base(), b.words / 2, uint64_t{0}, &log);
  EXPECT_EQ(log.mismatches, 0u);
  b.data[17] ^= 0x80;          // the odd word of a vector
  b.data[4095] ^= 1ull << 63;  // the very last word
  log = GmtMemtestLog{};
  RunGrid(3, 64, gmt_memtest_verify, p, GmtMemtestPattern{}, uint64_t{0},
          b.base(), b.words / 2, uint64_t{0}, &log);
  ASSERT_EQ(log.mismatches, 2u);
  std::map<uint64_t, GmtMemtestMismatch> by_address;
  for (int i = 0; i < 2; ++i)
    by_address[log.records[i].address] = log.records[i];
  const GmtMemtestMismatch& m = by_address.at(b.base() + 17 * 8);
  EXPECT_EQ(m.expected, GmtMemtestValue(&p, 17, 0));
  EXPECT_EQ(m.actual, m.expected ^ 0x80);
  EXPECT_EQ(by_address.at(b.base() + 4095 * 8).actual ^
                by_address.at(b.base() + 4095 * 8).expected,
            1ull << 63);
  // More mismatches than slots: all counted, capacity recorded.
  RunGrid(3, 64, gmt_memtest_write, p, b.base(), b.words / 2, uint64_t{0});
  for (uint64_t i = 0; i < b.words; ++i) b.data[i] = ~b.data[i];
  log = GmtMemtestLog{};
  RunGrid(3, 64, gmt_memtest_verify, p, GmtMemtestPattern{}, uint64_t{0},
          b.base(), b.words / 2, uint64_t{0}, &log);
  EXPECT_EQ(log.mismatches, b.words);
  for (unsigned i = 0; i < GMT_MEMTEST_LOG_CAPACITY; ++i) {
    EXPECT_EQ(log.records[i].actual, ~log.records[i].expected);
  }
}

TEST(MemtestKernels, RewriteLeavesMismatchedWordsAndWritesTheRest) {
  Buffer b(512);
  const GmtMemtestPattern up{GMT_MEMTEST_CONST, 0, 0x5555555555555555ull, 0};
  const GmtMemtestPattern down{GMT_MEMTEST_CONST, 0, ~0x5555555555555555ull, 0};
  RunGrid(3, 64, gmt_memtest_write, up, b.base(), b.words / 2, uint64_t{0});
  b.data[100] ^= 4;
  for (uint64_t flags :
       {uint64_t{GMT_MEMTEST_REWRITE},
        uint64_t{GMT_MEMTEST_REWRITE | GMT_MEMTEST_DESCENDING}}) {
    GmtMemtestLog log{};
    RunGrid(2, 32, gmt_memtest_verify, up, down, flags, b.base(), b.words / 2,
            uint64_t{0}, &log);
    ASSERT_EQ(log.mismatches, 1u) << flags;
    EXPECT_EQ(log.records[0].address, b.base() + 800);
    for (uint64_t i = 0; i < b.words; ++i) {
      if (i == 100) {
        EXPECT_EQ(b.data[i], up.value ^ 4);
      } else {
        ASSERT_EQ(b.data[i], down.value) << "word " << i << " flags " << flags;
      }
    }
    // Back to `up` for the descending round.
    for (uint64_t i = 0; i < b.words; ++i)
      b.data[i] = i == 100 ? up.value ^ 4 : up.value;
  }
}

// The order of the moving-inversions sweeps: which vector each thread's k-th
// step touches. Ascending, step k of every thread lies below step k+1's;
// descending, above.
TEST(MemtestKernels, DescendingSweepRunsFromTheTop) {
  Buffer b(2 * 1000);
  const uint64_t vectors = b.words / 2;
  for (uint64_t i = 0; i < b.words; ++i) b.data[i] = 0;
  // Record the order in which vectors are visited: a rewrite of a counter
  // would need device state, so use the mismatch log instead: every word
  // mismatches, slots fill in visiting order (sequential threads).
  for (uint64_t flags : {uint64_t{0}, uint64_t{GMT_MEMTEST_DESCENDING}}) {
    GmtMemtestLog log{};
    const GmtMemtestPattern one{GMT_MEMTEST_CONST, 0, 1, 0};
    gridDim = {1, 1, 1};
    blockDim = {1, 1, 1};
    blockIdx = {0, 0, 0};
    threadIdx = {0, 0, 0};
    gmt_memtest_verify(one, GmtMemtestPattern{}, flags, b.base(), vectors,
                       uint64_t{0}, &log);
    ASSERT_EQ(log.mismatches, b.words);
    const uint64_t first = log.records[0].address;
    const uint64_t last = log.records[GMT_MEMTEST_LOG_CAPACITY - 1].address;
    if (flags == 0) {
      EXPECT_EQ(first, b.base());
      EXPECT_LT(first, last);
    } else {
      EXPECT_EQ(first, b.base() + (vectors - 1) * 16);
      EXPECT_GT(first, last);
    }
  }
}

// ---- the run loop over the kernels
// ----------------------------------------------

TEST(MemtestRun, CleanMemoryPassesEveryPattern) {
  HostDevice d(64 * kMiB);
  RunnerHooks hooks;
  hooks.max_chunk_bytes = 2 * kMiB;  // two chunks
  const MemtestReport r = RunMemtest(d, Config(4 * kMiB, AllTests()), hooks);
  EXPECT_EQ(r.failure, "");
  EXPECT_EQ(r.total_errors, 0u);
  EXPECT_EQ(r.chunks.size(), 2u);
  EXPECT_EQ(r.tested_bytes, 4 * kMiB);
  ASSERT_EQ(r.tests.size(), AllTests().size());
  for (const auto& t : r.tests) {
    EXPECT_EQ(t.tested_bytes,
              4 * kMiB * static_cast<uint64_t>(t.verify_sweeps));
    EXPECT_GE(t.traffic_bytes, 2 * t.tested_bytes - 4 * kMiB);
  }
  EXPECT_TRUE(r.copy.has_value());
  EXPECT_EQ(gmt::memtest::MemtestExitCode(r), 0);
  EXPECT_EQ(d.flips_, 0);
}

TEST(MemtestRun, InjectedStoredFaultIsReportedAtItsAddress) {
  for (MTest test : AllTests()) {
    HostDevice d(64 * kMiB);
    RunnerHooks hooks;
    hooks.max_chunk_bytes = 2 * kMiB;
    MemtestConfig c = Config(4 * kMiB, {test});
    const uint64_t offset = 2 * kMiB + 4096 + 8;  // in the second chunk
    c.inject =
        gmt::memtest::Injection{test, offset, 0x0000000100000004ull, false};
    const MemtestReport r = RunMemtest(d, c, hooks);
    const std::string name(gmt::memtest::TestName(test));
    ASSERT_EQ(r.failure, "") << name;
    ASSERT_TRUE(r.injected_address.has_value());
    EXPECT_EQ(*r.injected_address, r.chunks[1].address + 4096 + 8) << name;
    ASSERT_EQ(r.total_errors, 1u) << name;
    ASSERT_EQ(r.errors.size(), 1u) << name;
    const auto& e = r.errors[0];
    EXPECT_EQ(e.address, *r.injected_address) << name;
    EXPECT_EQ(e.region_offset, offset) << name;
    EXPECT_EQ(e.chunk, 1) << name;
    EXPECT_EQ(e.expected ^ e.actual, 0x0000000100000004ull) << name;
    EXPECT_EQ(e.second_read, e.actual) << name;
    EXPECT_EQ(e.read_class, ReadClass::kStoredCorruption) << name;
    EXPECT_EQ(e.step, 1) << name;  // the verify right after the first write
    EXPECT_EQ(gmt::memtest::MemtestExitCode(r), 1) << name;
    EXPECT_EQ(d.flips_, 1) << name;
  }
}

TEST(MemtestRun, InjectedFlakyFaultIsClassifiedFlaky) {
  for (MTest test : {MTest::kRandom, MTest::kMovinv}) {
    HostDevice d(64 * kMiB);
    MemtestConfig c = Config(2 * kMiB, {test});
    c.inject = gmt::memtest::Injection{test, 1024, 1ull << 40, true};
    const MemtestReport r = RunMemtest(d, c, RunnerHooks{});
    ASSERT_EQ(r.total_errors, 1u);
    ASSERT_EQ(r.errors.size(), 1u);
    EXPECT_EQ(r.errors[0].address, r.chunks[0].address + 1024);
    EXPECT_EQ(r.errors[0].second_read, r.errors[0].expected);
    EXPECT_EQ(r.errors[0].read_class, ReadClass::kFlakyRead);
    EXPECT_EQ(d.flips_, 2);  // flip, then the restore
    EXPECT_EQ(gmt::memtest::MemtestExitCode(r), 1);
  }
}

// A bit stuck at 1 fails exactly the verify steps that expect a 0 there (the
// model: PlanTest + GmtMemtestValue), each at its address, as stored
// corruption. The word's walking bit is the stuck one, so walking zeros
// catch it and walking ones cannot.
TEST(MemtestRun, StuckBitIsFoundWhereverAZeroIsExpected) {
  HostDevice d(64 * kMiB);
  constexpr int kBit = 9;
  constexpr uint64_t kIndex = 64 * 200 + kBit;
  d.StickBitAt(kIndex * 8, kBit);
  MemtestConfig c = Config(2 * kMiB, AllTests());
  c.max_errors = 100000;
  const MemtestReport r = RunMemtest(d, c, RunnerHooks{});
  ASSERT_EQ(r.failure, "");
  const uint64_t address = r.chunks[0].address + kIndex * 8;
  std::map<MTest, uint64_t> want, got;
  for (MTest t : AllTests()) {
    for (const auto& step : gmt::memtest::PlanTest(t, 0, c.seed)) {
      if (step.kind != gmt::memtest::Step::kVerify) continue;
      const uint64_t v = GmtMemtestValue(&step.pattern, kIndex, address);
      if (((v >> kBit) & 1) == 0) ++want[t];
    }
  }
  for (const auto& e : r.errors) {
    EXPECT_EQ(e.address, address);
    EXPECT_EQ(e.expected ^ e.actual, uint64_t{1} << kBit);
    EXPECT_EQ(e.read_class, ReadClass::kStoredCorruption);
    ++got[e.test];
  }
  EXPECT_EQ(got, want);
  EXPECT_EQ(want.count(MTest::kWalking1), 0u);
  EXPECT_EQ(want.at(MTest::kWalking0), 1u);
  EXPECT_EQ(want.at(MTest::kAddress), 1u);  // the address or its complement
  EXPECT_EQ(want.at(MTest::kMovinv), 2u);   // P = 0x55..: bit 9 is 0, twice
  EXPECT_EQ(want.at(MTest::kMod20), 1u);    // P (bit 9 = 0) at one offset only
  EXPECT_EQ(r.total_errors, r.errors.size());
  for (const auto& t : r.tests) {
    EXPECT_EQ(t.errors, want.count(t.test) ? want.at(t.test) : 0u);
  }
}

TEST(MemtestRun, FragmentedMemoryIsTestedInSmallerChunks) {
  HostDevice d(64 * kMiB);
  d.largest_block_ = 4 * kMiB;
  RunnerHooks hooks;
  hooks.max_chunk_bytes = 16 * kMiB;
  const MemtestReport r =
      RunMemtest(d, Config(10 * kMiB, {MTest::kWalking1}), hooks);
  EXPECT_EQ(r.failure, "");
  EXPECT_EQ(r.tested_bytes, 10 * kMiB);
  ASSERT_EQ(r.chunks.size(), 3u);  // 4 + 4 + 2
  EXPECT_EQ(r.chunks[2].region_offset, 8 * kMiB);
  EXPECT_EQ(r.chunks[2].first_index, 8 * kMiB / 8);
  EXPECT_EQ(r.total_errors, 0u);
}

TEST(MemtestRun, SetupErrorsExitWithTwo) {
  {
    HostDevice d(8 * kMiB);
    const MemtestReport r =
        RunMemtest(d, Config(16 * kMiB, AllTests()), RunnerHooks{});
    EXPECT_TRUE(r.setup_failed);
    EXPECT_NE(r.failure.find("more than the free"), std::string::npos)
        << r.failure;
    EXPECT_EQ(gmt::memtest::MemtestExitCode(r), 2);
  }
  {
    HostDevice d(8 * kMiB);
    MemtestConfig c = Config(2 * kMiB, {MTest::kRandom});
    c.inject = gmt::memtest::Injection{MTest::kRandom, 2 * kMiB, 1, false};
    const MemtestReport r = RunMemtest(d, c, RunnerHooks{});
    EXPECT_TRUE(r.setup_failed);
    EXPECT_NE(r.failure.find("outside the tested region"), std::string::npos);
  }
  {
    HostDevice d(8 * kMiB);
    d.largest_block_ = kMiB;  // below the 2 MiB granule: nothing allocates
    const MemtestReport r =
        RunMemtest(d, Config(4 * kMiB, AllTests()), RunnerHooks{});
    EXPECT_TRUE(r.setup_failed);
    EXPECT_EQ(gmt::memtest::MemtestExitCode(r), 2);
  }
}

TEST(MemtestRun, DeviceFailureMidRunKeepsTheReport) {
  HostDevice d(64 * kMiB);
  d.sync_error_ =
      absl::InternalError("cuStreamSynchronize: CUDA_ERROR_ECC_UNCORRECTABLE");
  const MemtestReport r =
      RunMemtest(d, Config(2 * kMiB, AllTests()), RunnerHooks{});
  EXPECT_FALSE(r.setup_failed);
  EXPECT_NE(r.failure.find("CUDA_ERROR_ECC_UNCORRECTABLE"), std::string::npos);
  EXPECT_EQ(gmt::memtest::MemtestExitCode(r), 1);
  EXPECT_EQ(gmt::memtest::MemtestJson(r)["failure"], r.failure);
}

}  // namespace
}  // namespace gmt_test
