// Where a rendered report goes: stderr, a file, or both, per the options.
//
// Files are written to a fresh file of an unguessable name next to the
// report and renamed into place, so a reader never sees half a report (and
// no link planted at a predictable name is ever written through); if the
// file cannot be written the report goes to stderr with a warning instead of
// being lost.
#ifndef GMT_LIB_REPORT_REPORT_OUTPUT_H_
#define GMT_LIB_REPORT_REPORT_OUTPUT_H_

#include <string>

#include "absl/strings/string_view.h"
#include "lib/core/options.h"
#include "lib/report/report.h"

namespace gmt {

// Renders `data` in each format `options.report` names and writes each where
// `options.report_path` says.
void WriteReportOutputs(const ReportData& data, const Options& options);

// Whether the text report goes to stderr (where the user reads it as the
// program runs) rather than to a file.
bool TextReportToStderr(const Options& options);

// The html, trace and torch reports `options.report` names, each to its own
// path option (html_path, trace_path, torch_path). Called by
// WriteReportOutputs.
void WriteVizOutputs(const ReportData& data, const Options& options);

// Writes `contents` to `path` atomically: a new file of an unguessable name
// in the same folder (mkstemp), then rename(). Refuses a `path` that is a
// symbolic link. On failure returns false and sets `error` to a sentence
// naming the path and the reason.
bool WriteFileAtomically(const std::string& path, absl::string_view contents,
                         std::string* error);

}  // namespace gmt

#endif  // GMT_LIB_REPORT_REPORT_OUTPUT_H_
