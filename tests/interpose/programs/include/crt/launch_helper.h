// A stand-in for the CUDA toolkit's include/crt/device_functions.h, where
// nvcc's generated launch code calls __cudaLaunchKernel_helper (CUDA 13): an
// inline function of a toolkit header, which a report's launch site must
// leave for the program's own line.
#ifndef GMT_TESTS_INTERPOSE_PROGRAMS_INCLUDE_CRT_LAUNCH_HELPER_H_
#define GMT_TESTS_INTERPOSE_PROGRAMS_INCLUDE_CRT_LAUNCH_HELPER_H_

#include <cuda_runtime_api.h>

__attribute__((always_inline)) inline cudaError_t LaunchKernelHelper(
    const void* func, dim3 grid, dim3 block, void** args) {
  return cudaLaunchKernel(func, grid, block, args, 0, nullptr);
}

#endif  // GMT_TESTS_INTERPOSE_PROGRAMS_INCLUDE_CRT_LAUNCH_HELPER_H_
