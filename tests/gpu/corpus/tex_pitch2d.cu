// Textures over pitch-linear memory, as an image-processing pipeline binds its
// cudaMallocPitch frames: a point-sampled texture object over the whole
// frame, one over a sub-image that starts some rows down (an ROI view), a
// bilinear one with normalized coordinates, the resource descriptor read back
// with cudaGetTextureObjectResourceDesc, and the alignment rules checked the
// way such code checks them (cudaDevAttrTexturePitchAlignment).
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "corpus_check.h"

namespace {

constexpr int kWidth = 1000;
constexpr int kHeight = 300;

float Pixel(int x, int y) { return static_cast<float>((x * 7 + y * 13) % 251); }

// out[y][x] = tex(x + shift, y) with clamping at the right edge.
__global__ void ShiftRead(cudaTextureObject_t tex, float* out, int width,
                          int height, int shift) {
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x < width && y < height)
    out[y * width + x] = tex2D<float>(tex, x + shift + 0.5f, y + 0.5f);
}

__global__ void Resample(cudaTextureObject_t tex, float* out, int width,
                         int height) {
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x < width && y < height)
    out[y * width + x] =
        tex2D<float>(tex, (x + 0.25f) / width, (y + 0.75f) / height);
}

cudaTextureObject_t MakeTexture(void* ptr, size_t pitch, int width, int height,
                                bool linear, const char* what) {
  cudaResourceDesc res{};
  res.resType = cudaResourceTypePitch2D;
  res.res.pitch2D.devPtr = ptr;
  res.res.pitch2D.desc = cudaCreateChannelDesc<float>();
  res.res.pitch2D.width = width;
  res.res.pitch2D.height = height;
  res.res.pitch2D.pitchInBytes = pitch;
  cudaTextureDesc tex{};
  tex.addressMode[0] = cudaAddressModeClamp;
  tex.addressMode[1] = cudaAddressModeClamp;
  tex.filterMode = linear ? cudaFilterModeLinear : cudaFilterModePoint;
  tex.readMode = cudaReadModeElementType;
  tex.normalizedCoords = linear ? 1 : 0;
  cudaTextureObject_t obj = 0;
  corpus::Rc(what, cudaCreateTextureObject(&obj, &res, &tex, nullptr));
  return obj;
}

int CountShiftErrors(const std::vector<float>& out, int row0, int rows,
                     int shift) {
  int wrong = 0;
  for (int y = 0; y < rows; ++y)
    for (int x = 0; x < kWidth; ++x) {
      int sx = x + shift < kWidth ? x + shift : kWidth - 1;
      if (out[y * kWidth + x] != Pixel(sx, row0 + y)) ++wrong;
    }
  return wrong;
}

}  // namespace

