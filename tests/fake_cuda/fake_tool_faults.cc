// Fake driver: failures of the tool's own CUDA calls (fake_tool_faults.h).
#include "tests/fake_cuda/fake_tool_faults.h"

#include <dlfcn.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

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

// Creates PATH.held, then waits (at most 30 s) until PATH exists. A wait
// that runs out creates PATH.expired, so a test can tell "the program went on
// while held" from "the program waited for the hold to end".
static void HoldUntilReleased(const char* path) {
  const std::string marker = std::string(path) + ".held";
  if (FILE* f = std::fopen(marker.c_str(), "w")) std::fclose(f);
  for (int i = 0; i < 30000; ++i) {
    if (access(path, F_OK) == 0) return;
    usleep(1000);
  }
  const std::string expired = std::string(path) + ".expired";
  if (FILE* f = std::fopen(expired.c_str(), "w")) std::fclose(f);
}

// HoldUntilReleased once per process for `variable`'s path.
static void HoldOnce(const char* variable, std::atomic<bool>* held) {
  const char* path = std::getenv(variable);
  if (path == nullptr || *path == '\0' || held->exchange(true)) return;
  HoldUntilReleased(path);
}

void HoldFillIfAsked() {
  static std::atomic<bool> held{false};
  HoldOnce("FAKE_CUDA_HOLD_FILL", &held);
}

// One hold of the tool's wait per process, by event or by inline check.
static std::atomic<bool> g_tool_wait_held{false};

void HoldToolWaitIfAsked(const void* caller) {
  if (!InTool(caller)) return;
  HoldOnce("FAKE_CUDA_HOLD_TOOL_WAIT", &g_tool_wait_held);
}

bool ClaimToolWaitHold(const void* caller) {
  const char* path = std::getenv("FAKE_CUDA_HOLD_TOOL_WAIT");
  if (path == nullptr || *path == '\0' || !InTool(caller)) return false;
  return !g_tool_wait_held.exchange(true);
}

void WaitForToolWaitRelease() {
  if (const char* path = std::getenv("FAKE_CUDA_HOLD_TOOL_WAIT")) {
    HoldUntilReleased(path);
  }
}

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
