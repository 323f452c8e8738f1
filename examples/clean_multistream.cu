// clean_multistream: a bug-free program that exercises what guard zones must
// never disturb, printing checksums (every input is an integer, every result
// exact and deterministic):
//
//   * 4 host threads, each with its own non-blocking stream: cudaMallocAsync
//     buffers (thread 3 from an explicit pool, cudaMallocFromPoolAsync), CUB
//     DeviceRadixSort::SortKeys + DeviceReduce::Sum/Max with temporary storage
//     from the same stream-ordered allocator, a 4-byte counter buffer, the
//     very last element copied back, cudaFreeAsync;
//   * thrust (device_vector, sort, reduce) on the legacy stream;
//   * cudaMallocManaged written by the host, updated by a kernel, read back;
//   * cudaMallocPitch buffers filled and copied with cudaMemcpy2D /
//     cudaMemset2D / cudaMemcpy2DAsync exactly at the edges (full width, full
//     height, the last row alone);
//   * cudaMalloc3D + cudaMemset3D + cudaMemcpy3D over the exact extent;
//   * an odd-sized (1000003-byte) cudaMalloc block touched up to its last
//     byte by a kernel, cudaMemset and cudaMemcpy'd exactly.
//
// Expected report: summary.errors == 0 and no leaks, under check=sync and
// check=kernel alike; stdout identical with and without the tool.
#include <cuda_runtime.h>
#include <thrust/device_vector.h>
#include <thrust/functional.h>
#include <thrust/host_vector.h>
#include <thrust/reduce.h>
#include <thrust/sort.h>

#include <cstdint>
#include <cstdio>
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_reduce.cuh>
#include <thread>
#include <vector>

#include "example_check.h"

constexpr int kWorkers = 4;

__host__ __device__ inline uint32_t MixBits(uint32_t x) {
  x ^= x >> 16;
  x *= 0x7feb352du;
  x ^= x >> 15;
  x *= 0x846ca68bu;
  x ^= x >> 16;
  return x;
}

__global__ void StreamKeysKernel(uint32_t* keys, int n, uint32_t salt) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) keys[i] = MixBits(static_cast<uint32_t>(i) * 4u + salt) & 0xfffu;
}

__global__ void StreamOrderCheckKernel(const uint32_t* sorted, int n,
                                       unsigned int* violations) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i + 1 < n && sorted[i] > sorted[i + 1]) atomicAdd(violations, 1u);
}

__global__ void ManagedUpdateKernel(int* m, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) m[i] = (m[i] * m[i] + 7) % 9973;
}

__global__ void PitchedAddRowKernel(unsigned char* p, size_t pitch, int width,
                                    int height) {
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  int y = blockIdx.y;
  if (x < width && y < height) {
    p[y * pitch + x] = static_cast<unsigned char>(p[y * pitch + x] + y);
  }
}

__global__ void ByteTouchKernel(unsigned char* p, size_t n) {
  size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i < n) p[i] = static_cast<unsigned char>(p[i] + i * 31);
}

struct StreamResult {
  int n = 0;
  unsigned int sum = 0, max = 0, first = 0, last = 0, violations = 0;
};

