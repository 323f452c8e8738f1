// CUB's device-wide algorithms the way they are meant to be called: a first
// call with a null temp pointer to size the temporary storage, the storage
// taken from cudaMallocAsync on the application's stream, the real call,
// the storage freed stream-ordered. Reduce, exclusive scan, radix sort of
// key/value pairs, histogram, select-if and run-length encode.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cub/cub.cuh>
#include <vector>

#include "corpus_check.h"

namespace {

struct IsOdd {
  __host__ __device__ bool operator()(int v) const { return (v & 1) != 0; }
};

// Calls `algo(temp, bytes)` twice, CUB style, with stream-ordered storage.
template <typename Algo>
cudaError_t WithTemp(cudaStream_t stream, Algo algo, size_t* bytes_out) {
  size_t bytes = 0;
  cudaError_t rc = algo(nullptr, bytes);
  if (rc != cudaSuccess) return rc;
  void* temp = nullptr;
  rc = cudaMallocAsync(&temp, bytes, stream);
  if (rc != cudaSuccess) return rc;
  rc = algo(temp, bytes);
  cudaError_t rc_free = cudaFreeAsync(temp, stream);
  *bytes_out = bytes;
  return rc != cudaSuccess ? rc : rc_free;
}

}  // namespace

int main() {
  corpus::ProgramName() = "lib_cub";
  CORPUS_CHECK(cudaSetDevice(0));
  cudaStream_t stream;
  CORPUS_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  constexpr int kN = 1 << 20;
  std::vector<int> host(kN);
  for (int i = 0; i < kN; ++i)
    host[i] = static_cast<int>((i * 40503u) % 65521u);
  int *in, *out, *values, *values_out, *count;
  CORPUS_CHECK(cudaMallocAsync(&in, kN * sizeof(int), stream));
  CORPUS_CHECK(cudaMallocAsync(&out, kN * sizeof(int), stream));
  CORPUS_CHECK(cudaMallocAsync(&values, kN * sizeof(int), stream));
  CORPUS_CHECK(cudaMallocAsync(&values_out, kN * sizeof(int), stream));
  CORPUS_CHECK(cudaMallocAsync(&count, sizeof(int), stream));
  CORPUS_CHECK(cudaMemcpyAsync(in, host.data(), kN * sizeof(int),
                               cudaMemcpyHostToDevice, stream));
  long long* sum = nullptr;
  CORPUS_CHECK(cudaMallocAsync(&sum, sizeof *sum, stream));
  size_t bytes = 0;

  // Reduce (as 64-bit through a transform-free input: ints summed into ll).
  std::vector<long long> wide(host.begin(), host.end());
  long long* d_wide = nullptr;
  CORPUS_CHECK(cudaMallocAsync(&d_wide, kN * sizeof(long long), stream));
  CORPUS_CHECK(cudaMemcpyAsync(d_wide, wide.data(), kN * sizeof(long long),
                               cudaMemcpyHostToDevice, stream));
  corpus::Rc("cub::DeviceReduce::Sum", WithTemp(
                                           stream,
                                           [&](void* t, size_t& b) {
                                             return cub::DeviceReduce::Sum(
                                                 t, b, d_wide, sum, kN, stream);
                                           },
                                           &bytes));
  long long got_sum = 0;
  CORPUS_CHECK(cudaMemcpyAsync(&got_sum, sum, sizeof got_sum,
                               cudaMemcpyDeviceToHost, stream));
  CORPUS_CHECK(cudaStreamSynchronize(stream));
  long long want_sum = 0;
  for (int v : host) want_sum += v;
  std::printf("reduce: %lld (%s)\n", got_sum,
              got_sum == want_sum ? "right" : "WRONG");
  corpus::Expect(got_sum == want_sum, "reduce");

  // Exclusive scan.
  corpus::Rc("cub::DeviceScan::ExclusiveSum",
             WithTemp(
                 stream,
                 [&](void* t, size_t& b) {
                   return cub::DeviceScan::ExclusiveSum(t, b, in, out, kN,
                                                        stream);
                 },
                 &bytes));
  std::vector<int> scanned(kN);
  CORPUS_CHECK(cudaMemcpyAsync(scanned.data(), out, kN * sizeof(int),
                               cudaMemcpyDeviceToHost, stream));
  CORPUS_CHECK(cudaStreamSynchronize(stream));
  int wrong = 0;
  unsigned run = 0;  // the device's int sum wraps; so does this one
  for (int i = 0; i < kN; ++i) {
    if (static_cast<unsigned>(scanned[i]) != run) ++wrong;
    run += static_cast<unsigned>(host[i]);
  }
  std::printf("exclusive scan: %d wrong\n", wrong);
  corpus::Expect(wrong == 0, "scan");

  // Radix sort pairs.
  std::vector<int> ids(kN);
  for (int i = 0; i < kN; ++i) ids[i] = i;
  CORPUS_CHECK(cudaMemcpyAsync(values, ids.data(), kN * sizeof(int),
                               cudaMemcpyHostToDevice, stream));
  corpus::Rc("cub::DeviceRadixSort::SortPairs",
             WithTemp(
                 stream,
                 [&](void* t, size_t& b) {
                   return cub::DeviceRadixSort::SortPairs(
                       t, b, in, out, values, values_out, kN, 0,
                       sizeof(int) * 8, stream);
                 },
                 &bytes));
  std::vector<int> keys_sorted(kN), ids_sorted(kN);
  CORPUS_CHECK(cudaMemcpyAsync(keys_sorted.data(), out, kN * sizeof(int),
                               cudaMemcpyDeviceToHost, stream));
  CORPUS_CHECK(cudaMemcpyAsync(ids_sorted.data(), values_out, kN * sizeof(int),
                               cudaMemcpyDeviceToHost, stream));
  CORPUS_CHECK(cudaStreamSynchronize(stream));
  std::vector<std::pair<int, int>> pairs(kN);
  for (int i = 0; i < kN; ++i) pairs[i] = {host[i], i};
  std::stable_sort(
      pairs.begin(), pairs.end(),
      [](const auto& a, const auto& b) { return a.first < b.first; });
  wrong = 0;
  for (int i = 0; i < kN; ++i)
    if (keys_sorted[i] != pairs[i].first || ids_sorted[i] != pairs[i].second)
      ++wrong;
  std::printf("radix sort pairs (stable): %d wrong\n", wrong);
  corpus::Expect(wrong == 0, "radix sort");

  // Histogram: 64 even bins over [0, 65536).
  int* hist = nullptr;
  CORPUS_CHECK(cudaMallocAsync(&hist, 64 * sizeof(int), stream));
  corpus::Rc("cub::DeviceHistogram::HistogramEven",
             WithTemp(
                 stream,
                 [&](void* t, size_t& b) {
                   return cub::DeviceHistogram::HistogramEven(
                       t, b, in, hist, 65, 0, 65536, kN, stream);
                 },
                 &bytes));
  int host_hist[64];
  CORPUS_CHECK(cudaMemcpyAsync(host_hist, hist, sizeof host_hist,
                               cudaMemcpyDeviceToHost, stream));
  CORPUS_CHECK(cudaStreamSynchronize(stream));
  int want_hist[64] = {0};
  for (int v : host) ++want_hist[v / 1024];
  wrong = 0;
  for (int b = 0; b < 64; ++b)
    if (host_hist[b] != want_hist[b]) ++wrong;
  std::printf("histogram: %d wrong bins\n", wrong);
  corpus::Expect(wrong == 0, "histogram");

  // Select odd values; run-length encode the sorted keys.
  corpus::Rc("cub::DeviceSelect::If", WithTemp(
                                          stream,
                                          [&](void* t, size_t& b) {
                                            return cub::DeviceSelect::If(
                                                t, b, in, values_out, count, kN,
                                                IsOdd(), stream);
                                          },
                                          &bytes));
  int odd = 0;
  CORPUS_CHECK(
      cudaMemcpyAsync(&odd, count, sizeof odd, cudaMemcpyDeviceToHost, stream));
  CORPUS_CHECK(cudaStreamSynchronize(stream));
  int want_odd = 0;
  for (int v : host) want_odd += v & 1;
  int* runs_unique = values;  // reused
  int* runs_length = in;      // reused: the input is not needed any more
  corpus::Rc("cub::DeviceRunLengthEncode::Encode",
             WithTemp(
                 stream,
                 [&](void* t, size_t& b) {
                   return cub::DeviceRunLengthEncode::Encode(
                       t, b, out, runs_unique, runs_length, count, kN, stream);
                 },
                 &bytes));
  int runs = 0;
  CORPUS_CHECK(cudaMemcpyAsync(&runs, count, sizeof runs,
                               cudaMemcpyDeviceToHost, stream));
  CORPUS_CHECK(cudaStreamSynchronize(stream));
  std::vector<int> distinct(host);
  std::sort(distinct.begin(), distinct.end());
  int want_runs = static_cast<int>(
      std::unique(distinct.begin(), distinct.end()) - distinct.begin());
  std::printf("select odd: %d (%s), runs: %d (%s)\n", odd,
              odd == want_odd ? "right" : "WRONG", runs,
              runs == want_runs ? "right" : "WRONG");
  corpus::Expect(odd == want_odd && runs == want_runs, "select/encode");

  for (void* p : {static_cast<void*>(in), static_cast<void*>(out),
                  static_cast<void*>(values), static_cast<void*>(values_out),
                  static_cast<void*>(count), static_cast<void*>(sum),
                  static_cast<void*>(d_wide), static_cast<void*>(hist)})
    CORPUS_CHECK(cudaFreeAsync(p, stream));
  CORPUS_CHECK(cudaStreamSynchronize(stream));
  CORPUS_CHECK(cudaStreamDestroy(stream));
  return corpus::Finish();
}
