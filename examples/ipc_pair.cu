// ipc_pair: CUDA IPC between two processes of this binary.
//
//   parent  cudaMalloc(64 KiB) (IpcPairAllocate), a kernel writes the first
//           pattern, cudaIpcGetMemHandle, then posix_spawn of /proc/self/exe
//           with "child <hex handle> <fd>" (the environment, LD_PRELOAD and
//           GMT_OPTIONS included, is inherited: under the tool both
//           processes are traced) and waits for it;
//   child   cudaIpcOpenMemHandle, checks the first pattern byte for byte (it
//           must see the parent's first byte at the pointer it gets), a
//           kernel writes the second pattern into all 64 KiB,
//           cudaIpcCloseMemHandle; it writes how many bytes matched to the
//           pipe <fd> and exits 0, or 3 on a mismatch;
//   parent  checks the second pattern, frees the block and prints
//           "ipc: child saw N/N bytes, parent saw N/N bytes".
//
// Under the tool the exported block is the raw one (front redzone, user
// bytes, tail redzone); the tool writes a header into the front redzone that
// the traced child reads to hand it the user's start.
//
// Expected: exit 0 and the same stdout with and without the tool; with it two
// reports (one per process), each with no errors and no leaks.
//
// `ipc_pair --untraced-child` runs the child as "child-untraced" with
// LD_PRELOAD removed from its environment. With guard zones on that is NOT
// expected to work: the untraced child is handed the raw block and sees the
// front redzone where the user's first byte should be (exit 3).
// docs/guard-zones.md documents it: guard both sides, or guard=0. The GPU tests
// do not run this mode.
#include <cuda_runtime.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "example_check.h"

extern char** environ;

namespace {

constexpr int kBytes = 64 << 10;

__host__ __device__ inline unsigned char FirstPattern(int i) {
  return static_cast<unsigned char>((i * 131 + 7) ^ (i >> 8));
}

__host__ __device__ inline unsigned char SecondPattern(int i) {
  return static_cast<unsigned char>((i * 29 + 101) ^ 0x5a ^ (i >> 9));
}

__global__ void IpcFirstPatternKernel(unsigned char* p, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] = FirstPattern(i);
}

__global__ void IpcSecondPatternKernel(unsigned char* p, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] = SecondPattern(i);
}

__attribute__((noinline)) unsigned char* IpcPairAllocate(int bytes) {
  void* p = nullptr;
  EXAMPLE_CHECK_CUDA(cudaMalloc(&p, bytes));
  return static_cast<unsigned char*>(p);
}

std::string ToHex(const cudaIpcMemHandle_t& handle) {
  static const char kDigits[] = "0123456789abcdef";
  const auto* b = reinterpret_cast<const unsigned char*>(&handle);
  std::string s;
  for (size_t i = 0; i < sizeof handle; ++i) {
    s += kDigits[b[i] >> 4];
    s += kDigits[b[i] & 15];
  }
  return s;
}

bool FromHex(const char* text, cudaIpcMemHandle_t* handle) {
  auto* b = reinterpret_cast<unsigned char*>(handle);
  if (std::strlen(text) != 2 * sizeof *handle) return false;
  for (size_t i = 0; i < sizeof *handle; ++i) {
    unsigned v = 0;
    if (std::sscanf(text + 2 * i, "%2x", &v) != 1) return false;
    b[i] = static_cast<unsigned char>(v);
  }
  return true;
}

int CountMatches(const std::vector<unsigned char>& h,
                 unsigned char (*pattern)(int)) {
  int same = 0;
  for (int i = 0; i < kBytes; ++i) same += h[i] == pattern(i);
  return same;
}

unsigned char HostFirst(int i) { return FirstPattern(i); }
unsigned char HostSecond(int i) { return SecondPattern(i); }

// The child: argv = {exe, "child" | "child-untraced", hex handle, fd}.
__attribute__((noinline)) int IpcPairChild(const char* hex, int fd) {
  cudaIpcMemHandle_t handle;
  if (!FromHex(hex, &handle)) {
    std::fprintf(stderr, "ipc_pair child: bad handle %s\n", hex);
    return 2;
  }
  void* p = nullptr;
  EXAMPLE_CHECK_CUDA(
      cudaIpcOpenMemHandle(&p, handle, cudaIpcMemLazyEnablePeerAccess));
  auto* d = static_cast<unsigned char*>(p);
  std::vector<unsigned char> h(kBytes);
  EXAMPLE_CHECK_CUDA(cudaMemcpy(h.data(), d, kBytes, cudaMemcpyDeviceToHost));
  const int seen = CountMatches(h, HostFirst);
  if (seen != kBytes) {
    int first = 0;
    while (first < kBytes && h[first] == FirstPattern(first)) ++first;
    std::fprintf(stderr,
                 "ipc_pair child: %d/%d bytes of the first pattern; first "
                 "mismatch at %d: 0x%02x, expected 0x%02x\n",
                 seen, kBytes, first, h[first], FirstPattern(first));
  }
  IpcSecondPatternKernel<<<(kBytes + 255) / 256, 256>>>(d, kBytes);
  EXAMPLE_CHECK_CUDA(cudaGetLastError());
  EXAMPLE_CHECK_CUDA(cudaDeviceSynchronize());
  EXAMPLE_CHECK_CUDA(cudaIpcCloseMemHandle(p));
  char buf[32];
  int len = std::snprintf(buf, sizeof buf, "%d\n", seen);
  if (write(fd, buf, len) != len) {
    std::fprintf(stderr, "ipc_pair child: write to the pipe failed: %s\n",
                 std::strerror(errno));
    return 2;
  }
  close(fd);
  return seen == kBytes ? 0 : 3;
}

