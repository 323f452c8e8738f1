// Shared by the interposition test programs: every CUDA call's result is
// printed, one line each, so a test can compare a run under the tool with a run
// without it (the tool must never change what the program sees). Lines never
// contain pointers, pids or timings.
#ifndef GMT_TESTS_INTERPOSE_PROGRAMS_PROGRAM_UTIL_H_
#define GMT_TESTS_INTERPOSE_PROGRAMS_PROGRAM_UTIL_H_

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <cstdio>

#define NOINLINE __attribute__((noinline))

// Prints "<what> -> <code> <name>" for a runtime result and returns it.
inline cudaError_t Rt(const char* what, cudaError_t e) {
  std::printf("%s -> %d %s\n", what, static_cast<int>(e), cudaGetErrorName(e));
  std::fflush(stdout);
  return e;
}

// The same for a driver result.
inline CUresult Cu(const char* what, CUresult r) {
  const char* name = nullptr;
  if (cuGetErrorName(r, &name) != CUDA_SUCCESS) name = "?";
  std::printf("%s -> %d %s\n", what, static_cast<int>(r), name);
  std::fflush(stdout);
  return r;
}

// cuInit + the primary context of `device` made current (what a driver-API
// program does before allocating).
inline bool DriverSetup(int device) {
  CUcontext ctx = nullptr;
  return Cu("cuInit", cuInit(0)) == CUDA_SUCCESS &&
         Cu("cuDevicePrimaryCtxRetain",
            cuDevicePrimaryCtxRetain(&ctx, device)) == CUDA_SUCCESS &&
         Cu("cuCtxSetCurrent", cuCtxSetCurrent(ctx)) == CUDA_SUCCESS;
}

// Keeps the compiler from treating a call as the last thing a function does
// (no tail call: the caller's frame must stay on the stack).
inline void AfterCall() { asm volatile("" ::: "memory"); }

#endif  // GMT_TESTS_INTERPOSE_PROGRAMS_PROGRAM_UTIL_H_
