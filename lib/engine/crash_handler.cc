#include "lib/engine/crash_handler.h"

#include <errno.h>
#include <execinfo.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include <atomic>
#include <cstring>

#include "lib/engine/engine.h"
#include "lib/engine/signal_safe_text.h"
#include "lib/health/nvml_startup.h"

namespace gmt {
namespace {

constexpr int kMaxSignal = 65;
constexpr size_t kAltStackBytes = size_t{1} << 20;

// Written by InstallCrashHandlers before the handler of that signal is
// installed, read-only afterwards.
struct Installed {
  bool active = false;
  struct sigaction previous;
};
Installed g_installed[kMaxSignal];
int64_t g_timeout_s = 10;

// The crashing thread's stack, written by the one thread that writes the
// report (g_writer_tid), before anything reads it.
constexpr int kMaxCrashFrames = 64;
uintptr_t g_crash_frames[kMaxCrashFrames];

// The crashing thread's return addresses into g_crash_frames, from the
// faulting instruction outwards: the handler's own frames and the signal
// trampoline are dropped when the interrupted PC is among them. backtrace()
// was called once at installation, so libgcc's unwinder is loaded and this
// call does not allocate.
int CaptureCrashStack(void* context) {
  void* raw[kMaxCrashFrames + 8];
  const int n = backtrace(raw, kMaxCrashFrames + 8);
  int first = 0;
#if defined(__x86_64__)
  if (context != nullptr) {
    const uintptr_t pc = static_cast<uintptr_t>(
        static_cast<ucontext_t*>(context)->uc_mcontext.gregs[REG_RIP]);
    for (int i = 0; i < n; ++i) {
      if (reinterpret_cast<uintptr_t>(raw[i]) == pc) {
        first = i;
        break;
      }
    }
  }
#elif defined(__aarch64__)
  if (context != nullptr) {
    const uintptr_t pc = static_cast<uintptr_t>(
        static_cast<ucontext_t*>(context)->uc_mcontext.pc);
    for (int i = 0; i < n; ++i) {
      if (reinterpret_cast<uintptr_t>(raw[i]) == pc) {
        first = i;
        break;
      }
    }
  }
#endif
  int count = 0;
  for (int i = first; i < n && count < kMaxCrashFrames; ++i) {
    g_crash_frames[count++] = reinterpret_cast<uintptr_t>(raw[i]);
  }
  // Stacks are symbolized as return addresses (the call is the byte before);
  // the faulting PC is not one: stored one past, so that byte is the PC.
  if (first > 0 && count > 0) ++g_crash_frames[0];
  return count;
}

// The kernel thread id of the thread writing the crash report (0: none yet).
std::atomic<int> g_writer_tid{0};
std::atomic<bool> g_report_done{false};

// ---- Async-signal-safe output ----------------------------------------------
// One line of SignalSafeText to stderr, with the tool's prefix.
class SafeLine {
 public:
  SafeLine() : text_(getpid()) { text_.Begin(); }
  void Add(const char* text) { text_.Add(text); }
  void AddDecimal(int64_t value) { text_.Signed(value); }
  void AddHex(uint64_t value) { text_.Hex(value); }
  void Write() { text_.WriteLine(STDERR_FILENO); }

