// Legacy CUDA IPC between two processes, the way MPI libraries and NCCL's
// fallback path share a sub-buffer: the exporter finds the base of the
// allocation that holds a buffer (cuMemGetAddressRange), exports the base
// with cudaIpcGetMemHandle and sends the handle plus the buffer's offset;
// an interprocess event (cudaIpcGetEventHandle) orders the importer's work
// after the exporter's. The importer opens the handle, adds the offset,
// checks and rewrites the buffer, records the event and closes the handle.
#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <vector>

#include "corpus_check.h"
#include "corpus_ipc.h"

namespace {

constexpr size_t kArenaBytes = size_t{8} << 20;
constexpr size_t kOffset = (size_t{3} << 20) + 4096;  // the shared buffer
constexpr size_t kWords = (size_t{1} << 20) / sizeof(unsigned);

__global__ void Pattern(unsigned* p, size_t n, unsigned salt) {
  size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x;
  if (i < n) p[i] = static_cast<unsigned>(i) * 40503u + salt;
}

__global__ void CheckAndRewrite(unsigned* p, size_t n, unsigned salt,
                                unsigned new_salt, unsigned long long* wrong) {
  size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x;
  if (i < n) {
    if (p[i] != static_cast<unsigned>(i) * 40503u + salt)
      atomicAdd(wrong, 1ull);
    p[i] = static_cast<unsigned>(i) * 40503u + new_salt;
  }
}

struct Message {
  cudaIpcMemHandle_t mem;
  cudaIpcEventHandle_t event;
  uint64_t offset;
  uint64_t range_size;
};

int Child(const corpus::Channel& ch) {
  corpus::ProgramName() = "ipc_legacy child";
  Message msg{};
  corpus::Receive(ch, &msg, sizeof msg);
  CORPUS_CHECK(cudaSetDevice(0));
  CORPUS_CHECK(cuInit(0));
  int status = 1;
  void* base = nullptr;
  cudaError_t rc = corpus::Rc(
      "child: cudaIpcOpenMemHandle",
      cudaIpcOpenMemHandle(&base, msg.mem, cudaIpcMemLazyEnablePeerAccess));
  cudaEvent_t done;
  corpus::Rc("child: cudaIpcOpenEventHandle",
             cudaIpcOpenEventHandle(&done, msg.event));
  if (rc == cudaSuccess) {
    CUdeviceptr range_base = 0;
    size_t range_size = 0;
    corpus::Rc(
        "child: cuMemGetAddressRange of the mapping",
        cuMemGetAddressRange(&range_base, &range_size,
                             reinterpret_cast<CUdeviceptr>(base) + msg.offset));
    std::printf(
        "child: mapping starts at the base: %s, same size as the "
        "exporter's range: %s\n",
        range_base == reinterpret_cast<CUdeviceptr>(base) ? "yes" : "no",
        range_size == msg.range_size ? "yes" : "no");
    cudaPointerAttributes attr{};
    corpus::Rc("child: cudaPointerGetAttributes",
               cudaPointerGetAttributes(&attr, base));
    std::printf("child: type %d\n", static_cast<int>(attr.type));
    unsigned* buf =
        reinterpret_cast<unsigned*>(static_cast<char*>(base) + msg.offset);
    unsigned long long* wrong = nullptr;
    CORPUS_CHECK(cudaMalloc(&wrong, sizeof *wrong));
    CORPUS_CHECK(cudaMemset(wrong, 0, sizeof *wrong));
    CheckAndRewrite<<<static_cast<unsigned>((kWords + 255) / 256), 256>>>(
        buf, kWords, 17u, 99u, wrong);
    CORPUS_CHECK(cudaGetLastError());
    CORPUS_CHECK(cudaEventRecord(done, 0));
    unsigned long long host_wrong = 1234;
    CORPUS_CHECK(cudaMemcpy(&host_wrong, wrong, sizeof host_wrong,
                            cudaMemcpyDeviceToHost));
    std::printf("child: %llu wrong words in the shared buffer\n", host_wrong);
    corpus::Expect(host_wrong == 0, "child: wrong data");
    CORPUS_CHECK(cudaFree(wrong));
    CORPUS_CHECK(cudaDeviceSynchronize());
    corpus::Rc("child: cudaIpcCloseMemHandle", cudaIpcCloseMemHandle(base));
    status = corpus::Failures() == 0 ? 0 : 1;
  }
  CORPUS_CHECK(cudaEventDestroy(done));
  int code = corpus::Finish();
  corpus::Send(ch, &status, sizeof status);
  return code;
}

}  // namespace

