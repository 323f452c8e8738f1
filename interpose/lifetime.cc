// Load and exit of the library itself.
#include "interpose/intercept_scope.h"
#include "lib/core/options.h"
#include "lib/engine/engine.h"
#include "lib/platform/driver_device_ops.h"
#include "lib/platform/driver_param_layouts.h"
#include "lib/torch/allocator_conf.h"

namespace gmt {

namespace {

// At load: learn our own text range so captured stacks drop the tool's frames,
// and install the GPU side of guard zones (no CUDA call: it resolves the driver
// and loads its kernels on first use) and of kernel parameter layouts (asked
// at a kernel's first launch with check=kernel), and arm the driver's GPU
// core dump where explain_faults asks (the driver reads it at cuInit), and
// set PyTorch's allocator backend where torch asks (PyTorch reads it at its
// first allocation). Nothing else: a program that never touches CUDA pays
// nothing more.
__attribute__((constructor)) void OnLoad() {
  Engine::HideToolModule(reinterpret_cast<const void*>(&OnLoad));
  InstallDriverDeviceOps();
  InstallDriverParamLayouts();
  Engine::ArmGpuDumpAtLoad();  // explain_faults: before the driver's cuInit
  const Options& options = GlobalOptions();
  if (options.enabled && options.torch) ApplyTorchModeAtLoad();
}

// At exit, as late as the loader allows (after the program's static
// destructors, which may free CUDA memory). Only if some CUDA call created
// the engine. The report needs no CUDA call, so a driver already torn down
// does not matter.
__attribute__((destructor)) void OnUnload() {
  ++t_intercept_depth;  // CUDA calls made from here on are not the program's
  if (Engine* engine = Engine::IfCreated()) engine->FinalReport();
  Engine::DisarmGpuDumpAtExit();
}

}  // namespace
}  // namespace gmt
