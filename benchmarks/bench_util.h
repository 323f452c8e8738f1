// Shared by the benchmarks: the Abseil deadlock-detection switch.
#ifndef GMT_BENCHMARKS_BENCH_UTIL_H_
#define GMT_BENCHMARKS_BENCH_UTIL_H_

#include "absl/synchronization/mutex.h"

namespace gmt {

// Debian's Abseil is built without NDEBUG: absl::Mutex then checks for
// deadlock cycles on every Lock (a global graph under a global lock) unless
// told not to. Benchmarks take it as an argument so both figures are shown:
// 1 is what the library pays today, 0 what it would pay with the detector off.
inline void SetAbslDeadlockDetection(bool on) {
  absl::SetMutexDeadlockDetectionMode(on ? absl::OnDeadlockCycle::kAbort
                                         : absl::OnDeadlockCycle::kIgnore);
}

}  // namespace gmt

#endif  // GMT_BENCHMARKS_BENCH_UTIL_H_
