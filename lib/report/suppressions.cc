#include "lib/report/suppressions.h"

#include <algorithm>
#include <fstream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "lib/core/api.h"

namespace gmt {
namespace {

using Field = SuppressionRule::Field;

// Longer lines are refused: no real rule needs them, and a binary file passed
// by mistake should give one clear error, not a megabyte of pattern.
constexpr size_t kMaxLineBytes = 4096;
constexpr size_t kMaxFileBytes = 4 << 20;

bool KnownKind(absl::string_view kind) {
  if (kind == "*" || kind == "leak") return true;
#define GMT_KIND_NAME(Enum, Name, Meaning) \
  if (kind == (Name)) return true;
  GMT_ERROR_KINDS(GMT_KIND_NAME)
#undef GMT_KIND_NAME
  return false;
}

std::string KindList() {
  std::string out;
#define GMT_KIND_NAME(Enum, Name, Meaning) absl::StrAppend(&out, Name, ", ");
  GMT_ERROR_KINDS(GMT_KIND_NAME)
#undef GMT_KIND_NAME
  absl::StrAppend(&out, "leak or *");
  return out;
}

absl::string_view Basename(absl::string_view path) {
  size_t slash = path.rfind('/');
  return slash == absl::string_view::npos ? path : path.substr(slash + 1);
}

// "ns::Foo<int>::bar(float*, long) const" -> "ns::Foo<int>::bar": the name
// without its parameter list, so `fun:bar` matches any overload.
absl::string_view WithoutParameters(absl::string_view function) {
  absl::string_view f = function;
  absl::ConsumeSuffix(&f, " const");
  if (!absl::EndsWith(f, ")")) return function;
  int depth = 0;
  for (size_t i = f.size(); i-- > 0;) {
    if (f[i] == ')') ++depth;
    if (f[i] == '(' && --depth == 0) {
      absl::string_view name =
          absl::StripTrailingAsciiWhitespace(f.substr(0, i));
      return name.empty() ? function : name;
    }
  }
  return function;
}

bool MatchesText(const SuppressionRule& rule, Field field,
                 absl::string_view text, bool is_path) {
  if (text.empty()) return false;
  if (rule.field != Field::kAny && rule.field != field) return false;
  if (GlobMatch(rule.pattern, text)) return true;
  if (is_path && GlobMatch(rule.pattern, Basename(text))) return true;
  if (field == Field::kFunction || field == Field::kKernel) {
    absl::string_view name = WithoutParameters(text);
    if (name.size() != text.size() && GlobMatch(rule.pattern, name)) {
      return true;
    }
  }
  return false;
}

// "kind:*" (or "kind:fun:*", ...): every record of the kind, named frames
// or not (symbolize=0, stack_depth=0).
bool MatchesEverything(const SuppressionRule& rule) {
  return rule.field != Field::kKernel &&
         rule.pattern.find_first_not_of('*') == std::string::npos;
}

bool MatchesStack(const SuppressionRule& rule, StackId id,
                  const StackTable& stacks) {
  if (id == kNoStack || rule.field == Field::kKernel) return false;
  auto it = stacks.find(id);
  if (it == stacks.end()) return false;
  for (const SymbolizedFrame& f : it->second) {
    if (MatchesText(rule, Field::kFunction, f.function, false) ||
        MatchesText(rule, Field::kSource, f.file, true) ||
        MatchesText(rule, Field::kModule, f.module, true)) {
      return true;
    }
  }
  return false;
}

const std::vector<SymbolizedFrame>* FramesOf(StackId id,
                                             const StackTable& stacks) {
  if (id == kNoStack) return nullptr;
  auto it = stacks.find(id);
  if (it == stacks.end() || it->second.empty()) return nullptr;
  return &it->second;
}

// A glob that matches `name` literally: the glob characters in it (operator*,
// operator?) become '?', which matches them too.
std::string LiteralGlob(absl::string_view name) {
  std::string out(name);
  for (char& c : out) {
    if (c == '*' || c == '?') c = '?';
  }
  return out;
}

// "fun:<innermost named function>" or "mod:<module>" of a stack; empty when
// the stack has no frames.
std::string SuggestFromStack(StackId id, const StackTable& stacks) {
  const std::vector<SymbolizedFrame>* frames = FramesOf(id, stacks);
  if (frames == nullptr) return "";
  for (const SymbolizedFrame& f : *frames) {
    if (!f.function.empty()) {
      return absl::StrCat("fun:", LiteralGlob(WithoutParameters(f.function)));
    }
  }
  for (const SymbolizedFrame& f : *frames) {
    if (!f.module.empty()) {
      return absl::StrCat("mod:", LiteralGlob(Basename(f.module)));
    }
  }
  return "";
}

}  // namespace

bool GlobMatch(absl::string_view pattern, absl::string_view text) {
  // The classic greedy matcher with one backtrack point: a later '*' makes
  // earlier backtracking unnecessary, so the work is O(|pattern| * |text|).
  size_t p = 0, t = 0;
  size_t star = absl::string_view::npos, resume = 0;
  while (t < text.size()) {
    if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == text[t])) {
      ++p;
      ++t;
    } else if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      resume = t;
    } else if (star != absl::string_view::npos) {
      p = star + 1;
      t = ++resume;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

bool Suppressions::Parse(absl::string_view text, absl::string_view file_name,
                         Suppressions* out, std::string* error) {
  *out = Suppressions();
  std::vector<SuppressionRule> rules;
  int line_number = 0;
  for (absl::string_view raw : absl::StrSplit(text, '\n')) {
    ++line_number;
    auto fail = [&](absl::string_view problem) {
      *error = absl::StrCat(file_name, ":", line_number, ": ", problem);
      return false;
    };
    if (raw.size() > kMaxLineBytes) {
      return fail(absl::StrCat("line longer than ", kMaxLineBytes, " bytes"));
    }
    if (raw.find('\0') != absl::string_view::npos) {
      return fail("NUL byte in the line (not a text file?)");
    }
    absl::string_view line = absl::StripAsciiWhitespace(raw);
    if (line.empty() || line[0] == '#') continue;
    size_t colon = line.find(':');
    if (colon == absl::string_view::npos) {
      return fail(
          absl::StrCat("'", line, "' is not <kind>:<pattern> (no ':' found)"));
    }
    SuppressionRule rule;
    rule.text = std::string(line);
    rule.file = std::string(file_name);
    rule.line = line_number;
    absl::string_view kind = absl::StripAsciiWhitespace(line.substr(0, colon));
    absl::string_view pattern =
        absl::StripAsciiWhitespace(line.substr(colon + 1));
    if (!KnownKind(kind)) {
      return fail(absl::StrCat("unknown kind '", kind, "' (expected ",
                               KindList(), ")"));
    }
    rule.kind = std::string(kind);
    struct Prefix {
      absl::string_view text;
      Field field;
    };
    static constexpr Prefix kPrefixes[] = {{"fun:", Field::kFunction},
                                           {"src:", Field::kSource},
                                           {"mod:", Field::kModule},
                                           {"kernel:", Field::kKernel}};
    for (const Prefix& prefix : kPrefixes) {
      if (absl::ConsumePrefix(&pattern, prefix.text)) {
        rule.field = prefix.field;
        pattern = absl::StripAsciiWhitespace(pattern);
        break;
      }
    }
    if (pattern.empty()) {
      return fail(absl::StrCat("'", line, "' has an empty pattern (use '*' ",
                               "to match everything)"));
    }
    if (rule.field == Field::kKernel && kind == "leak") {
      return fail("kernel: patterns apply to guard-zone errors, not to leaks");
    }
    rule.pattern = std::string(pattern);
    rules.push_back(std::move(rule));
  }
  out->rules_ = std::move(rules);
  return true;
}

bool Suppressions::Load(const std::string& path, Suppressions* out,
                        std::string* error) {
  *out = Suppressions();
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    *error = absl::StrCat("cannot read suppressions file ", path);
    return false;
  }
  std::string text;
  char buffer[65536];
  while (in.read(buffer, sizeof(buffer)) || in.gcount() > 0) {
    text.append(buffer, static_cast<size_t>(in.gcount()));
    if (text.size() > kMaxFileBytes) {
      *error = absl::StrCat("suppressions file ", path, " is larger than ",
                            kMaxFileBytes, " bytes");
      return false;
    }
  }
  if (in.bad()) {
    *error = absl::StrCat("cannot read suppressions file ", path);
    return false;
  }
  return Parse(text, path, out, error);
}

