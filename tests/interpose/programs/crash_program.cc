// Crashes on purpose, for the crash report. Every mode first
// makes two CUDA allocations (1 MiB device, 64 KiB pinned host) and launches
// one kernel, "crash_program_kernel", so the report has live blocks and a
// recent kernel to show.
//
//   crash_program <mode> <dir>
//     segv            writes through a null pointer: dies by SIGSEGV
//     segv_pinned     writes into a page of the pinned block made
//                     inaccessible (mprotect): SIGSEGV inside a tracked block
//     abort           abort(): dies by SIGABRT
//     chain_before    installs its own SIGSEGV handler before any CUDA call,
//                     then segfaults; the handler prints whether the crash
//                     report (<dir>/r.<pid>.json) exists already, then dies by
//                     SIGSEGV (default action, re-raised)
//     chain_after     installs its own SIGSEGV handler after the tool is
//                     loaded and in use, then segfaults; the handler prints
//                     and _exit(43)s
//     exit_in_handler like chain_before, but the handler calls exit(5)
//     small_altstack  installs a 16 KiB alternate signal stack (a PROT_NONE
//                     page below it) before any CUDA call, as a sanitizer's
//                     runtime does, then segfaults like segv
//     recover         installs its own SIGSEGV handler before any CUDA call
//                     that jumps back (siglongjmp) past the faulting store;
//                     the program prints "recovered" and returns 0, as a
//                     program that handles its own faults does
//     segv_locked     another thread is inside one of the tool's own CUDA
//                     calls (its canary fill, held there by the test double:
//                     FAKE_CUDA_HOLD_FILL=<dir>/hold) when the main thread
//                     segfaults
//     abort_in_thread another thread aborts; this one calls exit(1) 2 ms
//                     after that thread started, while the crash report is
//                     written
//     sticky          launches fake_fault_illegal_address (the double plants
//                     CUDA_ERROR_ILLEGAL_ADDRESS), synchronizes, prints the
//                     code, prints whether the report exists already, and
//                     returns 1
//     sticky_args     the same with fake_fault_illegal_address(float*,
//                     float*, int) launched on the 1 MiB device block + 256,
//                     0xdead0000 (no block) and 4096
//     sticky_stub     sticky_args through host stubs as nvcc writes them
//                     (a function of the kernel's name and its
//                     __device_stub__, calling a toolkit header's launch
//                     helper, all inlined into main); prints
//                     "launch line: N", the line of main that launched
//     gpu_dump        sticky_args with the driver's GPU core dump armed
//                     (explain_faults): the double writes the dump that
//                     FAKE_CUDA_GPU_DUMP names and aborts, as the driver does
// No core files are written (RLIMIT_CORE 0): the signal is the same.
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <csetjmp>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "tests/interpose/programs/include/crt/launch_helper.h"
#include "tests/interpose/programs/program_util.h"

