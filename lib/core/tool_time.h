// The tool's own one-time work on the program's critical path, by phase: what
// start-up and exit cost a short job (a test, a notebook cell, a CI step), read
// off the process itself rather than from whole-process wall times, whose
// spread (a PyTorch import varies by half a second) hides it. Logged at exit
// at verbosity=1 (benchmarks/gpu/startup_exit.sh reads that line).
#ifndef GMT_LIB_CORE_TOOL_TIME_H_
#define GMT_LIB_CORE_TOOL_TIME_H_

#include <cstdint>
#include <string>

#include "lib/core/clock.h"

namespace gmt {

enum class ToolPhase : uint8_t {
  kEngine,      // the engine: options, stack warm-up, crash handlers
  kCupti,       // CUPTI loaded and subscribed, at the first CUDA call
  kGuardSetup,  // a context's guard kernels loaded, at its first guarded block
  kExitScan,    // the reachability scan of live blocks
  kExitHealth,  // waiting at exit for NVML, started in the background
  kExitReport,  // building and writing the exit report (its NVML wait too)
  kCount,
};

// Adds `ns` to `phase` (thread-safe; phases may run on several threads).
void AddToolTime(ToolPhase phase, int64_t ns);
int64_t ToolTimeNs(ToolPhase phase);

// "start-up 4.2 ms (engine 1.0, CUPTI 2.1, guard kernels 1.1), exit 51.3 ms
// (reachability 40.2, report 11.1, of which waiting for NVML 0.0)".
std::string ToolTimeText();

// The cost of one stack capture, the tool's largest per-allocation cost in a
// framework with deep C++ frames under a Python script: one capture in
// kStackSampleEvery on each thread is timed in its three parts, the native
// unwind, the Python frames spliced in, and the depot's interning; all
// captures are counted. A few clock reads per sampled capture, nothing on the
// others but a thread-local counter.
inline constexpr uint32_t kStackSampleEvery = 64;
// Whether this capture is one to time (counts it).
bool StackCaptureSampled();
void AddStackCaptureSample(int64_t native_ns, int64_t python_ns,
                           int64_t depot_ns);
// "stack capture: ~6400 captures; per capture native 2.41 us, Python 0.70 us,
// depot 0.12 us (1 in 64 timed)", or "" when none was timed.
std::string StackCaptureText();

// The tool's own host time per interposed call, by kind: where a framework's
// step goes when the tool's per-call work, not its start-up, is the cost (a
// PyTorch step makes hundreds of launches and tens of allocations). One call
// in kCallSampleEvery of each kind on each thread is timed, less the time of
// the program's own CUDA call inside it (SampledCallTime::Forward); every call
// is counted. What runs inside that call counts as the call's: a CUPTI
// callback of the tool's there is not in the figure. Launches seen only from
// CUPTI (injection without the shims) are not timed.
enum class ToolCall : uint8_t {
  kAllocation,       // a tracked or guarded allocation
  kFree,             // a free (held in quarantine or handed to CUDA)
  kLaunch,           // a kernel or graph launch: fills before, checks after
  kSynchronization,  // after a synchronizing call: the check it enqueues
  kCount,
};
inline constexpr uint32_t kCallSampleEvery = 64;
// Whether this call is one to time (counts it).
bool CallSampled(ToolCall kind);
void AddCallSample(ToolCall kind, int64_t ns);
// "tool time per call: allocation 3.10 us x ~6400 = 19.8 ms, free ...,
// launch ..., synchronization ... (the program's own CUDA calls excluded;
// 1 in 64 timed)", the kinds with a timed call only; "" when none was timed.
std::string ToolCallText();

// Fills of guard zones on a program's stream (a new tensor's canaries and a
// freed one's bytes, written just before the stream's next launch), by how
// many zones each held and whether it was one launch of the fill kernel
// (`kernel`) or a memset a zone (DriverDeviceOps::FillInline): which of the
// two a framework's step makes decides much of its cost; `with_check`: the
// launch also checked blocks that left the quarantine (CheckAndFill), which
// would otherwise have been a launch of their own. Every fill is counted (a
// relaxed increment or a few).
void CountProgramStreamFill(uint64_t zones, bool kernel = false,
                            bool with_check = false);
// "program-stream fills: 60000 (zones 1: 120, 2: 3000, 3: 50000, 4 or more:
// 6880; 7000 by the fill kernel, 2500 of them with a check)", or "" when
// there was none.
std::string ProgramStreamFillText();

// The tool's own GPU work inside a sampled call, by what it is for: which of
// the driver calls the tool makes (a fill is one to three memsets or a
// launch; a check a launch, a copy back and an event) a call's time goes to.
// Timed only inside a sampled call (SampledCallTime), on its thread.
enum class ToolGpuWork : uint8_t {
  kFill,     // canaries and freed patterns written (DeviceOps::Fill)
  kOrder,    // the program's stream made to wait for the tool's fills
  kCheck,    // a zone check enqueued (Check, CheckAsync, CheckAfterKernel)
  kPoll,     // a check's answer asked for, or waited for
  kRelease,  // a held block given back to CUDA
  kCapture,  // whether a stream is being captured
  kSync,     // a context synchronized
  kCount,
};
// The sampled call kind running on this thread, or -1 (none, or not a
// sampled one).
int CurrentSampledCall();
void SetCurrentSampledCall(int kind);
void AddGpuWorkSample(int call_kind, ToolGpuWork work, int64_t ns);
// "tool GPU calls, us per call: free check 1.20 poll 0.31 release 0.80;
// launch fill 1.10 order 0.02 capture 0.05", or "" when none was timed.
std::string ToolGpuWorkText();

// Times its scope as `work` of the sampled call on this thread, if any.
// Work inside work (a per-kernel check that falls back to the zone-table
// check) counts once, as the outer one's.
class SampledGpuWork {
 public:
  explicit SampledGpuWork(ToolGpuWork work)
      : work_(work),
        call_(CurrentSampledCall()),
        start_(call_ >= 0 ? PreciseNowNs() : 0) {
    if (call_ >= 0) SetCurrentSampledCall(-1);
  }
  ~SampledGpuWork() {
    if (call_ >= 0) {
      AddGpuWorkSample(call_, work_, PreciseNowNs() - start_);
      SetCurrentSampledCall(call_);
    }
  }
  SampledGpuWork(const SampledGpuWork&) = delete;
  SampledGpuWork& operator=(const SampledGpuWork&) = delete;