int main() {
  corpus::ProgramName() = "tex_pitch2d";
  CORPUS_CHECK(cudaSetDevice(0));
  int pitch_align = 0, tex_align = 0;
  CORPUS_CHECK(cudaDeviceGetAttribute(&pitch_align,
                                      cudaDevAttrTexturePitchAlignment, 0));
  CORPUS_CHECK(
      cudaDeviceGetAttribute(&tex_align, cudaDevAttrTextureAlignment, 0));
  std::printf("texture pitch alignment %d, texture alignment %d\n", pitch_align,
              tex_align);

  float* frame = nullptr;
  size_t pitch = 0;
  corpus::Rc("cudaMallocPitch 1000 floats x 300",
             cudaMallocPitch(reinterpret_cast<void**>(&frame), &pitch,
                             kWidth * sizeof(float), kHeight));
  std::printf(
      "pitch %zu (multiple of the pitch alignment: %s), frame "
      "aligned: %s\n",
      pitch, pitch % pitch_align == 0 ? "yes" : "no",
      reinterpret_cast<uintptr_t>(frame) % pitch_align == 0 ? "yes" : "no");
  std::vector<float> host(kWidth * kHeight);
  for (int y = 0; y < kHeight; ++y)
    for (int x = 0; x < kWidth; ++x) host[y * kWidth + x] = Pixel(x, y);
  CORPUS_CHECK(cudaMemcpy2D(frame, pitch, host.data(), kWidth * sizeof(float),
                            kWidth * sizeof(float), kHeight,
                            cudaMemcpyHostToDevice));
  float* out = nullptr;
  CORPUS_CHECK(cudaMalloc(&out, kWidth * kHeight * sizeof(float)));
  std::vector<float> result(kWidth * kHeight);
  dim3 block(32, 8);
  dim3 grid((kWidth + 31) / 32, (kHeight + 7) / 8);

  // The whole frame.
  cudaTextureObject_t whole =
      MakeTexture(frame, pitch, kWidth, kHeight, false, "texture over frame");
  ShiftRead<<<grid, block>>>(whole, out, kWidth, kHeight, 17);
  CORPUS_CHECK(cudaGetLastError());
  CORPUS_CHECK(cudaMemcpy(result.data(), out, result.size() * sizeof(float),
                          cudaMemcpyDeviceToHost));
  int wrong = CountShiftErrors(result, 0, kHeight, 17);
  std::printf("frame, shifted read: %d wrong\n", wrong);
  corpus::Expect(wrong == 0, "shifted read over the frame");

  cudaResourceDesc back{};
  corpus::Rc("cudaGetTextureObjectResourceDesc",
             cudaGetTextureObjectResourceDesc(&back, whole));
  std::printf("resource desc: same pointer %s, pitch %zu, %zu x %zu\n",
              back.res.pitch2D.devPtr == frame ? "yes" : "no",
              back.res.pitch2D.pitchInBytes, back.res.pitch2D.width,
              back.res.pitch2D.height);

  // A region of interest: rows 64..191 (starts at an aligned address).
  constexpr int kRow0 = 64, kRows = 128;
  float* roi =
      reinterpret_cast<float*>(reinterpret_cast<char*>(frame) + kRow0 * pitch);
  cudaTextureObject_t view = MakeTexture(roi, pitch, kWidth, kRows, false,
                                         "texture over rows 64..191");
  ShiftRead<<<dim3(grid.x, kRows / 8), block>>>(view, out, kWidth, kRows, 3);
  CORPUS_CHECK(cudaGetLastError());
  CORPUS_CHECK(cudaMemcpy(result.data(), out, kWidth * kRows * sizeof(float),
                          cudaMemcpyDeviceToHost));
  wrong = CountShiftErrors(result, kRow0, kRows, 3);
  std::printf("region of interest, shifted read: %d wrong\n", wrong);
  corpus::Expect(wrong == 0, "shifted read over the region");

  // A misaligned start is refused.
  cudaTextureObject_t bad = MakeTexture(frame + 1, pitch, kWidth - 1, kHeight,
                                        false, "texture at frame + 4 bytes");
  if (bad != 0) CORPUS_CHECK(cudaDestroyTextureObject(bad));
  corpus::Rc("  cudaGetLastError", cudaGetLastError());

  // Bilinear, normalized coordinates: the filtered values are the hardware's.
  cudaTextureObject_t smooth =
      MakeTexture(frame, pitch, kWidth, kHeight, true, "bilinear texture");
  Resample<<<grid, block>>>(smooth, out, kWidth, kHeight);
  CORPUS_CHECK(cudaGetLastError());
  CORPUS_CHECK(cudaMemcpy(result.data(), out, result.size() * sizeof(float),
                          cudaMemcpyDeviceToHost));
  double sum = 0;
  int off = 0;
  for (int y = 0; y < kHeight; ++y)
    for (int x = 0; x < kWidth; ++x) {
      float v = result[y * kWidth + x];
      sum += v;
      // Between the neighbours it interpolates.
      float lo = 1e30f, hi = -1e30f;
      for (int dy = -1; dy <= 1; ++dy)
        for (int dx = -1; dx <= 1; ++dx) {
          int xx = std::min(std::max(x + dx, 0), kWidth - 1);
          int yy = std::min(std::max(y + dy, 0), kHeight - 1);
          lo = std::fmin(lo, Pixel(xx, yy));
          hi = std::fmax(hi, Pixel(xx, yy));
        }
      if (v < lo - 0.01f || v > hi + 0.01f) ++off;
    }
  std::printf("bilinear resample: checksum %.4f, %d values out of range\n", sum,
              off);
  corpus::Expect(off == 0, "bilinear values out of range");

  CORPUS_CHECK(cudaDestroyTextureObject(smooth));
  CORPUS_CHECK(cudaDestroyTextureObject(view));
  CORPUS_CHECK(cudaDestroyTextureObject(whole));
  CORPUS_CHECK(cudaFree(out));
  CORPUS_CHECK(cudaFree(frame));
  return corpus::Finish();
}
