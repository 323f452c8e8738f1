// A 3-D volume in cudaMalloc3D memory, as a CT or fluid code keeps it:
// cudaMemset3D to clear it, a kernel that writes it through the pitched
// pointer, a sub-box copied between two volumes with cudaMemcpy3D (source and
// destination positions), the volume copied into a 3-D array and sampled
// with tex3D (point and trilinear), and the pitched allocation read through
// a 2-D pitched texture slice by slice.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstring>
#include <vector>

#include "corpus_check.h"

namespace {

constexpr int kX = 100, kY = 60, kZ = 30;

__host__ __device__ float Voxel(int x, int y, int z) {
  return static_cast<float>(x + 2 * y + 3 * z);
}

__global__ void WriteVolume(cudaPitchedPtr vol, int nx, int ny, int nz) {
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  int y = blockIdx.y * blockDim.y + threadIdx.y;
  int z = blockIdx.z;
  if (x < nx && y < ny && z < nz) {
    char* slice = static_cast<char*>(vol.ptr) + z * vol.pitch * vol.ysize;
    reinterpret_cast<float*>(slice + y * vol.pitch)[x] = Voxel(x, y, z);
  }
}

__global__ void Sample(cudaTextureObject_t tex, float* out, int nx, int ny,
                       int nz, float dx) {
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  int y = blockIdx.y * blockDim.y + threadIdx.y;
  int z = blockIdx.z;
  if (x < nx && y < ny && z < nz)
    out[(z * ny + y) * nx + x] =
        tex3D<float>(tex, x + 0.5f + dx, y + 0.5f, z + 0.5f);
}

cudaTextureObject_t VolumeTexture(cudaArray_t array, bool linear) {
  cudaResourceDesc res{};
  res.resType = cudaResourceTypeArray;
  res.res.array.array = array;
  cudaTextureDesc td{};
  td.addressMode[0] = td.addressMode[1] = td.addressMode[2] =
      cudaAddressModeClamp;
  td.filterMode = linear ? cudaFilterModeLinear : cudaFilterModePoint;
  td.readMode = cudaReadModeElementType;
  cudaTextureObject_t tex = 0;
  CORPUS_CHECK(cudaCreateTextureObject(&tex, &res, &td, nullptr));
  return tex;
}

}  // namespace

