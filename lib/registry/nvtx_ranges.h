// NVTX ranges: which range each thread is in, so that an allocation can be
// attributed to the phase of the program that made it ("train/forward").
//
// A range is named by its path: the names of the ranges open on the thread,
// outermost first, joined by '/'. Paths are interned once; an allocation
// keeps only the 32-bit id of the innermost path (0: no range open). The
// front end (interpose/nvtx/nvtx_injection.cc, called by the program's NVTX
// through its injection interface) calls Push/Pop; the engine reads Current().
//
// Thread safety: every function is thread-safe. Push/Pop/Current touch only
// the calling thread's state except when a path is seen for the first time.
#ifndef GMT_LIB_REGISTRY_NVTX_RANGES_H_
#define GMT_LIB_REGISTRY_NVTX_RANGES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace gmt {

inline constexpr uint32_t kNoNvtxRange = 0;

// Opens a range named `name` (may be empty: shown as "(unnamed)") on the
// calling thread. Returns the new depth, as nvtxRangePush does.
int NvtxPush(absl::string_view name);
// Closes the calling thread's innermost range. Returns the depth before the
// pop, or -1 when no range was open (nvtxRangePop's contract).
int NvtxPop();
// The id of the calling thread's innermost range path, or kNoNvtxRange.
uint32_t NvtxCurrentRange();
// "outer/inner" for an id from NvtxCurrentRange(); "" for kNoNvtxRange or an
// unknown id.
std::string NvtxRangeName(uint32_t id);
// Whether any range was ever pushed (reports add their NVTX section only
// then).
bool NvtxSeen();

// Allocation counters per range path, kept by the engine on every
// allocation made inside a range (cheap: one relaxed atomic add each).
void NvtxCountAlloc(uint32_t id, uint64_t bytes);
struct NvtxRangeTotals {
  uint32_t id = kNoNvtxRange;
  std::string name;
  uint64_t allocations = 0;
  uint64_t bytes = 0;
};
// Every range path seen, with what was allocated inside it, in id order.
std::vector<NvtxRangeTotals> NvtxTotals();

}  // namespace gmt

#endif  // GMT_LIB_REGISTRY_NVTX_RANGES_H_
