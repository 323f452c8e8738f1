// The CUDA driver as the guard-zone tests use it themselves: whatever
// libcuda.so.1 the process finds (the test double under LD_LIBRARY_PATH, or
// the real driver on a GPU machine), opened with dlopen, so the same test
// code runs against both and the GPU test links no CUDA library.
#ifndef GMT_TESTS_KERNELS_TEST_DRIVER_H_
#define GMT_TESTS_KERNELS_TEST_DRIVER_H_

#include <cuda.h>
#include <cudaTypedefs.h>

#include <cstdint>
#include <string>

namespace gmt_test {

struct TestDriver {
  // Opens libcuda.so.1, initializes it and makes the primary context of
  // device 0 current. False with the reason in *why when there is no driver
  // or no device (the GPU test then skips).
  bool Open(std::string* why);

  // "CUDA_ERROR_..." for a result.
  std::string Name(CUresult r) const;

  CUcontext context = nullptr;  // primary context of device 0

  PFN_cuGetErrorName_v6000 get_error_name = nullptr;
  PFN_cuInit_v2000 init = nullptr;
  PFN_cuDeviceGetCount_v2000 device_get_count = nullptr;
  PFN_cuDeviceGetName_v2000 device_get_name = nullptr;
  PFN_cuDevicePrimaryCtxRetain_v7000 primary_ctx_retain = nullptr;
  PFN_cuCtxSetCurrent_v4000 ctx_set_current = nullptr;
  PFN_cuCtxGetCurrent_v4000 ctx_get_current = nullptr;
  PFN_cuCtxSynchronize_v2000 ctx_synchronize = nullptr;
  PFN_cuMemAlloc_v3020 mem_alloc = nullptr;
  PFN_cuMemFree_v3020 mem_free = nullptr;
  PFN_cuMemHostAlloc_v2020 mem_host_alloc = nullptr;
  PFN_cuMemFreeHost_v2000 mem_free_host = nullptr;
  PFN_cuMemcpyHtoD_v3020 memcpy_htod = nullptr;
  PFN_cuMemcpyDtoH_v3020 memcpy_dtoh = nullptr;
  PFN_cuMemsetD8_v3020 memset_d8 = nullptr;
  PFN_cuStreamCreate_v2000 stream_create = nullptr;
  PFN_cuStreamDestroy_v4000 stream_destroy = nullptr;
  PFN_cuStreamSynchronize_v2000 stream_synchronize = nullptr;
  PFN_cuLibraryLoadData_v12000 library_load_data = nullptr;
  PFN_cuLibraryGetKernel_v12000 library_get_kernel = nullptr;
  PFN_cuLaunchKernel_v4000 launch_kernel = nullptr;
  // Only in the real driver (null in the test double).
  PFN_cuMemcpyDtoD_v3020 memcpy_dtod = nullptr;
  PFN_cuStreamBeginCapture_v10010 stream_begin_capture = nullptr;
  PFN_cuStreamEndCapture_v10000 stream_end_capture = nullptr;
  PFN_cuGraphDestroy_v10000 graph_destroy = nullptr;
  // For timing GPU work: events, and a stream held back until the host
  // writes a word (cuStreamWaitValue32), so work queues up behind it.
  PFN_cuEventCreate_v2000 event_create = nullptr;
  PFN_cuEventRecord_v2000 event_record = nullptr;
  PFN_cuEventElapsedTime_v2000 event_elapsed_time = nullptr;
  PFN_cuEventDestroy_v4000 event_destroy = nullptr;
  PFN_cuStreamWaitValue32_v11070 stream_wait_value32 = nullptr;
  PFN_cuMemHostGetDevicePointer_v3020 mem_host_get_device_pointer = nullptr;
  // Other ways to write a redzone's pattern, timed against the fill kernel.
  PFN_cuMemsetD8Async_v3020 memset_d8_async = nullptr;
  PFN_cuStreamBatchMemOp_v11070 stream_batch_mem_op = nullptr;
  // A CUkernel's function in the current context, to time launching that.
  PFN_cuKernelGetFunction_v12000 kernel_get_function = nullptr;
};

}  // namespace gmt_test

#endif  // GMT_TESTS_KERNELS_TEST_DRIVER_H_
