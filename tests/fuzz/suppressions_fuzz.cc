// Fuzz harness: suppression files (lib/report/suppressions.h), from text to
// rules, matching and suggested rules.
//
// Input: the file's text.
// Invariants:
//   1. Parse never crashes. It fails with exactly "fuzz.supp:<line>: <problem>"
//      (line within the input, and the rule set then empty), or succeeds with
//      rules whose kind is known, whose pattern is non-empty and whose line
//      holds their text.
//   2. Every accepted rule parses again on its own into the same rule.
//   3. Matching any rule against a record never crashes, and a rule whose
//      pattern has no glob characters matches a frame named exactly that
//      pattern (for its field).
//   4. The rule suggested for a record whose function is the input's first
//      line (control characters and surrounding blanks removed) parses, and
//      silences that record.
#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "lib/report/suppressions.h"
#include "tests/fuzz/fuzz_harness.h"

namespace {

using gmt::ErrorKind;
using gmt::ErrorRecord;
using gmt::StackTable;
using gmt::SuppressionRule;
using gmt::Suppressions;
using Field = SuppressionRule::Field;

constexpr gmt::StackId kStack = 1;

ErrorRecord RecordOf(const std::string& kind_name) {
  ErrorRecord e;
  e.kind = ErrorKind::kApiBounds;
#define GMT_KIND_ENUM(Enum, Name, Meaning) \
  if (kind_name == Name) e.kind = ErrorKind::Enum;
  GMT_ERROR_KINDS(GMT_KIND_ENUM)
#undef GMT_KIND_ENUM
  e.stack = kStack;
  return e;
}

bool SameRule(const SuppressionRule& a, const SuppressionRule& b) {
  return a.kind == b.kind && a.field == b.field && a.pattern == b.pattern &&
         a.text == b.text;
}

void CheckRuleMatchesItsLiteral(const SuppressionRule& rule) {
  if (rule.pattern.find_first_of("*?") != std::string::npos) return;
  StackTable stacks;
  std::string function =
      rule.field == Field::kAny || rule.field == Field::kFunction ? rule.pattern
                                                                  : "f";
  std::string file = rule.field == Field::kSource ? rule.pattern : "a.cc";
  std::string module = rule.field == Field::kModule ? rule.pattern : "m";
  stacks[kStack] = {{0x10, function, file, 1, module}};
  ErrorRecord e = RecordOf(rule.kind == "*" ? "api-bounds" : rule.kind);
  if (rule.field == Field::kKernel) e.kernels = {rule.pattern};
  Suppressions single;
  std::string error;
  GMT_FUZZ_CHECK(Suppressions::Parse(rule.text, "one.supp", &single, &error),
                 "rule '%s' does not parse alone: %s", rule.text.c_str(),
                 error.c_str());
  if (rule.kind == "leak") {
    gmt::ReportData::Leak leak;
    leak.stack = kStack;
    GMT_FUZZ_CHECK(single.MatchLeak(leak, stacks) == 0,
                   "leak rule '%s' misses its own literal", rule.text.c_str());
  } else {
    GMT_FUZZ_CHECK(single.MatchError(e, stacks) == 0,
                   "rule '%s' misses its own literal", rule.text.c_str());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const size_t lines =
      static_cast<size_t>(std::count(text.begin(), text.end(), '\n')) + 1;

  Suppressions rules;
  std::string error;
  if (!Suppressions::Parse(text, "fuzz.supp", &rules, &error)) {
    GMT_FUZZ_CHECK(rules.empty(), "a refused file left rules");
    GMT_FUZZ_CHECK(error.rfind("fuzz.supp:", 0) == 0,
                   "error does not name the file: %s", error.c_str());
    size_t colon = error.find(": ", 10);
    GMT_FUZZ_CHECK(colon != std::string::npos && colon > 10,
                   "error does not name a line: %s", error.c_str());
    size_t line = std::stoul(error.substr(10, colon - 10));
    GMT_FUZZ_CHECK(line >= 1 && line <= lines, "error names line %zu of %zu",
                   line, lines);
    GMT_FUZZ_CHECK(colon + 2 < error.size(), "error without a problem");
  } else {
    std::vector<std::string> split = absl::StrSplit(text, '\n');
    for (const SuppressionRule& rule : rules.rules()) {
      GMT_FUZZ_CHECK(!rule.pattern.empty(), "empty pattern accepted");
      GMT_FUZZ_CHECK(
          rule.line >= 1 && static_cast<size_t>(rule.line) <= split.size(),
          "rule line %d out of range", rule.line);
      GMT_FUZZ_CHECK(split[rule.line - 1].find(rule.text) != std::string::npos,
                     "rule text '%s' is not on its line", rule.text.c_str());
      Suppressions again;
      GMT_FUZZ_CHECK(
          Suppressions::Parse(rule.text, "one.supp", &again, &error) &&
              again.rules().size() == 1 && SameRule(again.rules()[0], rule),
          "rule '%s' does not parse back the same", rule.text.c_str());
      CheckRuleMatchesItsLiteral(rule);
    }
    // Matching arbitrary records against the rules: no crash.
    StackTable stacks;
    stacks[kStack] = {{0x10, text.substr(0, 64), "/src/x.cu", 3, "app"}};
    ErrorRecord e = RecordOf("oob-write");
    e.kernels = {text.substr(0, 32)};
    (void)rules.MatchError(e, stacks);
    gmt::ReportData::Leak leak;
    leak.stack = kStack;
    (void)rules.MatchLeak(leak, stacks);
  }

  // 4. A suggestion silences its record.
  std::string name = text.substr(0, text.find('\n'));
  name.erase(
      std::remove_if(name.begin(), name.end(),
                     [](unsigned char c) { return c < 0x20 || c == 0x7f; }),
      name.end());
  name = std::string(absl::StripAsciiWhitespace(name));
  if (name.size() <= 1024) {
    StackTable stacks;
    stacks[kStack] = {{0x10, name, "", 0, "app"}};
    ErrorRecord e = RecordOf("invalid-free");
    std::string rule = gmt::SuggestSuppression(e, stacks);
    Suppressions suggested;
    GMT_FUZZ_CHECK(Suppressions::Parse(rule, "s.supp", &suggested, &error),
                   "suggestion '%s' does not parse: %s", rule.c_str(),
                   error.c_str());
    GMT_FUZZ_CHECK(suggested.MatchError(e, stacks) == 0,
                   "suggestion '%s' does not silence function '%s'",
                   rule.c_str(), name.c_str());
  }
  return 0;
}
