// GMT_OPTIONS parsing: defaults, every key, bad values, ranges, path expansion.
#include "lib/core/options.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gmt {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;

// The defaults options.inc documents.
TEST(OptionsTest, Defaults) {
  const Options o;
  EXPECT_TRUE(o.enabled);
  EXPECT_EQ(o.report, ReportFormats{ReportFormat::kText});
  EXPECT_EQ(o.report_path, "");
  EXPECT_TRUE(o.leak_check);
  EXPECT_EQ(o.stack_depth, 16);
  EXPECT_EQ(o.freed_history, 65536);
  EXPECT_TRUE(o.symbolize);
  EXPECT_TRUE(o.print_errors);
  EXPECT_FALSE(o.halt_on_error);
  EXPECT_EQ(o.exitcode, 0);
  EXPECT_EQ(o.max_leaks, 50);
  EXPECT_EQ(o.verbosity, 0);
  EXPECT_TRUE(o.report.Has(ReportFormat::kText));
  EXPECT_FALSE(o.report.Has(ReportFormat::kJson));
  EXPECT_EQ(o.check, CheckLevel::kSync);
  EXPECT_TRUE(o.guard_skip.empty());
  EXPECT_EQ(o.cupti, CuptiMode::kAuto);
  EXPECT_EQ(o.cupti_kernels, CuptiMode::kAuto);
  EXPECT_EQ(o.cupti_activity, CuptiMode::kAuto);
  EXPECT_EQ(o.crash_signals, FatalSignals::All());
}

TEST(OptionsTest, EmptyStringGivesDefaultsAndNoErrors) {
  ParseResult r = ParseOptions("");
  EXPECT_THAT(r.errors, IsEmpty());
  EXPECT_EQ(r.options.stack_depth, 16);
  EXPECT_EQ(r.options.report, ReportFormats{ReportFormat::kText});
}

TEST(OptionsTest, EveryKeyParses) {
  ParseResult r = ParseOptions(
      "enabled=0:report=json:report_path=/tmp/r.%p.json:leak_check=0:"
      "stack_depth=8:freed_history=10:symbolize=0:print_errors=0:"
      "halt_on_error=1:exitcode=42:max_leaks=7:verbosity=2");
  EXPECT_THAT(r.errors, IsEmpty());
  const Options& o = r.options;
  EXPECT_FALSE(o.enabled);
  EXPECT_EQ(o.report, ReportFormats{ReportFormat::kJson});
  EXPECT_EQ(o.report_path, "/tmp/r.%p.json");
  EXPECT_FALSE(o.leak_check);
  EXPECT_EQ(o.stack_depth, 8);
  EXPECT_EQ(o.freed_history, 10);
  EXPECT_FALSE(o.symbolize);
  EXPECT_FALSE(o.print_errors);
  EXPECT_TRUE(o.halt_on_error);
  EXPECT_EQ(o.exitcode, 42);
  EXPECT_EQ(o.max_leaks, 7);
  EXPECT_EQ(o.verbosity, 2);
}

TEST(OptionsTest, BoolSpellings) {
  for (const char* v : {"1", "true", "yes"}) {
    ParseResult r = ParseOptions(absl::StrCat("halt_on_error=", v));
    EXPECT_THAT(r.errors, IsEmpty()) << v;
    EXPECT_TRUE(r.options.halt_on_error) << v;
  }
  for (const char* v : {"0", "false", "no"}) {
    ParseResult r = ParseOptions(absl::StrCat("leak_check=", v));
    EXPECT_THAT(r.errors, IsEmpty()) << v;
    EXPECT_FALSE(r.options.leak_check) << v;
  }
}

TEST(OptionsTest, BadBoolKeepsDefaultAndNamesTheKey) {
  ParseResult r = ParseOptions("leak_check=maybe:stack_depth=4");
  ASSERT_THAT(r.errors, SizeIs(1));
  EXPECT_THAT(r.errors[0], HasSubstr("leak_check"));
  EXPECT_THAT(r.errors[0], HasSubstr("maybe"));
  EXPECT_TRUE(r.options.leak_check);
  // The other keys still apply.
  EXPECT_EQ(r.options.stack_depth, 4);
}

TEST(OptionsTest, BadIntKeepsDefaultAndNamesTheKey) {
  for (const char* v : {"abc", "12abc", "", "1.5", "99999999999999999999999"}) {
    ParseResult r = ParseOptions(absl::StrCat("max_leaks=", v));
    ASSERT_THAT(r.errors, SizeIs(1)) << "'" << v << "'";
    EXPECT_THAT(r.errors[0], HasSubstr("max_leaks")) << v;
    EXPECT_EQ(r.options.max_leaks, 50) << v;
  }
}