 private:
  SignalSafeText text_;
};

void WriteHeader(const CrashSignal& s, const char* what) {
  SafeLine line;
  line.Add("caught ");
  line.Add(CrashSignalName(s.signal));
  const char* code = CrashCodeName(s.signal, s.code);
  line.Add(" (");
  line.Add(*code != '\0' ? code : "code ");
  if (*code == '\0') line.AddDecimal(s.code);
  line.Add(")");
  if (s.has_fault_address) {
    line.Add(" at address ");
    line.AddHex(s.fault_address);
  }
  line.Add(" in thread ");
  line.AddDecimal(s.thread);
  line.Add("; ");
  line.Add(what);
  line.Write();
}

bool IsOurs(int sig);

// ---- Chaining ---------------------------------------------------------------
// Gives the signal to the disposition it had before the tool (see the header).
void Chain(int sig, siginfo_t* info, void* context) {
  const struct sigaction& previous = g_installed[sig].previous;
  if (IsOurs(sig)) sigaction(sig, &previous, nullptr);
  if ((previous.sa_flags & SA_SIGINFO) != 0) {
    if (previous.sa_sigaction != nullptr &&
        reinterpret_cast<void*>(previous.sa_sigaction) !=
            reinterpret_cast<void*>(SIG_DFL) &&
        reinterpret_cast<void*>(previous.sa_sigaction) !=
            reinterpret_cast<void*>(SIG_IGN)) {
      previous.sa_sigaction(sig, info, context);
      return;
    }
  }
  void (*handler)(int) = previous.sa_handler;
  if ((previous.sa_flags & SA_SIGINFO) != 0 &&
      previous.sa_sigaction == nullptr) {
    handler = SIG_DFL;
  }
  if (handler == SIG_IGN) return;
  if (handler == SIG_DFL) {
    // Whoever called us (the kernel, or a program handler that chains to the
    // tool) expects the default action.
    struct sigaction dfl;
    std::memset(&dfl, 0, sizeof(dfl));
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    sigaction(sig, &dfl, nullptr);
    // A fault raised by the kernel comes again when the instruction is
    // re-executed on return, now with the default action (and the original
    // fault address in the core). A sent signal (abort(), kill) is sent again:
    // it stays pending, blocked in this handler, until we return.
    const bool hardware_fault =
        info != nullptr && info->si_code > 0 && sig != SIGABRT;
    if (!hardware_fault) raise(sig);
    return;
  }
  handler(sig);
}

// How long a crash waits for the NVML start to leave dlopen / malloc.
constexpr int kNvmlStartWaitMs = 2000;

// A child process of the crashed one, made without running anyone's fork
// handlers (they may take locks the crash left held): glibc's _Fork where the
// C library has it, else the raw system call.
extern "C" pid_t _Fork(void) __attribute__((weak));

pid_t ForkReportWriter() {
  if (&_Fork != nullptr) return _Fork();
  return static_cast<pid_t>(syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0));
}

// In the report writer: a fault or a hang there ends the writer only.
void BecomeReportWriter() {
  struct sigaction dfl;
  std::memset(&dfl, 0, sizeof(dfl));
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  for (int sig = 1; sig < kMaxSignal; ++sig) {
    if (g_installed[sig].active) sigaction(sig, &dfl, nullptr);
  }
  sigaction(SIGALRM, &dfl, nullptr);
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGALRM);
  pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
  if (g_timeout_s > 0) alarm(static_cast<unsigned int>(g_timeout_s));
}

// Step 2 of the header's strategy.
void RunReport(const CrashSignal& s) {
  Engine* engine = Engine::IfCreated();
  if (engine == nullptr) {
    SafeLine line;
    line.Add("no CUDA call was traced: no crash report");
    line.Write();
    return;
  }
  engine->NoteCrashSignal(s);
  engine->WriteCrashSummary(s, STDERR_FILENO);
  // The full report needs memory, locks and files: it is written by a copy
  // of the process, so that whatever the crash left behind (a lock a thread
  // held, a heap in pieces) can end only that copy, never hang the program's
  // own end. The handler waits for it, at most crash_timeout_s.
  // The tool's NVML start (lib/health/nvml_startup.h) may be inside dlopen
  // or malloc right after the program's first CUDA call: the copy would
  // inherit those locks held. It runs on while this thread is in the
  // handler, so it is given a moment (bounded) to finish first.
  struct timespec one_ms = {0, 1000L * 1000};
  for (int waited = 0; NvmlStartInProgress() && waited < kNvmlStartWaitMs;
       ++waited) {
    nanosleep(&one_ms, nullptr);
  }
  const pid_t writer = ForkReportWriter();
  if (writer == 0) {
    BecomeReportWriter();
    engine->WriteCrashReportInChild();
    _exit(0);
  }
  if (writer < 0) {
    SafeLine line;
    line.Add("the full crash report could not be started (fork failed)");
    line.Write();
    return;
  }
  const int64_t max_waits = (g_timeout_s > 0 ? g_timeout_s : 3600) * 100;
  struct timespec ten_ms = {0, 10L * 1000 * 1000};
  int status = 0;
  bool done = false;
  for (int64_t i = 0; i <= max_waits && !done; ++i) {
    const pid_t r = waitpid(writer, &status, WNOHANG);
    if (r == writer || (r < 0 && errno != EINTR)) {
      done = true;
    } else {
      nanosleep(&ten_ms, nullptr);
    }
  }
  if (!done) {
    kill(writer, SIGKILL);
    waitpid(writer, &status, 0);
  }
  if (!done || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    SafeLine line;
    line.Add("the full crash report ");
    line.Add(!done ? "did not finish within crash_timeout_s"
                   : "could not be written (its writer died)");
    line.Add("; the summary above is what there is");
    line.Write();
  }
}

