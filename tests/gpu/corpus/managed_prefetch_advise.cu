// Managed memory tuned with hints: cudaMemAdvise (read-mostly, preferred
// location, accessed-by), cudaMemPrefetchAsync to the GPU and back to the
// host, and the hints read back with cudaMemRangeGetAttribute(s), over the
// whole allocation, a page-aligned sub-range and a range past its end, the
// way an out-of-core solver checks where its pages are.
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>

#include "corpus_check.h"

namespace {

__global__ void Axpy(float* y, const float* x, int n, float a) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] += a * x[i];
}

cudaMemLocation Device(int id) {
  cudaMemLocation loc{};
  loc.type = cudaMemLocationTypeDevice;
  loc.id = id;
  return loc;
}

cudaMemLocation Host() {
  cudaMemLocation loc{};
  loc.type = cudaMemLocationTypeHost;
  loc.id = 0;
  return loc;
}

// Reads the int-valued range attributes one by one; prints them and the
// return code of each query.
void PrintRange(const char* what, const void* p, size_t bytes) {
  struct {
    cudaMemRangeAttribute attr;
    const char* name;
  } const kAttrs[] = {
      {cudaMemRangeAttributeReadMostly, "read-mostly"},
      {cudaMemRangeAttributePreferredLocation, "preferred"},
      {cudaMemRangeAttributeLastPrefetchLocation, "last-prefetch"},
      {cudaMemRangeAttributePreferredLocationType, "preferred-type"},
      {cudaMemRangeAttributePreferredLocationId, "preferred-id"},
      {cudaMemRangeAttributeLastPrefetchLocationType, "last-prefetch-type"},
      {cudaMemRangeAttributeLastPrefetchLocationId, "last-prefetch-id"},
  };
  for (const auto& a : kAttrs) {
    int value = -99;
    cudaError_t rc =
        cudaMemRangeGetAttribute(&value, sizeof value, a.attr, p, bytes);
    if (rc == cudaSuccess) {
      std::printf("%s: %s = %d\n", what, a.name, value);
    } else {
      std::printf("%s: %s -> %d (%s)\n", what, a.name, static_cast<int>(rc),
                  cudaGetErrorName(rc));
      cudaGetLastError();
    }
  }
  int accessed_by[4] = {-7, -7, -7, -7};
  cudaError_t rc =
      cudaMemRangeGetAttribute(accessed_by, sizeof accessed_by,
                               cudaMemRangeAttributeAccessedBy, p, bytes);
  std::printf("%s: accessed-by -> %d (%s) [%d %d %d %d]\n", what,
              static_cast<int>(rc), cudaGetErrorName(rc), accessed_by[0],
              accessed_by[1], accessed_by[2], accessed_by[3]);
  cudaGetLastError();
}

}  // namespace

