// What the guard-zone shims share (copy bounds, pointer queries, launches,
// synchronizing calls): the byte extent of a pitched access, the API-bounds
// check, the stream the engine is told about, and the answer of a runtime shim
// when no libcudart is loaded.
//
// These shims add no policy: the engine decides (Engine::CheckAccess,
// BeforeLaunch/AfterLaunch, OnSynchronized); a shim only finds the numbers.
#ifndef GMT_INTERPOSE_GUARD_SHIM_UTIL_H_
#define GMT_INTERPOSE_GUARD_SHIM_UTIL_H_

#include <cstdint>
#include <type_traits>

#include "interpose/shim.h"
#include "lib/core/sticky_errors.h"

namespace gmt {

// Bytes from the first byte of a pitched access to one past the last byte it
// touches: (rows - 1) * pitch + width, the rule CUDA applies to the
// allocation's exact size.
//
// 0 (nothing to check) when the access touches nothing, when CUDA must judge
// the shape itself (a pitch below the width over several rows, which CUDA
// refuses with its own pitch error that an API-bounds refusal would mask), or
// when the arithmetic overflows (CUDA refuses that too).
inline uint64_t PitchedExtent(uint64_t pitch, uint64_t width, uint64_t rows) {
  if (width == 0 || rows == 0) return 0;
  if (rows == 1) return width;
  if (pitch < width) return 0;
  uint64_t span = 0;
  if (__builtin_mul_overflow(rows - 1, pitch, &span) ||
      __builtin_add_overflow(span, width, &span)) {
    return 0;
  }
  return span;
}

// The same for a volume: `depth` slices of `slice_rows` rows of `pitch` bytes,
// of which `rows` rows of `width` bytes are touched per slice.
inline uint64_t VolumeExtent(uint64_t pitch, uint64_t slice_rows,
                             uint64_t width, uint64_t rows, uint64_t depth) {
  if (depth == 0) return 0;
  if (depth == 1) return PitchedExtent(pitch, width, rows);
  if (slice_rows < rows) return 0;
  // Rows from the first touched to the last touched, inclusive.
  uint64_t all_rows = 0;
  if (__builtin_mul_overflow(depth - 1, slice_rows, &all_rows) ||
      __builtin_add_overflow(all_rows, rows, &all_rows)) {
    return 0;
  }
  return PitchedExtent(pitch, width, all_rows);
}

// `count` elements of `element_bytes`; 0 on overflow (CUDA refuses it).
inline uint64_t ElementBytes(uint64_t count, uint64_t element_bytes) {
  uint64_t bytes = 0;
  return __builtin_mul_overflow(count, element_bytes, &bytes) ? 0 : bytes;
}

// True when the engine refuses an access of `bytes` at `address` made through
// `api` (the name the program wrote, "cudaMemcpyAsync", "cuMemsetD32").
// A null address or an empty range is never checked: CUDA judges those.
inline bool AccessRejected(Engine& engine, const char* api, uint64_t address,
                           uint64_t bytes) {
  return address != 0 && bytes != 0 &&
         engine.CheckAccess(api, address, bytes) == AccessVerdict::kReject;
}

// The stream a launch or copy runs on, as the engine is told: a per-thread
// variant (_ptsz) given stream 0 runs on the per-thread default stream, which
// the engine must name explicitly (CU_STREAM_PER_THREAD, 0x2) to enqueue
// work on it from a non-per-thread entry point.
inline uint64_t EngineStream(const void* stream, bool per_thread) {
  const auto id = reinterpret_cast<uint64_t>(stream);
  return id == 0 && per_thread
             ? reinterpret_cast<uint64_t>(CU_STREAM_PER_THREAD)
             : id;
}

// The stream an event synchronization waited for, which CUDA does not name:
// no real handle has this value, so Engine::OnStreamSynchronized treats it as
// "one stream, not a stream of any block still waiting for its fill" —
// zones whose fill is confirmed are checked, none is assumed filled.
inline constexpr uint64_t kAnyOneStream = ~uint64_t{0};

// What a runtime shim returns when no libcudart is loaded behind it (said
// once, plainly; see runtime_memory_shims.cc for when that happens).
cudaError_t NoRuntimeError();

// A runtime call the tool refused itself: cudaGetLastError and
// cudaPeekAtLastError report `error` next (runtime_error_state_shims.cc).
void NoteRuntimeError(cudaError_t error);

// What a shim hands back, seen on the way out. A sticky CUDA
// error (illegal address, launch failure, ...) is told to the engine, which
// writes the report at once, the first time. Call it in the outermost scope
// only (scope.Recording()), so that cudart's nested driver call does not
// claim it under the driver's name. `result` is returned unchanged.
template <typename Result>
inline Result NoteStickyResult(const char* call, Result result) {
  const int code = static_cast<int>(result);
  if (IsStickyCudaError(code)) {
    constexpr bool kDriver = std::is_same_v<Result, CUresult>;
    Engine::Get().OnStickyError(
        call, code,
        kDriver ? StickyDriverErrorName(code) : StickyRuntimeErrorName(code));
  }
  return result;
}

// Forwards `call` (which calls the real function `real`) unless
// `rejected(engine)` refuses the call: then the answer is CUDA's own for a
// range past an allocation, invalid value, without calling CUDA; a runtime
// refusal is also what cudaGetLastError answers next, as after CUDA's. Only
// the outermost intercepted call is checked: what cudart does inside runs
// under the same scope and is not checked twice. `api` names the call in
// reports (and for a sticky error the call returns).
template <typename Real, typename Rejected, typename Call>
CUresult ForwardDriverUnlessRejected(const char* api, Real real,
                                     Rejected&& rejected, Call&& call) {
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  InterceptScope scope;
  const bool recording = scope.Recording();
  if (recording && rejected(Engine::Get())) return CUDA_ERROR_INVALID_VALUE;
  const CUresult result = call();
  if (recording && result != CUDA_SUCCESS) NoteStickyResult(api, result);
  return result;
}

template <typename Real, typename Rejected, typename Call>
cudaError_t ForwardRuntimeUnlessRejected(const char* api, Real real,
                                         Rejected&& rejected, Call&& call) {
  if (real == nullptr) return NoRuntimeError();
  InterceptScope scope;
  const bool recording = scope.Recording();
  if (recording && rejected(Engine::Get())) {
    NoteRuntimeError(cudaErrorInvalidValue);
    return cudaErrorInvalidValue;
  }
  const cudaError_t result = call();
  if (recording && result != cudaSuccess) NoteStickyResult(api, result);
  return result;
}

}  // namespace gmt

#endif  // GMT_INTERPOSE_GUARD_SHIM_UTIL_H_
