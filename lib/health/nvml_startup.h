// NVML off the program's critical path. Loading NVML (nvmlInit) and
// registering for Xid events take tens to hundreds of milliseconds on a
// machine with several GPUs; done on the program's own thread, at its first
// CUDA call, a short job paid it every time. Here one background thread
// does both, started by the engine at the program's first CUDA call (never
// earlier: a process that forks workers before using CUDA keeps no thread of
// the tool's), and a report waits for it with a bound.
//
//   StartNvmlInBackground(/*watch_xid=*/true);   // at the first CUDA call
//   ...
//   if (WaitForNvmlStart(500) == NvmlStart::kDone) reading = ReadHealth();
//
// Fork: the child of a fork has no such thread; it never starts one (CUDA
// does not work there) and its reports say that health was not read.
// Thread safety: all functions are thread-safe.
#ifndef GMT_LIB_HEALTH_NVML_STARTUP_H_
#define GMT_LIB_HEALTH_NVML_STARTUP_H_

#include <string>

namespace gmt {

// Starts the background thread once per process (later calls do nothing):
// it loads NVML and, with `watch_xid`, starts the Xid watcher
// (lib/health/xid_watch.h). Returns at once.
void StartNvmlInBackground(bool watch_xid);

enum class NvmlStart {
  kNotStarted,  // never asked for in this process (or a forked child)
  kRunning,     // still loading NVML or registering for events
  kDone,        // NVML loaded (available or not) and the watcher set up
};

// Waits at most `wait_ms` for the background start to finish and says
// where it is.
NvmlStart WaitForNvmlStart(int wait_ms);

// Whether the background start is running now. Async-signal-safe (one
// atomic load): the crash handler waits for it to end before it copies the
// process, whose copy would otherwise inherit the locks it holds (the
// loader's in dlopen, malloc's).
bool NvmlStartInProgress();

// Why health was not read, for a report, when WaitForNvmlStart did not say
// kDone after waiting `waited_ms`.
std::string NvmlNotReadyReason(NvmlStart state, int waited_ms);

}  // namespace gmt

#endif  // GMT_LIB_HEALTH_NVML_STARTUP_H_
