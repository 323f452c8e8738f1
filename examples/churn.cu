// churn: allocation-heavy and launch-heavy loops, for measuring the tool's
// overhead (run it with and without LD_PRELOAD and compare the times).
//
//   churn [--pairs N] [--seed S] [--max-size B] [--kernel-every K]
//                                    N cudaMalloc/cudaFree pairs (default
//                                    200000), sizes 256 B .. B (default
//                                    4 MiB), with up to 64 allocations live
//                                    at once; with K > 0 a small kernel
//                                    writes into the newest block every K
//                                    pairs (the tool's checks of freed
//                                    blocks then have canaries to check:
//                                    `--max-size 1048576 --kernel-every 100`
//                                    is the workload the overhead targets
//                                    of benchmarks/gpu/perf_suite.sh name)
//   churn --async [--pairs N] [--max-size B] [--kernel-every K]
//                                    the same pairs with cudaMallocAsync /
//                                    cudaFreeAsync on one stream, the
//                                    pattern of PyTorch's cudaMallocAsync
//                                    backend (and of the tool's tensor mode:
//                                    run it with quarantine_async=1); with
//                                    --kernel-every 1 every block is written
//                                    by a kernel, as every tensor is
//   churn --kernels [--launches N]   N kernel launches (default 200000) over
//                                    4 buffers of 64 MiB allocated once
//   churn --free-sync                whether cudaFree waits for a kernel
//                                    still running (prints "churn-free-sync:
//                                    cudaFree waited for the running kernel:
//                                    yes|no" twice: a free with no earlier
//                                    frees, then one after 160 MiB of frees
//                                    whose blocks a kernel wrote; the tool
//                                    must answer as CUDA does)
//   churn --live N [--size S] [--seed S]
//                                    N blocks allocated and kept live (S bytes
//                                    each; S 0, the default: the sizes of
//                                    --pairs), then the device and host memory
//                                    they took are measured, then all freed
//   churn --live N --keep            the same, but the blocks stay live at
//                                    exit, held by a global vector with every
//                                    other pointer dropped: N/2 blocks still
//                                    reachable, N/2 lost (the exit_live
//                                    workload of perf_suite.sh: the tool's
//                                    reachability scan with N blocks live)
//
// Expected report: no leaks and no errors (with --keep: N leaks, N/2 "lost",
// N/2 "reachable"); summary.allocations and
// summary.frees both count the pairs (plus the few buffers of --kernels mode).
// Timings go to stdout ("churn: N pairs in X ms (Y us/pair)"), so this
// program's output differs from run to run. --pairs also prints the device
// memory in use at the end of the loop over what was in use before it, with
// the user bytes then live ("churn: device +D bytes at the end, L user bytes
// live"): with the tool's guard zones that includes the redzones and the
// quarantine; and the mean time inside each call of the loop ("churn: per
// call: cudaMalloc A us, cudaFree F us, launch L us"), where a tool's cost
// per call shows apart from the rest of the loop. --live prints "churn-live: N
// blocks, U user bytes, device +D bytes, host +H bytes (h bytes/block)": device
// memory from cudaMemGetInfo, host memory from VmRSS in /proc/self/status, both
// over what was in use before the first allocation
// (benchmarks/gpu/perf_suite.sh compares the figures with and without the
// tool).
#include <cuda_runtime.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "example_check.h"

