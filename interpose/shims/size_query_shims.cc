// Sizes the program can query that the tool's own memory would change,
// answered as without the tool (docs/transparency.md, class "sizes"):
//
//   cudaMemGetInfo, cuMemGetInfo   free memory, with the device memory the
//                                  tool holds that the program never asked
//                                  for added back (the redzones of live
//                                  blocks, the quarantine; never more than
//                                  the total). A request that fits that view
//                                  fits the card: when redzones do not fit,
//                                  the tool gives the quarantine back and
//                                  allocates the block unguarded.
//
// Nested calls (cudart's own) and untracked processes are forwarded as is.
#include <algorithm>

#include "interpose/alloc_shims.h"
#include "interpose/guard_shim_util.h"
#include "interpose/resolve/driver_hooks.h"
#include "interpose/resolve/runtime_hooks.h"

using gmt::InterceptScope;

namespace {

template <typename Size>
void AddHiddenBytes(Size* free_bytes, const Size* total_bytes) {
  if (free_bytes == nullptr || total_bytes == nullptr) return;
  const uint64_t hidden =
      gmt::Engine::Get().HiddenDeviceBytes(gmt::CurrentCallContext().device);
  const uint64_t free_now = static_cast<uint64_t>(*free_bytes);
  *free_bytes = static_cast<Size>(
      std::min<uint64_t>(free_now + hidden, static_cast<uint64_t>(*total_bytes)));
}

}  // namespace

cudaError_t Shim_cudaMemGetInfo(size_t* free_bytes, size_t* total_bytes) {
  auto real = gmt::g_real_cudaMemGetInfo.Get();
  if (real == nullptr) return gmt::NoRuntimeError();
  InterceptScope scope;
  const cudaError_t result = real(free_bytes, total_bytes);
  if (result == cudaSuccess && scope.Recording()) {
    AddHiddenBytes(free_bytes, total_bytes);
  }
  return result;
}

CUresult Shim_cuMemGetInfo_v2(size_t* free_bytes, size_t* total_bytes) {
  auto real = gmt::g_real_cuMemGetInfo_v2.Get();
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  InterceptScope scope;
  const CUresult result = real(free_bytes, total_bytes);
  if (result == CUDA_SUCCESS && scope.Recording()) {
    AddHiddenBytes(free_bytes, total_bytes);
  }
  return result;
}
