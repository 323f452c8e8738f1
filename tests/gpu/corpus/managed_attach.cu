// Managed memory attached to streams, the way a multi-stream program that
// keeps one task's buffers private to its stream does it (cf. the CUDA
// programming guide, "Managing data visibility and concurrent CPU + GPU
// access with streams"): cudaStreamAttachMemAsync with length 0 (the whole
// allocation) and with explicit lengths, on global and host-attached
// allocations, through the runtime and the driver.
#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdlib>
#include <vector>

#include "corpus_check.h"

namespace {

__global__ void Scale(float* data, int n, float factor) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] = data[i] * factor + 1.0f;
}

bool CheckScaled(const float* data, int n, float factor, const char* what) {
  int wrong = 0;
  for (int i = 0; i < n; ++i) {
    float want = static_cast<float>(i % 97) * factor + 1.0f;
    if (data[i] != want) ++wrong;
  }
  std::printf("%s: %d/%d values right\n", what, n - wrong, n);
  return corpus::Expect(wrong == 0, "%s: %d wrong values", what, wrong);
}

void Fill(float* data, int n) {
  for (int i = 0; i < n; ++i) data[i] = static_cast<float>(i % 97);
}

}  // namespace

int main() {
  corpus::ProgramName() = "managed_attach";
  constexpr int kN = 1 << 20;
  constexpr size_t kBytes = kN * sizeof(float);
  CORPUS_CHECK(cudaSetDevice(0));
  int concurrent = 0;
  CORPUS_CHECK(cudaDeviceGetAttribute(&concurrent,
                                      cudaDevAttrConcurrentManagedAccess, 0));
  std::printf("concurrentManagedAccess %d\n", concurrent);

  cudaStream_t stream;
  CORPUS_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));

  // A global allocation handed to one stream: length 0 is the documented
  // way to say "the whole allocation".
  float* global = nullptr;
  CORPUS_CHECK(cudaMallocManaged(&global, kBytes));
  Fill(global, kN);
  corpus::Rc("attach global, length 0, single",
             cudaStreamAttachMemAsync(stream, global, 0, cudaMemAttachSingle));
  CORPUS_CHECK(cudaStreamSynchronize(stream));
  Scale<<<(kN + 255) / 256, 256, 0, stream>>>(global, kN, 2.0f);
  CORPUS_CHECK(cudaGetLastError());
  CORPUS_CHECK(cudaStreamSynchronize(stream));
  CheckScaled(global, kN, 2.0f, "global after stream kernel");

  // The same with the allocation's exact size.
  Fill(global, kN);
  corpus::Rc(
      "attach global, full length, single",
      cudaStreamAttachMemAsync(stream, global, kBytes, cudaMemAttachSingle));
  Scale<<<(kN + 255) / 256, 256, 0, stream>>>(global, kN, 3.0f);
  CORPUS_CHECK(cudaGetLastError());
  CORPUS_CHECK(cudaStreamSynchronize(stream));
  CheckScaled(global, kN, 3.0f, "global after full-length attach");

  // Lengths that are neither 0 nor the allocation's size, and a pointer
  // inside the allocation: what CUDA answers is part of the result.
  corpus::Rc("attach global, half length",
             cudaStreamAttachMemAsync(stream, global, kBytes / 2,
                                      cudaMemAttachSingle));
  corpus::Rc("  cudaGetLastError", cudaGetLastError());
  corpus::Rc("attach global, length past the end",
             cudaStreamAttachMemAsync(stream, global, kBytes + 4096,
                                      cudaMemAttachSingle));
  corpus::Rc("  cudaGetLastError", cudaGetLastError());
  corpus::Rc(
      "attach interior pointer, length 0",
      cudaStreamAttachMemAsync(stream, global + 64, 0, cudaMemAttachSingle));
  corpus::Rc("  cudaGetLastError", cudaGetLastError());
  CORPUS_CHECK(cudaStreamSynchronize(stream));

  // Back to global visibility, then host-only, then global again.
  corpus::Rc("attach global, length 0, global",
             cudaStreamAttachMemAsync(stream, global, 0, cudaMemAttachGlobal));
  corpus::Rc("attach global, length 0, host",
             cudaStreamAttachMemAsync(stream, global, 0, cudaMemAttachHost));
  CORPUS_CHECK(cudaStreamSynchronize(stream));
  Fill(global, kN);  // host-attached: the CPU may touch it any time
  corpus::Rc("attach global, length 0, global again",
             cudaStreamAttachMemAsync(stream, global, 0, cudaMemAttachGlobal));
  CORPUS_CHECK(cudaStreamSynchronize(stream));
  Scale<<<(kN + 255) / 256, 256>>>(global, kN, 4.0f);
  CORPUS_CHECK(cudaGetLastError());
  CORPUS_CHECK(cudaDeviceSynchronize());
  CheckScaled(global, kN, 4.0f, "global after re-attach");

  // An allocation born host-attached, later given to the stream.
  float* host_first = nullptr;
  CORPUS_CHECK(cudaMallocManaged(&host_first, kBytes, cudaMemAttachHost));
  Fill(host_first, kN);
  corpus::Rc(
      "attach host-born, length 0, single",
      cudaStreamAttachMemAsync(stream, host_first, 0, cudaMemAttachSingle));
  Scale<<<(kN + 255) / 256, 256, 0, stream>>>(host_first, kN, 5.0f);
  CORPUS_CHECK(cudaGetLastError());
  CORPUS_CHECK(cudaStreamSynchronize(stream));
  CheckScaled(host_first, kN, 5.0f, "host-born after stream kernel");

  // A small odd-sized allocation: its exact size and a rounded-up size.
  char* odd = nullptr;
  CORPUS_CHECK(cudaMallocManaged(&odd, 1000));
  corpus::Rc("attach 1000-byte block, length 1000",
             cudaStreamAttachMemAsync(stream, odd, 1000, cudaMemAttachSingle));
  corpus::Rc("attach 1000-byte block, length 4096",
             cudaStreamAttachMemAsync(stream, odd, 4096, cudaMemAttachSingle));
  corpus::Rc("  cudaGetLastError", cudaGetLastError());
  corpus::Rc("attach 1000-byte block, length 0",
             cudaStreamAttachMemAsync(stream, odd, 0, cudaMemAttachSingle));
  CORPUS_CHECK(cudaStreamSynchronize(stream));

  // Device memory is not managed.
  void* device = nullptr;
  CORPUS_CHECK(cudaMalloc(&device, 4096));
  corpus::Rc("attach cudaMalloc memory",
             cudaStreamAttachMemAsync(stream, device, 0, cudaMemAttachSingle));
  corpus::Rc("  cudaGetLastError", cudaGetLastError());

  // The driver's entry point, on the runtime's stream.
  CORPUS_CHECK(cuInit(0));
  corpus::Rc("cuStreamAttachMemAsync length 0",
             cuStreamAttachMemAsync(reinterpret_cast<CUstream>(stream),
                                    reinterpret_cast<CUdeviceptr>(global), 0,
                                    CU_MEM_ATTACH_SINGLE));
  corpus::Rc("cuStreamAttachMemAsync full length",
             cuStreamAttachMemAsync(reinterpret_cast<CUstream>(stream),
                                    reinterpret_cast<CUdeviceptr>(global),
                                    kBytes, CU_MEM_ATTACH_GLOBAL));
  CORPUS_CHECK(cudaStreamSynchronize(stream));

  CORPUS_CHECK(cudaFree(device));
  CORPUS_CHECK(cudaFree(odd));
  CORPUS_CHECK(cudaFree(host_first));
  CORPUS_CHECK(cudaFree(global));
  CORPUS_CHECK(cudaStreamDestroy(stream));
  return corpus::Finish();
}