namespace {

uint64_t NextRandom(uint64_t* state) {
  // xorshift64*: deterministic sizes for a given seed.
  *state ^= *state >> 12;
  *state ^= *state << 25;
  *state ^= *state >> 27;
  return *state * 0x2545F4914F6CDD1DULL;
}

// 256 B .. `max_bytes` (at least 256), log-uniform, so small sizes are as
// common as large ones.
size_t RandomSize(uint64_t* state, size_t max_bytes = size_t{4} << 20) {
  uint64_t r = NextRandom(state);
  int top = 8;  // the largest power of two at most max_bytes
  while (top < 62 && (size_t{1} << (top + 1)) <= max_bytes) ++top;
  int shift = 8 + static_cast<int>(r % static_cast<uint64_t>(top - 7));
  size_t base = size_t{1} << shift;
  size_t extra = (r >> 8) % base;  // up to 2x the base
  size_t bytes = base + extra;
  return bytes > max_bytes ? max_bytes : bytes;
}

// What ChurnAllocFreePairs measured at the end of its loop, printed after
// the timing line.
long long g_pairs_device_added = 0;
size_t g_pairs_live_bytes = 0;
// Time spent inside each call of the loop (where a tool's cost lands).
double g_malloc_us = 0, g_free_us = 0, g_launch_us = 0;
long g_mallocs = 0, g_frees = 0, g_launches = 0;

// Device memory in use (total - free), from CUDA's own count.
size_t DeviceUsedBytes() {
  size_t free_bytes = 0, total_bytes = 0;
  EXAMPLE_CHECK_CUDA(cudaMemGetInfo(&free_bytes, &total_bytes));
  return total_bytes - free_bytes;
}

// A "VmRSS:" or "VmHWM:" line of /proc/self/status, in bytes (0 if absent).
long long ProcStatusBytes(const char* key) {
  std::ifstream status("/proc/self/status");
  std::string line;
  const size_t len = std::strlen(key);
  while (std::getline(status, line)) {
    if (line.compare(0, len, key) == 0) {
      return std::atoll(line.c_str() + len) * 1024;  // "  1234 kB"
    }
  }
  return 0;
}

// The small kernel of --kernel-every: writes the first `n` bytes of a block.
__global__ void TouchKernel(unsigned char* p, size_t n) {
  for (size_t i = threadIdx.x; i < n; i += blockDim.x) {
    p[i] = static_cast<unsigned char>(i);
  }
}

// Spins for about `cycles` GPU clocks, then raises *flag (mapped host
// memory): the host can tell whether a call waited for it.
__global__ void SpinThenFlagKernel(volatile int* flag, long long cycles) {
  const long long start = clock64();
  while (clock64() - start < cycles) {
  }
  __threadfence_system();
  *flag = 1;
}

__global__ void AxpyKernel(float* y, const float* x, float a, size_t n) {
  size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

}  // namespace

// The loop the tool's per-call overhead shows in: every iteration allocates,
// and frees the allocation made 64 iterations earlier; every `kernel_every`
// iterations (0: never) a small kernel writes into the newest block.
// With `async`, the stream-ordered calls on one stream of the program's.
__attribute__((noinline)) size_t ChurnAllocFreePairs(long pairs, uint64_t seed,
                                                     size_t max_bytes,
                                                     long kernel_every,
                                                     bool async) {
  cudaStream_t stream = nullptr;
  if (async) {
    EXAMPLE_CHECK_CUDA(
        cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  }
  constexpr int kWindow = 64;
  std::vector<void*> window(kWindow, nullptr);
  std::vector<size_t> window_bytes(kWindow, 0);
  uint64_t state = seed ? seed : 1;
  size_t total = 0;
  const size_t used_before = DeviceUsedBytes();
  using Clock = std::chrono::steady_clock;
  auto us_since = [](Clock::time_point t) {
    return std::chrono::duration<double, std::micro>(Clock::now() - t).count();
  };
  for (long i = 0; i < pairs; ++i) {
    void*& slot = window[i % kWindow];
    if (slot != nullptr) {
      const auto t = Clock::now();
      EXAMPLE_CHECK_CUDA(async ? cudaFreeAsync(slot, stream) : cudaFree(slot));
      g_free_us += us_since(t);
      ++g_frees;
    }
    size_t bytes = RandomSize(&state, max_bytes);
    const auto t = Clock::now();
    EXAMPLE_CHECK_CUDA(async ? cudaMallocAsync(&slot, bytes, stream)
                             : cudaMalloc(&slot, bytes));
    g_malloc_us += us_since(t);
    ++g_mallocs;
    window_bytes[i % kWindow] = bytes;
    total += bytes;
    if (kernel_every > 0 && i % kernel_every == kernel_every - 1) {
      const auto t_launch = Clock::now();
      TouchKernel<<<1, 128, 0, stream>>>(static_cast<unsigned char*>(slot),
                                         bytes < 4096 ? bytes : 4096);
      EXAMPLE_CHECK_CUDA(cudaGetLastError());
      g_launch_us += us_since(t_launch);
      ++g_launches;
    }
  }
  size_t live = 0;
  for (size_t b : window_bytes) live += b;
  if (async) EXAMPLE_CHECK_CUDA(cudaStreamSynchronize(stream));
  const long long device_added = static_cast<long long>(DeviceUsedBytes()) -
                                 static_cast<long long>(used_before);
  for (void* p : window) {
    if (p != nullptr) {
      EXAMPLE_CHECK_CUDA(async ? cudaFreeAsync(p, stream) : cudaFree(p));
    }
  }
  if (async) {
    EXAMPLE_CHECK_CUDA(cudaStreamSynchronize(stream));
    EXAMPLE_CHECK_CUDA(cudaStreamDestroy(stream));
  }
  g_pairs_device_added = device_added;
  g_pairs_live_bytes = live;
  return total;
}

// --keep: the blocks live at exit.
std::vector<void*>* volatile g_kept = nullptr;

// N blocks live at once: what each costs in device and host memory.
__attribute__((noinline)) void ChurnLiveBlocks(long count, size_t size,
                                               uint64_t seed, bool keep) {
  std::vector<void*> blocks;
  blocks.reserve(static_cast<size_t>(count));  // before the first reading
  uint64_t state = seed ? seed : 1;
  const size_t device_before = DeviceUsedBytes();
  const long long host_before = ProcStatusBytes("VmRSS:");
  size_t user = 0;
  for (long i = 0; i < count; ++i) {
    const size_t bytes = size ? size : RandomSize(&state);
    void* p = nullptr;
    EXAMPLE_CHECK_CUDA(cudaMalloc(&p, bytes));
    blocks.push_back(p);
    user += bytes;
  }
  const long long device_added = static_cast<long long>(DeviceUsedBytes()) -
                                 static_cast<long long>(device_before);
  const long long host_added = ProcStatusBytes("VmRSS:") - host_before;
  std::printf(
      "churn-live: %ld blocks, %zu user bytes, device +%lld bytes, host "
      "+%lld bytes (%.1f bytes/block), VmHWM %lld bytes\n",
      count, user, device_added, host_added,
      count ? static_cast<double>(host_added) / count : 0.0,
      ProcStatusBytes("VmHWM:"));
  if (keep) {
    // Held at exit by a global, as a cache would be; every other block's
    // pointer is dropped, so those are lost and the tool's exit scan cannot
    // stop early.
    g_kept = new std::vector<void*>(std::move(blocks));
    for (size_t i = 1; i < g_kept->size(); i += 2) (*g_kept)[i] = nullptr;
    return;
  }
  for (void* p : blocks) EXAMPLE_CHECK_CUDA(cudaFree(p));
}

// One cudaFree of a block a kernel wrote while another kernel still runs:
// prints whether the free returned only after that kernel.
void FreeWhileAKernelRuns(int* flag_host, int* flag_device, const char* which) {
  void* block = nullptr;
  EXAMPLE_CHECK_CUDA(cudaMalloc(&block, 4096));
  TouchKernel<<<1, 128>>>(static_cast<unsigned char*>(block), 4096);
  EXAMPLE_CHECK_CUDA(cudaDeviceSynchronize());
  *reinterpret_cast<volatile int*>(flag_host) = 0;
  // ~50 ms at 2 GHz: far longer than a free takes.
  SpinThenFlagKernel<<<1, 1>>>(flag_device, 100000000LL);
  EXAMPLE_CHECK_CUDA(cudaGetLastError());
  EXAMPLE_CHECK_CUDA(cudaFree(block));
  const int seen = *reinterpret_cast<volatile int*>(flag_host);
  EXAMPLE_CHECK_CUDA(cudaDeviceSynchronize());
  std::printf(
      "churn-free-sync: %s: cudaFree waited for the running kernel: %s\n",
      which, seen ? "yes" : "no");
}

__attribute__((noinline)) void ChurnFreeSync() {
  int* flag_host = nullptr;
  int* flag_device = nullptr;
  EXAMPLE_CHECK_CUDA(
      cudaHostAlloc(&flag_host, sizeof(int), cudaHostAllocMapped));
  EXAMPLE_CHECK_CUDA(cudaHostGetDevicePointer(&flag_device, flag_host, 0));
  FreeWhileAKernelRuns(flag_host, flag_device, "first free");
  // 160 MiB of freed blocks a kernel wrote: more than the tool's default
  // quarantine, so some leave it, are checked and go back to CUDA later.
  constexpr int kBlocks = 40;
  std::vector<void*> blocks(kBlocks, nullptr);
  for (void*& b : blocks) EXAMPLE_CHECK_CUDA(cudaMalloc(&b, size_t{4} << 20));
  for (void* b : blocks) {
    TouchKernel<<<1, 128>>>(static_cast<unsigned char*>(b), 4096);
  }
  EXAMPLE_CHECK_CUDA(cudaDeviceSynchronize());
  for (void* b : blocks) EXAMPLE_CHECK_CUDA(cudaFree(b));
  EXAMPLE_CHECK_CUDA(cudaDeviceSynchronize());
  FreeWhileAKernelRuns(flag_host, flag_device, "after 160 MiB of frees");
  EXAMPLE_CHECK_CUDA(cudaFreeHost(flag_host));
}

__attribute__((noinline)) void ChurnKernelLaunches(long launches) {
  constexpr int kBuffers = 4;
  constexpr size_t kFloats = (size_t{64} << 20) / sizeof(float);
  float* buffers[kBuffers] = {};
  for (float*& b : buffers) {
    EXAMPLE_CHECK_CUDA(cudaMalloc(&b, kFloats * sizeof(float)));
    EXAMPLE_CHECK_CUDA(cudaMemset(b, 0, kFloats * sizeof(float)));
  }
  // Small grids: the launch path, not the memory bandwidth, is measured.
  constexpr size_t kTouched = 1 << 16;
  for (long i = 0; i < launches; ++i) {
    AxpyKernel<<<kTouched / 256, 256>>>(
        buffers[i % kBuffers], buffers[(i + 1) % kBuffers], 0.5f, kTouched);
  }
  EXAMPLE_CHECK_CUDA(cudaGetLastError());
  EXAMPLE_CHECK_CUDA(cudaDeviceSynchronize());
  for (float* b : buffers) EXAMPLE_CHECK_CUDA(cudaFree(b));
}

int main(int argc, char** argv) {
  long count = 200000;
  uint64_t seed = 42;
  bool kernels = false;
  long live = 0;
  bool keep = false;
  size_t live_size = 0;
  size_t max_size = size_t{4} << 20;
  long kernel_every = 0;
  bool free_sync = false;
  bool async = false;
  for (int i = 1; i < argc; ++i) {
    if ((!std::strcmp(argv[i], "--pairs") ||
         !std::strcmp(argv[i], "--launches")) &&
        i + 1 < argc) {
      count = std::atol(argv[++i]);
    } else if (!std::strcmp(argv[i], "--live") && i + 1 < argc) {
      live = std::atol(argv[++i]);
    } else if (!std::strcmp(argv[i], "--size") && i + 1 < argc) {
      live_size = std::strtoull(argv[++i], nullptr, 10);
    } else if (!std::strcmp(argv[i], "--max-size") && i + 1 < argc) {
      max_size = std::strtoull(argv[++i], nullptr, 10);
      if (max_size < 256) max_size = 256;
    } else if (!std::strcmp(argv[i], "--kernel-every") && i + 1 < argc) {
      kernel_every = std::atol(argv[++i]);
    } else if (!std::strcmp(argv[i], "--keep")) {
      keep = true;
    } else if (!std::strcmp(argv[i], "--seed") && i + 1 < argc) {
      seed = std::strtoull(argv[++i], nullptr, 10);
    } else if (!std::strcmp(argv[i], "--free-sync")) {
      free_sync = true;
    } else if (!std::strcmp(argv[i], "--async")) {
      async = true;
    } else if (!std::strcmp(argv[i], "--kernels")) {
      kernels = true;
    } else {
      std::fprintf(stderr,
                   "usage: %s [--pairs N] [--seed S] [--max-size B] "
                   "[--kernel-every K] [--async] | --kernels [--launches N] | "
                   "--free-sync | --live N [--size S] [--seed S] [--keep]\n",
                   argv[0]);
      return 2;
    }
  }
  EXAMPLE_CHECK_CUDA(cudaFree(nullptr));  // create the context before timing
  if (live > 0) {
    ChurnLiveBlocks(live, live_size, seed, keep);
    return 0;
  }
  if (free_sync) {
    ChurnFreeSync();
    return 0;
  }
  using Clock = std::chrono::steady_clock;
  auto start = Clock::now();
  if (kernels) {
    ChurnKernelLaunches(count);
  } else {
    ChurnAllocFreePairs(count, seed, max_size, kernel_every, async);
  }
  EXAMPLE_CHECK_CUDA(cudaDeviceSynchronize());
  double ms =
      std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  if (kernels) {
    std::printf("churn-kernels: %ld launches in %.1f ms (%.3f us/launch)\n",
                count, ms, count ? ms * 1000.0 / count : 0.0);
  } else {
    std::printf("churn: %ld pairs in %.1f ms (%.3f us/pair)\n", count, ms,
                count ? ms * 1000.0 / count : 0.0);
    std::printf("churn: device +%lld bytes at the end, %zu user bytes live\n",
                g_pairs_device_added, g_pairs_live_bytes);
    std::printf(
        "churn: per call: cudaMalloc %.3f us, cudaFree %.3f us, launch %.3f "
        "us\n",
        g_mallocs ? g_malloc_us / g_mallocs : 0.0,
        g_frees ? g_free_us / g_frees : 0.0,
        g_launches ? g_launch_us / g_launches : 0.0);
  }
  return 0;
}