// One worker thread: everything on its own stream, stream-ordered memory.
__attribute__((noinline)) void MultiStreamWorker(int t, StreamResult* out) {
  EXAMPLE_CHECK_CUDA(cudaSetDevice(0));
  cudaStream_t s;
  EXAMPLE_CHECK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaMemPool_t pool = nullptr;
  if (t == kWorkers - 1) {
    cudaMemPoolProps props = {};
    props.allocType = cudaMemAllocationTypePinned;
    props.handleTypes = cudaMemHandleTypeNone;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = 0;
    EXAMPLE_CHECK_CUDA(cudaMemPoolCreate(&pool, &props));
  }
  auto alloc = [&](size_t bytes) {
    void* p = nullptr;
    if (pool != nullptr) {
      EXAMPLE_CHECK_CUDA(cudaMallocFromPoolAsync(&p, bytes, pool, s));
    } else {
      EXAMPLE_CHECK_CUDA(cudaMallocAsync(&p, bytes, s));
    }
    return p;
  };
  const int n = 100003 + 7919 * t;
  auto* keys_in = static_cast<uint32_t*>(alloc(n * sizeof(uint32_t)));
  auto* keys_out = static_cast<uint32_t*>(alloc(n * sizeof(uint32_t)));
  auto* sum = static_cast<uint32_t*>(alloc(sizeof(uint32_t)));
  auto* max = static_cast<uint32_t*>(alloc(sizeof(uint32_t)));
  auto* violations = static_cast<unsigned int*>(alloc(sizeof(unsigned int)));
  StreamKeysKernel<<<(n + 255) / 256, 256, 0, s>>>(keys_in, n, 17u * t + 1);
  EXAMPLE_CHECK_CUDA(cudaGetLastError());

  size_t temp_bytes = 0;
  EXAMPLE_CHECK_CUDA(cub::DeviceRadixSort::SortKeys(
      nullptr, temp_bytes, keys_in, keys_out, n, 0, 32, s));
  void* temp = alloc(temp_bytes);
  EXAMPLE_CHECK_CUDA(cub::DeviceRadixSort::SortKeys(temp, temp_bytes, keys_in,
                                                    keys_out, n, 0, 32, s));
  EXAMPLE_CHECK_CUDA(cudaFreeAsync(temp, s));

  temp_bytes = 0;
  EXAMPLE_CHECK_CUDA(
      cub::DeviceReduce::Sum(nullptr, temp_bytes, keys_out, sum, n, s));
  temp = alloc(temp_bytes);
  EXAMPLE_CHECK_CUDA(
      cub::DeviceReduce::Sum(temp, temp_bytes, keys_out, sum, n, s));
  EXAMPLE_CHECK_CUDA(cudaFreeAsync(temp, s));

  temp_bytes = 0;
  EXAMPLE_CHECK_CUDA(
      cub::DeviceReduce::Max(nullptr, temp_bytes, keys_out, max, n, s));
  temp = alloc(temp_bytes);
  EXAMPLE_CHECK_CUDA(
      cub::DeviceReduce::Max(temp, temp_bytes, keys_out, max, n, s));
  EXAMPLE_CHECK_CUDA(cudaFreeAsync(temp, s));

  EXAMPLE_CHECK_CUDA(cudaMemsetAsync(violations, 0, sizeof(unsigned int), s));
  StreamOrderCheckKernel<<<(n + 255) / 256, 256, 0, s>>>(keys_out, n,
                                                         violations);
  EXAMPLE_CHECK_CUDA(cudaGetLastError());

  uint32_t* h = nullptr;
  EXAMPLE_CHECK_CUDA(cudaMallocHost(&h, 5 * sizeof(uint32_t)));
  EXAMPLE_CHECK_CUDA(cudaMemcpyAsync(&h[0], sum, 4, cudaMemcpyDeviceToHost, s));
  EXAMPLE_CHECK_CUDA(cudaMemcpyAsync(&h[1], max, 4, cudaMemcpyDeviceToHost, s));
  EXAMPLE_CHECK_CUDA(
      cudaMemcpyAsync(&h[2], keys_out, 4, cudaMemcpyDeviceToHost, s));
  EXAMPLE_CHECK_CUDA(
      cudaMemcpyAsync(&h[3], keys_out + n - 1, 4, cudaMemcpyDeviceToHost, s));
  EXAMPLE_CHECK_CUDA(
      cudaMemcpyAsync(&h[4], violations, 4, cudaMemcpyDeviceToHost, s));
  EXAMPLE_CHECK_CUDA(cudaStreamSynchronize(s));
  out->n = n;
  out->sum = h[0];
  out->max = h[1];
  out->first = h[2];
  out->last = h[3];
  out->violations = h[4];

  for (void* p : {static_cast<void*>(keys_in), static_cast<void*>(keys_out),
                  static_cast<void*>(sum), static_cast<void*>(max),
                  static_cast<void*>(violations)}) {
    EXAMPLE_CHECK_CUDA(cudaFreeAsync(p, s));
  }
  EXAMPLE_CHECK_CUDA(cudaStreamSynchronize(s));
  if (pool != nullptr) EXAMPLE_CHECK_CUDA(cudaMemPoolDestroy(pool));
  EXAMPLE_CHECK_CUDA(cudaFreeHost(h));
  EXAMPLE_CHECK_CUDA(cudaStreamDestroy(s));
}

