// Fake driver side of CUPTI: the real driver calls CUPTI's subscriber around
// its API functions; the fake does the same for a few entry points (cuInit's
// injection, cuMemAlloc_v2, cuMemFree_v2, cuGetProcAddress_v2, cuLaunchKernel)
// when the fake libcupti (fake_cupti.cc) is loaded and has registered its
// emitter. Without it, nothing happens and nothing is paid but one load.
#ifndef GMT_TESTS_FAKE_CUDA_FAKE_CUPTI_EMIT_H_
#define GMT_TESTS_FAKE_CUDA_FAKE_CUPTI_EMIT_H_

#include <cuda.h>
#include <cupti_callbacks.h>

#include <atomic>

namespace fake_cuda {

// What fake libcupti registers: delivers one driver-API callback.
using CuptiEmitter = void (*)(CUpti_CallbackDomain domain,
                              CUpti_CallbackId cbid, const void* data);
extern std::atomic<CuptiEmitter> g_cupti_emitter;

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
  emit(CUPTI_CB_DOMAIN_DRIVER_API, cbid, &data);
  return result;
}

// cuInit's part of CUDA_INJECTION64_PATH: dlopen the named library and call
// its InitializeInjection, once per process (fake_injection.cc).
void LoadInjectionOnce();

}  // namespace fake_cuda

#endif  // GMT_TESTS_FAKE_CUDA_FAKE_CUPTI_EMIT_H_
