// Kernel launches (driver and runtime, plain, Ex, cooperative, graph) and
// synchronizing calls, each once where the double accepts it and once where it
// refuses; the results are printed so a test can check that the tool forwards
// them unchanged.
//
//   gmt_guard_launch_program MODE     MODE: driver | runtime |
//                                           attribution_runtime |
//                                           attribution_driver |
//                                           async_quarantine [write] |
//                                           malloc_reuse |
//                                           malloc_capture |
//                                           repeat |
//                                           loop ROUNDS
//
// repeat: four steps of scale, fill and reduce over one 1000-byte block and a
// synchronization, each step overrunning the block by one more byte as
// "fill" runs (the double runs a kernel at its launch, so the program
// writes the byte between scale's launch and fill's).
//
// loop: ROUNDS rounds of what a framework's step does, allocate, launch over
// the block, synchronize and free (prints one line of totals).
//
// The attribution modes overrun a block between two launches of "fill": the
// double's device memory is host memory, so the program writes one byte past
// the end of a 1000-byte block itself (inside the block's padding without the
// tool, inside the tail redzone with it), launches, and synchronizes; the
// tool should report the overrun and name the kernel.
//
// Built twice, like gmt_guard_copy_program: as is and with
// CUDA_API_PER_THREAD_DEFAULT_STREAM (the _ptsz entry points). The test
// double's function handles are pointers to kernel names (see
// tests/fake_cuda/fake_driver_launch_sync.cc).
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <set>
#include <string>
#include <thread>

#include "tests/interpose/programs/program_util.h"

namespace {

// "fill(float*, int)", as a compiler would mangle it.
char g_kernel_name[] = "_Z4fillPfi";
// fill(float*, int)'s second argument where a launch passes only a block: the
// kernel has two parameters, and CUDA (and the tool, for per-kernel checks)
// reads as many argument pointers as the kernel has.
int g_fill_count = 256;

// The other kernels of the repeat mode: scale(float*, int), reduce(float*,
// int).
char g_scale_name[] = "_Z5scalePfi";
char g_reduce_name[] = "_Z6reducePfi";

CUfunction Function() { return reinterpret_cast<CUfunction>(g_kernel_name); }
const void* RuntimeFunction() { return g_kernel_name; }

}  // namespace

NOINLINE void DriverLaunches() {
  float* out = nullptr;
  int n = 0;
  void* params[] = {&out, &n};
  CUstream s = nullptr;
  Cu("cuLaunchKernel",
     cuLaunchKernel(Function(), 1, 1, 1, 32, 1, 1, 0, s, params, nullptr));
  Cu("cuLaunchKernel null",
     cuLaunchKernel(nullptr, 1, 1, 1, 32, 1, 1, 0, s, params, nullptr));

  CUlaunchConfig config{};
  config.gridDimX = config.gridDimY = config.gridDimZ = 1;
  config.blockDimX = 64;
  config.blockDimY = config.blockDimZ = 1;
  config.hStream = s;
  Cu("cuLaunchKernelEx",
     cuLaunchKernelEx(&config, Function(), params, nullptr));
  Cu("cuLaunchKernelEx again",
     cuLaunchKernelEx(&config, Function(), params, nullptr));
  Cu("cuLaunchKernelEx null config",
     cuLaunchKernelEx(nullptr, Function(), params, nullptr));
  config.gridDimX = 0;
  Cu("cuLaunchKernelEx empty grid",
     cuLaunchKernelEx(&config, Function(), params, nullptr));

  Cu("cuLaunchCooperativeKernel",
     cuLaunchCooperativeKernel(Function(), 2, 1, 1, 32, 1, 1, 0, s, params));
  Cu("cuLaunchCooperativeKernel null",
     cuLaunchCooperativeKernel(nullptr, 2, 1, 1, 32, 1, 1, 0, s, params));

  Cu("cuGraphLaunch",
     cuGraphLaunch(reinterpret_cast<CUgraphExec>(g_kernel_name), s));
  Cu("cuGraphLaunch null", cuGraphLaunch(nullptr, s));

  const char* name = nullptr;
  if (Cu("cuFuncGetName", cuFuncGetName(&name, Function())) == CUDA_SUCCESS) {
    std::printf("  name %s\n", name);
  }
}

