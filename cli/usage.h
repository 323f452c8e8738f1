// The launcher's help texts (man-page style), one function per page.
#ifndef GMT_CLI_USAGE_H_
#define GMT_CLI_USAGE_H_

#include <string>

#include "absl/strings/string_view.h"

namespace gmt::cli {

// `gpumemtrace --help`: every subcommand.
std::string MainUsage();
// `gpumemtrace help run`, `gpumemtrace run --help`.
std::string RunUsage();
// `gpumemtrace help report`, `gpumemtrace report --help`.
std::string ReportUsage();
// `gpumemtrace help explain-dump`, `gpumemtrace explain-dump --help`.
std::string ExplainDumpUsage();
// The one-line synopsis of `command` ("" or unknown: of the launcher), printed
// before an error message.
std::string UsageLine(absl::string_view command);

// Prints "<UsageLine>\ngpumemtrace <command>: error: <message>\n" to stderr
// and returns 2 (bad usage).
int UsageError(absl::string_view command, absl::string_view message);

}  // namespace gmt::cli

#endif  // GMT_CLI_USAGE_H_
