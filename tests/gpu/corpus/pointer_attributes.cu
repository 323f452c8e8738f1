// What CUDA says about a pointer, for every kind of memory a program can hold
// (cudaMalloc, cuMemAlloc, cudaMallocPitch, cudaMalloc3D, cudaMallocManaged,
// cudaMallocAsync, cudaMallocHost, cudaHostAlloc mapped, cudaHostRegister'ed
// and plain pageable host memory), at the start, inside and one past the
// end: cudaPointerGetAttributes, cuPointerGetAttribute(s) and
// cuMemGetAddressRange, as a library that dispatches on the kind of pointer
// it is given does. One past the end is asked only where no other block can
// start (sizes that are no multiple of 256). Addresses are printed relative to
// the pointer asked about; the BUFFER_ID is compared, never printed.
#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "corpus_check.h"

namespace {

// `probe_end`: also ask about the byte one past the end. Only for sizes that
// are no multiple of 256, where no other allocation can begin.
void Describe(const char* name, const void* p, size_t size,
              bool probe_end = false) {
  CUdeviceptr dp = reinterpret_cast<CUdeviceptr>(p);
  const struct {
    const char* where;
    size_t offset;
  } kProbes[] = {
      {"start", 0}, {"middle", size / 2}, {"last", size - 1}, {"end", size}};
  for (const auto& probe : kProbes) {
    if (probe.offset == size && !probe_end) continue;
    CUdeviceptr q = dp + probe.offset;
    std::string tag = std::string(name) + " @" + probe.where;
    cudaPointerAttributes a{};
    cudaError_t rc =
        cudaPointerGetAttributes(&a, reinterpret_cast<const void*>(q));
    std::printf("%s: cudaPointerGetAttributes -> %s", tag.c_str(),
                cudaGetErrorName(rc));
    if (rc == cudaSuccess) {
      std::printf(
          " type %d device %d dev%s host%s", static_cast<int>(a.type), a.device,
          a.devicePointer == nullptr
              ? "=null"
              : (a.devicePointer == reinterpret_cast<void*>(q) ? "=ptr"
                                                               : "!=ptr"),
          a.hostPointer == nullptr
              ? "=null"
              : (a.hostPointer == reinterpret_cast<void*>(q) ? "=ptr"
                                                             : "!=ptr"));
    }
    std::printf("\n");
    cudaGetLastError();

    CUmemorytype type = static_cast<CUmemorytype>(0);
    // Booleans: zero first, whatever width the driver writes.
    int is_managed = 0, mapped = 0, ordinal = -1, ipc = 0;
    CUdeviceptr start = 0;
    size_t range = 0;
    unsigned long long buffer_id = 0;
    CUpointer_attribute attrs[] = {
        CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
        CU_POINTER_ATTRIBUTE_IS_MANAGED,
        CU_POINTER_ATTRIBUTE_MAPPED,
        CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
        CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE,
        CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
        CU_POINTER_ATTRIBUTE_RANGE_SIZE,
        CU_POINTER_ATTRIBUTE_BUFFER_ID,
    };
    void* data[] = {&type, &is_managed, &mapped, &ordinal,
                    &ipc,  &start,      &range,  &buffer_id};
    CUresult crc = cuPointerGetAttributes(8, attrs, data, q);
    std::printf("%s: cuPointerGetAttributes -> %s", tag.c_str(),
                corpus::ErrorName(crc));
    if (crc == CUDA_SUCCESS) {
      std::printf(" memtype %d managed %d mapped %d ordinal %d ipc %d",
                  static_cast<int>(type), is_managed, mapped, ordinal, ipc);
      if (start != 0)
        std::printf(" range start ptr-%lld size %zu",
                    static_cast<long long>(q - start), range);
    }
    std::printf("\n");
    if (probe.offset == 0) {
      unsigned long long id_middle = 0;
      CUresult rc_mid = cuPointerGetAttribute(
          &id_middle, CU_POINTER_ATTRIBUTE_BUFFER_ID, dp + size / 2);
      std::printf(
          "%s: buffer id same in the middle: %s\n", name,
          rc_mid == CUDA_SUCCESS && id_middle == buffer_id ? "yes" : "no");
    }
    CUdeviceptr base = 0;
    size_t bytes = 0;
    CUresult arc = cuMemGetAddressRange(&base, &bytes, q);
    std::printf("%s: cuMemGetAddressRange -> %s", tag.c_str(),
                corpus::ErrorName(arc));
    if (arc == CUDA_SUCCESS)
      std::printf(" base ptr-%lld size %zu", static_cast<long long>(q - base),
                  bytes);
    std::printf("\n");
  }
}

}  // namespace

