// Stands in for the CUDA toolkit's cuda_runtime.h in the symbolizer tests: a
// header of that name whose wrappers make the call for their caller, as the
// toolkit's inline cudaMalloc<T> does. A line here is never the program's.
#ifndef GMT_TESTS_UNIT_RUNTIME_HEADER_STAND_IN_CUDA_RUNTIME_H_
#define GMT_TESTS_UNIT_RUNTIME_HEADER_STAND_IN_CUDA_RUNTIME_H_

#include <cstdint>

#include "lib/stacks/stack_capture.h"

// Inlined into its caller, as the toolkit's wrappers are with optimisation.
__attribute__((always_inline)) inline int InlinedRuntimeWrapper(
    uintptr_t* frames, int max) {
  return gmt::CaptureStack(frames, max);
}

// A frame of its own, as the same wrappers are at -O0.
__attribute__((noinline)) inline int OutlinedRuntimeWrapper(uintptr_t* frames,
                                                            int max) {
  int n = gmt::CaptureStack(frames, max);
  asm volatile("" ::: "memory");  // keeps the call from becoming a tail call
  return n;
}

#endif  // GMT_TESTS_UNIT_RUNTIME_HEADER_STAND_IN_CUDA_RUNTIME_H_
