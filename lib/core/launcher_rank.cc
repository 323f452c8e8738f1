#include "lib/core/launcher_rank.h"

#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/string_view.h"

namespace gmt {

std::string LauncherRank() {
  for (const char* name : kRankVariables) {
    const char* value = std::getenv(name);
    if (value == nullptr) continue;
    absl::string_view v(value);
    if (v.empty() || v.size() > 9) continue;
    bool digits = true;
    for (char c : v) digits = digits && absl::ascii_isdigit(c);
    if (digits) return std::string(v);
  }
  return "0";
}

std::string HostNameForPath() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0 || name[0] == '\0') {
    return "localhost";
  }
  std::string out(name, strnlen(name, sizeof(name)));
  for (char& c : out) {
    if (c == '/') c = '_';
  }
  return out;
}

}  // namespace gmt
