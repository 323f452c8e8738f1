// What every shim file shares: export macros, and the small recording helpers
// that turn "this call returned this pointer" into an engine event.
#ifndef GMT_INTERPOSE_SHIM_H_
#define GMT_INTERPOSE_SHIM_H_

#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime_api.h>

#include <cstdint>

#include "interpose/intercept_scope.h"
#include "lib/core/api.h"
#include "lib/engine/engine.h"
#include "lib/platform/real_functions.h"

// A shim is defined under a C++ name of ours and exported under the CUDA
// symbol through an asm label, so cuda.h's own macros (cuMemAlloc ->
// cuMemAlloc_v2, _ptsz variants) and declarations cannot clash with it.
#define GMT_SHIM extern "C" __attribute__((visibility("default")))
#define GMT_SYMBOL(name) __asm__(name)

namespace gmt {

// Where the call happened: the current context and its device, noted with the
// engine the first time a device is seen (name, total memory).
struct CallContext {
  int device = kHostDevice;
  uint64_t context = 0;
};
CallContext CurrentCallContext();

// Records a successful allocation made in the current context. For host
// kinds the device is kHostDevice; `device_override` >= 0 names it instead
// (cuMemCreate's location). `where`: the current context if the caller has
// asked for it already (null: asked here).
void RecordAlloc(Api api, uint64_t address, uint64_t bytes, uint64_t stream,
                 StackId stack, int device_override = -2,
                 uint64_t raw_address = 0, uint64_t raw_bytes = 0,
                 const CallContext* where = nullptr);

// Names for result codes in reports ("CUDA_ERROR_INVALID_VALUE",
// "cudaErrorInvalidValue"); only asked on error paths.
const char* DriverResultName(CUresult result);
const char* RuntimeResultName(cudaError_t result);

// A runtime call the tool answered itself: cudaGetLastError reports `error`
// next (runtime_error_state_shims.cc; also declared in guard_shim_util.h).
void NoteRuntimeError(cudaError_t error);

}  // namespace gmt

#endif  // GMT_INTERPOSE_SHIM_H_
