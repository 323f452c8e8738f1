// Allocates, then forks; the child exits normally without touching CUDA (CUDA
// does not work across fork). The child must not write a report of its own:
// everything it inherited is the parent's.
//
//   gmt_fork_program     prints "child <pid>" and "parent <pid>"
#include <cuda_runtime_api.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>

int main() {
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
