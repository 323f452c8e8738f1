// Surfaces: kernels that write CUDA arrays (surf2Dwrite/surf3Dwrite), as a
// simulation that keeps its grid in an array for texture reads does it: a
// 2-D array written by one kernel and read back through a surface by
// another, copied to pitched device memory with cudaMemcpy2DFromArray; a
// 3-D array written through a surface and copied into cudaMalloc3D memory
// with cudaMemcpy3D, then to the host.
#include <cuda_runtime.h>

#include <cstdio>
#include <vector>

#include "corpus_check.h"

namespace {

constexpr int kW = 513, kH = 257;  // odd sizes on purpose
constexpr int kX = 64, kY = 48, kZ = 20;

__host__ __device__ float Value2(int x, int y) { return x * 0.5f - y * 2.0f; }
__host__ __device__ int Value3(int x, int y, int z) {
  return x + 1000 * y + 1000000 * z;
}

__global__ void Write2D(cudaSurfaceObject_t surf, int w, int h) {
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x < w && y < h) surf2Dwrite(Value2(x, y), surf, x * sizeof(float), y);
}

// Reads each element and its right neighbour (clamped), writes their sum.
__global__ void Smooth2D(cudaSurfaceObject_t in, float* out, size_t pitch,
                         int w, int h) {
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x < w && y < h) {
    float a = surf2Dread<float>(in, x * sizeof(float), y);
    float b = surf2Dread<float>(in, (x + 1) * sizeof(float), y,
                                cudaBoundaryModeClamp);
    reinterpret_cast<float*>(reinterpret_cast<char*>(out) + y * pitch)[x] =
        a + b;
  }
}

__global__ void Write3D(cudaSurfaceObject_t surf) {
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  int y = blockIdx.y * blockDim.y + threadIdx.y;
  int z = blockIdx.z;
  if (x < kX && y < kY)
    surf3Dwrite(Value3(x, y, z), surf, x * sizeof(int), y, z);
}

cudaSurfaceObject_t Surface(cudaArray_t array) {
  cudaResourceDesc res{};
  res.resType = cudaResourceTypeArray;
  res.res.array.array = array;
  cudaSurfaceObject_t surf = 0;
  CORPUS_CHECK(cudaCreateSurfaceObject(&surf, &res));
  return surf;
}

}  // namespace

int main() {
  corpus::ProgramName() = "surface_array";
  CORPUS_CHECK(cudaSetDevice(0));
  cudaChannelFormatDesc fdesc = cudaCreateChannelDesc<float>();
  cudaArray_t grid2 = nullptr;
  corpus::Rc(
      "cudaMallocArray surface 513 x 257",
      cudaMallocArray(&grid2, &fdesc, kW, kH, cudaArraySurfaceLoadStore));
  cudaSurfaceObject_t surf2 = Surface(grid2);
  dim3 block(16, 16), grid((kW + 15) / 16, (kH + 15) / 16);
  Write2D<<<grid, block>>>(surf2, kW, kH);
  float* smoothed = nullptr;
  size_t pitch = 0;
  CORPUS_CHECK(cudaMallocPitch(reinterpret_cast<void**>(&smoothed), &pitch,
                               kW * sizeof(float), kH));
  Smooth2D<<<grid, block>>>(surf2, smoothed, pitch, kW, kH);
  CORPUS_CHECK(cudaGetLastError());
  std::vector<float> host(kW * kH);
  CORPUS_CHECK(cudaMemcpy2D(host.data(), kW * sizeof(float), smoothed, pitch,
                            kW * sizeof(float), kH, cudaMemcpyDeviceToHost));
  int wrong = 0;
  for (int y = 0; y < kH; ++y)
    for (int x = 0; x < kW; ++x) {
      int xr = x + 1 < kW ? x + 1 : kW - 1;
      if (host[y * kW + x] != Value2(x, y) + Value2(xr, y)) ++wrong;
    }
  std::printf("2-D surface smoothed into pitched memory: %d wrong\n", wrong);
  corpus::Expect(wrong == 0, "2-D smoothing");

  // The array itself into pitched memory.
  corpus::Rc(
      "cudaMemcpy2DFromArray -> pitched",
      cudaMemcpy2DFromArray(smoothed, pitch, grid2, 0, 0, kW * sizeof(float),
                            kH, cudaMemcpyDeviceToDevice));
  CORPUS_CHECK(cudaMemcpy2D(host.data(), kW * sizeof(float), smoothed, pitch,
                            kW * sizeof(float), kH, cudaMemcpyDeviceToHost));
  wrong = 0;
  for (int y = 0; y < kH; ++y)
    for (int x = 0; x < kW; ++x)
      if (host[y * kW + x] != Value2(x, y)) ++wrong;
  std::printf("2-D array copied out: %d wrong\n", wrong);
  corpus::Expect(wrong == 0, "2-D array copy");

  // 3-D.
  cudaChannelFormatDesc idesc = cudaCreateChannelDesc<int>();
  cudaArray_t grid3 = nullptr;
  corpus::Rc("cudaMalloc3DArray surface 64 x 48 x 20",
             cudaMalloc3DArray(&grid3, &idesc, make_cudaExtent(kX, kY, kZ),
                               cudaArraySurfaceLoadStore));
  cudaSurfaceObject_t surf3 = Surface(grid3);
  Write3D<<<dim3(kX / 16, kY / 16, kZ), block>>>(surf3);
  CORPUS_CHECK(cudaGetLastError());
  cudaPitchedPtr vol{};
  CORPUS_CHECK(cudaMalloc3D(&vol, make_cudaExtent(kX * sizeof(int), kY, kZ)));
  cudaMemcpy3DParms to_vol{};
  to_vol.srcArray = grid3;
  to_vol.dstPtr = vol;
  to_vol.extent = make_cudaExtent(kX, kY, kZ);  // elements, for an array
  to_vol.kind = cudaMemcpyDeviceToDevice;
  corpus::Rc("cudaMemcpy3D array -> cudaMalloc3D", cudaMemcpy3D(&to_vol));
  std::vector<int> host3(kX * kY * kZ);
  cudaMemcpy3DParms to_host{};
  to_host.srcPtr = vol;
  to_host.dstPtr = make_cudaPitchedPtr(host3.data(), kX * sizeof(int), kX, kY);
  to_host.extent = make_cudaExtent(kX * sizeof(int), kY, kZ);
  to_host.kind = cudaMemcpyDeviceToHost;
  corpus::Rc("cudaMemcpy3D cudaMalloc3D -> host", cudaMemcpy3D(&to_host));
  wrong = 0;
  for (int z = 0; z < kZ; ++z)
    for (int y = 0; y < kY; ++y)
      for (int x = 0; x < kX; ++x)
        if (host3[(z * kY + y) * kX + x] != Value3(x, y, z)) ++wrong;
  std::printf("3-D surface through pitched memory: %d wrong\n", wrong);
  corpus::Expect(wrong == 0, "3-D surface");

  CORPUS_CHECK(cudaDestroySurfaceObject(surf3));
  CORPUS_CHECK(cudaDestroySurfaceObject(surf2));
  CORPUS_CHECK(cudaFree(vol.ptr));
  CORPUS_CHECK(cudaFree(smoothed));
  CORPUS_CHECK(cudaFreeArray(grid3));
  CORPUS_CHECK(cudaFreeArray(grid2));
  return corpus::Finish();
}
