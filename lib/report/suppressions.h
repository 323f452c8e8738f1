// Suppressions: rules that silence known errors and leaks (option
// `suppressions=FILE`), in the spirit of LSan and compute-sanitizer.
//
// The file holds one rule per line; blank lines and lines starting with '#'
// are ignored:
//
//   # a known overrun in a vendor library, and its allocations' leaks
//   oob-write:mod:libvendor.so
//   leak:fun:InitWorkspace
//   *:src:*/third_party/*
//   oob-write:kernel:fill_overrun
//   api-bounds:MyCopyHelper*
//
// `<kind>:<pattern>`: kind is an error kind of the JSON report
// (oob-write, oob-underflow, uaf-write, double-free, invalid-free, api-bounds,
// oom, api-mismatch), `leak`, or `*` (everything). The pattern is a glob (`*`
// any run of characters, `?` one character) matched against the whole of a
// field; with a prefix it looks at one field only:
//   fun:     the demangled function, with or without its parameter list
//   src:     the source file, full path or basename
//   mod:     the module (shared object or executable), full path or basename
//   kernel:  the kernels listed on a guard-zone error
// Without a prefix any of the four may match. A pattern of only '*' matches
// every record of the kind, even one without names (symbolize=0). Frames are
// those of the error's own stack, of its block's allocation stack and
// (double-free) of the first free; for a leak, its allocation stack.
//
// Filtering happens on the report data (ApplySuppressions), so recording is
// untouched and a later report with other rules would still see everything.
#ifndef GMT_LIB_REPORT_SUPPRESSIONS_H_
#define GMT_LIB_REPORT_SUPPRESSIONS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "lib/report/errors.h"
#include "lib/report/report.h"

namespace gmt {

struct SuppressionRule {
  enum class Field : uint8_t { kAny, kFunction, kSource, kModule, kKernel };
  std::string text;  // the rule as written (whitespace stripped)
  std::string file;  // where it came from
  int line = 0;
  std::string kind;  // "*", "leak" or an error kind name
  Field field = Field::kAny;
  std::string pattern;
};

// A parsed, immutable rule set. Thread-safe (const after construction).
class Suppressions {
 public:
  Suppressions() = default;

  // Parses `text` (the contents of `file_name`). On the first bad line returns
  // false, sets `error` to "<file>:<line>: <problem>" and leaves `out` empty.
  static bool Parse(absl::string_view text, absl::string_view file_name,
                    Suppressions* out, std::string* error);

  // Reads and parses `path`. False with `error` set when the file cannot be
  // read or does not parse; `out` is then empty.
  static bool Load(const std::string& path, Suppressions* out,
                   std::string* error);

  bool empty() const { return rules_.empty(); }
  const std::vector<SuppressionRule>& rules() const { return rules_; }

  // The index of the first rule that silences `error` / `leak`, or -1.
  // `stacks` must hold the stacks the record refers to.
  int MatchError(const ErrorRecord& error, const StackTable& stacks) const;
  int MatchLeak(const ReportData::Leak& leak, const StackTable& stacks) const;

 private:
  std::vector<SuppressionRule> rules_;
};

// Whether the glob `pattern` (`*`, `?`; no escapes) matches all of `text`.
// Linear in |pattern| * |text| at worst, never exponential.
bool GlobMatch(absl::string_view pattern, absl::string_view text);

// The rule that would silence `error`: its innermost program frame's function
// (e.g. "oob-write:fun:LaunchFill"); for a guard-zone error without a call
// stack the kernel when only one is listed, else the allocation's function;
// a module or "kind:*" when no name is known. Empty only for no stacks at all.
std::string SuggestSuppression(const ErrorRecord& error,
                               const StackTable& stacks);
std::string SuggestSuppression(const ReportData::Leak& leak,
                               const StackTable& stacks);

// Removes the errors and leaks `rules` silence from `data` (and from its
// summary counts, which the exit code follows), counts them in
// summary.suppressed_errors / suppressed_leaks and per rule in
// data->suppressions, and gives every remaining error and leak its suggested
// rule. `data->stacks` must already be symbolized.
void ApplySuppressions(const Suppressions& rules, ReportData* data);

}  // namespace gmt

#endif  // GMT_LIB_REPORT_SUPPRESSIONS_H_
