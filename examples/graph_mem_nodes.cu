// graph_mem_nodes: memory CUDA graphs allocate when they are launched (graph
// memory nodes). No call returns such a pointer at the moment
// the memory appears, and the program frees it with calls that never saw it
// allocated: the tool must neither miss the leak nor take the frees for
// invalid or double frees.
//
//   A. GraphMemLeakNode: an explicit graph with a memory alloc node
//      (cudaGraphAddMemAllocNode, 1 MiB + 512 bytes) and a kernel node that
//      fills it, no free node; launched once and never freed: a leak
//   B. GraphMemCapturedPair: cudaMallocAsync + kernels + cudaFreeAsync
//      captured into a graph (an alloc and a free node), launched twice
//   C. GraphMemFreedByCudaFree: an explicit alloc node freed after the launch
//      with cudaFree; launched again and freed with cudaFreeAsync
//   D. GraphMemCapturedFreedOutside: cudaMallocAsync captured without its
//      free; after each of two launches the program frees it with
//      cudaFreeAsync (the second free of the same address is not a double
//      free: the second launch allocated it again)
//   E. PlainAsyncOutsideGraphs: one cudaMallocAsync + cudaFreeAsync outside
//      any graph
//
// Expected report (LD_PRELOAD, or CUDA_INJECTION64_PATH alone): no errors;
// exactly one leak: api "graph-mem-node", bytes 1049088, count 1, device 0,
// GraphMemLeakNode in its stack. Counted once: 9 allocations (A 1, B 2, C 2,
// D 2, E 1, the result buffer 1) and 8 frees. stdout is the same with and
// without the tool; the program exits 0 either way.
#include <cuda_runtime.h>

#include <cstdio>
#include <vector>

#include "example_check.h"

constexpr size_t kLeakBytes = (size_t{1} << 20) + 512;
constexpr size_t kPairBytes = size_t{256} << 10;
constexpr size_t kFreedBytes = size_t{64} << 10;
constexpr size_t kCapturedBytes = 4096;
constexpr size_t kPlainBytes = 1000;

__global__ void FillKernel(unsigned char* p, size_t n, unsigned char v) {
  size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i < n) p[i] = static_cast<unsigned char>(v + i % 7);
}

// One block: the byte sum of p[0, n) into *out.
__global__ void SumKernel(const unsigned char* p, size_t n,
                          unsigned long long* out) {
  __shared__ unsigned long long partial[256];
  unsigned long long s = 0;
  for (size_t i = threadIdx.x; i < n; i += blockDim.x) s += p[i];
  partial[threadIdx.x] = s;
  __syncthreads();
  if (threadIdx.x == 0) {
    unsigned long long total = 0;
    for (int i = 0; i < 256; ++i) total += partial[i];
    *out = total;
  }
}

unsigned int Blocks(size_t n) {
  return static_cast<unsigned int>((n + 255) / 256);
}

cudaMemAllocNodeParams AllocNodeParams(size_t bytes) {
  cudaMemAllocNodeParams p{};
  p.poolProps.allocType = cudaMemAllocationTypePinned;
  p.poolProps.location.type = cudaMemLocationTypeDevice;
  p.poolProps.location.id = 0;
  p.bytesize = bytes;
  return p;
}

// A graph: one alloc node of `bytes`, then a kernel node filling it.
cudaGraph_t AllocAndFillGraph(size_t bytes, unsigned char value, void** out) {
  cudaGraph_t graph = nullptr;
  EXAMPLE_CHECK_CUDA(cudaGraphCreate(&graph, 0));
  cudaMemAllocNodeParams alloc = AllocNodeParams(bytes);
  cudaGraphNode_t alloc_node = nullptr;
  EXAMPLE_CHECK_CUDA(
      cudaGraphAddMemAllocNode(&alloc_node, graph, nullptr, 0, &alloc));
  unsigned char* p = static_cast<unsigned char*>(alloc.dptr);
  size_t n = bytes;
  void* args[] = {&p, &n, &value};
  cudaKernelNodeParams k{};
  k.func = reinterpret_cast<void*>(FillKernel);
  k.gridDim = dim3(Blocks(bytes));
  k.blockDim = dim3(256);
  k.kernelParams = args;
  cudaGraphNode_t fill_node = nullptr;
  EXAMPLE_CHECK_CUDA(
      cudaGraphAddKernelNode(&fill_node, graph, &alloc_node, 1, &k));
  *out = alloc.dptr;
  return graph;
}

__attribute__((noinline)) void* GraphMemLeakNode(cudaStream_t stream,
                                                 unsigned long long* sum) {
  void* p = nullptr;
  cudaGraph_t graph = AllocAndFillGraph(kLeakBytes, 7, &p);
  cudaGraphExec_t exec = nullptr;
  EXAMPLE_CHECK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  EXAMPLE_CHECK_CUDA(cudaGraphLaunch(exec, stream));
  // The memory outlives the graph: read it back after the launch.
  SumKernel<<<1, 256, 0, stream>>>(static_cast<unsigned char*>(p), kLeakBytes,
                                   sum);
  EXAMPLE_CHECK_CUDA(cudaStreamSynchronize(stream));
  EXAMPLE_CHECK_CUDA(cudaGraphExecDestroy(exec));
  EXAMPLE_CHECK_CUDA(cudaGraphDestroy(graph));
  return p;  // never freed
}