void OnCrashSignal(int sig, siginfo_t* info, void* context) {
  const int saved_errno = errno;
  CrashSignal s;
  s.signal = sig;
  s.thread = static_cast<int>(syscall(SYS_gettid));
  if (info != nullptr) {
    s.code = info->si_code;
    if (sig == SIGSEGV || sig == SIGBUS || sig == SIGFPE || sig == SIGILL) {
      s.fault_address = reinterpret_cast<uint64_t>(info->si_addr);
      s.has_fault_address = info->si_code > 0;  // set by the kernel
    }
  }
  int writer = 0;
  if (g_writer_tid.compare_exchange_strong(writer, s.thread)) {
    s.frame_count = CaptureCrashStack(context);
    s.frames = g_crash_frames;
    WriteHeader(s, "writing the crash report");
    RunReport(s);
    g_report_done.store(true, std::memory_order_release);
  } else if (writer == s.thread) {
    WriteHeader(s, "while writing the crash report: left unfinished");
  } else {
    WriteHeader(s, "another thread writes the crash report");
    // Wait for it (bounded), so the process does not die under its writer.
    const int64_t max_waits = (g_timeout_s > 0 ? g_timeout_s : 60) * 100 + 100;
    struct timespec ten_ms = {0, 10L * 1000 * 1000};
    for (int64_t i = 0;
         i < max_waits && !g_report_done.load(std::memory_order_acquire); ++i) {
      nanosleep(&ten_ms, nullptr);
    }
  }
  Chain(sig, info, context);
  errno = saved_errno;
}

}  // namespace

void WaitForCrashReportOfAnotherThread() {
  const int writer = g_writer_tid.load(std::memory_order_acquire);
  if (writer == 0 || writer == static_cast<int>(syscall(SYS_gettid))) return;
  // The handler chains the signal once the report is written: the wait ends
  // with the process, or after the bound if the handler returned.
  const int64_t max_waits = (g_timeout_s > 0 ? g_timeout_s : 60) * 100 + 200;
  struct timespec ten_ms = {0, 10L * 1000 * 1000};
  for (int64_t i = 0; i < max_waits; ++i) {
    if (g_report_done.load(std::memory_order_acquire)) {
      // Written: the handler is re-raising; give it a moment to end us.
      for (int j = 0; j < 100; ++j) nanosleep(&ten_ms, nullptr);
      return;
    }
    nanosleep(&ten_ms, nullptr);
  }
}

