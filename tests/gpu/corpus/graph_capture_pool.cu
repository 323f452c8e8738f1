// Stream capture of stream-ordered allocations, the way a training step is
// turned into a graph: two streams forked and joined with events inside the
// capture, temporaries from cudaMallocAsync freed inside it, one output
// allocated inside and freed after the graph ran, the graph uploaded and
// launched repeatedly, and the graph-memory footprint reported.
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <vector>

#include "corpus_check.h"

namespace {

constexpr int kN = 1 << 20;

__global__ void Init(float* x, int n, float scale) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = scale * static_cast<float>(i % 512);
}

__global__ void Combine(float* out, const float* a, const float* b, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = a[i] + 2.0f * b[i];
}

__global__ void Accumulate(float* acc, const float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) acc[i] += x[i];
}

void PrintFootprint(const char* when) {
  uint64_t used = 0, reserved = 0, used_high = 0;
  cudaError_t r1 =
      cudaDeviceGetGraphMemAttribute(0, cudaGraphMemAttrUsedMemCurrent, &used);
  cudaError_t r2 = cudaDeviceGetGraphMemAttribute(
      0, cudaGraphMemAttrReservedMemCurrent, &reserved);
  cudaError_t r3 = cudaDeviceGetGraphMemAttribute(
      0, cudaGraphMemAttrUsedMemHigh, &used_high);
  std::printf(
      "graph memory %s: used=%llu reserved=%llu used-high=%llu "
      "(%s %s %s)\n",
      when, static_cast<unsigned long long>(used),
      static_cast<unsigned long long>(reserved),
      static_cast<unsigned long long>(used_high), cudaGetErrorName(r1),
      cudaGetErrorName(r2), cudaGetErrorName(r3));
}

}  // namespace

