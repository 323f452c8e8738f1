// Diagnostic preload for run_interpose_bench.sh (not part of the tool): turns
// off Abseil's Mutex deadlock detection before the tool runs.
//
// Debian's Abseil is built without NDEBUG, so absl::Mutex runs its debug-mode
// deadlock detector on every Lock/Unlock: a lookup in a global graph under a
// global spin lock. Preloading this next to libgpumemtrace.so shows what the
// tool's hot path costs without it (both share the one
// libabsl_synchronization).
#include "absl/synchronization/mutex.h"

namespace {

__attribute__((constructor)) void TurnOffDeadlockDetection() {
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
}

}  // namespace
