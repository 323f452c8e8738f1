// The CUDA functions the tool calls for its own GPU work (guard-zone fills and
// checks, quarantine releases), and a scope that makes a context current for
// that work.
//
// Every pointer is the real function in the loaded libcuda (or libcudart),
// found by exact exported name through RealSlot, never one of our shims: the
// tool's own streams, buffers and launches are never recorded, checked or
// intercepted.
//
//   const ToolDriver* d = GetToolDriver();
//   if (d == nullptr) return false;           // no driver loaded (yet)
//   ToolContextScope scope(*d, context);
//   if (scope.result() != CUDA_SUCCESS) return false;
//   d->memset_d8_async(...);
#ifndef GMT_LIB_PLATFORM_TOOL_DRIVER_H_
#define GMT_LIB_PLATFORM_TOOL_DRIVER_H_

#include <cuda.h>
#include <cudaTypedefs.h>

#include <cstdint>

#include "lib/core/intercept_depth.h"

namespace gmt {

struct ToolDriver {
  PFN_cuGetErrorName_v6000 get_error_name;
  PFN_cuCtxGetCurrent_v4000 ctx_get_current;
  PFN_cuCtxPushCurrent_v4000 ctx_push_current;
  PFN_cuCtxPopCurrent_v4000 ctx_pop_current;
  PFN_cuCtxGetDevice_v2000 ctx_get_device;
  PFN_cuCtxSynchronize_v2000 ctx_synchronize;
  PFN_cuDeviceGetAttribute_v2000 device_get_attribute;
  PFN_cuThreadExchangeStreamCaptureMode_v10010 exchange_capture_mode;
  PFN_cuStreamCreate_v2000 stream_create;
  PFN_cuStreamSynchronize_v2000 stream_synchronize;
  PFN_cuStreamIsCapturing_v10000 stream_is_capturing;
  PFN_cuStreamWaitEvent_v3020 stream_wait_event;
  PFN_cuEventCreate_v2000 event_create;
  PFN_cuEventRecord_v2000 event_record;
  PFN_cuEventQuery_v2000 event_query;
  PFN_cuEventSynchronize_v2000 event_synchronize;
  PFN_cuMemAlloc_v3020 mem_alloc;
  PFN_cuMemFree_v3020 mem_free;
  PFN_cuMemHostAlloc_v2020 mem_host_alloc;
  PFN_cuMemFreeHost_v2000 mem_free_host;
  PFN_cuMemsetD8Async_v3020 memset_d8_async;
  PFN_cuMemcpyHtoDAsync_v3020 memcpy_htod_async;
  PFN_cuMemcpyDtoHAsync_v3020 memcpy_dtoh_async;
  PFN_cuLaunchKernel_v4000 launch_kernel;
  // CUDA >= 12.0 drivers only; null on older ones (no guard kernels then).
  PFN_cuLibraryLoadData_v12000 library_load_data;
  PFN_cuLibraryGetKernel_v12000 library_get_kernel;
  // From the program's shared libcudart; null when it has none (static
  // runtime, driver-only programs): runtime blocks are then freed with
  // cuMemFree / cuMemFreeHost.
  int (*cuda_free)(void*);
  int (*cuda_free_host)(void*);
};

// The functions, resolved on first use. Null while libcuda is not loaded or
// lacks one of the functions every driver since CUDA 12.0 has (the name of the
// first missing one goes to *missing when it is not null).
const ToolDriver* GetToolDriver(const char** missing = nullptr);

// "CUDA_ERROR_INVALID_VALUE" for a result code, for the tool's messages.
const char* ToolResultName(const ToolDriver& driver, CUresult result);

// Makes `context` current on this thread for the scope (cuCtxPushCurrent /
// cuCtxPopCurrent, only when another one is current), and switches the
// thread to relaxed stream-capture mode meanwhile, so that the tool's work
// never invalidates a graph capture the program runs on another stream.
// Context 0 means the thread's current context; it is an error when there is
// none.
//
// It also marks the thread as making the tool's own calls (one intercept
// level, lib/core/intercept_depth.h), so neither the shims nor the CUPTI
// callbacks take them for the program's: without it, a guard kernel the tool
// launched outside any shim or callback (the exit-time check, under
// CUDA_INJECTION64_PATH) reached the launch callback as a program kernel,
// whose owed check then waited for the lock the exit-time check held.
class ToolContextScope {
 public:
  ToolContextScope(const ToolDriver& driver, uint64_t context);
  ~ToolContextScope();
  ToolContextScope(const ToolContextScope&) = delete;
  ToolContextScope& operator=(const ToolContextScope&) = delete;

  // CUDA_SUCCESS when `context()` is current.
  CUresult result() const { return result_; }
  CUcontext context() const { return context_; }

 private:
  InterceptLevel tool_calls_;
  const ToolDriver& driver_;
  CUresult result_ = CUDA_ERROR_INVALID_CONTEXT;
  CUcontext context_ = nullptr;
  bool pushed_ = false;
  bool mode_exchanged_ = false;
  CUstreamCaptureMode saved_mode_ = CU_STREAM_CAPTURE_MODE_RELAXED;
};

}  // namespace gmt

#endif  // GMT_LIB_PLATFORM_TOOL_DRIVER_H_
