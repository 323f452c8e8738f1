// train_loop: a training-style benchmark workload for the guard-zone
// overhead. A few large buffers (default 4 x 256 MiB of floats), then N
// iterations of a step of 8 kernels (axpy, scale, add, clamp, fma, multiply,
// block reduction, final reduction) on one stream, the step's loss copied to
// pinned host memory and one cudaStreamSynchronize per iteration, like a
// training loop reading its loss.
//
//   train_loop [--iters N] [--mib M] [--buffers B] [--small-kernels K]
//              [--small-window-kib W]
//       N iterations (default 100), buffers of M MiB (default 256), B buffers
//       (default 4, at least 4).
//       --small-kernels K: the launch-heavy variant (benchmarks/gpu/
//       perf_suite.sh): each iteration launches K short kernels (an FMA over a
//       64 KiB window of the large buffers, 64 blocks; the windows rotate
//       through the buffers), then the loss reduction over the last window,
//       the copy and the one cudaStreamSynchronize. The launch path, not the
//       memory bandwidth, is what such a loop measures.
//       --small-window-kib W: each short kernel covers W KiB (default 64, a
//       multiple of 64) instead, so it runs longer (the perf suite's kernel
//       loop sizes it for ~12 us kernels); the loss is still over 64 KiB.
//
// Prints two lines: "train_loop: ... N iterations in X ms (Y ms/iter)" (the
// loop only, after allocation and initialisation; with --small-kernels also
// ", Z us/kernel" over every kernel of the loop) and "train_loop: checksum
// W" (the sum of the per-iteration losses). Grids are fixed (not derived
// from the device), so the checksum is bit-for-bit deterministic for given
// arguments, with or without the tool. Expected report: no errors, no leaks.
#include <cuda_runtime.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "example_check.h"

namespace {

constexpr int kThreads = 256;
constexpr int kGrid = 2048;          // element-wise kernels: grid-stride loops
constexpr int kReduceBlocks = 1024;  // fixed: the reduction order is fixed
// --small-kernels: a window of 16 Ki floats (64 KiB), one element per thread.
constexpr size_t kSmallWindow = size_t{1} << 14;
constexpr int kSmallGrid = static_cast<int>(kSmallWindow / kThreads);

__host__ __device__ inline uint32_t MixBits(uint32_t x) {
  x ^= x >> 16;
  x *= 0x7feb352du;
  x ^= x >> 15;
  x *= 0x846ca68bu;
  x ^= x >> 16;
  return x;
}

}  // namespace

__global__ void TrainInitKernel(float* p, size_t n, uint32_t salt) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
       i < n; i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    p[i] =
        (MixBits(static_cast<uint32_t>(i) ^ salt) & 0xffffu) / 65536.0f - 0.5f;
  }
}

// An element-wise kernel over n elements (grid-stride loop).
#define TRAIN_ELEMENTWISE(name, params, body)                            \
  __global__ void name params {                                          \
    const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;   \
    for (size_t i =                                                      \
             blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; \
         i < n; i += stride) {                                           \
      body;                                                              \
    }                                                                    \
  }

TRAIN_ELEMENTWISE(TrainAxpyKernel,
                  (float* y, const float* x, float a, size_t n),
                  y[i] = a * x[i] + y[i])
TRAIN_ELEMENTWISE(TrainScaleKernel,
                  (float* out, const float* in, float s, size_t n),
                  out[i] = s * in[i])
TRAIN_ELEMENTWISE(TrainAddKernel,
                  (float* out, const float* a, const float* b, size_t n),
                  out[i] = a[i] + b[i])
TRAIN_ELEMENTWISE(TrainClampKernel, (float* out, const float* in, size_t n),
                  out[i] = fminf(fmaxf(0.9f * in[i], -1.0f), 1.0f))
TRAIN_ELEMENTWISE(TrainFmaKernel, (float* y, const float* x, size_t n),
                  y[i] = 0.5f * y[i] + 0.25f * x[i])
TRAIN_ELEMENTWISE(TrainMulKernel,
                  (float* out, const float* a, const float* b, size_t n),
                  out[i] = a[i] * b[i])

