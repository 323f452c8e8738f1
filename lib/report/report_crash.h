// The crash section of the reports: pure functions of
// ReportData::Crash, called by the JSON and text writers when a crash is
// present.
#ifndef GMT_LIB_REPORT_REPORT_CRASH_H_
#define GMT_LIB_REPORT_REPORT_CRASH_H_

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "lib/report/report.h"

namespace gmt {

// The report's "crash" object (only added when data.crash.present):
//   {"kind": "signal" | "cuda-error", "signal": 11, "signal_name": "SIGSEGV",
//    "code": 1, "code_name": "SEGV_MAPERR", "fault_address": "0x0",
//    "thread": 1234, "fault_block": {...} | null, "fault_offset": 16,
//    "call": "cudaDeviceSynchronize", "cuda_result": 700,
//    "cuda_error": "cudaErrorIllegalAddress",
//    "recent_kernels": [{"name", "stream", "context", "time_s"}],
//    "launches_seen": 3, "recent_kernels_note": "...",
//    "live_blocks": 2, "live_bytes": 4096, "live_allocations": [...],
//    "health": "...", "skipped": ["..."]}
// Signal fields are present when a signal was caught, CUDA fields when a
// sticky CUDA error was seen (both when both happened).
nlohmann::json CrashJson(const ReportData& data);

// The text report's crash section, one string per line (no prefix).
std::vector<std::string> CrashTextLines(const ReportData& data);

}  // namespace gmt

#endif  // GMT_LIB_REPORT_REPORT_CRASH_H_
