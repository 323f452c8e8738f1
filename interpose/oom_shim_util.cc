#include "interpose/oom_shim_util.h"

#include <atomic>

#include "absl/strings/match.h"
#include "interpose/shim.h"

namespace gmt {
namespace {

RealSlot<PFN_cuMemGetInfo_v3020> real_cuMemGetInfo("cuMemGetInfo_v2", true);
RealSlot<PFN_cuDriverGetVersion_v2020> real_cuDriverGetVersion(
    "cuDriverGetVersion", true);
RealSlot<cudaError_t (*)(int*)> real_cudaRuntimeGetVersion(
    "cudaRuntimeGetVersion", false);

}  // namespace

void NoteAllocFailure(Api api, uint64_t bytes, StackId stack, int result) {
  Engine& engine = Engine::Get();
  if (!engine.options().oom_report) return;
  Engine::AllocFailure f;
  f.api = api;
  f.bytes = bytes;
  f.stack = stack;
  f.cuda_result = result;
  const bool runtime = absl::StartsWith(ApiName(api), "cuda");
  f.cuda_result_name = runtime
                           ? RuntimeResultName(static_cast<cudaError_t>(result))
                           : DriverResultName(static_cast<CUresult>(result));
  const CallContext where = CurrentCallContext();
  f.device = where.device >= 0 ? where.device : 0;
  auto get_info = real_cuMemGetInfo.Get();
  if (get_info == nullptr) {
    f.meminfo_status = "cuMemGetInfo not found in the loaded driver";
  } else if (where.context == 0) {
    f.meminfo_status = "no current CUDA context";
  } else {
    size_t free_bytes = 0, total_bytes = 0;
    const CUresult r = get_info(&free_bytes, &total_bytes);
    if (r == CUDA_SUCCESS) {
      f.device_free = free_bytes;
      f.device_total = total_bytes;
    } else {
      f.meminfo_status =
          std::string("cuMemGetInfo failed: ") + DriverResultName(r);
    }
  }
  engine.OnAllocFailed(f);
}

void NoteCudaVersionsOnce() {
  static std::atomic<bool> done{false};
  if (done.exchange(true)) return;
  int runtime = 0, driver = 0;
  if (auto get = real_cudaRuntimeGetVersion.Get()) {
    if (get(&runtime) != cudaSuccess) runtime = 0;
  }
  if (auto get = real_cuDriverGetVersion.Get()) {
    if (get(&driver) != CUDA_SUCCESS) driver = 0;
  }
  Engine::Get().OnCudaVersions(runtime, driver);
}

}  // namespace gmt
