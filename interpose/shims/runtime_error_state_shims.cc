// cudaGetLastError / cudaPeekAtLastError: the runtime remembers the last
// error of each thread's runtime calls. When the tool answers a call itself
// (a copy that would run into a redzone, refused with cudaErrorInvalidValue
// as CUDA would), the runtime never saw it, so the tool keeps that error here
// and these two shims report it as CUDA would have.
//
// If both the runtime and the tool hold an error, the tool's is returned: a
// program reads the last error right after the failing call, and the tool's
// refusal is then the newer one. Both are cleared by cudaGetLastError.
//
// A guarded allocation that took a second call (RuntimeLastErrorGuard,
// interpose/alloc_shims.h) clears the runtime's error its first call left,
// and puts back, as the tool's, the error the runtime held before it.
#include "interpose/alloc_shims.h"
#include "interpose/guard_shim_util.h"
#include "interpose/resolve/runtime_hooks.h"

namespace gmt {
namespace {
thread_local cudaError_t t_tool_error = cudaSuccess;
}  // namespace

void NoteRuntimeError(cudaError_t error) { t_tool_error = error; }

RuntimeLastErrorGuard::RuntimeLastErrorGuard() {
  if (auto peek = g_real_cudaPeekAtLastError.Get()) before_ = peek();
}

void RuntimeLastErrorGuard::RestoreAfterRetry() {
  if (auto get = g_real_cudaGetLastError.Get()) get();
  // A refusal of the tool's own, still unread, is newer and wins anyway.
  if (before_ != cudaSuccess && t_tool_error == cudaSuccess) {
    t_tool_error = before_;
  }
}

}  // namespace gmt

cudaError_t Shim_cudaGetLastError() {
  auto real = gmt::g_real_cudaGetLastError.Get();
  cudaError_t runtime = real != nullptr ? real() : cudaSuccess;
  cudaError_t mine = gmt::t_tool_error;
  gmt::t_tool_error = cudaSuccess;
  return mine != cudaSuccess ? mine : runtime;
}

cudaError_t Shim_cudaPeekAtLastError() {
  auto real = gmt::g_real_cudaPeekAtLastError.Get();
  cudaError_t runtime = real != nullptr ? real() : cudaSuccess;
  return gmt::t_tool_error != cudaSuccess ? gmt::t_tool_error : runtime;
}
