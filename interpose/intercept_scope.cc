// The intercept depth of interpose/intercept_scope.h, in a file of its own:
// the guard kernels' host side (driver_device_ops.cc, tool_driver.cc) opens
// scopes too and is also built outside the library, for its tests.
#include "interpose/intercept_scope.h"

namespace gmt {

thread_local int t_intercept_depth __attribute__((tls_model("initial-exec"))) =
    0;

}  // namespace gmt
