// Device buffers exported as dma-bufs (cuMemGetHandleForAddressRange), as an
// RDMA stack registers a GPU buffer with a NIC: a buffer's start, an interior
// page, the whole buffer, its last half, and a range a page past its end, for
// blocks over 1 MiB from cudaMalloc, cuMemAlloc and cudaMallocAsync. CUDA
// takes only whole host pages, starting on one, so the buffer's start must
// stay on a host page (without the tool CUDA starts such a block on a 2 MiB
// page; GPUDirect pinning wants a 64 KiB GPU page, also printed). Each
// buffer is then written by a kernel through its pointer and read back, to
// show it is the program's own.
#include <cuda.h>
#include <cuda_runtime.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "corpus_check.h"

namespace {

__global__ void Fill(unsigned char* p, size_t n, unsigned char v) {
  size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x;
  if (i < n) p[i] = v;
}

struct Range {
  const char* which;
  size_t offset;
  size_t bytes;
};

void Export(const char* api, CUdeviceptr base, size_t bytes, size_t page,
            bool supported) {
  std::printf("%s %zu bytes starts on a host page: %s, on a 64 KiB page: %s\n",
              api, bytes, base % page == 0 ? "yes" : "no",
              base % (64 << 10) == 0 ? "yes" : "no");
  const size_t half = bytes / 2 / page * page;
  const Range ranges[] = {{"start", 0, half},
                          {"interior page", page, page},
                          {"whole", 0, bytes},
                          {"last half", bytes - half, half},
                          {"a page past the end", bytes - half + page, half}};
  for (const Range& r : ranges) {
    int fd = -1;
    const std::string what =
        std::string("cuMemGetHandleForAddressRange ") + api + " " + r.which;
    const CUresult rc = corpus::Rc(
        what.c_str(),
        cuMemGetHandleForAddressRange(&fd, base + r.offset, r.bytes,
                                      CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0));
    corpus::Expect(!supported || rc != CUDA_SUCCESS || fd >= 0,
                   "%s: success without a file descriptor", what.c_str());
    if (fd >= 0) close(fd);
  }
  // The buffer is the program's own, whole: written and read back.
  auto* p = reinterpret_cast<unsigned char*>(base);
  Fill<<<static_cast<unsigned>((bytes + 255) / 256), 256>>>(p, bytes, 0x5a);
  CORPUS_CHECK(cudaDeviceSynchronize());
  std::vector<unsigned char> back(bytes);
  CORPUS_CHECK(cudaMemcpy(back.data(), p, bytes, cudaMemcpyDeviceToHost));
  size_t wrong = 0;
  for (unsigned char c : back) wrong += c != 0x5a;
  corpus::Expect(wrong == 0, "%s: %zu bytes read back wrong", api, wrong);
}

}  // namespace

int main() {
  corpus::ProgramName() = "dmabuf_export";
  CORPUS_CHECK(cudaSetDevice(0));
  CORPUS_CHECK(cudaFree(nullptr));
  CUdevice device = 0;
  CORPUS_CHECK(cuCtxGetDevice(&device));
  int supported = 0;
  corpus::Rc("cuDeviceGetAttribute DMA_BUF_SUPPORTED",
             cuDeviceGetAttribute(
                 &supported, CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED, device));
  std::printf("dma-buf supported: %s\n", supported ? "yes" : "no");
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));

  // Just over 1 MiB (whole pages), 4 MiB, 64 MiB.
  const size_t sizes[] = {(size_t{1} << 20) + page, size_t{4} << 20,
                          size_t{64} << 20};
  for (size_t bytes : sizes) {
    void* r = nullptr;
    CORPUS_CHECK(cudaMalloc(&r, bytes));
    Export("cudaMalloc", reinterpret_cast<CUdeviceptr>(r), bytes, page,
           supported != 0);
    CORPUS_CHECK(cudaFree(r));

    CUdeviceptr d = 0;
    CORPUS_CHECK(cuMemAlloc(&d, bytes));
    Export("cuMemAlloc", d, bytes, page, supported != 0);
    CORPUS_CHECK(cuMemFree(d));
  }
  // A pool block: where CUDA places it is the pool's choice; the result is
  // compared as it is.
  cudaStream_t stream = nullptr;
  CORPUS_CHECK(cudaStreamCreate(&stream));
  void* a = nullptr;
  CORPUS_CHECK(cudaMallocAsync(&a, size_t{4} << 20, stream));
  CORPUS_CHECK(cudaStreamSynchronize(stream));
  Export("cudaMallocAsync", reinterpret_cast<CUdeviceptr>(a), size_t{4} << 20,
         page, supported != 0);
  CORPUS_CHECK(cudaFreeAsync(a, stream));
  CORPUS_CHECK(cudaStreamSynchronize(stream));
  CORPUS_CHECK(cudaStreamDestroy(stream));
  return corpus::Finish();
}