namespace {

std::string g_dir;
char g_report_path[4096];

bool ReportExists() { return access(g_report_path, F_OK) == 0; }

void Say(const char* text) {
  ssize_t n = write(STDOUT_FILENO, text, std::strlen(text));
  (void)n;
}

void* g_pinned = nullptr;
constexpr size_t kPinnedBytes = 64 * 1024;

NOINLINE void* CrashAllocateDevice() {
  void* p = nullptr;
  Rt("cudaMalloc", cudaMalloc(&p, 1 << 20));
  AfterCall();
  return p;
}

NOINLINE void* CrashAllocatePinned() {
  void* p = nullptr;
  Rt("cudaMallocHost", cudaMallocHost(&p, kPinnedBytes));
  AfterCall();
  return p;
}

void LaunchNamed(const char* name) {
  // A kernel handle of the test double is a pointer to the kernel's name.
  Rt("cudaLaunchKernel",
     cudaLaunchKernel(static_cast<const void*>(name), dim3(1), dim3(32),
                      nullptr, 0, nullptr));
}

// no_sanitize("undefined"): the store through a null pointer is this
// program's fault on purpose; UBSan (tools/sanitize.sh) would stop it before
// the SIGSEGV that the crash tests are about.
__attribute__((no_sanitize("undefined"))) NOINLINE void WriteThrough(
    volatile int* p) {
  *p = 42;  // NOLINT(clang-analyzer-core.NullDereference): the crash under test
  AfterCall();
}

// A 16 KiB alternate signal stack over an inaccessible guard page, so a
// handler that needs more faults instead of writing over other memory.
void InstallSmallAltStack() {
  constexpr size_t kStackBytes = 16 * 1024;
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  void* memory = mmap(nullptr, page + kStackBytes, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (memory == MAP_FAILED || mprotect(memory, page, PROT_NONE) != 0) {
    std::perror("small_altstack");
    std::exit(3);
  }
  stack_t stack;
  std::memset(&stack, 0, sizeof(stack));
  stack.ss_sp = static_cast<char*>(memory) + page;
  stack.ss_size = kStackBytes;
  if (sigaltstack(&stack, nullptr) != 0) {
    std::perror("sigaltstack");
    std::exit(3);
  }
}

void ProgramHandlerReraise(int sig) {
  Say(ReportExists() ? "program handler: report present\n"
                     : "program handler: report absent\n");
  signal(sig, SIG_DFL);
  raise(sig);
}

void ProgramHandlerExit43(int) {
  Say("program handler ran\n");
  _exit(43);
}

void ProgramHandlerExit5(int) {
  Say(ReportExists() ? "program handler: report present\n"
                     : "program handler: report absent\n");
  exit(5);
}

sigjmp_buf g_recover;

void ProgramHandlerRecover(int) { siglongjmp(g_recover, 1); }

// The other thread of segv_locked: an allocation, and a launch that makes the
// tool fill its canaries, where the test double holds it.
void AllocateAndLaunch() {
  void* p = nullptr;
  cudaMalloc(&p, 4096);
  cudaLaunchKernel(static_cast<const void*>("crash_program_other"), dim3(1),
                   dim3(32), nullptr, 0, nullptr);
}

// nvcc's host side of fake_fault_illegal_address<<<4, 256>>>(...): the
// kernel's stub and the function of its name, which the optimizer inlines
// into the launching line's function.
__attribute__((always_inline)) inline void
__device_stub__Z26fake_fault_illegal_addressPfS_i(float* a, float* b, int n) {
  void* args[] = {&a, &b, &n};
  LaunchKernelHelper(
      static_cast<const void*>("_Z26fake_fault_illegal_addressPfS_i"), dim3(4),
      dim3(256), args);
}
__attribute__((always_inline)) inline void fake_fault_illegal_address(float* a,
                                                                      float* b,
                                                                      int n) {
  __device_stub__Z26fake_fault_illegal_addressPfS_i(a, b, n);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s <mode> <dir>\n", argv[0]);
    return 2;
  }
  const std::string mode = argv[1];
  g_dir = argv[2];
  std::snprintf(g_report_path, sizeof(g_report_path), "%s/r.%d.json",
                g_dir.c_str(), static_cast<int>(getpid()));
  struct rlimit no_core = {0, 0};
  setrlimit(RLIMIT_CORE, &no_core);

  if (mode == "chain_before" || mode == "exit_in_handler" ||
      mode == "recover") {
    struct sigaction act;
    std::memset(&act, 0, sizeof(act));
    act.sa_handler = mode == "chain_before"      ? ProgramHandlerReraise
                     : mode == "exit_in_handler" ? ProgramHandlerExit5
                                                 : ProgramHandlerRecover;
    sigemptyset(&act.sa_mask);
    sigaction(SIGSEGV, &act, nullptr);
  }

  if (mode == "small_altstack") InstallSmallAltStack();

  void* device = CrashAllocateDevice();
  g_pinned = CrashAllocatePinned();
  LaunchNamed("crash_program_kernel");
  std::printf("device %s, pinned %s\n", device ? "ok" : "null",
              g_pinned ? "ok" : "null");
  std::fflush(stdout);

  if (mode == "chain_after") {
    struct sigaction act;
    std::memset(&act, 0, sizeof(act));
    act.sa_handler = ProgramHandlerExit43;
    sigemptyset(&act.sa_mask);
    sigaction(SIGSEGV, &act, nullptr);
  }

  if (mode == "segv" || mode == "chain_before" || mode == "chain_after" ||
      mode == "exit_in_handler" || mode == "small_altstack") {
    WriteThrough(nullptr);
  } else if (mode == "segv_pinned") {
    // A page inside the pinned block (host memory in the double).
    const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
    uintptr_t start =
        (reinterpret_cast<uintptr_t>(g_pinned) + page - 1) / page * page;
    if (mprotect(reinterpret_cast<void*>(start), page, PROT_NONE) != 0) {
      std::perror("mprotect");
      return 3;
    }
    WriteThrough(reinterpret_cast<volatile int*>(start + 16));
  } else if (mode == "recover") {
    if (sigsetjmp(g_recover, 1) == 0) {
      WriteThrough(nullptr);
    } else {
      std::printf("recovered\n");
      std::fflush(stdout);
      return 0;
    }
  } else if (mode == "segv_locked") {
    std::thread other(AllocateAndLaunch);
    other.detach();
    // Up to 20 s for the other thread to be held (the double holds it for
    // 30 s): under TSan on a loaded 2-core machine it once took more than
    // 5 s to get there, and the crash then came while it was elsewhere in
    // the tool (in the kernel-name table, whose name the summary then could
    // not read).
    const std::string held = g_dir + "/hold.held";
    for (int i = 0; i < 20000 && access(held.c_str(), F_OK) != 0; ++i) {
      usleep(1000);
    }
    WriteThrough(nullptr);
  } else if (mode == "abort") {
    std::abort();
  } else if (mode == "abort_in_thread") {
    // As the driver does after writing a GPU core dump: another thread
    // aborts, while this one, handed the error, exits.
    // The exit follows the abort by 2 ms, counted from when the aborting
    // thread runs (a thread can take longer than that to start on a busy
    // machine, and the plain run then exited 1).
    static std::atomic<bool> aborting{false};
    std::thread([] {
      aborting.store(true);
      std::abort();
    }).detach();
    while (!aborting.load()) usleep(100);
    usleep(2 * 1000);  // the crash report is being written meanwhile
    std::exit(1);
  } else if (mode == "sticky_args" || mode == "gpu_dump") {
    float* inside = reinterpret_cast<float*>(static_cast<char*>(device) + 256);
    float* nowhere = reinterpret_cast<float*>(uintptr_t{0xdead0000});
    int n = 4096;
    void* args[] = {&inside, &nowhere, &n};
    Rt("cudaLaunchKernel",
       cudaLaunchKernel(
           static_cast<const void*>("_Z26fake_fault_illegal_addressPfS_i"),
           dim3(4), dim3(256), args, 0, nullptr));
    cudaError_t e = Rt("cudaDeviceSynchronize", cudaDeviceSynchronize());
    return e == cudaSuccess ? 0 : 1;
  } else if (mode == "sticky_stub") {
    float* inside = reinterpret_cast<float*>(static_cast<char*>(device) + 256);
    float* nowhere = reinterpret_cast<float*>(uintptr_t{0xdead0000});
    std::printf("launch line: %d\n", __LINE__ + 1);
    fake_fault_illegal_address(inside, nowhere, 4096);
    cudaError_t e = Rt("cudaDeviceSynchronize", cudaDeviceSynchronize());
    return e == cudaSuccess ? 0 : 1;
  } else if (mode == "sticky") {
    LaunchNamed("fake_fault_illegal_address");
    cudaError_t e = Rt("cudaDeviceSynchronize", cudaDeviceSynchronize());
    std::printf("report before exit: %s\n", ReportExists() ? "yes" : "no");
    std::fflush(stdout);
    return e == cudaSuccess ? 0 : 1;
  } else {
    std::fprintf(stderr, "unknown mode %s\n", mode.c_str());
    return 2;
  }
  std::printf("survived\n");
  return 0;
}
