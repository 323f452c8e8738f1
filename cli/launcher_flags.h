// `gpumemtrace run` flags -> what to run and which GMT_OPTIONS to add.
//
// Pure functions of their arguments (no environment, no exec), so every flag
// and every error message is unit-tested (tests/cli/launcher_flags_test.cc)
// and fuzzed (tests/fuzz/launcher_flags_fuzz.cc). cli/run_command.cc does
// the rest: finds the library, sets the environment, exec()s.
//
//   gpumemtrace run [FLAGS] -- PROGRAM [ARGS...]
//
// Every flag but the launcher's own (--explain-faults, --keep-gpu-dump) is
// one GMT_OPTIONS key (lib/core/options.inc); the values are checked by the
// library's own ParseOptions(), so a bad value is refused here, before the
// program starts, with the library's message.
#ifndef GMT_CLI_LAUNCHER_FLAGS_H_
#define GMT_CLI_LAUNCHER_FLAGS_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace gmt::cli {

// One GMT_OPTIONS setting and the flag that asked for it (for messages).
struct OptionSetting {
  std::string key;
  std::string value;
  std::string flag;  // "--error-exitcode 3", "--option verbosity=1"
};

struct RunPlan {
  // Set by -h / --help: print the usage of `run` and exit 0; nothing else
  // in the plan is meaningful.
  bool help = false;
  // The traced program and its arguments (everything after "--").
  std::vector<std::string> program;
  // In command-line order; later ones win, as in GMT_OPTIONS.
  std::vector<OptionSetting> settings;
  // --explain-faults: the driver writes a lightweight GPU core dump at a GPU
  // exception and aborts the program; the launcher, which then waits for the
  // program instead of becoming it, reads the dump and prints what it says
  // (cli/explain_faults.h). --keep-gpu-dump keeps the dump afterwards.
  bool explain_faults = false;
  bool keep_gpu_dump = false;

  // "key=value:key=value", to append to the user's GMT_OPTIONS.
  std::string OptionsText() const;
};

struct RunParse {
  RunPlan plan;
  // Empty on success; else one sentence naming the flag ("--check: 'always'
  // is not ..."), printed after the usage line.
  std::string error;
  bool ok() const { return error.empty(); }
};

// Parses the arguments of `gpumemtrace run` (argv without "gpumemtrace" and
// "run"). Checks the values with the library's option parser.
RunParse ParseRunFlags(const std::vector<std::string>& args);

// GMT_OPTIONS for the traced program: the user's (kept) then the flags'
// (appended, so they win).
std::string MergeOptions(absl::string_view user_options,
                         absl::string_view flag_options);

// LD_PRELOAD for the traced program: the library first, then the user's.
std::string MergePreload(absl::string_view library,
                         absl::string_view user_preload);

}  // namespace gmt::cli

#endif  // GMT_CLI_LAUNCHER_FLAGS_H_
