// Fake driver: allocation failure injection for reliability tests, and a
// slow driver for tests that tell the program's own call apart from the
// tool's time.
//
//   FAKE_CUDA_FAIL_ALLOC_AFTER=N   the first N allocations succeed, the
//   (N+1)-th
//                                  fails with CUDA_ERROR_OUT_OF_MEMORY
//   FAKE_CUDA_FAIL_ALLOC_COUNT=K   how many consecutive allocations fail from
//                                  there (default 1; 0 or negative: all later
//                                  ones)
//
//   FAKE_CUDA_ALLOC_DELAY_US=U     every allocation takes U microseconds more
//
// "Allocation" is every driver call that creates memory: cuMemAlloc_v2,
// cuMemAllocPitch_v2, cuMemAllocManaged, cuMemAllocAsync(_ptsz),
// cuMemAllocFromPoolAsync(_ptsz), cuMemHostAlloc, cuMemAllocHost_v2,
// cuArrayCreate_v2 and cuMemCreate. Runtime calls reach these, so they count
// too. The count is process-wide and thread-safe.
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <thread>

#include "tests/fake_cuda/fake_driver.h"

namespace fake_cuda {
namespace {

struct FaultPlan {
  long long after = -1;  // -1: never fail
  long long count = 1;
};

FaultPlan ReadPlan() {
  FaultPlan plan;
  if (const char* after = std::getenv("FAKE_CUDA_FAIL_ALLOC_AFTER")) {
    plan.after = std::atoll(after);
  }
  if (const char* count = std::getenv("FAKE_CUDA_FAIL_ALLOC_COUNT")) {
    plan.count = std::atoll(count);
  }
  return plan;
}

std::atomic<long long> g_attempts{0};

}  // namespace

bool InjectAllocationFailure() {
  static const long delay_us = [] {
    const char* delay = std::getenv("FAKE_CUDA_ALLOC_DELAY_US");
    return delay != nullptr ? std::atol(delay) : 0L;
  }();
  if (delay_us > 0) {
    std::this_thread::sleep_for(std::chrono::microseconds(delay_us));
  }
  static const FaultPlan plan = ReadPlan();
  if (plan.after < 0) return false;
  long long index = g_attempts.fetch_add(1, std::memory_order_relaxed);
  if (index < plan.after) return false;
  return plan.count <= 0 || index < plan.after + plan.count;
}

}  // namespace fake_cuda
