// Runs out of device memory: holds some blocks, then asks for
// more than the (fake) card has, three times in a row through the runtime and
// once through the driver, and prints what CUDA returned each time.
//
//   gmt_oom_program [GAP_MS]   GAP_MS: sleep before the driver call (a new
//                              burst when >= 1000)
//
//   FillDevice      4 x cudaMalloc(1 MiB)   the largest holder
//   SmallSite       1 x cudaMalloc(64 KiB)
//   AskTooMuch      3 x cudaMalloc(64 GiB)  fail: cudaErrorMemoryAllocation
//   DriverTooMuch   1 x cuMemAlloc(64 GiB)  fails: CUDA_ERROR_OUT_OF_MEMORY
#include <chrono>
#include <cstdlib>
#include <thread>
#include <vector>

#include "tests/interpose/programs/program_util.h"

constexpr size_t kTooMuch = size_t{64} << 30;

NOINLINE void FillDevice(std::vector<void*>* blocks) {
  for (int i = 0; i < 4; ++i) {
    void* p = nullptr;
    if (cudaMalloc(&p, size_t{1} << 20) == cudaSuccess) blocks->push_back(p);
  }
}

NOINLINE void SmallSite(std::vector<void*>* blocks) {
  void* p = nullptr;
  if (cudaMalloc(&p, 64 << 10) == cudaSuccess) blocks->push_back(p);
}

NOINLINE void AskTooMuch() {
  for (int i = 0; i < 3; ++i) {
    void* p = nullptr;
    Rt("cudaMalloc(64 GiB)", cudaMalloc(&p, kTooMuch));
    std::printf("pointer after failure: %s\n", p == nullptr ? "null" : "set");
  }
}

NOINLINE void DriverTooMuch() {
  CUdeviceptr p = 0;
  Cu("cuMemAlloc(64 GiB)", cuMemAlloc(&p, kTooMuch));
}

int main(int argc, char** argv) {
  const int gap_ms = argc > 1 ? std::atoi(argv[1]) : 0;
  std::vector<void*> blocks;
  FillDevice(&blocks);
  SmallSite(&blocks);
  AskTooMuch();
  std::this_thread::sleep_for(std::chrono::milliseconds(gap_ms));
  DriverTooMuch();
  for (void* p : blocks) Rt("cudaFree", cudaFree(p));
  return 0;
}
