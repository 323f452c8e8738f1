// The memtest's report (lib/memtest/memtest_report.h): second-read
// classification, flipped bits, ECC deltas, the JSON fields, the text summary,
// the exit code, and the progress line (lib/memtest/progress.h).
#include "lib/memtest/memtest_report.h"

#include <cstdio>

#include "gtest/gtest.h"
#include "lib/memtest/progress.h"

namespace gmt::memtest {
namespace {

using MTest = Test;  // "Test" is gtest's base class inside TEST bodies

TEST(MemtestClassify, SecondRead) {
  EXPECT_EQ(ClassifySecondRead(0xff, 0xfe, 0xfe), ReadClass::kStoredCorruption);
  EXPECT_EQ(ClassifySecondRead(0xff, 0xfe, 0xff), ReadClass::kFlakyRead);
  EXPECT_EQ(ClassifySecondRead(0xff, 0xfe, 0x7f), ReadClass::kUnstable);
  EXPECT_STREQ(ReadClassName(ReadClass::kStoredCorruption),
               "stored-corruption");
  EXPECT_STREQ(ReadClassName(ReadClass::kFlakyRead), "flaky-read");
  EXPECT_STREQ(ReadClassName(ReadClass::kUnstable), "unstable");
}

TEST(MemtestClassify, SetBits) {
  EXPECT_EQ(SetBits(0), std::vector<int>{});
  EXPECT_EQ(SetBits(0x8000000000000005ull), (std::vector<int>{0, 2, 63}));
  EXPECT_EQ(SetBits(~uint64_t{0}).size(), 64u);
}

TEST(MemtestHealth, UncorrectedDelta) {
  HealthSnapshot a, b;
  EXPECT_EQ(EccUncorrectedDelta(a, b), 0u);  // not available
  a.ecc_volatile_uncorrected = 3;
  b.ecc_volatile_uncorrected = 5;
  EXPECT_EQ(EccUncorrectedDelta(a, b), 2u);
  b.ecc_volatile_uncorrected = 1;  // reset in between (driver reload)
  EXPECT_EQ(EccUncorrectedDelta(a, b), 0u);
}

MemtestReport Sample() {
  MemtestReport r;
  r.config.tests = {MTest::kRandom, MTest::kMovinv};
  r.config.inject = Injection{MTest::kRandom, 8, 0x101, false};
  r.device_index = 0;
  r.device_name = "NVIDIA H200";
  r.pci_bus_id = "0000:41:00.0";
  r.total_bytes = 150ull << 30;
  r.free_bytes = 140ull << 30;
  r.chunks = {{0x7f0000000000, 1 << 30, 0, 0},
              {0x7f0040000000, 1 << 30, 1 << 30, (1 << 30) / 8}};
  r.tested_bytes = 2ull << 30;
  r.copy = CopyBandwidth{5ull << 30, 2.5};
  TestTiming t;
  t.test = MTest::kRandom;
  t.verify_sweeps = 1;
  t.tested_bytes = 2ull << 30;
  t.traffic_bytes = 4ull << 30;
  t.seconds = 1.0;
  t.errors = 3;
  r.tests = {t};
  MismatchRecord e;
  e.test = MTest::kRandom;
  e.step = 1;
  e.step_pattern = GmtMemtestPattern{GMT_MEMTEST_RANDOM, 0, 0, 7};
  e.address = 0x7f0040000008;
  e.chunk = 1;
  e.region_offset = (1 << 30) + 8;
  e.expected = 0x00000000000000ff;
  e.actual = 0x00000000000001fe;
  e.second_read = e.actual;
  e.read_class = ReadClass::kStoredCorruption;
  r.errors = {e};
  r.total_errors = 3;
  r.injected_address = 0x7f0040000008;
  r.health_before.available = false;
  r.health_before.reason = "cannot open libnvidia-ml.so.1";
  r.health_after = r.health_before;
  return r;
}

TEST(MemtestJson, Fields) {
  const nlohmann::json j = MemtestJson(Sample());
  EXPECT_EQ(j["tool"], "gpumemtrace");
  EXPECT_EQ(j["command"], "memtest");
  EXPECT_EQ(j["device"]["name"], "NVIDIA H200");
  EXPECT_EQ(j["config"]["patterns"], nlohmann::json({"random", "movinv"}));
  EXPECT_EQ(j["config"]["size_bytes"], 2ull << 30);
  ASSERT_EQ(j["chunks"].size(), 2u);
  EXPECT_EQ(j["chunks"][1]["address"], "0x00007f0040000000");
  EXPECT_EQ(j["chunks"][1]["region_offset"], 1 << 30);
  EXPECT_DOUBLE_EQ(j["copy"]["gbps"].get<double>(), (5ull << 30) / 2.5 / 1e9);
  const auto& t = j["tests"][0];
  EXPECT_EQ(t["pattern"], "random");
  EXPECT_DOUBLE_EQ(t["tested_gbps"].get<double>(), (2ull << 30) / 1e9);
  EXPECT_DOUBLE_EQ(t["traffic_gbps"].get<double>(), (4ull << 30) / 1e9);
  EXPECT_DOUBLE_EQ(t["copy_ratio"].get<double>(),
                   ((2ull << 30) / 1e9) / ((5ull << 30) / 2.5 / 1e9));
  ASSERT_EQ(j["errors"].size(), 1u);
  const auto& e = j["errors"][0];
  EXPECT_EQ(e["address"], "0x00007f0040000008");
  EXPECT_EQ(e["expected"], "0x00000000000000ff");
  EXPECT_EQ(e["actual"], "0x00000000000001fe");
  EXPECT_EQ(e["xor"], "0x0000000000000101");
  EXPECT_EQ(e["flipped_bits"], nlohmann::json({0, 8}));
  EXPECT_EQ(e["second_read"], "0x00000000000001fe");
  EXPECT_EQ(e["class"], "stored-corruption");
  EXPECT_EQ(e["chunk"], 1);
  EXPECT_EQ(e["region_offset"], (1 << 30) + 8);
  EXPECT_EQ(e["step_pattern"], "random, seed 0x7");
  EXPECT_EQ(j["summary"]["errors"], 3);
  EXPECT_EQ(j["summary"]["errors_listed"], 1);
  EXPECT_EQ(j["summary"]["stored_corruption"], 1);
  EXPECT_EQ(j["summary"]["flaky_read"], 0);
  EXPECT_EQ(j["summary"]["result"], "fail");
  EXPECT_EQ(j["health"]["before"]["available"], false);
  EXPECT_EQ(j["injection"]["address"], "0x00007f0040000008");
  EXPECT_EQ(j["injection"]["test_only"], true);
  EXPECT_FALSE(j.contains("failure"));
}

TEST(MemtestJson, HealthCountersAndNulls) {
  MemtestReport r = Sample();
  r.health_before.available = true;
  r.health_before.ecc_volatile_uncorrected = 0;
  r.health_before.remapped_correctable = 2;
  r.health_before.remap_pending = false;
  r.health_after = r.health_before;
  r.health_after.ecc_volatile_uncorrected = 1;
  const nlohmann::json j = MemtestJson(r);
  EXPECT_EQ(j["health"]["after"]["ecc"]["volatile_uncorrected"], 1);
  EXPECT_TRUE(j["health"]["after"]["ecc"]["volatile_corrected"].is_null());
  EXPECT_EQ(j["health"]["before"]["remapped_rows"]["correctable"], 2);
  EXPECT_EQ(j["health"]["before"]["remapped_rows"]["pending"], false);
  EXPECT_EQ(j["summary"]["ecc_uncorrected_delta"], 1);
  const std::string text = MemtestText(r);
  EXPECT_NE(text.find("ECC volatile corrected n/a -> n/a, uncorrected 0 -> 1; "
                      "remapped rows correctable 2 -> 2"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("1 uncorrected ECC error(s) during the test"),
            std::string::npos)
      << text;
}

TEST(MemtestExit, Codes) {
  MemtestReport clean;
  clean.health_before.available = false;
  EXPECT_EQ(MemtestExitCode(clean), 0);
  EXPECT_EQ(MemtestJson(clean)["summary"]["result"], "pass");
  EXPECT_TRUE(MemtestJson(clean)["copy"].is_null());
  EXPECT_FALSE(MemtestJson(clean).contains("injection"));
  EXPECT_EQ(MemtestExitCode(Sample()), 1);
  MemtestReport ecc;
  ecc.health_before.ecc_volatile_uncorrected = 0;
  ecc.health_after.ecc_volatile_uncorrected = 4;
  EXPECT_EQ(MemtestExitCode(ecc), 1);  // no mismatch, but the ECC saw errors
  MemtestReport stopped;
  stopped.failure = "gmt_memtest_verify: CUDA_ERROR_LAUNCH_FAILED";
  EXPECT_EQ(MemtestExitCode(stopped), 1);
  stopped.setup_failed = true;
  EXPECT_EQ(MemtestExitCode(stopped), 2);
}

TEST(MemtestText, Summary) {
  const std::string text = MemtestText(Sample());
  EXPECT_NE(text.find("NVIDIA H200"), std::string::npos) << text;
  EXPECT_NE(text.find("random"), std::string::npos);
  EXPECT_NE(text.find("address 0x7f0040000008"), std::string::npos) << text;
  EXPECT_NE(text.find("xor 0x0000000000000101 bits [0,8]"), std::string::npos)
      << text;
  EXPECT_NE(text.find("stored-corruption"), std::string::npos);
  EXPECT_NE(text.find("2 mismatched word(s) not listed"), std::string::npos)
      << text;
  EXPECT_NE(text.find("not available (cannot open libnvidia-ml.so.1)"),
            std::string::npos);
  EXPECT_NE(text.find("memtest: FAIL (3 error(s))"), std::string::npos) << text;
}

TEST(MemtestProgress, BarAndLines) {
  ProgressState s;
  s.fraction = 0.5;
  s.test = "movinv";
  s.pass = 1;
  s.gbps = 2034.46;
  s.errors = 2;
  EXPECT_EQ(FormatProgressBar(s, 10),
            "[#####.....]  50.0%  movinv pass 1  2034.5 GB/s  errors 2");
  s.fraction = 1.7;  // clamped
  EXPECT_EQ(FormatProgressBar(s, 4).substr(0, 13), "[####] 100.0%");
  // Line mode (not a terminal): one line per finished pattern, no '\r'.
  char buffer[512] = {};
  std::FILE* f = fmemopen(buffer, sizeof(buffer), "w");
  ASSERT_NE(f, nullptr);
  {
    Progress p(f, /*bar=*/false);
    s.fraction = 0.25;
    p.Update(s);
    p.TestDone(s);
    p.Finish();
  }
  std::fclose(f);
  EXPECT_EQ(std::string(buffer),
            "memtest:  25.0% movinv pass 1 done, 2034.5 GB/s, errors 2\n");
}

}  // namespace
}  // namespace gmt::memtest
