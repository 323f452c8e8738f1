// Fake driver: CUDA_INJECTION64_PATH, and the hook fake libcupti registers
// its emitter with (see fake_cupti_emit.h).
#include <dlfcn.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>

#include "tests/fake_cuda/fake_cupti_emit.h"

namespace fake_cuda {

std::atomic<CuptiEmitter> g_cupti_emitter{nullptr};
std::atomic<ActivityEmitter> g_activity_emitter{nullptr};
thread_local int t_launch_exit_callback = 0;

void CheckCallFromLaunchCallback(const char* call) {
  if (t_launch_exit_callback == 0) return;
  static const bool strict = [] {
    const char* v = std::getenv("FAKE_CUDA_STRICT_CALLBACKS");
    return v != nullptr && v[0] == '1';
  }();
  if (!strict) return;
  std::fprintf(stderr,
               "fake libcuda: %s called from inside a launch's exit callback: "
               "deadlock (the launch call is still in progress)\n",
               call);
  std::fflush(stderr);
  for (;;) pause();
}

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

// Called by fake libcupti when it enables memory records (null: disabled).
extern "C" __attribute__((visibility("default"))) void
fake_cuda_set_cupti_activity_emitter(fake_cuda::ActivityEmitter emitter) {
  fake_cuda::g_activity_emitter.store(emitter, std::memory_order_release);
}
