// One interposed CUDA call (or alloc/free pair), as the program sees it, per
// API the tool intercepts:
//
//   BM_MallocFree        cudaMalloc + cudaFree             (threads 1 and 2)
//   BM_MallocFreeRing    the same with 256 blocks live (the registry not empty)
//   BM_MallocFreeAsync   cudaMallocAsync + cudaFreeAsync on the legacy stream
//   BM_CuMemAllocFree    cuMemAlloc_v2 + cuMemFree_v2 (the driver API)
//   BM_LaunchKernel      cudaLaunchKernel (the launch shim: engine
//                        BeforeLaunch/AfterLaunch, kernel id cache)
//   BM_MemcpyBounds      cudaMemcpy device to device inside a tracked block
//                        (the bounds shim: one registry range lookup)
//   BM_TensorOp          an eager framework's operation on a stream, as
//                        PyTorch's cudaMallocAsync backend makes it: the
//                        output allocated (cudaMallocAsync), a kernel given
//                        input and output, the input freed (cudaFreeAsync);
//                        in tensor mode every tensor is a guarded block
//
// Linked against the stand-in runtime (fake_runtime_for_bench.cc) or the
// project's CUDA test double (tests/fake_cuda); run_interpose_bench.sh runs it
// plain and with libgpumemtrace.so preloaded, and the difference is the
// tool's cost per call.
//
// The loops run at the bottom of a 20-deep call chain so that a 16-frame
// capture (GMT_OPTIONS=stack_depth=16) finds 16 frames to unwind, as in a real
// program. Declared with plain C types (the ABI of cudaError_t / CUresult,
// CUdeviceptr, cudaStream_t and dim3) so that no CUDA header is needed.
#include <benchmark/benchmark.h>

#include <cstddef>
#include <cstdint>

extern "C" int cudaMalloc(void** p, size_t bytes);
extern "C" int cudaFree(void* p);
extern "C" int cudaMallocAsync(void** p, size_t bytes, void* stream);
extern "C" int cudaFreeAsync(void* p, void* stream);
extern "C" int cuMemAlloc_v2(unsigned long long* p, size_t bytes);
extern "C" int cuMemFree_v2(unsigned long long p);
struct BenchDim3 {  // dim3: three unsigned ints, trivially copyable
  unsigned int x, y, z;
};
extern "C" int cudaLaunchKernel(const void* func, BenchDim3 grid,
                                BenchDim3 block, void** args,
                                size_t shared_bytes, void* stream);
extern "C" int cudaMemcpy(void* dst, const void* src, size_t bytes, int kind);

