// The out-of-memory diagnosis an `oom` ErrorRecord carries.
// Plain data: built by lib/health/oom_diagnosis.h, rendered by the report
// writers.
#ifndef GMT_LIB_REPORT_OOM_RECORD_H_
#define GMT_LIB_REPORT_OOM_RECORD_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "lib/core/api.h"
#include "lib/stacks/stack_depot.h"

namespace gmt {

struct OomDiagnosis {
  int device = 0;          // the CUDA device of the failed call
  uint64_t requested = 0;  // bytes the program asked for
  // cuMemGetInfo right after the failure; empty with the reason when it could
  // not be had.
  std::optional<uint64_t> device_free;
  std::optional<uint64_t> device_total;
  std::string meminfo_status;
  // What this process holds on the device through tracked allocations
  // (the user's bytes), grouped by call site, largest first.
  uint64_t process_bytes = 0;
  uint64_t process_blocks = 0;
  struct Holder {
    uint64_t bytes = 0;
    uint64_t count = 0;
    StackId stack = kNoStack;
    Api api = Api::kUnknown;
  };
  std::vector<Holder> holders;  // the largest few
  uint64_t holders_omitted = 0;
  // Other processes on the device (NVML per-process usage), when visible.
  struct OtherProcess {
    uint32_t pid = 0;
    std::string name;
    std::optional<uint64_t> bytes;  // empty: NVML does not show it
  };
  std::vector<OtherProcess> other_processes;
  std::string other_processes_status;  // "ok" or why not visible
  // The plain-language reading.
  std::string reading;
  // Failures in the same burst before this one that were not reported again.
  uint64_t earlier_in_burst = 0;
};

}  // namespace gmt

#endif  // GMT_LIB_REPORT_OOM_RECORD_H_
