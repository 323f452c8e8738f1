// Guard-zone layout: how much to ask CUDA for, and where the user's bytes and
// the redzones lie in what comes back. Pure functions of the options.
//
//   raw                      user = raw + front          user + bytes    raw +
//   raw_bytes |                        |                           | | [  front
//   redzone         |  user bytes               |  tail redzone ]
//    <- front: k * 512 ----->                             <- slack + zone ->
//
// * front is a multiple of 512, so the user's pointer keeps the alignment
//   cudaMalloc gives in practice (its documented 256 bytes is not enough: a
//   linear texture over a cudaMalloc'ed buffer needs textureAlignment, 512
//   on current GPUs; DESIGN pitfall 6); for a block over 1 MiB, which CUDA
//   starts on a 2 MiB page, whole 64 KiB pages (or host pages, if larger),
//   so its start stays on one (a dma-buf export needs a host page,
//   GPUDirect pinning a GPU page), of which the last `front` bytes of the
//   policy are canaries;
// * the tail starts at the user's exact last byte + 1: the allocator's
//   rounding slack (cudaMalloc hands out 512-byte granules) is redzone too, so
//   an overrun that CUDA itself would never notice is caught;
// * the zone after the slack adapts to the size, ASan style: size / ratio,
//   clamped to [tail_min, tail_max] — a few KiB by default, enough to cover an
//   overrun into what would have been the next allocation.
//
// Pitched (2-D) and 3-D allocations grow by whole rows or slices instead, so
// the user's pointer stays a multiple of the pitch from the raw start.
#ifndef GMT_LIB_GUARD_GUARD_LAYOUT_H_
#define GMT_LIB_GUARD_GUARD_LAYOUT_H_

#include <cstdint>

#include "lib/core/api.h"
#include "lib/core/options.h"

namespace gmt {

// The family an allocating API belongs to; kNone for memory that is never
// guarded (host, arrays, VMM). GuardFamily is lib/core/option_values.h's, the
// type of guard_skip.
GuardFamily FamilyOf(Api api);

struct GuardPolicy {
  bool enabled = false;
  uint64_t front = 512;
  uint64_t tail_min = 4096;
  uint64_t tail_max = 1 << 20;
  uint64_t tail_ratio = 16;
  GuardFamilies skip;  // guard_skip
  // The host's page size: a block over 1 MiB has whole pages in front, of
  // this or the GPU's 64 KiB, whichever is larger (PlanLinear).
  uint64_t host_page = 4096;

  static GuardPolicy FromOptions(const Options& options);
  bool Guards(Api api) const;
};

struct GuardLayout {
  uint64_t front = 0;      // user = raw + front
  uint64_t raw_bytes = 0;  // what to ask CUDA for
};

// What a cudaMalloc / cuMemAlloc block of `bytes` takes from the device's
// free memory (cudaMemGetInfo): a block over 1 MiB is mapped in whole 2 MiB
// pages, smaller ones share pages in 512-byte granules (measured on the
// H200, driver 580). A redzone that crosses a page boundary the program's
// own block would not have crossed costs a whole page.
uint64_t CudaMallocFootprint(uint64_t bytes);

// The bytes from a cudaMalloc / cuMemAlloc block's start that CUDA maps for
// it alone: a block over 1 MiB has whole 2 MiB pages of its own from its
// start, and CUDA exports any page of them as a dma-buf, past the block's
// last byte too (measured on the H200: one page past a 1 MiB + 4 KiB
// block); a smaller block shares its pages, so only its own bytes.
uint64_t CudaMallocMappedBytes(uint64_t bytes);

// The device memory a guarded block of `api` takes beyond what the
// program's own request would have taken (redzones, with the allocator's
// rounding of both): what the program's view of free memory gets back.
uint64_t AddedFootprint(Api api, uint64_t user_bytes, uint64_t raw_bytes);

// The tail zone after the slack for a block of `bytes`.
uint64_t TailZoneBytes(const GuardPolicy& policy, uint64_t bytes);

// A linear block of `bytes`.
GuardLayout PlanLinear(const GuardPolicy& policy, uint64_t bytes);

// Pitched: ask for `height + extra_rows` rows; `row_bytes_estimate` is the
// least pitch CUDA may choose (the width rounded up to 512, CUDA's pitch
// alignment on current GPUs). Also used for 3-D with "rows" being slices.
// 0 when rows of that size cannot be represented (never guarded then).
uint64_t PlanExtraRows(const GuardPolicy& policy, uint64_t row_bytes_estimate,
                       uint64_t rows);
// With the pitch CUDA chose: rows to leave in front (so front >= policy.front
// when there is room), given the extra rows obtained.
uint64_t FrontRows(const GuardPolicy& policy, uint64_t pitch,
                   uint64_t extra_rows);

}  // namespace gmt

#endif  // GMT_LIB_GUARD_GUARD_LAYOUT_H_