namespace {

#ifdef GMT_BENCH_BYTES
constexpr size_t kBytes = GMT_BENCH_BYTES;  // small: no mmap per block
#else
constexpr size_t kBytes = size_t{1} << 20;
#endif
constexpr int kChainDepth = 20;
constexpr int kMemcpyDeviceToDevice = 3;
constexpr size_t kCopyBytes = 64;

// The kernel "handle": the test double takes a function handle to be a
// pointer to the kernel's mangled name (cuFuncGetName returns it); the
// stand-in never looks at it.
const char kKernelName[] = "_Z11BenchKernelPfl";

__attribute__((noinline)) void MallocFreeLoop(benchmark::State& state) {
  for (auto _ : state) {
    void* p = nullptr;
    if (cudaMalloc(&p, kBytes) != 0) state.SkipWithError("cudaMalloc failed");
    benchmark::DoNotOptimize(p);
    cudaFree(p);
  }
}

// 256 blocks live at all times: each iteration frees the oldest and allocates
// a new one, so the tool's registry is not empty and addresses rotate.
__attribute__((noinline)) void RingLoop(benchmark::State& state) {
  constexpr int kLive = 256;
  void* ring[kLive];
  for (void*& p : ring) cudaMalloc(&p, kBytes);
  int i = 0;
  for (auto _ : state) {
    cudaFree(ring[i]);
    if (cudaMalloc(&ring[i], kBytes) != 0) state.SkipWithError("cudaMalloc");
    i = (i + 1) % kLive;
  }
  for (void* p : ring) cudaFree(p);
}

__attribute__((noinline)) void MallocFreeAsyncLoop(benchmark::State& state) {
  for (auto _ : state) {
    void* p = nullptr;
    if (cudaMallocAsync(&p, kBytes, nullptr) != 0) {
      state.SkipWithError("cudaMallocAsync failed");
      break;
    }
    benchmark::DoNotOptimize(p);
    cudaFreeAsync(p, nullptr);
  }
}

__attribute__((noinline)) void CuMemAllocFreeLoop(benchmark::State& state) {
  cudaFree(nullptr);  // the runtime makes its context current on this thread
  for (auto _ : state) {
    unsigned long long p = 0;
    if (cuMemAlloc_v2(&p, kBytes) != 0) {
      state.SkipWithError("cuMemAlloc_v2 failed");
      break;
    }
    benchmark::DoNotOptimize(p);
    cuMemFree_v2(p);
  }
}

__attribute__((noinline)) void LaunchLoop(benchmark::State& state) {
  // A few live blocks, as in a program that launches: their (guard) fills
  // happen before the first launch, outside the timing.
  void* blocks[4] = {};
  for (void*& p : blocks) cudaMalloc(&p, kBytes);
  const BenchDim3 grid{1, 1, 1}, block{32, 1, 1};
  // One slot per parameter of BenchKernel(float*, long): CUDA reads as many
  // as the kernel has, and so does the tool.
  long count = 256;
  void* args[] = {&blocks[0], &count};
  if (cudaLaunchKernel(kKernelName, grid, block, args, 0, nullptr) != 0) {
    state.SkipWithError("cudaLaunchKernel failed");
  }
  for (auto _ : state) {
    if (cudaLaunchKernel(kKernelName, grid, block, args, 0, nullptr) != 0) {
      state.SkipWithError("cudaLaunchKernel failed");
      break;
    }
  }
  for (void* p : blocks) cudaFree(p);
}

__attribute__((noinline)) void MemcpyLoop(benchmark::State& state) {
  void* a = nullptr;
  void* b = nullptr;
  if (cudaMalloc(&a, kBytes) != 0 || cudaMalloc(&b, kBytes) != 0) {
    state.SkipWithError("cudaMalloc failed");
    return;
  }
  for (auto _ : state) {
    if (cudaMemcpy(a, b, kCopyBytes, kMemcpyDeviceToDevice) != 0) {
      state.SkipWithError("cudaMemcpy failed");
      break;
    }
  }
  cudaFree(a);
  cudaFree(b);
}

__attribute__((noinline)) void TensorOpLoop(benchmark::State& state) {
  void* stream = nullptr;  // the legacy stream, as PyTorch's default stream
  void* in = nullptr;
  if (cudaMallocAsync(&in, kBytes, stream) != 0) {
    state.SkipWithError("cudaMallocAsync failed");
    return;
  }
  const BenchDim3 grid{1, 1, 1}, block{32, 1, 1};
  long count = 256;
  for (auto _ : state) {
    void* out = nullptr;
    if (cudaMallocAsync(&out, kBytes, stream) != 0) {
      state.SkipWithError("cudaMallocAsync failed");
      break;
    }
    void* args[] = {&out, &count};
    if (cudaLaunchKernel(kKernelName, grid, block, args, 0, stream) != 0) {
      state.SkipWithError("cudaLaunchKernel failed");
      break;
    }
    cudaFreeAsync(in, stream);
    in = out;
  }
  cudaFreeAsync(in, stream);
}

template <int N>
__attribute__((noinline)) void Chain(benchmark::State& state,
                                     void (*loop)(benchmark::State&)) {
  Chain<N - 1>(state, loop);
  benchmark::ClobberMemory();  // not a tail call: the frame stays
}

template <>
__attribute__((noinline)) void Chain<0>(benchmark::State& state,
                                        void (*loop)(benchmark::State&)) {
  loop(state);
  benchmark::ClobberMemory();
}

void BM_MallocFree(benchmark::State& state) {
  Chain<kChainDepth>(state, MallocFreeLoop);
}
BENCHMARK(BM_MallocFree)->Threads(1)->Threads(2)->UseRealTime();

void BM_MallocFreeRing(benchmark::State& state) {
  Chain<kChainDepth>(state, RingLoop);
}
BENCHMARK(BM_MallocFreeRing)->UseRealTime();

void BM_MallocFreeAsync(benchmark::State& state) {
  Chain<kChainDepth>(state, MallocFreeAsyncLoop);
}
BENCHMARK(BM_MallocFreeAsync)->UseRealTime();

void BM_CuMemAllocFree(benchmark::State& state) {
  Chain<kChainDepth>(state, CuMemAllocFreeLoop);
}
BENCHMARK(BM_CuMemAllocFree)->UseRealTime();

void BM_LaunchKernel(benchmark::State& state) {
  Chain<kChainDepth>(state, LaunchLoop);
}
BENCHMARK(BM_LaunchKernel)->UseRealTime();

void BM_MemcpyBounds(benchmark::State& state) {
  Chain<kChainDepth>(state, MemcpyLoop);
}
BENCHMARK(BM_MemcpyBounds)->UseRealTime();

void BM_TensorOp(benchmark::State& state) {
  Chain<kChainDepth>(state, TensorOpLoop);
}
BENCHMARK(BM_TensorOp)->UseRealTime();

}  // namespace