int Suppressions::MatchError(const ErrorRecord& error,
                             const StackTable& stacks) const {
  const absl::string_view kind = ErrorKindName(error.kind);
  for (size_t i = 0; i < rules_.size(); ++i) {
    const SuppressionRule& rule = rules_[i];
    if (rule.kind != "*" && rule.kind != kind) continue;
    if (MatchesEverything(rule)) return static_cast<int>(i);
    if (MatchesStack(rule, error.stack, stacks)) return static_cast<int>(i);
    if (error.allocation &&
        MatchesStack(rule, error.allocation->stack, stacks)) {
      return static_cast<int>(i);
    }
    if (error.previous_free &&
        MatchesStack(rule, error.previous_free->free_stack, stacks)) {
      return static_cast<int>(i);
    }
    for (const std::string& kernel : error.kernels) {
      if (MatchesText(rule, Field::kKernel, kernel, false)) {
        return static_cast<int>(i);
      }
    }
  }
  return -1;
}

int Suppressions::MatchLeak(const ReportData::Leak& leak,
                            const StackTable& stacks) const {
  for (size_t i = 0; i < rules_.size(); ++i) {
    const SuppressionRule& rule = rules_[i];
    if (rule.kind != "*" && rule.kind != "leak") continue;
    if (MatchesEverything(rule)) return static_cast<int>(i);
    if (MatchesStack(rule, leak.stack, stacks)) return static_cast<int>(i);
  }
  return -1;
}

