// Fuzz harness: `gpumemtrace run` flags (cli/launcher_flags.h).
//
// Input: the arguments after "run", one per line ('\n'-separated).
// Invariants:
//   1. ParseRunFlags never crashes, and gives exactly one of: help, an
//      error, or a plan with a program.
//   2. An error is one line, never empty, and never the library's "keeping
//      the default" (the launcher refuses; it keeps nothing).
//   3. A plan's program is exactly the arguments after the first "--", and
//      its GMT_OPTIONS text parses with no error in the library's own
//      parser, one setting per flag, no value holding ':'.
//   4. Merged after any user GMT_OPTIONS (the first input line, used as
//      such), the flags' settings win: the merged text parses to the same
//      values for every key the flags set as the flags' text alone.
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "cli/launcher_flags.h"
#include "lib/core/options.h"
#include "tests/fuzz/fuzz_harness.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> args = absl::StrSplit(text, '\n');
  const gmt::cli::RunParse parsed = gmt::cli::ParseRunFlags(args);
  const gmt::cli::RunPlan& plan = parsed.plan;

  if (!parsed.ok()) {
    GMT_FUZZ_CHECK(parsed.error.find('\n') == std::string::npos,
                   "multi-line error: %s", parsed.error.c_str());
    GMT_FUZZ_CHECK(
        parsed.error.find("keeping the default") == std::string::npos,
        "error keeps a default: %s", parsed.error.c_str());
    return 0;
  }
  if (plan.help) return 0;

  size_t sep = 0;
  while (sep < args.size() && args[sep] != "--") ++sep;
  GMT_FUZZ_CHECK(sep < args.size(), "accepted without '--'");
  const std::vector<std::string> after(args.begin() + sep + 1, args.end());
  GMT_FUZZ_CHECK(plan.program == after && !plan.program.empty() &&
                     !plan.program[0].empty(),
                 "program is not what follows '--' (%zu vs %zu arguments)",
                 plan.program.size(), after.size());
  GMT_FUZZ_CHECK(plan.settings.size() <= sep, "%zu settings from %zu flags",
                 plan.settings.size(), sep);
  for (const gmt::cli::OptionSetting& s : plan.settings) {
    GMT_FUZZ_CHECK(s.value.find(':') == std::string::npos,
                   "value with ':' accepted: %s", s.value.c_str());
  }
  const std::string options = plan.OptionsText();
  const gmt::ParseResult alone = gmt::ParseOptions(options);
  GMT_FUZZ_CHECK(alone.errors.empty(), "accepted flags give '%s': %s",
                 options.c_str(), alone.errors[0].c_str());

  const std::string user = args.empty() ? "" : args[0];
  const gmt::ParseResult merged =
      gmt::ParseOptions(gmt::cli::MergeOptions(user, options));
  for (const gmt::cli::OptionSetting& s : plan.settings) {
#define GMT_OPTION(Type, Name, Default, Description)                 \
  if (s.key == #Name) {                                              \
    GMT_FUZZ_CHECK(merged.options.Name == alone.options.Name,        \
                   "user GMT_OPTIONS won over the flag for " #Name); \
  }
#include "lib/core/options.inc"
#undef GMT_OPTION
  }
  return 0;
}
