#include "lib/guard/guarded_alloc.h"

namespace gmt {

GuardedAllocation AllocateLinear(const std::optional<GuardLayout>& layout,
                                 uint64_t bytes, RawLinearAlloc alloc,
                                 ReleaseQuarantineFn release_quarantine) {
  GuardedAllocation a;
  if (layout) {
    a.result = alloc(layout->raw_bytes, &a.raw);
    if (IsOutOfMemory(a.result) && release_quarantine()) {
      a.retried = true;
      a.result = alloc(layout->raw_bytes, &a.raw);
    }
    if (a.result == 0) {
      a.user = a.raw + layout->front;
      a.raw_bytes = layout->raw_bytes;
      a.guarded = true;
      return a;
    }
    a.retried = true;
    a.enlarged_error = a.result;
  }
  a.raw = 0;
  a.result = alloc(bytes, &a.raw);
  if (a.result == 0) a.user = a.raw;
  return a;
}

GuardedAllocation AllocateRows(const GuardPolicy& policy, uint64_t rows,
                               uint64_t extra_rows, RawRowsAlloc alloc,
                               ReleaseQuarantineFn release_quarantine) {
  GuardedAllocation a;
  a.rows = rows;
  uint64_t all_rows = 0;
  if (extra_rows > 0 && !__builtin_add_overflow(rows, extra_rows, &all_rows)) {
    a.result = alloc(all_rows, &a.raw, &a.pitch);
    if (IsOutOfMemory(a.result) && release_quarantine()) {
      a.retried = true;
      a.result = alloc(all_rows, &a.raw, &a.pitch);
    }
    uint64_t raw_bytes = 0;
    if (a.result == 0 &&
        !__builtin_mul_overflow(a.pitch, all_rows, &raw_bytes)) {
      a.user = a.raw + FrontRows(policy, a.pitch, extra_rows) * a.pitch;
      a.raw_bytes = raw_bytes;
      a.guarded = true;
      return a;
    }
    if (a.result == 0) {
      // CUDA made a block whose size does not fit 64 bits (it cannot): keep
      // it as the program's, unguarded, rather than guess its layout.
      a.user = a.raw;
      return a;
    }
    a.retried = true;
    a.enlarged_error = a.result;
  }
  a.raw = 0;
  a.pitch = 0;
  a.result = alloc(rows, &a.raw, &a.pitch);
  if (a.result == 0) a.user = a.raw;
  return a;
}

uint64_t LeastPitch(uint64_t width) {
  uint64_t rounded = 0;
  if (__builtin_add_overflow(width, uint64_t{511}, &rounded)) return 0;
  return rounded / 512 * 512;
}

}  // namespace gmt
