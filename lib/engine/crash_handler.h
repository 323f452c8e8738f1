// The crash report's signal side: handlers for the fatal
// signals named by crash_signals (SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL)
// that write the report before the process dies, then let the disposition the
// signal had before the tool run.
//
// Strategy, since a report is not async-signal-safe in general (it allocates,
// locks, symbolizes):
//   1. A header line is written with write(2) alone: the signal, its code,
//      the fault address and the thread. It always appears.
//   2. The full report (text and JSON through the normal writers) is tried,
//      once per process, by the first crashing thread:
//        * try-locks only (the report lock, the crash state lock): a lock
//          held elsewhere skips the part and says so, it is never waited for
//          past a short bound;
//        * an alarm (crash_timeout_s) ends a report that hangs anyway (e.g.
//          the crash hit inside malloc and the writer needs malloc's lock):
//          the process then dies by the same signal with the default
//          action, without running the program's handler;
//        * a second fault while writing (on the same thread) skips straight
//          to step 3 for that signal.
//      Other threads that crash meanwhile wait (bounded) for it to finish.
//   3. Chaining: the disposition found at installation (the program's
//      handler, another tool's such as Python's faulthandler, SIG_DFL or
//      SIG_IGN) is put back — only if ours is still installed — and run: a
//      handler is called directly with the original siginfo and context; the
//      default action is re-raised, so the process dies by the same signal
//      (and dumps core where it would have); SIG_IGN returns.
//
// A handler the program installs after the tool replaces ours: the tool then
// neither reports nor re-installs itself. A handler installed before is
// chained as above. The exit report is not written again after a crash report
// (a handler that calls exit() leaves the crash report as the one report).
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
};

// "SIGSEGV" for the five handled signals; "signal" otherwise.
const char* CrashSignalName(int signal);
// "SEGV_MAPERR", "SI_USER", ...; "" when the code has no name here.
const char* CrashCodeName(int signal, int code);

// Installs the handlers that `options` asks for (crash_report,
// crash_signals). Once per process; later calls do nothing. Not
// async-signal-safe; called when the engine is created.
void InstallCrashHandlers(const Options& options);

}  // namespace gmt

#endif  // GMT_LIB_ENGINE_CRASH_HANDLER_H_
