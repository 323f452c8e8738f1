// CUDA graphs that allocate: explicit memory nodes (cudaGraphAddMemAllocNode,
// cudaGraphAddMemFreeNode) around kernel and copy nodes, a graph whose
// allocation outlives it (freed later with cudaFreeAsync), auto-free on
// relaunch, and the device's graph-memory footprint read after each step with
// cudaDeviceGetGraphMemAttribute, trimmed with cudaDeviceGraphMemTrim and its
// high-water marks reset, as a runtime that budgets graph memory does.
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>

#include "corpus_check.h"

namespace {

constexpr size_t kMiB = size_t{1} << 20;

__global__ void FillWords(unsigned* p, size_t n, unsigned value) {
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < n;
       i += size_t{gridDim.x} * blockDim.x)
    p[i] = value + static_cast<unsigned>(i & 1023);
}

__global__ void SumWords(const unsigned* p, size_t n, unsigned long long* out) {
  unsigned long long local = 0;
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < n;
       i += size_t{gridDim.x} * blockDim.x)
    local += p[i];
  atomicAdd(out, local);
}

void PrintFootprint(const char* when) {
  struct {
    cudaGraphMemAttributeType attr;
    const char* name;
  } const kAttrs[] = {
      {cudaGraphMemAttrUsedMemCurrent, "used"},
      {cudaGraphMemAttrUsedMemHigh, "used-high"},
      {cudaGraphMemAttrReservedMemCurrent, "reserved"},
      {cudaGraphMemAttrReservedMemHigh, "reserved-high"},
  };
  std::printf("graph memory %s:", when);
  for (const auto& a : kAttrs) {
    uint64_t value = 0;
    cudaError_t rc = cudaDeviceGetGraphMemAttribute(0, a.attr, &value);
    if (rc == cudaSuccess)
      std::printf(" %s=%llu", a.name, static_cast<unsigned long long>(value));
    else
      std::printf(" %s->%s", a.name, cudaGetErrorName(rc));
  }
  std::printf("\n");
}

cudaMemAllocNodeParams AllocParams(size_t bytes) {
  cudaMemAllocNodeParams p{};
  p.poolProps.allocType = cudaMemAllocationTypePinned;
  p.poolProps.location.type = cudaMemLocationTypeDevice;
  p.poolProps.location.id = 0;
  p.bytesize = bytes;
  return p;
}

cudaGraphNode_t AddKernel(cudaGraph_t g, const cudaGraphNode_t* deps,
                          size_t ndeps, void* func, void** args) {
  cudaKernelNodeParams k{};
  k.func = func;
  k.gridDim = dim3(264);
  k.blockDim = dim3(256);
  k.kernelParams = args;
  cudaGraphNode_t node;
  CORPUS_CHECK(cudaGraphAddKernelNode(&node, g, deps, ndeps, &k));
  return node;
}

unsigned long long Expected(size_t n, unsigned value) {
  unsigned long long s = 0;
  for (size_t i = 0; i < n; ++i) s += value + static_cast<unsigned>(i & 1023);
  return s;
}

}  // namespace

