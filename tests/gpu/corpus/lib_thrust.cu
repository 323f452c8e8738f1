// Thrust as most CUDA C++ code uses it: device_vector containers, sort,
// sort_by_key, reduce, transform_reduce, inclusive_scan, copy_if, unique and
// reduce_by_key, a policy on the application's stream
// (thrust::cuda::par_nosync.on), and a raw cudaMalloc buffer wrapped in a
// device_ptr. Integer data: every result is exact.
#include <cuda_runtime.h>
#include <thrust/copy.h>
#include <thrust/device_ptr.h>
#include <thrust/device_vector.h>
#include <thrust/execution_policy.h>
#include <thrust/functional.h>
#include <thrust/host_vector.h>
#include <thrust/reduce.h>
#include <thrust/scan.h>
#include <thrust/sequence.h>
#include <thrust/sort.h>
#include <thrust/transform.h>
#include <thrust/transform_reduce.h>
#include <thrust/unique.h>

#include <algorithm>
#include <cstdio>
#include <numeric>
#include <vector>

#include "corpus_check.h"

namespace {

struct IsMultipleOf3 {
  __host__ __device__ bool operator()(int v) const { return v % 3 == 0; }
};

struct Square {
  __host__ __device__ long long operator()(int v) const {
    return static_cast<long long>(v) * v;
  }
};

}  // namespace

int main() {
  corpus::ProgramName() = "lib_thrust";
  CORPUS_CHECK(cudaSetDevice(0));
  constexpr int kN = 1 << 20;
  std::vector<int> host(kN);
  for (int i = 0; i < kN; ++i)
    host[i] = static_cast<int>((i * 2654435761u) % 100003u) - 50000;

  thrust::device_vector<int> d(host.begin(), host.end());
  thrust::sort(d.begin(), d.end());
  std::vector<int> sorted = host;
  std::sort(sorted.begin(), sorted.end());
  thrust::host_vector<int> back = d;
  bool same = std::equal(sorted.begin(), sorted.end(), back.begin());
  std::printf("sort: %s\n", same ? "right" : "WRONG");
  corpus::Expect(same, "sort");

  long long sum = thrust::reduce(d.begin(), d.end(), 0ll);
  long long squares = thrust::transform_reduce(d.begin(), d.end(), Square(),
                                               0ll, thrust::plus<long long>());
  long long want_sum = std::accumulate(host.begin(), host.end(), 0ll);
  long long want_sq = 0;
  for (int v : host) want_sq += static_cast<long long>(v) * v;
  std::printf("reduce %lld, sum of squares %lld\n", sum, squares);
  corpus::Expect(sum == want_sum && squares == want_sq, "reductions");

  // Keys and values on the application's stream.
  cudaStream_t stream;
  CORPUS_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  thrust::device_vector<int> keys(kN), values(kN);
  for (int i = 0; i < kN; ++i) host[i] = i % 1000;
  thrust::copy(host.begin(), host.end(), keys.begin());
  thrust::sequence(thrust::cuda::par_nosync.on(stream), values.begin(),
                   values.end());
  thrust::sort_by_key(thrust::cuda::par_nosync.on(stream), keys.begin(),
                      keys.end(), values.begin());
  thrust::device_vector<int> unique_keys(1000), key_sums(1000);
  auto ends = thrust::reduce_by_key(thrust::cuda::par_nosync.on(stream),
                                    keys.begin(), keys.end(), values.begin(),
                                    unique_keys.begin(), key_sums.begin());
  CORPUS_CHECK(cudaStreamSynchronize(stream));
  int groups = static_cast<int>(ends.first - unique_keys.begin());
  thrust::host_vector<int> sums = key_sums;
  // Key k collects values k, k+1000, ...: sum = m*k + 1000*m*(m-1)/2.
  int bad = 0;
  for (int k = 0; k < groups; ++k) {
    long long m = (kN - 1 - k) / 1000 + 1;
    long long want = m * k + 1000 * m * (m - 1) / 2;
    if (sums[k] != static_cast<int>(want)) ++bad;
  }
  std::printf("reduce_by_key: %d groups, %d wrong\n", groups, bad);
  corpus::Expect(groups == 1000 && bad == 0, "reduce_by_key");

  // Scan, copy_if, unique.
  thrust::device_vector<int> ones(kN, 1), prefix(kN);
  thrust::inclusive_scan(ones.begin(), ones.end(), prefix.begin());
  int last = prefix.back();
  thrust::device_vector<int> multiples(kN);
  auto mend = thrust::copy_if(thrust::device, prefix.begin(), prefix.end(),
                              multiples.begin(), IsMultipleOf3());
  int count = static_cast<int>(mend - multiples.begin());
  thrust::device_vector<int> dup(keys);  // sorted keys, 1000 distinct
  int distinct =
      static_cast<int>(thrust::unique(dup.begin(), dup.end()) - dup.begin());
  std::printf("scan last %d, multiples of 3: %d, distinct keys %d\n", last,
              count, distinct);
  corpus::Expect(last == kN && count == kN / 3 && distinct == 1000,
                 "scan/copy_if/unique");

  // A raw allocation used through device_ptr.
  int* raw = nullptr;
  CORPUS_CHECK(cudaMalloc(&raw, kN * sizeof(int)));
  thrust::device_ptr<int> p(raw);
  thrust::sequence(p, p + kN, 7, 2);
  long long raw_sum = thrust::reduce(p, p + kN, 0ll);
  long long want_raw = 7ll * kN + 2ll * kN * (kN - 1) / 2;
  std::printf("device_ptr over cudaMalloc: sum %lld\n", raw_sum);
  corpus::Expect(raw_sum == want_raw, "device_ptr sum");
  CORPUS_CHECK(cudaFree(raw));
  CORPUS_CHECK(cudaStreamDestroy(stream));
  return corpus::Finish();
}
