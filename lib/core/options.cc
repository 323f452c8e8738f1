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

bool ParseValue(absl::string_view text, bool* out) {
  if (text == "1" || text == "true" || text == "yes") {
    *out = true;
    return true;
  }
  if (text == "0" || text == "false" || text == "no") {
    *out = false;
    return true;
  }
  return false;
}

bool ParseValue(absl::string_view text, int64_t* out) {
  return absl::SimpleAtoi(text, out);
}

bool ParseValue(absl::string_view text, std::string* out) {
  *out = std::string(text);
  return true;
}

const char* TypeName(const bool*) { return "0 or 1"; }
const char* TypeName(const int64_t*) { return "an integer"; }
const char* TypeName(const std::string*) { return "a string"; }

std::string DefaultText(bool v) { return v ? "1" : "0"; }
std::string DefaultText(int64_t v) { return absl::StrCat(v); }
std::string DefaultText(const std::string& v) { return v; }

// Range and enumeration checks that the type alone cannot express. Returns an
// empty string when the value is acceptable.
std::string CheckValue(absl::string_view key, const Options& o) {
  auto range = [&](int64_t v, int64_t lo, int64_t hi) -> std::string {
    if (v < lo || v > hi) {
      return absl::StrCat("must be between ", lo, " and ", hi);
    }
    return "";
  };
  if (key == "report") {
    if (o.report == "none") return "";
    for (absl::string_view part : absl::StrSplit(o.report, ',')) {
      if (part != "text" && part != "json" && part != "html" &&
          part != "trace" && part != "torch") {
        return absl::StrCat("unknown format '", part,
                            "' (expected a comma-separated list of text, "
                            "json, html, trace, torch; or none)");
      }
    }
    return "";
  }
  if (key == "stack_depth") return range(o.stack_depth, 0, 64);
  if (key == "freed_history") return range(o.freed_history, 0, 1 << 24);
  if (key == "exitcode") return range(o.exitcode, 0, 255);
  if (key == "max_leaks") return range(o.max_leaks, 0, 1 << 30);
  if (key == "verbosity") return range(o.verbosity, 0, 2);
  if (key == "check") {
    if (o.check == "none" || o.check == "exit" || o.check == "sync" ||
        o.check == "kernel") {
      return "";
    }
    return absl::StrCat("unknown value '", o.check,
                        "' (expected none, exit, sync or kernel)");
  }
  if (key == "guard_front") {
    if (o.guard_front % 256 != 0) return "must be a multiple of 256";
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
  // CUPTI.
  if (key == "cupti" || key == "cupti_kernels" || key == "cupti_activity") {
    const std::string& v = key == "cupti"           ? o.cupti
                           : key == "cupti_kernels" ? o.cupti_kernels
                                                    : o.cupti_activity;
    if (v == "auto" || v == "on" || v == "off") return "";
    return absl::StrCat("unknown value '", v, "' (expected auto, on or off)");
  }
  if (key == "guard_skip") {
    if (o.guard_skip.empty()) return "";
    for (absl::string_view part : absl::StrSplit(o.guard_skip, ',')) {
      if (part != "device" && part != "pitched" && part != "managed" &&
          part != "async") {
        return absl::StrCat("unknown family '", part,
                            "' (expected device, pitched, managed, async)");
      }
    }
    return "";
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
  if (key == "suppressions" &&
      o.suppressions.find('\0') != std::string::npos) {
    return "contains a NUL byte";
  }
  // The crash report.
  if (key == "crash_timeout_s") return range(o.crash_timeout_s, 0, 3600);
  if (key == "crash_signals") {
    for (absl::string_view part :
         absl::StrSplit(o.crash_signals, ',', absl::SkipEmpty())) {
      if (part != "SEGV" && part != "BUS" && part != "ABRT" &&
          part != "FPE" && part != "ILL") {
        return absl::StrCat("unknown signal '", part,
                            "' (expected SEGV, BUS, ABRT, FPE, ILL)");
      }
    }
    return "";
  }
  return "";
}

}  // namespace

bool Options::report_text() const {
  for (absl::string_view part : absl::StrSplit(report, ',')) {
    if (part == "text") return true;
  }
  return false;
}

bool Options::report_json() const {
  for (absl::string_view part : absl::StrSplit(report, ',')) {
    if (part == "json") return true;
  }
  return false;
}

// Reports to look at (viz).
bool Options::report_format(absl::string_view format) const {
  for (absl::string_view part : absl::StrSplit(report, ',')) {
    if (part == format) return true;
  }
  return false;
}

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
    if (!ParseValue(value, &o.Name)) {                                     \
      result.errors.push_back(absl::StrCat("option '" #Name "': '", value, \
                                           "' is not ", TypeName(&o.Name), \
                                           "; keeping the default"));      \
      o.Name = defaults.Name;                                              \
    } else if (std::string why = CheckValue(key, o); !why.empty()) {       \
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
  // (found by tests/fuzz/options_fuzz.cc): guard_tail_max is
  // checked against guard_tail_min as it is parsed, so a guard_tail_min given
  // after it could still leave min > max ("guard_tail_max=4096:
  // guard_tail_min=8192" was accepted, the reverse order refused). The pair
  // is checked once more at the end; a bad pair keeps both defaults.
  if (o.guard_tail_max < o.guard_tail_min) {
    result.errors.push_back(
        absl::StrCat("option 'guard_tail_max': '", o.guard_tail_max,
                     "' is below guard_tail_min (", o.guard_tail_min,
                     "); keeping the defaults of both"));
    o.guard_tail_min = defaults.guard_tail_min;
    o.guard_tail_max = defaults.guard_tail_max;
  }
  return result;
}

std::string OptionsHelp() {
  std::string out;
  const Options defaults;
#define GMT_OPTION(Type, Name, Default, Description)                  \
  absl::StrAppend(&out, "  ", #Name, "=", DefaultText(defaults.Name), \
                  "\n      ", Description, "\n");
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
      // Multi-process jobs (lib/core/launcher_rank.h): one report per rank/host.
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
