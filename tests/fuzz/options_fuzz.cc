// Fuzz harness: GMT_OPTIONS parsing (lib/core/options.h) on arbitrary bytes.
//
// Invariants:
//   1. ParseOptions never crashes, whatever the bytes (NULs, no '=', huge
//      numbers, repeated keys, stray ':' and whitespace).
//   2. Every error message names a key: it starts with "option '<key>'" or
//      "unknown option '<key>'", where <key> is a known option or text the
//      input holds.
//   3. What it returns is valid as a whole: the options, written back as
//      "key=value:..." (all but report_path, which may hold ':'), parse again
//      with no error and to the same values. (This is what found that
//      "guard_tail_max=4096:guard_tail_min=8192" was accepted while the
//      reverse order was refused.)
#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "lib/core/options.h"
#include "tests/fuzz/fuzz_harness.h"

namespace {

using gmt::Options;
using gmt::ParseOptions;
using gmt::ParseResult;

const std::set<std::string>& KnownKeys() {
  static const std::set<std::string>* const keys = [] {
    auto* out = new std::set<std::string>();
#define GMT_OPTION(Type, Name, Default, Description) out->insert(#Name);
#include "lib/core/options.inc"
#undef GMT_OPTION
    return out;
  }();
  return *keys;
}

std::string Text(bool v) { return v ? "1" : "0"; }
std::string Text(int64_t v) { return absl::StrCat(v); }
std::string Text(const std::string& v) { return v; }
// The typed values (lib/core/option_values.h), as their tables spell them.
template <typename T>
std::string Text(const T& v) {
  return std::string(gmt::OptionValueText(v));
}

// The options back as GMT_OPTIONS text, report_path left out.
std::string Serialize(const Options& o) {
  std::string out;
#define GMT_OPTION(Type, Name, Default, Description)                         \
  if (absl::string_view(#Name) != "report_path") {                           \
    absl::StrAppend(&out, out.empty() ? "" : ":", #Name, "=", Text(o.Name)); \
  }
#include "lib/core/options.inc"
#undef GMT_OPTION
  return out;
}

bool SameOptions(const Options& a, const Options& b) {
#define GMT_OPTION(Type, Name, Default, Description)                      \
  if (absl::string_view(#Name) != "report_path" && !(a.Name == b.Name)) { \
    return false;                                                         \
  }
#include "lib/core/options.inc"
#undef GMT_OPTION
  return true;
}

// The key an error message names, or "" when it names none.
std::string NamedKey(const std::string& error) {
  for (const std::string prefix : {"option '", "unknown option '"}) {
    if (error.rfind(prefix, 0) != 0) continue;
    const size_t start = prefix.size();
    // Keys hold no quote when they are known; for unknown ones the text up
    // to the first quote is still part of what the input wrote.
    const size_t end = error.find('\'', start);
    if (end == std::string::npos) return "";
    return error.substr(start, end - start);
  }
  return "";
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  const ParseResult result = ParseOptions(input);

  for (const std::string& error : result.errors) {
    const std::string key = NamedKey(error);
    GMT_FUZZ_CHECK(!key.empty() || error.find("option ''") != std::string::npos,
                   "error names no key: \"%s\"", error.c_str());
    GMT_FUZZ_CHECK(
        KnownKeys().count(key) != 0 || input.find(key) != std::string::npos,
        "error names '%s', neither a known key nor in the input: "
        "\"%s\"",
        key.c_str(), error.c_str());
    if (error.rfind("option '", 0) == 0 &&
        error.find("' has no value") == std::string::npos) {
      GMT_FUZZ_CHECK(KnownKeys().count(key) != 0,
                     "a bad value is reported for unknown key '%s': \"%s\"",
                     key.c_str(), error.c_str());
    }
  }

  const std::string again = Serialize(result.options);
  const ParseResult reparsed = ParseOptions(again);
  GMT_FUZZ_CHECK(reparsed.errors.empty(),
                 "the parsed options are not valid as a whole: \"%s\" -> %s",
                 again.c_str(),
                 reparsed.errors.empty() ? "" : reparsed.errors[0].c_str());
  GMT_FUZZ_CHECK(SameOptions(result.options, reparsed.options),
                 "options do not survive a round trip: \"%s\"", again.c_str());
  return 0;
}
