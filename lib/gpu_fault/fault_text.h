// The explanation of a GPU fault as report text: per faulting warp the
// exception, kernel+offset, source line, instruction, faulting block and
// threads, and the address with where it lies among the tracked blocks.
#ifndef GMT_LIB_GPU_FAULT_FAULT_TEXT_H_
#define GMT_LIB_GPU_FAULT_FAULT_TEXT_H_

#include <string>

#include "absl/types/span.h"
#include "lib/gpu_fault/address_place.h"
#include "lib/gpu_fault/fault_explanation.h"
#include "lib/registry/registry.h"

namespace gmt::gpu_fault {

struct FaultTextOptions {
  // Warps shown in full; the rest are counted in one line per kernel.
  int max_warps = 3;
  // Live blocks to place addresses among (empty: the address alone).
  absl::Span<const AllocationRecord> blocks;
  bool have_blocks = false;  // false: say nothing about blocks
  // Named kernel arguments and call-site names (address_place.h).
  std::vector<KernelArgument> arguments;
  std::function<std::string(StackId)> site;
};

// Lines ending in '\n', each indented by two spaces under a heading line.
std::string RenderGpuFaultText(const GpuFaultExplanation& explanation,
                               const FaultTextOptions& options);

}  // namespace gmt::gpu_fault

#endif  // GMT_LIB_GPU_FAULT_FAULT_TEXT_H_
