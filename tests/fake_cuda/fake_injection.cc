// Fake driver: CUDA_INJECTION64_PATH, and the hook fake libcupti registers
// its emitter with (see fake_cupti_emit.h).
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>

#include "tests/fake_cuda/fake_cupti_emit.h"

namespace fake_cuda {

std::atomic<CuptiEmitter> g_cupti_emitter{nullptr};

void LoadInjectionOnce() {
  static std::once_flag once;
  std::call_once(once, [] {
    const char* path = std::getenv("CUDA_INJECTION64_PATH");
    if (path == nullptr || path[0] == '\0') return;
    // As the real driver: a local load, then the exported entry point.
    void* handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      std::fprintf(stderr, "fake libcuda: injection %s: %s\n", path, dlerror());
      return;
    }
    using Init = int (*)();
    if (auto init =
            reinterpret_cast<Init>(dlsym(handle, "InitializeInjection"))) {
      init();
    }
  });
}

}  // namespace fake_cuda

// Called by fake libcupti when it is loaded (and with null when unloaded).
extern "C" __attribute__((visibility("default"))) void
fake_cuda_set_cupti_emitter(fake_cuda::CuptiEmitter emitter) {
  fake_cuda::g_cupti_emitter.store(emitter, std::memory_order_release);
}
