// api_bounds: copies and sets whose range leaves the destination block, each
// from its own function, next to the same call exactly at the edge. CUDA
// rejects every bad call with cudaErrorInvalidValue / CUDA_ERROR_INVALID_VALUE
// (1) even when it goes a single byte too far; under the tool the range would
// end inside a redzone, so the tool must reject it itself, with the same code,
// and write nothing.
//
//   ApiBoundsMemcpyH2D       cudaMemcpy H2D, 65537 bytes into a 65536-byte
//                            block (offset 0, bytes 65537)
//   ApiBoundsMemset1D        cudaMemset at +1024 for 64528 bytes
//                            (offset 1024, bytes 64528: 16 past the end)
//   ApiBoundsMemcpyAsyncD2D  cudaMemcpyAsync D2D, 65536 bytes to dst + 256
//                            (destination block: offset 256, bytes 65536)
//   ApiBoundsDriverMemsetD8  cuMemsetD8 at +65436 for 200 bytes
//                            (offset 65436, bytes 200)
//   ApiBoundsMemset2D        cudaMemset2D of height + 1 rows of a pitched block
//                            (offset 0; the range passes pitch * height)
//
// Expected report: exactly five errors, all kind "api-bounds", one from each
// function above (in its stack), each with the offset (and, for the 1-D
// calls, the bytes) listed, cuda_result 1, and allocation {api, bytes} of the
// block the range leaves (ApiBoundsAllocateMain / ApiBoundsAllocateDst:
// cudaMalloc 65536; ApiBoundsAllocatePitched: cudaMallocPitch pitch * 8). The
// edge calls succeed (0) and are not reported; no oob-write either (the tool
// wrote nothing). Every return code is printed ("api_bounds: <call> -> <code>
// (<name>)") and must be the same with and without the tool; exit 0.
#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <vector>

#include "example_check.h"

constexpr size_t kBytes = 64 << 10;
constexpr size_t kWidth = 1000;
constexpr size_t kHeight = 8;

void PrintResult(const char* what, cudaError_t err) {
  std::printf("api_bounds: %s -> %d (%s)\n", what, static_cast<int>(err),
              cudaGetErrorName(err));
}

void PrintDriverResult(const char* what, CUresult res) {
  const char* name = nullptr;
  if (cuGetErrorName(res, &name) != CUDA_SUCCESS || name == nullptr) name = "?";
  std::printf("api_bounds: %s -> %d (%s)\n", what, static_cast<int>(res), name);
}

__attribute__((noinline)) void* ApiBoundsAllocateMain(size_t bytes) {
  void* p = nullptr;
  EXAMPLE_CHECK_CUDA(cudaMalloc(&p, bytes));
  return p;
}

__attribute__((noinline)) void* ApiBoundsAllocateDst(size_t bytes) {
  void* p = nullptr;
  EXAMPLE_CHECK_CUDA(cudaMalloc(&p, bytes));
  return p;
}

__attribute__((noinline)) void* ApiBoundsAllocatePitched(size_t* pitch) {
  void* p = nullptr;
  EXAMPLE_CHECK_CUDA(cudaMallocPitch(&p, pitch, kWidth, kHeight));
  return p;
}

__attribute__((noinline)) cudaError_t ApiBoundsMemcpyH2D(void* dst,
                                                         const void* src,
                                                         size_t bytes) {
  cudaError_t err = cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice);
  return err;
}

__attribute__((noinline)) cudaError_t ApiBoundsMemset1D(void* dst,
                                                        size_t bytes) {
  cudaError_t err = cudaMemset(dst, 0x3c, bytes);
  return err;
}

__attribute__((noinline)) cudaError_t ApiBoundsMemcpyAsyncD2D(
    void* dst, const void* src, size_t bytes, cudaStream_t stream) {
  cudaError_t err =
      cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream);
  return err;
}

__attribute__((noinline)) CUresult ApiBoundsDriverMemsetD8(void* dst,
                                                           size_t bytes) {
  CUresult res = cuMemsetD8(reinterpret_cast<CUdeviceptr>(dst), 0x11, bytes);
  return res;
}

