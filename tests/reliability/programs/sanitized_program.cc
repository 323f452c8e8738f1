// A CUDA program built with a sanitizer (-fsanitize=address, and again with
// -fsanitize=thread): its sanitizer runtime resolves its interceptors with
// dlsym(RTLD_NEXT, ...) while the loader initializes it, which goes through
// the tool's dlsym when the tool is preloaded. Threads that allocate and then
// exit (TSan tears a thread's state down before late TSD destructors, such as
// libunwind's, run). Under the tool it must run as without it, and its leak
// must be reported.
//
//   gmt_asan_program / gmt_tsan_program
#include <atomic>
#include <thread>
#include <vector>

#include "tests/interpose/programs/program_util.h"

std::atomic<int> g_failures{0};

void Worker(int index) {
  if (cudaSetDevice(0) != cudaSuccess) ++g_failures;
  for (int i = 0; i < 100; ++i) {
    void* p = nullptr;
    if (cudaMalloc(&p, 256 + index) != cudaSuccess) ++g_failures;
    if (cudaFree(p) != cudaSuccess) ++g_failures;
  }
}

NOINLINE void SanitizedLeak() {
  void* p = nullptr;
  Rt("cudaMalloc(5555)", cudaMalloc(&p, 5555));
  AfterCall();
}

int main() {
  void* p = nullptr;
  Rt("cudaMalloc(1000)", cudaMalloc(&p, 1000));
  Rt("cudaFree", cudaFree(p));
  SanitizedLeak();
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) threads.emplace_back(Worker, t);
  for (std::thread& t : threads) t.join();
  std::printf("threads done, failures %d\n", g_failures.load());
  return 0;
}
