// Textures over CUDA arrays, as a renderer or a resampling kernel uses them:
// a 2-D cudaMallocArray filled with cudaMemcpy2DToArray and sampled with
// wrap addressing, the array described by cudaArrayGetInfo, a layered array
// (cudaMalloc3DArray with cudaArrayLayered) filled with cudaMemcpy3D and
// read with tex2DLayered, and a mipmapped array whose levels are filled and
// read back.
#include <cuda_runtime.h>

#include <cstdio>
#include <vector>

#include "corpus_check.h"

namespace {

constexpr int kW = 300, kH = 200, kLayers = 4;

unsigned char Texel(int x, int y, int layer) {
  return static_cast<unsigned char>((x * 3 + y * 5 + layer * 40) & 0xff);
}

__global__ void ReadWrapped(cudaTextureObject_t tex, unsigned char* out, int w,
                            int h) {
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  int y = blockIdx.y * blockDim.y + threadIdx.y;
  // Normalized coordinates past 1.0 wrap around.
  if (x < w && y < h)
    out[y * w + x] = tex2D<unsigned char>(tex, (x + w / 2 + 0.5f) / w,
                                          (y + 0.5f) / h + 1.0f);
}

__global__ void ReadLayers(cudaTextureObject_t tex, unsigned char* out, int w,
                           int h, int layers) {
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  int y = blockIdx.y * blockDim.y + threadIdx.y;
  for (int l = 0; l < layers && x < w && y < h; ++l)
    out[(l * h + y) * w + x] =
        tex2DLayered<unsigned char>(tex, x + 0.5f, y + 0.5f, l);
}

__global__ void ReadLevel(cudaTextureObject_t tex, float* out, int w, int h,
                          float level) {
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x < w && y < h)
    out[y * w + x] =
        tex2DLod<float>(tex, (x + 0.5f) / w, (y + 0.5f) / h, level);
}

cudaTextureObject_t ArrayTexture(cudaArray_t array, bool normalized,
                                 cudaTextureAddressMode mode) {
  cudaResourceDesc res{};
  res.resType = cudaResourceTypeArray;
  res.res.array.array = array;
  cudaTextureDesc tex{};
  tex.addressMode[0] = tex.addressMode[1] = mode;
  tex.filterMode = cudaFilterModePoint;
  tex.readMode = cudaReadModeElementType;
  tex.normalizedCoords = normalized;
  cudaTextureObject_t obj = 0;
  CORPUS_CHECK(cudaCreateTextureObject(&obj, &res, &tex, nullptr));
  return obj;
}

}  // namespace

