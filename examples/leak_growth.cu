// leak_growth: leaks 64 KiB per iteration, with a cudaDeviceSynchronize per
// iteration, for long enough to be flagged by growth before exit.
//
//   leak_growth [iterations] [sleep_ms]     defaults 60, 50 (3 s)
//
// Registers the growth callback (include/gmt/gmt.h, weak: the program runs
// without the tool too) and prints "growth callback fired at iteration N:
// <site>" when it fires, then "loop done" at the end. Expected under the tool
// with growth_interval_ms=200 growth_samples=5 growth_min_bytes=262144: the
// callback fires before "loop done", a stderr line "suspected leak:
// LeakOneStep ..." and a "growth" entry whose stack has LeakOneStep.
// A scratch buffer allocated and freed every iteration (ChurnScratch) must not
// be flagged. Stdout differs with and without the tool only by the callback
// line.
#include <cuda_runtime.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>

#include "example_check.h"
#include "gmt/gmt.h"

constexpr size_t kLeakBytes = 64 << 10;

std::atomic<int> g_iteration{0};
std::atomic<bool> g_fired{false};

__attribute__((noinline)) void LeakOneStep() {
  void* p = nullptr;
  EXAMPLE_CHECK_CUDA(cudaMalloc(&p, kLeakBytes));
  EXAMPLE_CHECK_CUDA(cudaMemset(p, 0, kLeakBytes));
}

__attribute__((noinline)) void ChurnScratch() {
  void* p = nullptr;
  EXAMPLE_CHECK_CUDA(cudaMalloc(&p, 1 << 20));
  EXAMPLE_CHECK_CUDA(cudaFree(p));
}

void OnGrowth(const gmt_growth_event* event, void*) {
  if (g_fired.exchange(true)) return;
  std::printf("growth callback fired at iteration %d: %s\n", g_iteration.load(),
              event->site);
  std::fflush(stdout);
}

int main(int argc, char** argv) {
  int iterations = argc > 1 ? std::atoi(argv[1]) : 60;
  int sleep_ms = argc > 2 ? std::atoi(argv[2]) : 50;
  if (gmt::Available()) gmt_set_growth_callback(&OnGrowth, nullptr);
  for (int i = 0; i < iterations; ++i) {
    g_iteration.store(i);
    LeakOneStep();
    ChurnScratch();
    EXAMPLE_CHECK_CUDA(cudaDeviceSynchronize());
    usleep(sleep_ms * 1000);
  }
  std::printf("loop done\n");
  return 0;
}
