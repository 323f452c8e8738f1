#include "lib/core/options.h"

#include <unistd.h>

#include <cstdlib>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "lib/core/launcher_rank.h"
#include "lib/core/log.h"

namespace gmt {
namespace {

// Each parses `text` into `*out`; "" when it could, else why not (the
// message's tail after "option 'key': 'text' ").
std::string ParseValue(absl::string_view text, bool* out) {
  if (text == "1" || text == "true" || text == "yes") {
    *out = true;
    return "";
  }
  if (text == "0" || text == "false" || text == "no") {
    *out = false;
    return "";
  }
  return "is not 0 or 1";
}

std::string ParseValue(absl::string_view text, int64_t* out) {
  return absl::SimpleAtoi(text, out) ? "" : "is not an integer";
}

std::string ParseValue(absl::string_view text, std::string* out) {
  *out = std::string(text);
  return "";
}

// The typed values (option_values.h): an enum or a set of one.
template <typename T>
std::string ParseValue(absl::string_view text, T* out) {
  std::string why;
  return ParseOptionValue(text, out, &why) ? "" : why;
}

// A value as GMT_OPTIONS writes it, for help.
std::string ValueText(bool v) { return v ? "1" : "0"; }
std::string ValueText(int64_t v) { return absl::StrCat(v); }
std::string ValueText(const std::string& v) { return v; }
template <typename T>
std::string ValueText(const T& v) {
  return std::string(OptionValueText(v));
}

// What a key accepts, for help: "" where the type says it (0 or 1, an
// integer, a string); the list of words for the typed values.
std::string Accepted(const bool*) { return ""; }
std::string Accepted(const int64_t*) { return ""; }
std::string Accepted(const std::string*) { return ""; }
template <typename T>
std::string Accepted(const T*) {
  return absl::StrCat("  (", AcceptedOptionValues<T>(), ")");
}

// What a value must be beyond its type (ranges, paths), checked as its key is
// parsed; the typed values check themselves as they parse. Returns an empty
// string when the value is acceptable.
std::string CheckValue(absl::string_view key, const Options& o) {
  auto range = [&](int64_t v, int64_t lo, int64_t hi) -> std::string {
    if (v < lo || v > hi) {
      return absl::StrCat("must be between ", lo, " and ", hi);
    }
    return "";
  };
  if (key == "stack_depth") return range(o.stack_depth, 0, 64);
  if (key == "freed_history") return range(o.freed_history, 0, 1 << 24);
  if (key == "exitcode") return range(o.exitcode, 0, 255);
  if (key == "max_leaks") return range(o.max_leaks, 0, 1 << 30);
  if (key == "verbosity") return range(o.verbosity, 0, 2);
  if (key == "guard_front") {
    // The user's pointer keeps the alignment cudaMalloc gives in practice,
    // which programs rely on: textureAlignment (512 on every current GPU)
    // for linear textures over a cudaMalloc'ed buffer.
    if (o.guard_front % 512 != 0) return "must be a multiple of 512";
    return range(o.guard_front, 0, 1 << 20);
  }
  if (key == "guard_tail_min") return range(o.guard_tail_min, 256, 1 << 26);
  if (key == "guard_tail_max") {
    return range(o.guard_tail_max, o.guard_tail_min, 1 << 28);
  }
  if (key == "guard_tail_ratio") return range(o.guard_tail_ratio, 1, 1 << 16);
  // Reachability and growth.
  if (key == "reachability_max_ms") {
    return range(o.reachability_max_ms, 1, 3600000);
  }
  if (key == "reachability_max_bytes") {
    return range(o.reachability_max_bytes, 1 << 20, int64_t{1} << 44);
  }
  if (key == "growth_interval_ms") {
    return range(o.growth_interval_ms, 1, 3600000);
  }
  if (key == "growth_samples") return range(o.growth_samples, 2, 1000);
  if (key == "growth_min_bytes") {
    return range(o.growth_min_bytes, 0, int64_t{1} << 44);
  }
  if (key == "quarantine_bytes") {
    return range(o.quarantine_bytes, 0, int64_t{1} << 40);
  }
  if (key == "freed_check_bytes") {
    return range(o.freed_check_bytes, -1, int64_t{1} << 40);
  }
  if (key == "report_path" && o.report_path.find('\0') != std::string::npos) {
    return "contains a NUL byte";
  }
  // Reports to look at (viz).
  if (key == "timeline_events") {
    return range(o.timeline_events, 0, int64_t{1} << 26);
  }
  auto path = [](const std::string& p) -> std::string {
    if (p.empty()) return "must not be empty";
    if (p.find('\0') != std::string::npos) return "contains a NUL byte";
    return "";
  };
  if (key == "html_path") return path(o.html_path);
  if (key == "trace_path") return path(o.trace_path);
  if (key == "torch_path") return path(o.torch_path);
  if (key == "suppressions" && o.suppressions.find('\0') != std::string::npos) {
    return "contains a NUL byte";
  }
  // The crash report.
  if (key == "crash_timeout_s") return range(o.crash_timeout_s, 0, 3600);
  return "";
}

// Keys that bound each other, once all are parsed (found by
// tests/fuzz/options_fuzz.cc): guard_tail_max is checked against
// guard_tail_min as it is parsed, so a guard_tail_min given after it could
// still leave min > max ("guard_tail_max=4096:guard_tail_min=8192" was
// accepted, the reverse order refused). A bad pair keeps both defaults.
void CheckAcrossKeys(ParseResult* result) {
  Options& o = result->options;
  const Options defaults;
  if (o.guard_tail_max < o.guard_tail_min) {
    result->errors.push_back(
        absl::StrCat("option 'guard_tail_max': '", o.guard_tail_max,
                     "' is below guard_tail_min (", o.guard_tail_min,
                     "); keeping the defaults of both"));
    o.guard_tail_min = defaults.guard_tail_min;
    o.guard_tail_max = defaults.guard_tail_max;
  }
}

}  // namespace

ParseResult ParseOptions(absl::string_view text) {
  ParseResult result;
  Options& o = result.options;
  const Options defaults;
  for (absl::string_view piece :
       absl::StrSplit(text, ':', absl::SkipWhitespace())) {
    piece = absl::StripAsciiWhitespace(piece);
    size_t eq = piece.find('=');
    if (eq == absl::string_view::npos) {
      result.errors.push_back(absl::StrCat(
          "option '", piece, "' has no value (expected key=value)"));
      continue;
    }
    absl::string_view key = absl::StripAsciiWhitespace(piece.substr(0, eq));
    absl::string_view value = absl::StripAsciiWhitespace(piece.substr(eq + 1));
    bool known = false;
#define GMT_OPTION(Type, Name, Default, Description)                       \
  if (key == #Name) {                                                      \
    known = true;                                                          \
    std::string why = ParseValue(value, &o.Name);                          \
    if (why.empty()) why = CheckValue(key, o);                             \
    if (!why.empty()) {                                                    \
      result.errors.push_back(absl::StrCat("option '" #Name "': '", value, \
                                           "' ", why,                      \
                                           "; keeping the default"));      \
      o.Name = defaults.Name;                                              \
    }                                                                      \
  }
#include "lib/core/options.inc"
#undef GMT_OPTION
    if (!known) {
      result.errors.push_back(
          absl::StrCat("unknown option '", key,
                       "' (ignored); run `gpumemtrace --help-options`"
                       " or see README.md for the list"));
    }
  }
  CheckAcrossKeys(&result);
  return result;
}

int64_t FreedCheckBytes(const Options& options) {
  if (options.freed_check_bytes >= 0) return options.freed_check_bytes;
  return options.torch ? kTensorModeFreedCheckBytes : 0;
}

std::string OptionsHelp() {
  std::string out;
  const Options defaults;
#define GMT_OPTION(Type, Name, Default, Description)                \
  absl::StrAppend(&out, "  ", #Name, "=", ValueText(defaults.Name), \
                  Accepted(&defaults.Name), "\n      ", Description, "\n");
#include "lib/core/options.inc"
#undef GMT_OPTION
  return out;
}

std::string ExpandPath(absl::string_view pattern, int pid) {
  std::string out;
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] == '%' && i + 1 < pattern.size()) {
      char c = pattern[i + 1];
      if (c == 'p') {
        absl::StrAppend(&out, pid);
        ++i;
        continue;
      }
      // Multi-process jobs (lib/core/launcher_rank.h): one report per
      // rank/host.
      if (c == 'r' || c == 'h') {
        absl::StrAppend(&out, c == 'r' ? LauncherRank() : HostNameForPath());
        ++i;
        continue;
      }
      if (c == '%') {
        out.push_back('%');
        ++i;
        continue;
      }
    }
    out.push_back(pattern[i]);
  }
  return out;
}

const Options& GlobalOptions() {
  // Leaked on purpose: reports run from destructors and must still see options.
  static const Options* const options = [] {
    const char* env = std::getenv("GMT_OPTIONS");
    ParseResult parsed = ParseOptions(env ? env : "");
    for (const std::string& error : parsed.errors) {
      LogError("GMT_OPTIONS: %s", error.c_str());
    }
    return new Options(std::move(parsed.options));
  }();
  return *options;
}

}  // namespace gmt