TEST(OptionsTest, UnknownKeyIsNamed) {
  ParseResult r = ParseOptions("stack_depht=3:verbosity=1");
  ASSERT_THAT(r.errors, SizeIs(1));
  EXPECT_THAT(r.errors[0], HasSubstr("stack_depht"));
  EXPECT_EQ(r.options.stack_depth, 16);
  EXPECT_EQ(r.options.verbosity, 1);
}

TEST(OptionsTest, PieceWithoutValueIsAnError) {
  ParseResult r = ParseOptions("symbolize");
  ASSERT_THAT(r.errors, SizeIs(1));
  EXPECT_THAT(r.errors[0], HasSubstr("symbolize"));
  EXPECT_TRUE(r.options.symbolize);
}

TEST(OptionsTest, Ranges) {
  struct Case {
    const char* text;
    const char* key;
  };
  for (const Case& c : std::vector<Case>{
           {"stack_depth=65", "stack_depth"},
           {"stack_depth=-1", "stack_depth"},
           {"freed_history=16777217", "freed_history"},
           {"freed_history=-5", "freed_history"},
           {"exitcode=256", "exitcode"},
           {"exitcode=-1", "exitcode"},
           {"verbosity=3", "verbosity"},
           {"max_leaks=-1", "max_leaks"},
           {"freed_check_bytes=-2", "freed_check_bytes"},
           {"freed_check_bytes=1099511627777", "freed_check_bytes"}}) {
    ParseResult r = ParseOptions(c.text);
    ASSERT_THAT(r.errors, SizeIs(1)) << c.text;
    EXPECT_THAT(r.errors[0], HasSubstr(c.key)) << c.text;
  }
  EXPECT_EQ(ParseOptions("stack_depth=65").options.stack_depth, 16);
  EXPECT_EQ(ParseOptions("exitcode=256").options.exitcode, 0);

  // The ends of each range are accepted.
  ParseResult ok = ParseOptions(
      "stack_depth=64:freed_history=16777216:exitcode=255:verbosity=0");
  EXPECT_THAT(ok.errors, IsEmpty());
  EXPECT_EQ(ok.options.stack_depth, 64);
  EXPECT_EQ(ok.options.freed_history, 16777216);
  EXPECT_EQ(ok.options.exitcode, 255);
  EXPECT_THAT(ParseOptions("stack_depth=0:freed_history=0").errors, IsEmpty());
  EXPECT_EQ(
      ParseOptions("freed_check_bytes=1099511627776").options.freed_check_bytes,
      int64_t{1} << 40);
}

// freed_check_bytes=-1 (the default) resolves by the mode: every freed byte,
// or a bounded part of each large freed tensor in tensor mode.
TEST(OptionsTest, FreedCheckBytesResolvesByTheMode) {
  EXPECT_EQ(ParseOptions("").options.freed_check_bytes, -1);
  EXPECT_EQ(FreedCheckBytes(ParseOptions("").options), 0);
  EXPECT_EQ(FreedCheckBytes(ParseOptions("torch=1").options),
            kTensorModeFreedCheckBytes);
  EXPECT_EQ(
      FreedCheckBytes(ParseOptions("torch=1:freed_check_bytes=0").options), 0);
  EXPECT_EQ(
      FreedCheckBytes(ParseOptions("torch=1:freed_check_bytes=4096").options),
      4096);
  EXPECT_EQ(FreedCheckBytes(ParseOptions("freed_check_bytes=8192").options),
            8192);
  EXPECT_THAT(ParseOptions("freed_check_bytes=-1").errors, IsEmpty());
}

TEST(OptionsTest, ReportFormats) {
  ParseResult both = ParseOptions("report=text,json");
  EXPECT_THAT(both.errors, IsEmpty());
  EXPECT_TRUE(both.options.report.Has(ReportFormat::kText));
  EXPECT_TRUE(both.options.report.Has(ReportFormat::kJson));

  ParseResult json = ParseOptions("report=json");
  EXPECT_FALSE(json.options.report.Has(ReportFormat::kText));
  EXPECT_TRUE(json.options.report.Has(ReportFormat::kJson));

  ParseResult none = ParseOptions("report=none");
  EXPECT_THAT(none.errors, IsEmpty());
  EXPECT_FALSE(none.options.report.Has(ReportFormat::kText));
  EXPECT_FALSE(none.options.report.Has(ReportFormat::kJson));
  EXPECT_TRUE(none.options.report.empty());

  for (const char* bad :
       {"report=xml", "report=text,xml", "report=", "report=text,"}) {
    ParseResult r = ParseOptions(bad);
    ASSERT_THAT(r.errors, SizeIs(1)) << bad;
    EXPECT_THAT(r.errors[0], HasSubstr("report")) << bad;
    EXPECT_EQ(r.options.report, ReportFormats{ReportFormat::kText}) << bad;
  }
}

