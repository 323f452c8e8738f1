#include "lib/platform/driver_param_layouts.h"

#include <cuda.h>
#include <cuda_runtime_api.h>

#include "lib/launch/launch_args.h"
#include "lib/launch/param_layout.h"
#include "lib/platform/real_functions.h"
#include "lib/platform/tool_driver.h"

namespace gmt {
namespace {

static_assert(kLaunchParamEnd == CU_LAUNCH_PARAM_END_AS_INT);
static_assert(kLaunchParamBufferPointer ==
              CU_LAUNCH_PARAM_BUFFER_POINTER_AS_INT);
static_assert(kLaunchParamBufferSize == CU_LAUNCH_PARAM_BUFFER_SIZE_AS_INT);

// More parameters than CUDA's parameter buffer (32 KiB) could hold: not a
// layout.
constexpr size_t kMaxParams = 32768;

template <typename Handle, typename GetInfo>
ParamLayoutSource::Answer Enumerate(GetInfo get, Handle handle,
                                    ParamLayout* layout) {
  for (size_t i = 0; i < kMaxParams; ++i) {
    size_t offset = 0;
    size_t size = 0;
    const CUresult r = get(handle, i, &offset, &size);
    if (r == CUDA_ERROR_INVALID_VALUE) {
      // Past the last parameter (documented: an index out of range).
      return ParamLayoutSource::Answer::kKnown;
    }
    if (r != CUDA_SUCCESS) return ParamLayoutSource::Answer::kUnknown;
    layout->params.push_back(
        ParamSlot{static_cast<uint32_t>(offset), static_cast<uint32_t>(size)});
  }
  return ParamLayoutSource::Answer::kUnknown;
}

// A driver handle: a CUfunction, or a CUkernel passed as one (CUDA 12 takes
// both at cuLaunchKernel). Index 0 tells which: the call that knows the
// handle answers it (or says it has no parameter).
ParamLayoutSource::Answer QueryDriverHandle(const ToolDriver& d,
                                            const void* handle,
                                            ParamLayout* layout) {
  auto* f = static_cast<CUfunction>(const_cast<void*>(handle));
  auto* k = static_cast<CUkernel>(const_cast<void*>(handle));
  size_t offset = 0;
  size_t size = 0;
  CUresult by_function = CUDA_ERROR_NOT_SUPPORTED;
  if (d.func_get_param_info != nullptr) {
    by_function = d.func_get_param_info(f, 0, &offset, &size);
    if (by_function == CUDA_SUCCESS) {
      return Enumerate(d.func_get_param_info, f, layout);
    }
  }
  CUresult by_kernel = CUDA_ERROR_NOT_SUPPORTED;
  if (d.kernel_get_param_info != nullptr) {
    by_kernel = d.kernel_get_param_info(k, 0, &offset, &size);
    if (by_kernel == CUDA_SUCCESS) {
      return Enumerate(d.kernel_get_param_info, k, layout);
    }
  }
  if (by_function == CUDA_ERROR_INVALID_VALUE ||
      by_kernel == CUDA_ERROR_INVALID_VALUE) {
    return ParamLayoutSource::Answer::kKnown;  // no parameters
  }
  return ParamLayoutSource::Answer::kUnknown;
}

class DriverParamLayouts : public ParamLayoutSource {
 public:
  Answer Query(KernelHandleKind kind, const void* function,
               ParamLayout* layout) override {
    const ToolDriver* d = GetToolDriver();
    if (d == nullptr) return Answer::kNotNow;  // no driver loaded yet
    if (d->func_get_param_info == nullptr &&
        d->kernel_get_param_info == nullptr) {
      return Answer::kUnknown;  // a driver older than CUDA 12.4
    }
    if (kind == KernelHandleKind::kDriver) {
      return QueryDriverHandle(*d, function, layout);
    }
    return QueryRuntimeHandle(*d, function, layout);
  }

 private:
  // The runtime's `func`: a host stub (cudaGetFuncBySymbol gives its
  // CUfunction) or a cudaKernel_t, which is a CUkernel.
  Answer QueryRuntimeHandle(const ToolDriver& d, const void* func,
                            ParamLayout* layout) {
    auto peek = peek_last_error_.Get();
    auto get_last = get_last_error_.Get();
    auto by_symbol = get_func_by_symbol_.Get();
    if (peek == nullptr || get_last == nullptr || by_symbol == nullptr) {
      return Answer::kUnknown;  // no shared runtime: a handle we cannot map
    }
    // A failed runtime call becomes the program's last error: never replace
    // one the program has not read yet (ask at a later launch), and clear
    // the one this query leaves.
    if (peek() != cudaSuccess) return Answer::kNotNow;
    cudaFunction_t function = nullptr;
    if (by_symbol(&function, func) == cudaSuccess && function != nullptr) {
      return QueryDriverHandle(d, function, layout);
    }
    get_last();
    return QueryDriverHandle(d, func, layout);
  }

  RealSlot<cudaError_t (*)()> peek_last_error_{"cudaPeekAtLastError", false};
  RealSlot<cudaError_t (*)()> get_last_error_{"cudaGetLastError", false};
  RealSlot<cudaError_t (*)(cudaFunction_t*, const void*)> get_func_by_symbol_{
      "cudaGetFuncBySymbol", false};
};

}  // namespace

void InstallDriverParamLayouts() {
  static DriverParamLayouts* const source = new DriverParamLayouts();
  SetParamLayoutSource(source);
}

}  // namespace gmt
