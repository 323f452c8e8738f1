// Process life under the tool: exec, threads alive at exit, static
// destructors that free CUDA memory, exit from a signal handler, a device
// reset in the middle of guarded work, a program that never calls CUDA.
// Prints the result of every CUDA call (never pointers), so a run with the
// tool can be compared with one without.
//
//   gmt_life_program MODE
//
//   exec_in_place     leaks cudaMalloc(1111) (BeforeExec), then execv()s
//                     itself as "after_exec"
//   fork_exec         leaks cudaMalloc(3333) (BeforeFork), forks; the child
//                     execv()s itself as "after_exec"; the parent waits
//   after_exec        leaks cudaMalloc(2222) (AfterExec) and exits
//   threads_at_exit   4 threads alloc/free without end; main returns while
//                     they run (each made >= 200 pairs first)
//   static_dtors      blocks freed by destructors after main returns: a
//                     global made before CUDA was initialised (cudaFree x3,
//                     cudaFreeHost x1) and a function-local static made after
//                     (cuMemFree x2)
//   signal_exit       leaks cudaMalloc(4444) (LeakBeforeSignal); a SIGUSR1
//                     handler calls exit(3)
//   signal__exit      the same, the handler calls _exit(4)
//   signal_exit_busy  a thread allocates/frees without end; main raises
//                     SIGUSR1 whose handler calls exit(3)
//   reset_midway      guarded blocks in every state at cudaDeviceReset (in
//                     quarantine, live, stream-ordered live), then the same
//                     sizes again after it (addresses may be reused), with
//                     launches and synchronizes around
//   no_cuda           linked with the runtime, never calls it
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "tests/interpose/programs/program_util.h"

