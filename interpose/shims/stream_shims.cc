// Streams the program destroys: cudaStreamDestroy, cuStreamDestroy_v2; and
// stream captures begun and ended: cuStreamBeginCapture_v2(_ptsz),
// cuStreamBeginCaptureToGraph(_ptsz), cuStreamEndCapture(_ptsz) (the
// runtime's capture calls reach these through cuGetProcAddress).
//
// While a capture is in progress a cudaMalloc may be one CUDA refuses
// (cudaErrorStreamCaptureUnsupported in global mode, and the capture is
// invalidated): the tool then serves no allocation from its checked blocks
// (GuardManager::NoteCaptureBegun) and lets CUDA answer. Counted whether or
// not the call is the program's own, since the runtime's call is the same
// capture.
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

// ---- Stream capture ---------------------------------------------------------

namespace {

template <typename Call>
CUresult CountedBegin(Call&& call) {
  const CUresult result = call();
  if (result == CUDA_SUCCESS) gmt::Engine::Get().guard().NoteCaptureBegun();
  return result;
}

template <typename Call>
CUresult CountedEnd(Call&& call) {
  const CUresult result = call();
  // An invalidated capture ends too; any other error leaves it going.
  if (result == CUDA_SUCCESS ||
      result == CUDA_ERROR_STREAM_CAPTURE_INVALIDATED) {
    gmt::Engine::Get().guard().NoteCaptureEnded();
  }
  return result;
}

}  // namespace

CUresult Shim_cuStreamBeginCapture_v2(CUstream stream,
                                      CUstreamCaptureMode mode) {
  auto real = gmt::g_real_cuStreamBeginCapture_v2.Get();
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  return CountedBegin([&] { return real(stream, mode); });
}

CUresult Shim_cuStreamBeginCapture_v2_ptsz(CUstream stream,
                                           CUstreamCaptureMode mode) {
  auto real = gmt::g_real_cuStreamBeginCapture_v2_ptsz.Get();
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  return CountedBegin([&] { return real(stream, mode); });
}

CUresult Shim_cuStreamBeginCaptureToGraph(CUstream stream, CUgraph graph,
                                          const CUgraphNode* dependencies,
                                          const CUgraphEdgeData* edge_data,
                                          size_t count,
                                          CUstreamCaptureMode mode) {
  auto real = gmt::g_real_cuStreamBeginCaptureToGraph.Get();
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  return CountedBegin([&] {
    return real(stream, graph, dependencies, edge_data, count, mode);
  });
}

CUresult Shim_cuStreamBeginCaptureToGraph_ptsz(CUstream stream, CUgraph graph,
                                               const CUgraphNode* dependencies,
                                               const CUgraphEdgeData* edge_data,
                                               size_t count,
                                               CUstreamCaptureMode mode) {
  auto real = gmt::g_real_cuStreamBeginCaptureToGraph_ptsz.Get();
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  return CountedBegin([&] {
    return real(stream, graph, dependencies, edge_data, count, mode);
  });
}

CUresult Shim_cuStreamEndCapture(CUstream stream, CUgraph* graph) {
  auto real = gmt::g_real_cuStreamEndCapture.Get();
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  return CountedEnd([&] { return real(stream, graph); });
}

CUresult Shim_cuStreamEndCapture_ptsz(CUstream stream, CUgraph* graph) {
  auto real = gmt::g_real_cuStreamEndCapture_ptsz.Get();
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  return CountedEnd([&] { return real(stream, graph); });
}
