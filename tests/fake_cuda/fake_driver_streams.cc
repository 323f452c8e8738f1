// Fake driver: streams, events, stream-capture mode and device attributes.
//
// The double has no asynchrony: every call does its work before it returns,
// so a stream is only a handle to validate, an event is complete as soon as
// it is recorded, and waiting never waits. What is kept of the real driver's
// contract is what callers can get wrong: handles must be live, flags known,
// and a context current where the real driver needs one.
#include <mutex>
#include <set>

#include "tests/fake_cuda/fake_cupti_emit.h"
#include "tests/fake_cuda/fake_driver.h"
#include "tests/fake_cuda/fake_sticky_error.h"
#include "tests/fake_cuda/fake_tool_faults.h"

namespace fake_cuda {
namespace {

struct Stream {
  const Context* ctx;
  unsigned int flags;
  CUgraph capture = nullptr;  // the graph being captured
};

struct Event {
  const Context* ctx;
  unsigned int flags;
};

struct Handles {
  std::mutex mu;
  std::set<const Stream*> streams;
  std::set<const Event*> events;
};

// Leaked on purpose: handles may be destroyed from static destructors.
Handles& H() {
  static Handles* const handles = new Handles();
  return *handles;
}

bool IsValidEvent(CUevent event) {
  std::lock_guard<std::mutex> lock(H().mu);
  return H().events.count(reinterpret_cast<const Event*>(event)) != 0;
}

thread_local CUstreamCaptureMode t_capture_mode = CU_STREAM_CAPTURE_MODE_GLOBAL;

}  // namespace

bool IsValidStream(CUstream stream) {
  if (stream == nullptr || stream == CU_STREAM_LEGACY ||
      stream == CU_STREAM_PER_THREAD) {
    return true;
  }
  std::lock_guard<std::mutex> lock(H().mu);
  return H().streams.count(reinterpret_cast<const Stream*>(stream)) != 0;
}

}  // namespace fake_cuda

using fake_cuda::Context;

// ---- Streams
// --------------------------------------------------------------------

