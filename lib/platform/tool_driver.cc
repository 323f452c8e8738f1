#include "lib/platform/tool_driver.h"

#include <atomic>
#include <mutex>

#include "lib/platform/real_functions.h"

namespace gmt {
namespace {

// One slot per function, by exact exported name (the _v2 names are the ABI
// the PFN types describe). Constant-initialized: nothing runs at load.
#define GMT_TOOL_DRIVER_FUNCTIONS(X)                                          \
  X(get_error_name, PFN_cuGetErrorName_v6000, "cuGetErrorName")               \
  X(ctx_get_current, PFN_cuCtxGetCurrent_v4000, "cuCtxGetCurrent")            \
  X(ctx_push_current, PFN_cuCtxPushCurrent_v4000, "cuCtxPushCurrent_v2")      \
  X(ctx_pop_current, PFN_cuCtxPopCurrent_v4000, "cuCtxPopCurrent_v2")         \
  X(ctx_get_device, PFN_cuCtxGetDevice_v2000, "cuCtxGetDevice")               \
  X(ctx_synchronize, PFN_cuCtxSynchronize_v2000, "cuCtxSynchronize")          \
  X(device_get_attribute, PFN_cuDeviceGetAttribute_v2000,                     \
    "cuDeviceGetAttribute")                                                   \
  X(exchange_capture_mode, PFN_cuThreadExchangeStreamCaptureMode_v10010,      \
    "cuThreadExchangeStreamCaptureMode")                                      \
  X(stream_create, PFN_cuStreamCreate_v2000, "cuStreamCreate")                \
  X(stream_synchronize, PFN_cuStreamSynchronize_v2000, "cuStreamSynchronize") \
  X(stream_is_capturing, PFN_cuStreamIsCapturing_v10000,                      \
    "cuStreamIsCapturing")                                                    \
  X(stream_wait_event, PFN_cuStreamWaitEvent_v3020, "cuStreamWaitEvent")      \
  X(event_create, PFN_cuEventCreate_v2000, "cuEventCreate")                   \
  X(event_record, PFN_cuEventRecord_v2000, "cuEventRecord")                   \
  X(event_query, PFN_cuEventQuery_v2000, "cuEventQuery")                      \
  X(event_synchronize, PFN_cuEventSynchronize_v2000, "cuEventSynchronize")    \
  X(mem_alloc, PFN_cuMemAlloc_v3020, "cuMemAlloc_v2")                         \
  X(mem_free, PFN_cuMemFree_v3020, "cuMemFree_v2")                            \
  X(mem_host_alloc, PFN_cuMemHostAlloc_v2020, "cuMemHostAlloc")               \
  X(mem_free_host, PFN_cuMemFreeHost_v2000, "cuMemFreeHost")                  \
  X(memset_d8_async, PFN_cuMemsetD8Async_v3020, "cuMemsetD8Async")            \
  X(memcpy_htod_async, PFN_cuMemcpyHtoDAsync_v3020, "cuMemcpyHtoDAsync_v2")   \
  X(memcpy_dtoh_async, PFN_cuMemcpyDtoHAsync_v3020, "cuMemcpyDtoHAsync_v2")   \
  X(launch_kernel, PFN_cuLaunchKernel_v4000, "cuLaunchKernel")

#define GMT_DECLARE_SLOT(field, type, name) \
  RealSlot<type> slot_##field(name, /*driver=*/true);
GMT_TOOL_DRIVER_FUNCTIONS(GMT_DECLARE_SLOT)
RealSlot<PFN_cuLibraryLoadData_v12000> slot_library_load_data(
    "cuLibraryLoadData", true);
RealSlot<PFN_cuLibraryGetKernel_v12000> slot_library_get_kernel(
    "cuLibraryGetKernel", true);
using CudaFreeFn = int (*)(void*);
RealSlot<CudaFreeFn> slot_cuda_free("cudaFree", /*driver=*/false);
RealSlot<CudaFreeFn> slot_cuda_free_host("cudaFreeHost", /*driver=*/false);
#undef GMT_DECLARE_SLOT

// Filled once, under g_mu; read without it once g_complete is set.
std::mutex g_mu;  // constexpr-constructed: usable at any time
ToolDriver g_driver;
std::atomic<bool> g_complete{false};

}  // namespace

const ToolDriver* GetToolDriver(const char** missing) {
  if (g_complete.load(std::memory_order_acquire)) return &g_driver;
  // Resolved again on each call until libcuda is there: the program may load
  // it after the tool's first question.
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_complete.load(std::memory_order_relaxed)) return &g_driver;
  ToolDriver d = {};
#define GMT_RESOLVE(field, type, name)         \
  d.field = slot_##field.Get();                \
  if (d.field == nullptr) {                    \
    if (missing != nullptr) *missing = (name); \
    return nullptr;                            \
  }
  GMT_TOOL_DRIVER_FUNCTIONS(GMT_RESOLVE)
#undef GMT_RESOLVE
  d.library_load_data = slot_library_load_data.Get();
  d.library_get_kernel = slot_library_get_kernel.Get();
  d.cuda_free = slot_cuda_free.Get();
  d.cuda_free_host = slot_cuda_free_host.Get();
  g_driver = d;
  g_complete.store(true, std::memory_order_release);
  return &g_driver;
}

const char* ToolResultName(const ToolDriver& driver, CUresult result) {
  const char* name = nullptr;
  if (driver.get_error_name(result, &name) == CUDA_SUCCESS && name != nullptr) {
    return name;
  }
  return "CUDA_ERROR_UNKNOWN_CODE";
}

ToolContextScope::ToolContextScope(const ToolDriver& driver, uint64_t context)
    : driver_(driver) {
  CUcontext current = nullptr;
  result_ = driver_.ctx_get_current(&current);
  if (result_ != CUDA_SUCCESS) return;
  context_ = context != 0 ? reinterpret_cast<CUcontext>(context) : current;
  if (context_ == nullptr) {
    result_ = CUDA_ERROR_INVALID_CONTEXT;
    return;
  }
  if (context_ != current) {
    result_ = driver_.ctx_push_current(context_);
    if (result_ != CUDA_SUCCESS) return;
    pushed_ = true;
  }
  CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
  if (driver_.exchange_capture_mode(&mode) == CUDA_SUCCESS) {
    saved_mode_ = mode;
    mode_exchanged_ = true;
  }
}

ToolContextScope::~ToolContextScope() {
  if (mode_exchanged_) driver_.exchange_capture_mode(&saved_mode_);
  if (pushed_) {
    CUcontext popped = nullptr;
    driver_.ctx_pop_current(&popped);
  }
}

}  // namespace gmt
