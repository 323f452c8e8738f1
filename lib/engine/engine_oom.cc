// The engine's side of the OOM diagnosis and of GPU health. The
// diagnosis itself is a pure function (lib/health/oom_diagnosis.h); here its
// inputs are gathered (live blocks, NVML per-process usage, the device's name).
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "lib/core/clock.h"
#include "lib/core/log.h"
#include "lib/core/tool_time.h"
#include "lib/engine/engine.h"
#include "lib/gpu_fault/gpu_dump_arming.h"
#include "lib/health/health.h"
#include "lib/health/nvml_startup.h"
#include "lib/health/xid_watch.h"

namespace gmt {
namespace {

// Why NVML waits for the exit report while the GPU core dump is armed.
constexpr char kNvmlAwayForGpuDump[] =
    "the driver's GPU core dump is armed (explain_faults or "
    "CUDA_ENABLE_COREDUMP_ON_EXCEPTION), and the driver writes none while "
    "NVML is in use in the process";

}  // namespace

void Engine::OnAllocFailed(const AllocFailure& failure) {
  if (!options_.enabled || !options_.oom_report) return;
  uint64_t earlier = 0;
  if (!oom_limiter_.ShouldReport(failure.device, NowNs(), &earlier)) return;

  OomInput in;
  in.api = failure.api;
  in.requested = failure.bytes;
  in.device = failure.device;
  {
    absl::MutexLock lock(&devices_mu_);
    auto it = devices_.find(failure.device);
    if (it != devices_.end()) in.device_name = it->second.name;
  }
  in.device_free = failure.device_free;
  in.device_total = failure.device_total;
  in.meminfo_status = failure.meminfo_status;
  in.live = LiveAllocations();
  in.self_pid = static_cast<uint32_t>(getpid());
  if (options_.health && gpu_fault::GpuDumpArmed()) {
    in.processes_status = absl::StrCat("not read: ", kNvmlAwayForGpuDump);
  } else if (options_.health) {
    // CUDA ordinals are taken as NVML indices (true unless
    // CUDA_VISIBLE_DEVICES reorders the devices).
    in.processes = ReadProcessUsage(failure.device, &in.processes_status);
  } else {
    in.processes_status = "not read (health=0)";
  }
  OomDiagnosis d = DiagnoseOom(in, [this](StackId id) { return SiteName(id); });
  d.earlier_in_burst = earlier;

  ErrorRecord e;
  e.kind = ErrorKind::kOom;
  e.api = failure.api;
  e.bytes = failure.bytes;
  e.stack = failure.stack;
  e.thread = CurrentThreadIndex();
  e.time_ns = NowNs();
  e.cuda_result = failure.cuda_result;
  e.cuda_result_name =
      failure.cuda_result_name != nullptr ? failure.cuda_result_name : "";
  e.detail = d.reading;
  e.oom = std::move(d);
  RecordError(std::move(e));
}

void Engine::OnCudaVersions(int runtime_version, int driver_version) {
  NoteCudaVersions(runtime_version, driver_version);
  // The program's first CUDA call: NVML (and the Xid watcher) start now, on
  // a thread of their own (lib/health/nvml_startup.h).
  if (!options_.enabled || !options_.health) return;
  if (gpu_fault::GpuDumpArmed()) {
    // NVML in the process keeps the driver from writing the dump, and the
    // faulting program then hangs (gpu_dump_arming.h): the dump wins, and
    // health is read at exit only.
    DeclineXidWatch(kNvmlAwayForGpuDump);
    LogNote(1, "health: NVML not started, %s", kNvmlAwayForGpuDump);
    return;
  }
  StartNvmlInBackground(options_.xid_events);
}

void Engine::TakeHealthState(absl::string_view reason, ReportState* state) {
  if (!options_.health) return;
  // A crash report may run in a signal handler: no dlopen or NVML there.
  if (reason == "crash") return;
  state->health_read = true;
  state->oom_reports_suppressed = oom_limiter_.suppressed();
  if (forked_child()) {
    state->health.reason = NvmlNotReadyReason(NvmlStart::kNotStarted, 0);
    return;
  }
  if (gpu_fault::GpuDumpArmed()) {
    if (reason != "exit") {
      state->health.reason =
          absl::StrCat("not read before exit: ", kNvmlAwayForGpuDump);
      return;
    }
    DeclineXidWatch(kNvmlAwayForGpuDump);  // no CUDA call: not said yet
  }
  // The background start, if there was one, finishes first (bounded: a
  // report never waits long on NVML). Without a CUDA call there was none,
  // and NVML loads here, as the report needs it.
  constexpr int kStartWaitMs = 500;
  // How long the report at a sticky CUDA error waits for the fault's Xid:
  // on the H200 the GPU case crash_illegal_address once got a report
  // without it when the report did not wait.
  constexpr int kFaultXidWaitMs = 1000;
  NvmlStart start;
  {
    const int64_t waited_from = PreciseNowNs();
    start = WaitForNvmlStart(kStartWaitMs);
    if (reason == "exit") {
      AddToolTime(ToolPhase::kExitHealth, PreciseNowNs() - waited_from);
    }
  }
  if (start == NvmlStart::kRunning) {
    state->health.reason = NvmlNotReadyReason(start, kStartWaitMs);
    return;
  }
  if (reason == "cuda-error") {
    // The fault's Xid reaches NVML just after the program got the error.
    WaitForFirstXid(/*wait_ms=*/kFaultXidWaitMs);
  }
  if (reason == "exit") {
    // The last report: let the Xid thread leave NVML before exit tears it
    // down (bounded: never blocks exit for long; asked to stop at the exit
    // hook already, so it has usually left).
    StopXidWatch(/*wait_ms=*/300);
  }
  state->health = ReadHealth();
}

}  // namespace gmt
