#include "tests/fake_cuda/fake_sticky_error.h"

#include <atomic>
#include <cstring>

namespace fake_cuda {
namespace {

std::atomic<int> g_sticky{CUDA_SUCCESS};

}  // namespace

void NoteLaunchForStickyError(const void* function) {
  // A function handle of the double is a pointer to the kernel's name (see
  // fake_driver_launch_sync.cc).
  // Plain names, or mangled ones with parameters (whose layout the double
  // reads from the name): _Z26fake_fault_illegal_addressPfS_i.
  const char* name = static_cast<const char*>(function);
  if (name == nullptr) return;
  if (std::strncmp(name, "_Z26fake_fault_illegal_address", 30) == 0) {
    name = "fake_fault_illegal_address";
  }
  if (std::strncmp(name, "fake_fault_", 11) != 0) return;
  int code = CUDA_SUCCESS;
  if (std::strcmp(name, "fake_fault_illegal_address") == 0) {
    code = CUDA_ERROR_ILLEGAL_ADDRESS;
  } else if (std::strcmp(name, "fake_fault_launch_failed") == 0) {
    code = CUDA_ERROR_LAUNCH_FAILED;
  }
  int expected = CUDA_SUCCESS;
  if (code != CUDA_SUCCESS) g_sticky.compare_exchange_strong(expected, code);
}

CUresult StickyError() {
  return static_cast<CUresult>(g_sticky.load(std::memory_order_acquire));
}

}  // namespace fake_cuda
