#include "lib/core/intercept_depth.h"

namespace gmt {

constinit thread_local int t_intercept_depth
    __attribute__((tls_model("initial-exec"))) = 0;

}  // namespace gmt
