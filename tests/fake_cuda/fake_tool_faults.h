// Fault injection aimed at the calls gpumemtrace makes for its own GPU work
// (guard-zone kernels, the tool's stream), never at the program's: a
// reliability test sets one of these in the environment of both runs (with
// and without the tool) and expects the same program output, while the tool's
// report says that its checks could not run.
//
//   FAKE_CUDA_FAIL_LIBRARY_LOAD=1      cuLibraryLoadData called from the tool
//                                      fails with CUDA_ERROR_OUT_OF_MEMORY (a
//                                      transient error: the tool retries);
//                                      =image: CUDA_ERROR_NO_BINARY_FOR_GPU
//                                      (the image can never run here)
//   FAKE_CUDA_FAIL_LAUNCH=1            every launch of a guard kernel fails
//                                      with CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES;
//                                      =fill or =check: only that kernel
//   FAKE_CUDA_HOLD_FILL=PATH           the first launch of the fill kernel
//                                      creates PATH.held and then waits
//                                      (at most 30 s) until PATH exists: the
//                                      tool is kept inside one of its own
//                                      CUDA calls for as long as a test needs
//   FAKE_CUDA_HOLD_TOOL_WAIT=PATH      the tool's first wait for its own
//                                      check is held: its first
//                                      cuEventSynchronize (a zone-table
//                                      check), or the run of its first
//                                      inline check (which it waits for in
//                                      host memory), whichever comes first,
//                                      creates PATH.held and waits (at most
//                                      30 s) until PATH exists
//   FAKE_CUDA_FAIL_STREAM_CREATE=1     cuStreamCreate called from the tool
//   fails
//                                      with CUDA_ERROR_OUT_OF_MEMORY
//
// "Called from the tool": the caller's return address lies in a loaded module
// whose file name contains "gpumemtrace" (the tool calls these entry points
// directly through pointers it resolved, never through the program). The guard
// kernels (kernels/zone_abi.h names) are launched by nobody else.
#ifndef GMT_TESTS_FAKE_CUDA_FAKE_TOOL_FAULTS_H_
#define GMT_TESTS_FAKE_CUDA_FAKE_TOOL_FAULTS_H_

#include <cuda.h>

namespace fake_cuda {

enum class ToolCall {
  kLibraryLoad,   // cuLibraryLoadData
  kFillLaunch,    // cuLaunchKernel of the fill kernel
  kCheckLaunch,   // cuLaunchKernel of the check kernel
  kStreamCreate,  // cuStreamCreate
};

// CUDA_SUCCESS, or the error the call must return because the environment
// asks for it. `caller` is __builtin_return_address(0) of the entry point.
// Thread-safe; reads the environment once.
CUresult InjectToolFailure(ToolCall call, const void* caller);

// FAKE_CUDA_HOLD_FILL: blocks the first fill launch as described above.
void HoldFillIfAsked();
// FAKE_CUDA_HOLD_TOOL_WAIT: blocks the first event wait of the tool's.
// `caller` as for InjectToolFailure.
void HoldToolWaitIfAsked(const void* caller);
// FAKE_CUDA_HOLD_TOOL_WAIT for an inline check: true once, for the first
// such launch from the tool (the hold is then taken: no event wait holds),
// and the caller runs the check only after WaitForToolWaitRelease().
bool ClaimToolWaitHold(const void* caller);
void WaitForToolWaitRelease();

}  // namespace fake_cuda

#endif  // GMT_TESTS_FAKE_CUDA_FAKE_TOOL_FAULTS_H_
