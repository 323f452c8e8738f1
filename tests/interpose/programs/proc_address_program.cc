// Allocates through driver entry points obtained at run time, never by symbol:
//
//   ProcAllocDirect        cuGetProcAddress("cuMemAlloc", 12000, default)
//                          -> cuMemAlloc_v2, 1111 bytes, leaked
//   ProcAllocViaRuntime    cudaGetDriverEntryPointByVersion("cuMemAlloc",
//   12000)
//                          -> 2222 bytes, leaked
//   ProcAllocAsyncPtsz     cuGetProcAddress("cuMemAllocAsync", 12000,
//                          PER_THREAD_DEFAULT_STREAM) -> cuMemAllocAsync_ptsz,
//                          3333 bytes, leaked
//   ProcAllocAndFree       cuMemAlloc + cuMemFree from cuGetProcAddress,
//                          4444 bytes, freed
//   ProcAllocThroughV1     cuGetProcAddress("cuGetProcAddress", 11030) -> the
//                          v1 entry point, asked in turn for "cuMemAlloc";
//                          5555 bytes, leaked
#include <cudaTypedefs.h>

#include "tests/interpose/programs/program_util.h"

namespace {

CUdriverProcAddressQueryResult g_status;

void PrintStatus(const char* what) {
  std::printf("%s status %d\n", what, static_cast<int>(g_status));
}

}  // namespace

NOINLINE void ProcAllocDirect() {
  void* fn = nullptr;
  Cu("cuGetProcAddress(cuMemAlloc)",
     cuGetProcAddress("cuMemAlloc", &fn, 12000, CU_GET_PROC_ADDRESS_DEFAULT,
                      &g_status));
  PrintStatus("cuMemAlloc");
  CUdeviceptr p = 0;
  Cu("proc cuMemAlloc(1111)",
     reinterpret_cast<PFN_cuMemAlloc_v3020>(fn)(&p, 1111));
  AfterCall();
}

NOINLINE void ProcAllocViaRuntime() {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult status = cudaDriverEntryPointSymbolNotFound;
  Rt("cudaGetDriverEntryPointByVersion(cuMemAlloc)",
     cudaGetDriverEntryPointByVersion("cuMemAlloc", &fn, 12000,
                                      cudaEnableDefault, &status));
  std::printf("entry point status %d\n", static_cast<int>(status));
  CUdeviceptr p = 0;
  Cu("entry cuMemAlloc(2222)",
     reinterpret_cast<PFN_cuMemAlloc_v3020>(fn)(&p, 2222));
  AfterCall();
}

NOINLINE void ProcAllocAsyncPtsz() {
  void* fn = nullptr;
  Cu("cuGetProcAddress(cuMemAllocAsync, ptsz)",
     cuGetProcAddress("cuMemAllocAsync", &fn, 12000,
                      CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM,
                      &g_status));
  PrintStatus("cuMemAllocAsync");
  CUdeviceptr p = 0;
  Cu("proc cuMemAllocAsync_ptsz(3333)",
     reinterpret_cast<PFN_cuMemAllocAsync_v11020_ptsz>(fn)(&p, 3333, nullptr));
  AfterCall();
}

NOINLINE void ProcAllocAndFree() {
  void* alloc = nullptr;
  void* release = nullptr;
  Cu("cuGetProcAddress(cuMemAlloc)",
     cuGetProcAddress("cuMemAlloc", &alloc, 13000, 0, &g_status));
  Cu("cuGetProcAddress(cuMemFree)",
     cuGetProcAddress("cuMemFree", &release, 13000, 0, &g_status));
  CUdeviceptr p = 0;
  Cu("proc cuMemAlloc(4444)",
     reinterpret_cast<PFN_cuMemAlloc_v3020>(alloc)(&p, 4444));
  Cu("proc cuMemFree", reinterpret_cast<PFN_cuMemFree_v3020>(release)(p));
}

NOINLINE void ProcAllocThroughV1() {
  void* v1 = nullptr;
  Cu("cuGetProcAddress(cuGetProcAddress, 11030)",
     cuGetProcAddress("cuGetProcAddress", &v1, 11030, 0, &g_status));
  void* fn = nullptr;
  Cu("v1 cuGetProcAddress(cuMemAlloc)",
     reinterpret_cast<PFN_cuGetProcAddress_v11030>(v1)("cuMemAlloc", &fn, 12000,
                                                       0));
  CUdeviceptr p = 0;
  Cu("v1 cuMemAlloc(5555)",
     reinterpret_cast<PFN_cuMemAlloc_v3020>(fn)(&p, 5555));
  AfterCall();
}

int main() {
  DriverSetup(0);
  ProcAllocDirect();
  ProcAllocViaRuntime();
  ProcAllocAsyncPtsz();
  ProcAllocAndFree();
  ProcAllocThroughV1();
  std::printf("done\n");
  return 0;
}
