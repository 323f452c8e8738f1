// The report: an immutable picture of the registry plus errors, and the writers
// that render it. Writers are pure functions of ReportData, so they are tested
// on made-up data and reused by the snapshot API.
#ifndef GMT_LIB_REPORT_H_
#define GMT_LIB_REPORT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "lib/errors.h"
#include "lib/symbolizer.h"

namespace gmt {

using StackTable = absl::flat_hash_map<StackId, std::vector<SymbolizedFrame>>;

struct ReportData {
  std::string version;
  int pid = 0;
  std::vector<std::string> argv;
  std::string reason;  // "exit", "request", "error"

  struct Device {
    int index = 0;     // -1: pinned host memory
    std::string name;  // "NVIDIA H200"; empty when unknown
    uint64_t total_bytes = 0;
    uint64_t peak_bytes = 0;
    uint64_t live_bytes = 0;
    uint64_t allocations = 0;
    uint64_t frees = 0;
  };
  std::vector<Device> devices;  // CUDA devices, in index order
  Device host;                  // pinned host memory (index -1)

  struct Summary {
    uint64_t allocations = 0;
    uint64_t frees = 0;
    uint64_t live_bytes_at_exit = 0;
    uint64_t errors = 0;
    uint64_t leaks = 0;  // leaked blocks
    uint64_t leaked_bytes = 0;
    uint64_t untracked_frees = 0;  // frees CUDA accepted of blocks we never saw
  } summary;

  // One entry per (call site, API, device, how it ended).
  struct Leak {
    Api api = Api::kUnknown;
    MemoryKind kind = MemoryKind::kDevice;
    int device = -1;
    StackId stack = kNoStack;
    uint64_t bytes = 0;
    uint64_t count = 0;
    uint64_t address = 0;     // one example block
    std::string released_by;  // "" or the teardown call that released it
  };
  std::vector<Leak> leaks;  // largest first
  bool leak_check = true;

  std::vector<ErrorRecord> errors;
  uint64_t errors_dropped = 0;

  // Guard zones: what was protected and checked.
  struct Guard {
    bool enabled = false;
    std::string check;  // the check= level
    uint64_t guarded = 0;
    uint64_t unguarded_oom = 0;
    uint64_t unguarded_capture = 0;
    uint64_t checks = 0;
    uint64_t check_failures = 0;
    uint64_t fill_failures = 0;  // zones never armed, so never checked
    uint64_t bytes_checked = 0;
    uint64_t quarantine_bytes = 0;
    uint64_t evicted = 0;
  } guard;

  StackTable stacks;  // every stack id referenced above, symbolized
  std::vector<std::string> notes;
};

// The human report (what goes to stderr by default). `max_leaks` 0 lists all.
// `errors_printed`: each error already went to the same stream in full when it
// was found, so the report lists them one line each.
std::string RenderText(const ReportData& data, int64_t max_leaks,
                       bool errors_printed = false);

// One error as printed when it is found.
std::string RenderErrorText(const ErrorRecord& error, const StackTable& stacks,
                            int pid);

// The JSON report of DESIGN §5.
std::string RenderJson(const ReportData& data);

// "4.0 KiB", "1.5 GiB", "512 B".
std::string HumanBytes(uint64_t bytes);

}  // namespace gmt

#endif  // GMT_LIB_REPORT_H_