namespace {

char g_kernel_name[] = "_Z4fillPfi";

// In an ASan build (tools/sanitize.sh), LeakSanitizer's end-of-process check
// stops the world while these threads run, and its tracer crashes (gcc 12's
// LSan, "Tracer caught signal 11"), changing the exit code. The check is run
// early instead, before the threads start; later calls, and the one at exit,
// do nothing. No-op without ASan.
extern "C" void __lsan_do_leak_check() __attribute__((weak));
void LeakCheckNow() {
  if (&__lsan_do_leak_check != nullptr) __lsan_do_leak_check();
}

CUresult LaunchFill() {
  float* out = nullptr;
  int n = 0;
  void* params[] = {&out, &n};
  return cuLaunchKernel(reinterpret_cast<CUfunction>(g_kernel_name), 1, 1, 1,
                        32, 1, 1, 0, nullptr, params, nullptr);
}

// ---- exec ------------------------------------------------------------------

NOINLINE void Leak(const char* what, size_t bytes) {
  void* p = nullptr;
  Rt(what, cudaMalloc(&p, bytes));
  AfterCall();
}

NOINLINE void BeforeExec() { Leak("cudaMalloc(1111)", 1111); }
NOINLINE void BeforeFork() { Leak("cudaMalloc(3333)", 3333); }
NOINLINE void AfterExec() { Leak("cudaMalloc(2222)", 2222); }

void ExecSelf() {
  std::fflush(stdout);
  char self[] = "/proc/self/exe";
  char arg0[] = "gmt_life_program";
  char arg1[] = "after_exec";
  char* argv[] = {arg0, arg1, nullptr};
  execv(self, argv);
  std::perror("execv");
  _exit(127);
}

int ExecInPlace() {
  BeforeExec();
  ExecSelf();
  return 1;
}

int ForkExec() {
  BeforeFork();
  std::fflush(stdout);
  pid_t child = fork();
  if (child == 0) ExecSelf();
  int status = 0;
  waitpid(child, &status, 0);
  std::printf("child-exit %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  return 0;
}

// ---- threads alive at exit
// ---------------------------------------------------

std::atomic<int> g_ready{0};

[[noreturn]] void Spin(int index) {
  cudaSetDevice(0);
  for (long i = 0;; ++i) {
    if (i % 2 == 0) {
      void* p = nullptr;
      if (cudaMalloc(&p, 512 + index) == cudaSuccess) cudaFree(p);
    } else {
      CUdeviceptr p = 0;
      if (cuMemAlloc(&p, 1024 + index) == CUDA_SUCCESS) cuMemFree(p);
    }
    if (i == 200) ++g_ready;
  }
}

int ThreadsAtExit() {
  Rt("cudaSetDevice", cudaSetDevice(0));
  LeakCheckNow();
  for (int t = 0; t < 4; ++t) std::thread(Spin, t).detach();
  while (g_ready.load() < 4) std::this_thread::yield();
  std::printf("main returns\n");
  std::fflush(stdout);
  return 0;
}

// ---- static destructors
// --------------------------------------------------------

struct EarlyHolder {
  std::vector<void*> device;
  void* host = nullptr;
  ~EarlyHolder() {
    for (void* p : device) Rt("~EarlyHolder cudaFree", cudaFree(p));
    if (host != nullptr) Rt("~EarlyHolder cudaFreeHost", cudaFreeHost(host));
  }
};
EarlyHolder g_early;  // constructed before main, before CUDA is initialised

struct LateHolder {
  std::vector<CUdeviceptr> blocks;
  ~LateHolder() {
    for (CUdeviceptr p : blocks) Cu("~LateHolder cuMemFree", cuMemFree(p));
  }
};

NOINLINE LateHolder& Late() {
  static LateHolder holder;  // constructed after CUDA is initialised
  return holder;
}

int StaticDtors() {
  g_early.device.resize(3);
  for (void*& p : g_early.device) Rt("cudaMalloc(100)", cudaMalloc(&p, 100));
  Rt("cudaMallocHost(200)", cudaMallocHost(&g_early.host, 200));
  Late().blocks.resize(2);
  for (CUdeviceptr& p : Late().blocks)
    Cu("cuMemAlloc(300)", cuMemAlloc(&p, 300));
  Cu("launch", LaunchFill());
  Rt("cudaDeviceSynchronize", cudaDeviceSynchronize());
  std::printf("main returns\n");
  return 0;
}

// ---- exit from a signal handler
// ------------------------------------------------

NOINLINE void LeakBeforeSignal() { Leak("cudaMalloc(4444)", 4444); }

extern "C" void ExitHandler(int) { std::exit(3); }
extern "C" void UnderscoreExitHandler(int) { _exit(4); }

int SignalExit(void (*handler)(int)) {
  LeakBeforeSignal();
  std::fflush(stdout);
  signal(SIGUSR1, handler);
  raise(SIGUSR1);
  std::printf("not reached\n");
  return 0;
}

int SignalExitBusy() {
  LeakBeforeSignal();
  LeakCheckNow();
  std::thread(Spin, 0).detach();
  while (g_ready.load() < 1) std::this_thread::yield();
  std::fflush(stdout);
  signal(SIGUSR1, ExitHandler);
  raise(SIGUSR1);
  std::printf("not reached\n");
  return 0;
}

// ---- cudaDeviceReset in the middle
// -------------------------------------------

int ResetMidway() {
  Rt("cudaSetDevice", cudaSetDevice(0));
  CUstream stream = nullptr;
  Cu("cuStreamCreate", cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  auto s = reinterpret_cast<cudaStream_t>(stream);
  void* held = nullptr;  // freed: in the tool's quarantine at the reset
  Rt("cudaMalloc(1000)", cudaMalloc(&held, 1000));
  void* live = nullptr;
  Rt("cudaMalloc(2000)", cudaMalloc(&live, 2000));
  void* pooled = nullptr;
  Rt("cudaMallocAsync(3000)", cudaMallocAsync(&pooled, 3000, s));
  Cu("launch", LaunchFill());
  Rt("cudaFree(1000)", cudaFree(held));
  Cu("launch", LaunchFill());
  Rt("cudaDeviceSynchronize", cudaDeviceSynchronize());
  Rt("cudaDeviceReset", cudaDeviceReset());
  // The same sizes again: the double (like CUDA) may hand out the same
  // addresses; blocks the tool still held before the reset must not be
  // released over them.
  for (int i = 0; i < 64; ++i) {
    void* p = nullptr;
    cudaError_t a = cudaMalloc(&p, i % 2 == 0 ? 1000 : 2000);
    cudaError_t l =
        LaunchFill() == CUDA_SUCCESS ? cudaSuccess : cudaErrorLaunchFailure;
    cudaError_t f = cudaFree(p);
    if (a != cudaSuccess || l != cudaSuccess || f != cudaSuccess) {
      std::printf("round %d: %d %d %d\n", i, a, l, f);
    }
  }
  void* after = nullptr;
  Rt("cudaMalloc(3000) after", cudaMalloc(&after, 3000));
  Cu("launch", LaunchFill());
  Rt("cudaDeviceSynchronize", cudaDeviceSynchronize());
  Rt("cudaFree(3000) after", cudaFree(after));
  std::printf("done\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "exec_in_place") return ExecInPlace();
  if (mode == "fork_exec") return ForkExec();
  if (mode == "after_exec") {
    AfterExec();
    std::printf("after_exec done\n");
    return 0;
  }
  if (mode == "threads_at_exit") return ThreadsAtExit();
  if (mode == "static_dtors") return StaticDtors();
  if (mode == "signal_exit") return SignalExit(ExitHandler);
  if (mode == "signal__exit") return SignalExit(UnderscoreExitHandler);
  if (mode == "signal_exit_busy") return SignalExitBusy();
  if (mode == "reset_midway") return ResetMidway();
  if (mode == "no_cuda") {
    std::printf("no cuda\n");
    return 0;
  }
  std::fprintf(stderr, "unknown mode '%s'\n", mode.c_str());
  return 2;
}
