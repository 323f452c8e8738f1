#include "cli/launcher_flags.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "lib/core/options.h"

namespace gmt::cli {
namespace {

// How a flag takes its value.
enum class FlagKind {
  kSwitch,    // --guard, --guard=no: a GMT_OPTIONS 0/1
  kValue,     // --check LEVEL, --check=LEVEL
  kOption,    // --option KEY=VALUE: any key
  kLauncher,  // --explain-faults: a switch of the launcher's own (RunPlan)
};

struct Flag {
  absl::string_view name;   // "--check"
  absl::string_view alias;  // "-o"; empty when none
  FlagKind kind;
  absl::string_view key;  // the GMT_OPTIONS key; empty for kOption
};

// The run flags, one line each. Keep cli/usage.cc in step.
constexpr Flag kFlags[] = {
    {"--leak-check", "", FlagKind::kSwitch, "leak_check"},
    {"--guard", "", FlagKind::kSwitch, "guard"},
    {"--torch", "", FlagKind::kSwitch, "torch"},
    {"--check", "", FlagKind::kValue, "check"},
    {"--report", "", FlagKind::kValue, "report"},
    {"--output", "-o", FlagKind::kValue, "report_path"},
    {"--error-exitcode", "", FlagKind::kValue, "exitcode"},
    {"--suppressions", "", FlagKind::kValue, "suppressions"},
    {"--option", "-O", FlagKind::kOption, ""},
    {"--explain-faults", "", FlagKind::kLauncher, "explain_faults"},
    {"--keep-gpu-dump", "", FlagKind::kLauncher, "keep_gpu_dump"},
};

// The RunPlan field of a launcher switch.
bool* LauncherSwitch(RunPlan& plan, absl::string_view key) {
  return key == "explain_faults" ? &plan.explain_faults : &plan.keep_gpu_dump;
}

const Flag* FindFlag(absl::string_view name) {
  for (const Flag& f : kFlags) {
    if (name == f.name || (!f.alias.empty() && name == f.alias)) return &f;
  }
  return nullptr;
}

// "yes"/"no" and the spellings GMT_OPTIONS accepts, as "1"/"0".
bool SwitchValue(absl::string_view text, std::string* out) {
  const std::string v = absl::AsciiStrToLower(text);
  if (v == "1" || v == "yes" || v == "true" || v == "on") {
    *out = "1";
    return true;
  }
  if (v == "0" || v == "no" || v == "false" || v == "off") {
    *out = "0";
    return true;
  }
  return false;
}

bool ValidKey(absl::string_view key) {
  if (key.empty()) return false;
  for (char c : key) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '_') {
      return false;
    }
  }
  return true;
}

// The library's message for one setting, reworded for a refusal: the
// library keeps the default and goes on, the launcher stops.
std::string Reword(const std::string& message, const OptionSetting& s) {
  if (absl::StartsWith(message, "unknown option")) {
    return absl::StrCat(s.flag, ": this build's library has no option '", s.key,
                        "' (`gpumemtrace --help-options` lists them)");
  }
  absl::string_view text = message;
  absl::ConsumeSuffix(&text, "; keeping the default");
  absl::ConsumeSuffix(&text, "; keeping the defaults of both");
  return absl::StrCat(s.flag, ": ", text);
}

std::string CheckValue(const OptionSetting& s) {
  if (s.value.find(':') != std::string::npos) {
    return absl::StrCat(s.flag, ": '", s.value,
                        "' contains ':', which separates GMT_OPTIONS "
                        "settings; a value cannot hold it");
  }
  if (s.value.find_first_of("\n\r") != std::string::npos) {
    return absl::StrCat(s.flag, ": the value contains a line break");
  }
  ParseResult parsed = ParseOptions(absl::StrCat(s.key, "=", s.value));
  if (!parsed.errors.empty()) return Reword(parsed.errors.front(), s);
  return "";
}

}  // namespace

std::string RunPlan::OptionsText() const {
  return absl::StrJoin(settings, ":",
                       [](std::string* out, const OptionSetting& s) {
                         absl::StrAppend(out, s.key, "=", s.value);
                       });
}