__attribute__((noinline)) void GraphMemCapturedPair(cudaStream_t stream,
                                                    unsigned long long* sum) {
  EXAMPLE_CHECK_CUDA(
      cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  void* q = nullptr;
  EXAMPLE_CHECK_CUDA(cudaMallocAsync(&q, kPairBytes, stream));
  FillKernel<<<Blocks(kPairBytes), 256, 0, stream>>>(
      static_cast<unsigned char*>(q), kPairBytes, 5);
  SumKernel<<<1, 256, 0, stream>>>(static_cast<unsigned char*>(q), kPairBytes,
                                   sum);
  EXAMPLE_CHECK_CUDA(cudaFreeAsync(q, stream));
  cudaGraph_t graph = nullptr;
  EXAMPLE_CHECK_CUDA(cudaStreamEndCapture(stream, &graph));
  cudaGraphExec_t exec = nullptr;
  EXAMPLE_CHECK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  for (int i = 0; i < 2; ++i) EXAMPLE_CHECK_CUDA(cudaGraphLaunch(exec, stream));
  EXAMPLE_CHECK_CUDA(cudaStreamSynchronize(stream));
  EXAMPLE_CHECK_CUDA(cudaGraphExecDestroy(exec));
  EXAMPLE_CHECK_CUDA(cudaGraphDestroy(graph));
}

__attribute__((noinline)) void GraphMemFreedByCudaFree(cudaStream_t stream) {
  void* p = nullptr;
  cudaGraph_t graph = AllocAndFillGraph(kFreedBytes, 3, &p);
  cudaGraphExec_t exec = nullptr;
  EXAMPLE_CHECK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  EXAMPLE_CHECK_CUDA(cudaGraphLaunch(exec, stream));
  EXAMPLE_CHECK_CUDA(cudaStreamSynchronize(stream));
  EXAMPLE_CHECK_CUDA(cudaFree(p));  // graph memory, freed outside the graph
  EXAMPLE_CHECK_CUDA(cudaGraphLaunch(exec, stream));
  EXAMPLE_CHECK_CUDA(cudaFreeAsync(p, stream));
  EXAMPLE_CHECK_CUDA(cudaStreamSynchronize(stream));
  EXAMPLE_CHECK_CUDA(cudaGraphExecDestroy(exec));
  EXAMPLE_CHECK_CUDA(cudaGraphDestroy(graph));
}

__attribute__((noinline)) void GraphMemCapturedFreedOutside(
    cudaStream_t stream) {
  EXAMPLE_CHECK_CUDA(
      cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  void* r = nullptr;
  EXAMPLE_CHECK_CUDA(cudaMallocAsync(&r, kCapturedBytes, stream));
  FillKernel<<<Blocks(kCapturedBytes), 256, 0, stream>>>(
      static_cast<unsigned char*>(r), kCapturedBytes, 9);
  cudaGraph_t graph = nullptr;
  EXAMPLE_CHECK_CUDA(cudaStreamEndCapture(stream, &graph));
  cudaGraphExec_t exec = nullptr;
  EXAMPLE_CHECK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  for (int i = 0; i < 2; ++i) {
    EXAMPLE_CHECK_CUDA(cudaGraphLaunch(exec, stream));
    EXAMPLE_CHECK_CUDA(cudaFreeAsync(r, stream));
    EXAMPLE_CHECK_CUDA(cudaStreamSynchronize(stream));
  }
  EXAMPLE_CHECK_CUDA(cudaGraphExecDestroy(exec));
  EXAMPLE_CHECK_CUDA(cudaGraphDestroy(graph));
}

__attribute__((noinline)) void PlainAsyncOutsideGraphs(cudaStream_t stream) {
  void* x = nullptr;
  EXAMPLE_CHECK_CUDA(cudaMallocAsync(&x, kPlainBytes, stream));
  FillKernel<<<Blocks(kPlainBytes), 256, 0, stream>>>(
      static_cast<unsigned char*>(x), kPlainBytes, 1);
  EXAMPLE_CHECK_CUDA(cudaFreeAsync(x, stream));
  EXAMPLE_CHECK_CUDA(cudaStreamSynchronize(stream));
}

int main() {
  cudaStream_t stream = nullptr;
  EXAMPLE_CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  unsigned long long* sums = nullptr;  // [leak, pair]
  EXAMPLE_CHECK_CUDA(cudaMalloc(&sums, 2 * sizeof(unsigned long long)));
  GraphMemLeakNode(stream, &sums[0]);
  GraphMemCapturedPair(stream, &sums[1]);
  GraphMemFreedByCudaFree(stream);
  GraphMemCapturedFreedOutside(stream);
  PlainAsyncOutsideGraphs(stream);
  unsigned long long host[2] = {};
  EXAMPLE_CHECK_CUDA(
      cudaMemcpy(host, sums, sizeof(host), cudaMemcpyDeviceToHost));
  EXAMPLE_CHECK_CUDA(cudaFree(sums));
  EXAMPLE_CHECK_CUDA(cudaStreamDestroy(stream));
  std::printf(
      "graph_mem_nodes: leaked a %zu-byte graph allocation; sums %llu %llu\n",
      kLeakBytes, host[0], host[1]);
  return 0;
}
