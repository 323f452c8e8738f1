// cudaDeviceReset between phases, as test harnesses and long-running services
// that re-initialize the GPU do: each phase allocates (cudaMalloc,
// cudaMallocAsync, cudaMallocManaged, cudaMallocHost), computes, frees
// everything, and resets the device; the primary context's state is read
// through the driver before and after, device flags are changed while no
// context is active, and the last phase ends with a reset too.
#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <vector>

#include "corpus_check.h"

namespace {

__global__ void Square(int* p, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] = p[i] * p[i];
}

void PrintPrimary(const char* when) {
  unsigned flags = 0;
  int active = -1;
  CORPUS_CHECK(cuDevicePrimaryCtxGetState(0, &flags, &active));
  std::printf("%s: primary context active %d, flags %u\n", when, active, flags);
}

int Phase(int phase) {
  constexpr int kN = 1 << 18;
  std::vector<int> host(kN);
  for (int i = 0; i < kN; ++i) host[i] = i % 100 + phase;
  int* d = nullptr;
  CORPUS_CHECK(cudaMalloc(&d, kN * sizeof(int)));
  CORPUS_CHECK(
      cudaMemcpy(d, host.data(), kN * sizeof(int), cudaMemcpyHostToDevice));
  Square<<<kN / 256, 256>>>(d, kN);
  cudaStream_t stream;
  CORPUS_CHECK(cudaStreamCreate(&stream));
  int* async = nullptr;
  CORPUS_CHECK(cudaMallocAsync(&async, kN * sizeof(int), stream));
  CORPUS_CHECK(cudaMemcpyAsync(async, d, kN * sizeof(int),
                               cudaMemcpyDeviceToDevice, stream));
  int* managed = nullptr;
  CORPUS_CHECK(cudaMallocManaged(&managed, kN * sizeof(int)));
  CORPUS_CHECK(cudaMemcpyAsync(managed, async, kN * sizeof(int),
                               cudaMemcpyDefault, stream));
  int* pinned = nullptr;
  CORPUS_CHECK(cudaMallocHost(&pinned, kN * sizeof(int)));
  CORPUS_CHECK(cudaMemcpyAsync(pinned, async, kN * sizeof(int),
                               cudaMemcpyDeviceToHost, stream));
  CORPUS_CHECK(cudaFreeAsync(async, stream));
  CORPUS_CHECK(cudaStreamSynchronize(stream));
  int wrong = 0;
  for (int i = 0; i < kN; ++i) {
    int want = (i % 100 + phase) * (i % 100 + phase);
    if (managed[i] != want || pinned[i] != want) ++wrong;
  }
  std::printf("phase %d: %d wrong\n", phase, wrong);
  CORPUS_CHECK(cudaFreeHost(pinned));
  CORPUS_CHECK(cudaFree(managed));
  CORPUS_CHECK(cudaStreamDestroy(stream));
  CORPUS_CHECK(cudaFree(d));
  return wrong;
}

}  // namespace

int main() {
  corpus::ProgramName() = "device_reset";
  CORPUS_CHECK(cuInit(0));
  PrintPrimary("before any runtime call");
  CORPUS_CHECK(cudaSetDevice(0));
  corpus::Expect(Phase(1) == 0, "phase 1");
  PrintPrimary("after phase 1");
  corpus::Rc("cudaDeviceReset", cudaDeviceReset());
  PrintPrimary("after reset");
  corpus::Rc("cudaSetDeviceFlags(cudaDeviceScheduleBlockingSync)",
             cudaSetDeviceFlags(cudaDeviceScheduleBlockingSync));
  corpus::Expect(Phase(2) == 0, "phase 2");
  unsigned flags = 0;
  CORPUS_CHECK(cudaGetDeviceFlags(&flags));
  std::printf("device flags after phase 2: blocking sync %s\n",
              (flags & cudaDeviceScheduleBlockingSync) ? "yes" : "no");
  corpus::Rc("cudaDeviceReset", cudaDeviceReset());
  corpus::Expect(Phase(3) == 0, "phase 3");
  corpus::Rc("cudaDeviceReset at the end", cudaDeviceReset());
  PrintPrimary("at the end");
  return corpus::Finish();
}
