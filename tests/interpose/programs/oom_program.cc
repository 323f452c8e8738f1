// Runs out of device memory: holds some blocks, then asks for
// more than the (fake) card has, three times in a row through the runtime and
// once through the driver, and prints what CUDA returned each time.
//
//   gmt_oom_program [GAP_MS]   GAP_MS: sleep before the driver call (a new
//                              burst when >= 1000)
//   gmt_oom_program near-full  NearlyAllOfIt below instead: the program's
//                              view of the runtime's last error around
//                              requests that fit the card, but not with
//                              redzones added
//
//   FillDevice      4 x cudaMalloc(1 MiB)   the largest holder
//   SmallSite       1 x cudaMalloc(64 KiB)
//   AskTooMuch      3 x cudaMalloc(64 GiB)  fail: cudaErrorMemoryAllocation
//   DriverTooMuch   1 x cuMemAlloc(64 GiB)  fails: CUDA_ERROR_OUT_OF_MEMORY
#include <chrono>
#include <cstdlib>
#include <string>
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

// A request of all the free memory but 64 KiB fits the card; with the tool's
// redzones (a tail of up to 1 MiB) it does not, so the tool's first attempt
// fails and its unguarded retry succeeds. The program must see exactly what
// CUDA gives it without the tool: success, and the last error as it was.
NOINLINE void NearlyAllOfIt() {
  size_t free_bytes = 0, total_bytes = 0;
  if (Rt("cudaMemGetInfo", cudaMemGetInfo(&free_bytes, &total_bytes)) !=
      cudaSuccess) {
    return;
  }
  const size_t nearly_all = free_bytes - (size_t{64} << 10);
  void* p = nullptr;
  Rt("cudaMalloc(nearly all)", cudaMalloc(&p, nearly_all));
  Rt("cudaGetLastError", cudaGetLastError());
  Rt("cudaFree", cudaFree(p));
  // An error the program has not read yet stays its last error.
  // CUDA nulls the pointer of a failed cudaMalloc; a program may test it.
  void* q = reinterpret_cast<void*>(0x1);
  Rt("cudaMalloc(64 GiB)", cudaMalloc(&q, kTooMuch));
  std::printf("pointer after failure: %s\n", q == nullptr ? "null" : "set");
  Rt("cudaMalloc(nearly all)", cudaMalloc(&p, nearly_all));
  Rt("cudaPeekAtLastError", cudaPeekAtLastError());
  Rt("cudaGetLastError", cudaGetLastError());
  Rt("cudaGetLastError", cudaGetLastError());
  Rt("cudaFree", cudaFree(p));
  // The same through the stream-ordered pool.
  Rt("cudaMallocAsync(nearly all)", cudaMallocAsync(&p, nearly_all, nullptr));
  Rt("cudaGetLastError", cudaGetLastError());
  Rt("cudaFreeAsync", cudaFreeAsync(p, nullptr));
  Rt("cudaDeviceSynchronize", cudaDeviceSynchronize());
}

int main(int argc, char** argv) {
  if (argc > 1 && std::string(argv[1]) == "near-full") {
    NearlyAllOfIt();
    return 0;
  }
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
