// CuptiPlan: whether the tool subscribes to CUPTI, and for what. A pure
// function of the options and of how the library came into the process, so
// the policy is testable without CUPTI or a GPU.
//
//   CuptiPlan plan = PlanCupti(options, /*injected=*/true,
//                              /*shims_interposed=*/false);
//   if (plan.subscribe) ...;
//
// Only one CUPTI subscriber may exist per process (before the multi-subscriber
// API), and subscribing blocks Nsight and torch.profiler: by default the tool
// subscribes only where its shims cannot see the program's calls.
#ifndef GMT_LIB_ENGINE_CUPTI_PLAN_H_
#define GMT_LIB_ENGINE_CUPTI_PLAN_H_

#include "lib/core/options.h"

namespace gmt {

struct CuptiPlan {
  // Subscribe at all.
  bool subscribe = false;
  // Driver API callbacks for allocations and frees, recorded only when the
  // call bypassed the shims.
  bool memory = false;
  // Kernel launch callbacks (names and streams for guard-zone attribution).
  bool launches = false;
  // Resource domain: context creation/destruction (final picture, blocks a
  // destroyed context freed).
  bool contexts = false;
  // Hand our driver shims to the program's runtime through its
  // cuGetProcAddress answers: only where the shims are not already bound.
  bool redirect = false;
  // Graph memory nodes: node creation, instantiation,
  // executable destruction and graph launch callbacks. With `memory`.
  bool graphs = false;
  // CUPTI memory activity records (CUPTI_ACTIVITY_KIND_MEMORY2), cross-checked
  // with the hooks (lib/registry/memory_activity.h). Option cupti_activity:
  // auto = only without the shims (injection alone), where a call the hooks
  // missed is likeliest and no profiler shares the process's activity buffers.
  bool activity = false;
  // Not subscribing leaves the tool without any view of the program's calls
  // (injection alone): the reason is worth saying at verbosity 0.
  bool blind = false;
  // Why not subscribing, or what was chosen: for a verbosity-1 note.
  const char* reason = "";
};

// `injected`: libcuda loaded this library through CUDA_INJECTION64_PATH and
// called InitializeInjection. `shims_interposed`: the process binds the
// library's exported cu* symbols (LD_PRELOAD, or linked before libcuda).
// `gpu_dump_armed`: the driver will write a GPU core dump at a GPU exception
// (lib/gpu_fault/gpu_dump_arming.h); it writes none while a CUPTI subscriber
// exists, so the tool then never subscribes (`blind` says when that leaves
// it seeing nothing: injection without the shims).
CuptiPlan PlanCupti(const Options& options, bool injected,
                    bool shims_interposed, bool gpu_dump_armed);

// The plan for this process: `gpu_dump_armed` read from its environment.
CuptiPlan PlanCuptiForProcess(const Options& options, bool injected,
                              bool shims_interposed);

}  // namespace gmt

#endif  // GMT_LIB_ENGINE_CUPTI_PLAN_H_