NOINLINE void DriverSyncs() {
  CUcontext ctx = nullptr;
  Cu("cuCtxGetCurrent", cuCtxGetCurrent(&ctx));
  Cu("cuCtxSynchronize", cuCtxSynchronize());
  Cu("cuCtxSynchronize_v2", cuCtxSynchronize_v2(ctx));
  Cu("cuStreamSynchronize", cuStreamSynchronize(nullptr));
  CUevent event = nullptr;
  Cu("cuEventCreate", cuEventCreate(&event, CU_EVENT_DEFAULT));
  Cu("cuEventSynchronize", cuEventSynchronize(event));
  Cu("cuEventDestroy", cuEventDestroy(event));
  Cu("cuEventSynchronize null", cuEventSynchronize(nullptr));
}

NOINLINE void RuntimeLaunches() {
  float* out = nullptr;
  int n = 0;
  void* args[] = {&out, &n};
  Rt("cudaLaunchKernel",
     cudaLaunchKernel(RuntimeFunction(), dim3(1), dim3(32), args, 0, nullptr));
  Rt("cudaLaunchKernel empty block",
     cudaLaunchKernel(RuntimeFunction(), dim3(1), dim3(0), args, 0, nullptr));

  cudaLaunchConfig_t config{};
  config.gridDim = dim3(4);
  config.blockDim = dim3(128);
  Rt("cudaLaunchKernelExC",
     cudaLaunchKernelExC(&config, RuntimeFunction(), args));
  Rt("cudaLaunchKernelExC null config",
     cudaLaunchKernelExC(nullptr, RuntimeFunction(), args));

  Rt("cudaLaunchCooperativeKernel",
     cudaLaunchCooperativeKernel(RuntimeFunction(), dim3(2), dim3(32), args, 0,
                                 nullptr));
  Rt("cudaLaunchCooperativeKernel null",
     cudaLaunchCooperativeKernel(nullptr, dim3(2), dim3(32), args, 0, nullptr));

  Rt("cudaGraphLaunch",
     cudaGraphLaunch(reinterpret_cast<cudaGraphExec_t>(g_kernel_name),
                     nullptr));
  Rt("cudaGraphLaunch null", cudaGraphLaunch(nullptr, nullptr));

  const char* name = nullptr;
  if (Rt("cudaFuncGetName", cudaFuncGetName(&name, RuntimeFunction())) ==
      cudaSuccess) {
    std::printf("  name %s\n", name);
  }
}

NOINLINE void RuntimeSyncs() {
  Rt("cudaDeviceSynchronize", cudaDeviceSynchronize());
  Rt("cudaStreamSynchronize", cudaStreamSynchronize(nullptr));
  Rt("cudaEventSynchronize null", cudaEventSynchronize(nullptr));
  Rt("cudaGetLastError", cudaGetLastError());
}

// One byte past the end of `p`'s 1000 bytes, as a kernel would write it.
NOINLINE void Overrun(void* p) {
  static_cast<volatile unsigned char*>(p)[1000] = 0x5a;
  AfterCall();
}

NOINLINE void AttributionRuntime() {
  void* p = nullptr;
  Rt("cudaMalloc(1000)", cudaMalloc(&p, 1000));
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(1);
  config.blockDim = dim3(32);
  void* args[] = {&p, &g_fill_count};
  Rt("cudaLaunchKernelExC#1",
     cudaLaunchKernelExC(&config, RuntimeFunction(), args));
  Overrun(p);
  Rt("cudaLaunchKernelExC#2",
     cudaLaunchKernelExC(&config, RuntimeFunction(), args));
  Rt("cudaDeviceSynchronize", cudaDeviceSynchronize());
  Rt("cudaFree", cudaFree(p));
}

NOINLINE void AttributionDriver() {
  CUdeviceptr d = 0;
  Cu("cuMemAlloc(1000)", cuMemAlloc(&d, 1000));
  CUlaunchConfig config{};
  config.gridDimX = config.gridDimY = config.gridDimZ = 1;
  config.blockDimX = 32;
  config.blockDimY = config.blockDimZ = 1;
  void* params[] = {&d, &g_fill_count};
  Cu("cuLaunchKernelEx#1",
     cuLaunchKernelEx(&config, Function(), params, nullptr));
  Overrun(reinterpret_cast<void*>(d));
  Cu("cuLaunchKernelEx#2",
     cuLaunchKernelEx(&config, Function(), params, nullptr));
  Cu("cuCtxSynchronize", cuCtxSynchronize());
  Cu("cuMemFree", cuMemFree(d));
}