TEST(OptionsTest, WhitespaceAndEmptyPieces) {
  ParseResult r =
      ParseOptions("  stack_depth = 8 ::: report = json :  :verbosity=1:");
  EXPECT_THAT(r.errors, IsEmpty()) << absl::StrJoin(r.errors, "\n");
  EXPECT_EQ(r.options.stack_depth, 8);
  EXPECT_EQ(r.options.report, ReportFormats{ReportFormat::kJson});
  EXPECT_EQ(r.options.verbosity, 1);
}

TEST(OptionsTest, SeveralErrorsAreAllReported) {
  ParseResult r = ParseOptions("bogus=1:stack_depth=100:report=xml:enabled=2");
  EXPECT_THAT(r.errors, SizeIs(4));
  std::string all = absl::StrJoin(r.errors, "\n");
  EXPECT_THAT(all, HasSubstr("bogus"));
  EXPECT_THAT(all, HasSubstr("stack_depth"));
  EXPECT_THAT(all, HasSubstr("report"));
  EXPECT_THAT(all, HasSubstr("enabled"));
  EXPECT_TRUE(r.options.enabled);
}

TEST(OptionsTest, HelpListsEveryKey) {
  std::string help = OptionsHelp();
  for (const char* key :
       {"enabled", "report", "report_path", "leak_check", "stack_depth",
        "freed_history", "symbolize", "print_errors", "halt_on_error",
        "exitcode", "max_leaks", "verbosity"}) {
    EXPECT_THAT(help, HasSubstr(absl::StrCat("  ", key, "="))) << key;
  }
  EXPECT_THAT(help, HasSubstr("stack_depth=16"));
}

// ---- Typed values (lib/core/option_values.h) ----

template <typename Enum>
std::vector<std::string> Spellings() {
  std::vector<std::string> out;
  for (const OptionValueName<Enum>& n : OptionValues<Enum>::kNames) {
    out.emplace_back(n.name);
  }
  return out;
}

// The external spellings are what users' GMT_OPTIONS and the launcher's flags
// write: they never change.
TEST(OptionValuesTest, SpellingsAreTheDocumentedOnes) {
  EXPECT_THAT(Spellings<CheckLevel>(),
              ElementsAre("none", "exit", "sync", "kernel"));
  EXPECT_THAT(Spellings<CuptiMode>(), ElementsAre("auto", "on", "off"));
  EXPECT_THAT(Spellings<ReportFormat>(),
              ElementsAre("text", "json", "html", "trace", "torch"));
  EXPECT_THAT(Spellings<GuardFamily>(),
              ElementsAre("device", "pitched", "managed", "async"));
  EXPECT_THAT(Spellings<FatalSignal>(),
              ElementsAre("SEGV", "BUS", "ABRT", "FPE", "ILL"));
}

// Each value parses from its name and writes back the same name, alone and
// as a one-element list.
template <typename Enum>
void ExpectEveryValueRoundTrips() {
  for (const OptionValueName<Enum>& n : OptionValues<Enum>::kNames) {
    std::string why;
    for (const OptionValueName<Enum>& start : OptionValues<Enum>::kNames) {
      Enum parsed = start.value;
      EXPECT_TRUE(ParseOptionValue(n.name, &parsed, &why)) << n.name << why;
      EXPECT_EQ(parsed, n.value) << n.name;
    }
    EXPECT_EQ(OptionValueText(n.value), n.name);
  }
}

template <typename Enum>
void ExpectEveryListRoundTrips() {
  ExpectEveryValueRoundTrips<Enum>();
  std::string why;
  for (const OptionValueName<Enum>& n : OptionValues<Enum>::kNames) {
    OptionSet<Enum> one;
    ASSERT_TRUE(ParseOptionValue(n.name, &one, &why)) << n.name << why;
    EXPECT_EQ(one, OptionSet<Enum>{n.value}) << n.name;
    EXPECT_EQ(OptionValueText(one), n.name);
  }
  for (const OptionSet<Enum> set :
       {OptionSet<Enum>(), OptionSet<Enum>::All()}) {
    OptionSet<Enum> back{OptionValues<Enum>::kNames[0].value};
    ASSERT_TRUE(ParseOptionValue(OptionValueText(set), &back, &why)) << why;
    EXPECT_EQ(back, set) << OptionValueText(set);
  }
}

