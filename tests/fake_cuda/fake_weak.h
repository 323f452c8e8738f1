// Weak twins of FAKE_CU_API / FAKE_CUDART_API, for the entry points the guard
// zone shims need (fake_*_guard_*.cc, fake_*_launch_sync.cc,
// fake_*_pointer_ipc.cc).
//
// The double is grown by more than one hand at once: when another file of the
// same library defines the same entry point (plainly, so strongly), the linker
// keeps that definition and drops this one instead of failing the link. Each
// weak definition here implements the real driver's / runtime's contract, so
// whichever is kept, callers see the same behaviour.
#ifndef GMT_TESTS_FAKE_CUDA_FAKE_WEAK_H_
#define GMT_TESTS_FAKE_CUDA_FAKE_WEAK_H_

#include <cuda.h>

#define FAKE_CU_API_WEAK(name, params)                    \
  extern "C" __attribute__((visibility("default"), weak)) \
  CUresult Fake_##name params __asm__(#name);             \
  extern "C" CUresult Fake_##name params

// Needs tests/fake_cuda/fake_runtime.h (FAKE_CUDART_VISIBILITY) first.
#define FAKE_CUDART_API_WEAK(name, params)                \
  extern "C" FAKE_CUDART_VISIBILITY __attribute__((weak)) \
  cudaError_t Fake_##name params __asm__(#name);          \
  extern "C" cudaError_t Fake_##name params

#endif  // GMT_TESTS_FAKE_CUDA_FAKE_WEAK_H_
