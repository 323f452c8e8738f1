// The memtest run loop: allocate the tested region in chunks, measure the
// device-to-device copy bandwidth, run every selected pattern's steps
// (memtest_plan.h) over all chunks, read every mismatch a second time, and
// collect the report. Talks to the GPU only through MemtestDevice, so the
// whole loop runs in CPU tests.
//
// Throughput ("tested GB/s") of a pattern: region bytes x verify sweeps,
// divided by the wall time of all its steps (writes and verifies, launch to
// completion; the second reads of mismatches are not counted). A byte is
// "tested" once it was written and read back and compared. The reference is a
// cuMemcpyDtoD of up to 1 GiB within one chunk, measured in the same run,
// counted the same way (bytes copied: each read once and written once), so
// tested/copy near 1 means the tester runs at copy speed.
#ifndef GMT_LIB_MEMTEST_RUNNER_H_
#define GMT_LIB_MEMTEST_RUNNER_H_

#include <functional>

#include "lib/memtest/config.h"
#include "lib/memtest/device.h"
#include "lib/memtest/memtest_report.h"
#include "lib/memtest/progress.h"

namespace gmt::memtest {

// The largest chunk allocated at once, and the smallest tried when the device
// refuses bigger ones (fragmented free memory). Chunk sizes are multiples of
// kGranule.
inline constexpr uint64_t kMaxChunkBytes = uint64_t{1} << 30;
inline constexpr uint64_t kGranule = uint64_t{2} << 20;

struct RunnerHooks {
  // NVML counters before and after; null: reported as not available.
  std::function<HealthSnapshot()> read_health;
  // Null: silent.
  Progress* progress = nullptr;
  // Upper bound of each chunk (tests use small ones); <= kMaxChunkBytes.
  uint64_t max_chunk_bytes = kMaxChunkBytes;
};

// Never throws; a failure is in report.failure (with setup_failed when no
// test ran), and the report holds everything measured up to it.
MemtestReport RunMemtest(MemtestDevice& device, const MemtestConfig& config,
                         const RunnerHooks& hooks);

}  // namespace gmt::memtest

#endif  // GMT_LIB_MEMTEST_RUNNER_H_