TEST(OptionValuesTest, EveryValueRoundTrips) {
  ExpectEveryValueRoundTrips<CheckLevel>();
  ExpectEveryValueRoundTrips<CuptiMode>();
  ExpectEveryListRoundTrips<ReportFormat>();
  ExpectEveryListRoundTrips<GuardFamily>();
  ExpectEveryListRoundTrips<FatalSignal>();
}

TEST(OptionValuesTest, ListsAreSetsWrittenInTableOrder) {
  ReportFormats formats;
  std::string why;
  ASSERT_TRUE(ParseOptionValue("torch,json,text,json", &formats, &why));
  EXPECT_EQ(formats, ReportFormats({ReportFormat::kText, ReportFormat::kJson,
                                    ReportFormat::kTorch}));
  EXPECT_EQ(OptionValueText(formats), "text,json,torch");
  EXPECT_EQ(OptionValueText(FatalSignals::All()), "SEGV,BUS,ABRT,FPE,ILL");
  EXPECT_EQ(OptionValueText(ReportFormats()), "none");
  EXPECT_EQ(OptionValueText(GuardFamilies()), "");
  EXPECT_EQ(OptionValueText(GuardFamily::kNone), "");  // no option spells it
}

// Each key of a typed value, through GMT_OPTIONS.
TEST(OptionsTest, EveryEnumeratedValueParsesByKey) {
  for (const auto& [value, name] : OptionValues<CheckLevel>::kNames) {
    ParseResult r = ParseOptions(absl::StrCat("check=", name));
    EXPECT_THAT(r.errors, IsEmpty()) << name;
    EXPECT_EQ(r.options.check, value);
  }
  for (const auto& [value, name] : OptionValues<CuptiMode>::kNames) {
    ParseResult r = ParseOptions(absl::StrCat(
        "cupti=", name, ":cupti_kernels=", name, ":cupti_activity=", name));
    EXPECT_THAT(r.errors, IsEmpty()) << name;
    EXPECT_EQ(r.options.cupti, value);
    EXPECT_EQ(r.options.cupti_kernels, value);
    EXPECT_EQ(r.options.cupti_activity, value);
  }
  for (const auto& [value, name] : OptionValues<ReportFormat>::kNames) {
    ParseResult r = ParseOptions(absl::StrCat("report=", name));
    EXPECT_THAT(r.errors, IsEmpty()) << name;
    EXPECT_EQ(r.options.report, ReportFormats{value});
  }
  for (const auto& [value, name] : OptionValues<GuardFamily>::kNames) {
    ParseResult r = ParseOptions(absl::StrCat("guard_skip=", name));
    EXPECT_THAT(r.errors, IsEmpty()) << name;
    EXPECT_EQ(r.options.guard_skip, GuardFamilies{value});
  }
  for (const auto& [value, name] : OptionValues<FatalSignal>::kNames) {
    ParseResult r = ParseOptions(absl::StrCat("crash_signals=", name));
    EXPECT_THAT(r.errors, IsEmpty()) << name;
    EXPECT_EQ(r.options.crash_signals, FatalSignals{value});
  }
  ParseResult all = ParseOptions(
      "guard_skip=device,pitched,managed,async:report=text,json,html,trace,"
      "torch");
  EXPECT_THAT(all.errors, IsEmpty());
  EXPECT_EQ(all.options.guard_skip, GuardFamilies::All());
  EXPECT_EQ(all.options.report, ReportFormats::All());
}

