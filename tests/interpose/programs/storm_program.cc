// Many threads allocating and freeing at once.
//
//   gmt_storm_program THREADS ITERATIONS LEAKS_PER_THREAD
//
// Each thread makes ITERATIONS alloc/free pairs of random sizes (1..65536
// bytes, a fixed seed per thread), alternating cudaMalloc/cudaFree and
// cuMemAlloc/cuMemFree, then leaks LEAKS_PER_THREAD cudaMalloc(128) blocks
// (StormLeak). Prints only totals, so the output is deterministic.
#include <atomic>
#include <cstdlib>
#include <random>
#include <thread>
#include <vector>

#include "tests/interpose/programs/program_util.h"

namespace {

std::atomic<long> g_failures{0};

}  // namespace

NOINLINE void StormLeak() {
  void* p = nullptr;
  if (cudaMalloc(&p, 128) != cudaSuccess) ++g_failures;
  AfterCall();
}

NOINLINE void StormThread(int index, int iterations, int leaks) {
  if (cudaSetDevice(0) != cudaSuccess) ++g_failures;  // binds the context
  std::mt19937 rng(static_cast<unsigned>(index) * 7919u + 1u);
  std::uniform_int_distribution<size_t> size(1, 65536);
  for (int i = 0; i < iterations; ++i) {
    if (i % 2 == 0) {
      void* p = nullptr;
      if (cudaMalloc(&p, size(rng)) != cudaSuccess) ++g_failures;
      if (cudaFree(p) != cudaSuccess) ++g_failures;
    } else {
      CUdeviceptr p = 0;
      if (cuMemAlloc(&p, size(rng)) != CUDA_SUCCESS) ++g_failures;
      if (cuMemFree(p) != CUDA_SUCCESS) ++g_failures;
    }
  }
  for (int i = 0; i < leaks; ++i) StormLeak();
}

int main(int argc, char** argv) {
  int threads = argc > 1 ? std::atoi(argv[1]) : 16;
  int iterations = argc > 2 ? std::atoi(argv[2]) : 10000;
  int leaks = argc > 3 ? std::atoi(argv[3]) : 3;
  Rt("cudaFree(nullptr)", cudaFree(nullptr));
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back(StormThread, t, iterations, leaks);
  }
  for (std::thread& t : pool) t.join();
  std::printf("threads %d iterations %d leaks %d failures %ld\n", threads,
              iterations, leaks, g_failures.load());
  return g_failures.load() == 0 ? 0 : 1;
}