int main() {
  corpus::ProgramName() = "pointer_attributes";
  CORPUS_CHECK(cudaSetDeviceFlags(cudaDeviceMapHost));
  CORPUS_CHECK(cudaSetDevice(0));
  CORPUS_CHECK(cuInit(0));
  cudaStream_t stream;
  CORPUS_CHECK(cudaStreamCreate(&stream));

  void* dev = nullptr;
  CORPUS_CHECK(cudaMalloc(&dev, 1000));
  CUdeviceptr drv = 0;
  CORPUS_CHECK(cuMemAlloc(&drv, 3000));
  void* pitched = nullptr;
  size_t pitch = 0;
  CORPUS_CHECK(cudaMallocPitch(&pitched, &pitch, 700, 9));
  cudaPitchedPtr p3d{};
  CORPUS_CHECK(cudaMalloc3D(&p3d, make_cudaExtent(300, 5, 3)));
  void* managed = nullptr;
  CORPUS_CHECK(cudaMallocManaged(&managed, 5000));
  void* async = nullptr;
  CORPUS_CHECK(cudaMallocAsync(&async, 7000, stream));
  CORPUS_CHECK(cudaStreamSynchronize(stream));
  void* pinned = nullptr;
  CORPUS_CHECK(cudaMallocHost(&pinned, 4096));
  void* mapped = nullptr;
  CORPUS_CHECK(cudaHostAlloc(&mapped, 8192, cudaHostAllocMapped));
  void* registered = std::aligned_alloc(4096, 16384);
  CORPUS_CHECK(cudaHostRegister(registered, 16384, cudaHostRegisterDefault));
  void* pageable = std::malloc(2048);

  Describe("cudaMalloc(1000)", dev, 1000, true);
  Describe("cuMemAlloc(3000)", reinterpret_cast<void*>(drv), 3000, true);
  std::printf("pitch of 700 x 9: %zu\n", pitch);
  Describe("cudaMallocPitch(700 x 9)", pitched, pitch * 9);
  std::printf("3-D pitch of 300 x 5 x 3: %zu\n", p3d.pitch);
  Describe("cudaMalloc3D(300 x 5 x 3)", p3d.ptr, p3d.pitch * 5 * 3);
  Describe("cudaMallocManaged(5000)", managed, 5000, true);
  Describe("cudaMallocAsync(7000)", async, 7000, true);
  Describe("cudaMallocHost(4096)", pinned, 4096);
  Describe("cudaHostAlloc mapped(8192)", mapped, 8192);
  Describe("cudaHostRegister(16384)", registered, 16384);
  Describe("malloc(2048)", pageable, 2048);

  // The device alias of mapped host memory.
  void* mapped_dev = nullptr;
  corpus::Rc("cudaHostGetDevicePointer mapped",
             cudaHostGetDevicePointer(&mapped_dev, mapped, 0));
  std::printf("mapped host memory: device alias equals host pointer: %s\n",
              mapped_dev == mapped ? "yes" : "no");
  unsigned flags = 0;
  corpus::Rc("cudaHostGetFlags mapped", cudaHostGetFlags(&flags, mapped));
  std::printf("mapped host flags: %u\n", flags);
  corpus::Rc("cudaHostGetFlags cudaMalloc memory",
             cudaHostGetFlags(&flags, dev));
  corpus::Rc("  cudaGetLastError", cudaGetLastError());

  // SYNC_MEMOPS can be set on device memory.
  unsigned one = 1;
  corpus::Rc("cuPointerSetAttribute SYNC_MEMOPS",
             cuPointerSetAttribute(&one, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS,
                                   reinterpret_cast<CUdeviceptr>(dev)));
  int sync_memops = 0;
  corpus::Rc(
      "cuPointerGetAttribute SYNC_MEMOPS",
      cuPointerGetAttribute(&sync_memops, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS,
                            reinterpret_cast<CUdeviceptr>(dev)));
  std::printf("sync memops: %d\n", sync_memops);

  std::free(pageable);
  CORPUS_CHECK(cudaHostUnregister(registered));
  std::free(registered);
  CORPUS_CHECK(cudaFreeHost(mapped));
  CORPUS_CHECK(cudaFreeHost(pinned));
  CORPUS_CHECK(cudaFreeAsync(async, stream));
  CORPUS_CHECK(cudaStreamSynchronize(stream));
  CORPUS_CHECK(cudaFree(managed));
  CORPUS_CHECK(cudaFree(p3d.ptr));
  CORPUS_CHECK(cudaFree(pitched));
  CORPUS_CHECK(cuMemFree(drv));
  CORPUS_CHECK(cudaFree(dev));
  CORPUS_CHECK(cudaStreamDestroy(stream));
  return corpus::Finish();
}