__attribute__((noinline)) cudaError_t ApiBoundsMemset2D(void* dst, size_t pitch,
                                                        size_t height) {
  cudaError_t err = cudaMemset2D(dst, pitch, 0x5e, kWidth, height);
  return err;
}

int main() {
  auto* a = static_cast<unsigned char*>(ApiBoundsAllocateMain(kBytes));
  auto* b = static_cast<unsigned char*>(ApiBoundsAllocateDst(kBytes));
  size_t pitch = 0;
  auto* p = static_cast<unsigned char*>(ApiBoundsAllocatePitched(&pitch));
  std::vector<unsigned char> host(kBytes + 4096, 0x42);
  cudaStream_t stream;
  EXAMPLE_CHECK_CUDA(cudaStreamCreate(&stream));

  // The edges: exactly the block, all succeed.
  PrintResult("cudaMemcpy H2D exact",
              cudaMemcpy(a, host.data(), kBytes, cudaMemcpyHostToDevice));
  PrintResult("cudaMemset last byte", cudaMemset(a + kBytes - 1, 0x3c, 1));
  PrintResult("cudaMemcpyAsync D2D exact",
              cudaMemcpyAsync(b, a, kBytes, cudaMemcpyDeviceToDevice, stream));
  PrintDriverResult(
      "cuMemsetD8 to the end",
      cuMemsetD8(reinterpret_cast<CUdeviceptr>(a + kBytes - 100), 0x11, 100));
  PrintResult("cudaMemset2D exact",
              cudaMemset2D(p, pitch, 0x5e, kWidth, kHeight));
  PrintResult("cudaStreamSynchronize", cudaStreamSynchronize(stream));

  // Past the end.
  PrintResult("cudaMemcpy H2D past end",
              ApiBoundsMemcpyH2D(a, host.data(), kBytes + 1));
  PrintResult("cudaGetLastError", cudaGetLastError());
  PrintResult("cudaMemset past end",
              ApiBoundsMemset1D(a + 1024, kBytes - 1008));
  PrintResult("cudaGetLastError", cudaGetLastError());
  PrintResult("cudaMemcpyAsync D2D past end",
              ApiBoundsMemcpyAsyncD2D(b + 256, a, kBytes, stream));
  PrintResult("cudaGetLastError", cudaGetLastError());
  PrintDriverResult("cuMemsetD8 past end",
                    ApiBoundsDriverMemsetD8(a + kBytes - 100, 200));
  PrintResult("cudaMemset2D past last row",
              ApiBoundsMemset2D(p, pitch, kHeight + 1));
  PrintResult("cudaGetLastError", cudaGetLastError());
  PrintResult("cudaStreamSynchronize after", cudaStreamSynchronize(stream));
  PrintResult("cudaDeviceSynchronize", cudaDeviceSynchronize());

  // What the blocks hold: the edge calls' bytes only (a rejected call wrote
  // nothing), so the same with and without the tool.
  std::vector<unsigned char> h(kBytes);
  EXAMPLE_CHECK_CUDA(cudaMemcpy(h.data(), a, kBytes, cudaMemcpyDeviceToHost));
  unsigned long long sum_a = 0;
  for (unsigned char c : h) sum_a += c;
  EXAMPLE_CHECK_CUDA(cudaMemcpy(h.data(), b, kBytes, cudaMemcpyDeviceToHost));
  unsigned long long sum_b = 0;
  for (unsigned char c : h) sum_b += c;
  std::printf("api_bounds: pitch %zu, checksums %llu %llu\n", pitch, sum_a,
              sum_b);

  EXAMPLE_CHECK_CUDA(cudaStreamDestroy(stream));
  EXAMPLE_CHECK_CUDA(cudaFree(a));
  EXAMPLE_CHECK_CUDA(cudaFree(b));
  EXAMPLE_CHECK_CUDA(cudaFree(p));
  return 0;
}
