// Snapshot diffs: the pure logic behind gmt::diff(), gmt::diff_text(),
// gmt_diff_json() and gmt_snapshot_json() (include/gmt/gmt.h).
//
// Nothing here touches the engine: functions of their arguments only, so the
// unit tests feed them made-up snapshots and documents.
// lib/engine/public_api.cc wraps them.
//
// Matching: a block of `after` is the same block as one of `before` when
// address, device, thread and allocation time are all equal. The time is what
// tells a block that stayed from one freed and allocated again at the same
// address; both sides of a JSON round trip carry it exactly (the writer prints
// the shortest text that reads back to the same double).
//
// Grouping: by (api, device, stack), where two frames are equal when function,
// file and line are; a frame with neither function nor file (not symbolized)
// compares by module and address instead, so unrelated unknown code does not
// merge. Groups are sorted by bytes, largest first, then by count; ties keep
// the order in which the snapshot lists the blocks.
#ifndef GMT_LIB_REPORT_SNAPSHOT_DIFF_H_
#define GMT_LIB_REPORT_SNAPSHOT_DIFF_H_

#include <nlohmann/json.hpp>
#include <string>

#include "gmt/gmt.h"

namespace gmt {

// What gmt::diff() returns.
SnapshotDiff DiffSnapshots(const Snapshot& before, const Snapshot& after);

// What gmt::diff_text() returns; every line starts with "==<pid>== " like the
// text report.
std::string RenderDiffText(const SnapshotDiff& diff, int pid);

// The document gmt_snapshot_json() prints (before dumping).
nlohmann::json SnapshotToJson(const Snapshot& snapshot);

// Reads a document of SnapshotToJson()'s shape back. Required: an object with
// an "allocations" array whose entries have "address" ("0x..." or a number)
// and "bytes"; everything else is optional but must have the right type when
// present. On failure returns false, leaves `out` unspecified and sets
// `error` to the place and the problem ("allocations[2].bytes: expected an
// unsigned integer"). Never throws on any document.
bool SnapshotFromJson(const nlohmann::json& doc, Snapshot* out,
                      std::string* error);

// The document gmt_diff_json() returns (before dumping); shape in gmt.h.
nlohmann::json DiffToJson(const SnapshotDiff& diff);

// gmt_diff_json() as a std::string: the diff of two gmt_snapshot_json()
// texts, or {"error":"..."} naming the argument and the problem when either
// is NULL, not JSON, or not a snapshot. Never throws.
std::string DiffJsonText(const char* before_json, const char* after_json);

}  // namespace gmt

#endif  // GMT_LIB_REPORT_SNAPSHOT_DIFF_H_
