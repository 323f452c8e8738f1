// `gpumemtrace memtest` flags (lib/memtest/config.h) and the pattern plan
// (lib/memtest/plan.h): every flag, every error message names its flag.
#include "gtest/gtest.h"
#include "lib/memtest/config.h"
#include "lib/memtest/plan.h"

namespace gmt::memtest {
namespace {

using MTest = Test;  // "Test" is gtest's base class inside TEST bodies

constexpr uint64_t kGiB = uint64_t{1} << 30;
constexpr uint64_t kMiB = uint64_t{1} << 20;

TEST(MemtestSize, PercentAndSuffixes) {
  auto s = ParseSize("80%");
  ASSERT_TRUE(s.ok());
  EXPECT_TRUE(s->percent);
  EXPECT_DOUBLE_EQ(s->percent_of_free, 80);
  struct {
    const char* text;
    uint64_t bytes;
  } cases[] = {
      {"10G", 10 * kGiB},        {"10g", 10 * kGiB},    {"512M", 512 * kMiB},
      {"1.5GiB", 3 * kGiB / 2},  {"64K", 64 << 10},     {"4096", 4096},
      {"2T", uint64_t{2} << 40}, {"100MB", 100 * kMiB}, {" 3G ", 3 * kGiB}};
  for (const auto& c : cases) {
    auto v = ParseSize(c.text);
    ASSERT_TRUE(v.ok()) << c.text << ": " << v.status();
    EXPECT_FALSE(v->percent) << c.text;
    EXPECT_EQ(v->bytes, c.bytes) << c.text;
  }
}

TEST(MemtestSize, BadSizesAreRefused) {
  for (const char* bad : {"", "0", "0%", "101%", "-5G", "G", "10X", "ten",
                          "1e3", "10GG", "nan%", "99999999999T"}) {
    auto v = ParseSize(bad);
    EXPECT_FALSE(v.ok()) << bad;
    if (!v.ok()) {
      EXPECT_NE(std::string(v.status().message()).find(bad), std::string::npos)
          << v.status();
    }
  }
}

TEST(MemtestSize, ResolveRoundsDownToTheGranule) {
  SizeSpec half{true, 50, 0};
  EXPECT_EQ(ResolveSize(half, 10 * kMiB + 12345, 2 * kMiB), 4 * kMiB);
  SizeSpec fixed{false, 0, 5 * kMiB + 1};
  EXPECT_EQ(ResolveSize(fixed, 100 * kGiB, 2 * kMiB), 4 * kMiB);
  SizeSpec all{true, 100, 0};
  EXPECT_EQ(ResolveSize(all, 140 * kGiB, 2 * kMiB), 140 * kGiB);
}

TEST(MemtestPatterns, ListParsing) {
  auto all = ParseTestList("all");
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(*all, AllTests());
  EXPECT_EQ(all->size(), 6u);
  auto two = ParseTestList("random, walking1");
  ASSERT_TRUE(two.ok());
  EXPECT_EQ(*two, (std::vector<MTest>{MTest::kRandom, MTest::kWalking1}));
  auto bad = ParseTestList("walking1,walking2");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(std::string(bad.status().message()).find("'walking2'"),
            std::string::npos);
  EXPECT_NE(std::string(bad.status().message()).find("mod20"),
            std::string::npos);
  EXPECT_FALSE(ParseTestList("random,random").ok());
  EXPECT_FALSE(ParseTestList("").ok());
  for (MTest t : AllTests()) EXPECT_EQ(TestFromName(TestName(t)), t);
}

TEST(MemtestPatterns, PlanShapes) {
  EXPECT_EQ(VerifySweeps(MTest::kWalking1), 1);
  EXPECT_EQ(VerifySweeps(MTest::kAddress), 2);
  EXPECT_EQ(VerifySweeps(MTest::kMovinv), 3);
  EXPECT_EQ(VerifySweeps(MTest::kMod20), 20);
  EXPECT_EQ(VerifySweeps(MTest::kRandom), 1);
  // Moving inversions: fill p; check p / write ~p up; check ~p / write p
  // down; check p.
  const std::vector<Step> mv = PlanTest(MTest::kMovinv, 0, 1);
  ASSERT_EQ(mv.size(), 4u);
  EXPECT_EQ(mv[0].kind, Step::kWrite);
  EXPECT_EQ(mv[0].pattern.value, 0x5555555555555555ull);
  EXPECT_EQ(mv[1].flags, GMT_MEMTEST_REWRITE);
  EXPECT_EQ(mv[1].next.value, ~mv[0].pattern.value);
  EXPECT_EQ(mv[2].flags, GMT_MEMTEST_REWRITE | GMT_MEMTEST_DESCENDING);
  EXPECT_EQ(mv[2].pattern.value, ~mv[0].pattern.value);
  EXPECT_EQ(mv[2].next.value, mv[0].pattern.value);
  EXPECT_EQ(mv[3].kind, Step::kVerify);
  // Later passes change the walking shift, the constants and the seed.
  EXPECT_EQ(PlanTest(MTest::kWalking1, 5, 0)[0].pattern.shift, 5u);
  EXPECT_NE(PlanTest(MTest::kMovinv, 1, 1)[0].pattern.value,
            0x5555555555555555ull);
  EXPECT_NE(PlanTest(MTest::kRandom, 1, 1)[0].pattern.seed,
            PlanTest(MTest::kRandom, 0, 1)[0].pattern.seed);
  const std::vector<Step> m20 = PlanTest(MTest::kMod20, 0, 1);
  ASSERT_EQ(m20.size(), 40u);
  for (uint64_t o = 0; o < 20; ++o) EXPECT_EQ(m20[2 * o].pattern.shift, o);
}

TEST(MemtestInjection, Parse) {
  auto inj = ParseInjection("random:0x100008:0x8000000000000001");
  ASSERT_TRUE(inj.ok()) << inj.status();
  EXPECT_EQ(inj->test, MTest::kRandom);
  EXPECT_EQ(inj->offset, 0x100008u);
  EXPECT_EQ(inj->mask, 0x8000000000000001ull);
  EXPECT_FALSE(inj->flaky);
  auto flaky = ParseInjection("movinv:4096:4:flaky");
  ASSERT_TRUE(flaky.ok());
  EXPECT_TRUE(flaky->flaky);
  EXPECT_EQ(flaky->offset, 4096u);
  for (const char* bad :
       {"random", "random:8", "nope:8:1", "random:7:1", "random:8:0",
        "random:8:1:sometimes", "random:x:1", "random:8:1:flaky:more"}) {
    EXPECT_FALSE(ParseInjection(bad).ok()) << bad;
  }
}

TEST(MemtestArgs, Defaults) {
  MemtestParse p = ParseMemtestArgs({}, "");
  ASSERT_TRUE(p.ok()) << p.error;
  EXPECT_TRUE(p.config.size.percent);
  EXPECT_DOUBLE_EQ(p.config.size.percent_of_free, 90);
  EXPECT_EQ(p.config.tests, AllTests());
  EXPECT_EQ(p.config.passes, 1);
  EXPECT_EQ(p.config.json_path, "");
  EXPECT_FALSE(p.config.inject.has_value());
  EXPECT_TRUE(p.config.measure_copy);
}

TEST(MemtestArgs, EveryFlag) {
  MemtestParse p = ParseMemtestArgs(
      {"--device", "1", "--size=10G", "--patterns", "movinv,mod20",
       "--passes=3", "--seed", "0x2a", "--json", "-", "--max-errors", "5",
       "--no-copy-bandwidth", "--progress", "never", "--inject",
       "mod20:64:0xff"},
      "");
  ASSERT_TRUE(p.ok()) << p.error;
  const MemtestConfig& c = p.config;
  EXPECT_EQ(c.device, 1);
  EXPECT_FALSE(c.size.percent);
  EXPECT_EQ(c.size.bytes, 10 * kGiB);
  EXPECT_EQ(c.tests, (std::vector<MTest>{MTest::kMovinv, MTest::kMod20}));
  EXPECT_EQ(c.passes, 3);
  EXPECT_EQ(c.seed, 42u);
  EXPECT_EQ(c.json_path, "-");
  EXPECT_EQ(c.max_errors, 5);
  EXPECT_FALSE(c.measure_copy);
  EXPECT_EQ(c.progress, ProgressMode::kNever);
  ASSERT_TRUE(c.inject.has_value());
  EXPECT_EQ(c.inject->test, MTest::kMod20);
  EXPECT_TRUE(ParseMemtestArgs({"--help"}, "").config.help);
  EXPECT_TRUE(ParseMemtestArgs({"-h"}, "").config.help);
}

TEST(MemtestArgs, InjectionFromTheEnvironmentAndItsErrors) {
  MemtestParse env = ParseMemtestArgs({}, "walking0:8:2:flaky");
  ASSERT_TRUE(env.ok()) << env.error;
  ASSERT_TRUE(env.config.inject.has_value());
  EXPECT_TRUE(env.config.inject->flaky);
  MemtestParse bad_env = ParseMemtestArgs({}, "walking0:3:2");
  EXPECT_NE(bad_env.error.find("GMT_MEMTEST_INJECT"), std::string::npos)
      << bad_env.error;
  MemtestParse unselected =
      ParseMemtestArgs({"--patterns", "random", "--inject", "movinv:8:1"}, "");
  EXPECT_NE(unselected.error.find("not among the selected"), std::string::npos)
      << unselected.error;
  // The flag wins over the environment.
  MemtestParse both =
      ParseMemtestArgs({"--inject", "random:16:1"}, "movinv:8:1");
  ASSERT_TRUE(both.ok());
  EXPECT_EQ(both.config.inject->test, MTest::kRandom);
}

TEST(MemtestArgs, ErrorsNameTheFlag) {
  struct {
    std::vector<std::string> args;
    const char* needle;
  } cases[] = {
      {{"--size", "lots"}, "--size: 'lots'"},
      {{"--size"}, "--size: a value is needed"},
      {{"--passes", "0"}, "--passes: '0'"},
      {{"--passes=many"}, "--passes: 'many'"},
      {{"--device", "-1"}, "--device: '-1'"},
      {{"--patterns", "walking3"}, "--patterns: unknown pattern 'walking3'"},
      {{"--progress", "sometimes"}, "--progress: 'sometimes'"},
      {{"--json="}, "--json: ''"},
      {{"--max-errors", "x"}, "--max-errors: 'x'"},
      {{"--seed", "abc"}, "--seed: 'abc'"},
      {{"--frobnicate"}, "unknown flag '--frobnicate'"},
      {{"--inject", "random:8"}, "--inject: 'random:8'"},
  };
  for (const auto& c : cases) {
    MemtestParse p = ParseMemtestArgs(c.args, "");
    EXPECT_FALSE(p.ok()) << c.needle;
    EXPECT_NE(p.error.find(c.needle), std::string::npos)
        << "error '" << p.error << "' lacks '" << c.needle << "'";
  }
}

TEST(MemtestArgs, UsageListsEveryFlagAndMarksTheHookTestOnly) {
  const std::string u = MemtestUsage();
  for (const char* flag :
       {"--device", "--size", "--patterns", "--passes", "--seed", "--json",
        "--max-errors", "--no-copy-bandwidth", "--progress", "--inject",
        "GMT_MEMTEST_INJECT", "TEST ONLY"}) {
    EXPECT_NE(u.find(flag), std::string::npos) << flag;
  }
  for (MTest t : AllTests())
    EXPECT_NE(u.find(std::string(TestName(t))), std::string::npos);
}

}  // namespace
}  // namespace gmt::memtest
