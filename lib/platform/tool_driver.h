// The one table of CUDA driver functions the tool calls for its own GPU work:
// the library's guard-zone fills and checks and quarantine releases inside a
// traced process, and the launcher's `gpumemtrace memtest`. Also a scope that
// makes a context current for that work.
//
// Contract:
//   * Every pointer is the real function in libcuda, found by its exact
//     exported name (FindDriverSymbol, lib/platform/real_functions.h), never
//     one of our shims: the tool's own streams, buffers and launches are never
//     recorded, checked or intercepted.
//   * Two ways to get the table, one list behind both
//     (GMT_TOOL_DRIVER_FUNCTIONS):
//       GetToolDriver()   the library's: only from a libcuda the process has
//                         already loaded; it never loads the driver itself.
//                         Needs a CUDA 10.1 driver; functions newer than that
//                         are null on older drivers.
//       OpenToolDriver()  the launcher's: opens libcuda.so.1 itself and needs
//                         a CUDA 12.0 driver (every function present).
//   * A table, once complete, never changes and lives until exit.
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

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "lib/core/intercept_depth.h"

namespace gmt {

// X(field, base, exported, version): the member `field`, of type
// PFN_<base>_v<version> (cudaTypedefs.h), is libcuda's `exported`, which
// drivers export since CUDA `version` (CUDA_VERSION style: 12000 is 12.0).
// The _v2 names are the ABI those PFN types describe.
#define GMT_TOOL_DRIVER_FUNCTIONS(X)                                           \
  X(get_error_name, cuGetErrorName, cuGetErrorName, 6000)                      \
  X(init, cuInit, cuInit, 2000)                                                \
  X(driver_get_version, cuDriverGetVersion, cuDriverGetVersion, 2020)          \
  X(device_get_count, cuDeviceGetCount, cuDeviceGetCount, 2000)                \
  X(device_get, cuDeviceGet, cuDeviceGet, 2000)                                \
  X(device_get_name, cuDeviceGetName, cuDeviceGetName, 2000)                   \
  X(device_get_pci_bus_id, cuDeviceGetPCIBusId, cuDeviceGetPCIBusId, 4010)     \
  X(device_get_attribute, cuDeviceGetAttribute, cuDeviceGetAttribute, 2000)    \
  X(primary_ctx_retain, cuDevicePrimaryCtxRetain, cuDevicePrimaryCtxRetain,    \
    7000)                                                                      \
  X(primary_ctx_release, cuDevicePrimaryCtxRelease,                            \
    cuDevicePrimaryCtxRelease_v2, 11000)                                       \
  X(ctx_get_current, cuCtxGetCurrent, cuCtxGetCurrent, 4000)                   \
  X(ctx_set_current, cuCtxSetCurrent, cuCtxSetCurrent, 4000)                   \
  X(ctx_push_current, cuCtxPushCurrent, cuCtxPushCurrent_v2, 4000)             \
  X(ctx_pop_current, cuCtxPopCurrent, cuCtxPopCurrent_v2, 4000)                \
  X(ctx_get_device, cuCtxGetDevice, cuCtxGetDevice, 2000)                      \
  X(ctx_synchronize, cuCtxSynchronize, cuCtxSynchronize, 2000)                 \
  X(exchange_capture_mode, cuThreadExchangeStreamCaptureMode,                  \
    cuThreadExchangeStreamCaptureMode, 10010)                                  \
  X(stream_create, cuStreamCreate, cuStreamCreate, 2000)                       \
  X(stream_destroy, cuStreamDestroy, cuStreamDestroy_v2, 4000)                 \
  X(stream_synchronize, cuStreamSynchronize, cuStreamSynchronize, 2000)        \
  X(stream_is_capturing, cuStreamIsCapturing, cuStreamIsCapturing, 10000)      \
  X(stream_wait_event, cuStreamWaitEvent, cuStreamWaitEvent, 3020)             \
  X(event_create, cuEventCreate, cuEventCreate, 2000)                          \
  X(event_record, cuEventRecord, cuEventRecord, 2000)                          \
  X(event_query, cuEventQuery, cuEventQuery, 2000)                             \
  X(event_synchronize, cuEventSynchronize, cuEventSynchronize, 2000)           \
  X(mem_get_info, cuMemGetInfo, cuMemGetInfo_v2, 3020)                         \
  X(pointer_get_attribute, cuPointerGetAttribute, cuPointerGetAttribute, 4000) \
  X(mem_alloc, cuMemAlloc, cuMemAlloc_v2, 3020)                                \
  X(mem_free, cuMemFree, cuMemFree_v2, 3020)                                   \
  X(mem_host_alloc, cuMemHostAlloc, cuMemHostAlloc, 2020)                      \
  X(mem_free_host, cuMemFreeHost, cuMemFreeHost, 2000)                         \
  X(mem_free_async, cuMemFreeAsync, cuMemFreeAsync, 11020)                     \
  X(memset_d8_async, cuMemsetD8Async, cuMemsetD8Async, 3020)                   \
  X(memcpy_htod, cuMemcpyHtoD, cuMemcpyHtoD_v2, 3020)                          \
  X(memcpy_dtoh, cuMemcpyDtoH, cuMemcpyDtoH_v2, 3020)                          \
  X(memcpy_htod_async, cuMemcpyHtoDAsync, cuMemcpyHtoDAsync_v2, 3020)          \
  X(memcpy_dtoh_async, cuMemcpyDtoHAsync, cuMemcpyDtoHAsync_v2, 3020)          \
  X(memcpy_dtod_async, cuMemcpyDtoDAsync, cuMemcpyDtoDAsync_v2, 3020)          \
  X(launch_kernel, cuLaunchKernel, cuLaunchKernel, 4000)                       \
  X(library_load_data, cuLibraryLoadData, cuLibraryLoadData, 12000)            \
  X(library_get_kernel, cuLibraryGetKernel, cuLibraryGetKernel, 12000)         \
  X(library_unload, cuLibraryUnload, cuLibraryUnload, 12000)                   \
  X(kernel_get_function, cuKernelGetFunction, cuKernelGetFunction, 12000)      \
  X(func_load, cuFuncLoad, cuFuncLoad, 12040)                                  \
  X(mem_host_get_device_pointer, cuMemHostGetDevicePointer,                    \
    cuMemHostGetDevicePointer_v2, 3020)                                        \
  X(func_get_param_info, cuFuncGetParamInfo, cuFuncGetParamInfo, 12040)        \
  X(kernel_get_param_info, cuKernelGetParamInfo, cuKernelGetParamInfo, 12040)

// The oldest driver GetToolDriver accepts: the newest function the library's
// own work cannot do without is cuThreadExchangeStreamCaptureMode (10.1). Its
// guard kernels also need 12.0 (cuLibrary*), which it checks when it loads
// them.
inline constexpr int kToolDriverLibraryVersion = 10010;
// The oldest driver OpenToolDriver accepts: the memtest loads its kernels
// with cuLibraryLoadData.
inline constexpr int kToolDriverLauncherVersion = 12000;

struct ToolDriver {
#define GMT_TOOL_DRIVER_MEMBER(field, base, exported, version) \
  PFN_##base##_v##version field = nullptr;
  GMT_TOOL_DRIVER_FUNCTIONS(GMT_TOOL_DRIVER_MEMBER)
#undef GMT_TOOL_DRIVER_MEMBER

