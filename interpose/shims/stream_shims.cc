// Streams the program destroys: cudaStreamDestroy, cuStreamDestroy_v2.
//
// Blocks freed on a stream with cudaFreeAsync that the tool still holds
// (quarantine_async, torch mode) are checked and given back to CUDA in that
// stream's order when they leave the quarantine. Once the stream is gone its
// handle is invalid (or another stream's), so they leave first: their check
// and CUDA's stream-ordered free are enqueued on the stream before the
// program's destroy, which CUDA lets finish the stream's work. The destroy
// itself is forwarded unchanged, with its result.
#include "interpose/guard_shim_util.h"
#include "interpose/resolve/driver_hooks.h"
#include "interpose/resolve/runtime_hooks.h"

using gmt::InterceptScope;

namespace {

template <typename Call>
auto ReleaseThenDestroy(uint64_t stream, Call&& call) {
  InterceptScope scope;
  if (scope.Recording() && stream != 0) {
    gmt::Engine::Get().BeforeStreamDestroy(stream);
  }
  return call();
}

}  // namespace

cudaError_t Shim_cudaStreamDestroy(cudaStream_t stream) {
  auto real = gmt::g_real_cudaStreamDestroy.Get();
  if (real == nullptr) return gmt::NoRuntimeError();
  return ReleaseThenDestroy(reinterpret_cast<uint64_t>(stream),
                            [&] { return real(stream); });
}

CUresult Shim_cuStreamDestroy_v2(CUstream stream) {
  auto real = gmt::g_real_cuStreamDestroy_v2.Get();
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  return ReleaseThenDestroy(reinterpret_cast<uint64_t>(stream),
                            [&] { return real(stream); });
}
