// Fake driver: cuGetProcAddress and cuGetProcAddress_v2, resolving a BASE name
// ("cuMemAlloc") the way the real driver does:
//   * the variant chosen is the newest one whose version is <= cudaVersion
//     ("cuMemAlloc" at 3020+ -> cuMemAlloc_v2; "cuGetProcAddress" at 12000+ ->
//     cuGetProcAddress_v2; "cuCtxGetDevice" at 13000 -> cuCtxGetDevice_v2);
//   * with CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM the _ptsz/_ptds
//     variant is chosen where one exists;
//   * unknown names (including versioned ones like "cuMemAlloc_v2") give
//     CUDA_ERROR_NOT_FOUND and CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND; a known
//     name whose oldest variant is newer than cudaVersion gives
//     CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT.
// The pointers returned are the library's own definitions: libcuda is linked
// with -Bsymbolic, so an LD_PRELOADed interposer does not replace them, just
// as it cannot replace the real driver's internal function pointers.
#include <cupti_driver_cbid.h>

#include <cstring>

#include "tests/fake_cuda/fake_cupti_emit.h"
#include "tests/fake_cuda/fake_driver.h"

// Every variant the table hands out: {base name, exported symbol, version,
// per-thread-default-stream variant}.
#define FAKE_CUDA_PROC_TABLE(X)                                                                                  \
  X(cuInit, cuInit, 2000, false)                                                                                 \
  X(cuDriverGetVersion, cuDriverGetVersion, 2020, false)                                                         \
  X(cuDeviceGet, cuDeviceGet, 2000, false)                                                                       \
  X(cuDeviceGetCount, cuDeviceGetCount, 2000, false)                                                             \
  X(cuDeviceGetName, cuDeviceGetName, 2000, false)                                                               \
  X(cuDeviceGetPCIBusId, cuDeviceGetPCIBusId, 4010, false)                                                       \
  X(cuDeviceTotalMem, cuDeviceTotalMem_v2, 3020, false)                                                          \
  X(cuCtxGetCurrent, cuCtxGetCurrent, 4000, false)                                                               \
  X(cuCtxSetCurrent, cuCtxSetCurrent, 4000, false)                                                               \
  X(cuCtxGetDevice, cuCtxGetDevice, 2000, false)                                                                 \
  X(cuCtxGetDevice, cuCtxGetDevice_v2, 13000, false)                                                             \
  X(cuCtxSynchronize, cuCtxSynchronize, 2000, false)                                                             \
  X(cuCtxSynchronize, cuCtxSynchronize_v2, 13000, false)                                                         \
  X(cuStreamSynchronize, cuStreamSynchronize, 2000, false)                                                       \
  X(cuDevicePrimaryCtxRetain, cuDevicePrimaryCtxRetain, 7000, false)                                             \
  X(cuDevicePrimaryCtxRelease, cuDevicePrimaryCtxRelease_v2, 11000, false)                                       \
  X(cuDevicePrimaryCtxGetState, cuDevicePrimaryCtxGetState, 7000, false)                                         \
  X(cuDevicePrimaryCtxReset, cuDevicePrimaryCtxReset_v2, 11000, false)                                           \
  X(cuCtxCreate, cuCtxCreate_v2, 3020, false)                                                                    \
  X(cuCtxCreate, cuCtxCreate_v4, 12050, false)                                                                   \
  X(cuCtxDestroy, cuCtxDestroy_v2, 4000, false)                                                                  \
  X(cuGetErrorName, cuGetErrorName, 6000, false)                                                                 \
  X(cuGetErrorString, cuGetErrorString, 6000, false)                                                             \
  X(cuMemAlloc, cuMemAlloc_v2, 3020, false)                                                                      \
  X(cuMemAllocPitch, cuMemAllocPitch_v2, 3020, false)                                                            \
  X(cuMemAllocManaged, cuMemAllocManaged, 6000, false)                                                           \
  X(cuStreamAttachMemAsync, cuStreamAttachMemAsync, 6000, false)                                                 \
  X(cuStreamAttachMemAsync, cuStreamAttachMemAsync_ptsz, 7000, true)                                             \
  X(cuMemFree, cuMemFree_v2, 3020, false)                                                                        \
  X(cuMemAllocAsync, cuMemAllocAsync, 11020, false)                                                              \
  X(cuMemAllocAsync, cuMemAllocAsync_ptsz, 11020, true)                                                          \
  X(cuMemAllocFromPoolAsync, cuMemAllocFromPoolAsync, 11020, false)                                              \
  X(cuMemAllocFromPoolAsync, cuMemAllocFromPoolAsync_ptsz, 11020, true)                                          \
  X(cuMemFreeAsync, cuMemFreeAsync, 11020, false)                                                                \
  X(cuMemFreeAsync, cuMemFreeAsync_ptsz, 11020, true)                                                            \
  X(cuDeviceGetDefaultMemPool, cuDeviceGetDefaultMemPool, 11020, false)                                          \
  X(cuMemPoolGetAttribute, cuMemPoolGetAttribute, 11020, false)                                                  \
  X(cuMemPoolTrimTo, cuMemPoolTrimTo, 11020, false)                                                              \
  X(cuMemPoolSetAttribute, cuMemPoolSetAttribute, 11020, false)                                                  \
  X(cuMemPoolImportFromShareableHandle, cuMemPoolImportFromShareableHandle,                                      \
    11020, false)                                                                                                \
  X(cuMemPoolImportPointer, cuMemPoolImportPointer, 11020, false)                                                \
  X(cuMemHostAlloc, cuMemHostAlloc, 2020, false)                                                                 \
  X(cuMemAllocHost, cuMemAllocHost_v2, 3020, false)                                                              \
  X(cuMemFreeHost, cuMemFreeHost, 2000, false)                                                                   \
  X(cuMemHostRegister, cuMemHostRegister_v2, 6050, false)                                                        \
  X(cuMemHostUnregister, cuMemHostUnregister, 4000, false)                                                       \
  X(cuMemCreate, cuMemCreate, 10020, false)                                                                      \
  X(cuMemRelease, cuMemRelease, 10020, false)                                                                    \
  X(cuMemMap, cuMemMap, 10020, false)                                                                            \
  X(cuMemUnmap, cuMemUnmap, 10020, false)                                                                        \
  X(cuMemAddressReserve, cuMemAddressReserve, 10020, false)                                                      \
  X(cuMemAddressFree, cuMemAddressFree, 10020, false)                                                            \
  X(cuMemSetAccess, cuMemSetAccess, 10020, false)                                                                \
  X(cuMemGetAllocationGranularity, cuMemGetAllocationGranularity, 10020,                                         \
    false)                                                                                                       \
  X(cuMemGetInfo, cuMemGetInfo_v2, 3020, false)                                                                  \
  X(cuMemGetAddressRange, cuMemGetAddressRange_v2, 3020, false)                                                  \
  X(cuMemcpy, cuMemcpy, 4000, false)                                                                             \
  X(cuMemsetD8, cuMemsetD8_v2, 3020, false)                                                                      \
  X(cuArrayCreate, cuArrayCreate_v2, 3020, false)                                                                \
  X(cuArrayDestroy, cuArrayDestroy, 2000, false)                                                                 \
  X(cuCtxPushCurrent, cuCtxPushCurrent_v2, 4000, false)                                                          \
  X(cuCtxPopCurrent, cuCtxPopCurrent_v2, 4000, false)                                                            \
  X(cuDeviceGetAttribute, cuDeviceGetAttribute, 2000, false)                                                     \
  X(cuStreamCreate, cuStreamCreate, 2000, false)                                                                 \
  X(cuStreamDestroy, cuStreamDestroy_v2, 4000, false)                                                            \
  X(cuStreamIsCapturing, cuStreamIsCapturing, 10000, false)                                                      \
  X(cuStreamWaitEvent, cuStreamWaitEvent, 3020, false)                                                           \
  X(cuThreadExchangeStreamCaptureMode, cuThreadExchangeStreamCaptureMode,                                        \
    10010, false)                                                                                                \
  X(cuEventCreate, cuEventCreate, 2000, false)                                                                   \
  X(cuEventDestroy, cuEventDestroy_v2, 4000, false)                                                              \
  X(cuEventRecord, cuEventRecord, 2000, false)                                                                   \
  X(cuEventQuery, cuEventQuery, 2000, false)                                                                     \
  X(cuEventSynchronize, cuEventSynchronize, 2000, false)                                                         \
  X(cuMemcpyHtoD, cuMemcpyHtoD_v2, 3020, false)                                                                  \
  X(cuMemcpyDtoH, cuMemcpyDtoH_v2, 3020, false)                                                                  \
  X(cuMemcpyHtoDAsync, cuMemcpyHtoDAsync_v2, 3020, false)                                                        \
  X(cuMemcpyDtoHAsync, cuMemcpyDtoHAsync_v2, 3020, false)                                                        \
  X(cuMemsetD8Async, cuMemsetD8Async, 3020, false)                                                               \
  X(cuMemsetD32Async, cuMemsetD32Async, 3020, false)                                                             \
  X(cuLibraryLoadData, cuLibraryLoadData, 12000, false)                                                          \
  X(cuLibraryUnload, cuLibraryUnload, 12000, false)                                                              \
  X(cuLibraryGetKernel, cuLibraryGetKernel, 12000, false)                                                        \
  X(cuKernelGetFunction, cuKernelGetFunction, 12000, false)                                                      \
  X(cuFuncLoad, cuFuncLoad, 12040, false)                                                                        \
  X(cuLaunchKernel, cuLaunchKernel, 4000, false)                                                                 \
  /* ---- guard-zone shims' entry points (fake_driver_guard_copies.cc, */ /* fake_driver_launch_sync.cc,         \
                                                                             fake_driver_pointer_ipc.cc) ---- */ \
  X(cuMemcpy, cuMemcpy_ptds, 7000, true)                                                                         \
  X(cuMemcpyAsync, cuMemcpyAsync, 4000, false)                                                                   \
  X(cuMemcpyAsync, cuMemcpyAsync_ptsz, 7000, true)                                                               \
  X(cuMemcpyPeerAsync, cuMemcpyPeerAsync, 4000, false)                                                           \
  X(cuMemcpyPeerAsync, cuMemcpyPeerAsync_ptsz, 7000, true)                                                       \
  X(cuMemcpyPeer, cuMemcpyPeer, 4000, false)                                                                     \
  X(cuMemcpyPeer, cuMemcpyPeer_ptds, 7000, true)                                                                 \
  X(cuMemcpyHtoD, cuMemcpyHtoD_v2_ptds, 7000, true)                                                              \
  X(cuMemcpyDtoH, cuMemcpyDtoH_v2_ptds, 7000, true)                                                              \
  X(cuMemcpyDtoD, cuMemcpyDtoD_v2, 3020, false)                                                                  \
  X(cuMemcpyDtoD, cuMemcpyDtoD_v2_ptds, 7000, true)                                                              \
  X(cuMemcpyHtoDAsync, cuMemcpyHtoDAsync_v2_ptsz, 7000, true)                                                    \
  X(cuMemcpyDtoHAsync, cuMemcpyDtoHAsync_v2_ptsz, 7000, true)                                                    \
  X(cuMemcpyDtoDAsync, cuMemcpyDtoDAsync_v2, 3020, false)                                                        \
  X(cuMemcpyDtoDAsync, cuMemcpyDtoDAsync_v2_ptsz, 7000, true)                                                    \
  X(cuMemcpy2D, cuMemcpy2D_v2, 3020, false)                                                                      \
  X(cuMemcpy2D, cuMemcpy2D_v2_ptds, 7000, true)                                                                  \
  X(cuMemcpy2DUnaligned, cuMemcpy2DUnaligned_v2, 3020, false)                                                    \
  X(cuMemcpy2DUnaligned, cuMemcpy2DUnaligned_v2_ptds, 7000, true)                                                \
  X(cuMemcpy3D, cuMemcpy3D_v2, 3020, false)                                                                      \
  X(cuMemcpy3D, cuMemcpy3D_v2_ptds, 7000, true)                                                                  \
  X(cuMemcpy2DAsync, cuMemcpy2DAsync_v2, 3020, false)                                                            \
  X(cuMemcpy2DAsync, cuMemcpy2DAsync_v2_ptsz, 7000, true)                                                        \
  X(cuMemcpy3DAsync, cuMemcpy3DAsync_v2, 3020, false)                                                            \
  X(cuMemcpy3DAsync, cuMemcpy3DAsync_v2_ptsz, 7000, true)                                                        \
  X(cuMemsetD8, cuMemsetD8_v2_ptds, 7000, true)                                                                  \
  X(cuMemsetD16, cuMemsetD16_v2, 3020, false)                                                                    \
  X(cuMemsetD16, cuMemsetD16_v2_ptds, 7000, true)                                                                \
  X(cuMemsetD32, cuMemsetD32_v2, 3020, false)                                                                    \
  X(cuMemsetD32, cuMemsetD32_v2_ptds, 7000, true)                                                                \
  X(cuMemsetD2D8, cuMemsetD2D8_v2, 3020, false)                                                                  \
  X(cuMemsetD2D8, cuMemsetD2D8_v2_ptds, 7000, true)                                                              \
  X(cuMemsetD2D16, cuMemsetD2D16_v2, 3020, false)                                                                \
  X(cuMemsetD2D16, cuMemsetD2D16_v2_ptds, 7000, true)                                                            \
  X(cuMemsetD2D32, cuMemsetD2D32_v2, 3020, false)                                                                \
  X(cuMemsetD2D32, cuMemsetD2D32_v2_ptds, 7000, true)                                                            \
  X(cuMemsetD8Async, cuMemsetD8Async_ptsz, 7000, true)                                                           \
  X(cuMemsetD16Async, cuMemsetD16Async, 3020, false)                                                             \
  X(cuMemsetD16Async, cuMemsetD16Async_ptsz, 7000, true)                                                         \
  X(cuMemsetD32Async, cuMemsetD32Async_ptsz, 7000, true)                                                         \
  X(cuMemsetD2D8Async, cuMemsetD2D8Async, 3020, false)                                                           \
  X(cuMemsetD2D8Async, cuMemsetD2D8Async_ptsz, 7000, true)                                                       \
  X(cuMemsetD2D16Async, cuMemsetD2D16Async, 3020, false)                                                         \
  X(cuMemsetD2D16Async, cuMemsetD2D16Async_ptsz, 7000, true)                                                     \
  X(cuMemsetD2D32Async, cuMemsetD2D32Async, 3020, false)                                                         \
  X(cuMemsetD2D32Async, cuMemsetD2D32Async_ptsz, 7000, true)                                                     \
  X(cuLaunchKernel, cuLaunchKernel_ptsz, 7000, true)                                                             \
  X(cuLaunchKernelEx, cuLaunchKernelEx, 11060, false)                                                            \
  X(cuLaunchKernelEx, cuLaunchKernelEx_ptsz, 11060, true)                                                        \
  X(cuLaunchCooperativeKernel, cuLaunchCooperativeKernel, 9000, false)                                           \
  X(cuLaunchCooperativeKernel, cuLaunchCooperativeKernel_ptsz, 9000, true)                                       \
  X(cuGraphLaunch, cuGraphLaunch, 10000, false)                                                                  \
  X(cuGraphLaunch, cuGraphLaunch_ptsz, 10000, true)                                                              \
  X(cuFuncGetName, cuFuncGetName, 12030, false)                                                                  \
  X(cuKernelGetName, cuKernelGetName, 12030, false)                                                              \
  X(cuStreamSynchronize, cuStreamSynchronize_ptsz, 7000, true)                                                   \
  X(cuPointerGetAttribute, cuPointerGetAttribute, 4000, false)                                                   \
  X(cuPointerGetAttributes, cuPointerGetAttributes, 7000, false)                                                 \
  X(cuIpcGetMemHandle, cuIpcGetMemHandle, 4010, false)                                                           \
  X(cuIpcOpenMemHandle, cuIpcOpenMemHandle, 4010, false)                                                         \
  X(cuIpcOpenMemHandle, cuIpcOpenMemHandle_v2, 11000, false)                                                     \
  X(cuIpcCloseMemHandle, cuIpcCloseMemHandle, 4010, false)                                                       \
  X(cuGetProcAddress, cuGetProcAddress, 11030, false)                                                            \
  X(cuGetProcAddress, cuGetProcAddress_v2, 12000, false)                                                         \
  X(cuStreamBeginCapture, cuStreamBeginCapture_v2, 10010, false)                                                 \
  X(cuStreamEndCapture, cuStreamEndCapture, 10000, false)                                                        \
  X(cuGraphCreate, cuGraphCreate, 10000, false)                                                                  \
  X(cuGraphDestroy, cuGraphDestroy, 10000, false)                                                                \
  X(cuGraphAddMemAllocNode, cuGraphAddMemAllocNode, 11040, false)                                                \
  X(cuGraphAddMemFreeNode, cuGraphAddMemFreeNode, 11040, false)                                                  \
  X(cuGraphAddChildGraphNode, cuGraphAddChildGraphNode, 10000, false)                                            \
  X(cuGraphAddNode, cuGraphAddNode, 12020, false)                                                                \
  X(cuGraphAddNode, cuGraphAddNode_v2, 12030, false)                                                             \
  X(cuGraphInstantiate, cuGraphInstantiateWithFlags, 12000, false)                                               \
  X(cuGraphInstantiateWithFlags, cuGraphInstantiateWithFlags, 11040, false)                                      \
  X(cuGraphInstantiateWithParams, cuGraphInstantiateWithParams, 12000, false)                                    \
  X(cuGraphInstantiateWithParams, cuGraphInstantiateWithParams_ptsz, 12000,                                      \
    true)                                                                                                        \
  X(cuGraphExecDestroy, cuGraphExecDestroy, 10000, false)                                                        \
  X(cuGraphAddMemsetNode, cuGraphAddMemsetNode, 10000, false)                                                    \
  X(cuGraphAddMemcpyNode, cuGraphAddMemcpyNode, 10000, false)                                                    \
  X(cuMemAdvise, cuMemAdvise_v2, 12020, false)                                                                   \
  X(cuMemPrefetchAsync, cuMemPrefetchAsync_v2, 12020, false)                                                     \
  X(cuMemPrefetchAsync, cuMemPrefetchAsync_v2_ptsz, 12020, true)                                                 \
  X(cuMemRangeGetAttribute, cuMemRangeGetAttribute, 8000, false)                                                 \
  X(cuMemRangeGetAttributes, cuMemRangeGetAttributes, 8000, false)                                               \
  X(cuPointerSetAttribute, cuPointerSetAttribute, 6000, false)                                                   \
  X(cuMemGetHandleForAddressRange, cuMemGetHandleForAddressRange, 11070,                                         \
    false)                                                                                                       \
  X(cuMemcpyDtoA, cuMemcpyDtoA_v2, 3020, false)                                                                  \
  X(cuMemcpyDtoA, cuMemcpyDtoA_v2_ptds, 7000, true)                                                              \
  X(cuMemcpyAtoD, cuMemcpyAtoD_v2, 3020, false)                                                                  \
  X(cuMemcpyAtoD, cuMemcpyAtoD_v2_ptds, 7000, true)                                                              \
  X(cuMemcpy3DPeer, cuMemcpy3DPeer, 4000, false)                                                                 \
  X(cuMemcpy3DPeer, cuMemcpy3DPeer_ptds, 7000, true)                                                             \
  X(cuMemcpyBatchAsync, cuMemcpyBatchAsync_v2, 13000, false)                                                     \
  X(cuMemcpyBatchAsync, cuMemcpyBatchAsync_v2_ptsz, 13000, true)                                                 \
  X(cuMemPrefetchBatchAsync, cuMemPrefetchBatchAsync, 13000, false)                                              \
  X(cuMemPrefetchBatchAsync, cuMemPrefetchBatchAsync_ptsz, 13000, true)                                          \
  X(cuMemDiscardBatchAsync, cuMemDiscardBatchAsync, 13000, false)                                                \
  X(cuMemDiscardBatchAsync, cuMemDiscardBatchAsync_ptsz, 13000, true)                                            \
  X(cuMemDiscardAndPrefetchBatchAsync, cuMemDiscardAndPrefetchBatchAsync,                                        \
    13000, false)                                                                                                \
  X(cuMemDiscardAndPrefetchBatchAsync, cuMemDiscardAndPrefetchBatchAsync_ptsz,                                   \
    13000, true)                                                                                                 \
  X(cuMemBatchDecompressAsync, cuMemBatchDecompressAsync, 12060, false)                                          \
  X(cuMemBatchDecompressAsync, cuMemBatchDecompressAsync_ptsz, 12060, true)                                      \
  X(cuMemHostGetDevicePointer, cuMemHostGetDevicePointer_v2, 3020, false)                                        \
  X(cuFuncGetParamInfo, cuFuncGetParamInfo, 12040, false)                                                        \
  X(cuKernelGetParamInfo, cuKernelGetParamInfo, 12040, false)

