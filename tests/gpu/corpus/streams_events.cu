// Streams and events as a pipelined application uses them: prioritized
// streams, cross-stream dependencies through events, host callbacks
// (cudaLaunchHostFunc and cudaStreamAddCallback), stream and event queries,
// timing events (elapsed times on masked "~ " lines), and four host threads
// that each work on the default stream and on cudaStreamPerThread.
//
// Built twice: as is (the legacy default stream) and as streams_events_ptds
// with --default-stream per-thread, where every runtime call goes through the
// _ptsz/_ptds entry points.
#include <cuda_runtime.h>

#include <atomic>
#include <cstdio>
#include <thread>
#include <vector>

#include "corpus_check.h"

namespace {

__global__ void Accumulate(int* acc, const int* x, int n, int times) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    for (int k = 0; k < times; ++k) acc[i] += x[i];
}

__global__ void SetTo(int* p, int n, int v) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] = v;
}

std::atomic<int> callbacks{0};
void CUDART_CB OnHost(void* data) {
  callbacks.fetch_add(*static_cast<int*>(data));
}
void CUDART_CB OnStream(cudaStream_t, cudaError_t status, void* data) {
  if (status == cudaSuccess) callbacks.fetch_add(*static_cast<int*>(data));
}

}  // namespace

int main() {
#ifdef CUDA_API_PER_THREAD_DEFAULT_STREAM
  corpus::ProgramName() = "streams_events_ptds";
  std::printf("default stream: per-thread\n");
#else
  corpus::ProgramName() = "streams_events";
  std::printf("default stream: legacy\n");
#endif
  CORPUS_CHECK(cudaSetDevice(0));
  int least = 0, greatest = 0;
  CORPUS_CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
  std::printf("priority range: least %d, greatest %d\n", least, greatest);
  cudaStream_t high, low;
  CORPUS_CHECK(
      cudaStreamCreateWithPriority(&high, cudaStreamNonBlocking, greatest));
  CORPUS_CHECK(
      cudaStreamCreateWithPriority(&low, cudaStreamNonBlocking, least));
  int prio = 0;
  unsigned flags = 0;
  CORPUS_CHECK(cudaStreamGetPriority(high, &prio));
  CORPUS_CHECK(cudaStreamGetFlags(high, &flags));
  std::printf("high stream: priority %d, flags %u\n", prio, flags);

  constexpr int kN = 1 << 20;
  int *x, *acc;
  CORPUS_CHECK(cudaMalloc(&x, kN * sizeof(int)));
  CORPUS_CHECK(cudaMalloc(&acc, kN * sizeof(int)));
  cudaEvent_t x_ready, start, stop;
  CORPUS_CHECK(cudaEventCreateWithFlags(&x_ready, cudaEventDisableTiming));
  CORPUS_CHECK(cudaEventCreate(&start));
  CORPUS_CHECK(cudaEventCreate(&stop));

  // low fills x, high waits for it and accumulates; timing around it.
  CORPUS_CHECK(cudaEventRecord(start, high));
  SetTo<<<kN / 256, 256, 0, low>>>(x, kN, 3);
  CORPUS_CHECK(cudaEventRecord(x_ready, low));
  SetTo<<<kN / 256, 256, 0, high>>>(acc, kN, 0);
  CORPUS_CHECK(cudaStreamWaitEvent(high, x_ready, 0));
  Accumulate<<<kN / 256, 256, 0, high>>>(acc, x, kN, 5);
  CORPUS_CHECK(cudaEventRecord(stop, high));
  int one = 1, ten = 10;
  CORPUS_CHECK(cudaLaunchHostFunc(high, OnHost, &one));
  CORPUS_CHECK(cudaStreamAddCallback(low, OnStream, &ten, 0));
  CORPUS_CHECK(cudaGetLastError());
  CORPUS_CHECK(cudaEventSynchronize(stop));
  CORPUS_CHECK(cudaStreamSynchronize(high));
  CORPUS_CHECK(cudaStreamSynchronize(low));
  float ms = 0;
  CORPUS_CHECK(cudaEventElapsedTime(&ms, start, stop));
  std::printf("~ fill + accumulate: %.3f ms\n", ms);
  std::printf("event query after sync: %s, stream query: %s\n",
              cudaGetErrorName(cudaEventQuery(stop)),
              cudaGetErrorName(cudaStreamQuery(high)));
  std::vector<int> host(kN);
  CORPUS_CHECK(
      cudaMemcpy(host.data(), acc, kN * sizeof(int), cudaMemcpyDeviceToHost));
  int wrong = 0;
  for (int v : host)
    if (v != 15) ++wrong;
  std::printf("cross-stream accumulate: %d wrong, callbacks %d\n", wrong,
              callbacks.load());
  corpus::Expect(wrong == 0 && callbacks.load() == 11, "cross-stream");

  // Four host threads, each on its own default stream (per-thread build) or
  // the shared legacy one, plus cudaStreamPerThread explicitly.
  std::vector<int> thread_wrong(4, -1);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([t, &thread_wrong] {
      CORPUS_CHECK(cudaSetDevice(0));
      const int n = 100000 + t;
      int* buf = nullptr;
      CORPUS_CHECK(cudaMalloc(&buf, n * sizeof(int)));
      SetTo<<<(n + 255) / 256, 256>>>(buf, n, t + 1);
      int* twice = nullptr;
      CORPUS_CHECK(
          cudaMallocAsync(&twice, n * sizeof(int), cudaStreamPerThread));
      // The default stream and cudaStreamPerThread are one stream only in
      // the per-thread build; order them explicitly.
      cudaEvent_t done;
      CORPUS_CHECK(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
      CORPUS_CHECK(cudaEventRecord(done, 0));
      CORPUS_CHECK(cudaStreamWaitEvent(cudaStreamPerThread, done, 0));
      CORPUS_CHECK(cudaMemcpyAsync(twice, buf, n * sizeof(int),
                                   cudaMemcpyDeviceToDevice,
                                   cudaStreamPerThread));
      Accumulate<<<(n + 255) / 256, 256, 0, cudaStreamPerThread>>>(twice, buf,
                                                                   n, 1);
      std::vector<int> out(n);
      CORPUS_CHECK(cudaMemcpyAsync(out.data(), twice, n * sizeof(int),
                                   cudaMemcpyDeviceToHost,
                                   cudaStreamPerThread));
      CORPUS_CHECK(cudaFreeAsync(twice, cudaStreamPerThread));
      CORPUS_CHECK(cudaStreamSynchronize(cudaStreamPerThread));
      int bad = 0;
      for (int v : out)
        if (v != 2 * (t + 1)) ++bad;
      thread_wrong[t] = bad;
      CORPUS_CHECK(cudaEventDestroy(done));
      CORPUS_CHECK(cudaFree(buf));
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < 4; ++t) {
    std::printf("thread %d: %d wrong\n", t, thread_wrong[t]);
    corpus::Expect(thread_wrong[t] == 0, "thread %d", t);
  }

  CORPUS_CHECK(cudaEventDestroy(x_ready));
  CORPUS_CHECK(cudaEventDestroy(start));
  CORPUS_CHECK(cudaEventDestroy(stop));
  CORPUS_CHECK(cudaStreamDestroy(high));
  CORPUS_CHECK(cudaStreamDestroy(low));
  CORPUS_CHECK(cudaFree(acc));
  CORPUS_CHECK(cudaFree(x));
  return corpus::Finish();
}
