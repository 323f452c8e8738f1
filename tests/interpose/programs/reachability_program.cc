// Device pointers kept in each kind of root, and one dropped, for the
// reachability scan at exit. Sizes tell the blocks apart:
//
//   1000  cudaMalloc, pointer kept in a global                  -> reachable
//   2000  cudaMalloc, pointer kept in a heap object that a
//         global points to (interior field)                     -> reachable
//   3000  cudaMalloc by a thread that keeps the pointer on its
//         stack and is still blocked when the program exits     -> reachable
//   4000  cudaMalloc, the only copy of the pointer overwritten  -> lost
//   5000  two cudaMalloc from one call site (AllocPair): the
//         first kept in a global, the second dropped            -> one entry
//                                                                  each
//
//   gmt_reachability_program [growth]
//   growth: instead, leaks 64 KiB per iteration with a cudaDeviceSynchronize
//           after each, for 40 iterations, 20 ms apart; prints
//           "growth callback: <site>" when the tracer's callback fires.
#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>

#include "include/gmt/gmt.h"
#include "tests/interpose/programs/program_util.h"

void* volatile g_global_block;
struct Holder {
  long tag;
  void* block;  // at offset 8: an interior field
};
Holder* volatile g_holder;
void* volatile g_lost_block;
void* volatile g_pair_kept;

std::atomic<bool> g_thread_ready{false};

NOINLINE void* AllocFromSite(size_t bytes) {
  void* p = nullptr;
  Rt("cudaMalloc", cudaMalloc(&p, bytes));
  AfterCall();
  return p;
}

// Clears the stack below the caller, where the dropped pointers' stale copies
// lie (the frames of the calls that returned them), as LeakSanitizer's own
// tests do: otherwise a stale copy could make a dropped block look reachable.
// (Where the kernel does not tell a blocked thread's stack pointer, as under
// gVisor, the scan reads that thread's whole stack mapping, stale frames of
// its CUDA calls included: they point into the driver's and the tool's
// tables, which hold every block.)
NOINLINE void ScrubStack() {
  volatile char scratch[64 * 1024];
  std::memset(const_cast<char*>(scratch), 0, sizeof(scratch));
  asm volatile("" : : "r"(scratch) : "memory");
}

NOINLINE void* ThreadHoldingBlock(void*) {
  // The pointer on this thread's stack is what the reachability scan must
  // find; nothing here reads it.
  // NOLINTNEXTLINE(clang-analyzer-deadcode.DeadStores)
  void* volatile on_stack = AllocFromSite(3000);
  ScrubStack();
  g_thread_ready.store(true);
  for (;;) pause();  // blocked (in a syscall) until the process exits
  return on_stack;
}

volatile int g_two = 2;  // a loop bound the compiler cannot unroll

NOINLINE void AllocPair() {
  void* pair[2] = {nullptr, nullptr};
  // One call instruction, so both blocks share one stack (one call site).
  for (int i = 0; i < g_two; ++i) pair[i] = AllocFromSite(5000);
  g_pair_kept = pair[0];
  pair[1] = nullptr;
  asm volatile("" : : "r"(pair) : "memory");
}

int Reachability() {
  g_global_block = AllocFromSite(1000);
  g_holder = new Holder{42, nullptr};
  g_holder->block = AllocFromSite(2000);
  g_lost_block = AllocFromSite(4000);
  g_lost_block = nullptr;  // the only copy
  AllocPair();
  pthread_t thread;
  if (pthread_create(&thread, nullptr, &ThreadHoldingBlock, nullptr) != 0) {
    return 1;
  }
  pthread_detach(thread);
  while (!g_thread_ready.load()) usleep(1000);
  usleep(20000);  // let it reach pause()
  ScrubStack();
  return 0;
}

void OnGrowth(const gmt_growth_event* event, void*) {
  std::printf(
      "growth callback: %s rises=%u +%llu\n", event->site, event->rises,
      static_cast<unsigned long long>(event->last_bytes - event->first_bytes));
  std::fflush(stdout);
}

NOINLINE void LeakALittle() {
  void* p = nullptr;
  cudaMalloc(&p, 64 * 1024);
  AfterCall();
}

int Growth() {
  if (gmt::Available()) gmt_set_growth_callback(&OnGrowth, nullptr);
  for (int i = 0; i < 40; ++i) {
    LeakALittle();
    cudaDeviceSynchronize();
    usleep(20000);
  }
  std::printf("loop done\n");
  return 0;
}

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "growth") == 0) return Growth();
  int rc = Reachability();
  ScrubStack();
  return rc;
}
