// Synchronizing calls: after one returns success, the engine may check the
// guard zones of the context (check=sync or kernel). The call's result is
// never changed, and a failed call tells the engine nothing.
//
//   device-wide (Engine::OnSynchronized)
//     cudaDeviceSynchronize, cuCtxSynchronize, cuCtxSynchronize_v2 (CUDA 13,
//     names its context)
//   one stream (Engine::OnStreamSynchronized)
//     cudaStreamSynchronize(_ptsz), cuStreamSynchronize(_ptsz): that stream
//     (stream 0 of a _ptsz variant is the per-thread stream);
//     cudaEventSynchronize, cuEventSynchronize: work up to the event on a
//     stream CUDA does not name, so kAnyOneStream (see guard_shim_util.h).
//
// The context named is the calling thread's current one (cuCtxSynchronize_v2:
// the one it names). The engine's own work (its check kernel and the wait for
// it) runs under this call's InterceptScope, so the synchronizing calls it
// makes do not come back here; nor do cudart's calls into the driver.
#include "interpose/guard_shim_util.h"
#include "interpose/resolve/driver_hooks.h"
#include "interpose/resolve/runtime_hooks.h"
#include "lib/core/tool_time.h"

using gmt::InterceptScope;

namespace {

uint64_t ContextOr(uint64_t context) {
  return context != 0 ? context : gmt::CurrentCallContext().context;
}

// Forwards `call`; on success the whole of `context` (0: current) is idle.
// `name`: the entry point, for a sticky error's report.
template <typename Call>
auto DeviceWide(const char* name, uint64_t context, Call&& call) {
  InterceptScope scope;
  auto result = call();
  if (static_cast<int>(result) == 0 && scope.Recording()) {
    gmt::SampledCallTime timed(gmt::ToolCall::kSynchronization);
    gmt::Engine::Get().OnSynchronized(ContextOr(context));
  } else if (scope.Recording()) {
    gmt::NoteStickyResult(name, result);
  }
  return result;
}

// Forwards `call`; on success the work on `stream` of the current context is
// done.
template <typename Call>
auto OneStream(const char* name, uint64_t stream, Call&& call) {
  InterceptScope scope;
  auto result = call();
  if (static_cast<int>(result) == 0 && scope.Recording()) {
    gmt::SampledCallTime timed(gmt::ToolCall::kSynchronization);
    gmt::Engine::Get().OnStreamSynchronized(ContextOr(0), stream);
  } else if (scope.Recording()) {
    gmt::NoteStickyResult(name, result);
  }
  return result;
}

}  // namespace

// ---- Runtime ----------------------------------------------------------------

cudaError_t Shim_cudaDeviceSynchronize() {
  auto real = gmt::g_real_cudaDeviceSynchronize.Get();
  if (real == nullptr) return gmt::NoRuntimeError();
  return DeviceWide("cudaDeviceSynchronize", 0, [&] { return real(); });
}

cudaError_t Shim_cudaStreamSynchronize(cudaStream_t stream) {
  auto real = gmt::g_real_cudaStreamSynchronize.Get();
  if (real == nullptr) return gmt::NoRuntimeError();
  return OneStream("cudaStreamSynchronize", gmt::EngineStream(stream, false),
                   [&] { return real(stream); });
}

cudaError_t Shim_cudaStreamSynchronize_ptsz(cudaStream_t stream) {
  auto real = gmt::g_real_cudaStreamSynchronize_ptsz.Get();
  if (real == nullptr) return gmt::NoRuntimeError();
  return OneStream("cudaStreamSynchronize_ptsz",
                   gmt::EngineStream(stream, true),
                   [&] { return real(stream); });
}

cudaError_t Shim_cudaEventSynchronize(cudaEvent_t event) {
  auto real = gmt::g_real_cudaEventSynchronize.Get();
  if (real == nullptr) return gmt::NoRuntimeError();
  return OneStream("cudaEventSynchronize", gmt::kAnyOneStream,
                   [&] { return real(event); });
}

// ---- Driver -----------------------------------------------------------------

CUresult Shim_cuCtxSynchronize() {
  auto real = gmt::g_real_cuCtxSynchronize.Get();
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  return DeviceWide("cuCtxSynchronize", 0, [&] { return real(); });
}

CUresult Shim_cuCtxSynchronize_v2(CUcontext ctx) {
  auto real = gmt::g_real_cuCtxSynchronize_v2.Get();
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  return DeviceWide("cuCtxSynchronize_v2", reinterpret_cast<uint64_t>(ctx),
                    [&] { return real(ctx); });
}

CUresult Shim_cuStreamSynchronize(CUstream stream) {
  auto real = gmt::g_real_cuStreamSynchronize.Get();
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  return OneStream("cuStreamSynchronize", gmt::EngineStream(stream, false),
                   [&] { return real(stream); });
}

CUresult Shim_cuStreamSynchronize_ptsz(CUstream stream) {
  auto real = gmt::g_real_cuStreamSynchronize_ptsz.Get();
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  return OneStream("cuStreamSynchronize_ptsz", gmt::EngineStream(stream, true),
                   [&] { return real(stream); });
}

CUresult Shim_cuEventSynchronize(CUevent event) {
  auto real = gmt::g_real_cuEventSynchronize.Get();
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  return OneStream("cuEventSynchronize", gmt::kAnyOneStream,
                   [&] { return real(event); });
}