 private:
  ToolGpuWork work_;
  int call_;
  int64_t start_;
};

// Times the tool's part of one call of `kind`, when it is a sampled one.
class SampledCallTime {
 public:
  explicit SampledCallTime(ToolCall kind)
      : kind_(kind),
        sampled_(CallSampled(kind)),
        start_(sampled_ ? PreciseNowNs() : 0) {
    if (sampled_) {
      outer_ = CurrentSampledCall();
      SetCurrentSampledCall(static_cast<int>(kind));
    }
  }
  ~SampledCallTime() {
    if (sampled_) {
      AddCallSample(kind_, PreciseNowNs() - start_ - forwarded_);
      SetCurrentSampledCall(outer_);
    }
  }
  SampledCallTime(const SampledCallTime&) = delete;
  SampledCallTime& operator=(const SampledCallTime&) = delete;

  // Makes the program's own CUDA call, `call()`, whose time is not the
  // tool's (for a guarded block, the enlarged call that stands for it).
  template <typename Call>
  auto Forward(Call&& call) {
    if (!sampled_) return call();
    const int64_t from = PreciseNowNs();
    // The program's call is not the tool's GPU work either.
    SetCurrentSampledCall(-1);
    auto result = call();
    SetCurrentSampledCall(static_cast<int>(kind_));
    forwarded_ += PreciseNowNs() - from;
    return result;
  }

 private:
  ToolCall kind_;
  bool sampled_;
  int64_t start_;
  int64_t forwarded_ = 0;
  int outer_ = -1;
};

// Times its scope into `phase`.
class ScopedToolTime {
 public:
  explicit ScopedToolTime(ToolPhase phase)
      : phase_(phase), start_(PreciseNowNs()) {}
  ~ScopedToolTime() { AddToolTime(phase_, PreciseNowNs() - start_); }
  ScopedToolTime(const ScopedToolTime&) = delete;
  ScopedToolTime& operator=(const ScopedToolTime&) = delete;

 private:
  ToolPhase phase_;
  int64_t start_;
};

}  // namespace gmt

#endif  // GMT_LIB_CORE_TOOL_TIME_H_
