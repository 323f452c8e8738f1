// Allocation with redzones, shared by the runtime and driver shims: ask CUDA
// for the raw block the engine planned, hand the program the pointer past the
// front redzone, and never let the redzones change what the program sees.
//
//   * out of memory with redzones: give the quarantine back and retry, then
//     retry without redzones (the program's own request) and count it;
//   * any other failure is the program's request failing: CUDA's code is
//     returned unchanged (the enlarged size cannot turn success into error
//     except by memory, and memory is retried above).
#ifndef GMT_INTERPOSE_GUARDED_ALLOC_H_
#define GMT_INTERPOSE_GUARDED_ALLOC_H_

#include <cstdint>

#include "interpose/oom_shim_util.h"
#include "interpose/shim.h"

namespace gmt {

// cudaErrorMemoryAllocation and CUDA_ERROR_OUT_OF_MEMORY are both 2.
inline bool IsOutOfMemory(int result) { return result == 2; }

// `alloc(bytes, &raw)` makes the real call and returns its result code.
// Records the block and returns the code; *user gets the program's pointer.
template <typename Alloc>
auto GuardedLinearAlloc(Api api, uint64_t bytes, uint64_t stream, StackId stack,
                        uint64_t* user, Alloc&& alloc) {
  Engine& engine = Engine::Get();
  std::optional<GuardLayout> plan = engine.PlanGuard(api, bytes, stream);
  uint64_t raw = 0;
  if (plan) {
    auto result = alloc(plan->raw_bytes, &raw);
    if (IsOutOfMemory(static_cast<int>(result)) && engine.ReleaseQuarantine()) {
      result = alloc(plan->raw_bytes, &raw);
    }
    if (static_cast<int>(result) == 0) {
      *user = raw + plan->front;
      RecordAlloc(api, *user, bytes, stream, stack, -2, raw, plan->raw_bytes);
      return result;
    }
    if (!IsOutOfMemory(static_cast<int>(result))) return result;
    engine.guard().NoteUnguardedOom();
  }
  auto result = alloc(bytes, &raw);
  if (static_cast<int>(result) == 0) {
    *user = raw;
    RecordAlloc(api, raw, bytes, stream, stack);
  } else if (IsOutOfMemory(static_cast<int>(result))) {
    NoteAllocFailure(api, bytes, stack, static_cast<int>(result));
  }
  return result;
}

// Pitched (2-D, and 3-D with slices as rows): `alloc(rows, &raw, &pitch)`
// asks for `rows` rows. `row_estimate` is the least pitch CUDA can choose.
template <typename Alloc>
auto GuardedRowsAlloc(Api api, uint64_t rows, uint64_t row_estimate,
                      StackId stack, uint64_t* user, uint64_t* pitch,
                      Alloc&& alloc) {
  Engine& engine = Engine::Get();
  const bool guard = engine.guard().Guards(api) && rows > 0 && row_estimate > 0;
  uint64_t raw = 0;
  if (guard) {
    const uint64_t extra =
        PlanExtraRows(engine.guard().policy(), row_estimate, rows);
    auto result = alloc(rows + extra, &raw, pitch);
    if (IsOutOfMemory(static_cast<int>(result)) && engine.ReleaseQuarantine()) {
      result = alloc(rows + extra, &raw, pitch);
    }
    if (static_cast<int>(result) == 0) {
      const uint64_t front_rows =
          FrontRows(engine.guard().policy(), *pitch, extra);
      *user = raw + front_rows * *pitch;
      RecordAlloc(api, *user, *pitch * rows, 0, stack, -2, raw,
                  *pitch * (rows + extra));
      return result;
    }
    if (!IsOutOfMemory(static_cast<int>(result))) return result;
    engine.guard().NoteUnguardedOom();
  }
  auto result = alloc(rows, &raw, pitch);
  if (static_cast<int>(result) == 0) {
    *user = raw;
    RecordAlloc(api, raw, *pitch * rows, 0, stack);
  } else if (IsOutOfMemory(static_cast<int>(result))) {
    // The pitch is unknown after a failure: the least row size.
    NoteAllocFailure(api, rows * row_estimate, stack,
                     static_cast<int>(result));
  }
  return result;
}

}  // namespace gmt

#endif  // GMT_INTERPOSE_GUARDED_ALLOC_H_