// The exported symbols, declared by assembler name only: we need addresses, and
// some (the _ptsz variants, cuGetProcAddress v1) cuda.h does not declare.
#define FAKE_CUDA_DECLARE(base, symbol, version, per_thread) \
  extern "C" void FakeSym_##symbol() __asm__(#symbol);
FAKE_CUDA_PROC_TABLE(FAKE_CUDA_DECLARE)
#undef FAKE_CUDA_DECLARE

namespace fake_cuda {
namespace {

struct ProcEntry {
  const char* base;
  void (*fn)();
  int version;
  bool per_thread;
};

constexpr ProcEntry kProcs[] = {
#define FAKE_CUDA_ENTRY(base, symbol, version, per_thread) \
  {#base, &FakeSym_##symbol, version, per_thread},
    FAKE_CUDA_PROC_TABLE(FAKE_CUDA_ENTRY)
#undef FAKE_CUDA_ENTRY
};

// The newest entry for `base` with the given threading flavour and a version
// <= cuda_version; *known tells whether `base` has such entries at all.
const ProcEntry* Newest(const char* base, bool per_thread, int cuda_version,
                        bool* known) {
  const ProcEntry* best = nullptr;
  for (const ProcEntry& e : kProcs) {
    if (e.per_thread != per_thread || std::strcmp(e.base, base) != 0) continue;
    *known = true;
    if (e.version <= cuda_version && (!best || e.version > best->version)) {
      best = &e;
    }
  }
  return best;
}

}  // namespace

CUresult LookupProc(const char* symbol, void** pfn, int cuda_version,
                    cuuint64_t flags, CUdriverProcAddressQueryResult* status) {
  constexpr cuuint64_t kKnownFlags =
      CU_GET_PROC_ADDRESS_LEGACY_STREAM |
      CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
  if (symbol == nullptr || pfn == nullptr || (flags & ~kKnownFlags) != 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  *pfn = nullptr;
  bool known = false;
  const ProcEntry* entry = nullptr;
  if (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) {
    entry = Newest(symbol, true, cuda_version, &known);
  }
  if (entry == nullptr) entry = Newest(symbol, false, cuda_version, &known);
  if (entry == nullptr) {
    if (status != nullptr) {
      *status = known ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT
                      : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    }
    return CUDA_ERROR_NOT_FOUND;
  }
  *pfn = reinterpret_cast<void*>(entry->fn);
  if (status != nullptr) *status = CU_GET_PROC_ADDRESS_SUCCESS;
  return CUDA_SUCCESS;
}

}  // namespace fake_cuda

// CUDA 11.3 - 11.8 signature, still exported by the real driver.
FAKE_CU_API(cuGetProcAddress, (const char* symbol, void** pfn, int cuda_version,
                               cuuint64_t flags)) {
  return fake_cuda::LookupProc(symbol, pfn, cuda_version, flags, nullptr);
}

FAKE_CU_API(cuGetProcAddress_v2,
            (const char* symbol, void** pfn, int cuda_version, cuuint64_t flags,
             CUdriverProcAddressQueryResult* status)) {
  const struct {
    const char* symbol;
    void** pfn;
    int cuda_version;
    cuuint64_t flags;
    CUdriverProcAddressQueryResult* status;
  } params{symbol, pfn, cuda_version, flags, status};
  return fake_cuda::WithCuptiCallbacks(
      CUPTI_DRIVER_TRACE_CBID_cuGetProcAddress_v2, "cuGetProcAddress_v2",
      &params, nullptr, [&] {
        return fake_cuda::LookupProc(symbol, pfn, cuda_version, flags, status);
      });
}
