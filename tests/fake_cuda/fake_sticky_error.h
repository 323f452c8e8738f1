// Fake driver: a planted GPU fault, for the crash report's sticky-error path
//. The double runs no device code, so the fault is planted by
// name: a successful launch of a kernel whose name is
//
//   fake_fault_illegal_address   -> CUDA_ERROR_ILLEGAL_ADDRESS (700)
//   fake_fault_launch_failed     -> CUDA_ERROR_LAUNCH_FAILED (719)
//
// makes the error sticky, process-wide, as a real fault does to its context:
// from then on every synchronizing call (cuCtxSynchronize(_v2),
// cuStreamSynchronize(_ptsz), cuEventSynchronize) and every launch returns it.
// Nothing else changes; a program that launches no such kernel sees nothing.
//
// With the driver's GPU core dump armed (CUDA_ENABLE_COREDUMP_ON_EXCEPTION=1
// and CUDA_COREDUMP_FILE, %p the pid), the fault does what the driver does
// then: it writes the dump and abort()s the program. The double has no dump
// of its own to write: FAKE_CUDA_GPU_DUMP names a captured one (the dumps of
// tests/fixtures/cudacore), copied byte for byte; without it, an empty file.
#ifndef GMT_TESTS_FAKE_CUDA_FAKE_STICKY_ERROR_H_
#define GMT_TESTS_FAKE_CUDA_FAKE_STICKY_ERROR_H_

#include <cuda.h>

namespace fake_cuda {

// After a launch of `function` succeeded: plants the fault its name asks for.
void NoteLaunchForStickyError(const void* function);

// CUDA_SUCCESS, or the sticky error planted earlier. Thread-safe.
CUresult StickyError();

}  // namespace fake_cuda

#endif  // GMT_TESTS_FAKE_CUDA_FAKE_STICKY_ERROR_H_
