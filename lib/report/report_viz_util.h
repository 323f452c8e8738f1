// Small helpers shared by the reports to look at (report_trace.cc,
// report_torch_snapshot.cc, report_html.cc).
#ifndef GMT_LIB_REPORT_REPORT_VIZ_UTIL_H_
#define GMT_LIB_REPORT_REPORT_VIZ_UTIL_H_

#include <string>

#include "absl/strings/string_view.h"
#include "lib/report/report.h"

namespace gmt {

// "train_step (train.cu:42)": the innermost frame with a function name (or
// "0x..." for an unsymbolized one); "<api> (no stack)" without a stack.
std::string CallSiteLabel(StackId stack, const StackTable& stacks, Api api);

// One frame as "function at file:line [module]".
std::string FrameText(const SymbolizedFrame& frame);

// `text` with every invalid UTF-8 sequence replaced by '?' (pickle strings
// and JSON must decode; symbol names and argv need not be UTF-8).
std::string ValidUtf8(absl::string_view text);

}  // namespace gmt

#endif  // GMT_LIB_REPORT_REPORT_VIZ_UTIL_H_
