// The CUPTI front end: a callback subscriber that feeds the engine what the
// LD_PRELOAD shims cannot see (a program whose references to libcuda were
// bound before this library arrived, as under CUDA_INJECTION64_PATH alone).
//
//   StartCupti(/*injected=*/true);   // from InitializeInjection
//
// Count once: the shims are authoritative. A callback that fires while a shim
// (or the tool itself) is on the thread's stack is ignored — the thread-local
// intercept depth is non-zero there — so CUPTI records only calls that
// bypassed the shims.
#ifndef GMT_INTERPOSE_CUPTI_CUPTI_SUBSCRIBER_H_
#define GMT_INTERPOSE_CUPTI_CUPTI_SUBSCRIBER_H_

#include <cupti_callbacks.h>

namespace gmt {

// Subscribes as PlanCupti (lib/engine/cupti_plan.h) decides, once per process;
// later calls do nothing unless the first declined and this one is `injected`.
// Says once, on stderr, when another CUPTI subscriber holds CUPTI or when
// libcupti cannot be loaded where it was needed. Thread-safe.
void StartCupti(bool injected);

// Whether the process binds this library's exported driver symbols (it was
// preloaded or linked ahead of libcuda), i.e. the shims see the calls.
bool ShimsInterposed();

// The CUpti_CallbackFunc given to cuptiSubscribe.
void CUPTIAPI CuptiCallback(void* userdata, CUpti_CallbackDomain domain,
                            CUpti_CallbackId cbid, const void* data);

}  // namespace gmt

#endif  // GMT_INTERPOSE_CUPTI_CUPTI_SUBSCRIBER_H_