  // From the program's shared libcudart, GetToolDriver only; null when it has
  // none (static runtime, driver-only programs, the launcher): runtime blocks
  // are then freed with cuMemFree / cuMemFreeHost.
  int (*cuda_free)(void*) = nullptr;
  int (*cuda_free_host)(void*) = nullptr;
};

// The library's table, resolved on first use. Null while libcuda is not
// loaded or lacks one of the functions every CUDA 10.1 driver has (the name
// of the first missing one goes to *missing when it is not null).
const ToolDriver* GetToolDriver(const char** missing = nullptr);

// The launcher's table: opens libcuda.so.1 (kept open until exit) and
// resolves every function from it. Errors say what is wrong: "no CUDA driver:
// cannot open libcuda.so.1 (...)", or "the CUDA driver lacks <function> (a
// CUDA 12.0 or newer driver is needed)". The answer is the same on every
// call.
absl::StatusOr<const ToolDriver*> OpenToolDriver();

// Fills every function of `driver` with lookup(exported name), in the order
// of GMT_TOOL_DRIVER_FUNCTIONS. Returns null, or the exported name of the
// first function a driver of CUDA `version` has that `lookup` did not find
// (resolving stops there). Functions newer than `version` are left null when
// not found. Both tables are built by this; tests call it with their own
// lookup.
using DriverSymbolLookup = absl::FunctionRef<void*(const char* name)>;
const char* ResolveToolDriver(DriverSymbolLookup lookup, int version,
                              ToolDriver* driver);

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