std::string SuggestSuppression(const ErrorRecord& error,
                               const StackTable& stacks) {
  const absl::string_view kind = ErrorKindName(error.kind);
  std::string where = SuggestFromStack(error.stack, stacks);
  if (where.empty() && error.kernels.size() == 1 &&
      error.kernels_omitted == 0) {
    where = absl::StrCat("kernel:",
                         LiteralGlob(WithoutParameters(error.kernels.front())));
  }
  if (where.empty() && error.allocation) {
    where = SuggestFromStack(error.allocation->stack, stacks);
  }
  return absl::StrCat(
      kind, ":",
      where.empty() ? absl::string_view("*") : absl::string_view(where));
}

std::string SuggestSuppression(const ReportData::Leak& leak,
                               const StackTable& stacks) {
  std::string where = SuggestFromStack(leak.stack, stacks);
  return absl::StrCat("leak:", where.empty() ? absl::string_view("*")
                                             : absl::string_view(where));
}

void ApplySuppressions(const Suppressions& rules, ReportData* data) {
  std::vector<uint64_t> hits(rules.rules().size(), 0);
  std::vector<ErrorRecord> kept_errors;
  kept_errors.reserve(data->errors.size());
  for (ErrorRecord& e : data->errors) {
    int rule = rules.MatchError(e, data->stacks);
    if (rule >= 0) {
      ++hits[static_cast<size_t>(rule)];
      ++data->summary.suppressed_errors;
      continue;
    }
    e.suppression = SuggestSuppression(e, data->stacks);
    kept_errors.push_back(std::move(e));
  }
  data->summary.errors -=
      std::min<uint64_t>(data->summary.errors, data->summary.suppressed_errors);
  data->errors = std::move(kept_errors);

  std::vector<ReportData::Leak> kept_leaks;
  kept_leaks.reserve(data->leaks.size());
  for (ReportData::Leak& leak : data->leaks) {
    int rule = rules.MatchLeak(leak, data->stacks);
    if (rule >= 0) {
      ++hits[static_cast<size_t>(rule)];
      data->summary.suppressed_leaks += leak.count;
      data->summary.leaks -= std::min(data->summary.leaks, leak.count);
      // NVTX regions' bytes were never added (they lie inside a pool's
      // block).
      if (CountsTowardsUsage(leak.kind) && leak.api != Api::kNvtxRegion) {
        data->summary.leaked_bytes -=
            std::min(data->summary.leaked_bytes, leak.bytes);
      }
      continue;
    }
    leak.suppression = SuggestSuppression(leak, data->stacks);
    kept_leaks.push_back(std::move(leak));
  }
  data->leaks = std::move(kept_leaks);

  data->suppressions.clear();
  for (size_t i = 0; i < hits.size(); ++i) {
    const SuppressionRule& r = rules.rules()[i];
    data->suppressions.push_back(
        ReportData::SuppressionUse{r.text, r.file, r.line, hits[i]});
  }
}

}  // namespace gmt
