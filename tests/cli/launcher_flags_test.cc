// cli/launcher_flags.h: every `gpumemtrace run` flag, its GMT_OPTIONS
// setting, and the error for each way to get it wrong.
#include "cli/launcher_flags.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "lib/core/options.h"

namespace gmt::cli {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StartsWith;

RunPlan Plan(const std::vector<std::string>& args) {
  RunParse p = ParseRunFlags(args);
  EXPECT_TRUE(p.ok()) << p.error;
  return p.plan;
}

std::string Error(const std::vector<std::string>& args) {
  RunParse p = ParseRunFlags(args);
  EXPECT_FALSE(p.ok()) << "accepted: " << p.plan.OptionsText();
  return p.error;
}

// The options text the flags give, for `args` + {"--", "./app"}.
std::string Options(std::vector<std::string> args) {
  args.push_back("--");
  args.push_back("./app");
  return Plan(args).OptionsText();
}

TEST(LauncherFlagsTest, NoFlagsRunsTheProgramWithItsArguments) {
  RunPlan plan = Plan({"--", "./app", "--leak-check", "-o", "x", "--"});
  EXPECT_THAT(plan.program,
              ElementsAre("./app", "--leak-check", "-o", "x", "--"));
  EXPECT_EQ(plan.OptionsText(), "");
  EXPECT_FALSE(plan.help);
}

// --explain-faults and --keep-gpu-dump are the launcher's own: no
// GMT_OPTIONS setting.
TEST(LauncherFlagsTest, ExplainFaultsIsTheLaunchersOwnSwitch) {
  RunPlan plan = Plan({"--explain-faults", "--", "./app"});
  EXPECT_TRUE(plan.explain_faults);
  EXPECT_FALSE(plan.keep_gpu_dump);
  EXPECT_EQ(plan.OptionsText(), "");
  plan = Plan({"--explain-faults=yes", "--keep-gpu-dump", "--", "./app"});
  EXPECT_TRUE(plan.explain_faults);
  EXPECT_TRUE(plan.keep_gpu_dump);
  plan = Plan({"--explain-faults", "--no-explain-faults", "--", "./app"});
  EXPECT_FALSE(plan.explain_faults);
  EXPECT_THAT(Error({"--keep-gpu-dump", "--", "./app"}),
              HasSubstr("give both"));
  EXPECT_THAT(Error({"--explain-faults=maybe", "--", "./app"}),
              HasSubstr("is not yes or no"));
  EXPECT_THAT(Error({"--no-explain-faults=1", "--", "./app"}),
              HasSubstr("takes no value"));
}

TEST(LauncherFlagsTest, EveryFlagMapsOntoItsOption) {
  EXPECT_EQ(Options({"--leak-check"}), "leak_check=1");
  EXPECT_EQ(Options({"--leak-check=no"}), "leak_check=0");
  EXPECT_EQ(Options({"--no-leak-check"}), "leak_check=0");
  EXPECT_EQ(Options({"--guard"}), "guard=1");
  EXPECT_EQ(Options({"--guard=off"}), "guard=0");
  EXPECT_EQ(Options({"--guard=YES"}), "guard=1");
  EXPECT_EQ(Options({"--no-guard"}), "guard=0");
  EXPECT_EQ(Options({"--torch"}), "torch=1");
  EXPECT_EQ(Options({"--torch=no"}), "torch=0");
  EXPECT_EQ(Options({"--check", "kernel"}), "check=kernel");
  EXPECT_EQ(Options({"--check=exit"}), "check=exit");
  EXPECT_EQ(Options({"--report", "json"}), "report=json");
  EXPECT_EQ(Options({"--report=text,json"}), "report=text,json");
  EXPECT_EQ(Options({"-o", "r.%p.json"}), "report_path=r.%p.json");
  EXPECT_EQ(Options({"--output", "/tmp/r.json"}), "report_path=/tmp/r.json");
  EXPECT_EQ(Options({"--output=out.json"}), "report_path=out.json");
  EXPECT_EQ(Options({"--error-exitcode", "42"}), "exitcode=42");
  EXPECT_EQ(Options({"--error-exitcode=0"}), "exitcode=0");
  EXPECT_EQ(Options({"--option", "stack_depth=32"}), "stack_depth=32");
  EXPECT_EQ(Options({"-O", "verbosity=1"}), "verbosity=1");
  EXPECT_EQ(Options({"--option=max_leaks=0"}), "max_leaks=0");
}

TEST(LauncherFlagsTest, FlagsOwnedByOtherFeaturesMapToo) {
  EXPECT_EQ(Options({"--suppressions", "ci.supp"}), "suppressions=ci.supp");
  EXPECT_EQ(Options({"--report", "html"}), "report=html");
}

TEST(LauncherFlagsTest, SettingsKeepCommandLineOrderSoLaterWins) {
  RunPlan plan = Plan({"--guard", "--check", "sync", "--no-guard", "-O",
                       "check=kernel", "--", "app"});
  EXPECT_EQ(plan.OptionsText(), "guard=1:check=sync:guard=0:check=kernel");
  ParseResult parsed = ParseOptions(plan.OptionsText());
  EXPECT_TRUE(parsed.errors.empty());
  EXPECT_FALSE(parsed.options.guard);
  EXPECT_EQ(parsed.options.check, CheckLevel::kKernel);
  ASSERT_EQ(plan.settings.size(), 4u);
  EXPECT_EQ(plan.settings[1].flag, "--check sync");
  EXPECT_EQ(plan.settings[2].flag, "--no-guard");
}

TEST(LauncherFlagsTest, Help) {
  EXPECT_TRUE(Plan({"--help"}).help);
  EXPECT_TRUE(Plan({"-h"}).help);
  EXPECT_TRUE(Plan({"--check", "sync", "--help", "--bogus"}).help);
  // After "--" it is the program's flag.
  EXPECT_FALSE(Plan({"--", "./app", "--help"}).help);
}

TEST(LauncherFlagsTest, TheSeparatorAndTheProgramAreRequired) {
  EXPECT_THAT(Error({}), HasSubstr("missing '--'"));
  EXPECT_THAT(Error({"./app"}), HasSubstr("missing '--' before the program"));
  EXPECT_THAT(Error({"./app"}), HasSubstr("-- ./app"));
  EXPECT_THAT(Error({"--guard", "./app", "x"}), HasSubstr("missing '--'"));
  EXPECT_THAT(Error({"--guard"}), HasSubstr("missing '--'"));
  EXPECT_EQ(Error({"--"}), "no program after '--'");
  EXPECT_THAT(Error({"--", ""}), HasSubstr("empty"));
  EXPECT_THAT(Error({"-"}), HasSubstr("missing '--'"));
}

TEST(LauncherFlagsTest, UnknownFlagsAreNamed) {
  EXPECT_EQ(Error({"--bogus", "--", "a"}), "unknown flag '--bogus'");
  EXPECT_EQ(Error({"--bogus=1", "--", "a"}), "unknown flag '--bogus'");
  EXPECT_EQ(Error({"-x", "--", "a"}), "unknown flag '-x'");
  EXPECT_EQ(Error({"--no-check", "--", "a"}), "unknown flag '--no-check'");
  EXPECT_EQ(Error({"--no-report", "--", "a"}), "unknown flag '--no-report'");
  EXPECT_EQ(Error({"---", "--", "a"}), "unknown flag '---'");
}

TEST(LauncherFlagsTest, MissingValues) {
  EXPECT_EQ(Error({"--check"}), "--check needs a value");
  EXPECT_EQ(Error({"--check", "--", "a"}), "--check needs a value");
  EXPECT_EQ(Error({"-o", "--", "a"}), "-o needs a value");
  EXPECT_EQ(Error({"--error-exitcode"}), "--error-exitcode needs a value");
  EXPECT_EQ(Error({"--option"}), "--option needs a value (KEY=VALUE)");
}

TEST(LauncherFlagsTest, BadValuesGetTheLibrarysMessageNamingTheFlag) {
  EXPECT_EQ(Error({"--check", "always", "--", "a"}),
            "--check always: option 'check': 'always' unknown value 'always' "
            "(expected none, exit, sync or kernel)");
  EXPECT_THAT(Error({"--error-exitcode", "300", "--", "a"}),
              StartsWith("--error-exitcode 300: option 'exitcode'"));
  EXPECT_THAT(Error({"--error-exitcode", "300", "--", "a"}),
              HasSubstr("between 0 and 255"));
  EXPECT_THAT(Error({"--error-exitcode=-1", "--", "a"}),
              HasSubstr("between 0 and 255"));
  EXPECT_THAT(Error({"--error-exitcode", "three", "--", "a"}),
              HasSubstr("'three' is not an integer"));
  EXPECT_THAT(Error({"--report", "pdf", "--", "a"}),
              StartsWith("--report pdf: option 'report'"));
  EXPECT_THAT(Error({"--guard=maybe", "--", "a"}),
              HasSubstr("'maybe' is not yes or no"));
  EXPECT_EQ(Error({"--no-guard=1", "--", "a"}), "--no-guard takes no value");
  EXPECT_THAT(Error({"-O", "stack_depth=100", "--", "a"}),
              StartsWith("-O stack_depth=100: option 'stack_depth'"));
  // The message says the launcher refuses; the library's "keeping the
  // default" is dropped.
  EXPECT_THAT(Error({"-O", "stack_depth=100", "--", "a"}),
              ::testing::Not(HasSubstr("keeping")));
}

TEST(LauncherFlagsTest, OptionNeedsAKnownKeyAndAValue) {
  EXPECT_THAT(Error({"--option", "verbosity", "--", "a"}),
              HasSubstr("expected KEY=VALUE"));
  EXPECT_THAT(Error({"--option", "=1", "--", "a"}),
              HasSubstr("expected KEY=VALUE"));
  EXPECT_THAT(Error({"--option", "a-b=1", "--", "a"}),
              HasSubstr("expected KEY=VALUE"));
  EXPECT_EQ(Error({"--option", "colour=red", "--", "a"}),
            "--option colour=red: this build's library has no option "
            "'colour' (`gpumemtrace --help-options` lists them)");
}

TEST(LauncherFlagsTest, ValuesCannotCarryTheSeparator) {
  EXPECT_THAT(Error({"-o", "C:/r.json", "--", "a"}), HasSubstr("contains ':'"));
  EXPECT_THAT(Error({"-O", "report_path=a:b", "--", "a"}),
              HasSubstr("contains ':'"));
  EXPECT_THAT(Error({"-o", "a\nb", "--", "a"}), HasSubstr("line break"));
}

TEST(LauncherFlagsTest, ValuesAreCheckedTogetherToo) {
  // Each is fine alone; together the tail minimum exceeds the maximum.
  EXPECT_THAT(Error({"-O", "guard_tail_max=4096", "-O", "guard_tail_min=8192",
                     "--", "a"}),
              StartsWith("the flags together: option 'guard_tail_max'"));
}

TEST(LauncherFlagsTest, AcceptedFlagsAlwaysParseCleanly) {
  RunPlan plan = Plan({"--leak-check", "--no-guard", "--check", "kernel",
                       "--report", "json", "-o", "r.json", "--error-exitcode",
                       "3", "-O", "verbosity=2", "--", "app"});
  ParseResult parsed = ParseOptions(plan.OptionsText());
  EXPECT_TRUE(parsed.errors.empty());
  EXPECT_EQ(parsed.options.exitcode, 3);
  EXPECT_EQ(parsed.options.report_path, "r.json");
  EXPECT_EQ(parsed.options.verbosity, 2);
}

TEST(MergeOptionsTest, UserOptionsComeFirstSoFlagsWin) {
  EXPECT_EQ(MergeOptions("", "guard=0"), "guard=0");
  EXPECT_EQ(MergeOptions("verbosity=1", ""), "verbosity=1");
  EXPECT_EQ(MergeOptions("guard=1:verbosity=1", "guard=0"),
            "guard=1:verbosity=1:guard=0");
  EXPECT_EQ(MergeOptions(" check=exit: ", "check=sync"),
            "check=exit:check=sync");
  EXPECT_EQ(
      ParseOptions(MergeOptions("check=exit", "check=sync")).options.check,
      CheckLevel::kSync);
}

TEST(MergePreloadTest, LibraryFirstAndOnce) {
  EXPECT_EQ(MergePreload("/l/libgpumemtrace.so", ""), "/l/libgpumemtrace.so");
  EXPECT_EQ(MergePreload("/l/libgpumemtrace.so", "libjemalloc.so"),
            "/l/libgpumemtrace.so:libjemalloc.so");
  EXPECT_EQ(MergePreload("/l/libgpumemtrace.so", "a.so /l/libgpumemtrace.so"),
            "a.so /l/libgpumemtrace.so");
  EXPECT_EQ(MergePreload("/l/libgpumemtrace.so", "  "), "/l/libgpumemtrace.so");
}

}  // namespace
}  // namespace gmt::cli
