// Cheap time and thread identity for records.
#ifndef GMT_LIB_CORE_CLOCK_H_
#define GMT_LIB_CORE_CLOCK_H_

#include <cstdint>

namespace gmt {

// Monotonic nanoseconds, coarse (CLOCK_MONOTONIC_COARSE: a few ms resolution,
// a vDSO read of ~7 ns). For reports, not for timing.
int64_t NowNs();
// Monotonic nanoseconds, precise (CLOCK_MONOTONIC): for timing the tool's own
// work (the reachability scan and its deadline).
int64_t PreciseNowNs();
// Nanoseconds since the tool started, for reports.
int64_t SinceStartNs(int64_t monotonic_ns);
// Wall-clock seconds since the epoch at which the tool started.
double StartWallSeconds();

// A small per-thread number (1, 2, ...) in order of first use, cached in TLS;
// the OS thread id is kept beside it for reports.
uint32_t CurrentThreadIndex();
int ThreadOsId(uint32_t thread_index);

}  // namespace gmt

#endif  // GMT_LIB_CORE_CLOCK_H_