RunParse ParseRunFlags(const std::vector<std::string>& args) {
  RunParse result;
  RunPlan& plan = result.plan;
  size_t i = 0;
  bool saw_separator = false;
  for (; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--") {
      saw_separator = true;
      ++i;
      break;
    }
    if (arg == "-h" || arg == "--help") {
      plan.help = true;
      return result;
    }
    if (arg.empty() || arg[0] != '-' || arg == "-") {
      result.error = absl::StrCat(
          "missing '--' before the program: write `gpumemtrace run [FLAGS] -- ",
          arg, " ...`");
      return result;
    }
    // --name=value or --name [value]; a short alias takes no '='.
    absl::string_view name = arg;
    std::string value;
    bool has_value = false;
    if (absl::StartsWith(arg, "--")) {
      size_t eq = arg.find('=');
      if (eq != std::string::npos) {
        name = absl::string_view(arg).substr(0, eq);
        value = arg.substr(eq + 1);
        has_value = true;
      }
    }
    bool negated = false;
    const Flag* flag = FindFlag(name);
    if (flag == nullptr && absl::StartsWith(name, "--no-")) {
      flag = FindFlag(absl::StrCat("--", name.substr(5)));
      negated = flag != nullptr && (flag->kind == FlagKind::kSwitch ||
                                    flag->kind == FlagKind::kLauncher);
      if (!negated) flag = nullptr;
    }
    if (flag == nullptr) {
      result.error = absl::StrCat("unknown flag '", name, "'");
      return result;
    }
    if (negated) {
      if (has_value) {
        result.error = absl::StrCat(name, " takes no value");
        return result;
      }
      if (flag->kind == FlagKind::kLauncher) {
        *LauncherSwitch(plan, flag->key) = false;
      } else {
        plan.settings.push_back(
            {std::string(flag->key), "0", std::string(name)});
      }
      continue;
    }
    if (flag->kind == FlagKind::kLauncher) {
      std::string v = "1";
      if (has_value && !SwitchValue(value, &v)) {
        result.error =
            absl::StrCat(name, ": '", value, "' is not yes or no (or 1, 0)");
        return result;
      }
      *LauncherSwitch(plan, flag->key) = v == "1";
      continue;
    }
    if (flag->kind == FlagKind::kSwitch) {
      std::string v = "1";
      if (has_value && !SwitchValue(value, &v)) {
        result.error =
            absl::StrCat(name, ": '", value, "' is not yes or no (or 1, 0)");
        return result;
      }
      plan.settings.push_back({std::string(flag->key), v, arg});
      continue;
    }
    if (!has_value) {
      if (i + 1 >= args.size() || args[i + 1] == "--") {
        result.error =
            absl::StrCat(name, " needs a value",
                         flag->kind == FlagKind::kOption ? " (KEY=VALUE)" : "");
        return result;
      }
      value = args[++i];
    }
    const std::string shown = absl::StrCat(name, " ", value);
    if (flag->kind == FlagKind::kOption) {
      size_t eq = value.find('=');
      absl::string_view key = eq == std::string::npos
                                  ? absl::string_view()
                                  : absl::StripAsciiWhitespace(
                                        absl::string_view(value).substr(0, eq));
      if (eq == std::string::npos || !ValidKey(key)) {
        result.error = absl::StrCat(name, " '", value,
                                    "': expected KEY=VALUE with a GMT_OPTIONS "
                                    "key (letters, digits, _)");
        return result;
      }
      plan.settings.push_back({std::string(key), value.substr(eq + 1), shown});
    } else {
      plan.settings.push_back({std::string(flag->key), value, shown});
    }
  }
  if (!saw_separator) {
    result.error =
        "missing '--' and the program: write `gpumemtrace run "
        "[FLAGS] -- PROGRAM [ARGS...]`";
    return result;
  }
  if (i >= args.size()) {
    result.error = "no program after '--'";
    return result;
  }
  if (args[i].empty()) {
    result.error = "the program after '--' is an empty string";
    return result;
  }
  plan.program.assign(args.begin() + static_cast<std::ptrdiff_t>(i),
                      args.end());
  if (plan.keep_gpu_dump && !plan.explain_faults) {
    result.error =
        "--keep-gpu-dump keeps the dump --explain-faults asks for: give both";
    return result;
  }
  // Each value alone (so the message names its flag), then all together
  // (checks across keys, such as guard_tail_min <= guard_tail_max).
  for (const OptionSetting& s : plan.settings) {
    if (std::string why = CheckValue(s); !why.empty()) {
      result.error = std::move(why);
      return result;
    }
  }
  ParseResult all = ParseOptions(plan.OptionsText());
  if (!all.errors.empty()) {
    absl::string_view text = all.errors.front();
    absl::ConsumeSuffix(&text, "; keeping the defaults of both");
    absl::ConsumeSuffix(&text, "; keeping the default");
    result.error = absl::StrCat("the flags together: ", text);
  }
  return result;
}

std::string MergeOptions(absl::string_view user_options,
                         absl::string_view flag_options) {
  absl::string_view user = absl::StripAsciiWhitespace(user_options);
  absl::ConsumeSuffix(&user, ":");
  if (user.empty()) return std::string(flag_options);
  if (flag_options.empty()) return std::string(user);
  return absl::StrCat(user, ":", flag_options);
}

std::string MergePreload(absl::string_view library,
                         absl::string_view user_preload) {
  // Already there (a nested `gpumemtrace run`): the library is loaded once.
  for (absl::string_view entry :
       absl::StrSplit(user_preload, absl::ByAnyChar(": "), absl::SkipEmpty())) {
    if (entry == library) return std::string(user_preload);
  }
  absl::string_view user = absl::StripAsciiWhitespace(user_preload);
  if (user.empty()) return std::string(library);
  return absl::StrCat(library, ":", user);
}

}  // namespace gmt::cli
