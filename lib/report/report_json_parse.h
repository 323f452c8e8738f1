// Reading a saved JSON report (DESIGN §5, as lib/report/report_json.cc writes
// it) back into ReportData, so `gpumemtrace report FILE.json` can render it
// again with any writer (text, JSON, ...).
//
// Every section the writer emits is read: devices, host, summary, leaks
// (state, reachable_via, nvtx_range), errors (guard range, first_free, the
// oom diagnosis), thread_os_ids, suppressions, guard, timeline (its series:
// the events themselves are not in the JSON), reachability, growth, health
// (the whole NVML reading, Xid events included), crash, nvtx_ranges,
// nvtx_mem (and the leaks' NVTX region fields) and notes. What the writer
// derives from those is not read but recomputed: summary.leak_sites,
// summary.nvtx_region_leaks and nvtx_region_leaked_bytes,
// leaks[].outside_block, devices[].health, the health warnings, clock reason
// names and Xid meanings.
//
// Strict about what it knows: a present field of the wrong type, a negative
// byte count, a number with a fraction where an integer belongs, or an
// unknown error kind is an error naming the field ("errors[2].offset:
// expected an integer"); so is a field the writer would drop on the way back
// out (crash.fault_block without a signal). Tolerant of what it does not:
// unknown fields are ignored and every known field and section is optional
// except "tool", so reports from older and newer versions still read. An API
// or memory-kind name this version does not know becomes "unknown" with a
// note in ReportData::notes.
//
// Numbers stay exact: integers are read as 64-bit integers (byte counts up
// to 2^64 - 1), plain numbers (ms, first_s, ...) as the same double, and
// times (time_s) as seconds after the traced program's start, bounded so
// their nanoseconds are exact. So RenderJson(ParseReportJson(RenderJson(d)))
// is the same text as RenderJson(d), and RenderText of the two the same.
//
// Stacks: a stack the writer names by id (growth[].stack_id; the crash's
// blocks, which have no frames) keeps that id; other stacks get fresh ids
// (1, 2, ... in document order, skipping the named ones) in
// ReportData::stacks.
//
// Never throws and never crashes on any input
// (tests/fuzz/report_parse_fuzz.cc).
#ifndef GMT_LIB_REPORT_REPORT_JSON_PARSE_H_
#define GMT_LIB_REPORT_REPORT_JSON_PARSE_H_

#include <string>

#include "absl/strings/string_view.h"
#include "lib/report/report.h"

namespace gmt {

// Parses the text of a JSON report into `out`. On failure returns false,
// leaves `out` unspecified and sets `error` to one sentence: where and what
// ("not JSON: ...", "not a gpumemtrace report: ...", "leaks[0].bytes: ...").
bool ParseReportJson(absl::string_view text, ReportData* out,
                     std::string* error);

}  // namespace gmt

#endif  // GMT_LIB_REPORT_REPORT_JSON_PARSE_H_
