// `gpumemtrace run --explain-faults` (see explain_faults.h).
#include "cli/explain_faults.h"

#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "lib/gpu_fault/gpu_dump_arming.h"

namespace gmt::cli {

std::string ExplainOptionsText(bool keep_dump) {
  return keep_dump ? "explain_faults=1:keep_gpu_dump=1" : "explain_faults=1";
}

std::string WhyFaultsCannotBeExplained() {
  const char* name = gpu_fault::UserGpuDumpVariable();
  if (name == nullptr) return "";
  return absl::StrCat("--explain-faults arms the GPU core dump itself, and ",
                      name, " is already set (to '", std::getenv(name),
                      "'): unset it, or drop --explain-faults");
}

}  // namespace gmt::cli