__global__ void TrainBlockReduceKernel(const float* in, size_t n,
                                       float* partials) {
  __shared__ float s[kThreads];
  float v = 0.0f;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
       i < n; i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    v += in[i];
  }
  s[threadIdx.x] = v;
  __syncthreads();
  for (int w = blockDim.x / 2; w > 0; w /= 2) {
    if (threadIdx.x < w) s[threadIdx.x] += s[threadIdx.x + w];
    __syncthreads();
  }
  if (threadIdx.x == 0) partials[blockIdx.x] = s[0];
}

__global__ void TrainFinalReduceKernel(const float* partials, int count,
                                       float* loss) {
  __shared__ float s[kThreads];
  float v = 0.0f;
  for (int i = threadIdx.x; i < count; i += blockDim.x) v += partials[i];
  s[threadIdx.x] = v;
  __syncthreads();
  for (int w = blockDim.x / 2; w > 0; w /= 2) {
    if (threadIdx.x < w) s[threadIdx.x] += s[threadIdx.x + w];
    __syncthreads();
  }
  if (threadIdx.x == 0) *loss = s[0] / static_cast<float>(count);
}

// The launch-heavy step: `kernels` FMA kernels over rotating windows, then
// the loss of the last window. Returns the number of kernels launched.
__attribute__((noinline)) long TrainSmallKernelStep(
    const std::vector<float*>& buf, size_t n, long it, int kernels,
    size_t window, float* partials, float* loss, cudaStream_t stream) {
  const int nbuf = static_cast<int>(buf.size());
  const size_t windows = n / window;
  const int grid = static_cast<int>(window / kThreads);
  const float* last = buf[0];
  for (int j = 0; j < kernels; ++j) {
    const size_t slot = static_cast<size_t>(it * kernels + j) % windows;
    float* y = buf[j % nbuf] + slot * window;
    const float* x = buf[(j + 1) % nbuf] + slot * window;
    TrainFmaKernel<<<grid, kThreads, 0, stream>>>(y, x, window);
    last = y;
  }
  TrainBlockReduceKernel<<<kSmallGrid, kThreads, 0, stream>>>(
      last, kSmallWindow, partials);
  TrainFinalReduceKernel<<<1, kThreads, 0, stream>>>(partials, kSmallGrid,
                                                     loss);
  return kernels + 2;
}

__attribute__((noinline)) float* TrainAllocateBuffer(size_t bytes) {
  void* p = nullptr;
  EXAMPLE_CHECK_CUDA(cudaMalloc(&p, bytes));
  return static_cast<float*>(p);
}

