// cudaMemcpyDefault between every kind of memory, as generic container code
// that lets unified addressing infer the direction does: device (cudaMalloc),
// driver (cuMemAlloc), stream-ordered, managed, pinned, registered and
// pageable memory, each pair copied at an odd offset and length with
// cudaMemcpy and with cudaMemcpyAsync, and cuMemsetD8 on each kind but
// pageable memory. 7 x 7 copies, each checked byte by byte.
#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "corpus_check.h"

namespace {

constexpr size_t kBytes = 256 << 10;
constexpr size_t kOffset = 333;
constexpr size_t kLen = 100001;

struct Buffer {
  const char* name;
  unsigned char* p;
  bool host_readable;
};

}  // namespace

int main() {
  corpus::ProgramName() = "memcpy_default_matrix";
  CORPUS_CHECK(cudaSetDevice(0));
  CORPUS_CHECK(cuInit(0));
  cudaStream_t stream;
  CORPUS_CHECK(cudaStreamCreate(&stream));

  unsigned char *dev, *async, *managed, *pinned, *registered, *pageable;
  CUdeviceptr drv = 0;
  CORPUS_CHECK(cudaMalloc(&dev, kBytes));
  CORPUS_CHECK(cuMemAlloc(&drv, kBytes));
  CORPUS_CHECK(cudaMallocAsync(&async, kBytes, stream));
  CORPUS_CHECK(cudaStreamSynchronize(stream));
  CORPUS_CHECK(cudaMallocManaged(&managed, kBytes));
  CORPUS_CHECK(cudaMallocHost(&pinned, kBytes));
  registered = static_cast<unsigned char*>(std::malloc(kBytes));
  CORPUS_CHECK(cudaHostRegister(registered, kBytes, cudaHostRegisterDefault));
  pageable = static_cast<unsigned char*>(std::malloc(kBytes));
  std::vector<Buffer> buffers = {
      {"cudaMalloc", dev, false},
      {"cuMemAlloc", reinterpret_cast<unsigned char*>(drv), false},
      {"cudaMallocAsync", async, false},
      {"managed", managed, true},
      {"pinned", pinned, true},
      {"registered", registered, true},
      {"pageable", pageable, true},
  };

  std::vector<unsigned char> pattern(kBytes), check(kBytes);
  int failures = 0, pairs = 0;
  for (size_t s = 0; s < buffers.size(); ++s) {
    for (size_t d = 0; d < buffers.size(); ++d) {
      if (s == d) continue;
      const Buffer& src = buffers[s];
      const Buffer& dst = buffers[d];
      unsigned char salt = static_cast<unsigned char>(s * 7 + d);
      for (size_t i = 0; i < kBytes; ++i)
        pattern[i] = static_cast<unsigned char>(i * 13 + salt);
      // Source filled from the host; destination cleared.
      CORPUS_CHECK(
          cudaMemcpy(src.p, pattern.data(), kBytes, cudaMemcpyDefault));
      if (dst.host_readable) {
        std::memset(dst.p, 0, kBytes);
      } else {
        CORPUS_CHECK(cudaMemset(dst.p, 0, kBytes));
        CORPUS_CHECK(cudaDeviceSynchronize());
      }
      cudaError_t rc;
      const bool async_copy = (s + d) % 2 == 1;
      if (async_copy) {
        rc = cudaMemcpyAsync(dst.p + kOffset, src.p + kOffset, kLen,
                             cudaMemcpyDefault, stream);
        cudaError_t sync = cudaStreamSynchronize(stream);
        if (rc == cudaSuccess) rc = sync;
      } else {
        rc = cudaMemcpy(dst.p + kOffset, src.p + kOffset, kLen,
                        cudaMemcpyDefault);
      }
      CORPUS_CHECK(cudaMemcpy(check.data(), dst.p, kBytes, cudaMemcpyDefault));
      size_t wrong = 0;
      for (size_t i = 0; i < kBytes; ++i) {
        bool copied = i >= kOffset && i < kOffset + kLen;
        if (check[i] != (copied ? pattern[i] : 0)) ++wrong;
      }
      ++pairs;
      if (rc != cudaSuccess || wrong != 0) {
        ++failures;
        std::printf("%s -> %s (%s): %s, %zu wrong bytes\n", src.name, dst.name,
                    async_copy ? "async" : "sync", cudaGetErrorName(rc), wrong);
      }
    }
  }
  std::printf("%d pairs copied, %d failed\n", pairs, failures);
  corpus::Expect(failures == 0, "copy matrix");

  // Byte fills through the driver, on every kind but pageable memory; what
  // the driver accepts is part of the result, and what it filled is checked.
  std::vector<CUresult> fill_rc(buffers.size(), CUDA_ERROR_NOT_SUPPORTED);
  for (size_t k = 0; k < buffers.size(); ++k) {
    const Buffer& b = buffers[k];
    if (b.p == pageable) continue;
    std::string what = std::string("cuMemsetD8 on ") + b.name;
    fill_rc[k] = corpus::Rc(
        what.c_str(),
        cuMemsetD8(reinterpret_cast<CUdeviceptr>(b.p) + 1, 0x5c, kBytes - 2));
  }
  CORPUS_CHECK(cuCtxSynchronize());
  int bad = 0;
  for (size_t k = 0; k < buffers.size(); ++k) {
    const Buffer& b = buffers[k];
    if (fill_rc[k] != CUDA_SUCCESS) continue;
    CORPUS_CHECK(cudaMemcpy(check.data(), b.p, kBytes, cudaMemcpyDefault));
    for (size_t i = 1; i + 1 < kBytes; ++i)
      if (check[i] != 0x5c) ++bad;
  }
  std::printf("cuMemsetD8 on every kind: %d wrong bytes\n", bad);
  corpus::Expect(bad == 0, "memsets");

  std::free(pageable);
  CORPUS_CHECK(cudaHostUnregister(registered));
  std::free(registered);
  CORPUS_CHECK(cudaFreeHost(pinned));
  CORPUS_CHECK(cudaFree(managed));
  CORPUS_CHECK(cudaFreeAsync(async, stream));
  CORPUS_CHECK(cudaStreamSynchronize(stream));
  CORPUS_CHECK(cuMemFree(drv));
  CORPUS_CHECK(cudaFree(dev));
  CORPUS_CHECK(cudaStreamDestroy(stream));
  return corpus::Finish();
}