NOINLINE void Repeat() {
  void* p = nullptr;
  Rt("cudaMalloc(1000)", cudaMalloc(&p, 1000));
  void* args[] = {&p, &g_fill_count};
  for (int step = 0; step < 4; ++step) {
    Rt("scale",
       cudaLaunchKernel(g_scale_name, dim3(1), dim3(32), args, 0, nullptr));
    static_cast<volatile unsigned char*>(p)[1000 + step] = 0x5a;
    Rt("fill", cudaLaunchKernel(RuntimeFunction(), dim3(1), dim3(32), args, 0,
                                nullptr));
    Rt("reduce",
       cudaLaunchKernel(g_reduce_name, dim3(1), dim3(32), args, 0, nullptr));
    Rt("cudaDeviceSynchronize", cudaDeviceSynchronize());
  }
  Rt("cudaFree", cudaFree(p));
}

// One thread synchronizes the device while the tool checks zones behind
// that synchronization, and the test double holds the tool's wait for the
// check (FAKE_CUDA_HOLD_TOOL_WAIT=HOLD) until another thread has allocated,
// launched and freed. Without the tool nothing holds the first thread. The
// tool must not make the other thread queue behind the device (it used to
// keep its guard lock across that wait, and the program never went on).
NOINLINE void ConcurrentWithACheck(const char* hold) {
  void* p = nullptr;
  Rt("cudaMalloc", cudaMalloc(&p, 4096));
  void* args[] = {&p, &g_fill_count};
  Rt("cudaLaunchKernel",
     cudaLaunchKernel(RuntimeFunction(), dim3(1), dim3(32), args, 0, nullptr));
  std::atomic<bool> synced{false};
  std::thread syncing([&] {
    cudaDeviceSynchronize();
    synced.store(true);
  });
  const std::string held = std::string(hold) + ".held";
  while (!synced.load() && access(held.c_str(), F_OK) != 0) usleep(1000);
  void* q = nullptr;
  Rt("cudaMalloc other", cudaMalloc(&q, 8192));
  void* other_args[] = {&q, &g_fill_count};
  Rt("cudaLaunchKernel other",
     cudaLaunchKernel(RuntimeFunction(), dim3(1), dim3(32), other_args, 0,
                      nullptr));
  Rt("cudaFree other", cudaFree(q));
  std::printf("the other thread went on\n");
  std::fflush(stdout);
  if (FILE* f = std::fopen(hold, "w")) std::fclose(f);
  syncing.join();
  Rt("cudaFree", cudaFree(p));
}

// `count` blocks of 100 KB on `s`, each used by a kernel, then freed there.
void ChurnAsync(cudaStream_t s, int count) {
  bool all_ok = true;
  for (int i = 0; i < count; ++i) {
    void* p = nullptr;
    all_ok &= cudaMallocAsync(&p, 100000, s) == cudaSuccess;
    void* args[] = {&p, &g_fill_count};
    all_ok &= cudaLaunchKernel(RuntimeFunction(), dim3(1), dim3(32), args, 0,
                               s) == cudaSuccess;
    all_ok &= cudaFreeAsync(p, s) == cudaSuccess;
  }
  std::printf("  churn %s\n", all_ok ? "ok" : "failed");
}

// Stream-ordered blocks as PyTorch's cudaMallocAsync backend makes them: a
// churn of 64 blocks of 100 KB (each used by a kernel, then freed on its
// stream), then a 1000-byte block freed and, with "write", written through
// its stale pointer before the next kernel (the double's device memory is
// host memory, so the program writes it itself). Run the write only where
// the tool holds freed stream-ordered blocks (quarantine_async=1): without
// it the memory is gone.
NOINLINE void AsyncQuarantine(bool write_after_free) {
  cudaStream_t s = nullptr;
  Rt("cudaStreamCreate", cudaStreamCreate(&s));
  ChurnAsync(s, 64);
  void* q = nullptr;
  Rt("cudaMallocAsync(1000)", cudaMallocAsync(&q, 1000, s));
  Rt("cudaFreeAsync", cudaFreeAsync(q, s));
  void* args[] = {&q, &g_fill_count};
  Rt("cudaLaunchKernel",
     cudaLaunchKernel(RuntimeFunction(), dim3(1), dim3(32), args, 0, s));
  // The kernel launched after the free writes through the stale pointer (the
  // test double runs no kernel: the write stands for it, after the launch).
  if (write_after_free) static_cast<char*>(q)[10] = 1;
  Rt("cudaStreamSynchronize", cudaStreamSynchronize(s));
  Rt("cudaStreamDestroy", cudaStreamDestroy(s));
}

