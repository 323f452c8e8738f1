// Stream-ordered allocation from the device's default pool, as an inference
// server does it: cudaMallocAsync/cudaFreeAsync on several streams, a release
// threshold so freed memory stays cached, the pool's usage attributes
// printed after each phase (what a memory monitor logs), high-water marks
// reset, and the pool trimmed at the end.
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "corpus_check.h"

namespace {

__global__ void Iota(int* out, int n, int base) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = base + i;
}

__global__ void AddInto(int* acc, const int* in, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) acc[i] += in[i];
}

// Prints the attributes named in `stable` ("used", "reserved", ...) on one
// line; the others, which depend on how the streams interleaved (how much the
// pool had to reserve), on a "~ " line that the runner masks.
void PrintPool(const char* when, cudaMemPool_t pool, const char* stable) {
  struct {
    cudaMemPoolAttr attr;
    const char* name;
  } const kAttrs[] = {
      {cudaMemPoolAttrReleaseThreshold, "release-threshold"},
      {cudaMemPoolAttrReservedMemCurrent, "reserved"},
      {cudaMemPoolAttrReservedMemHigh, "reserved-high"},
      {cudaMemPoolAttrUsedMemCurrent, "used"},
      {cudaMemPoolAttrUsedMemHigh, "used-high"},
  };
  for (int pass = 0; pass < 2; ++pass) {
    std::printf(pass == 0 ? "pool %s:" : "~ pool %s (timing-dependent):", when);
    for (const auto& a : kAttrs) {
      std::string key = std::string(" ") + a.name + " ";
      bool is_stable =
          (std::string(" ") + stable + " ").find(key) != std::string::npos;
      if (is_stable != (pass == 0)) continue;
      uint64_t value = 0;
      cudaError_t rc = cudaMemPoolGetAttribute(pool, a.attr, &value);
      if (rc == cudaSuccess) {
        std::printf(" %s=%llu", a.name, static_cast<unsigned long long>(value));
      } else {
        std::printf(" %s->%s", a.name, cudaGetErrorName(rc));
      }
    }
    std::printf("\n");
  }
}

}  // namespace