int main() {
  corpus::ProgramName() = "tex_array";
  CORPUS_CHECK(cudaSetDevice(0));
  dim3 block(16, 16), grid((kW + 15) / 16, (kH + 15) / 16);
  std::vector<unsigned char> host(kW * kH * kLayers);
  for (int l = 0; l < kLayers; ++l)
    for (int y = 0; y < kH; ++y)
      for (int x = 0; x < kW; ++x) host[(l * kH + y) * kW + x] = Texel(x, y, l);
  unsigned char* out = nullptr;
  CORPUS_CHECK(cudaMalloc(&out, host.size()));
  std::vector<unsigned char> result(host.size());

  // 2-D array, wrap addressing.
  cudaChannelFormatDesc desc = cudaCreateChannelDesc<unsigned char>();
  cudaArray_t array = nullptr;
  corpus::Rc("cudaMallocArray 300 x 200 uchar",
             cudaMallocArray(&array, &desc, kW, kH));
  CORPUS_CHECK(cudaMemcpy2DToArray(array, 0, 0, host.data(), kW, kW, kH,
                                   cudaMemcpyHostToDevice));
  cudaChannelFormatDesc got_desc{};
  cudaExtent extent{};
  unsigned flags = 99;
  corpus::Rc("cudaArrayGetInfo",
             cudaArrayGetInfo(&got_desc, &extent, &flags, array));
  std::printf("array: %zu x %zu x %zu, %d-bit x, flags %u\n", extent.width,
              extent.height, extent.depth, got_desc.x, flags);
  cudaTextureObject_t wrapped = ArrayTexture(array, true, cudaAddressModeWrap);
  ReadWrapped<<<grid, block>>>(wrapped, out, kW, kH);
  CORPUS_CHECK(cudaGetLastError());
  CORPUS_CHECK(cudaMemcpy(result.data(), out, kW * kH, cudaMemcpyDeviceToHost));
  int wrong = 0;
  for (int y = 0; y < kH; ++y)
    for (int x = 0; x < kW; ++x)
      if (result[y * kW + x] != Texel((x + kW / 2) % kW, y, 0)) ++wrong;
  std::printf("wrapped read: %d wrong\n", wrong);
  corpus::Expect(wrong == 0, "wrapped read");

  // Array to host and array to array.
  cudaArray_t copy = nullptr;
  CORPUS_CHECK(cudaMallocArray(&copy, &desc, kW, kH));
  corpus::Rc("cudaMemcpy2DArrayToArray",
             cudaMemcpy2DArrayToArray(copy, 0, 0, array, 0, 0, kW, kH,
                                      cudaMemcpyDeviceToDevice));
  std::vector<unsigned char> round(kW * kH);
  CORPUS_CHECK(cudaMemcpy2DFromArray(round.data(), kW, copy, 0, 0, kW, kH,
                                     cudaMemcpyDeviceToHost));
  wrong = 0;
  for (int i = 0; i < kW * kH; ++i)
    if (round[i] != host[i]) ++wrong;
  std::printf("array round trip: %d wrong\n", wrong);
  corpus::Expect(wrong == 0, "array round trip");

  // Layered array.
  cudaArray_t layered = nullptr;
  corpus::Rc(
      "cudaMalloc3DArray layered",
      cudaMalloc3DArray(&layered, &desc, make_cudaExtent(kW, kH, kLayers),
                        cudaArrayLayered));
  cudaMemcpy3DParms p{};
  p.srcPtr = make_cudaPitchedPtr(host.data(), kW, kW, kH);
  p.dstArray = layered;
  p.extent = make_cudaExtent(kW, kH, kLayers);
  p.kind = cudaMemcpyHostToDevice;
  corpus::Rc("cudaMemcpy3D host -> layered array", cudaMemcpy3D(&p));
  cudaTextureObject_t layers =
      ArrayTexture(layered, false, cudaAddressModeClamp);
  ReadLayers<<<grid, block>>>(layers, out, kW, kH, kLayers);
  CORPUS_CHECK(cudaGetLastError());
  CORPUS_CHECK(
      cudaMemcpy(result.data(), out, host.size(), cudaMemcpyDeviceToHost));
  wrong = 0;
  for (size_t i = 0; i < host.size(); ++i)
    if (result[i] != host[i]) ++wrong;
  std::printf("layered read: %d wrong\n", wrong);
  corpus::Expect(wrong == 0, "layered read");

  // Mipmapped float array: level l holds the value l + 1 everywhere.
  cudaChannelFormatDesc fdesc = cudaCreateChannelDesc<float>();
  cudaMipmappedArray_t mip = nullptr;
  constexpr int kLevels = 4;
  corpus::Rc("cudaMallocMipmappedArray 256 x 128, 4 levels",
             cudaMallocMipmappedArray(&mip, &fdesc,
                                      make_cudaExtent(256, 128, 0), kLevels));
  for (int level = 0; level < kLevels; ++level) {
    cudaArray_t a = nullptr;
    CORPUS_CHECK(cudaGetMipmappedArrayLevel(&a, mip, level));
    int w = 256 >> level, h = 128 >> level;
    std::vector<float> v(w * h, static_cast<float>(level + 1));
    CORPUS_CHECK(cudaMemcpy2DToArray(a, 0, 0, v.data(), w * sizeof(float),
                                     w * sizeof(float), h,
                                     cudaMemcpyHostToDevice));
  }
  cudaResourceDesc res{};
  res.resType = cudaResourceTypeMipmappedArray;
  res.res.mipmap.mipmap = mip;
  cudaTextureDesc td{};
  td.addressMode[0] = td.addressMode[1] = cudaAddressModeClamp;
  td.filterMode = cudaFilterModePoint;
  td.mipmapFilterMode = cudaFilterModePoint;
  td.readMode = cudaReadModeElementType;
  td.normalizedCoords = 1;
  td.maxMipmapLevelClamp = kLevels - 1;
  cudaTextureObject_t mip_tex = 0;
  corpus::Rc("mipmapped texture",
             cudaCreateTextureObject(&mip_tex, &res, &td, nullptr));
  float* fout = nullptr;
  CORPUS_CHECK(cudaMalloc(&fout, 64 * 32 * sizeof(float)));
  std::vector<float> fres(64 * 32);
  for (int level = 0; level < kLevels; ++level) {
    ReadLevel<<<dim3(4, 2), block>>>(mip_tex, fout, 64, 32,
                                     static_cast<float>(level));
    CORPUS_CHECK(cudaGetLastError());
    CORPUS_CHECK(cudaMemcpy(fres.data(), fout, fres.size() * sizeof(float),
                            cudaMemcpyDeviceToHost));
    int bad = 0;
    for (float f : fres)
      if (f != static_cast<float>(level + 1)) ++bad;
    std::printf("mip level %d: %d wrong\n", level, bad);
    corpus::Expect(bad == 0, "mip level %d", level);
  }

  CORPUS_CHECK(cudaDestroyTextureObject(mip_tex));
  CORPUS_CHECK(cudaDestroyTextureObject(layers));
  CORPUS_CHECK(cudaDestroyTextureObject(wrapped));
  CORPUS_CHECK(cudaFreeMipmappedArray(mip));
  CORPUS_CHECK(cudaFreeArray(layered));
  CORPUS_CHECK(cudaFreeArray(copy));
  CORPUS_CHECK(cudaFreeArray(array));
  CORPUS_CHECK(cudaFree(fout));
  CORPUS_CHECK(cudaFree(out));
  return corpus::Finish();
}
