// oob_repeat: a training-like loop whose one buggy kernel writes 16 bytes
// past the end of a 4000-byte cudaMalloc block every step, between clean
// kernels on the same buffers, with a synchronization at the end of each of
// its 4 steps.
//
// Expected report (guard=1, default check=sync with suspect_checks): an
// oob-write on the block from RepeatAllocateWeights (4000 bytes,
// first_offset 4000, last_offset 4015, 16 changed bytes) for the first step
// and for every step after the first finding was read. The first is found
// at a synchronization ("check": "sync") and lists the kernels run since the
// last clean check (RepeatScaleKernel, RepeatOverrunKernel,
// RepeatReduceKernel) with "suspects_checked": true; each later one is
// found by the check after RepeatOverrunKernel ("check": "suspect") and
// names it alone: 3 or 4 errors. check=sync reads a check's answer at the
// next synchronization and re-arms the zone then, so a step that overran
// before that is painted over: with suspect_checks=0, 2 to 4 errors, every
// one at a synchronization; with check=kernel, 4, each naming
// RepeatOverrunKernel. stdout prints the reduction of the in-bounds bytes,
// the same with and without the tool; exit 0.
#include <cuda_runtime.h>

#include <cstdio>

#include "example_check.h"
#include "guard_example.h"

constexpr size_t kBytes = 4000;
constexpr int kWords = static_cast<int>(kBytes / 4);
constexpr int kSpillWords = 4;  // 16 bytes past the end
constexpr int kSteps = 4;

__global__ void RepeatScaleKernel(float* w, int n, float by) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) w[i] = w[i] * by + 1.0f;
}

// The bug: the bound is the padded grid's, not the buffer's (a missing
// `i < n` for the last partial block, written as a wrong `n`).
__global__ void RepeatOverrunKernel(float* w, int n_wrong) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n_wrong) w[i] = 0.5f * static_cast<float>(i % 7);
}

__global__ void RepeatReduceKernel(const float* w, int n, float* out) {
  __shared__ float part[256];
  float s = 0.0f;
  for (int i = threadIdx.x; i < n; i += blockDim.x) s += w[i];
  part[threadIdx.x] = s;
  __syncthreads();
  for (int k = blockDim.x / 2; k > 0; k /= 2) {
    if (threadIdx.x < k) part[threadIdx.x] += part[threadIdx.x + k];
    __syncthreads();
  }
  if (threadIdx.x == 0) *out = part[0];
}

__attribute__((noinline)) float* RepeatAllocateWeights(size_t bytes) {
  void* p = nullptr;
  EXAMPLE_CHECK_CUDA(cudaMalloc(&p, bytes));
  return static_cast<float*>(p);
}

int main() {
  float* w = RepeatAllocateWeights(kBytes);
  float* out = nullptr;
  EXAMPLE_CHECK_CUDA(cudaMalloc(&out, sizeof(float)));
  EXAMPLE_CHECK_CUDA(cudaMemset(w, 0, kBytes));
  EXAMPLE_CHECK_CUDA(cudaDeviceSynchronize());
  const bool spill = BadWriteStaysMapped(w, kBytes, kBytes, kSpillWords * 4,
                                         kDevicePageBytes, "oob_repeat");
  float sums[kSteps] = {};
  for (int step = 0; step < kSteps; ++step) {
    RepeatScaleKernel<<<(kWords + 255) / 256, 256>>>(w, kWords, 0.5f);
    if (spill) {
      RepeatOverrunKernel<<<(kWords + 255) / 256, 256>>>(w,
                                                         kWords + kSpillWords);
    }
    RepeatReduceKernel<<<1, 256>>>(w, kWords, out);
    EXAMPLE_CHECK_CUDA(cudaGetLastError());
    EXAMPLE_CHECK_CUDA(cudaDeviceSynchronize());
    EXAMPLE_CHECK_CUDA(
        cudaMemcpy(&sums[step], out, sizeof(float), cudaMemcpyDeviceToHost));
  }
  EXAMPLE_CHECK_CUDA(cudaFree(w));
  EXAMPLE_CHECK_CUDA(cudaFree(out));
  std::printf("oob_repeat: %d steps wrote %d bytes past a %zu-byte block;",
              kSteps, kSpillWords * 4, kBytes);
  for (float s : sums) std::printf(" %.3f", s);
  std::printf("\n");
  return 0;
}
