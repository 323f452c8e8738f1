// The crash report. The engine's side of a fatal signal
// (lib/engine/crash_handler.h) and of the first sticky CUDA error
// (lib/core/sticky_errors.h): what the crash was, the newest kernel launches,
// the live blocks, and the report written before the process can die.
#include <errno.h>
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "lib/core/clock.h"
#include "lib/core/log.h"
#include "lib/engine/engine.h"
#include "lib/engine/signal_safe_text.h"
#include "lib/gpu_fault/fault_explanation.h"
#include "lib/gpu_fault/fault_text.h"
#include "lib/gpu_fault/gpu_core_dump.h"
#include "lib/gpu_fault/gpu_dump_arming.h"
#include "lib/report/report_assembly.h"
#include "lib/report/report_output.h"
#include "lib/stacks/python_frames.h"

namespace gmt {
namespace {

constexpr size_t kMaxRecentKernels = 16;

// Takes `mu` if it comes free within about `ms` milliseconds. A signal
// handler must never block on a lock: its own thread may hold it.
bool TryLockFor(absl::Mutex& mu, int ms) {
  struct timespec one_ms = {0, 1000L * 1000};
  for (int i = 0;; ++i) {
    if (mu.TryLock()) return true;
    if (i >= ms) return false;
    nanosleep(&one_ms, nullptr);
  }
}

int KernelThreadId() { return static_cast<int>(syscall(SYS_gettid)); }

// `argv` as a shell takes it back: a word with anything but letters, digits
// and _ . / = : , + - in single quotes.
std::string ShellWords(const std::vector<std::string>& argv) {
  static constexpr std::string_view kPlain =
      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./=:,+-";
  std::string out;
  for (const std::string& word : argv) {
    if (!out.empty()) out += ' ';
    if (!word.empty() && word.find_first_not_of(kPlain) == std::string::npos) {
      out += word;
      continue;
    }
    out += '\'';
    for (char c : word) {
      if (c == '\'') {
        out += "'\\''";
      } else {
        out += c;
      }
    }
    out += '\'';
  }
  return out;
}

// A Python file of an installed package or of the standard library, not the
// script's: below it, a launch's frames are the library's.
bool IsPythonLibraryFile(absl::string_view file) {
  return absl::StrContains(file, "/site-packages/") ||
         absl::StrContains(file, "/dist-packages/") ||
         absl::StrContains(file, "/lib/python3.") || file.empty() ||
         file.front() == '<';  // <frozen ...>, <string>
}

}  // namespace

std::string Engine::LaunchSite(const RecentLaunches::Entry& launch) {
  if (launch.site_count == 0) return "";
  const std::string kernel = KernelName(launch.kernel);
  const absl::string_view base =
      absl::string_view(kernel).substr(0, kernel.find('('));
  // nvcc's host side of a launch: the kernel's stub (a host function of the
  // kernel's own name, and __device_stub__*) calls cudaLaunchKernel for the
  // line that wrote kernel<<<...>>>. Optimized, the stubs are inlined into
  // that line's function and sit at the kernel's own line: the inline chain
  // is followed out of them.
  auto is_stub = [&](const SymbolizedFrame& f) {
    const absl::string_view name = f.function;
    return name == kernel || name == base ||
           (!name.empty() && absl::EndsWith(base, absl::StrCat(" ", name))) ||
           absl::StartsWith(name, "__device_stub__") ||
           absl::StartsWith(name, "cudaLaunchKernel");
  };
  // The native line, and in a Python process the script's line: the
  // innermost Python frame outside installed packages and the standard
  // library (read at the launch: lib/stacks/python_frames.h), else the
  // innermost one.
  std::string innermost;
  std::string native;
  std::string python;
  std::string python_innermost;
  for (uint32_t i = 0; i < launch.site_count; ++i) {
    if (IsPythonFrame(launch.site[i])) {
      for (const SymbolizedFrame& f :
           symbolizer_.InlineFrames(launch.site[i])) {
        if (python_innermost.empty()) python_innermost = FrameSiteText(f);
        if (python.empty() && !IsPythonLibraryFile(f.file)) {
          python = FrameSiteText(f);
        }
      }
      continue;
    }
    if (!native.empty()) continue;
    for (const SymbolizedFrame& f : symbolizer_.InlineFrames(launch.site[i])) {
      if (IsCudaInternalFrame(f)) continue;
      std::string where = FrameSiteText(f);
      if (innermost.empty()) innermost = where;
      if (!is_stub(f)) {
        native = std::move(where);
        break;
      }
    }
  }
  // Only nvcc's frames were kept: the best there is.
  if (native.empty()) native = std::move(innermost);
  if (python.empty()) python = std::move(python_innermost);
  if (python.empty()) return native;
  if (native.empty()) return python;
  return absl::StrCat(native, ", from Python at ", python);
}

std::string Engine::DescribeLaunch(const RecentLaunches::Entry& launch) {
  std::string out =
      absl::StrCat("The newest launch: ", KernelName(launch.kernel));
  if (const std::string site = LaunchSite(launch); !site.empty()) {
    absl::StrAppend(&out, ", launched at ", site, ",");
  }
  const uint32_t* g = launch.grid;
  const uint32_t* b = launch.block;
  if (g[0] == 0 && b[0] == 0) {
    absl::StrAppend(&out,
                    " (grid and block not seen: a launch only CUPTI saw)");
  } else {
    absl::StrAppend(
        &out, absl::StrFormat(" with grid (%u,%u,%u) and block (%u,%u,%u)",
                              g[0], g[1], g[2], b[0], b[1], b[2]));
  }
  if (!launch.args_read) {
    absl::StrAppend(&out,
                    "; its arguments could not be read (no parameter layout)");
    return out;
  }
  if (launch.word_count == 0) {
    absl::StrAppend(&out, "; no argument holds an address");
    return out;
  }
  for (uint32_t i = 0; i < launch.word_count; ++i) {
    const uint64_t value = launch.words[i];
    const std::string who =
        launch.word_params[i] == kNoParam
            ? std::string("a parameter word")
            : absl::StrCat("argument ", launch.word_params[i]);
    std::optional<AllocationRecord> r = pointers_.FindContaining(value);
    if (!r) {
      absl::StrAppend(&out, absl::StrFormat("; %s 0x%x is not a tracked block",
                                            who, value));
      continue;
    }
    const uint64_t offset = value - r->address;
    const std::string site = SiteName(r->stack);
    absl::StrAppend(
        &out,
        absl::StrFormat("; %s 0x%x is %s the %s block from %s", who, value,
                        offset == 0 ? std::string("the start of")
                                    : absl::StrCat(offset, " bytes into"),
                        HumanBytes(r->bytes), ApiName(r->api)),
        site.empty() ? "" : absl::StrCat(" allocated at ", site));
  }
  return out;
}

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
  // The newest launch as it was made, its address arguments resolved: the
  // usual suspect, and what it was given to write through.
  if (std::vector<RecentLaunches::Entry> newest = recent_launches_.Newest(1);
      !newest.empty()) {
    absl::StrAppend(&e.detail, ". ", DescribeLaunch(newest.back()));
  }
  // The fault itself (which thread, which line, which address) is in the
  // driver's GPU core dump, which explain_faults arms and the crash report
  // reads. Not said where a dump is armed already: the driver then aborts
  // the program itself.
  const char* armed = std::getenv("CUDA_ENABLE_COREDUMP_ON_EXCEPTION");
  if (armed == nullptr || std::string_view(armed) != "1") {
    absl::StrAppend(&e.detail,
                    ". Which thread faulted, at which line and address (from "
                    "the driver's GPU core dump; GMT_OPTIONS=explain_faults=1 "
                    "under plain LD_PRELOAD): run it again as `gpumemtrace "
                    "run --explain-faults -- ",
                    ShellWords(ProgramArgv()), "`");
  }
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

// ---- At a fatal signal --------------------------------------------------
// From the signal handler: nothing here allocates, takes a lock it may wait
// for, or calls anything but write(2) and lock-free reads.

void Engine::NoteCrashSignal(const CrashSignal& signal) {
  noted_signal_.code.store(signal.code, std::memory_order_relaxed);
  noted_signal_.fault_address.store(signal.fault_address,
                                    std::memory_order_relaxed);
  noted_signal_.has_fault_address.store(signal.has_fault_address,
                                        std::memory_order_relaxed);
  noted_signal_.thread.store(signal.thread, std::memory_order_relaxed);
  noted_signal_.frames = signal.frames;
  noted_signal_.frame_count = signal.frame_count;
  // Last: a report that sees the signal sees the rest.
  noted_signal_.signal.store(signal.signal, std::memory_order_release);
}

void Engine::WriteCrashSummary(const CrashSignal& signal, int fd) {
  SignalSafeText out(owner_pid_);
  // Live blocks, and the host-visible one the fault address lies in or near.
  uint64_t blocks = 0;
  uint64_t bytes = 0;
  AllocationRecord near;
  uint64_t near_distance = kCrashNearBytes + 1;
  const int busy = pointers_.TryVisitLive([&](const AllocationRecord& r) {
    ++blocks;
    if (CountsTowardsUsage(r.kind)) bytes += r.bytes;
    if (!signal.has_fault_address || !HostVisible(r.kind)) return;
    const uint64_t a = signal.fault_address;
    uint64_t distance = 0;
    if (a < r.address) {
      distance = r.address - a;
    } else if (a >= r.address + r.bytes) {
      distance = a - (r.address + r.bytes) + 1;
    }
    if (distance < near_distance) {
      near = r;
      near_distance = distance;
    }
  });
  out.Begin()
      .Add("live at the crash: ")
      .Decimal(blocks)
      .Add(" blocks, ")
      .Decimal(bytes)
      .Add(" bytes");
  if (busy > 0) {
    out.Add(" (")
        .Decimal(static_cast<uint64_t>(busy))
        .Add(" of 64 registry shards were busy and are not counted)");
  }
  out.WriteLine(fd);
  if (near_distance <= kCrashNearBytes) {
    out.Begin().Add("the fault address ").Hex(signal.fault_address);
    const uint64_t a = signal.fault_address;
    if (a < near.address) {
      out.Add(" lies ").Decimal(near.address - a).Add(" bytes before");
    } else if (a >= near.address + near.bytes) {
      out.Add(" lies ")
          .Decimal(a - (near.address + near.bytes))
          .Add(" bytes past the end of");
    } else {
      out.Add(" lies ").Decimal(a - near.address).Add(" bytes into");
    }
    out.Add(" a ")
        .Add(ApiName(near.api).data())
        .Add(" block of ")
        .Decimal(near.bytes)
        .Add(" bytes at ")
        .Hex(near.address);
    out.WriteLine(fd);
  }
  // The crashing thread's return addresses, raw: the full report names them
  // (file:line), this line is what survives when it cannot be written.
  if (signal.frames != nullptr && signal.frame_count > 0) {
    out.Begin().Add("stack (innermost first):");
    for (int i = 0; i < signal.frame_count && i < 24; ++i) {
      out.Add(" ").Hex(signal.frames[i]);
    }
    out.WriteLine(fd);
  }
  // The newest kernel launches (the ring is lock-free; names by try-lock).
  RecentLaunches::Entry launches[kMaxRecentKernels];
  const size_t n = recent_launches_.NewestInto(launches, kMaxRecentKernels);
  out.Begin().Add("recent kernels (newest last): ");
  if (n == 0) out.Add("none seen");
  for (size_t i = 0; i < n; ++i) {
    char name[160];
    if (!kernel_names_.TryCopyName(launches[i].kernel, name, sizeof(name))) {
      name[0] = '?';
      name[1] = '\0';
    }
    out.Add(i == 0 ? "" : ", ").Add(name);
  }
  out.WriteLine(fd);
}

void Engine::WriteCrashReportInChild() {
  // A copy of the crashed process, alone in it: the report lock may be held
  // by a thread that does not exist here, and no other report can run.
  if (!report_mu_.TryLock()) {
    LogNote(1, "the report lock was held at the crash; writing anyway");
  }
  ReportData data = BuildReport("crash");
  WriteReportOutputs(data, options_);
}

void Engine::TakeCrashState(ReportState* state) {
  // Try-lock: this runs in the crash report's writer, a copy of a process
  // whose crashing thread may have held it.
  if (!TryLockFor(crash_mu_, 100)) return;
  state->crash = crash_;
  crash_mu_.Unlock();
  ReportData::Crash& c = state->crash;
  // A fatal signal, noted from the handler (atomics only): what this report
  // is about, or about the exit of a program that recovered from it.
  if (const int sig = noted_signal_.signal.load(std::memory_order_acquire);
      sig != 0) {
    c.present = true;
    c.kind = "signal";
    c.signal = sig;
    c.signal_name = CrashSignalName(sig);
    c.code = noted_signal_.code.load(std::memory_order_relaxed);
    c.code_name = CrashCodeName(sig, c.code);
    c.fault_address =
        noted_signal_.fault_address.load(std::memory_order_relaxed);
    c.has_fault_address =
        noted_signal_.has_fault_address.load(std::memory_order_relaxed);
    c.thread = noted_signal_.thread.load(std::memory_order_relaxed);
    // Interned here, in the report's writer (a copy of the process, free to
    // allocate): symbolized like every other stack of the report.
    if (noted_signal_.frames != nullptr && noted_signal_.frame_count > 0) {
      c.stack = depot_.Put(noted_signal_.frames, noted_signal_.frame_count);
    }
    c.skipped.push_back(
        "guard zones: not checked at the crash (no GPU work from a signal "
        "handler)");
  }
  if (!c.present) return;
  // The driver aborts a program after writing the GPU core dump it was armed
  // for: that dump says which warp faulted, where, at what address.
  if (c.signal == SIGABRT) ExplainGpuDump(&c);
  for (const RecentLaunches::Entry& launch :
       recent_launches_.Newest(kMaxRecentKernels)) {
    c.recent_kernels.push_back(ReportData::Crash::Launch{
        KernelName(launch.kernel), launch.stream, launch.context,
        static_cast<double>(SinceStartNs(launch.time_ns)) * 1e-9});
  }
  c.launches_seen = recent_launches_.Count();
}

// ---- The driver's GPU core dump (explain_faults) ------------------------

void Engine::ArmGpuDumpAtLoad() {
  const Options& options = GlobalOptions();
  if (!options.enabled || !options.explain_faults) return;
  if (absl::Status armed =
          gpu_fault::ArmGpuDumpForProcess(options.gpu_dump_dir);
      !armed.ok()) {
    LogError("explain_faults: %s", std::string(armed.message()).c_str());
    return;
  }
  LogNote(1, "explain_faults: the GPU core dump goes to %s",
          gpu_fault::ArmedGpuDumpOfProcess()->dir.c_str());
}

void Engine::DisarmGpuDumpAtExit() { gpu_fault::DisarmGpuDumpOfProcess(); }

void Engine::ExplainGpuDump(ReportData::Crash* crash) {
  const gpu_fault::ArmedGpuDump* armed = gpu_fault::ArmedGpuDumpOfProcess();
  if (armed == nullptr) return;
  const std::string path = gpu_fault::GpuDumpPath(armed->dir, owner_pid_);
  // No dump: the program's own abort(), not the driver's.
  if (access(path.c_str(), F_OK) != 0) return;
  bool keep = options_.keep_gpu_dump;
  absl::StatusOr<gpu_fault::GpuCoreDump> dump =
      gpu_fault::ReadGpuCoreDumpFile(path);
  if (!dump.ok()) {
    crash->gpu_fault.push_back(absl::StrCat(
        "GPU fault: the driver's GPU core dump could not be read: ",
        dump.status().message()));
    keep = true;  // for the user, or a newer reader
  } else {
    gpu_fault::FaultTextOptions text;
    // This is the report's writer, a copy of the crashed process: a shard
    // lock held by a thread that is not here is skipped, never waited for.
    std::vector<AllocationRecord> blocks;
    const int busy = pointers_.TryVisitLive(
        [&](const AllocationRecord& r) { blocks.push_back(r); });
    text.blocks = blocks;
    text.have_blocks = true;
    const gpu_fault::GpuFaultExplanation explanation =
        gpu_fault::ExplainGpuFaults(*dump, gpu_fault::ExplainOptions{});
    // The faulting kernel's newest launch names its address arguments.
    if (!explanation.warps.empty()) {
      for (const RecentLaunches::Entry& launch :
           recent_launches_.Newest(RecentLaunches::kCapacity)) {
        if (KernelName(launch.kernel) != explanation.warps[0].kernel) continue;
        text.arguments.clear();
        for (uint32_t i = 0; i < launch.word_count; ++i) {
          if (launch.word_params[i] == kNoParam) continue;
          text.arguments.push_back(gpu_fault::KernelArgument{
              static_cast<int>(launch.word_params[i]), "", launch.words[i]});
        }
      }
    }
    text.site = [this](StackId id) { return SiteName(id); };
    for (absl::string_view line :
         absl::StrSplit(gpu_fault::RenderGpuFaultText(explanation, text), '\n',
                        absl::SkipEmpty())) {
      crash->gpu_fault.emplace_back(line);
    }
    if (busy > 0) {
      crash->gpu_fault.push_back(
          absl::StrCat("  (", busy,
                       " of 64 registry shards were busy: their blocks are "
                       "not placed)"));
    }
  }
  if (keep) {
    crash->gpu_dump_kept = path;
  } else {
    unlink(path.c_str());
    if (armed->own_dir) rmdir(armed->dir.c_str());
  }
}

}  // namespace gmt