__attribute__((noinline)) long long CleanThrustPart(int n, long long* first) {
  thrust::host_vector<long long> h(n);
  for (int i = 0; i < n; ++i) h[i] = (i * 104729LL) % 65537 - 30000;
  thrust::device_vector<long long> d = h;
  thrust::sort(d.begin(), d.end(), thrust::greater<long long>());
  *first = d.front();
  return thrust::reduce(d.begin(), d.end(), 0LL, thrust::plus<long long>());
}

__attribute__((noinline)) long long CleanManagedPart(int n) {
  int* m = nullptr;
  EXAMPLE_CHECK_CUDA(cudaMallocManaged(&m, n * sizeof(int)));
  for (int i = 0; i < n; ++i) m[i] = i % 1000;
  ManagedUpdateKernel<<<(n + 255) / 256, 256>>>(m, n);
  EXAMPLE_CHECK_CUDA(cudaGetLastError());
  EXAMPLE_CHECK_CUDA(cudaDeviceSynchronize());
  long long s = 0;
  for (int i = 0; i < n; ++i) s += m[i];
  EXAMPLE_CHECK_CUDA(cudaFree(m));
  return s;
}

__attribute__((noinline)) unsigned long long CleanPitchedPart(
    size_t width, size_t height, unsigned long long* last_row) {
  std::vector<unsigned char> src(width * height), dst(width * height);
  for (size_t i = 0; i < src.size(); ++i) {
    src[i] = static_cast<unsigned char>(i % 253);
  }
  void* p = nullptr;
  void* q = nullptr;
  size_t pitch = 0, qpitch = 0;
  EXAMPLE_CHECK_CUDA(cudaMallocPitch(&p, &pitch, width, height));
  EXAMPLE_CHECK_CUDA(cudaMallocPitch(&q, &qpitch, width, height));
  EXAMPLE_CHECK_CUDA(cudaMemset2D(q, qpitch, 0, width, height));
  EXAMPLE_CHECK_CUDA(cudaMemcpy2D(p, pitch, src.data(), width, width, height,
                                  cudaMemcpyHostToDevice));
  dim3 grid((width + 255) / 256, height);
  PitchedAddRowKernel<<<grid, 256>>>(static_cast<unsigned char*>(p), pitch,
                                     static_cast<int>(width),
                                     static_cast<int>(height));
  EXAMPLE_CHECK_CUDA(cudaGetLastError());
  EXAMPLE_CHECK_CUDA(cudaMemcpy2D(q, qpitch, p, pitch, width, height,
                                  cudaMemcpyDeviceToDevice));
  EXAMPLE_CHECK_CUDA(cudaMemset2D(p, pitch, 0xff, width, height));
  cudaStream_t s;
  EXAMPLE_CHECK_CUDA(cudaStreamCreate(&s));
  EXAMPLE_CHECK_CUDA(cudaMemcpy2DAsync(dst.data(), width, q, qpitch, width,
                                       height, cudaMemcpyDeviceToHost, s));
  EXAMPLE_CHECK_CUDA(cudaStreamSynchronize(s));
  EXAMPLE_CHECK_CUDA(cudaStreamDestroy(s));
  unsigned long long sum = 0;
  for (unsigned char c : dst) sum += c;
  // The last row alone, from each buffer: its range ends inside the block.
  std::vector<unsigned char> row(width);
  EXAMPLE_CHECK_CUDA(cudaMemcpy2D(
      row.data(), width, static_cast<unsigned char*>(p) + (height - 1) * pitch,
      pitch, width, 1, cudaMemcpyDeviceToHost));
  unsigned long long r = 0;
  for (unsigned char c : row) r += c;
  EXAMPLE_CHECK_CUDA(cudaMemcpy(
      row.data(), static_cast<unsigned char*>(q) + (height - 1) * qpitch, width,
      cudaMemcpyDeviceToHost));
  for (unsigned char c : row) r += c;
  *last_row = r;
  EXAMPLE_CHECK_CUDA(cudaFree(p));
  EXAMPLE_CHECK_CUDA(cudaFree(q));
  return sum;
}

