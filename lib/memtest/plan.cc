#include "lib/memtest/plan.h"

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace gmt::memtest {
namespace {

struct NamedTest {
  Test test;
  absl::string_view name;
};
constexpr NamedTest kTests[] = {
    {Test::kWalking1, "walking1"}, {Test::kWalking0, "walking0"},
    {Test::kAddress, "address"},   {Test::kMovinv, "movinv"},
    {Test::kMod20, "mod20"},       {Test::kRandom, "random"},
};

GmtMemtestPattern Pattern(GmtMemtestKind kind, uint64_t shift = 0,
                          uint64_t value = 0, uint64_t seed = 0) {
  return GmtMemtestPattern{static_cast<uint64_t>(kind), shift, value, seed};
}

// The constant of moving inversions and modulo-20: the classic alternating
// bits first, random constants in later passes.
uint64_t PassConstant(int pass, uint64_t seed) {
  if (pass == 0) return 0x5555555555555555ull;
  return GmtMemtestMix64(seed ^ (0xc0ffee00ull + static_cast<uint64_t>(pass)));
}

void WriteThenVerify(const GmtMemtestPattern& p, std::vector<Step>* steps) {
  steps->push_back(Step{Step::kWrite, p, {}, 0});
  steps->push_back(Step{Step::kVerify, p, {}, 0});
}

}  // namespace

absl::string_view TestName(Test test) {
  for (const NamedTest& t : kTests) {
    if (t.test == test) return t.name;
  }
  return "?";
}

std::optional<Test> TestFromName(absl::string_view name) {
  for (const NamedTest& t : kTests) {
    if (t.name == name) return t.test;
  }
  return std::nullopt;
}

std::vector<Test> AllTests() {
  std::vector<Test> out;
  for (const NamedTest& t : kTests) out.push_back(t.test);
  return out;
}

absl::StatusOr<std::vector<Test>> ParseTestList(absl::string_view text) {
  text = absl::StripAsciiWhitespace(text);
  if (text == "all") return AllTests();
  std::vector<std::string> valid;
  for (const NamedTest& t : kTests) valid.emplace_back(t.name);
  const std::string valid_list = absl::StrJoin(valid, ", ");
  std::vector<Test> out;
  absl::flat_hash_set<int> seen;
  for (absl::string_view item : absl::StrSplit(text, ',')) {
    item = absl::StripAsciiWhitespace(item);
    const std::optional<Test> test = TestFromName(item);
    if (!test.has_value()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "unknown pattern '", item, "' (valid: ", valid_list, ", all)"));
    }
    if (!seen.insert(static_cast<int>(*test)).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("pattern '", item, "' listed twice"));
    }
    out.push_back(*test);
  }
  return out;
}

std::vector<Step> PlanTest(Test test, int pass, uint64_t seed) {
  std::vector<Step> steps;
  const uint64_t shift = static_cast<uint64_t>(pass) % 64;
  switch (test) {
    case Test::kWalking1:
      WriteThenVerify(Pattern(GMT_MEMTEST_WALK1, shift), &steps);
      break;
    case Test::kWalking0:
      WriteThenVerify(Pattern(GMT_MEMTEST_WALK0, shift), &steps);
      break;
    case Test::kAddress:
      WriteThenVerify(Pattern(GMT_MEMTEST_ADDRESS), &steps);
      WriteThenVerify(Pattern(GMT_MEMTEST_ADDRESS_INV), &steps);
      break;
    case Test::kMovinv: {
      const uint64_t p = PassConstant(pass, seed);
      const GmtMemtestPattern up = Pattern(GMT_MEMTEST_CONST, 0, p);
      const GmtMemtestPattern down = Pattern(GMT_MEMTEST_CONST, 0, ~p);
      steps.push_back(Step{Step::kWrite, up, {}, 0});
      steps.push_back(Step{Step::kVerify, up, down, GMT_MEMTEST_REWRITE});
      steps.push_back(Step{Step::kVerify, down, up,
                           GMT_MEMTEST_REWRITE | GMT_MEMTEST_DESCENDING});
      steps.push_back(Step{Step::kVerify, up, {}, 0});
      break;
    }
    case Test::kMod20: {
      const uint64_t p = PassConstant(pass, seed);
      for (uint64_t offset = 0; offset < 20; ++offset) {
        WriteThenVerify(Pattern(GMT_MEMTEST_MOD20, offset, p), &steps);
      }
      break;
    }
    case Test::kRandom:
      WriteThenVerify(
          Pattern(GMT_MEMTEST_RANDOM, 0, 0, seed + static_cast<uint64_t>(pass)),
          &steps);
      break;
  }
  return steps;
}

int VerifySweeps(Test test) {
  int n = 0;
  for (const Step& s : PlanTest(test, 0, 0)) n += s.kind == Step::kVerify;
  return n;
}

std::string DescribePattern(const GmtMemtestPattern& p) {
  switch (p.kind) {
    case GMT_MEMTEST_WALK1:
      return absl::StrCat("walking ones, shift ", p.shift);
    case GMT_MEMTEST_WALK0:
      return absl::StrCat("walking zeros, shift ", p.shift);
    case GMT_MEMTEST_ADDRESS:
      return "own address";
    case GMT_MEMTEST_ADDRESS_INV:
      return "own address, inverted";
    case GMT_MEMTEST_CONST:
      return absl::StrFormat("constant 0x%016x", p.value);
    case GMT_MEMTEST_MOD20:
      return absl::StrFormat("modulo-20 0x%016x at offset %d", p.value,
                             p.shift);
    case GMT_MEMTEST_RANDOM:
      return absl::StrFormat("random, seed 0x%x", p.seed);
    default:
      return "unknown";
  }
}

}  // namespace gmt::memtest
