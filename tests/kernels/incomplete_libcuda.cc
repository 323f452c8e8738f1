// A libcuda.so.1 that exports cuGetErrorName and nothing else: a driver that
// lacks functions the tool's driver table needs, for the launcher's error
// (tool_driver_test.cc, IncompleteDriver.*).
#include <cuda.h>

extern "C" __attribute__((visibility("default"))) CUresult cuGetErrorName(
    CUresult, const char** name) {
  *name = "CUDA_ERROR_FROM_AN_INCOMPLETE_DRIVER";
  return CUDA_SUCCESS;
}
