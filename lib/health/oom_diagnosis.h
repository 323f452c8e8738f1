// Out-of-memory diagnosis: when an allocation fails for lack
// of memory, what was asked, what the card has, who holds it, and a reading
// in plain words. Pure functions of their inputs (unit tested); the engine
// gathers the inputs (Engine::OnAllocFailed, lib/engine/engine_oom.cc).
#ifndef GMT_LIB_HEALTH_OOM_DIAGNOSIS_H_
#define GMT_LIB_HEALTH_OOM_DIAGNOSIS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/functional/function_ref.h"
#include "absl/synchronization/mutex.h"
#include "lib/health/health.h"
#include "lib/registry/registry.h"
#include "lib/report/oom_record.h"

namespace gmt {

struct OomInput {
  Api api = Api::kUnknown;
  uint64_t requested = 0;
  int device = 0;
  std::string device_name;
  std::optional<uint64_t> device_free;
  std::optional<uint64_t> device_total;
  std::string meminfo_status = "ok";
  std::vector<AllocationRecord>
      live;  // this process's live blocks (any device)
  std::vector<ProcessUsage> processes;  // NVML's list (may include this one)
  std::string processes_status = "ok";
  uint32_t self_pid = 0;
  size_t max_holders = 10;
};

// Builds the diagnosis. `site_name(stack)` names a call site for the reading
// ("fill_card (app.cu:42)"); it is asked for the largest holder only.
OomDiagnosis DiagnoseOom(const OomInput& input,
                         absl::FunctionRef<std::string(StackId)> site_name);

// "Once per burst": the first failure on a device is reported; further
// failures on it are counted, not reported, until `quiet_ns` pass without a
// failure on that device.
class OomBurstLimiter {
 public:
  explicit OomBurstLimiter(int64_t quiet_ns = 1'000'000'000)
      : quiet_ns_(quiet_ns) {}
  // Whether to report a failure on `device` at `now_ns`; when true,
  // *earlier_in_burst is the number of unreported failures of the previous
  // burst on that device.
  bool ShouldReport(int device, int64_t now_ns, uint64_t* earlier_in_burst);
  // Failures not reported, over the whole run.
  uint64_t suppressed() const;

 private:
  struct State {
    int64_t last_ns = 0;
    uint64_t unreported = 0;
  };
  const int64_t quiet_ns_;
  mutable absl::Mutex mu_;
  absl::flat_hash_map<int, State> devices_ ABSL_GUARDED_BY(mu_);
  uint64_t suppressed_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace gmt

#endif  // GMT_LIB_HEALTH_OOM_DIAGNOSIS_H_
