#include "tests/kernels/test_driver.h"

#include <dlfcn.h>

namespace gmt_test {
namespace {

template <typename Fn>
bool Resolve(void* library, const char* name, Fn* out, std::string* why) {
  *out = reinterpret_cast<Fn>(dlsym(library, name));
  if (*out != nullptr) return true;
  if (why != nullptr) *why = std::string("libcuda.so.1 lacks ") + name;
  return false;
}

}  // namespace

bool TestDriver::Open(std::string* why) {
  // RTLD_GLOBAL: the library under test finds the same driver by name.
  void* library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
  if (library == nullptr) {
    *why = std::string("no CUDA driver: ") + dlerror();
    return false;
  }
  bool ok =
      Resolve(library, "cuGetErrorName", &get_error_name, why) &&
      Resolve(library, "cuInit", &init, why) &&
      Resolve(library, "cuDeviceGetCount", &device_get_count, why) &&
      Resolve(library, "cuDeviceGetName", &device_get_name, why) &&
      Resolve(library, "cuDevicePrimaryCtxRetain", &primary_ctx_retain, why) &&
      Resolve(library, "cuCtxSetCurrent", &ctx_set_current, why) &&
      Resolve(library, "cuCtxGetCurrent", &ctx_get_current, why) &&
      Resolve(library, "cuCtxSynchronize", &ctx_synchronize, why) &&
      Resolve(library, "cuMemAlloc_v2", &mem_alloc, why) &&
      Resolve(library, "cuMemFree_v2", &mem_free, why) &&
      Resolve(library, "cuMemHostAlloc", &mem_host_alloc, why) &&
      Resolve(library, "cuMemFreeHost", &mem_free_host, why) &&
      Resolve(library, "cuMemcpyHtoD_v2", &memcpy_htod, why) &&
      Resolve(library, "cuMemcpyDtoH_v2", &memcpy_dtoh, why) &&
      Resolve(library, "cuMemsetD8_v2", &memset_d8, why) &&
      Resolve(library, "cuStreamCreate", &stream_create, why) &&
      Resolve(library, "cuStreamDestroy_v2", &stream_destroy, why) &&
      Resolve(library, "cuStreamSynchronize", &stream_synchronize, why) &&
      Resolve(library, "cuLibraryLoadData", &library_load_data, why) &&
      Resolve(library, "cuLibraryGetKernel", &library_get_kernel, why) &&
      Resolve(library, "cuLaunchKernel", &launch_kernel, why);
  if (!ok) return false;
  Resolve(library, "cuMemcpyDtoD_v2", &memcpy_dtod, nullptr);
  Resolve(library, "cuStreamBeginCapture_v2", &stream_begin_capture, nullptr);
  Resolve(library, "cuStreamEndCapture", &stream_end_capture, nullptr);
  Resolve(library, "cuGraphDestroy", &graph_destroy, nullptr);
  Resolve(library, "cuEventCreate", &event_create, nullptr);
  Resolve(library, "cuEventRecord", &event_record, nullptr);
  if (!Resolve(library, "cuEventElapsedTime_v2", &event_elapsed_time,
               nullptr)) {
    Resolve(library, "cuEventElapsedTime", &event_elapsed_time, nullptr);
  }
  Resolve(library, "cuEventDestroy_v2", &event_destroy, nullptr);
  Resolve(library, "cuStreamWaitValue32_v2", &stream_wait_value32, nullptr);
  Resolve(library, "cuMemHostGetDevicePointer_v2", &mem_host_get_device_pointer,
          nullptr);
  Resolve(library, "cuMemsetD8Async", &memset_d8_async, nullptr);
  Resolve(library, "cuStreamBatchMemOp_v2", &stream_batch_mem_op, nullptr);
  Resolve(library, "cuKernelGetFunction", &kernel_get_function, nullptr);

  CUresult r = init(0);
  if (r != CUDA_SUCCESS) {
    *why = "cuInit: " + Name(r);
    return false;
  }
  int count = 0;
  r = device_get_count(&count);
  if (r != CUDA_SUCCESS || count == 0) {
    *why = r != CUDA_SUCCESS ? "cuDeviceGetCount: " + Name(r)
                             : std::string("no CUDA device");
    return false;
  }
  r = primary_ctx_retain(&context, 0);
  if (r == CUDA_SUCCESS) r = ctx_set_current(context);
  if (r != CUDA_SUCCESS) {
    *why = "primary context of device 0: " + Name(r);
    return false;
  }
  return true;
}

std::string TestDriver::Name(CUresult r) const {
  const char* name = nullptr;
  if (get_error_name != nullptr && get_error_name(r, &name) == CUDA_SUCCESS &&
      name != nullptr) {
    return name;
  }
  return "CUresult " + std::to_string(static_cast<int>(r));
}

}  // namespace gmt_test
