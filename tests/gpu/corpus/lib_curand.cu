// cuRAND both ways, as a Monte Carlo code uses it: the host API (a Philox
// generator with a fixed seed and offset on the application's stream,
// uniform and normal batches into cudaMalloc'ed buffers) and the device API
// (curandState arrays in device memory, curand_init per thread, an estimate
// of pi). Same seed, same numbers: the sums are printed exactly.
#include <cuda_runtime.h>
#include <curand.h>
#include <curand_kernel.h>

#include <cmath>
#include <cstdio>
#include <vector>

#include "corpus_check.h"

namespace {

__global__ void SetupStates(curandStatePhilox4_32_10_t* states,
                            unsigned long long seed) {
  int id = blockIdx.x * blockDim.x + threadIdx.x;
  curand_init(seed, id, 0, &states[id]);
}

__global__ void CountInside(curandStatePhilox4_32_10_t* states, int draws,
                            unsigned long long* inside) {
  int id = blockIdx.x * blockDim.x + threadIdx.x;
  curandStatePhilox4_32_10_t local = states[id];
  unsigned count = 0;
  for (int i = 0; i < draws; ++i) {
    float x = curand_uniform(&local);
    float y = curand_uniform(&local);
    if (x * x + y * y <= 1.0f) ++count;
  }
  states[id] = local;
  atomicAdd(inside, static_cast<unsigned long long>(count));
}

// Counts of the uniform numbers in ten buckets (integers: exact).
__global__ void Buckets(const float* u, int n, unsigned* buckets) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    int b = static_cast<int>(u[i] * 10.0f);
    atomicAdd(&buckets[b < 10 ? b : 9], 1u);
  }
}

}  // namespace

int main() {
  corpus::ProgramName() = "lib_curand";
  CORPUS_CHECK(cudaSetDevice(0));
  cudaStream_t stream;
  CORPUS_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));

  curandGenerator_t gen;
  corpus::Rc("curandCreateGenerator Philox",
             curandCreateGenerator(&gen, CURAND_RNG_PSEUDO_PHILOX4_32_10));
  CORPUS_CHECK(curandSetStream(gen, stream));
  CORPUS_CHECK(curandSetPseudoRandomGeneratorSeed(gen, 20240607ull));
  CORPUS_CHECK(curandSetGeneratorOffset(gen, 1000));
  constexpr int kN = 1 << 22;
  float* uniform = nullptr;
  float* normal = nullptr;
  CORPUS_CHECK(cudaMalloc(&uniform, kN * sizeof(float)));
  CORPUS_CHECK(cudaMalloc(&normal, kN * sizeof(float)));
  corpus::Rc("curandGenerateUniform", curandGenerateUniform(gen, uniform, kN));
  corpus::Rc("curandGenerateNormal",
             curandGenerateNormal(gen, normal, kN, 0.0f, 1.0f));
  unsigned* buckets = nullptr;
  CORPUS_CHECK(cudaMalloc(&buckets, 10 * sizeof(unsigned)));
  CORPUS_CHECK(cudaMemsetAsync(buckets, 0, 10 * sizeof(unsigned), stream));
  Buckets<<<kN / 256, 256, 0, stream>>>(uniform, kN, buckets);
  CORPUS_CHECK(cudaGetLastError());
  unsigned host_buckets[10];
  CORPUS_CHECK(cudaMemcpyAsync(host_buckets, buckets, sizeof host_buckets,
                               cudaMemcpyDeviceToHost, stream));
  std::vector<float> host_normal(kN);
  CORPUS_CHECK(cudaMemcpyAsync(host_normal.data(), normal, kN * sizeof(float),
                               cudaMemcpyDeviceToHost, stream));
  CORPUS_CHECK(cudaStreamSynchronize(stream));
  std::printf("uniform buckets:");
  unsigned total = 0;
  for (unsigned b : host_buckets) {
    std::printf(" %u", b);
    total += b;
  }
  std::printf("\n");
  corpus::Expect(total == static_cast<unsigned>(kN), "bucket total %u", total);
  double mean = 0, var = 0;
  for (float v : host_normal) mean += v;
  mean /= kN;
  for (float v : host_normal) var += (v - mean) * (v - mean);
  var /= kN;
  std::printf("normal: mean %.6f, variance %.6f\n", mean, var);
  corpus::Expect(std::fabs(mean) < 0.01 && std::fabs(var - 1.0) < 0.01,
                 "normal moments");

  // Device API.
  constexpr int kThreads = 64 * 256;
  constexpr int kDraws = 256;
  curandStatePhilox4_32_10_t* states = nullptr;
  CORPUS_CHECK(cudaMalloc(&states, kThreads * sizeof *states));
  unsigned long long* inside = nullptr;
  CORPUS_CHECK(cudaMalloc(&inside, sizeof *inside));
  CORPUS_CHECK(cudaMemsetAsync(inside, 0, sizeof *inside, stream));
  SetupStates<<<64, 256, 0, stream>>>(states, 42ull);
  CountInside<<<64, 256, 0, stream>>>(states, kDraws, inside);
  CountInside<<<64, 256, 0, stream>>>(states, kDraws, inside);
  CORPUS_CHECK(cudaGetLastError());
  unsigned long long host_inside = 0;
  CORPUS_CHECK(cudaMemcpyAsync(&host_inside, inside, sizeof host_inside,
                               cudaMemcpyDeviceToHost, stream));
  CORPUS_CHECK(cudaStreamSynchronize(stream));
  double pi = 4.0 * host_inside / (2.0 * kThreads * kDraws);
  std::printf("device API: %llu of %d points inside, pi ~ %.5f\n", host_inside,
              2 * kThreads * kDraws, pi);
  corpus::Expect(std::fabs(pi - 3.14159) < 0.01, "pi estimate %f", pi);

  corpus::Rc("curandDestroyGenerator", curandDestroyGenerator(gen));
  CORPUS_CHECK(cudaFree(inside));
  CORPUS_CHECK(cudaFree(states));
  CORPUS_CHECK(cudaFree(buckets));
  CORPUS_CHECK(cudaFree(normal));
  CORPUS_CHECK(cudaFree(uniform));
  CORPUS_CHECK(cudaStreamDestroy(stream));
  return corpus::Finish();
}
