// What the allocation shims tell the engine besides successes: a
// failure for lack of memory (the OOM diagnosis), and the program's CUDA
// versions (for the health report's driver check).
#ifndef GMT_INTERPOSE_OOM_SHIM_UTIL_H_
#define GMT_INTERPOSE_OOM_SHIM_UTIL_H_

#include <cstdint>

#include "lib/engine/engine.h"

namespace gmt {

// `api` asking for `bytes` failed with `result` (an out-of-memory code) after
// the tool's own retries. Reads free/total with the real cuMemGetInfo and
// hands everything to Engine::OnAllocFailed. Never changes `result`.
void NoteAllocFailure(Api api, uint64_t bytes, StackId stack, int result);

// Once per process: the program's cudaRuntimeGetVersion and
// cuDriverGetVersion, through the real functions, to the engine.
void NoteCudaVersionsOnce();

}  // namespace gmt

#endif  // GMT_INTERPOSE_OOM_SHIM_UTIL_H_
