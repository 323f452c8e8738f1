// oob_pitched: a 2-D cudaMallocPitch buffer of 16 rows of 1000 bytes; the
// row kernel's grid has height + 1 rows (a `<=` in the row count), so it
// writes the first 1000 bytes of row 16, one row past the end.
//
// Expected report (guard=1): exactly one error, kind "oob-write", offset
// pitch * 16, bytes 1000 (first_offset pitch * 16, last_offset
// pitch * 16 + 999, changed_bytes 1000), allocation {api "cudaMallocPitch",
// bytes pitch * 16} with PitchedOobAllocate in its stack, kernels containing
// PitchedRowFlipKernel (check=kernel: exactly that one). The program prints
// the pitch CUDA chose (the GPU test reads it; it must be the same with the
// tool) and the in-bounds checksum; exit 0.
#include <cuda_runtime.h>

#include <cstdio>
#include <vector>

#include "example_check.h"
#include "guard_example.h"

constexpr size_t kWidth = 1000;
constexpr size_t kHeight = 16;

__global__ void PitchedFillKernel(unsigned char* p, size_t pitch, int width,
                                  int height) {
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  int y = blockIdx.y;
  if (x < width && y < height) {
    p[y * pitch + x] = static_cast<unsigned char>(x + 3 * y);
  }
}

// One block row per image row; the grid decides how many rows it touches.
__global__ void PitchedRowFlipKernel(volatile unsigned char* p, size_t pitch,
                                     int width) {
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  int y = blockIdx.y;
  if (x < width) {
    volatile unsigned char* q = p + y * pitch + x;
    *q = static_cast<unsigned char>(~*q);
  }
}

__attribute__((noinline)) unsigned char* PitchedOobAllocate(size_t* pitch) {
  void* p = nullptr;
  EXAMPLE_CHECK_CUDA(cudaMallocPitch(&p, pitch, kWidth, kHeight));
  return static_cast<unsigned char*>(p);
}

int main() {
  size_t pitch = 0;
  unsigned char* d = PitchedOobAllocate(&pitch);
  const size_t bytes = pitch * kHeight;
  dim3 block(256);
  dim3 grid((kWidth + 255) / 256, kHeight);
  PitchedFillKernel<<<grid, block>>>(d, pitch, kWidth, kHeight);
  dim3 bad_grid((kWidth + 255) / 256, kHeight + 1);  // the bug: one row more
  if (BadWriteStaysMapped(d, bytes, static_cast<long long>(bytes), kWidth,
                          kDevicePageBytes, "oob_pitched")) {
    PitchedRowFlipKernel<<<bad_grid, block>>>(d, pitch, kWidth);
  }
  EXAMPLE_CHECK_CUDA(cudaGetLastError());
  EXAMPLE_CHECK_CUDA(cudaDeviceSynchronize());
  std::vector<unsigned char> h(kWidth * kHeight);
  EXAMPLE_CHECK_CUDA(cudaMemcpy2D(h.data(), kWidth, d, pitch, kWidth, kHeight,
                                  cudaMemcpyDeviceToHost));
  EXAMPLE_CHECK_CUDA(cudaFree(d));
  std::printf(
      "oob_pitched: pitch %zu, %zu rows of %zu bytes; wrote row %zu; "
      "in-bounds checksum %llu\n",
      pitch, kHeight, kWidth, kHeight, ByteSum(h.data(), 0, h.size()));
  return 0;
}
