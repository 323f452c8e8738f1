// oob_3d: a cudaMalloc3D volume of 3 slices of 4 rows of 500 bytes. The
// slice kernel's grid has height + 1 rows (a `<=` in the row count) and it
// runs on the last slice, so it flips the 500 bytes of row 4 of slice 2: one
// row past the last slice's last row, i.e. the first 500 bytes after the
// block (its size is pitch * height * depth; the pitch padding of the last
// row lies inside it, so a write that only ran past the row's width would not
// be out of bounds).
//
// Expected report (guard=1): exactly one error, kind "oob-write", offset
// pitch * 12, bytes 500 (first_offset pitch * 12, last_offset pitch * 12 +
// 499, changed_bytes 500), allocation {api "cudaMalloc3D", bytes pitch * 12}
// with Oob3dAllocate in its stack, kernels containing Oob3dSliceFlipKernel
// (check=kernel: exactly that one). The program prints the pitch CUDA chose
// (the GPU test reads it; it must be the same with the tool) and the
// in-bounds checksum; exit 0.
#include <cuda_runtime.h>

#include <cstdio>
#include <vector>

#include "example_check.h"
#include "guard_example.h"

constexpr size_t kWidth = 500;
constexpr size_t kHeight = 4;
constexpr size_t kDepth = 3;

__global__ void Oob3dFillKernel(unsigned char* p, size_t pitch,
                                size_t slice_pitch, int width, int height,
                                int depth) {
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  int y = blockIdx.y;
  int z = blockIdx.z;
  if (x < width && y < height && z < depth) {
    p[z * slice_pitch + y * pitch + x] =
        static_cast<unsigned char>(x + 5 * y + 17 * z);
  }
}

// Flips the first `width` bytes of every row that the grid covers in slice
// `z`; the grid decides how many rows that is.
__global__ void Oob3dSliceFlipKernel(volatile unsigned char* p, size_t pitch,
                                     size_t slice_pitch, int width, int z) {
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  int y = blockIdx.y;
  if (x < width) {
    volatile unsigned char* q = p + z * slice_pitch + y * pitch + x;
    *q = static_cast<unsigned char>(~*q);
  }
}

__attribute__((noinline)) cudaPitchedPtr Oob3dAllocate(cudaExtent extent) {
  cudaPitchedPtr pp{};
  EXAMPLE_CHECK_CUDA(cudaMalloc3D(&pp, extent));
  return pp;
}

int main() {
  const cudaExtent extent = make_cudaExtent(kWidth, kHeight, kDepth);
  cudaPitchedPtr pp = Oob3dAllocate(extent);
  auto* d = static_cast<unsigned char*>(pp.ptr);
  const size_t pitch = pp.pitch;
  const size_t slice_pitch = pitch * kHeight;
  const size_t bytes = slice_pitch * kDepth;
  dim3 block(256);
  dim3 grid((kWidth + 255) / 256, kHeight, kDepth);
  Oob3dFillKernel<<<grid, block>>>(d, pitch, slice_pitch, kWidth, kHeight,
                                   kDepth);
  dim3 bad_grid((kWidth + 255) / 256, kHeight + 1);  // the bug: one row more
  if (BadWriteStaysMapped(d, bytes, static_cast<long long>(bytes), kWidth,
                          kDevicePageBytes, "oob_3d")) {
    Oob3dSliceFlipKernel<<<bad_grid, block>>>(d, pitch, slice_pitch, kWidth,
                                              static_cast<int>(kDepth - 1));
  }
  EXAMPLE_CHECK_CUDA(cudaGetLastError());
  EXAMPLE_CHECK_CUDA(cudaDeviceSynchronize());
  std::vector<unsigned char> h(kWidth * kHeight * kDepth);
  cudaMemcpy3DParms copy{};
  copy.srcPtr = pp;
  copy.dstPtr = make_cudaPitchedPtr(h.data(), kWidth, kWidth, kHeight);
  copy.extent = extent;
  copy.kind = cudaMemcpyDeviceToHost;
  EXAMPLE_CHECK_CUDA(cudaMemcpy3D(&copy));
  EXAMPLE_CHECK_CUDA(cudaFree(pp.ptr));
  std::printf(
      "oob_3d: pitch %zu, %zu slices of %zu rows of %zu bytes; wrote row %zu "
      "of slice %zu; in-bounds checksum %llu\n",
      pitch, kDepth, kHeight, kWidth, kHeight, kDepth - 1,
      ByteSum(h.data(), 0, h.size()));
  return 0;
}