int main() {
  corpus::ProgramName() = "ipc_legacy";
  corpus::Channel parent_end, child_end;
  pid_t child = 0;
  if (corpus::ForkWithChannel(&parent_end, &child_end, &child))
    return Child(child_end);

  CORPUS_CHECK(cudaSetDevice(0));
  CORPUS_CHECK(cuInit(0));
  // One arena, sub-buffers handed out from it (a caching allocator's slab).
  char* arena = nullptr;
  CORPUS_CHECK(cudaMalloc(&arena, kArenaBytes));
  unsigned* shared = reinterpret_cast<unsigned*>(arena + kOffset);
  Pattern<<<static_cast<unsigned>((kWords + 255) / 256), 256>>>(shared, kWords,
                                                                17u);
  CORPUS_CHECK(cudaGetLastError());
  CORPUS_CHECK(cudaDeviceSynchronize());

  CUdeviceptr base = 0;
  size_t range = 0;
  corpus::Rc("cuMemGetAddressRange of the buffer",
             cuMemGetAddressRange(&base, &range,
                                  reinterpret_cast<CUdeviceptr>(shared)));
  std::printf("buffer offset in its allocation: %llu, allocation size %zu\n",
              static_cast<unsigned long long>(
                  reinterpret_cast<CUdeviceptr>(shared) - base),
              range);
  Message msg{};
  msg.offset = reinterpret_cast<CUdeviceptr>(shared) - base;
  msg.range_size = range;
  corpus::Rc("cudaIpcGetMemHandle of the base",
             cudaIpcGetMemHandle(&msg.mem, reinterpret_cast<void*>(base)));
  // The handle of an interior pointer names the same allocation.
  cudaIpcMemHandle_t interior{};
  corpus::Rc("cudaIpcGetMemHandle of the buffer",
             cudaIpcGetMemHandle(&interior, shared));
  cudaEvent_t done;
  CORPUS_CHECK(cudaEventCreateWithFlags(
      &done, cudaEventDisableTiming | cudaEventInterprocess));
  corpus::Rc("cudaIpcGetEventHandle", cudaIpcGetEventHandle(&msg.event, done));

  corpus::Send(parent_end, &msg, sizeof msg);
  int status = -1;
  corpus::Receive(parent_end, &status, sizeof status);
  int child_code = corpus::WaitChild(child);
  std::printf("child replied %d, exited %d\n", status, child_code);
  corpus::Expect(status == 0 && child_code == 0, "the child failed");

  CORPUS_CHECK(cudaEventSynchronize(done));
  std::vector<unsigned> host(kWords);
  CORPUS_CHECK(cudaMemcpy(host.data(), shared, kWords * sizeof(unsigned),
                          cudaMemcpyDeviceToHost));
  size_t wrong = 0;
  for (size_t i = 0; i < kWords; ++i)
    if (host[i] != static_cast<unsigned>(i) * 40503u + 99u) ++wrong;
  std::printf("exporter sees the child's words: %zu/%zu\n", kWords - wrong,
              kWords);
  corpus::Expect(wrong == 0, "the child's writes are lost");
  CORPUS_CHECK(cudaEventDestroy(done));
  CORPUS_CHECK(cudaFree(arena));
  return corpus::Finish();
}
