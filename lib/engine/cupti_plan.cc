#include "lib/engine/cupti_plan.h"

#include "lib/gpu_fault/gpu_dump_arming.h"

namespace gmt {

CuptiPlan PlanCupti(const Options& options, bool injected,
                    bool shims_interposed, bool gpu_dump_armed) {
  CuptiPlan plan;
  if (!options.enabled) {
    plan.reason = "tracking is off (enabled=0)";
    return plan;
  }
  if (options.cupti == CuptiMode::kOff) {
    plan.reason = "cupti=off";
    return plan;
  }
  if (options.cupti == CuptiMode::kAuto) {
    if (shims_interposed) {
      plan.reason =
          "the LD_PRELOAD shims see every call (cupti=auto); CUPTI is left "
          "free for profilers";
      return plan;
    }
    if (!injected) {
      plan.reason = "not loaded through CUDA_INJECTION64_PATH (cupti=auto)";
      return plan;
    }
  }
  if (gpu_dump_armed) {
    // The dump was asked for (explain_faults, or the user's own
    // CUDA_ENABLE_COREDUMP_ON_EXCEPTION); subscribing would silently take it
    // away ("not supported with other developer tools", on the H200).
    plan.blind = !shims_interposed;
    plan.reason =
        "the driver's GPU core dump is armed, and the driver writes none "
        "while CUPTI is subscribed";
    return plan;
  }
  plan.subscribe = true;
  plan.memory = true;
  plan.contexts = true;
  plan.redirect = !shims_interposed;
  plan.graphs = true;
  plan.activity =
      options.cupti_activity == CuptiMode::kOn ||
      (options.cupti_activity == CuptiMode::kAuto && !shims_interposed);
  // Kernel names matter for guard-zone reports only.
  plan.launches = options.cupti_kernels == CuptiMode::kOn ||
                  (options.cupti_kernels == CuptiMode::kAuto && options.guard &&
                   options.check != CheckLevel::kNone);
  plan.reason = shims_interposed ? "cupti=on beside the LD_PRELOAD shims"
                                 : "injection without LD_PRELOAD";
  return plan;
}

CuptiPlan PlanCuptiForProcess(const Options& options, bool injected,
                              bool shims_interposed) {
  return PlanCupti(options, injected, shims_interposed,
                   gpu_fault::GpuDumpArmed());
}

}  // namespace gmt
