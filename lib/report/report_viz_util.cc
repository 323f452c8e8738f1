#include "lib/report/report_viz_util.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace gmt {

std::string FrameText(const SymbolizedFrame& f) {
  std::string out =
      f.function.empty() ? absl::StrFormat("0x%x", f.address) : f.function;
  if (!f.file.empty()) absl::StrAppend(&out, " at ", f.file, ":", f.line);
  if (!f.module.empty()) absl::StrAppend(&out, " [", f.module, "]");
  return out;
}

std::string CallSiteLabel(StackId stack, const StackTable& stacks, Api api) {
  auto it = stacks.find(stack);
  if (it == stacks.end() || it->second.empty()) {
    return absl::StrCat(ApiName(api), " (no stack)");
  }
  const SymbolizedFrame* pick = &it->second.front();
  for (const SymbolizedFrame& f : it->second) {
    if (!f.function.empty()) {
      pick = &f;
      break;
    }
  }
  std::string out = pick->function.empty()
                        ? absl::StrFormat("0x%x", pick->address)
                        : pick->function;
  if (!pick->file.empty()) {
    absl::string_view file = pick->file;
    size_t slash = file.rfind('/');
    if (slash != absl::string_view::npos) file.remove_prefix(slash + 1);
    absl::StrAppend(&out, " (", file, ":", pick->line, ")");
  } else if (!pick->module.empty()) {
    absl::StrAppend(&out, " [", pick->module, "]");
  }
  return out;
}

std::string ValidUtf8(absl::string_view text) {
  std::string out;
  out.reserve(text.size());
  size_t i = 0;
  while (i < text.size()) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    size_t len = c < 0x80           ? 1
                 : (c >> 5) == 0x6  ? 2
                 : (c >> 4) == 0xE  ? 3
                 : (c >> 3) == 0x1E ? 4
                                    : 0;
    bool ok = len > 0 && i + len <= text.size();
    for (size_t k = 1; ok && k < len; ++k) {
      ok = (static_cast<unsigned char>(text[i + k]) & 0xC0) == 0x80;
    }
    // Overlong forms and surrogates are rejected by Python's decoder too.
    if (ok && len == 2) ok = c >= 0xC2;
    if (ok && len == 3) {
      const unsigned char d = static_cast<unsigned char>(text[i + 1]);
      ok = !(c == 0xE0 && d < 0xA0) && !(c == 0xED && d >= 0xA0);
    }
    if (ok && len == 4) {
      const unsigned char d = static_cast<unsigned char>(text[i + 1]);
      ok = c <= 0xF4 && !(c == 0xF0 && d < 0x90) && !(c == 0xF4 && d >= 0x90);
    }
    if (ok) {
      out.append(text.data() + i, len);
      i += len;
    } else {
      out.push_back('?');
      ++i;
    }
  }
  return out;
}

}  // namespace gmt
