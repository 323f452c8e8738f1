// Fake driver side of CUPTI: the real driver calls CUPTI's subscriber around
// its API functions; the fake does the same for a few entry points (cuInit's
// injection, cuMemAlloc_v2, cuMemFree_v2, cuGetProcAddress_v2, cuLaunchKernel)
// when the fake libcupti (fake_cupti.cc) is loaded and has registered its
// emitter. Without it, nothing happens and nothing is paid but one load.
#ifndef GMT_TESTS_FAKE_CUDA_FAKE_CUPTI_EMIT_H_
#define GMT_TESTS_FAKE_CUDA_FAKE_CUPTI_EMIT_H_

#include <cuda.h>
#include <cupti_callbacks.h>
#include <cupti_driver_cbid.h>

#include <atomic>

namespace fake_cuda {

// What fake libcupti registers: delivers one driver-API callback.
using CuptiEmitter = void (*)(CUpti_CallbackDomain domain,
                              CUpti_CallbackId cbid, const void* data);
extern std::atomic<CuptiEmitter> g_cupti_emitter;

// (check=kernel under injection alone hung on the H200): inside the
// exit callback of a kernel or graph launch, the program's launch call is
// still in progress in the driver. A tool must not enqueue GPU work or wait
// for the GPU from there. With FAKE_CUDA_STRICT_CALLBACKS=1 the double treats
// such a call as the deadlock it can be: it says so on stderr and never
// returns (a test with a time limit then fails instead of passing).
extern thread_local int t_launch_exit_callback;
void CheckCallFromLaunchCallback(const char* call);

inline bool IsLaunchCallback(CUpti_CallbackId cbid) {
  switch (cbid) {
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz:
      return true;
    default:
      return false;
  }
}

// Runs `body` (returning CUresult) between the enter and exit driver-API
// callbacks of `cbid`, as the real driver does. `symbol` is the kernel name
// for launches (CUpti_CallbackData::symbolName), else null.
template <typename Body>
CUresult WithCuptiCallbacks(CUpti_CallbackId cbid, const char* name,
                            const void* params, const char* symbol,
                            Body&& body) {
  CuptiEmitter emit = g_cupti_emitter.load(std::memory_order_acquire);
  if (emit == nullptr) return body();
  uint64_t correlation = 0;
  CUresult result = CUDA_SUCCESS;
  CUpti_CallbackData data{};
  data.functionName = name;
  data.functionParams = params;
  data.functionReturnValue = &result;
  data.symbolName = symbol;
  data.correlationData = &correlation;
  CUcontext current = nullptr;
  cuCtxGetCurrent(&current);
  data.context = current;
  data.callbackSite = CUPTI_API_ENTER;
  emit(CUPTI_CB_DOMAIN_DRIVER_API, cbid, &data);
  result = body();
  data.callbackSite = CUPTI_API_EXIT;
  const bool launch = IsLaunchCallback(cbid);
  if (launch) ++t_launch_exit_callback;
  emit(CUPTI_CB_DOMAIN_DRIVER_API, cbid, &data);
  if (launch) --t_launch_exit_callback;
  return result;
}

// cuInit's part of CUDA_INJECTION64_PATH: dlopen the named library and call
// its InitializeInjection, once per process (fake_injection.cc).
void LoadInjectionOnce();

// CUPTI's memory activity records. The driver reports every
// device allocation and release it makes (graph launches included); fake
// libcupti, once CUPTI_ACTIVITY_KIND_MEMORY2 is enabled, registers an
// emitter and turns these into CUpti_ActivityMemory4 records in the buffers
// it hands to its client at a flush.
struct FakeMemoryRecord {
  bool alloc = true;  // else a release
  uint64_t address = 0;
  uint64_t bytes = 0;
  int device = 0;
  bool async = false;  // a stream-ordered API (or a graph launch)
  bool pool = false;   // from a memory pool
  bool managed = false;
};
using ActivityEmitter = void (*)(const FakeMemoryRecord& record);
extern std::atomic<ActivityEmitter> g_activity_emitter;
inline void EmitMemoryActivity(const FakeMemoryRecord& record) {
  if (ActivityEmitter emit =
          g_activity_emitter.load(std::memory_order_acquire)) {
    emit(record);
  }
}

}  // namespace fake_cuda

#endif  // GMT_TESTS_FAKE_CUDA_FAKE_CUPTI_EMIT_H_
