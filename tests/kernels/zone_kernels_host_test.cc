// The guard kernels' own code (kernels/zone_kernels.cu), compiled as host C++
// and run thread by thread (device_code_on_host.h): head/tail/vector splitting,
// byte masks, offsets, zone search and the grid-stride loop, checked against
// the host model of zone_scenarios.cc on every CPU build. The GPU test runs the
// same code on a device; the test double (tests/fake_cuda) has its own,
// independent emulation.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "gtest/gtest.h"
#include "tests/kernels/device_code_on_host.h"
// After the shim: the kernels themselves.
#include "kernels/zone_kernels.cu"
#include "tests/kernels/zone_scenarios.h"

namespace gmt_test {
namespace {

constexpr uint64_t kChunk = GMT_ZONE_CHUNK_BYTES;

struct Memory {
  explicit Memory(size_t bytes)
      : base(static_cast<unsigned char*>(std::aligned_alloc(256, bytes))),
        size(bytes) {
    std::memset(base, 0, bytes);
  }
  ~Memory() { std::free(base); }
  uint64_t address(uint64_t offset) const {
    return reinterpret_cast<uint64_t>(base) + offset;
  }
  unsigned char* base;
  size_t size;
};

uint64_t PrefixSum(std::vector<GmtZone>* zones) {
  uint64_t chunks = 0;
  for (GmtZone& z : *zones) {
    z.chunk_begin = chunks;
    chunks += (z.bytes + kChunk - 1) / kChunk;
  }
  return chunks;
}

void Apply(const std::vector<Write>& writes) {
  for (const Write& w : writes) {
    std::memcpy(reinterpret_cast<void*>(w.address), w.bytes.data(),
                w.bytes.size());
  }
}

struct CheckOutput {
  std::vector<GmtZoneResult> results;
  GmtCheckSummary summary{};
};

CheckOutput RunCheck(const std::vector<GmtZone>& zones, uint64_t chunks,
                     unsigned grid) {
  CheckOutput out;
  out.results.assign(zones.size(), GmtZoneResult{});
  RunGrid(grid, 256, gmt_check_zones, zones.data(),
          static_cast<uint64_t>(zones.size()), chunks, out.results.data(),
          &out.summary);
  return out;
}

void ExpectSame(const CheckOutput& got, const std::vector<GmtZoneResult>& want,
                const std::string& what) {
  ASSERT_EQ(got.results.size(), want.size()) << what;
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(got.results[i].changed_bytes, want[i].changed_bytes)
        << what << " zone " << i;
    EXPECT_EQ(got.results[i].first_inverted, want[i].first_inverted)
        << what << " zone " << i;
    EXPECT_EQ(got.results[i].last_plus1, want[i].last_plus1)
        << what << " zone " << i;
  }
  const GmtCheckSummary s = ExpectedSummary(want);
  EXPECT_EQ(got.summary.zones_changed, s.zones_changed) << what;
  EXPECT_EQ(got.summary.bytes_changed, s.bytes_changed) << what;
}

TEST(ZoneKernelsOnHostTest, FillWritesExactlyTheZones) {
  Memory m(3 * kChunk);
  std::vector<GmtZone> zones = {{m.address(1), 20, 0xa1, 0},
                                {m.address(40), 0, 0xa2, 0},
                                {m.address(41), 2 * kChunk + 5, 0xa3, 0}};
  const uint64_t chunks = PrefixSum(&zones);
  RunGrid(3, 256, gmt_fill_zones, zones.data(), uint64_t{3}, chunks);
  EXPECT_EQ(m.base[0], 0);
  EXPECT_EQ(m.base[1], 0xa1);
  EXPECT_EQ(m.base[20], 0xa1);
  EXPECT_EQ(m.base[21], 0);
  EXPECT_EQ(m.base[40], 0);
  EXPECT_EQ(m.base[41], 0xa3);
  EXPECT_EQ(m.base[41 + 2 * kChunk + 4], 0xa3);
  EXPECT_EQ(m.base[41 + 2 * kChunk + 5], 0);
  EXPECT_EQ(std::count(m.base, m.base + m.size, 0xa3),
            static_cast<long>(2 * kChunk + 5));
}

// Random zones (every alignment, sizes from 1 byte to several chunks, empty
// ones) and random writes, for several grid sizes.
TEST(ZoneKernelsOnHostTest, CheckMatchesTheModel) {
  std::mt19937_64 rng(7);
  auto uniform = [&rng](uint64_t lo, uint64_t hi) {
    return std::uniform_int_distribution<uint64_t>(lo, hi)(rng);
  };
  Memory m(8u << 20);
  std::vector<GmtZone> zones;
  uint64_t at = uniform(0, 15);
  while (zones.size() < 400) {
    uint64_t bytes = 0;
    switch (uniform(0, 7)) {
      case 0:
        bytes = 0;
        break;
      case 1:
        bytes = uniform(1, 33);
        break;
      case 2:
        bytes = uniform(kChunk - 20, 2 * kChunk + 20);
        break;
      default:
        bytes = uniform(34, 3000);
        break;
    }
    if (at + bytes > m.size) break;
    zones.push_back({m.address(at), bytes, uniform(0, 255), 0});
    at += bytes + uniform(0, 40);
  }
  const uint64_t chunks = PrefixSum(&zones);
  RunGrid(5, 256, gmt_fill_zones, zones.data(),
          static_cast<uint64_t>(zones.size()), chunks);
  for (unsigned grid : {1u, 4u, 37u}) {
    ExpectSame(RunCheck(zones, chunks, grid), ExpectedResults(zones, {}),
               "clean, grid " + std::to_string(grid));
  }
  std::vector<Write> writes;
  for (int i = 0; i < 300; ++i) {
    const GmtZone& z = zones[uniform(0, zones.size() - 1)];
    if (z.bytes == 0) continue;
    const uint64_t offset = uniform(0, z.bytes - 1);
    const uint64_t n = std::min<uint64_t>(uniform(1, 24), z.bytes - offset);
    Write w{z.address + offset, {}};
    for (uint64_t k = 0; k < n; ++k) {
      w.bytes.push_back(uniform(0, 2) == 0
                            ? static_cast<uint8_t>(z.pattern)
                            : static_cast<uint8_t>(uniform(0, 255)));
    }
    writes.push_back(std::move(w));
  }
  // Between zones too: must never count.
  writes.push_back({zones[0].address + zones[0].bytes, {0x5a, 0xa5}});
  Apply(writes);
  const auto want = ExpectedResults(zones, writes);
  for (unsigned grid : {1u, 4u, 37u}) {
    ExpectSame(RunCheck(zones, chunks, grid), want,
               "written, grid " + std::to_string(grid));
  }
}

// Single bytes on both sides of every chunk boundary of a zone of several
// chunks, each found alone and all together.
TEST(ZoneKernelsOnHostTest, ChunkBoundaries) {
  Memory m(4 * kChunk);
  std::vector<GmtZone> zones = {{m.address(3), 3 * kChunk + 7, 0x81, 0}};
  const uint64_t chunks = PrefixSum(&zones);
  ASSERT_EQ(chunks, 4u);
  RunGrid(2, 256, gmt_fill_zones, zones.data(), uint64_t{1}, chunks);
  std::vector<Write> all;
  for (uint64_t at : {uint64_t{0}, kChunk - 1, kChunk, 2 * kChunk - 1,
                      2 * kChunk, 3 * kChunk - 1, 3 * kChunk, 3 * kChunk + 6}) {
    const std::vector<Write> one = {{zones[0].address + at, {0x18}}};
    Apply(one);
    ExpectSame(RunCheck(zones, chunks, 3), ExpectedResults(zones, one),
               "at " + std::to_string(at));
    m.base[3 + at] = 0x81;
    all.push_back(one[0]);
  }
  Apply(all);
  ExpectSame(RunCheck(zones, chunks, 2), ExpectedResults(zones, all), "all");
}

// Every alignment of a zone start and every length around 16-byte and
// 4-byte boundaries, with each single byte changed in turn.
TEST(ZoneKernelsOnHostTest, EveryAlignmentAndLength) {
  Memory m(4096);
  for (uint64_t start = 0; start < 16; ++start) {
    for (uint64_t bytes = 1; bytes <= 70; ++bytes) {
      std::vector<GmtZone> zones = {{m.address(start), bytes, 0x3c, 0}};
      const uint64_t chunks = PrefixSum(&zones);
      RunGrid(1, 256, gmt_fill_zones, zones.data(), uint64_t{1}, chunks);
      for (uint64_t at = 0; at < bytes; ++at) {
        const std::vector<Write> writes = {{m.address(start + at), {0x3d}}};
        Apply(writes);
        ExpectSame(RunCheck(zones, chunks, 1), ExpectedResults(zones, writes),
                   "start " + std::to_string(start) + " bytes " +
                       std::to_string(bytes) + " at " + std::to_string(at));
        m.base[start + at] = 0x3c;
        if (HasFailure()) return;
      }
    }
  }
}

// ---- gmt_check_zones_inline, phase by phase ---------------------------------

// Runs the inline check as the GPU would, barriers between the phases, block
// after block: thread 0 clears, every thread scans its share of the grid's,
// thread 0 publishes block b's answer as check_id + b into `report`. With
// `small`, gmt_check_zones_inline_small's phases in one block instead: every
// thread clears, every thread scans, thread 0 publishes check_id.
void RunInlineCheck(const std::vector<GmtZone>& zones, uint64_t check_id,
                    GmtCheckReport* report, unsigned threads,
                    unsigned blocks = 1, bool small = false) {
  GmtInlineCheck check{};
  std::copy(zones.begin(), zones.end(), check.zones);
  check.zone_count = zones.size();
  check.check_id = check_id;
  check.report = reinterpret_cast<uint64_t>(report);
  if (small) {
    InlineTally tallies[GMT_INLINE_MAX_ZONES];
    // What an earlier check left in shared memory: the clear must undo it.
    std::memset(tallies, 0x5c, sizeof(tallies));
    for (unsigned tid = 0; tid < threads; ++tid) {
      SmallClear(check, tid, threads, tallies);
    }
    for (unsigned tid = 0; tid < threads; ++tid) {
      SmallScan(check, tid, threads, tallies);
    }
    InlinePublish(check, 0, tallies);
    return;
  }
  for (unsigned b = 0; b < blocks; ++b) {
    InlineTally tallies[GMT_INLINE_MAX_ZONES];
    InlineClear(tallies);
    for (unsigned tid = 0; tid < threads; ++tid) {
      InlineScan(check, b * threads + tid, blocks * threads, tallies);
    }
    InlinePublish(check, b, tallies);
  }
}

// The per-zone results a report holds for the `blocks` ids from `check_id`,
// merged as the host merges them (driver_device_ops.cc).
std::vector<GmtZoneResult> ResultsOf(const GmtCheckReport& report,
                                     uint64_t check_id, size_t zones,
                                     uint64_t* zones_found,
                                     unsigned blocks = 1) {
  std::vector<GmtZoneResult> out(zones);
  for (unsigned b = 0; b < blocks; ++b) {
    const uint64_t id = check_id + b;
    const GmtCheckDone& done = report.done[id % GMT_REPORT_DONE_SLOTS];
    EXPECT_EQ(done.word >> GMT_DONE_FINDINGS_BITS, id);
    const uint64_t findings =
        done.word & ((uint64_t{1} << GMT_DONE_FINDINGS_BITS) - 1);
    const GmtFinding* region =
        &report.ring[(id % GMT_REPORT_RING_CHECKS) * GMT_INLINE_MAX_ZONES];
    for (uint64_t k = 0; k < findings; ++k) {
      EXPECT_EQ(region[k].check_id, id);
      GmtZoneResult& r = out.at(region[k].zone);
      const uint64_t first = region[k].first_last & 0xffffffffull;
      if (r.changed_bytes == 0 || first < ~r.first_inverted) {
        r.first_inverted = ~first;
      }
      r.last_plus1 =
          std::max<uint64_t>(r.last_plus1, (region[k].first_last >> 32) + 1);
      r.changed_bytes += region[k].changed_bytes;
    }
  }
  *zones_found = static_cast<uint64_t>(std::count_if(
      out.begin(), out.end(),
      [](const GmtZoneResult& r) { return r.changed_bytes != 0; }));
  return out;
}

// Every alignment, the zone count and byte limits, random writes: the
// findings match the model exactly, for a full block and for fewer threads
// than a zone has vectors.
TEST(ZoneKernelsOnHostTest, InlineCheckMatchesTheModel) {
  std::mt19937_64 rng(11);
  auto uniform = [&rng](uint64_t lo, uint64_t hi) {
    return std::uniform_int_distribution<uint64_t>(lo, hi)(rng);
  };
  Memory m(GMT_INLINE_MAX_BYTES + 64 * 1024);
  auto report = std::make_unique<GmtCheckReport>();
  std::memset(report.get(), 0, sizeof(GmtCheckReport));
  uint64_t check_id = 0;
  for (int round = 0; round < 20; ++round) {
    std::vector<GmtZone> zones;
    uint64_t at = uniform(0, 15);
    const uint64_t count = uniform(1, GMT_INLINE_MAX_ZONES);
    uint64_t budget = GMT_INLINE_MAX_BYTES;
    while (zones.size() < count) {
      const uint64_t bytes = std::min<uint64_t>(
          budget, round == 0 ? GMT_INLINE_MAX_BYTES / count : uniform(0, 2000));
      zones.push_back({m.address(at), bytes, uniform(0, 255), 0});
      budget -= bytes;
      at += bytes + uniform(0, 40);
    }
    std::vector<GmtZone> table = zones;
    const uint64_t chunks = PrefixSum(&table);
    RunGrid(2, 256, gmt_fill_zones, table.data(),
            static_cast<uint64_t>(table.size()), chunks);
    std::vector<Write> writes;
    for (int i = 0; i < static_cast<int>(uniform(0, 12)); ++i) {
      const GmtZone& z = zones[uniform(0, zones.size() - 1)];
      if (z.bytes == 0) continue;
      const uint64_t offset = uniform(0, z.bytes - 1);
      writes.push_back({z.address + offset,
                        {static_cast<uint8_t>(z.pattern ^ uniform(1, 255))}});
    }
    Apply(writes);
    const auto want = ExpectedResults(zones, writes);
    // (threads, blocks, small kernel): the small one runs in one block.
    for (auto [threads, blocks, small] :
         {std::tuple{unsigned{GMT_INLINE_CHECK_THREADS}, 1u, false},
          std::tuple{3u, 1u, false},
          std::tuple{unsigned{GMT_INLINE_CHECK_THREADS}, 3u, false},
          std::tuple{5u, 7u, false},
          std::tuple{unsigned{GMT_INLINE_CHECK_THREADS}, 1u, true},
          std::tuple{3u, 1u, true}}) {
      check_id += blocks;
      RunInlineCheck(zones, check_id, report.get(), threads, blocks, small);
      uint64_t findings = 0;
      const auto got =
          ResultsOf(*report, check_id, zones.size(), &findings, blocks);
      const std::string what = "round " + std::to_string(round) + ", " +
                               std::to_string(threads) + " threads, " +
                               std::to_string(blocks) + " blocks" +
                               (small ? ", small kernel" : "");
      EXPECT_EQ(
          findings,
          static_cast<uint64_t>(std::count_if(
              want.begin(), want.end(),
              [](const GmtZoneResult& r) { return r.changed_bytes != 0; })))
          << what;
      for (size_t i = 0; i < want.size(); ++i) {
        EXPECT_EQ(got[i].changed_bytes, want[i].changed_bytes)
            << what << " zone " << i;
        EXPECT_EQ(got[i].first_inverted, want[i].first_inverted)
            << what << " zone " << i;
        EXPECT_EQ(got[i].last_plus1, want[i].last_plus1)
            << what << " zone " << i;
      }
    }
    // Clean again for the next round.
    RunGrid(2, 256, gmt_fill_zones, table.data(),
            static_cast<uint64_t>(table.size()), chunks);
    if (HasFailure()) return;
  }
}

// The inline check reads a zone's unaligned edges as whole 16-byte granules:
// for every alignment and length around them, with the bytes just outside the
// zone (in the same granules) never holding the pattern, exactly the changed
// zone byte counts and nothing outside it does; two zones share a granule.
TEST(ZoneKernelsOnHostTest, InlineCheckEveryAlignmentAndLength) {
  Memory m(4096);
  auto report = std::make_unique<GmtCheckReport>();
  std::memset(report.get(), 0, sizeof(GmtCheckReport));
  uint64_t check_id = 0;
  auto check = [&](const std::vector<GmtZone>& zones,
                   const std::vector<Write>& writes, const std::string& what) {
    const auto want = ExpectedResults(zones, writes);
    for (auto [threads, blocks, small] :
         {std::tuple{1u, 1u, false}, std::tuple{37u, 2u, false},
          std::tuple{1u, 1u, true}, std::tuple{37u, 1u, true}}) {
      check_id += blocks;
      RunInlineCheck(zones, check_id, report.get(), threads, blocks, small);
      uint64_t findings = 0;
      const auto got =
          ResultsOf(*report, check_id, zones.size(), &findings, blocks);
      for (size_t i = 0; i < want.size(); ++i) {
        ASSERT_EQ(got[i].changed_bytes, want[i].changed_bytes)
            << what << " zone " << i << ", " << threads << " threads"
            << (small ? ", small kernel" : "");
        ASSERT_EQ(got[i].first_inverted, want[i].first_inverted)
            << what << " zone " << i;
        ASSERT_EQ(got[i].last_plus1, want[i].last_plus1)
            << what << " zone " << i;
      }
    }
  };
  for (uint64_t start = 0; start < 16; ++start) {
    for (uint64_t bytes = 1; bytes <= 50; ++bytes) {
      std::memset(m.base, 0x5a, 256);
      const std::vector<GmtZone> zones = {
          {m.address(64 + start), bytes, 0xa5, 0}};
      std::memset(m.base + 64 + start, 0xa5, bytes);
      const std::string what =
          "start " + std::to_string(start) + " bytes " + std::to_string(bytes);
      check(zones, {}, what + " clean");
      for (uint64_t at = 0; at < bytes; ++at) {
        const std::vector<Write> writes = {{m.address(64 + start + at), {0}}};
        Apply(writes);
        check(zones, writes, what + " at " + std::to_string(at));
        m.base[64 + start + at] = 0xa5;
        if (HasFailure()) return;
      }
    }
  }
  // Two zones meeting inside one granule, each with its own pattern: a
  // change on either side is counted in its own zone only.
  std::memset(m.base, 0, 256);
  const std::vector<GmtZone> zones = {{m.address(19), 10, 0x11, 0},
                                      {m.address(29), 7, 0x22, 0}};
  std::memset(m.base + 19, 0x11, 10);
  std::memset(m.base + 29, 0x22, 7);
  check(zones, {}, "shared granule, clean");
  const std::vector<Write> writes = {{m.address(28), {0x22}},
                                     {m.address(29), {0x11}}};
  Apply(writes);
  check(zones, writes, "shared granule, both sides");
}

// gmt_fill_zones_inline writes what gmt_fill_zones writes, for any grid:
// zones of every alignment, across chunk boundaries, with gaps left alone.
TEST(ZoneKernelsOnHostTest, InlineFillWritesEveryZoneAndNothingElse) {
  Memory m(4 * kChunk + 4096);
  std::vector<GmtZone> zones = {{m.address(3), 17, 0x11, 0},
                                {m.address(40), 0, 0x22, 0},
                                {m.address(64), 2 * kChunk + 5, 0x33, 0},
                                {m.address(3 * kChunk), 1000, 0x44, 0}};
  const uint64_t chunks = PrefixSum(&zones);
  GmtInlineFill fill{};
  std::copy(zones.begin(), zones.end(), fill.zones);
  fill.zone_count = zones.size();
  fill.total_chunks = chunks;
  for (unsigned grid : {1u, 2u, 5u}) {
    std::memset(m.base, 0, 4 * kChunk + 4096);
    RunGrid(grid, 64, gmt_fill_zones_inline, fill);
    for (uint64_t at = 0; at < 4 * kChunk + 4096; ++at) {
      uint8_t want = 0;
      for (const GmtZone& z : zones) {
        if (m.address(at) >= z.address && m.address(at) < z.address + z.bytes) {
          want = static_cast<uint8_t>(z.pattern);
        }
      }
      ASSERT_EQ(m.base[at], want) << "grid " << grid << " byte " << at;
    }
  }
}

// gmt_check_fill_zones_inline: its first check_blocks blocks answer the
// check as gmt_check_zones_inline does (ids check_id on), the others fill as
// gmt_fill_zones_inline does, for any split of the grid; neither touches the
// other's zones or anything else. One thread a block, so that RunGrid runs
// the check's barriers exactly (each block clears its shared tallies first).
TEST(ZoneKernelsOnHostTest, CheckAndFillInOneLaunch) {
  Memory m(4 * kChunk + 8192);
  auto report = std::make_unique<GmtCheckReport>();
  std::memset(report.get(), 0, sizeof(GmtCheckReport));
  // Checked: three zones of a freed block near the start; filled: a new
  // block's canaries and a large freed zone further on.
  const std::vector<GmtZone> checked = {{m.address(5), 300, 0xa5, 0},
                                        {m.address(400), 1000, 0xf7, 0},
                                        {m.address(1500), 77, 0xa5, 0}};
  std::vector<GmtZone> filled = {{m.address(4096), 256, 0xa5, 0},
                                 {m.address(4400), 0, 0x11, 0},
                                 {m.address(8192), 2 * kChunk + 9, 0xf7, 0}};
  const uint64_t chunks = PrefixSum(&filled);
  GmtInlineFill fill{};
  std::copy(filled.begin(), filled.end(), fill.zones);
  fill.zone_count = filled.size();
  fill.total_chunks = chunks;
  uint64_t check_id = 0;
  for (auto [check_blocks, fill_blocks] :
       {std::pair{1u, 1u}, std::pair{2u, 3u}, std::pair{3u, 1u}}) {
    std::memset(m.base, 0, 4 * kChunk + 8192);
    for (const GmtZone& z : checked) {
      std::memset(reinterpret_cast<void*>(z.address),
                  static_cast<int>(z.pattern), z.bytes);
    }
    const std::vector<Write> writes = {{checked[0].address + 7, {0}},
                                       {checked[1].address + 999, {1, 2}}};
    Apply(writes);
    const std::vector<uint8_t> before(m.base, m.base + m.size);
    GmtInlineCheck check{};
    std::copy(checked.begin(), checked.end(), check.zones);
    check.zone_count = checked.size();
    check.check_id = ++check_id;
    check.report = reinterpret_cast<uint64_t>(report.get());
    check_id += check_blocks - 1;
    RunGrid(check_blocks + fill_blocks, 1, gmt_check_fill_zones_inline, check,
            fill, uint64_t{check_blocks});
    const std::string what = std::to_string(check_blocks) + " check + " +
                             std::to_string(fill_blocks) + " fill blocks";
    uint64_t findings = 0;
    const auto got = ResultsOf(*report, check.check_id, checked.size(),
                               &findings, check_blocks);
    const auto want = ExpectedResults(checked, writes);
    EXPECT_EQ(findings, 2u) << what;
    for (size_t i = 0; i < want.size(); ++i) {
      EXPECT_EQ(got[i].changed_bytes, want[i].changed_bytes) << what << i;
      EXPECT_EQ(got[i].first_inverted, want[i].first_inverted) << what << i;
      EXPECT_EQ(got[i].last_plus1, want[i].last_plus1) << what << i;
    }
    for (uint64_t at = 0; at < m.size; ++at) {
      uint8_t want_byte = before[at];
      for (const GmtZone& z : filled) {
        if (m.address(at) >= z.address && m.address(at) < z.address + z.bytes) {
          want_byte = static_cast<uint8_t>(z.pattern);
        }
      }
      ASSERT_EQ(m.base[at], want_byte) << what << ", byte " << at;
    }
  }
}

}  // namespace
}  // namespace gmt_test
