// The policy of one guarded allocation, apart from how CUDA is asked.
//
// A guarded block is bigger than the program's request (lib/guard/
// guard_layout.h), and the redzones must never change what the program sees:
//
//   1. ask CUDA for the raw block the layout plans;
//   2. out of memory: give the quarantine back to CUDA and ask again;
//   3. still out of memory, or refused for any other reason: ask for the
//      program's own request, unguarded (counted, and said in the report).
//      Its result is what the program gets, so a request CUDA refuses is
//      refused with CUDA's own code, and one the bigger size alone made
//      fail still succeeds.
//
// A request whose enlarged size cannot be represented (rows + extra rows, or a
// size near the address space) is never enlarged: it goes to CUDA as the
// program made it, so CUDA refuses it exactly as it would without the tool.
//
//   GuardedAllocation a = AllocateLinear(layout, bytes, alloc, release);
//   if (a.result == 0) record(a.user, a.guarded ? a.raw : 0, ...);
//
// `alloc` makes the real call and returns CUDA's result code; the runtime's
// cudaErrorMemoryAllocation and the driver's CUDA_ERROR_OUT_OF_MEMORY are
// both 2, so one policy serves both APIs.
#ifndef GMT_LIB_GUARD_GUARDED_ALLOC_H_
#define GMT_LIB_GUARD_GUARDED_ALLOC_H_

#include <cstdint>
#include <optional>

#include "absl/functional/function_ref.h"
#include "lib/guard/guard_layout.h"

namespace gmt {

// cudaErrorMemoryAllocation and CUDA_ERROR_OUT_OF_MEMORY.
inline constexpr int kOutOfMemory = 2;
inline bool IsOutOfMemory(int result) { return result == kOutOfMemory; }

struct GuardedAllocation {
  int result = 0;          // what the program gets (0: success)
  uint64_t user = 0;       // the program's pointer, on success
  uint64_t raw = 0;        // the block CUDA returned, on success
  uint64_t raw_bytes = 0;  // its size when guarded
  uint64_t pitch = 0;      // rows: the pitch (or slice size) CUDA chose
  uint64_t rows = 0;       // rows: the program's rows (slices)
  bool guarded = false;    // the block has redzones
  // The enlarged request failed with this code (0: it did not, or there was
  // none) and the program's own request was made instead.
  int enlarged_error = 0;
  // An earlier call of this allocation failed before the one whose result
  // stands: the runtime then remembers that failure as its last error,
  // which the runtime shims must not let the program see.
  bool retried = false;
};

// `alloc(bytes, &raw)`: the real call for `bytes`; writes the block to *raw.
using RawLinearAlloc = absl::FunctionRef<int(uint64_t bytes, uint64_t* raw)>;
// Gives the quarantine back to CUDA; true when anything was released.
using ReleaseQuarantineFn = absl::FunctionRef<bool()>;

// A linear block of `bytes`: guarded with `layout` (nullopt: not guarded).
GuardedAllocation AllocateLinear(const std::optional<GuardLayout>& layout,
                                 uint64_t bytes, RawLinearAlloc alloc,
                                 ReleaseQuarantineFn release_quarantine);

// `alloc(rows, &raw, &pitch)`: the real call for `rows` rows (slices for
// 3-D); writes the block and the row (slice) size CUDA chose.
using RawRowsAlloc =
    absl::FunctionRef<int(uint64_t rows, uint64_t* raw, uint64_t* pitch)>;

// A pitched block of `rows` rows with `extra_rows` more for its redzones
// (0: not guarded); `policy` places the front rows.
GuardedAllocation AllocateRows(const GuardPolicy& policy, uint64_t rows,
                               uint64_t extra_rows, RawRowsAlloc alloc,
                               ReleaseQuarantineFn release_quarantine);

// The least pitch CUDA can choose for a row of `width` bytes (its pitch
// alignment is 512 bytes on every GPU the tool supports); 0 when rounding
// up overflows (CUDA refuses such a width anyway).
uint64_t LeastPitch(uint64_t width);

}  // namespace gmt

#endif  // GMT_LIB_GUARD_GUARDED_ALLOC_H_
