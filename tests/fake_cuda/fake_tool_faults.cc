// Fake driver: failures of the tool's own CUDA calls (fake_tool_faults.h).
#include "tests/fake_cuda/fake_tool_faults.h"

#include <dlfcn.h>

#include <cstdlib>
#include <cstring>

namespace fake_cuda {
namespace {

struct ToolFaultPlan {
  CUresult library_load = CUDA_SUCCESS;
  bool fail_fill = false;
  bool fail_check = false;
  bool fail_stream_create = false;
};

bool Set(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' && std::strcmp(value, "0") != 0;
}

ToolFaultPlan ReadToolFaultPlan() {
  ToolFaultPlan plan;
  if (Set("FAKE_CUDA_FAIL_LIBRARY_LOAD")) {
    const char* value = std::getenv("FAKE_CUDA_FAIL_LIBRARY_LOAD");
    plan.library_load = std::strcmp(value, "image") == 0
                            ? CUDA_ERROR_NO_BINARY_FOR_GPU
                            : CUDA_ERROR_OUT_OF_MEMORY;
  }
  if (Set("FAKE_CUDA_FAIL_LAUNCH")) {
    const char* value = std::getenv("FAKE_CUDA_FAIL_LAUNCH");
    plan.fail_fill = std::strcmp(value, "check") != 0;
    plan.fail_check = std::strcmp(value, "fill") != 0;
  }
  plan.fail_stream_create = Set("FAKE_CUDA_FAIL_STREAM_CREATE");
  return plan;
}

// Whether `address` is code of a module whose path names the tool.
bool InTool(const void* address) {
  Dl_info info;
  if (address == nullptr || dladdr(address, &info) == 0 ||
      info.dli_fname == nullptr) {
    return false;
  }
  return std::strstr(info.dli_fname, "gpumemtrace") != nullptr;
}

}  // namespace

CUresult InjectToolFailure(ToolCall call, const void* caller) {
  static const ToolFaultPlan plan = ReadToolFaultPlan();
  switch (call) {
    case ToolCall::kLibraryLoad:
      if (plan.library_load != CUDA_SUCCESS && InTool(caller)) {
        return plan.library_load;
      }
      return CUDA_SUCCESS;
    case ToolCall::kFillLaunch:
      return plan.fail_fill ? CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES : CUDA_SUCCESS;
    case ToolCall::kCheckLaunch:
      return plan.fail_check ? CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES
                             : CUDA_SUCCESS;
    case ToolCall::kStreamCreate:
      if (plan.fail_stream_create && InTool(caller)) {
        return CUDA_ERROR_OUT_OF_MEMORY;
      }
      return CUDA_SUCCESS;
  }
  return CUDA_SUCCESS;
}

}  // namespace fake_cuda
