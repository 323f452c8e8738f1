// Driver-API contexts and the VMM API's lifetimes, as a plugin that creates
// its own context does it: a context made with cuCtxCreate, memory mapped
// with cuMemCreate/cuMemMap while it is current, the context destroyed, and
// only then the mapping unmapped, the handle released and the reservation
// freed (VMM objects belong to the process, not to the context). Then two
// contexts used in turn with cuCtxPushCurrent/cuCtxPopCurrent, each with its
// own cuMemAlloc'ed buffer, freed before its context is destroyed, and the
// primary context used by the runtime at the end.
#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <vector>

#include "corpus_check.h"

int main() {
  corpus::ProgramName() = "vmm_ctx_destroy";
  CORPUS_CHECK(cuInit(0));
  CUdevice dev;
  CORPUS_CHECK(cuDeviceGet(&dev, 0));

  CUcontext ctx = nullptr;
  corpus::Rc("cuCtxCreate", cuCtxCreate(&ctx, nullptr, 0, dev));
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = 0;
  size_t gran = 0;
  CORPUS_CHECK(cuMemGetAllocationGranularity(&gran, &prop,
                                             CU_MEM_ALLOC_GRANULARITY_MINIMUM));
  const size_t size = 4 * gran;
  CUmemGenericAllocationHandle handle = 0;
  CUdeviceptr va = 0;
  corpus::Rc("cuMemCreate", cuMemCreate(&handle, size, &prop, 0));
  corpus::Rc("cuMemAddressReserve", cuMemAddressReserve(&va, size, 0, 0, 0));
  corpus::Rc("cuMemMap", cuMemMap(va, size, 0, handle, 0));
  CUmemAccessDesc access{};
  access.location = prop.location;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  corpus::Rc("cuMemSetAccess", cuMemSetAccess(va, size, &access, 1));
  CORPUS_CHECK(cuMemsetD32(va, 0xC0FFEEu, size / 4));
  std::vector<unsigned> host(size / 4);
  CORPUS_CHECK(cuMemcpyDtoH(host.data(), va, size));
  size_t bad = 0;
  for (unsigned w : host)
    if (w != 0xC0FFEEu) ++bad;
  std::printf("VMM memory in the created context: %zu/%zu words right\n",
              host.size() - bad, host.size());
  corpus::Expect(bad == 0, "memset through VMM mapping wrong");

  corpus::Rc("cuCtxDestroy (mapping still live)", cuCtxDestroy(ctx));
  CUcontext current = reinterpret_cast<CUcontext>(1);
  CORPUS_CHECK(cuCtxGetCurrent(&current));
  std::printf("current context after destroy is null: %s\n",
              current == nullptr ? "yes" : "no");
  corpus::Rc("cuMemUnmap after cuCtxDestroy", cuMemUnmap(va, size));
  corpus::Rc("cuMemRelease after cuCtxDestroy", cuMemRelease(handle));
  corpus::Rc("cuMemAddressFree after cuCtxDestroy", cuMemAddressFree(va, size));

  // Two contexts in turn, each freeing its own memory.
  CUcontext first = nullptr, second = nullptr;
  CORPUS_CHECK(cuCtxCreate(&first, nullptr, 0, dev));
  CUdeviceptr in_first = 0;
  CORPUS_CHECK(cuMemAlloc(&in_first, 1 << 20));
  CORPUS_CHECK(cuMemsetD8(in_first, 0x11, 1 << 20));
  CORPUS_CHECK(cuCtxPopCurrent(nullptr));
  CORPUS_CHECK(cuCtxCreate(&second, nullptr, 0, dev));
  CUdeviceptr in_second = 0;
  CORPUS_CHECK(cuMemAlloc(&in_second, 3 << 20));
  // A copy between the two contexts' buffers (unified addressing).
  CORPUS_CHECK(cuMemcpy(in_second, in_first, 1 << 20));
  unsigned char probe[4] = {0, 0, 0, 0};
  CORPUS_CHECK(cuMemcpyDtoH(probe, in_second + (1 << 20) - 4, 4));
  std::printf("cross-context copy: %02x %02x %02x %02x\n", probe[0], probe[1],
              probe[2], probe[3]);
  corpus::Expect(probe[0] == 0x11 && probe[3] == 0x11, "cross-context copy");
  CUcontext owner = nullptr;
  corpus::Rc(
      "cuPointerGetAttribute CONTEXT of the first buffer",
      cuPointerGetAttribute(&owner, CU_POINTER_ATTRIBUTE_CONTEXT, in_first));
  std::printf("first buffer belongs to the first context: %s\n",
              owner == first ? "yes" : "no");
  CORPUS_CHECK(cuMemFree(in_second));
  CORPUS_CHECK(cuCtxPushCurrent(first));
  CORPUS_CHECK(cuMemFree(in_first));
  CORPUS_CHECK(cuCtxPopCurrent(nullptr));
  unsigned version = 0;
  CORPUS_CHECK(cuCtxGetApiVersion(second, &version));
  std::printf("context API version >= 3020: %s\n",
              version >= 3020 ? "yes" : "no");
  corpus::Rc("cuCtxDestroy second", cuCtxDestroy(second));
  corpus::Rc("cuCtxDestroy first", cuCtxDestroy(first));

  // The runtime's primary context afterwards.
  CORPUS_CHECK(cudaSetDevice(0));
  int* p = nullptr;
  CORPUS_CHECK(cudaMalloc(&p, 4096));
  CORPUS_CHECK(cudaMemset(p, 0, 4096));
  CORPUS_CHECK(cudaFree(p));
  CUcontext primary = nullptr;
  CORPUS_CHECK(cuCtxGetCurrent(&primary));
  CUcontext retained = nullptr;
  CORPUS_CHECK(cuDevicePrimaryCtxRetain(&retained, dev));
  std::printf("runtime uses the primary context: %s\n",
              primary == retained ? "yes" : "no");
  CORPUS_CHECK(cuDevicePrimaryCtxRelease(dev));
  return corpus::Finish();
}
