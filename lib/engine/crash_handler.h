// The crash report's signal side: handlers for the fatal
// signals named by crash_signals (SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL)
// that write the report before the process dies, then let the disposition the
// signal had before the tool run.
//
// Strategy, since a report is not async-signal-safe in general (it allocates,
// locks, symbolizes):
//   1. A header line is written with write(2) alone: the signal, its code,
//      the fault address and the thread. It always appears.
//   2. A summary, still with write(2) alone and nothing that allocates or
//      waits for a lock (try-locks; a busy part is said to be left out):
//      the live blocks, the host-visible block at or near the fault address,
//      the newest kernel launches (Engine::WriteCrashSummary). It appears
//      whatever state the crash left the tool in.
//   3. The full report (text and JSON through the normal writers), once per
//      process, by the first crashing thread, written by a copy of the
//      process (a child made without fork handlers): a lock held by a thread
//      that does not exist there, or a heap the fault broke, can hang or end
//      only that copy. The handler waits for it at most crash_timeout_s,
//      then ends it and says so. Other threads that crash meanwhile wait
//      (bounded) for it to finish; a second fault of the reporting thread
//      skips to step 4.
//   4. Chaining: the disposition found at installation (the program's
//      handler, another tool's such as Python's faulthandler, SIG_DFL or
//      SIG_IGN) is put back — only if ours is still installed — and run: a
//      handler is called directly with the original siginfo and context; the
//      default action is re-raised, so the process dies by the same signal
//      (and dumps core where it would have); SIG_IGN returns.
//
// A handler the program installs after the tool replaces ours: the tool then
// neither reports nor re-installs itself. A handler installed before is
// chained as above. A program that recovers from the signal (its handler
// returns, jumps away or calls exit()) still gets its exit report, with the
// crash section in it.
//
// Alternate stack: the installing thread (the first to use CUDA, usually the
// main thread) gets a 1 MiB sigaltstack unless it has one, so a stack
// overflow is reported too. Other threads run the handler on their own stack
// (SA_ONSTACK uses an alternate stack only where one is set).
#ifndef GMT_LIB_ENGINE_CRASH_HANDLER_H_
#define GMT_LIB_ENGINE_CRASH_HANDLER_H_

#include <cstdint>

#include "lib/core/options.h"

namespace gmt {

// What the handler knows about the signal, passed to the engine.
struct CrashSignal {
  int signal = 0;
  int code = 0;  // siginfo si_code
  uint64_t fault_address = 0;
  bool has_fault_address = false;
  int thread = 0;  // kernel thread id
  // The crashing thread's return addresses, innermost first (the faulting
  // instruction's own frame first when it could be found), captured in the
  // handler; they point into memory that lives as long as the process.
  const uintptr_t* frames = nullptr;
  int frame_count = 0;
};

// "SIGSEGV" for the five handled signals; "signal" otherwise.
const char* CrashSignalName(int signal);
// "SEGV_MAPERR", "SI_USER", ...; "" when the code has no name here.
const char* CrashCodeName(int signal, int code);

// Installs the handlers that `options` asks for (crash_report,
// crash_signals). Once per process; later calls do nothing. Not
// async-signal-safe; called when the engine is created.
void InstallCrashHandlers(const Options& options);

// Called on the way out of the process (exit): when another thread is in the
// middle of a crash report, waits for it (at most crash_timeout_s and a
// little more), so that the process ends as the signal ends it rather than
// by the exit another thread raced to. The driver aborts from its own thread
// after writing a GPU core dump, while the program's thread gets the error
// and may call exit(1): on the H200 a PyTorch program exited 1 under the tool
// where it dies by SIGABRT without it. Returns at once otherwise.
void WaitForCrashReportOfAnotherThread();

}  // namespace gmt

#endif  // GMT_LIB_ENGINE_CRASH_HANDLER_H_
