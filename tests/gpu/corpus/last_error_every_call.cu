// A program in the defensive style many codebases use: after every CUDA call
// and every launch it reads cudaGetLastError() (and sometimes
// cudaPeekAtLastError()) and prints both codes. Along the way it makes the
// mistakes such code is written to catch, all of them recoverable and none a
// memory error: launches with too many threads per block, too large a grid
// or too much shared memory, an allocation far too large, a copy with an
// invalid direction, a device that does not exist, timing events that do not
// time. The last error must be reported once and then be cleared.
#include <cuda_runtime.h>

#include <cstdio>
#include <vector>

#include "corpus_check.h"

namespace {

__global__ void Triple(int* p, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] *= 3;
}

// Prints the call's code, then what cudaPeekAtLastError and
// cudaGetLastError (twice) say afterwards.
void Step(const char* what, cudaError_t rc) {
  corpus::Rc(what, rc);
  cudaError_t peek = cudaPeekAtLastError();
  cudaError_t last = cudaGetLastError();
  cudaError_t again = cudaGetLastError();
  std::printf("  peek %s, last %s, then %s\n", cudaGetErrorName(peek),
              cudaGetErrorName(last), cudaGetErrorName(again));
}

}  // namespace

int main() {
  corpus::ProgramName() = "last_error_every_call";
  Step("cudaSetDevice(0)", cudaSetDevice(0));
  int* d = nullptr;
  constexpr int kN = 4096;
  Step("cudaMalloc 16 KiB", cudaMalloc(&d, kN * sizeof(int)));
  std::vector<int> host(kN);
  for (int i = 0; i < kN; ++i) host[i] = i;
  Step("cudaMemcpy H2D",
       cudaMemcpy(d, host.data(), kN * sizeof(int), cudaMemcpyHostToDevice));

  Triple<<<kN / 256, 256>>>(d, kN);
  Step("launch <<<16, 256>>>", cudaSuccess);
  Triple<<<1, 4096>>>(d, kN);  // more threads than a block may have
  Step("launch <<<1, 4096>>> (too many threads)", cudaSuccess);
  Triple<<<dim3(1, 70000), 1>>>(d, kN);  // grid.y limit is 65535
  Step("launch grid.y 70000", cudaSuccess);
  Step("cudaDeviceSynchronize", cudaDeviceSynchronize());

  void* huge = nullptr;
  Step("cudaMalloc 1 PiB", cudaMalloc(&huge, size_t{1} << 50));
  std::printf("failed allocation left null: %s\n",
              huge == nullptr ? "yes" : "no");
  Step("cudaMemcpy with an invalid kind",
       cudaMemcpy(d, host.data(), 16, static_cast<cudaMemcpyKind>(42)));
  Step("cudaSetDevice(99)", cudaSetDevice(99));
  Triple<<<1, 32, size_t{1} << 30>>>(d, kN);  // 1 GiB of shared memory
  Step("launch with 1 GiB dynamic shared memory", cudaSuccess);
  Step("cudaFuncSetAttribute max dynamic shared 1 GiB",
       cudaFuncSetAttribute(Triple, cudaFuncAttributeMaxDynamicSharedMemorySize,
                            1 << 30));
  cudaEvent_t a, b;
  Step("cudaEventCreateWithFlags no timing",
       cudaEventCreateWithFlags(&a, cudaEventDisableTiming));
  Step("cudaEventCreateWithFlags no timing",
       cudaEventCreateWithFlags(&b, cudaEventDisableTiming));
  Step("cudaEventRecord a", cudaEventRecord(a));
  Step("cudaEventRecord b", cudaEventRecord(b));
  Step("cudaEventSynchronize b", cudaEventSynchronize(b));
  float ms = 0;
  Step("cudaEventElapsedTime without timing", cudaEventElapsedTime(&ms, a, b));
  Step("cudaEventDestroy a", cudaEventDestroy(a));
  Step("cudaEventDestroy b", cudaEventDestroy(b));
  Step("cudaMemset of 0 bytes", cudaMemset(d, 0, 0));
  Step("cudaFree(nullptr)", cudaFree(nullptr));

  // The context is still healthy: the first launch's work is intact.
  Step("cudaMemcpy D2H",
       cudaMemcpy(host.data(), d, kN * sizeof(int), cudaMemcpyDeviceToHost));
  int wrong = 0;
  for (int i = 0; i < kN; ++i)
    if (host[i] != 3 * i) ++wrong;
  std::printf("data after the mistakes: %d wrong\n", wrong);
  corpus::Expect(wrong == 0, "data");
  Step("cudaFree", cudaFree(d));
  Step("cudaDeviceSynchronize at the end", cudaDeviceSynchronize());
  return corpus::Finish();
}
