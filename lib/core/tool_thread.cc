#include "lib/core/tool_thread.h"

#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>

#include <atomic>

namespace gmt {
namespace {

constexpr size_t kStackBytes = size_t{8} << 20;
// One inaccessible page on each side of a stack. Below, it turns an overflow
// into a fault instead of a write into whatever lies there; on both sides, it
// keeps the kernel from merging the stack with a neighbouring anonymous
// mapping, so the stack is a mapping of its own, found like a glibc thread
// stack (guard page below) and never taking a program mapping with it.
constexpr size_t kGuardBytes = 4096;
// A handful are started per process; later ones beyond this many still run,
// on a stack of their own, but are not listed (none is expected).
constexpr int kMaxStacks = 16;
std::atomic<uint64_t> g_stack_begin[kMaxStacks];
std::atomic<int> g_stacks{0};

void* Run(void* arg) {
  auto* work = static_cast<std::function<void()>*>(arg);
  (*work)();
  delete work;
  return nullptr;
}

}  // namespace

bool StartToolThread(std::function<void()> work) {
  void* mapped = mmap(nullptr, kStackBytes + 2 * kGuardBytes, PROT_NONE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (mapped == MAP_FAILED) return false;
  void* stack = static_cast<char*>(mapped) + kGuardBytes;
  if (mprotect(stack, kStackBytes, PROT_READ | PROT_WRITE) != 0) {
    munmap(mapped, kStackBytes + 2 * kGuardBytes);
    return false;
  }
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstack(&attr, stack, kStackBytes);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  auto* arg = new std::function<void()>(std::move(work));
  // Listed before the thread runs: a scan never misses a running one.
  const int slot = g_stacks.fetch_add(1, std::memory_order_acq_rel);
  if (slot < kMaxStacks) {
    g_stack_begin[slot].store(reinterpret_cast<uint64_t>(stack),
                              std::memory_order_release);
  }
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &old);  // the new thread inherits it
  pthread_t thread;
  const bool started = pthread_create(&thread, &attr, &Run, arg) == 0;
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  pthread_attr_destroy(&attr);
  if (!started) {
    delete arg;  // the stack stays mapped and listed: harmless
  }
  return started;
}

std::vector<std::pair<uint64_t, uint64_t>> ToolThreadStacks() {
  std::vector<std::pair<uint64_t, uint64_t>> out;
  const int n = std::min(g_stacks.load(std::memory_order_acquire), kMaxStacks);
  for (int i = 0; i < n; ++i) {
    const uint64_t begin = g_stack_begin[i].load(std::memory_order_acquire);
    if (begin != 0) out.emplace_back(begin, begin + kStackBytes);
  }
  return out;
}

}  // namespace gmt