int main() {
  corpus::ProgramName() = "managed_prefetch_advise";
  constexpr int kN = 4 << 20;  // 16 MiB of floats
  constexpr size_t kBytes = kN * sizeof(float);
  constexpr size_t kPage = 2 << 20;
  CORPUS_CHECK(cudaSetDevice(0));
  cudaStream_t stream;
  CORPUS_CHECK(cudaStreamCreate(&stream));

  float* x = nullptr;
  float* y = nullptr;
  CORPUS_CHECK(cudaMallocManaged(&x, kBytes));
  CORPUS_CHECK(cudaMallocManaged(&y, kBytes));
  for (int i = 0; i < kN; ++i) {
    x[i] = static_cast<float>(i % 1000) * 0.5f;
    y[i] = 1.0f;
  }
  PrintRange("x fresh", x, kBytes);

  // x is read-only input; y lives on the GPU and the host reads it back.
  corpus::Rc("advise x read-mostly",
             cudaMemAdvise(x, kBytes, cudaMemAdviseSetReadMostly, Device(0)));
  corpus::Rc(
      "advise y preferred device 0",
      cudaMemAdvise(y, kBytes, cudaMemAdviseSetPreferredLocation, Device(0)));
  corpus::Rc("advise y accessed by host",
             cudaMemAdvise(y, kBytes, cudaMemAdviseSetAccessedBy, Host()));
  corpus::Rc("advise x accessed by device 0",
             cudaMemAdvise(x, kBytes, cudaMemAdviseSetAccessedBy, Device(0)));
  corpus::Rc("prefetch x to device 0",
             cudaMemPrefetchAsync(x, kBytes, Device(0), 0, stream));
  corpus::Rc("prefetch y to device 0",
             cudaMemPrefetchAsync(y, kBytes, Device(0), 0, stream));
  CORPUS_CHECK(cudaStreamSynchronize(stream));
  PrintRange("x advised", x, kBytes);
  PrintRange("y advised", y, kBytes);
  PrintRange("y first page", y, kPage);
  PrintRange("y middle pages", reinterpret_cast<char*>(y) + kPage, 2 * kPage);

  for (int k = 0; k < 3; ++k) {
    Axpy<<<(kN + 255) / 256, 256, 0, stream>>>(y, x, kN, 2.0f);
    CORPUS_CHECK(cudaGetLastError());
  }
  corpus::Rc("prefetch y to host",
             cudaMemPrefetchAsync(y, kBytes, Host(), 0, stream));
  CORPUS_CHECK(cudaStreamSynchronize(stream));
  PrintRange("y after prefetch to host", y, kBytes);

  int wrong = 0;
  for (int i = 0; i < kN; ++i) {
    float want = 1.0f + 3.0f * 2.0f * (static_cast<float>(i % 1000) * 0.5f);
    if (y[i] != want) ++wrong;
  }
  std::printf("axpy x3: %d/%d values right\n", kN - wrong, kN);
  corpus::Expect(wrong == 0, "axpy: %d wrong values", wrong);

  // Several attributes in one call.
  int read_mostly = -1, preferred = -1, last = -1;
  void* data[] = {&read_mostly, &preferred, &last};
  size_t sizes[] = {sizeof(int), sizeof(int), sizeof(int)};
  cudaMemRangeAttribute attrs[] = {cudaMemRangeAttributeReadMostly,
                                   cudaMemRangeAttributePreferredLocation,
                                   cudaMemRangeAttributeLastPrefetchLocation};
  corpus::Rc("cudaMemRangeGetAttributes x",
             cudaMemRangeGetAttributes(data, sizes, attrs, 3, x, kBytes));
  std::printf("x: read-mostly %d, preferred %d, last-prefetch %d\n",
              read_mostly, preferred, last);
  corpus::Rc("cudaMemRangeGetAttributes y",
             cudaMemRangeGetAttributes(data, sizes, attrs, 3, y, kBytes));
  std::printf("y: read-mostly %d, preferred %d, last-prefetch %d\n",
              read_mostly, preferred, last);

  // Ranges that are not wholly managed: one page past the end of y, and a
  // range over cudaMalloc memory.
  PrintRange("y plus one page", y, kBytes + kPage);
  corpus::Rc(
      "advise past the end of y",
      cudaMemAdvise(y, kBytes + kPage, cudaMemAdviseSetReadMostly, Device(0)));
  corpus::Rc("  cudaGetLastError", cudaGetLastError());
  corpus::Rc("prefetch past the end of x",
             cudaMemPrefetchAsync(x, kBytes + kPage, Device(0), 0, stream));
  corpus::Rc("  cudaGetLastError", cudaGetLastError());
  void* plain = nullptr;
  CORPUS_CHECK(cudaMalloc(&plain, kPage));
  PrintRange("cudaMalloc memory", plain, kPage);

  // Undo the hints, as a library would before handing the buffers back.
  corpus::Rc("unset read-mostly x",
             cudaMemAdvise(x, kBytes, cudaMemAdviseUnsetReadMostly, Device(0)));
  corpus::Rc(
      "unset preferred y",
      cudaMemAdvise(y, kBytes, cudaMemAdviseUnsetPreferredLocation, Device(0)));
  corpus::Rc("unset accessed-by y",
             cudaMemAdvise(y, kBytes, cudaMemAdviseUnsetAccessedBy, Host()));
  PrintRange("x unset", x, kBytes);

  CORPUS_CHECK(cudaFree(plain));
  CORPUS_CHECK(cudaFree(x));
  CORPUS_CHECK(cudaFree(y));
  CORPUS_CHECK(cudaStreamDestroy(stream));
  return corpus::Finish();
}
