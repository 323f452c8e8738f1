// Allocates, then forks; the child exits normally without touching CUDA (CUDA
// does not work across fork). The child must not write a report of its own:
// everything it inherited is the parent's.
//
//   gmt_fork_program         prints "child <pid>" and "parent <pid>"
//   gmt_fork_program locked  HOLD: another thread is inside one of the tool's
//                            own CUDA calls (a canary fill, held there by the
//                            test double's FAKE_CUDA_HOLD_FILL=HOLD) when the
//                            main thread forks; the child then makes CUDA
//                            calls of its own, as a program may (CUDA
//                            answers them as it does after a fork). The
//                            child must get those answers, never hang on a
//                            lock the other thread held at the fork.
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <string>
#include <thread>

namespace {

char g_kernel_name[] = "_Z6kernelv";

void LaunchAndMark(std::atomic<bool>* done) {
  void* p = nullptr;
  cudaMalloc(&p, 4096);  // guarded: its canaries are filled before...
  // ... the next launch, which the tool holds in its fill (HOLD).
  cuLaunchKernel(reinterpret_cast<CUfunction>(g_kernel_name), 1, 1, 1, 32, 1, 1,
                 0, nullptr, nullptr, nullptr);
  done->store(true);
}

__attribute__((noinline)) int ForkWhileAnotherThreadRuns(const char* hold) {
  void* p = nullptr;
  std::printf("cudaMalloc -> %d\n", static_cast<int>(cudaMalloc(&p, 4096)));
  std::fflush(stdout);
  std::atomic<bool> done{false};
  std::thread other(LaunchAndMark, &done);
  // Fork while the other thread is inside the tool's fill (under the tool)
  // or once it is done (without it: nothing holds it there).
  const std::string held = std::string(hold) + ".held";
  while (!done.load() && access(held.c_str(), F_OK) != 0) usleep(1000);
  pid_t child = fork();
  if (child == 0) {
    void* q = nullptr;
    const int r = static_cast<int>(cudaMalloc(&q, 4096));
    std::printf("child cudaMalloc -> %d\n", r);
    std::fflush(stdout);
    _exit(0);
  }
  // The child has 10 s; a hang is reported (and ended), not waited out.
  int status = 0;
  bool finished = false;
  for (int i = 0; i < 10000 && !finished; ++i) {
    if (waitpid(child, &status, WNOHANG) == child) {
      finished = true;
    } else {
      usleep(1000);
    }
  }
  if (!finished) {
    kill(child, SIGKILL);
    waitpid(child, &status, 0);
  }
  std::printf("child %s\n", finished ? "finished" : "hung");
  if (FILE* f = std::fopen(hold, "w")) std::fclose(f);  // let the fill go
  other.join();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 2 && std::string(argv[1]) == "locked")
    return ForkWhileAnotherThreadRuns(argv[2]);
  void* p = nullptr;
  std::printf("cudaMalloc -> %d\n", static_cast<int>(cudaMalloc(&p, 4096)));
  std::fflush(stdout);
  pid_t child = fork();
  if (child == 0) {
    std::printf("child %d\n", static_cast<int>(getpid()));
    return 0;  // exit(): static destructors and the tool's unload run
  }
  int status = 0;
  waitpid(child, &status, 0);
  std::printf("parent %d child-exit %d\n", static_cast<int>(getpid()),
              WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  return 0;
}
