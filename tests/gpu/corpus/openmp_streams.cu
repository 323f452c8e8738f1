// OpenMP host threads that each drive the GPU with their own stream, as a
// task-parallel host program does (cf. the UnifiedMemoryStreams sample):
// every thread allocates with cudaMalloc, cudaMallocAsync, cudaMallocHost and
// cudaMallocManaged (attached to its stream, length 0), copies, launches,
// synchronizes its stream and frees; results are collected per thread and
// printed in thread order after the parallel region.
#include <cuda_runtime.h>
#include <omp.h>

#include <cstdio>
#include <vector>

#include "corpus_check.h"

namespace {

__global__ void Affine(const float* in, float* out, int n, float a, float b) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = a * in[i] + b;
}

__global__ void AddTo(float* acc, const float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) acc[i] += x[i];
}

struct Outcome {
  int tasks = 0;
  int wrong = 0;
  int attach_rc = -1;
};

}  // namespace

int main() {
  corpus::ProgramName() = "openmp_streams";
  CORPUS_CHECK(cudaSetDevice(0));
  CORPUS_CHECK(cudaFree(nullptr));
  constexpr int kThreads = 8;
  constexpr int kTasksPerThread = 6;
  std::vector<Outcome> outcomes(kThreads);

#pragma omp parallel num_threads(kThreads)
  {
    const int t = omp_get_thread_num();
    Outcome& o = outcomes[t];
    CORPUS_CHECK(cudaSetDevice(0));
    cudaStream_t stream;
    CORPUS_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    for (int task = 0; task < kTasksPerThread; ++task) {
      const int n = (1 << 16) + 1000 * t + 37 * task;
      const float a = 1.0f + t, b = static_cast<float>(task);
      float* host = nullptr;
      CORPUS_CHECK(cudaMallocHost(&host, n * sizeof(float)));
      for (int i = 0; i < n; ++i) host[i] = static_cast<float>(i % 113);
      float* in = nullptr;
      float* out = nullptr;
      CORPUS_CHECK(cudaMalloc(&in, n * sizeof(float)));
      CORPUS_CHECK(cudaMallocAsync(&out, n * sizeof(float), stream));
      CORPUS_CHECK(cudaMemcpyAsync(in, host, n * sizeof(float),
                                   cudaMemcpyHostToDevice, stream));
      Affine<<<(n + 255) / 256, 256, 0, stream>>>(in, out, n, a, b);
      // Managed accumulator private to this thread's stream.
      float* acc = nullptr;
      CORPUS_CHECK(
          cudaMallocManaged(&acc, n * sizeof(float), cudaMemAttachHost));
      for (int i = 0; i < n; ++i) acc[i] = 1.0f;
      o.attach_rc = static_cast<int>(
          cudaStreamAttachMemAsync(stream, acc, 0, cudaMemAttachSingle));
      AddTo<<<(n + 255) / 256, 256, 0, stream>>>(acc, out, n);
      CORPUS_CHECK(cudaMemcpyAsync(host, out, n * sizeof(float),
                                   cudaMemcpyDeviceToHost, stream));
      CORPUS_CHECK(cudaFreeAsync(out, stream));
      CORPUS_CHECK(cudaStreamSynchronize(stream));
      for (int i = 0; i < n; ++i) {
        float want = a * static_cast<float>(i % 113) + b;
        if (host[i] != want || acc[i] != want + 1.0f) ++o.wrong;
      }
      ++o.tasks;
      CORPUS_CHECK(cudaFree(acc));
      CORPUS_CHECK(cudaFree(in));
      CORPUS_CHECK(cudaFreeHost(host));
    }
    CORPUS_CHECK(cudaStreamDestroy(stream));
  }

  for (int t = 0; t < kThreads; ++t) {
    std::printf(
        "thread %d: %d tasks, %d wrong, attach -> %d (%s)\n", t,
        outcomes[t].tasks, outcomes[t].wrong, outcomes[t].attach_rc,
        cudaGetErrorName(static_cast<cudaError_t>(outcomes[t].attach_rc)));
    corpus::Expect(
        outcomes[t].tasks == kTasksPerThread && outcomes[t].wrong == 0,
        "thread %d", t);
  }
  return corpus::Finish();
}