// cudaMalloc / cudaFree churn, a window of eight blocks of three sizes near
// 100 KB (none a multiple of 512), each used by a kernel: what the program
// can tell of its blocks, which must not change when the tool serves an
// allocation with a block an earlier one had: every block's buffer id its
// own, and the device's free memory back where it was once all are freed.
NOINLINE void MallocReuse() {
  size_t free_before = 0;
  size_t free_after = 0;
  size_t total = 0;
  bool all_ok = cudaMemGetInfo(&free_before, &total) == cudaSuccess;
  std::set<unsigned long long> ids;
  constexpr int kWindow = 8;
  constexpr int kAllocations = 96;
  void* window[kWindow] = {};
  for (int i = 0; i < kAllocations; ++i) {
    void*& slot = window[i % kWindow];
    if (slot != nullptr) all_ok &= cudaFree(slot) == cudaSuccess;
    all_ok &= cudaMalloc(&slot, 100000 + (i % 3) * 1000) == cudaSuccess;
    unsigned long long id = 0;
    all_ok &= cuPointerGetAttribute(&id, CU_POINTER_ATTRIBUTE_BUFFER_ID,
                                    reinterpret_cast<CUdeviceptr>(slot)) ==
              CUDA_SUCCESS;
    ids.insert(id);
    void* args[] = {&slot, &g_fill_count};
    all_ok &= cudaLaunchKernel(RuntimeFunction(), dim3(1), dim3(32), args, 0,
                               nullptr) == cudaSuccess;
  }
  for (void* p : window) all_ok &= cudaFree(p) == cudaSuccess;
  all_ok &= cudaMemGetInfo(&free_after, &total) == cudaSuccess;
  std::printf("malloc churn %s: %zu buffer ids for %d allocations; ",
              all_ok ? "ok" : "failed", ids.size(), kAllocations);
  if (free_after == free_before) {
    std::printf("free memory as before\n");
  } else {
    std::printf("free memory changed by %lld bytes\n",
                static_cast<long long>(free_after) -
                    static_cast<long long>(free_before));
  }
}

// Whether the buffer at `p` is one the tool served again: it tells such a
// buffer a buffer id with the top bit set (CUDA counts from 1).
const char* Served(void* p) {
  unsigned long long id = 0;
  if (cuPointerGetAttribute(&id, CU_POINTER_ATTRIBUTE_BUFFER_ID,
                            reinterpret_cast<CUdeviceptr>(p)) != CUDA_SUCCESS) {
    return "unknown";
  }
  return (id >> 63) != 0 ? "a checked block" : "CUDA";
}

// The same churn, then one cudaMalloc before a stream capture, one during it
// and one after: which of them a checked block served.
NOINLINE void MallocCapture() {
  MallocReuse();
  cudaStream_t s = nullptr;
  Rt("cudaStreamCreate", cudaStreamCreate(&s));
  void* before = nullptr;
  Rt("cudaMalloc", cudaMalloc(&before, 100000));
  std::printf("before the capture: %s\n", Served(before));
  Rt("cudaStreamBeginCapture",
     cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  void* during = nullptr;
  Rt("cudaMalloc", cudaMalloc(&during, 100000));
  std::printf("during the capture: %s\n", Served(during));
  cudaGraph_t graph = nullptr;
  Rt("cudaStreamEndCapture", cudaStreamEndCapture(s, &graph));
  void* after = nullptr;
  Rt("cudaMalloc", cudaMalloc(&after, 100000));
  std::printf("after the capture: %s\n", Served(after));
  for (void* p : {before, during, after}) Rt("cudaFree", cudaFree(p));
  if (graph != nullptr) Rt("cudaGraphDestroy", cudaGraphDestroy(graph));
  Rt("cudaStreamDestroy", cudaStreamDestroy(s));
}

// Stream-ordered blocks used and freed, then their pool trimmed, as a
// program gives memory back (PyTorch's empty_cache on its cudaMallocAsync
// backend): what the pool still holds reserved after the trim.
NOINLINE void PoolTrim() {
  cudaStream_t s = nullptr;
  Rt("cudaStreamCreate", cudaStreamCreate(&s));
  ChurnAsync(s, 32);
  Rt("cudaStreamSynchronize", cudaStreamSynchronize(s));
  cudaMemPool_t pool = nullptr;
  Rt("cudaDeviceGetDefaultMemPool", cudaDeviceGetDefaultMemPool(&pool, 0));
  unsigned long long zero = 0;
  Rt("cudaMemPoolSetAttribute(used high)",
     cudaMemPoolSetAttribute(pool, cudaMemPoolAttrUsedMemHigh, &zero));
  Rt("cudaMemPoolTrimTo", cudaMemPoolTrimTo(pool, 0));
  unsigned long long reserved = 1;
  unsigned long long used_high = 1;
  Rt("cudaMemPoolGetAttribute",
     cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent,
                             &reserved));
  Rt("cudaMemPoolGetAttribute",
     cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemHigh, &used_high));
  std::printf("reserved after trim: %llu, used high since the reset: %llu\n",
              reserved, used_high);
  Rt("cudaStreamDestroy", cudaStreamDestroy(s));
}