int main() {
  corpus::ProgramName() = "tex3d_pitched";
  CORPUS_CHECK(cudaSetDevice(0));
  cudaExtent bytes_extent = make_cudaExtent(kX * sizeof(float), kY, kZ);
  cudaPitchedPtr vol{}, other{};
  corpus::Rc("cudaMalloc3D 100 x 60 x 30 floats",
             cudaMalloc3D(&vol, bytes_extent));
  corpus::Rc("cudaMalloc3D second volume", cudaMalloc3D(&other, bytes_extent));
  std::printf("pitch %zu, xsize %zu, ysize %zu\n", vol.pitch, vol.xsize,
              vol.ysize);
  corpus::Rc("cudaMemset3D volume", cudaMemset3D(vol, 0, bytes_extent));
  corpus::Rc("cudaMemset3D second volume (0xff)",
             cudaMemset3D(other, 0xff, bytes_extent));
  dim3 block(32, 8), grid((kX + 31) / 32, (kY + 7) / 8, kZ);
  WriteVolume<<<grid, block>>>(vol, kX, kY, kZ);
  CORPUS_CHECK(cudaGetLastError());

  // Sub-box [10,50) x [5,45) x [3,23) from vol to the same place in other.
  cudaMemcpy3DParms box{};
  box.srcPtr = vol;
  box.srcPos = make_cudaPos(10 * sizeof(float), 5, 3);
  box.dstPtr = other;
  box.dstPos = make_cudaPos(10 * sizeof(float), 5, 3);
  box.extent = make_cudaExtent(40 * sizeof(float), 40, 20);
  box.kind = cudaMemcpyDeviceToDevice;
  corpus::Rc("cudaMemcpy3D sub-box", cudaMemcpy3D(&box));
  std::vector<float> host(kX * kY * kZ);
  cudaMemcpy3DParms down{};
  down.srcPtr = other;
  down.dstPtr = make_cudaPitchedPtr(host.data(), kX * sizeof(float), kX, kY);
  down.extent = bytes_extent;
  down.kind = cudaMemcpyDeviceToHost;
  corpus::Rc("cudaMemcpy3D second volume -> host", cudaMemcpy3D(&down));
  int wrong = 0;
  for (int z = 0; z < kZ; ++z)
    for (int y = 0; y < kY; ++y)
      for (int x = 0; x < kX; ++x) {
        bool inside = x >= 10 && x < 50 && y >= 5 && y < 45 && z >= 3 && z < 23;
        float v = host[(z * kY + y) * kX + x];
        unsigned bits;
        std::memcpy(&bits, &v, 4);
        if (inside ? v != Voxel(x, y, z) : bits != 0xffffffffu) ++wrong;
      }
  std::printf("sub-box copy: %d wrong\n", wrong);
  corpus::Expect(wrong == 0, "sub-box copy");

  // Into a 3-D array, sampled.
  cudaChannelFormatDesc desc = cudaCreateChannelDesc<float>();
  cudaArray_t array = nullptr;
  CORPUS_CHECK(cudaMalloc3DArray(&array, &desc, make_cudaExtent(kX, kY, kZ)));
  cudaMemcpy3DParms up{};
  up.srcPtr = vol;
  up.dstArray = array;
  up.extent = make_cudaExtent(kX, kY, kZ);
  up.kind = cudaMemcpyDeviceToDevice;
  corpus::Rc("cudaMemcpy3D pitched -> 3-D array", cudaMemcpy3D(&up));
  float* out = nullptr;
  CORPUS_CHECK(cudaMalloc(&out, host.size() * sizeof(float)));
  cudaTextureObject_t point = VolumeTexture(array, false);
  Sample<<<grid, block>>>(point, out, kX, kY, kZ, 0.0f);
  CORPUS_CHECK(cudaGetLastError());
  CORPUS_CHECK(cudaMemcpy(host.data(), out, host.size() * sizeof(float),
                          cudaMemcpyDeviceToHost));
  wrong = 0;
  for (int z = 0; z < kZ; ++z)
    for (int y = 0; y < kY; ++y)
      for (int x = 0; x < kX; ++x)
        if (host[(z * kY + y) * kX + x] != Voxel(x, y, z)) ++wrong;
  std::printf("tex3D point samples: %d wrong\n", wrong);
  corpus::Expect(wrong == 0, "tex3D point");

  // Trilinear halfway between x and x+1: the voxel value + 0.5, up to the
  // hardware's 8-bit interpolation weights.
  cudaTextureObject_t linear = VolumeTexture(array, true);
  Sample<<<grid, block>>>(linear, out, kX, kY, kZ, 0.5f);
  CORPUS_CHECK(cudaGetLastError());
  CORPUS_CHECK(cudaMemcpy(host.data(), out, host.size() * sizeof(float),
                          cudaMemcpyDeviceToHost));
  double sum = 0;
  int off = 0;
  for (int z = 0; z < kZ; ++z)
    for (int y = 0; y < kY; ++y)
      for (int x = 0; x < kX - 1; ++x) {
        float v = host[(z * kY + y) * kX + x];
        sum += v;
        if (v < Voxel(x, y, z) + 0.49f || v > Voxel(x, y, z) + 0.51f) ++off;
      }
  std::printf("tex3D trilinear: checksum %.3f, %d off\n", sum, off);
  corpus::Expect(off == 0, "trilinear");

  CORPUS_CHECK(cudaDestroyTextureObject(linear));
  CORPUS_CHECK(cudaDestroyTextureObject(point));
  CORPUS_CHECK(cudaFree(out));
  CORPUS_CHECK(cudaFreeArray(array));
  CORPUS_CHECK(cudaFree(other.ptr));
  CORPUS_CHECK(cudaFree(vol.ptr));
  return corpus::Finish();
}
