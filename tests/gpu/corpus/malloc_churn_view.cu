// A cudaMalloc / cudaFree churn of about 1 MiB buffers, as a framework
// without a caching allocator makes one per layer and step (or PyTorch with
// PYTORCH_NO_CUDA_MEMORY_CACHING=1), and what such a program can ask of its
// buffers: every buffer's CU_POINTER_ATTRIBUTE_BUFFER_ID its own,
// SYNC_MEMOPS unset on a new buffer (one buffer sets it before its free), the
// range of each; then a cudaMalloc during a global-mode stream capture
// (which CUDA refuses and which invalidates the capture) and one after it.
#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <set>

#include "corpus_check.h"

namespace {

__global__ void Fill(unsigned char* p, size_t n, unsigned char v) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    p[i] = v;
  }
}

}  // namespace

int main() {
  corpus::ProgramName() = "malloc_churn_view";
  CORPUS_CHECK(cudaSetDevice(0));
  cudaStream_t stream;
  CORPUS_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));

  constexpr int kBuffers = 400;
  // The churn's sizes: 1 MiB less up to 24 KiB and 200 bytes.
  auto size_of = [](int i) {
    return (size_t{1} << 20) - 4096 * (i % 7) - 100 * (i % 3);
  };
  std::set<unsigned long long> ids;
  int sync_memops_on_new = 0;
  int ranges_right = 0;
  for (int i = 0; i < kBuffers; ++i) {
    const size_t bytes = size_of(i);
    unsigned char* p = nullptr;
    CORPUS_CHECK(cudaMalloc(&p, bytes));
    const auto dptr = reinterpret_cast<CUdeviceptr>(p);
    unsigned long long id = 0;
    CORPUS_CHECK(
        cuPointerGetAttribute(&id, CU_POINTER_ATTRIBUTE_BUFFER_ID, dptr));
    ids.insert(id);
    unsigned int sync_memops = 0;
    CORPUS_CHECK(cuPointerGetAttribute(&sync_memops,
                                       CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, dptr));
    sync_memops_on_new += sync_memops != 0;
    if (i % 50 == 10) {
      unsigned int one = 1;
      CORPUS_CHECK(
          cuPointerSetAttribute(&one, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, dptr));
    }
    CUdeviceptr base = 0;
    size_t size = 0;
    CORPUS_CHECK(cuMemGetAddressRange(&base, &size, dptr + bytes / 2));
    ranges_right += base == dptr && size == bytes;
    Fill<<<64, 256, 0, stream>>>(p, bytes, static_cast<unsigned char>(i));
    CORPUS_CHECK(cudaGetLastError());
    CORPUS_CHECK(cudaFree(p));
  }
  std::printf(
      "buffers: %d, distinct buffer ids: %zu, new buffers with "
      "SYNC_MEMOPS set: %d, ranges as allocated: %d\n",
      kBuffers, ids.size(), sync_memops_on_new, ranges_right);
  corpus::Expect(ids.size() == static_cast<size_t>(kBuffers),
                 "a buffer id repeated");
  corpus::Expect(sync_memops_on_new == 0, "a new buffer had SYNC_MEMOPS");

  // A cudaMalloc during a global-mode capture: refused, and the capture is
  // invalidated. Of the churn's smallest size, which any freed buffer of the
  // churn would fit.
  CORPUS_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  void* during = nullptr;
  corpus::Rc("cudaMalloc during capture", cudaMalloc(&during, size_of(20)));
  cudaGraph_t graph = nullptr;
  corpus::Rc("cudaStreamEndCapture", cudaStreamEndCapture(stream, &graph));
  corpus::Rc("cudaGetLastError", cudaGetLastError());
  if (graph != nullptr) CORPUS_CHECK(cudaGraphDestroy(graph));
  if (during != nullptr) CORPUS_CHECK(cudaFree(during));
  void* after = nullptr;
  corpus::Rc("cudaMalloc after capture", cudaMalloc(&after, size_of(20)));
  if (after != nullptr) CORPUS_CHECK(cudaFree(after));
  CORPUS_CHECK(cudaStreamDestroy(stream));
  return corpus::Finish();
}
