// Fuzz harness: the report path, from GMT_OPTIONS text to the expanded file
// name (lib/core/options.h: ParseOptions, ExpandPath).
//
// Input: 4 bytes of pid (any int, negative too), then the pattern.
// Invariants:
//   1. ExpandPath never crashes and equals a plain reference expansion: "%p"
//      is the pid in decimal, "%r" the launcher rank
//      (lib/core/launcher_rank.h),
//      "%h" the host name, "%%" is "%", anything else (a lone '%' at the
//      end, "%x") is kept as is.
//   2. A pattern without '%' comes back unchanged; the result is never longer
//      than 11 bytes per pattern byte (a pid is at most 11 characters), plus
//      the host name's length per "%h".
//   3. "report_path=<pattern>" in GMT_OPTIONS, for a pattern without ':',
//      yields report_path == the pattern stripped of surrounding whitespace
//      and no error — or, when the pattern holds a NUL byte, exactly one
//      error, naming report_path, and the default (empty) path.
#include <cstring>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "lib/core/launcher_rank.h"
#include "lib/core/options.h"
#include "tests/fuzz/fuzz_harness.h"

namespace {

std::string ReferenceExpand(const std::string& pattern, int pid) {
  std::string out;
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] == '%' && i + 1 < pattern.size() &&
        (pattern[i + 1] == 'p' || pattern[i + 1] == '%' ||
         pattern[i + 1] == 'r' || pattern[i + 1] == 'h')) {
      const char c = pattern[i + 1];
      out += c == 'p'   ? std::to_string(pid)
             : c == 'r' ? gmt::LauncherRank()
             : c == 'h' ? gmt::HostNameForPath()
                        : "%";
      ++i;
    } else {
      out += pattern[i];
    }
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  int pid = 0;
  if (size >= sizeof(pid)) {
    std::memcpy(&pid, data, sizeof(pid));
    data += sizeof(pid);
    size -= sizeof(pid);
  }
  const std::string pattern(reinterpret_cast<const char*>(data), size);

  const std::string expanded = gmt::ExpandPath(pattern, pid);
  const std::string expected = ReferenceExpand(pattern, pid);
  GMT_FUZZ_CHECK(expanded == expected,
                 "ExpandPath(\"%s\", %d) = \"%s\", expected \"%s\"",
                 pattern.c_str(), pid, expanded.c_str(), expected.c_str());
  if (pattern.find('%') == std::string::npos) {
    GMT_FUZZ_CHECK(expanded == pattern, "a pattern without %% changed");
  }
  GMT_FUZZ_CHECK(
      expanded.size() <=
          pattern.size() * 11 + pattern.size() * gmt::HostNameForPath().size(),
      "expansion of %zu bytes grew to %zu", pattern.size(), expanded.size());

  if (pattern.find(':') == std::string::npos) {
    const gmt::ParseResult parsed =
        gmt::ParseOptions(absl::StrCat("report_path=", pattern));
    if (pattern.find('\0') != std::string::npos) {
      GMT_FUZZ_CHECK(
          parsed.errors.size() == 1 &&
              parsed.errors[0].find("'report_path'") != std::string::npos,
          "a NUL byte in the path is not refused by name");
      GMT_FUZZ_CHECK(parsed.options.report_path.empty(),
                     "a refused path did not keep the default");
    } else {
      GMT_FUZZ_CHECK(parsed.errors.empty(), "valid path refused: %s",
                     parsed.errors.empty() ? "" : parsed.errors[0].c_str());
      const std::string stripped(absl::StripAsciiWhitespace(pattern));
      GMT_FUZZ_CHECK(parsed.options.report_path == stripped,
                     "report_path \"%s\" != \"%s\"",
                     parsed.options.report_path.c_str(), stripped.c_str());
    }
  }
  return 0;
}
