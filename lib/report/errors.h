// One plain record per error found (the kinds are lib/core/error_kind.h).
//
// Records hold stack ids, not stacks; they are symbolized when printed.
#ifndef GMT_LIB_REPORT_ERRORS_H_
#define GMT_LIB_REPORT_ERRORS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "lib/core/error_kind.h"
#include "lib/registry/registry.h"
#include "lib/report/oom_record.h"

namespace gmt {

struct ErrorRecord {
  ErrorKind kind = ErrorKind::kInvalidFree;
  Api api = Api::kUnknown;  // the call that exposed it
  uint64_t address = 0;     // the pointer the call was given
  int64_t offset = 0;       // address - allocation start, when one is known
  uint64_t bytes = 0;       // bytes involved (size of the bad access)
  std::optional<AllocationRecord> allocation;  // the block it concerns
  std::optional<FreedRecord> previous_free;    // for double-free
  StackId stack = kNoStack;                    // where the call was made
  uint32_t thread = 0;
  int64_t time_ns = 0;
  int cuda_result = 0;  // what CUDA returned to the program
  std::string cuda_result_name;
  std::string detail;  // one plain sentence

  // Guard-zone findings (oob-write, oob-underflow, uaf-write): changed bytes
  // relative to the user's start (`offset` is first_offset, `bytes` is
  // changed_bytes), the kernels that ran since the last clean check, and
  // which check found them ("sync", "kernel", "exit", "free", ...).
  bool has_range = false;
  int64_t first_offset = 0;
  int64_t last_offset = 0;
  uint64_t changed_bytes = 0;
  std::vector<std::string> kernels;
  uint64_t kernels_omitted = 0;  // older kernels not listed
  std::string check;
  // A finding that could name only the kernels run since the last clean
  // check made each of them a suspect (suspect_checks): the tool checks
  // after their later launches, and a write that repeats is then found by
  // the check after the one kernel that made it.
  bool suspects_checked = false;
  std::string call;  // api-bounds: the copy/set entry point ("cudaMemcpy")
  // Suppressions (lib/report/suppressions.h): the rule that would silence this
  // error, filled when a report is built.
  std::string suppression;
  // (kind oom): the diagnosis (lib/health/oom_diagnosis.h).
  std::optional<OomDiagnosis> oom;
};

// How a guard-zone finding was found, as the reports say it: "by the check
// after kernel K (check=kernel)" (or "(a suspect since an earlier finding)",
// suspect_checks), "at a synchronization (check=sync)", else
// "by the <check> check" (exit, free, quarantine, teardown, snapshot, ...).
// The per-kernel check names exactly one kernel, so the mode tells a reader
// whether the kernel named is the one that wrote or one of several.
inline std::string FoundBy(const ErrorRecord& e) {
  if (e.check == "kernel" || e.check == "suspect") {
    return "by the check after kernel " +
           (e.kernels.empty() ? std::string("?") : e.kernels.back()) +
           (e.check == "kernel" ? " (check=kernel)"
                                : " (a suspect since an earlier finding)");
  }
  if (e.check == "sync") return "at a synchronization (check=sync)";
  return "by the " + e.check + " check";
}

}  // namespace gmt

#endif  // GMT_LIB_REPORT_ERRORS_H_
