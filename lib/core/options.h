// GMT_OPTIONS: the tool's run-time settings.
//
// Parsed once at start-up from the environment variable GMT_OPTIONS, ASan
// style: `key=value` pairs separated by ':' (e.g.
// `report=json:report_path=gmt.%p.json`). A bad key or value is reported by
// name and that key keeps its default; the other keys still apply. The list of
// keys is options.inc; the keys that take words hold typed values
// (option_values.h), so what reads an option never parses it again:
//
//   if (options.report.Has(ReportFormat::kJson)) ...;
//   if (options.check >= CheckLevel::kSync) ...;
#ifndef GMT_LIB_CORE_OPTIONS_H_
#define GMT_LIB_CORE_OPTIONS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "lib/core/option_values.h"

namespace gmt {

struct Options {
#define GMT_OPTION(Type, Name, Default, Description) Type Name = Default;
#include "lib/core/options.inc"
#undef GMT_OPTION
};

struct ParseResult {
  Options options;
  // One message per rejected key or value, each naming the key.
  std::vector<std::string> errors;
};

// Parses a GMT_OPTIONS string. Never fails as a whole: bad pieces are listed in
// `errors` and leave their keys at the defaults.
ParseResult ParseOptions(absl::string_view text);

// Bytes of a held freed block poisoned and checked, as freed_check_bytes
// resolves (0: all of them): its own value, or for -1 (the default) 0 in
// general and kTensorModeFreedCheckBytes with torch=1.
inline constexpr int64_t kTensorModeFreedCheckBytes = int64_t{4} << 20;
int64_t FreedCheckBytes(const Options& options);

// "key  default  description" lines for every option, for help output.
std::string OptionsHelp();

// Expands %p (pid), %r (rank from the job launcher's environment, "0" when
// none; lib/core/launcher_rank.h), %h (host name) and %% in a report path. Any
// other '%' is kept as is.
std::string ExpandPath(absl::string_view pattern, int pid);

// The process-wide options, parsed from the environment on first use.
// Thread-safe.
const Options& GlobalOptions();

}  // namespace gmt

#endif  // GMT_LIB_CORE_OPTIONS_H_
