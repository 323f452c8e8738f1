// Read bandwidth over pitched memory, the figure an image pipeline tunes for:
// a 256 MiB cudaMallocPitch frame read through a pitch-linear texture
// (tex2D) and with plain global loads, and the same amount of contiguous
// cudaMalloc memory read with global loads for reference. The sums of what
// was read are checked (and printed); the GB/s go on "~ " lines, which the
// corpus runner masks, and on one machine-readable line:
//
//   RESULT corpus_bandwidth texture_gbps=<x> pitched_gbps=<y> linear_gbps=<z>
//
// Run it alone on the GPU for meaningful figures.
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>

#include "corpus_check.h"

namespace {

constexpr int kWidth = 8192;   // floats per row
constexpr int kHeight = 8192;  // rows
constexpr int kIterations = 50;
constexpr int kBlocksY = 264;

__host__ __device__ unsigned Value(int x, int y) {
  return static_cast<unsigned>((x + 3 * y) & 1023);
}

__global__ void FillPitched(float* p, size_t pitch, int w, int h) {
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  for (int y = blockIdx.y; y < h; y += gridDim.y)
    if (x < w)
      reinterpret_cast<float*>(reinterpret_cast<char*>(p) + y * pitch)[x] =
          static_cast<float>(Value(x, y));
}

__global__ void ReadTexture(cudaTextureObject_t tex, int w, int h,
                            unsigned long long* sum) {
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  unsigned long long local = 0;
  for (int y = blockIdx.y; y < h; y += gridDim.y)
    local += static_cast<unsigned>(tex2D<float>(tex, x + 0.5f, y + 0.5f));
  if (x < w) atomicAdd(sum, local);
}

__global__ void ReadPitched(const float* p, size_t pitch, int w, int h,
                            unsigned long long* sum) {
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  unsigned long long local = 0;
  for (int y = blockIdx.y; y < h; y += gridDim.y)
    local += static_cast<unsigned>(reinterpret_cast<const float*>(
        reinterpret_cast<const char*>(p) + y * pitch)[x]);
  if (x < w) atomicAdd(sum, local);
}

unsigned long long ExpectedSum() {
  unsigned long long s = 0;
  for (int y = 0; y < kHeight; ++y)
    for (int x = 0; x < kWidth; ++x) s += Value(x, y);
  return s;
}

// Runs `launch` kIterations times between two events; returns GB/s.
template <typename Launch>
double Measure(Launch launch, size_t bytes) {
  cudaEvent_t start, stop;
  CORPUS_CHECK(cudaEventCreate(&start));
  CORPUS_CHECK(cudaEventCreate(&stop));
  launch();  // warm-up
  launch();
  CORPUS_CHECK(cudaEventRecord(start));
  for (int i = 0; i < kIterations; ++i) launch();
  CORPUS_CHECK(cudaEventRecord(stop));
  CORPUS_CHECK(cudaEventSynchronize(stop));
  float ms = 0;
  CORPUS_CHECK(cudaEventElapsedTime(&ms, start, stop));
  CORPUS_CHECK(cudaEventDestroy(start));
  CORPUS_CHECK(cudaEventDestroy(stop));
  return static_cast<double>(bytes) * kIterations / (ms * 1e-3) / 1e9;
}

}  // namespace

int main() {
  corpus::ProgramName() = "bandwidth_pitch";
  CORPUS_CHECK(cudaSetDevice(0));
  float* frame = nullptr;
  size_t pitch = 0;
  CORPUS_CHECK(cudaMallocPitch(reinterpret_cast<void**>(&frame), &pitch,
                               kWidth * sizeof(float), kHeight));
  std::printf("frame %d x %d floats, pitch %zu\n", kWidth, kHeight, pitch);
  float* linear = nullptr;
  CORPUS_CHECK(cudaMalloc(&linear, pitch * kHeight));
  unsigned long long* sum = nullptr;
  CORPUS_CHECK(cudaMalloc(&sum, sizeof *sum));

  dim3 block(256), grid(kWidth / 256, kBlocksY);
  FillPitched<<<grid, block>>>(frame, pitch, kWidth, kHeight);
  FillPitched<<<grid, block>>>(linear, pitch, kWidth, kHeight);
  CORPUS_CHECK(cudaGetLastError());
  CORPUS_CHECK(cudaDeviceSynchronize());

  cudaResourceDesc res{};
  res.resType = cudaResourceTypePitch2D;
  res.res.pitch2D.devPtr = frame;
  res.res.pitch2D.desc = cudaCreateChannelDesc<float>();
  res.res.pitch2D.width = kWidth;
  res.res.pitch2D.height = kHeight;
  res.res.pitch2D.pitchInBytes = pitch;
  cudaTextureDesc td{};
  td.filterMode = cudaFilterModePoint;
  td.readMode = cudaReadModeElementType;
  cudaTextureObject_t tex = 0;
  corpus::Rc("pitch-linear texture",
             cudaCreateTextureObject(&tex, &res, &td, nullptr));

  const unsigned long long want = ExpectedSum();
  const size_t bytes = size_t{kWidth} * kHeight * sizeof(float);
  struct Run {
    const char* name;
    double gbps;
    bool right;
  } runs[3];
  auto check = [&](const char* name, auto launch, int slot) {
    CORPUS_CHECK(cudaMemset(sum, 0, sizeof *sum));
    launch();
    unsigned long long got = 0;
    CORPUS_CHECK(cudaMemcpy(&got, sum, sizeof got, cudaMemcpyDeviceToHost));
    runs[slot] = {name, Measure(launch, bytes), got == want};
    std::printf("%s: sum %s\n", name, got == want ? "right" : "WRONG");
    corpus::Expect(got == want, "%s: sum %llu, expected %llu", name, got, want);
  };
  check(
      "texture read over pitched memory",
      [&] { ReadTexture<<<grid, block>>>(tex, kWidth, kHeight, sum); }, 0);
  check(
      "global read over pitched memory",
      [&] { ReadPitched<<<grid, block>>>(frame, pitch, kWidth, kHeight, sum); },
      1);
  check(
      "global read over linear memory",
      [&] {
        ReadPitched<<<grid, block>>>(linear, pitch, kWidth, kHeight, sum);
      },
      2);
  CORPUS_CHECK(cudaGetLastError());
  for (const Run& r : runs) std::printf("~ %s: %.1f GB/s\n", r.name, r.gbps);
  std::printf(
      "RESULT corpus_bandwidth texture_gbps=%.1f pitched_gbps=%.1f "
      "linear_gbps=%.1f\n",
      runs[0].gbps, runs[1].gbps, runs[2].gbps);

  CORPUS_CHECK(cudaDestroyTextureObject(tex));
  CORPUS_CHECK(cudaFree(sum));
  CORPUS_CHECK(cudaFree(linear));
  CORPUS_CHECK(cudaFree(frame));
  return corpus::Finish();
}