// A bad value names the key (for lists, the bad element and what is
// accepted); that key keeps its default, the others still apply.
TEST(OptionsTest, BadEnumeratedValuesNameTheKeyAndKeepTheDefault) {
  struct Case {
    const char* text;
    std::vector<const char*> says;
  };
  for (const Case& c : std::vector<Case>{
           {"check=always",
            {"option 'check': 'always' unknown value 'always' (expected "
             "none, exit, sync or kernel); keeping the default"}},
           {"check=Sync", {"'check'", "'Sync'"}},  // spellings are exact
           {"cupti=ON", {"'cupti'", "expected auto, on or off"}},
           {"cupti_kernels=2", {"'cupti_kernels'", "expected auto, on or off"}},
           {"cupti_activity=", {"'cupti_activity'", "unknown value ''"}},
           {"report=text,xml",
            {"option 'report'", "unknown format 'xml'",
             "text, json, html, trace, torch; or none"}},
           {"report=text,none", {"option 'report'", "unknown format 'none'"}},
           {"guard_skip=device,host",
            {"option 'guard_skip'", "unknown family 'host'",
             "device, pitched, managed, async; empty for none"}},
           {"guard_skip=device,,async",
            {"option 'guard_skip'", "unknown family ''"}},
           {"guard_skip=none",
            {"option 'guard_skip'", "unknown family 'none'"}},
           {"crash_signals=SEGV,HUP",
            {"option 'crash_signals'", "unknown signal 'HUP'",
             "SEGV, BUS, ABRT, FPE, ILL"}},
           {"crash_signals=segv", {"unknown signal 'segv'"}},
       }) {
    ParseResult r = ParseOptions(absl::StrCat(c.text, ":verbosity=2"));
    ASSERT_THAT(r.errors, SizeIs(1)) << c.text;
    for (const char* part : c.says) {
      EXPECT_THAT(r.errors[0], HasSubstr(part)) << c.text;
    }
    const Options defaults;
    EXPECT_EQ(r.options.check, defaults.check) << c.text;
    EXPECT_EQ(r.options.cupti, defaults.cupti) << c.text;
    EXPECT_EQ(r.options.cupti_kernels, defaults.cupti_kernels) << c.text;
    EXPECT_EQ(r.options.cupti_activity, defaults.cupti_activity) << c.text;
    EXPECT_EQ(r.options.report, defaults.report) << c.text;
    EXPECT_EQ(r.options.guard_skip, defaults.guard_skip) << c.text;
    EXPECT_EQ(r.options.crash_signals, defaults.crash_signals) << c.text;
    EXPECT_EQ(r.options.verbosity, 2) << c.text;
  }
  // A bad value after a good one: the key is back at its default.
  ParseResult r = ParseOptions("check=exit:check=bogus");
  EXPECT_THAT(r.errors, SizeIs(1));
  EXPECT_EQ(r.options.check, CheckLevel::kSync);
}

// Empty lists and empty elements, as each list option has always taken them.
TEST(OptionsTest, EmptyListsAndElements) {
  ParseResult r = ParseOptions("guard_skip=:crash_signals=:report=none");
  EXPECT_THAT(r.errors, IsEmpty());
  EXPECT_TRUE(r.options.guard_skip.empty());
  EXPECT_TRUE(r.options.crash_signals.empty());
  EXPECT_TRUE(r.options.report.empty());
  // crash_signals skips empty elements; guard_skip and report refuse them
  // (BadEnumeratedValuesNameTheKeyAndKeepTheDefault, ReportFormats).
  ParseResult signals = ParseOptions("crash_signals=,SEGV,,ILL,");
  EXPECT_THAT(signals.errors, IsEmpty());
  EXPECT_EQ(signals.options.crash_signals,
            FatalSignals({FatalSignal::kSegv, FatalSignal::kIll}));
}

TEST(OptionsTest, HelpListsTheAcceptedValuesAndDefaultOfTypedKeys) {
  std::string help = OptionsHelp();
  EXPECT_THAT(help, HasSubstr("  check=sync  (none, exit, sync or kernel)\n"));
  EXPECT_THAT(help, HasSubstr("  cupti=auto  (auto, on or off)\n"));
  EXPECT_THAT(help, HasSubstr("  cupti_kernels=auto  (auto, on or off)\n"));
  EXPECT_THAT(help, HasSubstr("  cupti_activity=auto  (auto, on or off)\n"));
  EXPECT_THAT(help, HasSubstr("  report=text  (a comma-separated list of text, "
                              "json, html, trace, torch; or none)\n"));
  EXPECT_THAT(help, HasSubstr("  guard_skip=  (a comma-separated list of "
                              "device, pitched, managed, async; empty for "
                              "none)\n"));
  EXPECT_THAT(help, HasSubstr("  crash_signals=SEGV,BUS,ABRT,FPE,ILL  (a "
                              "comma-separated list of SEGV, BUS, ABRT, FPE, "
                              "ILL; empty for none)\n"));
}

TEST(OptionsTest, ExpandPath) {
  EXPECT_EQ(ExpandPath("gmt.%p.json", 1234), "gmt.1234.json");
  EXPECT_EQ(ExpandPath("%p", 7), "7");
  EXPECT_EQ(ExpandPath("a%%p", 7), "a%p");
  EXPECT_EQ(ExpandPath("100%%", 7), "100%");
  EXPECT_EQ(ExpandPath("%p-%p", 42), "42-42");
  EXPECT_EQ(ExpandPath("no-pattern", 1), "no-pattern");
  EXPECT_EQ(ExpandPath("", 1), "");
  // Unknown escapes and a trailing % are kept as they are.
  EXPECT_EQ(ExpandPath("%x%", 1), "%x%");
}

}  // namespace
}  // namespace gmt