__attribute__((noinline)) unsigned long long Clean3DPart() {
  const cudaExtent ext = make_cudaExtent(300, 7, 5);  // bytes, rows, slices
  cudaPitchedPtr pp = {};
  EXAMPLE_CHECK_CUDA(cudaMalloc3D(&pp, ext));
  EXAMPLE_CHECK_CUDA(cudaMemset3D(pp, 0x21, ext));
  std::vector<unsigned char> h(ext.width * ext.height * ext.depth, 0);
  cudaMemcpy3DParms parms = {};
  parms.srcPtr = pp;
  parms.dstPtr =
      make_cudaPitchedPtr(h.data(), ext.width, ext.width, ext.height);
  parms.extent = ext;
  parms.kind = cudaMemcpyDeviceToHost;
  EXAMPLE_CHECK_CUDA(cudaMemcpy3D(&parms));
  EXAMPLE_CHECK_CUDA(cudaFree(pp.ptr));
  unsigned long long sum = 0;
  for (unsigned char c : h) sum += c;
  return sum;
}

__attribute__((noinline)) unsigned long long CleanOddBytesPart(size_t n) {
  void* p = nullptr;
  void* q = nullptr;
  EXAMPLE_CHECK_CUDA(cudaMalloc(&p, n));
  EXAMPLE_CHECK_CUDA(cudaMalloc(&q, n));
  EXAMPLE_CHECK_CUDA(cudaMemset(p, 3, n));
  ByteTouchKernel<<<(n + 255) / 256, 256>>>(static_cast<unsigned char*>(p), n);
  EXAMPLE_CHECK_CUDA(cudaGetLastError());
  EXAMPLE_CHECK_CUDA(cudaMemcpy(q, p, n, cudaMemcpyDeviceToDevice));
  std::vector<unsigned char> h(n);
  EXAMPLE_CHECK_CUDA(cudaMemcpy(h.data(), q, n, cudaMemcpyDeviceToHost));
  EXAMPLE_CHECK_CUDA(cudaFree(p));
  EXAMPLE_CHECK_CUDA(cudaFree(q));
  unsigned long long sum = 0;
  for (unsigned char c : h) sum += c;
  return sum;
}

int main() {
  EXAMPLE_CHECK_CUDA(cudaFree(nullptr));
  StreamResult results[kWorkers];
  std::vector<std::thread> workers;
  for (int t = 0; t < kWorkers; ++t) {
    workers.emplace_back(MultiStreamWorker, t, &results[t]);
  }
  for (std::thread& w : workers) w.join();
  for (int t = 0; t < kWorkers; ++t) {
    const StreamResult& r = results[t];
    std::printf(
        "clean_multistream: stream %d: n %d, sum %u, max %u, sorted "
        "[%u .. %u], order violations %u\n",
        t, r.n, r.sum, r.max, r.first, r.last, r.violations);
  }
  long long first = 0;
  long long thrust_sum = CleanThrustPart(1 << 19, &first);
  std::printf("clean_multistream: thrust sum %lld, largest %lld\n", thrust_sum,
              first);
  std::printf("clean_multistream: managed sum %lld\n", CleanManagedPart(77777));
  unsigned long long last_row = 0;
  unsigned long long pitched = CleanPitchedPart(1000, 37, &last_row);
  std::printf("clean_multistream: pitched sum %llu, last rows %llu\n", pitched,
              last_row);
  std::printf("clean_multistream: 3d sum %llu\n", Clean3DPart());
  std::printf("clean_multistream: odd-size sum %llu\n",
              CleanOddBytesPart(1000003));
  EXAMPLE_CHECK_CUDA(cudaDeviceSynchronize());
  return 0;
}