int main() {
  corpus::ProgramName() = "graph_mem_footprint";
  CORPUS_CHECK(cudaSetDevice(0));
  cudaStream_t stream;
  CORPUS_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  PrintFootprint("at start");

  unsigned long long* sum = nullptr;
  CORPUS_CHECK(cudaMalloc(&sum, sizeof *sum));
  unsigned long long* host_sum = nullptr;
  CORPUS_CHECK(cudaMallocHost(&host_sum, sizeof *host_sum));

  // Graph A: alloc 64 MiB -> fill -> sum -> copy the sum out -> free.
  cudaGraph_t a;
  CORPUS_CHECK(cudaGraphCreate(&a, 0));
  cudaMemAllocNodeParams alloc_a = AllocParams(64 * kMiB);
  cudaGraphNode_t n_alloc;
  corpus::Rc("cudaGraphAddMemAllocNode 64 MiB",
             cudaGraphAddMemAllocNode(&n_alloc, a, nullptr, 0, &alloc_a));
  unsigned* buf_a = static_cast<unsigned*>(alloc_a.dptr);
  size_t words_a = 64 * kMiB / sizeof(unsigned);
  unsigned value = 7;
  void* fill_args[] = {&buf_a, &words_a, &value};
  cudaGraphNode_t n_fill =
      AddKernel(a, &n_alloc, 1, reinterpret_cast<void*>(FillWords), fill_args);
  cudaMemsetParams zero{};
  zero.dst = sum;
  zero.value = 0;
  zero.elementSize = 4;
  zero.width = 2;
  zero.height = 1;
  cudaGraphNode_t n_zero;
  CORPUS_CHECK(cudaGraphAddMemsetNode(&n_zero, a, nullptr, 0, &zero));
  cudaGraphNode_t deps[] = {n_fill, n_zero};
  void* sum_args[] = {&buf_a, &words_a, &sum};
  cudaGraphNode_t n_sum =
      AddKernel(a, deps, 2, reinterpret_cast<void*>(SumWords), sum_args);
  cudaGraphNode_t n_copy;
  CORPUS_CHECK(cudaGraphAddMemcpyNode1D(&n_copy, a, &n_sum, 1, host_sum, sum,
                                        sizeof *sum, cudaMemcpyDeviceToHost));
  cudaGraphNode_t n_free;
  corpus::Rc("cudaGraphAddMemFreeNode",
             cudaGraphAddMemFreeNode(&n_free, a, &n_sum, 1, buf_a));

  cudaMemAllocNodeParams got{};
  corpus::Rc("cudaGraphMemAllocNodeGetParams",
             cudaGraphMemAllocNodeGetParams(n_alloc, &got));
  std::printf("alloc node: bytesize %zu, same pointer %s, 256-aligned %s\n",
              got.bytesize, got.dptr == alloc_a.dptr ? "yes" : "no",
              reinterpret_cast<uintptr_t>(got.dptr) % 256 == 0 ? "yes" : "no");

  cudaGraphExec_t exec_a;
  corpus::Rc("instantiate A", cudaGraphInstantiate(&exec_a, a, 0));
  PrintFootprint("A instantiated");
  for (int launch = 0; launch < 3; ++launch) {
    CORPUS_CHECK(cudaGraphLaunch(exec_a, stream));
    CORPUS_CHECK(cudaStreamSynchronize(stream));
    corpus::Expect(*host_sum == Expected(words_a, value),
                   "graph A launch %d: sum %llu", launch, *host_sum);
  }
  std::printf("graph A: 3 launches, sums right: %s\n",
              *host_sum == Expected(words_a, value) ? "yes" : "no");
  PrintFootprint("after A");

  // Graph B: two allocations freed inside it; the pool may reuse A's memory.
  cudaGraph_t b;
  CORPUS_CHECK(cudaGraphCreate(&b, 0));
  cudaMemAllocNodeParams alloc_b1 = AllocParams(32 * kMiB);
  cudaMemAllocNodeParams alloc_b2 = AllocParams(96 * kMiB + 4096);
  cudaGraphNode_t b_alloc1, b_alloc2;
  CORPUS_CHECK(cudaGraphAddMemAllocNode(&b_alloc1, b, nullptr, 0, &alloc_b1));
  CORPUS_CHECK(cudaGraphAddMemAllocNode(&b_alloc2, b, &b_alloc1, 1, &alloc_b2));
  unsigned* buf_b = static_cast<unsigned*>(alloc_b2.dptr);
  size_t words_b = (96 * kMiB + 4096) / sizeof(unsigned);
  unsigned value_b = 11;
  void* fill_b[] = {&buf_b, &words_b, &value_b};
  cudaGraphNode_t b_fill =
      AddKernel(b, &b_alloc2, 1, reinterpret_cast<void*>(FillWords), fill_b);
  cudaGraphNode_t b_copy;
  CORPUS_CHECK(cudaGraphAddMemcpyNode1D(&b_copy, b, &b_fill, 1, alloc_b1.dptr,
                                        buf_b, 32 * kMiB,
                                        cudaMemcpyDeviceToDevice));
  cudaGraphNode_t b_free1, b_free2;
  CORPUS_CHECK(cudaGraphAddMemFreeNode(&b_free2, b, &b_copy, 1, alloc_b2.dptr));
  CORPUS_CHECK(cudaGraphAddMemFreeNode(&b_free1, b, &b_copy, 1, alloc_b1.dptr));
  cudaGraphExec_t exec_b;
  CORPUS_CHECK(cudaGraphInstantiate(&exec_b, b, 0));
  CORPUS_CHECK(cudaGraphLaunch(exec_b, stream));
  CORPUS_CHECK(cudaStreamSynchronize(stream));
  PrintFootprint("after B");

  // Graph C: the allocation outlives the graph; auto-free on relaunch.
  cudaGraph_t c;
  CORPUS_CHECK(cudaGraphCreate(&c, 0));
  cudaMemAllocNodeParams alloc_c = AllocParams(16 * kMiB);
  cudaGraphNode_t c_alloc;
  CORPUS_CHECK(cudaGraphAddMemAllocNode(&c_alloc, c, nullptr, 0, &alloc_c));
  unsigned* buf_c = static_cast<unsigned*>(alloc_c.dptr);
  size_t words_c = 16 * kMiB / sizeof(unsigned);
  unsigned value_c = 3;
  void* fill_c[] = {&buf_c, &words_c, &value_c};
  AddKernel(c, &c_alloc, 1, reinterpret_cast<void*>(FillWords), fill_c);
  cudaGraphExec_t exec_c;
  corpus::Rc("instantiate C without auto-free",
             cudaGraphInstantiate(&exec_c, c, 0));
  CORPUS_CHECK(cudaGraphLaunch(exec_c, stream));
  CORPUS_CHECK(cudaStreamSynchronize(stream));
  // Relaunching while the allocation is live is an error without auto-free.
  corpus::Rc("relaunch C with its allocation live",
             cudaGraphLaunch(exec_c, stream));
  corpus::Rc("  cudaGetLastError", cudaGetLastError());
  CORPUS_CHECK(cudaStreamSynchronize(stream));
  CORPUS_CHECK(cudaMemsetAsync(sum, 0, sizeof *sum, stream));
  SumWords<<<264, 256, 0, stream>>>(buf_c, words_c, sum);
  CORPUS_CHECK(cudaMemcpyAsync(host_sum, sum, sizeof *sum,
                               cudaMemcpyDeviceToHost, stream));
  CORPUS_CHECK(cudaStreamSynchronize(stream));
  corpus::Expect(*host_sum == Expected(words_c, value_c),
                 "graph C's memory after the graph: sum %llu", *host_sum);
  PrintFootprint("C's allocation live");
  corpus::Rc("cudaFreeAsync of C's allocation", cudaFreeAsync(buf_c, stream));
  CORPUS_CHECK(cudaStreamSynchronize(stream));
  PrintFootprint("C's allocation freed");

  // A graph with memory nodes may be instantiated once at a time.
  CORPUS_CHECK(cudaGraphExecDestroy(exec_c));
  cudaGraphExec_t exec_c_auto;
  corpus::Rc("instantiate C with auto-free",
             cudaGraphInstantiate(&exec_c_auto, c,
                                  cudaGraphInstantiateFlagAutoFreeOnLaunch));
  for (int launch = 0; launch < 3; ++launch)
    corpus::Rc("launch C auto-free", cudaGraphLaunch(exec_c_auto, stream));
  CORPUS_CHECK(cudaStreamSynchronize(stream));
  CORPUS_CHECK(cudaFreeAsync(buf_c, stream));
  CORPUS_CHECK(cudaStreamSynchronize(stream));
  PrintFootprint("after C auto-free");

  CORPUS_CHECK(cudaGraphExecDestroy(exec_a));
  CORPUS_CHECK(cudaGraphExecDestroy(exec_b));
  CORPUS_CHECK(cudaGraphExecDestroy(exec_c_auto));
  CORPUS_CHECK(cudaGraphDestroy(a));
  CORPUS_CHECK(cudaGraphDestroy(b));
  CORPUS_CHECK(cudaGraphDestroy(c));
  CORPUS_CHECK(cudaDeviceSynchronize());
  corpus::Rc("cudaDeviceGraphMemTrim", cudaDeviceGraphMemTrim(0));
  PrintFootprint("trimmed");
  uint64_t zero64 = 0;
  corpus::Rc("reset used-high", cudaDeviceSetGraphMemAttribute(
                                    0, cudaGraphMemAttrUsedMemHigh, &zero64));
  corpus::Rc("reset reserved-high",
             cudaDeviceSetGraphMemAttribute(0, cudaGraphMemAttrReservedMemHigh,
                                            &zero64));
  PrintFootprint("high marks reset");

  CORPUS_CHECK(cudaFreeHost(host_sum));
  CORPUS_CHECK(cudaFree(sum));
  CORPUS_CHECK(cudaStreamDestroy(stream));
  return corpus::Finish();
}
