// The crash report. The engine's side of a fatal signal
// (lib/engine/crash_handler.h) and of the first sticky CUDA error
// (lib/core/sticky_errors.h): what the crash was, the newest kernel launches, the
// live blocks, and the report written before the process can die.
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "lib/core/clock.h"
#include "lib/engine/engine.h"
#include "lib/core/log.h"
#include "lib/report/report_output.h"

namespace gmt {
namespace {

constexpr size_t kMaxRecentKernels = 16;

// Takes `mu` if it comes free within about `ms` milliseconds. A signal
// handler must never block on a lock: its own thread may hold it.
bool TryLockFor(absl::Mutex& mu, int ms) {
  struct timespec one_ms = {0, 1000 * 1000};
  for (int i = 0;; ++i) {
    if (mu.TryLock()) return true;
    if (i >= ms) return false;
    nanosleep(&one_ms, nullptr);
  }
}

int KernelThreadId() { return static_cast<int>(syscall(SYS_gettid)); }

}  // namespace

void Engine::OnStickyError(absl::string_view call, int code,
                           const char* code_name) {
  if (!options_.enabled || !options_.crash_report) return;
  if (sticky_seen_.exchange(true, std::memory_order_acq_rel)) return;
  ErrorRecord e;
  e.kind = ErrorKind::kCudaError;
  e.call = std::string(call);
  e.stack = CaptureCallStack();
  e.thread = CurrentThreadIndex();
  e.time_ns = NowNs();
  e.cuda_result = code;
  e.cuda_result_name = code_name != nullptr ? code_name : "";
  // The kernels that may have caused it: distinct names, newest last. The
  // error surfaces at a later call, so these are the candidates (as the guard
  // findings' "kernels run since the last clean check").
  for (const RecentLaunches::Entry& launch :
       recent_launches_.Newest(RecentLaunches::kCapacity)) {
    std::string name = KernelName(launch.kernel);
    e.kernels.erase(std::remove(e.kernels.begin(), e.kernels.end(), name),
                    e.kernels.end());
    e.kernels.push_back(std::move(name));
  }
  if (e.kernels.size() > kMaxRecentKernels) {
    e.kernels_omitted = e.kernels.size() - kMaxRecentKernels;
    e.kernels.erase(e.kernels.begin(), e.kernels.end() - kMaxRecentKernels);
  }
  e.detail = absl::StrFormat(
      "%s returned %s (%d): work on the GPU failed and the CUDA context is "
      "lost (every later call in it fails); %s",
      call, e.cuda_result_name, code,
      e.kernels.empty()
          ? std::string("no kernel launch was seen by the tool")
          : absl::StrCat("the newest kernel launched was ", e.kernels.back()));
  {
    absl::MutexLock lock(&crash_mu_);
    crash_.present = true;
    if (crash_.kind.empty()) crash_.kind = "cuda-error";
    crash_.call = std::string(call);
    crash_.cuda_result = code;
    crash_.cuda_result_name = e.cuda_result_name;
    if (crash_.thread == 0) crash_.thread = KernelThreadId();
    crash_.skipped.push_back(
        "guard zones: the CUDA context is lost, so the tool does no more GPU "
        "work; zones not checked since the last clean check stay unverified");
  }
  RecordError(std::move(e));  // prints it; halt_on_error reports and aborts
  // The report now: the program usually exits right after such an error.
  if (final_done_.load(std::memory_order_acquire) || getpid() != owner_pid_) {
    return;
  }
  // Reason "cuda-error", not "crash": this report is not written from a
  // signal handler, so it reads device health (NVML) too.
  WriteReport("cuda-error");
}

void Engine::WriteCrashReport(const CrashSignal& signal) {
  if (getpid() != owner_pid_) return;  // a fork()ed child: not our picture
  if (final_done_.exchange(true, std::memory_order_acq_rel)) {
    LogError("the exit report was written already; no crash report");
    return;
  }
  if (!TryLockFor(crash_mu_, 100)) {
    LogError("crash state locked (by the crashing thread?): no crash report");
    return;
  }
  crash_.present = true;
  crash_.kind = "signal";  // what triggered this report
  crash_.signal = signal.signal;
  crash_.signal_name = CrashSignalName(signal.signal);
  crash_.code = signal.code;
  crash_.code_name = CrashCodeName(signal.signal, signal.code);
  crash_.fault_address = signal.fault_address;
  crash_.has_fault_address = signal.has_fault_address;
  crash_.thread = signal.thread;
  crash_.skipped.push_back(
      "guard zones: not checked at the crash (no GPU work from a signal "
      "handler)");
  crash_mu_.Unlock();
  // A report in progress on another thread gets a moment to finish; one held
  // by the crashing thread itself (a fault inside the tool) never would.
  if (!TryLockFor(report_mu_, 2000)) {
    LogError(
        "another report holds the report lock (a fault inside the tool?): no "
        "crash report");
    return;
  }
  ReportData data = BuildReport("crash");
  WriteReportOutputs(data, options_);
  report_mu_.Unlock();
}

void Engine::TakeCrashState(ReportState* state) {
  // Try-lock: this may run in a signal handler (WriteCrashReport).
  if (!TryLockFor(crash_mu_, 100)) return;
  if (!crash_.present) {
    crash_mu_.Unlock();
    return;
  }
  state->crash = crash_;
  crash_mu_.Unlock();
  ReportData::Crash& c = state->crash;
  for (const RecentLaunches::Entry& launch :
       recent_launches_.Newest(kMaxRecentKernels)) {
    c.recent_kernels.push_back(ReportData::Crash::Launch{
        KernelName(launch.kernel), launch.stream, launch.context,
        static_cast<double>(SinceStartNs(launch.time_ns)) * 1e-9});
  }
  c.launches_seen = recent_launches_.Count();
}

}  // namespace gmt
