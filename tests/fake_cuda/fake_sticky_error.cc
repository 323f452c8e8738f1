#include "tests/fake_cuda/fake_sticky_error.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string>

namespace fake_cuda {
namespace {

std::atomic<int> g_sticky{CUDA_SUCCESS};

// The driver with its GPU core dump armed: the dump, then abort().
void DumpAndAbortIfArmed() {
  const char* armed = std::getenv("CUDA_ENABLE_COREDUMP_ON_EXCEPTION");
  const char* file = std::getenv("CUDA_COREDUMP_FILE");
  if (armed == nullptr || std::strcmp(armed, "1") != 0 || file == nullptr) {
    return;
  }
  std::string path = file;
  if (size_t at = path.find("%p"); at != std::string::npos) {
    path.replace(at, 2, std::to_string(getpid()));
  }
  const int out = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  const char* captured = std::getenv("FAKE_CUDA_GPU_DUMP");
  const int in = captured != nullptr ? open(captured, O_RDONLY) : -1;
  char buffer[65536];
  ssize_t n = 0;
  while (in >= 0 && out >= 0 && (n = read(in, buffer, sizeof(buffer))) > 0) {
    if (write(out, buffer, static_cast<size_t>(n)) != n) break;
  }
  if (in >= 0) close(in);
  if (out >= 0) close(out);
  std::abort();
}

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
  if (code == CUDA_SUCCESS) return;
  DumpAndAbortIfArmed();
  g_sticky.compare_exchange_strong(expected, code);
}

CUresult StickyError() {
  return static_cast<CUresult>(g_sticky.load(std::memory_order_acquire));
}

}  // namespace fake_cuda