// Two pools, each a device's default pool: blocks of both used and freed,
// then only device 1's pool trimmed. What that pool still holds reserved
// after the trim.
NOINLINE void PoolTrimOther() {
  cudaStream_t streams[2] = {nullptr, nullptr};
  for (int device = 0; device < 2; ++device) {
    Rt("cudaSetDevice", cudaSetDevice(device));
    Rt("cudaStreamCreate", cudaStreamCreate(&streams[device]));
    // Device 0's churn passes the quarantine's 1 MiB in the test: some of
    // its blocks wait for reuse too.
    ChurnAsync(streams[device], device == 0 ? 32 : 8);
    Rt("cudaStreamSynchronize", cudaStreamSynchronize(streams[device]));
  }
  cudaMemPool_t pool = nullptr;
  Rt("cudaDeviceGetDefaultMemPool", cudaDeviceGetDefaultMemPool(&pool, 1));
  Rt("cudaMemPoolTrimTo", cudaMemPoolTrimTo(pool, 0));
  unsigned long long reserved = 1;
  Rt("cudaMemPoolGetAttribute",
     cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent,
                             &reserved));
  std::printf("device 1's pool reserved after its trim: %llu\n", reserved);
  // The streams stay: destroying one gives back the blocks held since frees
  // on it, and what the trim left held is what the report is to show.
}

NOINLINE void Loop(int rounds) {
  int failures = 0;
  for (int i = 0; i < rounds; ++i) {
    float* out = nullptr;
    if (cudaMalloc(reinterpret_cast<void**>(&out), 4000 + 100 * (i % 7)) !=
        cudaSuccess) {
      ++failures;
    }
    void* args[] = {&out, &g_fill_count};
    if (cudaLaunchKernel(RuntimeFunction(), dim3(1), dim3(32), args, 0,
                         nullptr) != cudaSuccess) {
      ++failures;
    }
    if (cudaStreamSynchronize(nullptr) != cudaSuccess) ++failures;
    if (cudaFree(out) != cudaSuccess) ++failures;
  }
  std::printf("loop rounds %d failures %d\n", rounds, failures);
}

int main(int argc, char** argv) {
  std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "driver") {
    if (!DriverSetup(0)) return 1;
    DriverLaunches();
    DriverSyncs();
  } else if (mode == "runtime") {
    RuntimeLaunches();
    RuntimeSyncs();
  } else if (mode == "attribution_runtime") {
    AttributionRuntime();
  } else if (mode == "concurrent" && argc > 2) {
    ConcurrentWithACheck(argv[2]);
  } else if (mode == "pool_trim") {
    PoolTrim();
  } else if (mode == "pool_trim_other") {
    PoolTrimOther();
  } else if (mode == "async_quarantine") {
    AsyncQuarantine(argc > 2 && std::string(argv[2]) == "write");
  } else if (mode == "malloc_reuse") {
    MallocReuse();
  } else if (mode == "malloc_capture") {
    MallocCapture();
  } else if (mode == "repeat") {
    Repeat();
  } else if (mode == "loop" && argc > 2) {
    Loop(std::atoi(argv[2]));
  } else if (mode == "attribution_driver") {
    if (!DriverSetup(0)) return 1;
    AttributionDriver();
  } else {
    std::fprintf(stderr, "unknown mode '%s'\n", mode.c_str());
    return 2;
  }
  std::printf("done\n");
  return 0;
}
