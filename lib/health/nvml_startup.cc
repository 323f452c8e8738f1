#include "lib/health/nvml_startup.h"

#include <pthread.h>

#include <atomic>

#include "absl/base/const_init.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "lib/core/tool_thread.h"
#include "lib/health/xid_watch.h"
#include "lib/platform/nvml_loader.h"

namespace gmt {
namespace {

ABSL_CONST_INIT absl::Mutex g_mu(absl::kConstInit);
NvmlStart g_state ABSL_GUARDED_BY(g_mu) = NvmlStart::kNotStarted;
// Set in the child of a fork, read before g_mu is taken: the parent's
// thread may have held g_mu at the fork, and in the child nobody would
// release it.
std::atomic<bool> g_forked_child{false};

// Mirrors g_state == kRunning for NvmlStartInProgress (no lock there).
std::atomic<bool> g_in_progress{false};

bool StartFinished(NvmlStart* state) { return *state != NvmlStart::kRunning; }

void StartInBackground(bool watch_xid) {
  LoadNvml();
  if (watch_xid) StartXidWatch();
  absl::MutexLock lock(&g_mu);
  g_state = NvmlStart::kDone;
  g_in_progress.store(false, std::memory_order_release);
}

// In the child of a fork the thread does not exist; what it was doing there
// (the NVML loader's once-guard, the Xid watcher's lock, g_mu) may be left
// held. The child never waits for it nor touches NVML.
void ForgetInForkedChild() {
  g_forked_child.store(true, std::memory_order_relaxed);
}

}  // namespace

void StartNvmlInBackground(bool watch_xid) {
  if (g_forked_child.load(std::memory_order_relaxed)) return;
  {
    absl::MutexLock lock(&g_mu);
    if (g_state != NvmlStart::kNotStarted) return;
    g_state = NvmlStart::kRunning;
    g_in_progress.store(true, std::memory_order_release);
  }
  static const bool atfork_registered = [] {
    pthread_atfork(nullptr, nullptr, &ForgetInForkedChild);
    return true;
  }();
  (void)atfork_registered;
  // On a stack the exit scan leaves alone (lib/core/tool_thread.h).
  if (!StartToolThread([watch_xid] { StartInBackground(watch_xid); })) {
    // No thread: NVML is loaded when a report first needs it, as before.
    absl::MutexLock lock(&g_mu);
    g_state = NvmlStart::kDone;
    g_in_progress.store(false, std::memory_order_release);
  }
}

bool NvmlStartInProgress() {
  return !g_forked_child.load(std::memory_order_relaxed) &&
         g_in_progress.load(std::memory_order_acquire);
}

NvmlStart WaitForNvmlStart(int wait_ms) {
  if (g_forked_child.load(std::memory_order_relaxed)) {
    return NvmlStart::kNotStarted;
  }
  absl::MutexLock lock(&g_mu);
  g_mu.AwaitWithTimeout(absl::Condition(&StartFinished, &g_state),
                        absl::Milliseconds(wait_ms));
  return g_state;
}

std::string NvmlNotReadyReason(NvmlStart state, int waited_ms) {
  switch (state) {
    case NvmlStart::kRunning:
      return absl::StrCat("not read: NVML was still starting (waited ",
                          waited_ms, " ms)");
    case NvmlStart::kNotStarted:
      return "not read: NVML was not started in this process (no CUDA call, "
             "or a forked child)";
    case NvmlStart::kDone:
      break;
  }
  return "";
}

}  // namespace gmt