FAKE_CU_API(cuStreamCreate, (CUstream * stream, unsigned int flags)) {
  Context* ctx = nullptr;
  if (CUresult r = fake_cuda::RequireContext(&ctx); r != CUDA_SUCCESS) return r;
  if (stream == nullptr ||
      (flags != CU_STREAM_DEFAULT && flags != CU_STREAM_NON_BLOCKING)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  // Reliability tests: FAKE_CUDA_FAIL_STREAM_CREATE (fake_tool_faults.h).
  if (CUresult r = fake_cuda::InjectToolFailure(
          fake_cuda::ToolCall::kStreamCreate, __builtin_return_address(0));
      r != CUDA_SUCCESS) {
    return r;
  }
  auto* s = new fake_cuda::Stream{ctx, flags};
  {
    std::lock_guard<std::mutex> lock(fake_cuda::H().mu);
    fake_cuda::H().streams.insert(s);
  }
  *stream = reinterpret_cast<CUstream>(s);
  return CUDA_SUCCESS;
}

FAKE_CU_API(cuStreamDestroy_v2, (CUstream stream)) {
  if (!fake_cuda::Initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  auto* s = reinterpret_cast<fake_cuda::Stream*>(stream);
  {
    std::lock_guard<std::mutex> lock(fake_cuda::H().mu);
    if (fake_cuda::H().streams.erase(s) == 0) return CUDA_ERROR_INVALID_HANDLE;
  }
  delete s;
  return CUDA_SUCCESS;
}

FAKE_CU_API(cuStreamIsCapturing,
            (CUstream stream, CUstreamCaptureStatus* status)) {
  if (!fake_cuda::Initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (status == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!fake_cuda::IsValidStream(stream)) return CUDA_ERROR_INVALID_HANDLE;
  *status = fake_cuda::CaptureGraphOf(stream) != nullptr
                ? CU_STREAM_CAPTURE_STATUS_ACTIVE
                : CU_STREAM_CAPTURE_STATUS_NONE;
  return CUDA_SUCCESS;
}

// ---- Stream capture ----------------------------------------
// Only created streams capture (as in CUDA, not the legacy stream). Captured
// work runs nothing; cuMemAllocAsync / cuMemFreeAsync become graph nodes.

namespace fake_cuda {

CUgraph CaptureGraphOf(CUstream stream) {
  if (stream == nullptr || stream == CU_STREAM_LEGACY ||
      stream == CU_STREAM_PER_THREAD) {
    return nullptr;
  }
  std::lock_guard<std::mutex> lock(H().mu);
  auto* s = reinterpret_cast<Stream*>(stream);
  if (H().streams.count(s) == 0) return nullptr;
  return s->capture;
}

}  // namespace fake_cuda

FAKE_CU_API(cuStreamBeginCapture_v2,
            (CUstream stream, CUstreamCaptureMode mode)) {
  if (!fake_cuda::Initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  (void)mode;
  if (stream == nullptr || stream == CU_STREAM_LEGACY ||
      stream == CU_STREAM_PER_THREAD) {
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  }
  std::lock_guard<std::mutex> lock(fake_cuda::H().mu);
  auto* s = reinterpret_cast<fake_cuda::Stream*>(stream);
  if (fake_cuda::H().streams.count(s) == 0) return CUDA_ERROR_INVALID_HANDLE;
  if (s->capture != nullptr) return CUDA_ERROR_ILLEGAL_STATE;
  s->capture = fake_cuda::NewGraph();
  return CUDA_SUCCESS;
}

FAKE_CU_API(cuStreamEndCapture, (CUstream stream, CUgraph* graph)) {
  if (!fake_cuda::Initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (graph == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<std::mutex> lock(fake_cuda::H().mu);
  auto* s = reinterpret_cast<fake_cuda::Stream*>(stream);
  if (fake_cuda::H().streams.count(s) == 0) return CUDA_ERROR_INVALID_HANDLE;
  if (s->capture == nullptr) return CUDA_ERROR_ILLEGAL_STATE;
  *graph = s->capture;
  s->capture = nullptr;
  return CUDA_SUCCESS;
}

FAKE_CU_API(cuStreamWaitEvent,
            (CUstream stream, CUevent event, unsigned int flags)) {
  fake_cuda::CheckCallFromLaunchCallback("cuStreamWaitEvent");
  if (!fake_cuda::Initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (flags != CU_EVENT_WAIT_DEFAULT && flags != CU_EVENT_WAIT_EXTERNAL) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (!fake_cuda::IsValidStream(stream) || !fake_cuda::IsValidEvent(event)) {
    return CUDA_ERROR_INVALID_HANDLE;
  }
  return CUDA_SUCCESS;
}

FAKE_CU_API(cuThreadExchangeStreamCaptureMode, (CUstreamCaptureMode * mode)) {
  if (!fake_cuda::Initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (mode == nullptr || (*mode != CU_STREAM_CAPTURE_MODE_GLOBAL &&
                          *mode != CU_STREAM_CAPTURE_MODE_THREAD_LOCAL &&
                          *mode != CU_STREAM_CAPTURE_MODE_RELAXED)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  CUstreamCaptureMode old = fake_cuda::t_capture_mode;
  fake_cuda::t_capture_mode = *mode;
  *mode = old;
  return CUDA_SUCCESS;
}

// ---- Events
// ---------------------------------------------------------------------

FAKE_CU_API(cuEventCreate, (CUevent * event, unsigned int flags)) {
  Context* ctx = nullptr;
  if (CUresult r = fake_cuda::RequireContext(&ctx); r != CUDA_SUCCESS) return r;
  constexpr unsigned int kKnown =
      CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS;
  if (event == nullptr || (flags & ~kKnown) != 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  auto* e = new fake_cuda::Event{ctx, flags};
  {
    std::lock_guard<std::mutex> lock(fake_cuda::H().mu);
    fake_cuda::H().events.insert(e);
  }
  *event = reinterpret_cast<CUevent>(e);
  return CUDA_SUCCESS;
}

FAKE_CU_API(cuEventDestroy_v2, (CUevent event)) {
  if (!fake_cuda::Initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  auto* e = reinterpret_cast<fake_cuda::Event*>(event);
  {
    std::lock_guard<std::mutex> lock(fake_cuda::H().mu);
    if (fake_cuda::H().events.erase(e) == 0) return CUDA_ERROR_INVALID_HANDLE;
  }
  delete e;
  return CUDA_SUCCESS;
}

FAKE_CU_API(cuEventRecord, (CUevent event, CUstream stream)) {
  fake_cuda::CheckCallFromLaunchCallback("cuEventRecord");
  if (!fake_cuda::Initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (!fake_cuda::IsValidEvent(event) || !fake_cuda::IsValidStream(stream)) {
    return CUDA_ERROR_INVALID_HANDLE;
  }
  return CUDA_SUCCESS;
}

// Everything recorded has already happened.
FAKE_CU_API(cuEventQuery, (CUevent event)) {
  if (!fake_cuda::Initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (!fake_cuda::IsValidEvent(event)) return CUDA_ERROR_INVALID_HANDLE;
  fake_cuda::RunDeferredChecks();
  return CUDA_SUCCESS;
}

FAKE_CU_API(cuEventSynchronize, (CUevent event)) {
  fake_cuda::CheckCallFromLaunchCallback("cuEventSynchronize");
  if (!fake_cuda::Initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (!fake_cuda::IsValidEvent(event)) return CUDA_ERROR_INVALID_HANDLE;
  fake_cuda::RunDeferredChecks();
  // Reliability tests: FAKE_CUDA_HOLD_TOOL_WAIT (fake_tool_faults.h).
  fake_cuda::HoldToolWaitIfAsked(__builtin_return_address(0));
  return fake_cuda::StickyError();  // a planted fault (fake_sticky_error.h)
}

// ---- Device attributes
// ------------------------------------------------------------ Only the
// attributes the tool and its tests ask for; others are
// CUDA_ERROR_INVALID_VALUE, so a new question shows up as a test failure.

FAKE_CU_API(cuDeviceGetAttribute,
            (int* value, CUdevice_attribute attribute, CUdevice dev)) {
  if (!fake_cuda::Initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (value == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (dev < 0 || dev >= fake_cuda::kDeviceCount) {
    return CUDA_ERROR_INVALID_DEVICE;
  }
  switch (attribute) {
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
      *value = fake_cuda::kMultiprocessorCount;
      return CUDA_SUCCESS;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
      *value = 9;
      return CUDA_SUCCESS;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR:
      *value = 0;
      return CUDA_SUCCESS;
    case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING:
      *value = 1;
      return CUDA_SUCCESS;
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
}
