#include "interpose/guard_shim_util.h"

#include "lib/core/log.h"

namespace gmt {

cudaError_t NoRuntimeError() {
  static const bool said = [] {
    LogError(
        "a CUDA runtime call reached gpumemtrace but no libcudart is loaded: "
        "link the CUDA runtime before gpumemtrace, or with -Wl,--no-as-needed "
        "(README, 'Asking from the program')");
    return true;
  }();
  (void)said;
  return cudaErrorInitializationError;
}

}  // namespace gmt