int main(int argc, char** argv) {
  long iters = 100;
  long mib = 256;
  int nbuf = 4;
  int small_kernels = 0;
  long window_kib = 64;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--iters") && i + 1 < argc) {
      iters = std::atol(argv[++i]);
    } else if (!std::strcmp(argv[i], "--mib") && i + 1 < argc) {
      mib = std::atol(argv[++i]);
    } else if (!std::strcmp(argv[i], "--buffers") && i + 1 < argc) {
      nbuf = std::atoi(argv[++i]);
    } else if (!std::strcmp(argv[i], "--small-kernels") && i + 1 < argc) {
      small_kernels = std::atoi(argv[++i]);
    } else if (!std::strcmp(argv[i], "--small-window-kib") && i + 1 < argc) {
      window_kib = std::atol(argv[++i]);
    } else {
      std::fprintf(stderr,
                   "usage: %s [--iters N] [--mib M] [--buffers B] "
                   "[--small-kernels K] [--small-window-kib W]\n",
                   argv[0]);
      return 2;
    }
  }
  if (iters < 0 || mib < 1 || nbuf < 4 || small_kernels < 0 ||
      window_kib < 64 || window_kib % 64 != 0 || window_kib > mib * 1024) {
    std::fprintf(stderr, "train_loop: bad arguments\n");
    return 2;
  }
  const size_t bytes = static_cast<size_t>(mib) << 20;
  const size_t n = bytes / sizeof(float);

  EXAMPLE_CHECK_CUDA(cudaFree(nullptr));
  cudaStream_t stream;
  EXAMPLE_CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  std::vector<float*> buf(nbuf);
  for (int b = 0; b < nbuf; ++b) {
    buf[b] = TrainAllocateBuffer(bytes);
    TrainInitKernel<<<kGrid, kThreads, 0, stream>>>(buf[b], n, 0x9e3779b9u * b);
  }
  float* partials = TrainAllocateBuffer(kReduceBlocks * sizeof(float));
  float* loss = TrainAllocateBuffer(sizeof(float));
  float* host_loss = nullptr;
  EXAMPLE_CHECK_CUDA(cudaMallocHost(&host_loss, sizeof(float)));
  EXAMPLE_CHECK_CUDA(cudaGetLastError());
  EXAMPLE_CHECK_CUDA(cudaStreamSynchronize(stream));

  using Clock = std::chrono::steady_clock;
  auto start = Clock::now();
  double checksum = 0.0;
  long launched = 0;
  for (long it = 0; small_kernels > 0 && it < iters; ++it) {
    launched += TrainSmallKernelStep(
        buf, n, it, small_kernels,
        static_cast<size_t>(window_kib) * 1024 / sizeof(float), partials, loss,
        stream);
    EXAMPLE_CHECK_CUDA(cudaMemcpyAsync(host_loss, loss, sizeof(float),
                                       cudaMemcpyDeviceToHost, stream));
    EXAMPLE_CHECK_CUDA(cudaStreamSynchronize(stream));
    checksum += *host_loss;
  }
  for (long it = 0; small_kernels == 0 && it < iters; ++it) {
    // Buffers rotate, so the extra ones (--buffers > 4) are used too.
    float* a = buf[it % nbuf];
    float* b = buf[(it + 1) % nbuf];
    float* c = buf[(it + 2) % nbuf];
    float* d = buf[(it + 3) % nbuf];
    TrainAxpyKernel<<<kGrid, kThreads, 0, stream>>>(b, a, 0.5f, n);
    TrainScaleKernel<<<kGrid, kThreads, 0, stream>>>(c, b, 0.75f, n);
    TrainAddKernel<<<kGrid, kThreads, 0, stream>>>(d, c, a, n);
    TrainClampKernel<<<kGrid, kThreads, 0, stream>>>(a, d, n);
    TrainFmaKernel<<<kGrid, kThreads, 0, stream>>>(b, a, n);
    TrainMulKernel<<<kGrid, kThreads, 0, stream>>>(c, a, b, n);
    TrainBlockReduceKernel<<<kReduceBlocks, kThreads, 0, stream>>>(c, n,
                                                                   partials);
    TrainFinalReduceKernel<<<1, kThreads, 0, stream>>>(partials, kReduceBlocks,
                                                       loss);
    EXAMPLE_CHECK_CUDA(cudaMemcpyAsync(host_loss, loss, sizeof(float),
                                       cudaMemcpyDeviceToHost, stream));
    EXAMPLE_CHECK_CUDA(cudaStreamSynchronize(stream));
    checksum += *host_loss;
  }
  EXAMPLE_CHECK_CUDA(cudaGetLastError());
  double ms =
      std::chrono::duration<double, std::milli>(Clock::now() - start).count();

  for (float* p : buf) EXAMPLE_CHECK_CUDA(cudaFree(p));
  EXAMPLE_CHECK_CUDA(cudaFree(partials));
  EXAMPLE_CHECK_CUDA(cudaFree(loss));
  EXAMPLE_CHECK_CUDA(cudaFreeHost(host_loss));
  EXAMPLE_CHECK_CUDA(cudaStreamDestroy(stream));
  if (small_kernels > 0) {
    std::printf(
        "train_loop: %d buffers of %ld MiB, %d small kernels per iteration, "
        "%ld iterations in %.1f ms (%.4f ms/iter, %.3f us/kernel)\n",
        nbuf, mib, small_kernels, iters, ms, iters ? ms / iters : 0.0,
        launched ? ms * 1000.0 / launched : 0.0);
  } else {
    std::printf(
        "train_loop: %d buffers of %ld MiB, %ld iterations in %.1f ms "
        "(%.4f ms/iter)\n",
        nbuf, mib, iters, ms, iters ? ms / iters : 0.0);
  }
  std::printf("train_loop: checksum %.9e\n", checksum);
  return 0;
}