namespace {

bool IsOurs(int sig) {
  struct sigaction current;
  if (sigaction(sig, nullptr, &current) != 0) return false;
  return (current.sa_flags & SA_SIGINFO) != 0 &&
         current.sa_sigaction == OnCrashSignal;
}

// An alternate signal stack for the calling thread, unless it has one (the
// program's, or another tool's): a stack overflow is then reported too.
// Deliberately never freed (the thread may crash at any time).
void SetUpAltStack() {
  // An alternate stack someone else set up is kept only when it is large
  // enough for the report: the sanitizers' runtimes, for one, install 53 KiB
  // stacks, which the report written from our handler overflowed. A smaller
  // one is replaced (its memory stays its owner's); its owner's handler, if
  // ours chains to it, then runs on ours.
  stack_t current;
  if (sigaltstack(nullptr, &current) == 0 &&
      (current.ss_flags & SS_DISABLE) == 0 &&
      current.ss_size >= kAltStackBytes) {
    return;
  }
  void* memory = mmap(nullptr, kAltStackBytes, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (memory == MAP_FAILED) return;
  stack_t stack;
  std::memset(&stack, 0, sizeof(stack));
  stack.ss_sp = memory;
  stack.ss_size = kAltStackBytes;
  if (sigaltstack(&stack, nullptr) != 0) munmap(memory, kAltStackBytes);
}

// The signal number of each crash_signals value.
constexpr struct {
  FatalSignal which;
  int number;
} kCrashSignalNumbers[] = {
    {FatalSignal::kSegv, SIGSEGV}, {FatalSignal::kBus, SIGBUS},
    {FatalSignal::kAbrt, SIGABRT}, {FatalSignal::kFpe, SIGFPE},
    {FatalSignal::kIll, SIGILL},
};

}  // namespace

const char* CrashSignalName(int signal) {
  switch (signal) {
    case SIGSEGV:
      return "SIGSEGV";
    case SIGBUS:
      return "SIGBUS";
    case SIGABRT:
      return "SIGABRT";
    case SIGFPE:
      return "SIGFPE";
    case SIGILL:
      return "SIGILL";
    default:
      return "signal";
  }
}

const char* CrashCodeName(int signal, int code) {
  switch (code) {
    case SI_USER:
      return "SI_USER";
    case SI_TKILL:
      return "SI_TKILL";
    case SI_QUEUE:
      return "SI_QUEUE";
    case SI_KERNEL:
      return "SI_KERNEL";
    default:
      break;
  }
  switch (signal) {
    case SIGSEGV:
      if (code == SEGV_MAPERR) return "SEGV_MAPERR";
      if (code == SEGV_ACCERR) return "SEGV_ACCERR";
      break;
    case SIGBUS:
      if (code == BUS_ADRALN) return "BUS_ADRALN";
      if (code == BUS_ADRERR) return "BUS_ADRERR";
      if (code == BUS_OBJERR) return "BUS_OBJERR";
      break;
    case SIGFPE:
      if (code == FPE_INTDIV) return "FPE_INTDIV";
      if (code == FPE_INTOVF) return "FPE_INTOVF";
      if (code == FPE_FLTDIV) return "FPE_FLTDIV";
      if (code == FPE_FLTOVF) return "FPE_FLTOVF";
      if (code == FPE_FLTUND) return "FPE_FLTUND";
      if (code == FPE_FLTRES) return "FPE_FLTRES";
      if (code == FPE_FLTINV) return "FPE_FLTINV";
      break;
    case SIGILL:
      if (code == ILL_ILLOPC) return "ILL_ILLOPC";
      if (code == ILL_ILLOPN) return "ILL_ILLOPN";
      if (code == ILL_PRVOPC) return "ILL_PRVOPC";
      break;
    default:
      break;
  }
  return "";
}

void InstallCrashHandlers(const Options& options) {
  static std::atomic<bool> installed{false};
  if (installed.exchange(true)) return;
  if (!options.crash_report) return;
  g_timeout_s = options.crash_timeout_s;
  // Loads the unwinder now (backtrace's first call dlopens libgcc_s and
  // allocates), so the handler's call does neither.
  void* warm[2];
  (void)backtrace(warm, 2);
  bool any = false;
  for (const auto& [which, sig] : kCrashSignalNumbers) {
    if (!options.crash_signals.Has(which)) continue;
    if (sig <= 0 || sig >= kMaxSignal || g_installed[sig].active) continue;
    if (!any) SetUpAltStack();
    any = true;
    // The previous disposition is stored before ours can run.
    if (sigaction(sig, nullptr, &g_installed[sig].previous) != 0) continue;
    g_installed[sig].active = true;
    struct sigaction ours;
    std::memset(&ours, 0, sizeof(ours));
    ours.sa_sigaction = OnCrashSignal;
    ours.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&ours.sa_mask);
    sigaction(sig, &ours, nullptr);
  }
}

}  // namespace gmt