int main() {
  corpus::ProgramName() = "graph_capture_pool";
  CORPUS_CHECK(cudaSetDevice(0));
  cudaStream_t main_stream, side;
  CORPUS_CHECK(cudaStreamCreateWithFlags(&main_stream, cudaStreamNonBlocking));
  CORPUS_CHECK(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking));
  cudaEvent_t fork_ev, join_ev;
  CORPUS_CHECK(cudaEventCreateWithFlags(&fork_ev, cudaEventDisableTiming));
  CORPUS_CHECK(cudaEventCreateWithFlags(&join_ev, cudaEventDisableTiming));

  float* acc = nullptr;
  CORPUS_CHECK(cudaMalloc(&acc, kN * sizeof(float)));
  CORPUS_CHECK(cudaMemsetAsync(acc, 0, kN * sizeof(float), main_stream));
  CORPUS_CHECK(cudaStreamSynchronize(main_stream));
  PrintFootprint("before capture");

  float* escaped = nullptr;  // allocated in the graph, freed after it ran
  corpus::Rc(
      "cudaStreamBeginCapture",
      cudaStreamBeginCapture(main_stream, cudaStreamCaptureModeThreadLocal));
  cudaStreamCaptureStatus status;
  unsigned long long capture_id = 0;
  CORPUS_CHECK(cudaStreamGetCaptureInfo(main_stream, &status, &capture_id));
  std::printf("capturing: %s\n",
              status == cudaStreamCaptureStatusActive ? "yes" : "no");
  float* a = nullptr;
  float* b = nullptr;
  corpus::Rc("captured cudaMallocAsync a",
             cudaMallocAsync(reinterpret_cast<void**>(&a), kN * sizeof(float),
                             main_stream));
  CORPUS_CHECK(cudaEventRecord(fork_ev, main_stream));
  CORPUS_CHECK(cudaStreamWaitEvent(side, fork_ev, 0));
  corpus::Rc(
      "captured cudaMallocAsync b (side stream)",
      cudaMallocAsync(reinterpret_cast<void**>(&b), kN * sizeof(float), side));
  Init<<<kN / 256, 256, 0, main_stream>>>(a, kN, 1.0f);
  Init<<<kN / 256, 256, 0, side>>>(b, kN, 0.5f);
  CORPUS_CHECK(cudaEventRecord(join_ev, side));
  CORPUS_CHECK(cudaStreamWaitEvent(main_stream, join_ev, 0));
  corpus::Rc("captured cudaMallocAsync escaped",
             cudaMallocAsync(reinterpret_cast<void**>(&escaped),
                             kN * sizeof(float), main_stream));
  Combine<<<kN / 256, 256, 0, main_stream>>>(escaped, a, b, kN);
  Accumulate<<<kN / 256, 256, 0, main_stream>>>(acc, escaped, kN);
  corpus::Rc("captured cudaFreeAsync a", cudaFreeAsync(a, main_stream));
  corpus::Rc("captured cudaFreeAsync b", cudaFreeAsync(b, main_stream));
  cudaGraph_t graph = nullptr;
  corpus::Rc("cudaStreamEndCapture", cudaStreamEndCapture(main_stream, &graph));

  size_t nodes = 0;
  CORPUS_CHECK(cudaGraphGetNodes(graph, nullptr, &nodes));
  std::vector<cudaGraphNode_t> list(nodes);
  CORPUS_CHECK(cudaGraphGetNodes(graph, list.data(), &nodes));
  int allocs = 0, frees = 0, kernels = 0;
  size_t alloc_bytes = 0;
  for (cudaGraphNode_t n : list) {
    cudaGraphNodeType type;
    CORPUS_CHECK(cudaGraphNodeGetType(n, &type));
    if (type == cudaGraphNodeTypeMemAlloc) {
      ++allocs;
      cudaMemAllocNodeParams p{};
      CORPUS_CHECK(cudaGraphMemAllocNodeGetParams(n, &p));
      alloc_bytes += p.bytesize;
    }
    if (type == cudaGraphNodeTypeMemFree) ++frees;
    if (type == cudaGraphNodeTypeKernel) ++kernels;
  }
  std::printf(
      "captured graph: %zu nodes, %d alloc (%zu bytes), %d free, "
      "%d kernel\n",
      nodes, allocs, alloc_bytes, frees, kernels);

  cudaGraphExec_t exec;
  corpus::Rc("cudaGraphInstantiateWithFlags auto-free",
             cudaGraphInstantiateWithFlags(
                 &exec, graph, cudaGraphInstantiateFlagAutoFreeOnLaunch));
  corpus::Rc("cudaGraphUpload", cudaGraphUpload(exec, main_stream));
  PrintFootprint("uploaded");
  constexpr int kLaunches = 5;
  for (int i = 0; i < kLaunches; ++i)
    CORPUS_CHECK(cudaGraphLaunch(exec, main_stream));
  CORPUS_CHECK(cudaStreamSynchronize(main_stream));
  PrintFootprint("after launches");

  std::vector<float> host(kN);
  CORPUS_CHECK(cudaMemcpy(host.data(), escaped, kN * sizeof(float),
                          cudaMemcpyDeviceToHost));
  int wrong_escaped = 0;
  for (int i = 0; i < kN; ++i)
    if (host[i] != 2.0f * static_cast<float>(i % 512)) ++wrong_escaped;
  CORPUS_CHECK(
      cudaMemcpy(host.data(), acc, kN * sizeof(float), cudaMemcpyDeviceToHost));
  int wrong_acc = 0;
  for (int i = 0; i < kN; ++i)
    if (host[i] != kLaunches * 2.0f * static_cast<float>(i % 512)) ++wrong_acc;
  std::printf("escaped output: %d wrong, accumulator: %d wrong\n",
              wrong_escaped, wrong_acc);
  corpus::Expect(wrong_escaped == 0 && wrong_acc == 0, "wrong results");

  corpus::Rc("cudaFree of the escaped allocation", cudaFree(escaped));
  PrintFootprint("escaped freed");
  CORPUS_CHECK(cudaGraphExecDestroy(exec));
  CORPUS_CHECK(cudaGraphDestroy(graph));
  corpus::Rc("cudaDeviceGraphMemTrim", cudaDeviceGraphMemTrim(0));
  PrintFootprint("trimmed");

  CORPUS_CHECK(cudaFree(acc));
  CORPUS_CHECK(cudaEventDestroy(fork_ev));
  CORPUS_CHECK(cudaEventDestroy(join_ev));
  CORPUS_CHECK(cudaStreamDestroy(side));
  CORPUS_CHECK(cudaStreamDestroy(main_stream));
  return corpus::Finish();
}
