// Reading a saved JSON report (DESIGN §5, as lib/report_json.cc writes it)
// back into ReportData, so `gpumemtrace report FILE.json` can render it again
// with any writer (text, JSON, ...).
//
// Strict about what it knows: a present field of the wrong type, a negative
// byte count or an unknown error kind is an error naming the field
// ("errors[2].offset: expected an integer"). Tolerant of what it does not:
// unknown fields are ignored and every known field is optional except "tool",
// so reports from older and newer versions still read. An API or memory-kind
// name this version does not know becomes "unknown" with a note in
// ReportData::notes.
//
// Stacks get fresh ids (1, 2, ... in document order) in ReportData::stacks;
// times (time_s) are kept as seconds after the traced program's start, so
// RenderJson(ParseReportJson(RenderJson(d))) is the same text as
// RenderJson(d).
//
// Never throws and never crashes on any input
// (tests/fuzz/report_parse_fuzz.cc).
#ifndef GMT_LIB_REPORT_JSON_PARSE_H_
#define GMT_LIB_REPORT_JSON_PARSE_H_

#include <string>

#include "absl/strings/string_view.h"
#include "lib/report.h"

namespace gmt {

// Parses the text of a JSON report into `out`. On failure returns false,
// leaves `out` unspecified and sets `error` to one sentence: where and what
// ("not JSON: ...", "not a gpumemtrace report: ...", "leaks[0].bytes: ...").
bool ParseReportJson(absl::string_view text, ReportData* out,
                     std::string* error);

}  // namespace gmt

#endif  // GMT_LIB_REPORT_JSON_PARSE_H_
