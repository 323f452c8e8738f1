// Peer and asynchronous copies, as a multi-GPU data-parallel program writes
// them (it runs on one GPU too, where the peer is the device itself):
// cudaDeviceCanAccessPeer, cudaMemcpyPeer/cudaMemcpyPeerAsync, the driver's
// cuMemcpyPeer, cudaMemcpyAsync with cudaMemcpyDefault between device,
// pinned and managed memory, a pipeline of copies and kernels across three
// streams ordered with events, and interior (offset) copies.
#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <vector>

#include "corpus_check.h"

namespace {

__global__ void AddOne(int* p, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] += 1;
}

}  // namespace

int main() {
  corpus::ProgramName() = "memcpy_peer_async";
  int devices = 0;
  CORPUS_CHECK(cudaGetDeviceCount(&devices));
  const int peer = devices > 1 ? 1 : 0;
  std::printf("peer device: %s\n", peer == 0 ? "the same device" : "device 1");
  int can = -1;
  corpus::Rc("cudaDeviceCanAccessPeer(0, peer)",
             cudaDeviceCanAccessPeer(&can, 0, peer));
  std::printf("can access peer: %d\n", can);
  if (peer != 0 && can) {
    CORPUS_CHECK(cudaSetDevice(0));
    corpus::Rc("cudaDeviceEnablePeerAccess",
               cudaDeviceEnablePeerAccess(peer, 0));
  }

  constexpr int kN = 1 << 20;
  CORPUS_CHECK(cudaSetDevice(0));
  int* src = nullptr;
  CORPUS_CHECK(cudaMalloc(&src, kN * sizeof(int)));
  CORPUS_CHECK(cudaSetDevice(peer));
  int* dst = nullptr;
  CORPUS_CHECK(cudaMalloc(&dst, kN * sizeof(int)));
  CORPUS_CHECK(cudaSetDevice(0));
  std::vector<int> host(kN);
  for (int i = 0; i < kN; ++i) host[i] = i * 3;
  CORPUS_CHECK(
      cudaMemcpy(src, host.data(), kN * sizeof(int), cudaMemcpyHostToDevice));
  corpus::Rc("cudaMemcpyPeer",
             cudaMemcpyPeer(dst, peer, src, 0, kN * sizeof(int)));
  std::vector<int> back(kN);
  CORPUS_CHECK(
      cudaMemcpy(back.data(), dst, kN * sizeof(int), cudaMemcpyDefault));
  corpus::Expect(back == host, "peer copy");

  cudaStream_t s[3];
  for (auto& st : s)
    CORPUS_CHECK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  corpus::Rc("cudaMemcpyPeerAsync (second half)",
             cudaMemcpyPeerAsync(dst + kN / 2, peer, src, 0,
                                 kN / 2 * sizeof(int), s[0]));
  CORPUS_CHECK(cudaStreamSynchronize(s[0]));
  CORPUS_CHECK(
      cudaMemcpy(back.data(), dst, kN * sizeof(int), cudaMemcpyDeviceToHost));
  int wrong = 0;
  for (int i = 0; i < kN; ++i)
    if (back[i] != (i < kN / 2 ? i * 3 : (i - kN / 2) * 3)) ++wrong;
  std::printf("peer copies: %d wrong\n", wrong);
  corpus::Expect(wrong == 0, "peer async");

  CORPUS_CHECK(cuInit(0));
  CUcontext ctx0 = nullptr, ctx_peer = nullptr;
  CORPUS_CHECK(cuCtxGetCurrent(&ctx0));
  CORPUS_CHECK(cudaSetDevice(peer));
  CORPUS_CHECK(cudaFree(nullptr));
  CORPUS_CHECK(cuCtxGetCurrent(&ctx_peer));
  CORPUS_CHECK(cudaSetDevice(0));
  corpus::Rc("cuMemcpyPeer (one interior block)",
             cuMemcpyPeer(reinterpret_cast<CUdeviceptr>(dst + 1000), ctx_peer,
                          reinterpret_cast<CUdeviceptr>(src + 5000), ctx0,
                          64 * sizeof(int)));
  int probe[64];
  CORPUS_CHECK(
      cudaMemcpy(probe, dst + 1000, sizeof probe, cudaMemcpyDeviceToHost));
  corpus::Expect(probe[0] == 5000 * 3 && probe[63] == 5063 * 3,
                 "cuMemcpyPeer interior: %d %d", probe[0], probe[63]);

  // Pipeline: stage H2D on s0, kernel on s1, D2H on s2, event-ordered.
  int* pinned = nullptr;
  CORPUS_CHECK(cudaMallocHost(&pinned, kN * sizeof(int)));
  int* managed = nullptr;
  CORPUS_CHECK(cudaMallocManaged(&managed, kN * sizeof(int)));
  for (int i = 0; i < kN; ++i) pinned[i] = i;
  cudaEvent_t staged, computed;
  CORPUS_CHECK(cudaEventCreateWithFlags(&staged, cudaEventDisableTiming));
  CORPUS_CHECK(cudaEventCreateWithFlags(&computed, cudaEventDisableTiming));
  constexpr int kParts = 4;
  const int part = kN / kParts;
  for (int p = 0; p < kParts; ++p) {
    CORPUS_CHECK(cudaMemcpyAsync(src + p * part, pinned + p * part,
                                 part * sizeof(int), cudaMemcpyDefault, s[0]));
    CORPUS_CHECK(cudaEventRecord(staged, s[0]));
    CORPUS_CHECK(cudaStreamWaitEvent(s[1], staged, 0));
    AddOne<<<part / 256, 256, 0, s[1]>>>(src + p * part, part);
    CORPUS_CHECK(cudaEventRecord(computed, s[1]));
    CORPUS_CHECK(cudaStreamWaitEvent(s[2], computed, 0));
    CORPUS_CHECK(cudaMemcpyAsync(managed + p * part, src + p * part,
                                 part * sizeof(int), cudaMemcpyDefault, s[2]));
  }
  CORPUS_CHECK(cudaGetLastError());
  CORPUS_CHECK(cudaStreamSynchronize(s[2]));
  wrong = 0;
  for (int i = 0; i < kN; ++i)
    if (managed[i] != i + 1) ++wrong;
  std::printf("3-stream pipeline into managed memory: %d wrong\n", wrong);
  corpus::Expect(wrong == 0, "pipeline");
  cudaError_t q = cudaStreamQuery(s[2]);
  std::printf("stream query after sync: %s\n", cudaGetErrorName(q));

  CORPUS_CHECK(cudaEventDestroy(staged));
  CORPUS_CHECK(cudaEventDestroy(computed));
  for (auto& st : s) CORPUS_CHECK(cudaStreamDestroy(st));
  CORPUS_CHECK(cudaFree(managed));
  CORPUS_CHECK(cudaFreeHost(pinned));
  CORPUS_CHECK(cudaSetDevice(peer));
  CORPUS_CHECK(cudaFree(dst));
  CORPUS_CHECK(cudaSetDevice(0));
  CORPUS_CHECK(cudaFree(src));
  return corpus::Finish();
}
