// Strided copies and fills, as image and volume code uses them: cudaMemset2D
// and cudaMemcpy2D between pitched, linear and host memory with different
// pitches, a sub-rectangle copied device to device, the asynchronous forms on
// a stream with pinned memory, cudaMemset3D/cudaMemcpy3D (and Async) on
// cudaMalloc3D memory with offsets, cudaMemcpy3DPeer on one device, and the
// driver's cuMemcpy2D/cuMemcpy3D/cuMemsetD2D32.
#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <cstring>
#include <vector>

#include "corpus_check.h"

namespace {

constexpr int kW = 777;  // bytes per row
constexpr int kH = 123;

unsigned char Byte(int x, int y) {
  return static_cast<unsigned char>((x * 7 + y * 3) & 0xff);
}

int CountWrong(const std::vector<unsigned char>& img, int w, int h,
               unsigned char (*want)(int, int)) {
  int wrong = 0;
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      if (img[y * w + x] != want(x, y)) ++wrong;
  return wrong;
}

}  // namespace

int main() {
  corpus::ProgramName() = "memcpy_2d3d";
  CORPUS_CHECK(cudaSetDevice(0));
  CORPUS_CHECK(cuInit(0));
  std::vector<unsigned char> image(kW * kH), back(kW * kH);
  for (int y = 0; y < kH; ++y)
    for (int x = 0; x < kW; ++x) image[y * kW + x] = Byte(x, y);

  void* pitched = nullptr;
  size_t pitch = 0;
  CORPUS_CHECK(cudaMallocPitch(&pitched, &pitch, kW, kH));
  std::printf("pitch for %d-byte rows: %zu\n", kW, pitch);
  corpus::Rc("cudaMemset2D whole", cudaMemset2D(pitched, pitch, 0xab, kW, kH));
  corpus::Rc("cudaMemcpy2D host -> pitched",
             cudaMemcpy2D(pitched, pitch, image.data(), kW, kW, kH,
                          cudaMemcpyHostToDevice));

  // Pitched -> linear device (tight pitch) -> host.
  void* linear = nullptr;
  CORPUS_CHECK(cudaMalloc(&linear, kW * kH));
  corpus::Rc("cudaMemcpy2D pitched -> linear",
             cudaMemcpy2D(linear, kW, pitched, pitch, kW, kH,
                          cudaMemcpyDeviceToDevice));
  CORPUS_CHECK(
      cudaMemcpy(back.data(), linear, kW * kH, cudaMemcpyDeviceToHost));
  int wrong = CountWrong(back, kW, kH, Byte);
  std::printf("pitched -> linear -> host: %d wrong\n", wrong);
  corpus::Expect(wrong == 0, "2-D round trip");

  // A 100 x 50 sub-rectangle at (300, 40), into (10, 5) of a cleared copy.
  void* other = nullptr;
  size_t other_pitch = 0;
  CORPUS_CHECK(cudaMallocPitch(&other, &other_pitch, kW, kH));
  corpus::Rc("cudaMemset2D clear", cudaMemset2D(other, other_pitch, 0, kW, kH));
  corpus::Rc(
      "cudaMemcpy2D sub-rectangle",
      cudaMemcpy2D(static_cast<char*>(other) + 5 * other_pitch + 10,
                   other_pitch, static_cast<char*>(pitched) + 40 * pitch + 300,
                   pitch, 100, 50, cudaMemcpyDeviceToDevice));
  CORPUS_CHECK(cudaMemcpy2D(back.data(), kW, other, other_pitch, kW, kH,
                            cudaMemcpyDeviceToHost));
  wrong = 0;
  for (int y = 0; y < kH; ++y)
    for (int x = 0; x < kW; ++x) {
      bool in = x >= 10 && x < 110 && y >= 5 && y < 55;
      unsigned char want = in ? Byte(x - 10 + 300, y - 5 + 40) : 0;
      if (back[y * kW + x] != want) ++wrong;
    }
  std::printf("sub-rectangle: %d wrong\n", wrong);
  corpus::Expect(wrong == 0, "sub-rectangle");

  // Asynchronous forms with pinned memory.
  // A blocking stream: ordered after the synchronous calls' default-stream
  // work (cudaMemset may return before it is done).
  cudaStream_t stream;
  CORPUS_CHECK(cudaStreamCreate(&stream));
  unsigned char* pinned = nullptr;
  CORPUS_CHECK(cudaMallocHost(&pinned, kW * kH));
  corpus::Rc("cudaMemset2DAsync band",
             cudaMemset2DAsync(static_cast<char*>(pitched) + 10 * pitch, pitch,
                               0x5a, kW, 20, stream));
  corpus::Rc("cudaMemcpy2DAsync pitched -> pinned",
             cudaMemcpy2DAsync(pinned, kW, pitched, pitch, kW, kH,
                               cudaMemcpyDeviceToHost, stream));
  CORPUS_CHECK(cudaStreamSynchronize(stream));
  wrong = 0;
  for (int y = 0; y < kH; ++y)
    for (int x = 0; x < kW; ++x) {
      unsigned char want = (y >= 10 && y < 30) ? 0x5a : Byte(x, y);
      if (pinned[y * kW + x] != want) ++wrong;
    }
  std::printf("async 2-D: %d wrong\n", wrong);
  corpus::Expect(wrong == 0, "async 2-D");

  // 3-D: 200 x 30 x 12 bytes.
  const int X = 200, Y = 30, Z = 12;
  cudaExtent extent = make_cudaExtent(X, Y, Z);
  cudaPitchedPtr vol{}, vol2{};
  CORPUS_CHECK(cudaMalloc3D(&vol, extent));
  CORPUS_CHECK(cudaMalloc3D(&vol2, extent));
  std::printf("3-D pitch %zu\n", vol.pitch);
  corpus::Rc("cudaMemset3D", cudaMemset3D(vol, 0x11, extent));
  corpus::Rc(
      "cudaMemset3DAsync inner box",
      cudaMemset3DAsync(make_cudaPitchedPtr(static_cast<char*>(vol.ptr) +
                                                (2 * Y + 3) * vol.pitch + 4,
                                            vol.pitch, X, Y),
                        0x22, make_cudaExtent(50, 10, 5), stream));
  cudaMemcpy3DParms d2d{};
  d2d.srcPtr = vol;
  d2d.dstPtr = vol2;
  d2d.extent = extent;
  d2d.kind = cudaMemcpyDeviceToDevice;
  corpus::Rc("cudaMemcpy3DAsync device -> device",
             cudaMemcpy3DAsync(&d2d, stream));
  CORPUS_CHECK(cudaStreamSynchronize(stream));
  std::vector<unsigned char> host3(X * Y * Z);
  cudaMemcpy3DParms d2h{};
  d2h.srcPtr = vol2;
  d2h.dstPtr = make_cudaPitchedPtr(host3.data(), X, X, Y);
  d2h.extent = extent;
  d2h.kind = cudaMemcpyDeviceToHost;
  corpus::Rc("cudaMemcpy3D device -> host", cudaMemcpy3D(&d2h));
  wrong = 0;
  for (int z = 0; z < Z; ++z)
    for (int y = 0; y < Y; ++y)
      for (int x = 0; x < X; ++x) {
        bool in = z >= 2 && z < 7 && y >= 3 && y < 13 && x >= 4 && x < 54;
        if (host3[(z * Y + y) * X + x] != (in ? 0x22 : 0x11)) ++wrong;
      }
  std::printf("3-D memset box and copies: %d wrong\n", wrong);
  corpus::Expect(wrong == 0, "3-D box");

  cudaMemcpy3DPeerParms peer{};
  peer.srcPtr = vol;
  peer.srcDevice = 0;
  peer.dstPtr = vol2;
  peer.dstDevice = 0;
  peer.extent = make_cudaExtent(X, Y, 1);
  corpus::Rc("cudaMemcpy3DPeer same device", cudaMemcpy3DPeer(&peer));

  // The driver's forms.
  CUDA_MEMCPY2D c2{};
  c2.srcMemoryType = CU_MEMORYTYPE_HOST;
  c2.srcHost = image.data();
  c2.srcPitch = kW;
  c2.dstMemoryType = CU_MEMORYTYPE_DEVICE;
  c2.dstDevice = reinterpret_cast<CUdeviceptr>(other);
  c2.dstPitch = other_pitch;
  c2.WidthInBytes = kW;
  c2.Height = kH;
  corpus::Rc("cuMemcpy2D host -> pitched", cuMemcpy2D(&c2));
  corpus::Rc("cuMemsetD2D32 first 64 columns",
             cuMemsetD2D32(reinterpret_cast<CUdeviceptr>(other), other_pitch,
                           0x01020304u, 16, kH));
  CUDA_MEMCPY3D c3{};
  c3.srcMemoryType = CU_MEMORYTYPE_DEVICE;
  c3.srcDevice = reinterpret_cast<CUdeviceptr>(other);
  c3.srcPitch = other_pitch;
  c3.srcHeight = kH;
  c3.dstMemoryType = CU_MEMORYTYPE_HOST;
  c3.dstHost = back.data();
  c3.dstPitch = kW;
  c3.dstHeight = kH;
  c3.WidthInBytes = kW;
  c3.Height = kH;
  c3.Depth = 1;
  corpus::Rc("cuMemcpy3D pitched -> host", cuMemcpy3D(&c3));
  wrong = 0;
  const unsigned char pattern[4] = {4, 3, 2, 1};  // little-endian 0x01020304
  for (int y = 0; y < kH; ++y)
    for (int x = 0; x < kW; ++x) {
      unsigned char want = x < 64 ? pattern[x % 4] : Byte(x, y);
      if (back[y * kW + x] != want) ++wrong;
    }
  std::printf("driver 2-D/3-D copies: %d wrong\n", wrong);
  corpus::Expect(wrong == 0, "driver copies");

  CORPUS_CHECK(cudaFree(vol2.ptr));
  CORPUS_CHECK(cudaFree(vol.ptr));
  CORPUS_CHECK(cudaFreeHost(pinned));
  CORPUS_CHECK(cudaStreamDestroy(stream));
  CORPUS_CHECK(cudaFree(other));
  CORPUS_CHECK(cudaFree(linear));
  CORPUS_CHECK(cudaFree(pitched));
  return corpus::Finish();
}
