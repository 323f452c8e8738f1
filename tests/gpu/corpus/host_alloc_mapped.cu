// Pinned host memory from CUDA's allocators, as a streaming application uses
// it: cudaHostAlloc mapped (zero-copy output written by a kernel), portable +
// write-combined input, plain cudaMallocHost staging for overlapped copies, the
// flags of each read back, and the driver's cuMemHostAlloc / cuMemAllocHost
// with their device pointers.
#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdio>

#include "corpus_check.h"

namespace {

// Reads its input from mapped host memory; bins in device memory.
__global__ void Histogram(const unsigned char* in, int n, unsigned* bins) {
  __shared__ unsigned local[16];
  if (threadIdx.x < 16) local[threadIdx.x] = 0;
  __syncthreads();
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) atomicAdd(&local[in[i] & 15], 1u);
  __syncthreads();
  if (threadIdx.x < 16) atomicAdd(&bins[threadIdx.x], local[threadIdx.x]);
}

// Writes the result straight into mapped host memory.
__global__ void Publish(const unsigned* bins, unsigned* host_bins) {
  if (threadIdx.x < 16) host_bins[threadIdx.x] = bins[threadIdx.x];
}

__global__ void Double(const float* in, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = 2.0f * in[i];
}

}  // namespace

int main() {
  corpus::ProgramName() = "host_alloc_mapped";
  CORPUS_CHECK(cudaSetDeviceFlags(cudaDeviceMapHost));
  CORPUS_CHECK(cudaSetDevice(0));
  int can_map = 0;
  CORPUS_CHECK(
      cudaDeviceGetAttribute(&can_map, cudaDevAttrCanMapHostMemory, 0));
  std::printf("can map host memory: %d\n", can_map);

  constexpr int kN = 1 << 22;
  unsigned char* input = nullptr;
  corpus::Rc("cudaHostAlloc portable|write-combined|mapped",
             cudaHostAlloc(reinterpret_cast<void**>(&input), kN,
                           cudaHostAllocPortable | cudaHostAllocWriteCombined |
                               cudaHostAllocMapped));
  unsigned* bins = nullptr;
  corpus::Rc("cudaHostAlloc mapped",
             cudaHostAlloc(reinterpret_cast<void**>(&bins),
                           16 * sizeof(unsigned), cudaHostAllocMapped));
  for (int i = 0; i < kN; ++i) input[i] = static_cast<unsigned char>(i * 7);
  for (int b = 0; b < 16; ++b) bins[b] = 0;
  unsigned flags = 0;
  CORPUS_CHECK(cudaHostGetFlags(&flags, input));
  std::printf("input flags %u\n", flags);
  CORPUS_CHECK(cudaHostGetFlags(&flags, bins));
  std::printf("bins flags %u\n", flags);
  unsigned char* d_input = nullptr;
  unsigned* d_bins = nullptr;
  CORPUS_CHECK(
      cudaHostGetDevicePointer(reinterpret_cast<void**>(&d_input), input, 0));
  CORPUS_CHECK(
      cudaHostGetDevicePointer(reinterpret_cast<void**>(&d_bins), bins, 0));
  unsigned* dev_bins = nullptr;
  CORPUS_CHECK(cudaMalloc(&dev_bins, 16 * sizeof(unsigned)));
  CORPUS_CHECK(cudaMemset(dev_bins, 0, 16 * sizeof(unsigned)));
  Histogram<<<kN / 256, 256>>>(d_input, kN, dev_bins);
  Publish<<<1, 32>>>(dev_bins, d_bins);
  CORPUS_CHECK(cudaGetLastError());
  CORPUS_CHECK(cudaDeviceSynchronize());
  unsigned want[16] = {0};
  for (int i = 0; i < kN; ++i) ++want[static_cast<unsigned char>(i * 7) & 15];
  int wrong = 0;
  for (int b = 0; b < 16; ++b)
    if (bins[b] != want[b]) ++wrong;
  std::printf("zero-copy histogram: %d wrong bins (bin 0: %u)\n", wrong,
              bins[0]);
  corpus::Expect(wrong == 0, "histogram");

  // Staging buffers and overlapped copies on two streams.
  constexpr int kChunk = 1 << 20;
  float* stage = nullptr;
  corpus::Rc("cudaMallocHost 2 chunks",
             cudaMallocHost(reinterpret_cast<void**>(&stage),
                            2 * kChunk * sizeof(float)));
  CORPUS_CHECK(cudaHostGetFlags(&flags, stage));
  std::printf("staging flags %u\n", flags);
  for (int i = 0; i < 2 * kChunk; ++i) stage[i] = static_cast<float>(i % 333);
  float *d_in = nullptr, *d_out = nullptr;
  CORPUS_CHECK(cudaMalloc(&d_in, 2 * kChunk * sizeof(float)));
  CORPUS_CHECK(cudaMalloc(&d_out, 2 * kChunk * sizeof(float)));
  cudaStream_t s[2];
  for (int k = 0; k < 2; ++k) {
    CORPUS_CHECK(cudaStreamCreateWithFlags(&s[k], cudaStreamNonBlocking));
    CORPUS_CHECK(cudaMemcpyAsync(d_in + k * kChunk, stage + k * kChunk,
                                 kChunk * sizeof(float), cudaMemcpyHostToDevice,
                                 s[k]));
    Double<<<kChunk / 256, 256, 0, s[k]>>>(d_in + k * kChunk,
                                           d_out + k * kChunk, kChunk);
    CORPUS_CHECK(cudaMemcpyAsync(stage + k * kChunk, d_out + k * kChunk,
                                 kChunk * sizeof(float), cudaMemcpyDeviceToHost,
                                 s[k]));
  }
  for (int k = 0; k < 2; ++k) CORPUS_CHECK(cudaStreamSynchronize(s[k]));
  wrong = 0;
  for (int i = 0; i < 2 * kChunk; ++i)
    if (stage[i] != 2.0f * static_cast<float>(i % 333)) ++wrong;
  std::printf("overlapped staging: %d wrong\n", wrong);
  corpus::Expect(wrong == 0, "staging");

  // The driver's pinned allocations.
  CORPUS_CHECK(cuInit(0));
  void* drv_mapped = nullptr;
  corpus::Rc("cuMemHostAlloc devicemap",
             cuMemHostAlloc(&drv_mapped, 65536, CU_MEMHOSTALLOC_DEVICEMAP));
  CUdeviceptr drv_dev = 0;
  corpus::Rc("cuMemHostGetDevicePointer",
             cuMemHostGetDevicePointer(&drv_dev, drv_mapped, 0));
  unsigned drv_flags = 0;
  corpus::Rc("cuMemHostGetFlags", cuMemHostGetFlags(&drv_flags, drv_mapped));
  std::printf(
      "driver mapped flags %u, alias equals host pointer: %s\n", drv_flags,
      drv_dev == reinterpret_cast<CUdeviceptr>(drv_mapped) ? "yes" : "no");
  CORPUS_CHECK(cuMemsetD32(drv_dev, 0x01020304u, 65536 / 4));
  CORPUS_CHECK(cuCtxSynchronize());
  unsigned first = static_cast<unsigned*>(drv_mapped)[0];
  unsigned last = static_cast<unsigned*>(drv_mapped)[65536 / 4 - 1];
  std::printf("cuMemsetD32 through the alias: %08x %08x\n", first, last);
  corpus::Expect(first == 0x01020304u && last == 0x01020304u, "driver memset");
  void* drv_plain = nullptr;
  corpus::Rc("cuMemAllocHost", cuMemAllocHost(&drv_plain, 12345));
  corpus::Rc("cuMemFreeHost plain", cuMemFreeHost(drv_plain));
  corpus::Rc("cuMemFreeHost mapped", cuMemFreeHost(drv_mapped));

  for (int k = 0; k < 2; ++k) CORPUS_CHECK(cudaStreamDestroy(s[k]));
  CORPUS_CHECK(cudaFree(dev_bins));
  CORPUS_CHECK(cudaFree(d_out));
  CORPUS_CHECK(cudaFree(d_in));
  CORPUS_CHECK(cudaFreeHost(stage));
  CORPUS_CHECK(cudaFreeHost(bins));
  CORPUS_CHECK(cudaFreeHost(input));
  return corpus::Finish();
}
