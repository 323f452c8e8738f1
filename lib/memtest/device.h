// What the memtest needs from a GPU: memory, the memtest kernels
// (kernels/memtest_abi.h) and small copies. The run loop (memtest_runner.cc)
// talks only to this, so CPU tests stand a host implementation behind it that
// runs the kernels' own code (tests/unit/memtest_runner_test.cc); the real one
// is lib/memtest/cuda_device.cc (CUDA driver, opened at run time).
//
// Contract: launches (Write, Verify, Flip, Copy, ResetLogs) are queued in
// order on one stream and may return before they ran; Synchronize() waits for
// all of them and reports the first failure. Logs live on the device, one per
// slot; ReadLogs() reads them after a Synchronize().
#ifndef GMT_LIB_MEMTEST_DEVICE_H_
#define GMT_LIB_MEMTEST_DEVICE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "kernels/memtest_abi.h"

namespace gmt::memtest {

class MemtestDevice {
 public:
  virtual ~MemtestDevice() = default;

  virtual int Index() const = 0;
  virtual std::string Name() const = 0;
  // "0000:41:00.0", for NVML; "" when unknown.
  virtual std::string PciBusId() const = 0;

  virtual absl::Status MemInfo(uint64_t* free_bytes, uint64_t* total_bytes) = 0;
  // 256-byte aligned block of `bytes`; an error (no exception, no abort) when
  // the device has not that much in one piece.
  virtual absl::Status Allocate(uint64_t bytes, uint64_t* address) = 0;
  virtual void Free(uint64_t address) = 0;

  // Makes `slots` logs available and zeroes their counters.
  virtual absl::Status ResetLogs(size_t slots) = 0;
  virtual absl::Status ReadLogs(size_t slots,
                                std::vector<GmtMemtestLog>* logs) = 0;

  // gmt_memtest_write / gmt_memtest_verify over `vectors` 16-byte vectors at
  // `base` (word index `first_index`); Verify logs into `slot`.
  virtual absl::Status Write(const GmtMemtestPattern& p, uint64_t base,
                             uint64_t vectors, uint64_t first_index) = 0;
  virtual absl::Status Verify(const GmtMemtestPattern& expect,
                              const GmtMemtestPattern& next, uint32_t flags,
                              uint64_t base, uint64_t vectors,
                              uint64_t first_index, size_t slot) = 0;
  // TEST ONLY: gmt_memtest_flip (the fault-injection hook).
  virtual absl::Status Flip(uint64_t address, uint64_t mask) = 0;
  // Device-to-device copy of `bytes` (the bandwidth reference).
  virtual absl::Status Copy(uint64_t dst, uint64_t src, uint64_t bytes) = 0;
  virtual absl::Status Synchronize() = 0;

  // Synchronous 8-byte reads and writes (the second read; repairs).
  virtual absl::Status ReadWord(uint64_t address, uint64_t* value) = 0;
  virtual absl::Status WriteWord(uint64_t address, uint64_t value) = 0;
};

}  // namespace gmt::memtest

#endif  // GMT_LIB_MEMTEST_DEVICE_H_
