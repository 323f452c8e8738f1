#include "lib/platform/tool_driver.h"

#include <dlfcn.h>

#include <atomic>
#include <mutex>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "lib/platform/real_functions.h"

namespace gmt {
namespace {

using CudaFreeFn = int (*)(void*);

// The library's table: filled once, under g_mu; read without it once
// g_complete is set. Constant-initialized: nothing runs at load.
std::mutex g_mu;  // constexpr-constructed: usable at any time
ToolDriver g_driver;
std::atomic<bool> g_complete{false};

// "12.0" for 12000.
std::string VersionText(int version) {
  return absl::StrCat(version / 1000, ".", version % 1000 / 10);
}

absl::StatusOr<ToolDriver> OpenDriver() {
  // RTLD_GLOBAL, and never closed: the table points into it, and what runs
  // on it later (a library the launcher loads) finds the same driver by name.
  if (dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL) == nullptr) {
    const char* why = dlerror();
    return absl::FailedPreconditionError(absl::StrCat(
        "no CUDA driver: cannot open libcuda.so.1 (",
        why != nullptr ? why : "?", "); is the NVIDIA driver installed?"));
  }
  // The driver is loaded now: the same lookup as the library's finds it.
  ToolDriver driver;
  if (const char* missing = ResolveToolDriver(
          FindDriverSymbol, kToolDriverLauncherVersion, &driver)) {
    return absl::FailedPreconditionError(
        absl::StrCat("the CUDA driver lacks ", missing, " (a CUDA ",
                     VersionText(kToolDriverLauncherVersion),
                     " or newer driver is needed)"));
  }
  return driver;
}

}  // namespace

const char* ResolveToolDriver(DriverSymbolLookup lookup, int version,
                              ToolDriver* driver) {
#define GMT_RESOLVE(field, base, exported, since)                             \
  driver->field = reinterpret_cast<PFN_##base##_v##since>(lookup(#exported)); \
  if (driver->field == nullptr && (since) <= version) return #exported;
  GMT_TOOL_DRIVER_FUNCTIONS(GMT_RESOLVE)
#undef GMT_RESOLVE
  return nullptr;
}

const ToolDriver* GetToolDriver(const char** missing) {
  if (g_complete.load(std::memory_order_acquire)) return &g_driver;
  // Resolved again on each call until libcuda is there: the program may load
  // it after the tool's first question.
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_complete.load(std::memory_order_relaxed)) return &g_driver;
  ToolDriver d;
  if (const char* gap =
          ResolveToolDriver(FindDriverSymbol, kToolDriverLibraryVersion, &d)) {
    if (missing != nullptr) *missing = gap;
    return nullptr;
  }
  d.cuda_free = reinterpret_cast<CudaFreeFn>(FindRuntimeSymbol("cudaFree"));
  d.cuda_free_host =
      reinterpret_cast<CudaFreeFn>(FindRuntimeSymbol("cudaFreeHost"));
  g_driver = d;
  g_complete.store(true, std::memory_order_release);
  return &g_driver;
}

absl::StatusOr<const ToolDriver*> OpenToolDriver() {
  static const absl::StatusOr<ToolDriver>* const opened =
      new absl::StatusOr<ToolDriver>(OpenDriver());
  if (!opened->ok()) return opened->status();
  return &**opened;
}

const char* ToolResultName(const ToolDriver& driver, CUresult result) {
  const char* name = nullptr;
  if (driver.get_error_name != nullptr &&
      driver.get_error_name(result, &name) == CUDA_SUCCESS && name != nullptr) {
    return name;
  }
  return "CUDA_ERROR_UNKNOWN_CODE";
}

ToolContextScope::ToolContextScope(const ToolDriver& driver, uint64_t context)
    : driver_(driver) {
  CUcontext current = nullptr;
  result_ = driver_.ctx_get_current(&current);
  if (result_ != CUDA_SUCCESS) return;
  context_ = context != 0 ? reinterpret_cast<CUcontext>(context) : current;
  if (context_ == nullptr) {
    result_ = CUDA_ERROR_INVALID_CONTEXT;
    return;
  }
  if (context_ != current) {
    result_ = driver_.ctx_push_current(context_);
    if (result_ != CUDA_SUCCESS) return;
    pushed_ = true;
  }
  CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
  if (driver_.exchange_capture_mode(&mode) == CUDA_SUCCESS) {
    saved_mode_ = mode;
    mode_exchanged_ = true;
  }
}

ToolContextScope::~ToolContextScope() {
  if (mode_exchanged_) driver_.exchange_capture_mode(&saved_mode_);
  if (pushed_) {
    CUcontext popped = nullptr;
    driver_.ctx_pop_current(&popped);
  }
}

}  // namespace gmt
