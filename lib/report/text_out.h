// TextOut: the lines of a text report (the exit report, a snapshot diff),
// each behind the "==<pid>== " prefix that greps them apart from the
// program's own output.
//
//   TextOut out(getpid());
//   out.Line("%d leaks", n);  // "==4242== 3 leaks\n"
//   out.Blank();              // "==4242== \n"
//   std::string text = out.Take();
#ifndef GMT_LIB_REPORT_TEXT_OUT_H_
#define GMT_LIB_REPORT_TEXT_OUT_H_

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace gmt {

class TextOut {
 public:
  explicit TextOut(int pid) : prefix_(absl::StrFormat("==%d== ", pid)) {}
  template <typename... Args>
  void Line(const absl::FormatSpec<Args...>& format, const Args&... args) {
    absl::StrAppend(&out_, prefix_, absl::StrFormat(format, args...), "\n");
  }
  void Blank() { absl::StrAppend(&out_, prefix_, "\n"); }
  std::string Take() { return std::move(out_); }

 private:
  std::string prefix_;
  std::string out_;
};

// "device 0", or "host" for pinned host memory (device -1).
inline std::string DeviceLabel(int device) {
  return device < 0 ? std::string("host") : absl::StrCat("device ", device);
}

}  // namespace gmt

#endif  // GMT_LIB_REPORT_TEXT_OUT_H_