// Spawns the child and returns its exit status (-1: it did not run or exit);
// `*child_seen` is what it counted (-1: nothing came through the pipe).
__attribute__((noinline)) int IpcPairSpawnChild(const std::string& hex,
                                                bool untraced,
                                                int* child_seen) {
  *child_seen = -1;
  int fds[2];
  if (pipe(fds) != 0) {
    std::fprintf(stderr, "ipc_pair: pipe: %s\n", std::strerror(errno));
    return -1;
  }
  std::string fd_text = std::to_string(fds[1]);
  std::string mode = untraced ? "child-untraced" : "child";
  std::string self = "/proc/self/exe";
  std::vector<char*> argv = {const_cast<char*>("ipc_pair"), &mode[0],
                             const_cast<char*>(hex.c_str()), &fd_text[0],
                             nullptr};
  std::vector<char*> env;
  for (char** e = environ; *e != nullptr; ++e) {
    if (untraced && std::strncmp(*e, "LD_PRELOAD=", 11) == 0) continue;
    env.push_back(*e);
  }
  env.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addclose(&actions, fds[0]);
  std::fflush(stdout);
  std::fflush(stderr);
  pid_t pid = 0;
  int rc = posix_spawn(&pid, self.c_str(), &actions, nullptr, argv.data(),
                       env.data());
  posix_spawn_file_actions_destroy(&actions);
  close(fds[1]);
  if (rc != 0) {
    std::fprintf(stderr, "ipc_pair: posix_spawn: %s\n", std::strerror(rc));
    close(fds[0]);
    return -1;
  }
  std::string got;
  char buf[64];
  for (;;) {
    ssize_t n = read(fds[0], buf, sizeof buf);
    if (n > 0) {
      got.append(buf, n);
    } else if (n == 0 || errno != EINTR) {
      break;
    }
  }
  close(fds[0]);
  if (!got.empty()) *child_seen = std::atoi(got.c_str());
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) {
      std::fprintf(stderr, "ipc_pair: waitpid: %s\n", std::strerror(errno));
      return -1;
    }
  }
  if (!WIFEXITED(status)) {
    std::fprintf(stderr, "ipc_pair: the child did not exit (status 0x%x)\n",
                 status);
    return -1;
  }
  return WEXITSTATUS(status);
}

int Parent(bool untraced_child) {
  unsigned char* d = IpcPairAllocate(kBytes);
  IpcFirstPatternKernel<<<(kBytes + 255) / 256, 256>>>(d, kBytes);
  EXAMPLE_CHECK_CUDA(cudaGetLastError());
  EXAMPLE_CHECK_CUDA(cudaDeviceSynchronize());
  cudaIpcMemHandle_t handle;
  EXAMPLE_CHECK_CUDA(cudaIpcGetMemHandle(&handle, d));
  std::printf("ipc: parent wrote the first pattern into %d bytes\n", kBytes);

  int child_seen = -1;
  const int child_rc =
      IpcPairSpawnChild(ToHex(handle), untraced_child, &child_seen);

  std::vector<unsigned char> h(kBytes);
  EXAMPLE_CHECK_CUDA(cudaMemcpy(h.data(), d, kBytes, cudaMemcpyDeviceToHost));
  const int parent_seen = CountMatches(h, HostSecond);
  EXAMPLE_CHECK_CUDA(cudaFree(d));
  std::printf("ipc: child saw %d/%d bytes, parent saw %d/%d bytes\n",
              child_seen, kBytes, parent_seen, kBytes);
  if (child_rc != 0) {
    std::fprintf(stderr, "ipc_pair: the child exited %d\n", child_rc);
    return child_rc > 0 ? child_rc : 1;
  }
  return parent_seen == kBytes && child_seen == kBytes ? 0 : 4;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 4 && (std::strcmp(argv[1], "child") == 0 ||
                    std::strcmp(argv[1], "child-untraced") == 0)) {
    return IpcPairChild(argv[2], std::atoi(argv[3]));
  }
  const bool untraced =
      argc == 2 && std::strcmp(argv[1], "--untraced-child") == 0;
  if (argc > 1 && !untraced) {
    std::fprintf(stderr, "usage: ipc_pair [--untraced-child]\n");
    return 2;
  }
  return Parent(untraced);
}
