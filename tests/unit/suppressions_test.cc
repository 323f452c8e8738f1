// Suppressions (lib/report/suppressions.h): the file parser and its errors,
// glob matching, which fields a rule looks at, the suggested rule, and
// filtering a made-up ReportData (errors, leaks, summary counts, per-rule hits,
// rendered JSON and text). An Engine-level test checks that the exit report
// follows the rules (summary.errors, the exitcode decision's input).
#include "lib/report/suppressions.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "lib/engine/engine.h"
#include "nlohmann/json.hpp"

namespace gmt {
namespace {

using ::testing::HasSubstr;

constexpr StackId kErrorStack = 11;
constexpr StackId kAllocStack = 12;
constexpr StackId kLeakStack = 13;
constexpr StackId kOtherLeakStack = 14;

Suppressions ParseOk(const std::string& text) {
  Suppressions s;
  std::string error;
  EXPECT_TRUE(Suppressions::Parse(text, "test.supp", &s, &error)) << error;
  return s;
}

std::string ParseError(const std::string& text) {
  Suppressions s;
  std::string error;
  EXPECT_FALSE(Suppressions::Parse(text, "bad.supp", &s, &error)) << text;
  EXPECT_TRUE(s.empty());
  return error;
}

StackTable Stacks() {
  StackTable t;
  t[kErrorStack] = {{0x1000, "ns::CopyHelper(float*, long)", "/src/app/copy.cu",
                     40, "/opt/app/bin/trainer"},
                    {0x1100, "main", "/src/app/main.cu", 9, "trainer"}};
  t[kAllocStack] = {{0x2000, "AllocWorkspace(unsigned long)",
                     "/src/vendor/ws.cc", 12, "libvendor.so"},
                    {0x2100, "main", "/src/app/main.cu", 5, "trainer"}};
  t[kLeakStack] = {{0x3000, "InitCache()", "/src/app/cache.cu", 3, "trainer"},
                   {0x3100, "main", "/src/app/main.cu", 4, "trainer"}};
  t[kOtherLeakStack] = {{0x4000, "", "", 0, "libthird.so"}};
  return t;
}

ErrorRecord ApiBounds() {
  ErrorRecord e;
  e.kind = ErrorKind::kApiBounds;
  e.api = Api::kCudaMalloc;
  e.stack = kErrorStack;
  AllocationRecord a;
  a.stack = kAllocStack;
  a.bytes = 4096;
  e.allocation = a;
  e.detail = "copy past the end";
  return e;
}

ErrorRecord GuardHit(std::vector<std::string> kernels) {
  ErrorRecord e;
  e.kind = ErrorKind::kOobWrite;
  e.has_range = true;
  e.kernels = std::move(kernels);
  AllocationRecord a;
  a.stack = kAllocStack;
  e.allocation = a;
  return e;
}

TEST(GlobMatchTest, WholeStringWithStarAndQuestionMark) {
  EXPECT_TRUE(GlobMatch("abc", "abc"));
  EXPECT_FALSE(GlobMatch("abc", "abcd"));
  EXPECT_FALSE(GlobMatch("bc", "abc"));
  EXPECT_TRUE(GlobMatch("*", ""));
  EXPECT_TRUE(GlobMatch("*", "anything"));
  EXPECT_TRUE(GlobMatch("a*c", "abbbc"));
  EXPECT_TRUE(GlobMatch("a?c", "abc"));
  EXPECT_FALSE(GlobMatch("a?c", "ac"));
  EXPECT_TRUE(GlobMatch("*lib*.so", "/usr/lib/libvendor.so"));
  EXPECT_FALSE(GlobMatch("*lib*.so", "/usr/lib/libvendor.so.1"));
  EXPECT_TRUE(GlobMatch("**a**", "xxa"));
  EXPECT_FALSE(GlobMatch("", "x"));
}

TEST(GlobMatchTest, PathologicalPatternFinishes) {
  // Exponential backtracking would never return on this.
  std::string text(5000, 'a');
  std::string pattern;
  for (int i = 0; i < 200; ++i) pattern += "*a";
  pattern += "b";
  EXPECT_FALSE(GlobMatch(pattern, text));
}

TEST(SuppressionsParseTest, RulesCommentsBlankLinesAndPrefixes) {
  Suppressions s = ParseOk(
      "# comment\n"
      "\n"
      "   oob-write:mod:libvendor.so   \n"
      "leak:fun:InitCache\n"
      "*:src:*/vendor/*\n"
      "oob-write:kernel:fill_overrun\n"
      "api-bounds:ns::CopyHelper*\n");
  ASSERT_EQ(s.rules().size(), 5u);
  EXPECT_EQ(s.rules()[0].text, "oob-write:mod:libvendor.so");
  EXPECT_EQ(s.rules()[0].line, 3);
  EXPECT_EQ(s.rules()[0].file, "test.supp");
  EXPECT_EQ(s.rules()[0].field, SuppressionRule::Field::kModule);
  EXPECT_EQ(s.rules()[0].pattern, "libvendor.so");
  EXPECT_EQ(s.rules()[1].field, SuppressionRule::Field::kFunction);
  EXPECT_EQ(s.rules()[2].kind, "*");
  EXPECT_EQ(s.rules()[2].field, SuppressionRule::Field::kSource);
  EXPECT_EQ(s.rules()[3].field, SuppressionRule::Field::kKernel);
  EXPECT_EQ(s.rules()[4].field, SuppressionRule::Field::kAny);
  EXPECT_EQ(s.rules()[4].pattern, "ns::CopyHelper*");
}

TEST(SuppressionsParseTest, EveryErrorKindIsAccepted) {
  for (const char* kind :
       {"oob-write", "oob-underflow", "uaf-write", "double-free",
        "invalid-free", "api-bounds", "oom", "api-mismatch", "leak", "*"}) {
    EXPECT_EQ(ParseOk(absl::StrCat(kind, ":x")).rules().size(), 1u) << kind;
  }
}

TEST(SuppressionsParseTest, ErrorsNameFileLineAndProblem) {
  EXPECT_EQ(ParseError("leak:a\nno colon here\n"),
            "bad.supp:2: 'no colon here' is not <kind>:<pattern> (no ':' "
            "found)");
  EXPECT_THAT(ParseError("oob-read:foo"),
              HasSubstr("bad.supp:1: unknown kind 'oob-read' (expected "
                        "oob-write,"));
  EXPECT_THAT(ParseError("\n\nleak:"), HasSubstr("bad.supp:3: 'leak:' has an "
                                                 "empty pattern"));
  EXPECT_THAT(ParseError("leak:fun:   "), HasSubstr("empty pattern"));
  EXPECT_THAT(ParseError("leak:kernel:k"),
              HasSubstr("bad.supp:1: kernel: patterns apply to guard-zone"));
  EXPECT_THAT(ParseError(std::string("leak:a\0b", 8)),
              HasSubstr("bad.supp:1: NUL byte"));
  EXPECT_THAT(ParseError(absl::StrCat("leak:", std::string(5000, 'x'))),
              HasSubstr("bad.supp:1: line longer than 4096 bytes"));
}

TEST(SuppressionsParseTest, EmptyAndCommentOnlyFilesHaveNoRules) {
  EXPECT_TRUE(ParseOk("").empty());
  EXPECT_TRUE(ParseOk("# nothing\n\n   \n").empty());
}

TEST(SuppressionsLoadTest, MissingFileIsAClearError) {
  Suppressions s;
  std::string error;
  EXPECT_FALSE(Suppressions::Load("/nonexistent/gmt.supp", &s, &error));
  EXPECT_EQ(error, "cannot read suppressions file /nonexistent/gmt.supp");
  EXPECT_TRUE(s.empty());
}

TEST(SuppressionsLoadTest, ReadsAFileAndNamesItInRules) {
  std::string path =
      absl::StrCat(::testing::TempDir(), "/load_", getpid(), ".supp");
  std::ofstream(path) << "leak:fun:InitCache\n";
  Suppressions s;
  std::string error;
  ASSERT_TRUE(Suppressions::Load(path, &s, &error)) << error;
  ASSERT_EQ(s.rules().size(), 1u);
  EXPECT_EQ(s.rules()[0].file, path);
  std::remove(path.c_str());
}

TEST(SuppressionsMatchTest, FunctionMatchesWithOrWithoutParameters) {
  StackTable stacks = Stacks();
  EXPECT_EQ(
      ParseOk("api-bounds:fun:ns::CopyHelper").MatchError(ApiBounds(), stacks),
      0);
  EXPECT_EQ(ParseOk("api-bounds:fun:ns::CopyHelper(float*, long)")
                .MatchError(ApiBounds(), stacks),
            0);
  EXPECT_EQ(
      ParseOk("api-bounds:fun:CopyHelper").MatchError(ApiBounds(), stacks), -1);
}

TEST(SuppressionsMatchTest, KindMustAgree) {
  StackTable stacks = Stacks();
  EXPECT_EQ(ParseOk("oob-write:fun:main").MatchError(ApiBounds(), stacks), -1);
  EXPECT_EQ(ParseOk("leak:fun:main").MatchError(ApiBounds(), stacks), -1);
  EXPECT_EQ(ParseOk("*:fun:main").MatchError(ApiBounds(), stacks), 0);
}

TEST(SuppressionsMatchTest, SourceAndModuleByFullPathOrBasename) {
  StackTable stacks = Stacks();
  const ErrorRecord e = ApiBounds();
  EXPECT_EQ(ParseOk("api-bounds:src:copy.cu").MatchError(e, stacks), 0);
  EXPECT_EQ(ParseOk("api-bounds:src:/src/app/*").MatchError(e, stacks), 0);
  EXPECT_EQ(
      ParseOk("api-bounds:mod:/opt/app/bin/trainer").MatchError(e, stacks), 0);
  EXPECT_EQ(ParseOk("api-bounds:mod:trainer").MatchError(e, stacks), 0);
  // A field prefix restricts the match to that field.
  EXPECT_EQ(ParseOk("api-bounds:mod:copy.cu").MatchError(e, stacks), -1);
  EXPECT_EQ(ParseOk("api-bounds:src:trainer").MatchError(e, stacks), -1);
  // Without a prefix any field does.
  EXPECT_EQ(ParseOk("api-bounds:copy.cu").MatchError(e, stacks), 0);
}

TEST(SuppressionsMatchTest, AllocationStackCountsForErrors) {
  StackTable stacks = Stacks();
  EXPECT_EQ(
      ParseOk("api-bounds:mod:libvendor.so").MatchError(ApiBounds(), stacks),
      0);
  EXPECT_EQ(
      ParseOk("api-bounds:fun:AllocWorkspace").MatchError(ApiBounds(), stacks),
      0);
}

TEST(SuppressionsMatchTest, KernelPrefixLooksOnlyAtKernels) {
  StackTable stacks = Stacks();
  const ErrorRecord e = GuardHit({"fill_overrun(float*, long, long, float)"});
  EXPECT_EQ(ParseOk("oob-write:kernel:fill_overrun").MatchError(e, stacks), 0);
  EXPECT_EQ(ParseOk("oob-write:kernel:fill_*").MatchError(e, stacks), 0);
  EXPECT_EQ(ParseOk("oob-write:fill_overrun").MatchError(e, stacks), 0);
  EXPECT_EQ(ParseOk("oob-write:fun:fill_overrun").MatchError(e, stacks), -1);
  EXPECT_EQ(ParseOk("oob-write:kernel:main").MatchError(e, stacks), -1);
}

TEST(SuppressionsMatchTest, FirstMatchingRuleWins) {
  StackTable stacks = Stacks();
  Suppressions s = ParseOk("leak:fun:nothing\n*:fun:main\napi-bounds:*\n");
  EXPECT_EQ(s.MatchError(ApiBounds(), stacks), 1);
}

TEST(SuppressionsMatchTest, LeaksMatchTheirAllocationStack) {
  StackTable stacks = Stacks();
  ReportData::Leak leak;
  leak.stack = kLeakStack;
  EXPECT_EQ(ParseOk("leak:fun:InitCache").MatchLeak(leak, stacks), 0);
  EXPECT_EQ(ParseOk("*:InitCache").MatchLeak(leak, stacks), 0);
  EXPECT_EQ(ParseOk("oob-write:fun:InitCache").MatchLeak(leak, stacks), -1);
  leak.stack = kNoStack;
  EXPECT_EQ(ParseOk("leak:fun:?*").MatchLeak(leak, stacks), -1);
  // A bare '*' silences the whole kind, with or without names.
  EXPECT_EQ(ParseOk("leak:*").MatchLeak(leak, stacks), 0);
  EXPECT_EQ(ParseOk("*:**").MatchLeak(leak, stacks), 0);
}

TEST(SuggestSuppressionTest, InnermostProgramFunctionWithoutParameters) {
  StackTable stacks = Stacks();
  EXPECT_EQ(SuggestSuppression(ApiBounds(), stacks),
            "api-bounds:fun:ns::CopyHelper");
  ReportData::Leak leak;
  leak.stack = kLeakStack;
  EXPECT_EQ(SuggestSuppression(leak, stacks), "leak:fun:InitCache");
  leak.stack = kOtherLeakStack;  // no function name: the module
  EXPECT_EQ(SuggestSuppression(leak, stacks), "leak:mod:libthird.so");
  leak.stack = kNoStack;
  EXPECT_EQ(SuggestSuppression(leak, stacks), "leak:*");
}

TEST(SuggestSuppressionTest, GuardErrorsNameTheKernelOrTheAllocation) {
  StackTable stacks = Stacks();
  EXPECT_EQ(SuggestSuppression(GuardHit({"fill(float*, int)"}), stacks),
            "oob-write:kernel:fill");
  EXPECT_EQ(SuggestSuppression(GuardHit({"a()", "b()"}), stacks),
            "oob-write:fun:AllocWorkspace");
}

TEST(SuggestSuppressionTest, GlobCharactersInNamesStillMatch) {
  StackTable stacks;
  stacks[kErrorStack] = {
      {0x1, "Matrix::operator*(Matrix const&) const", "", 0, "app"}};
  ErrorRecord e = ApiBounds();
  e.allocation.reset();
  std::string rule = SuggestSuppression(e, stacks);
  EXPECT_EQ(rule, "api-bounds:fun:Matrix::operator?");
  EXPECT_EQ(ParseOk(rule).MatchError(e, stacks), 0);
}

TEST(SuggestSuppressionTest, EverySuggestionSilencesItsOwnRecord) {
  StackTable stacks = Stacks();
  for (const ErrorRecord& e :
       {ApiBounds(), GuardHit({"fill(float*)"}), GuardHit({"a()", "b()"})}) {
    std::string rule = SuggestSuppression(e, stacks);
    EXPECT_EQ(ParseOk(rule).MatchError(e, stacks), 0) << rule;
  }
}

ReportData MakeData() {
  ReportData d;
  d.pid = 7;
  d.stacks = Stacks();
  d.errors = {ApiBounds(), GuardHit({"fill(float*)"})};
  d.errors_dropped = 0;
  d.summary.errors = 2;
  ReportData::Leak a;
  a.api = Api::kCudaMalloc;
  a.kind = MemoryKind::kDevice;
  a.stack = kLeakStack;
  a.bytes = 3000;
  a.count = 3;
  ReportData::Leak b = a;
  b.stack = kOtherLeakStack;
  b.bytes = 100;
  b.count = 1;
  d.leaks = {a, b};
  d.summary.leaks = 4;
  d.summary.leaked_bytes = 3100;
  return d;
}

TEST(ApplySuppressionsTest, RemovesCountsAndSuggests) {
  ReportData d = MakeData();
  ApplySuppressions(
      ParseOk("oob-write:kernel:fill\nleak:fun:InitCache\nleak:fun:unused\n"),
      &d);
  ASSERT_EQ(d.errors.size(), 1u);
  EXPECT_EQ(d.errors[0].kind, ErrorKind::kApiBounds);
  EXPECT_EQ(d.errors[0].suppression, "api-bounds:fun:ns::CopyHelper");
  EXPECT_EQ(d.summary.errors, 1u);
  EXPECT_EQ(d.summary.suppressed_errors, 1u);
  ASSERT_EQ(d.leaks.size(), 1u);
  EXPECT_EQ(d.leaks[0].suppression, "leak:mod:libthird.so");
  EXPECT_EQ(d.summary.leaks, 1u);
  EXPECT_EQ(d.summary.leaked_bytes, 100u);
  EXPECT_EQ(d.summary.suppressed_leaks, 3u);
  ASSERT_EQ(d.suppressions.size(), 3u);
  EXPECT_EQ(d.suppressions[0].rule, "oob-write:kernel:fill");
  EXPECT_EQ(d.suppressions[0].hits, 1u);
  EXPECT_EQ(d.suppressions[1].hits, 1u);
  EXPECT_EQ(d.suppressions[2].hits, 0u);
  EXPECT_EQ(d.suppressions[2].line, 3);
}

TEST(ApplySuppressionsTest, NoRulesOnlySuggests) {
  ReportData d = MakeData();
  ApplySuppressions(Suppressions(), &d);
  EXPECT_EQ(d.errors.size(), 2u);
  EXPECT_EQ(d.summary.errors, 2u);
  EXPECT_EQ(d.summary.suppressed_errors, 0u);
  EXPECT_EQ(d.leaks.size(), 2u);
  EXPECT_TRUE(d.suppressions.empty());
  EXPECT_EQ(d.errors[1].suppression, "oob-write:kernel:fill");
}

TEST(ApplySuppressionsTest, JsonAndTextShowSuppressions) {
  ReportData d = MakeData();
  ApplySuppressions(ParseOk("leak:fun:InitCache\n"), &d);
  nlohmann::json j = nlohmann::json::parse(RenderJson(d));
  EXPECT_EQ(j["summary"]["suppressed_errors"], 0);
  EXPECT_EQ(j["summary"]["suppressed_leaks"], 3);
  EXPECT_EQ(j["summary"]["leaks"], 1);
  EXPECT_EQ(j["errors"][0]["suppression"], "api-bounds:fun:ns::CopyHelper");
  EXPECT_EQ(j["leaks"][0]["suppression"], "leak:mod:libthird.so");
  ASSERT_EQ(j["suppressions"].size(), 1u);
  EXPECT_EQ(j["suppressions"][0]["rule"], "leak:fun:InitCache");
  EXPECT_EQ(j["suppressions"][0]["file"], "test.supp");
  EXPECT_EQ(j["suppressions"][0]["line"], 1);
  EXPECT_EQ(j["suppressions"][0]["hits"], 1);

  std::string text = RenderText(d, 0);
  EXPECT_THAT(text, HasSubstr("==7==   to suppress: "
                              "api-bounds:fun:ns::CopyHelper\n"));
  EXPECT_THAT(text, HasSubstr("==7==   to suppress: leak:mod:libthird.so\n"));
  EXPECT_THAT(text, HasSubstr("suppressed: 0 errors, 3 leaked blocks"));
}

// The engine applies the file named by the option to its reports.
TEST(EngineSuppressionsTest, ExitReportLeavesSuppressedLeaksOut) {
  std::string path =
      absl::StrCat(::testing::TempDir(), "/engine_", getpid(), ".supp");
  // With symbolize=0 frames have no names: only '*' can match.
  std::ofstream(path) << "# all leaks are known\nleak:*\n";
  Options o;
  o.print_errors = false;
  o.symbolize = false;
  o.report = ReportFormats();  // report=none
  o.suppressions = path;
  Engine engine(o);
  AllocEvent e;
  e.api = Api::kCudaMalloc;
  e.address = 0x7f0000000000ull;
  e.bytes = 4096;
  e.device = 0;
  e.stack = engine.CaptureCallStack();
  engine.OnAlloc(e);
  ReportData d = engine.BuildReport("exit");
  EXPECT_EQ(d.summary.leaks, 0u);
  EXPECT_EQ(d.summary.suppressed_leaks, 1u);
  EXPECT_TRUE(d.leaks.empty());
  ASSERT_EQ(d.suppressions.size(), 1u);
  EXPECT_EQ(d.suppressions[0].line, 2);
  std::remove(path.c_str());
}

TEST(EngineSuppressionsTest, BadFileIsANoteAndNoRuleApplies) {
  std::string path =
      absl::StrCat(::testing::TempDir(), "/bad_", getpid(), ".supp");
  std::ofstream(path) << "leak:*\nnonsense\n";
  Options o;
  o.print_errors = false;
  o.symbolize = false;
  o.report = ReportFormats();  // report=none
  o.suppressions = path;
  Engine engine(o);
  AllocEvent e;
  e.api = Api::kCudaMalloc;
  e.address = 0x7f0000000000ull;
  e.bytes = 4096;
  e.device = 0;
  engine.OnAlloc(e);
  ReportData d = engine.BuildReport("exit");
  EXPECT_EQ(d.summary.leaks, 1u);
  EXPECT_EQ(d.summary.suppressed_leaks, 0u);
  const std::string expected =
      absl::StrCat("suppressions not applied: ", path, ":2: 'nonsense' is not");
  bool noted = false;
  for (const std::string& note : d.notes) {
    noted = noted || note.find(expected) != std::string::npos;
  }
  EXPECT_TRUE(noted) << expected;
  std::remove(path.c_str());
}

}  // namespace
}  // namespace gmt