int main() {
  corpus::ProgramName() = "pool_async_basic";
  CORPUS_CHECK(cudaSetDevice(0));
  int supported = 0;
  CORPUS_CHECK(
      cudaDeviceGetAttribute(&supported, cudaDevAttrMemoryPoolsSupported, 0));
  std::printf("memory pools supported: %d\n", supported);

  cudaMemPool_t pool;
  CORPUS_CHECK(cudaDeviceGetDefaultMemPool(&pool, 0));
  cudaMemPool_t current;
  CORPUS_CHECK(cudaDeviceGetMemPool(&current, 0));
  std::printf("current pool is the default pool: %s\n",
              current == pool ? "yes" : "no");
  PrintPool("at start", pool,
            "release-threshold reserved reserved-high used used-high");

  uint64_t threshold = UINT64_MAX;
  corpus::Rc("set release threshold",
             cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold,
                                     &threshold));
  int reuse = 0;
  CORPUS_CHECK(cudaMemPoolGetAttribute(
      pool, cudaMemPoolReuseFollowEventDependencies, &reuse));
  std::printf("reuse follows event dependencies: %d\n", reuse);

  constexpr int kStreams = 4;
  constexpr int kRounds = 8;
  constexpr int kN = 1 << 18;  // 1 MiB of ints
  cudaStream_t streams[kStreams];
  int* acc[kStreams];
  for (int s = 0; s < kStreams; ++s) {
    CORPUS_CHECK(cudaStreamCreateWithFlags(&streams[s], cudaStreamNonBlocking));
    CORPUS_CHECK(cudaMallocAsync(reinterpret_cast<void**>(&acc[s]),
                                 kN * sizeof(int), streams[s]));
    CORPUS_CHECK(cudaMemsetAsync(acc[s], 0, kN * sizeof(int), streams[s]));
  }
  for (int r = 0; r < kRounds; ++r) {
    for (int s = 0; s < kStreams; ++s) {
      int* tmp = nullptr;
      // Sizes vary so the pool has to carve, reuse and grow.
      size_t n = kN / (1 + (r % 3));
      CORPUS_CHECK(cudaMallocAsync(reinterpret_cast<void**>(&tmp),
                                   kN * sizeof(int), streams[s]));
      Iota<<<(kN + 255) / 256, 256, 0, streams[s]>>>(tmp, kN, r);
      AddInto<<<(kN + 255) / 256, 256, 0, streams[s]>>>(acc[s], tmp, kN);
      CORPUS_CHECK(cudaGetLastError());
      CORPUS_CHECK(cudaFreeAsync(tmp, streams[s]));
      int* scratch = nullptr;
      CORPUS_CHECK(cudaMallocAsync(reinterpret_cast<void**>(&scratch),
                                   n * sizeof(int) + 100 * r, streams[s]));
      CORPUS_CHECK(cudaMemsetAsync(scratch, 0, n * sizeof(int), streams[s]));
      CORPUS_CHECK(cudaFreeAsync(scratch, streams[s]));
    }
  }
  for (int s = 0; s < kStreams; ++s)
    CORPUS_CHECK(cudaStreamSynchronize(streams[s]));
  PrintPool("after the rounds", pool, "release-threshold used");

  // sum over r of (r + i) = kRounds*i + kRounds*(kRounds-1)/2
  std::vector<int> host(kN);
  for (int s = 0; s < kStreams; ++s) {
    CORPUS_CHECK(cudaMemcpy(host.data(), acc[s], kN * sizeof(int),
                            cudaMemcpyDeviceToHost));
    int wrong = 0;
    for (int i = 0; i < kN; ++i)
      if (host[i] != kRounds * i + kRounds * (kRounds - 1) / 2) ++wrong;
    corpus::Expect(wrong == 0, "stream %d: %d wrong sums", s, wrong);
  }
  std::printf("sums checked on %d streams\n", kStreams);

  // One stream frees what another allocated, ordered by an event.
  cudaEvent_t ready;
  CORPUS_CHECK(cudaEventCreateWithFlags(&ready, cudaEventDisableTiming));
  int* shared = nullptr;
  CORPUS_CHECK(cudaMallocAsync(reinterpret_cast<void**>(&shared),
                               3 * kN * sizeof(int), streams[0]));
  Iota<<<(3 * kN + 255) / 256, 256, 0, streams[0]>>>(shared, 3 * kN, 7);
  CORPUS_CHECK(cudaEventRecord(ready, streams[0]));
  CORPUS_CHECK(cudaStreamWaitEvent(streams[1], ready, 0));
  CORPUS_CHECK(cudaMemcpyAsync(host.data(), shared + 2 * kN, kN * sizeof(int),
                               cudaMemcpyDeviceToHost, streams[1]));
  CORPUS_CHECK(cudaFreeAsync(shared, streams[1]));
  CORPUS_CHECK(cudaStreamSynchronize(streams[1]));
  corpus::Expect(host[0] == 7 + 2 * kN && host[kN - 1] == 7 + 3 * kN - 1,
                 "cross-stream read: %d %d", host[0], host[kN - 1]);

  for (int s = 0; s < kStreams; ++s)
    CORPUS_CHECK(cudaFreeAsync(acc[s], streams[s]));
  CORPUS_CHECK(cudaDeviceSynchronize());
  PrintPool("all freed", pool, "used");

  uint64_t zero = 0;
  corpus::Rc("reset used-high",
             cudaMemPoolSetAttribute(pool, cudaMemPoolAttrUsedMemHigh, &zero));
  corpus::Rc(
      "reset reserved-high",
      cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReservedMemHigh, &zero));
  corpus::Rc("trim to 0", cudaMemPoolTrimTo(pool, 0));
  PrintPool("trimmed", pool, "reserved used used-high");

  // cudaFree on stream-ordered memory is legal once the free is ordered.
  void* p = nullptr;
  CORPUS_CHECK(cudaMallocAsync(&p, 4096, streams[2]));
  CORPUS_CHECK(cudaStreamSynchronize(streams[2]));
  corpus::Rc("cudaFree of cudaMallocAsync memory", cudaFree(p));
  // Size 0 gives a null pointer and success.
  void* empty = nullptr;
  cudaError_t empty_rc = corpus::Rc("cudaMallocAsync 0 bytes",
                                    cudaMallocAsync(&empty, 0, streams[2]));
  std::printf("0-byte allocation is null: %s\n",
              empty == nullptr ? "yes" : "no");
  if (empty_rc == cudaSuccess && empty != nullptr)
    CORPUS_CHECK(cudaFreeAsync(empty, streams[2]));
  CORPUS_CHECK(cudaDeviceSynchronize());

  threshold = 0;
  corpus::Rc("release threshold back to 0",
             cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold,
                                     &threshold));
  CORPUS_CHECK(cudaEventDestroy(ready));
  for (int s = 0; s < kStreams; ++s)
    CORPUS_CHECK(cudaStreamDestroy(streams[s]));
  PrintPool("at end", pool, "release-threshold used");
  return corpus::Finish();
}
