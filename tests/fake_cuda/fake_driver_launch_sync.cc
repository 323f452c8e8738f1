// Fake driver: kernel launches, graph launches, kernel names and the
// synchronizing calls the guard-zone shims hook
// (interpose/shims/launch_shims.cc, interpose/shims/sync_shims.cc).
//
// The double runs no device code. A launch validates what the real driver
// validates cheaply and returns:
//   * a current context, else CUDA_ERROR_INVALID_CONTEXT / NOT_INITIALIZED;
//   * a non-null function, else CUDA_ERROR_INVALID_HANDLE;
//   * a stream the double knows, else CUDA_ERROR_INVALID_HANDLE;
//   * non-zero grid and block dimensions, else CUDA_ERROR_INVALID_VALUE.
// Function handles: unless a module/library part of the double hands out its
// own, a CUfunction (or CUkernel) of the double is a pointer to the kernel's
// NUL-terminated (mangled) name, so a test program can make one from a string
// literal; cuFuncGetName / cuKernelGetName return that string.
// A graph executable is any non-null handle here; fake_driver_graphs.cc
// defines the graph launches that are kept, with memory.
//
// Defined weak (fake_weak.h): where another file of the double defines the
// same entry point, that one is kept.
#include "tests/fake_cuda/fake_driver.h"
#include "tests/fake_cuda/fake_sticky_error.h"
#include "tests/fake_cuda/fake_weak.h"

namespace {

CUresult CheckLaunch(const void* f, unsigned int gx, unsigned int gy,
                     unsigned int gz, unsigned int bx, unsigned int by,
                     unsigned int bz, CUstream stream) {
  fake_cuda::Context* ctx = nullptr;
  if (CUresult r = fake_cuda::RequireContext(&ctx); r != CUDA_SUCCESS) return r;
  // A planted fault (fake_sticky_error.h) fails every later launch.
  if (CUresult r = fake_cuda::StickyError(); r != CUDA_SUCCESS) return r;
  if (f == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (!fake_cuda::IsValidStream(stream)) return CUDA_ERROR_INVALID_HANDLE;
  if (gx == 0 || gy == 0 || gz == 0 || bx == 0 || by == 0 || bz == 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  fake_cuda::NoteLaunchForStickyError(f);
  return CUDA_SUCCESS;
}

CUresult CheckLaunchEx(const CUlaunchConfig* config, const void* f) {
  if (config == nullptr) {
    return fake_cuda::Initialized() ? CUDA_ERROR_INVALID_VALUE
                                    : CUDA_ERROR_NOT_INITIALIZED;
  }
  return CheckLaunch(f, config->gridDimX, config->gridDimY, config->gridDimZ,
                     config->blockDimX, config->blockDimY, config->blockDimZ,
                     config->hStream);
}

CUresult GraphLaunch(CUgraphExec exec, CUstream stream) {
  fake_cuda::Context* ctx = nullptr;
  if (CUresult r = fake_cuda::RequireContext(&ctx); r != CUDA_SUCCESS) return r;
  if (exec == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!fake_cuda::IsValidStream(stream)) return CUDA_ERROR_INVALID_HANDLE;
  return CUDA_SUCCESS;
}

CUresult NameOf(const char** name, const void* handle) {
  if (!fake_cuda::Initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (name == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (handle == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  *name = static_cast<const char*>(handle);
  return CUDA_SUCCESS;
}

}  // namespace

// ---- Kernel launches --------------------------------------------------------

FAKE_CU_API_WEAK(cuLaunchKernel,
                 (CUfunction f, unsigned int gx, unsigned int gy,
                  unsigned int gz, unsigned int bx, unsigned int by,
                  unsigned int bz, unsigned int /*shared_bytes*/,
                  CUstream stream, void** /*params*/, void** /*extra*/)) {
  return CheckLaunch(f, gx, gy, gz, bx, by, bz, stream);
}

FAKE_CU_API_WEAK(cuLaunchKernel_ptsz,
                 (CUfunction f, unsigned int gx, unsigned int gy,
                  unsigned int gz, unsigned int bx, unsigned int by,
                  unsigned int bz, unsigned int /*shared_bytes*/,
                  CUstream stream, void** /*params*/, void** /*extra*/)) {
  return CheckLaunch(f, gx, gy, gz, bx, by, bz, stream);
}

FAKE_CU_API_WEAK(cuLaunchKernelEx, (const CUlaunchConfig* config, CUfunction f,
                                    void** /*params*/, void** /*extra*/)) {
  return CheckLaunchEx(config, f);
}

FAKE_CU_API_WEAK(cuLaunchKernelEx_ptsz,
                 (const CUlaunchConfig* config, CUfunction f, void** /*params*/,
                  void** /*extra*/)) {
  return CheckLaunchEx(config, f);
}

FAKE_CU_API_WEAK(cuLaunchCooperativeKernel,
                 (CUfunction f, unsigned int gx, unsigned int gy,
                  unsigned int gz, unsigned int bx, unsigned int by,
                  unsigned int bz, unsigned int /*shared_bytes*/,
                  CUstream stream, void** /*params*/)) {
  return CheckLaunch(f, gx, gy, gz, bx, by, bz, stream);
}

FAKE_CU_API_WEAK(cuLaunchCooperativeKernel_ptsz,
                 (CUfunction f, unsigned int gx, unsigned int gy,
                  unsigned int gz, unsigned int bx, unsigned int by,
                  unsigned int bz, unsigned int /*shared_bytes*/,
                  CUstream stream, void** /*params*/)) {
  return CheckLaunch(f, gx, gy, gz, bx, by, bz, stream);
}

FAKE_CU_API_WEAK(cuGraphLaunch, (CUgraphExec exec, CUstream stream)) {
  return GraphLaunch(exec, stream);
}

FAKE_CU_API_WEAK(cuGraphLaunch_ptsz, (CUgraphExec exec, CUstream stream)) {
  return GraphLaunch(exec, stream);
}

// ---- Kernel names -----------------------------------------------------------

FAKE_CU_API_WEAK(cuFuncGetName, (const char** name, CUfunction f)) {
  return NameOf(name, f);
}

FAKE_CU_API_WEAK(cuKernelGetName, (const char** name, CUkernel k)) {
  return NameOf(name, k);
}

// ---- Synchronizing calls ----------------------------------------------------
// cuCtxSynchronize(_v2) and cuStreamSynchronize are in fake_driver_context.cc,
// cuEventSynchronize with the events.

FAKE_CU_API_WEAK(cuStreamSynchronize_ptsz, (CUstream stream)) {
  fake_cuda::Context* ctx = nullptr;
  if (CUresult r = fake_cuda::RequireContext(&ctx); r != CUDA_SUCCESS) return r;
  if (CUresult r = fake_cuda::StickyError(); r != CUDA_SUCCESS) return r;
  return fake_cuda::IsValidStream(stream) ? CUDA_SUCCESS
                                          : CUDA_ERROR_INVALID_HANDLE;
}
