// gpumemtrace: the launcher. Dispatches to the subcommands of commands.h.
#include <cstdio>
#include <string>

#include "absl/strings/str_cat.h"
#include "cli/commands.h"
#include "cli/usage.h"
#include "lib/core/options.h"

namespace gmt::cli {
namespace {

#ifndef GMT_VERSION
#define GMT_VERSION "unknown"
#endif

// `gpumemtrace help [COMMAND]`.
int Help(int argc, char** argv) {
  if (argc < 2) {
    std::fputs(MainUsage().c_str(), stdout);
    return 0;
  }
  const std::string topic = argv[1];
  if (topic == "run") {
    std::fputs(RunUsage().c_str(), stdout);
  } else if (topic == "report") {
    std::fputs(ReportUsage().c_str(), stdout);
  } else if (topic == "explain-dump") {
    std::fputs(ExplainDumpUsage().c_str(), stdout);
  } else if (topic == "options") {
    std::fputs(OptionsHelp().c_str(), stdout);
  } else if (topic == "health" || topic == "memtest") {
    // Their pages belong to them: `gpumemtrace health --help`.
    char help_flag[] = "--help";
    char* sub_argv[] = {argv[1], help_flag, nullptr};
    return topic == "health" ? HealthMain(2, sub_argv)
                             : MemtestMain(2, sub_argv);
  } else {
    return UsageError("", absl::StrCat("no help for '", topic,
                                       "' (commands: run, report, health, "
                                       "memtest, explain-dump)"));
  }
  return 0;
}

}  // namespace
}  // namespace gmt::cli

int main(int argc, char** argv) {
  using namespace gmt::cli;
  if (argc < 2) return UsageError("", "no command given");
  const std::string command = argv[1];
  if (command == "-h" || command == "--help") return Help(1, argv + 1);
  if (command == "help") return Help(argc - 1, argv + 1);
  if (command == "--help-options") {
    std::fputs(gmt::OptionsHelp().c_str(), stdout);
    return 0;
  }
  if (command == "--version") {
    std::printf("gpumemtrace %s\n", GMT_VERSION);
    return 0;
  }
  if (command == "run") return RunMain(argc - 1, argv + 1);
  if (command == "report") return ReportMain(argc - 1, argv + 1);
  if (command == "health") return HealthMain(argc - 1, argv + 1);
  if (command == "memtest") return MemtestMain(argc - 1, argv + 1);
  if (command == "explain-dump") return ExplainDumpMain(argc - 1, argv + 1);
  if (!command.empty() && command[0] == '-') {
    return UsageError("", absl::StrCat("unknown flag '", command, "'"));
  }
  return UsageError("", absl::StrCat("unknown command '", command, "'"));
}
