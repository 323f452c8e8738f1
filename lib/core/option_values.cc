#include "lib/core/option_values.h"

#include <iterator>
#include <ostream>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace gmt {
namespace {

// "a, b, c" with `last` before the final name ("a, b or c", "a, b, c").
template <typename Enum>
std::string JoinNames(absl::string_view last) {
  std::string out;
  const auto& names = OptionValues<Enum>::kNames;
  const size_t n = std::size(names);
  for (size_t i = 0; i < n; ++i) {
    if (i > 0) absl::StrAppend(&out, i + 1 == n ? last : ", ");
    absl::StrAppend(&out, names[i].name);
  }
  return out;
}

template <typename Enum>
bool Lookup(absl::string_view text, Enum* out) {
  for (const OptionValueName<Enum>& n : OptionValues<Enum>::kNames) {
    if (n.name == text) {
      *out = n.value;
      return true;
    }
  }
  return false;
}

// The "expected ..." text of a list of Enum.
template <typename Enum>
std::string ListAccepted() {
  const absl::string_view empty = OptionValues<Enum>::kEmptyList;
  return absl::StrCat(
      "a comma-separated list of ", JoinNames<Enum>(", "),
      empty.empty() ? "; empty for none" : absl::StrCat("; or ", empty));
}

template <typename Enum>
bool ParseEnum(absl::string_view text, Enum* out, std::string* why) {
  if (Lookup(text, out)) return true;
  *why = absl::StrCat("unknown value '", text, "' (expected ",
                      JoinNames<Enum>(" or "), ")");
  return false;
}

template <typename Enum>
bool ParseSet(absl::string_view text, OptionSet<Enum>* out, std::string* why) {
  using Values = OptionValues<Enum>;
  OptionSet<Enum> parsed;
  if (text != Values::kEmptyList) {
    for (absl::string_view part : absl::StrSplit(text, ',')) {
      if (part.empty() && Values::kSkipEmptyElements) continue;
      Enum v;
      if (!Lookup(part, &v)) {
        *why = absl::StrCat("unknown ", Values::kElement, " '", part,
                            "' (expected ", ListAccepted<Enum>(), ")");
        return false;
      }
      parsed.Add(v);
    }
  }
  *out = parsed;
  return true;
}

template <typename T>
struct SetOf {
  static constexpr bool kIsSet = false;
};
template <typename Enum>
struct SetOf<OptionSet<Enum>> {
  static constexpr bool kIsSet = true;
  using Element = Enum;
};

}  // namespace

template <typename T>
bool ParseOptionValue(absl::string_view text, T* out, std::string* why) {
  if constexpr (SetOf<T>::kIsSet) {
    return ParseSet(text, out, why);
  } else {
    return ParseEnum(text, out, why);
  }
}

template <typename T>
std::string AcceptedOptionValues() {
  if constexpr (SetOf<T>::kIsSet) {
    return ListAccepted<typename SetOf<T>::Element>();
  } else {
    return JoinNames<T>(" or ");
  }
}

template <typename Enum>
absl::string_view OptionValueText(Enum value) {
  for (const OptionValueName<Enum>& n : OptionValues<Enum>::kNames) {
    if (n.value == value) return n.name;
  }
  return "";
}

template <typename Enum>
std::string OptionValueText(OptionSet<Enum> values) {
  if (values.empty()) return std::string(OptionValues<Enum>::kEmptyList);
  std::string out;
  for (const OptionValueName<Enum>& n : OptionValues<Enum>::kNames) {
    if (values.Has(n.value)) {
      absl::StrAppend(&out, out.empty() ? "" : ",", n.name);
    }
  }
  return out;
}

template <typename Enum>
requires requires { OptionValues<Enum>::kNames; }
std::ostream& operator<<(std::ostream& os, Enum value) {
  return os << OptionValueText(value);
}

template <typename Enum>
std::ostream& operator<<(std::ostream& os, OptionSet<Enum> values) {
  return os << OptionValueText(values);
}

// The instantiations: one line per enum of option_values.h. `Enum` is a type
// (a template argument), which parentheses would break.
// NOLINTBEGIN(bugprone-macro-parentheses)
#define GMT_OPTION_ENUM(Enum)                                             \
  template bool ParseOptionValue(absl::string_view, Enum*, std::string*); \
  template absl::string_view OptionValueText(Enum);                       \
  template std::string AcceptedOptionValues<Enum>();                      \
  template std::ostream& operator<<(std::ostream&, Enum);
#define GMT_OPTION_LIST(Enum)                                         \
  GMT_OPTION_ENUM(Enum)                                               \
  template bool ParseOptionValue(absl::string_view, OptionSet<Enum>*, \
                                 std::string*);                       \
  template std::string OptionValueText(OptionSet<Enum>);              \
  template std::string AcceptedOptionValues<OptionSet<Enum>>();       \
  template std::ostream& operator<<(std::ostream&, OptionSet<Enum>);
// NOLINTEND(bugprone-macro-parentheses)

GMT_OPTION_ENUM(CheckLevel)
GMT_OPTION_ENUM(CuptiMode)
GMT_OPTION_LIST(ReportFormat)
GMT_OPTION_LIST(GuardFamily)
GMT_OPTION_LIST(FatalSignal)

#undef GMT_OPTION_LIST
#undef GMT_OPTION_ENUM

}  // namespace gmt
