// CUDA graphs without memory nodes, as an iterative solver builds them (cf.
// the simpleCudaGraphs sample): an explicit graph of memset, copy, kernel and
// host nodes with a child graph, cloned, instantiated and launched in a loop;
// a kernel node's argument changed in the executable graph
// (cudaGraphExecKernelNodeSetParams) and the whole graph updated from a
// changed copy (cudaGraphExecUpdate); and the same work captured from a stream
// (cudaLaunchHostFunc included).
#include <cuda_runtime.h>

#include <atomic>
#include <cstdio>
#include <vector>

#include "corpus_check.h"

namespace {

constexpr int kN = 1 << 16;

__global__ void Scale(float* p, int n, float factor) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] *= factor;
}

__global__ void AddInto(float* acc, const float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) acc[i] += x[i];
}

std::atomic<int> host_calls{0};
void CUDART_CB CountCall(void*) { host_calls.fetch_add(1); }

cudaGraphNode_t KernelNode(cudaGraph_t g, std::vector<cudaGraphNode_t> deps,
                           void* func, void** args) {
  cudaKernelNodeParams k{};
  k.func = func;
  k.gridDim = dim3(kN / 256);
  k.blockDim = dim3(256);
  k.kernelParams = args;
  cudaGraphNode_t node;
  CORPUS_CHECK(cudaGraphAddKernelNode(&node, g, deps.data(), deps.size(), &k));
  return node;
}

}  // namespace

int main() {
  corpus::ProgramName() = "graph_basic";
  CORPUS_CHECK(cudaSetDevice(0));
  cudaStream_t stream;
  CORPUS_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  // Copy nodes and captured copies use pinned host memory.
  float *x, *acc, *result, *input;
  CORPUS_CHECK(cudaMalloc(&x, kN * sizeof(float)));
  CORPUS_CHECK(cudaMalloc(&acc, kN * sizeof(float)));
  CORPUS_CHECK(cudaMallocHost(&result, kN * sizeof(float)));
  CORPUS_CHECK(cudaMallocHost(&input, kN * sizeof(float)));
  for (int i = 0; i < kN; ++i) input[i] = static_cast<float>(i % 64);
  CORPUS_CHECK(cudaMemsetAsync(acc, 0, kN * sizeof(float), stream));

  // Child graph: x *= factor.
  cudaGraph_t child;
  CORPUS_CHECK(cudaGraphCreate(&child, 0));
  int n = kN;
  float factor = 2.0f;
  void* scale_args[] = {&x, &n, &factor};
  cudaGraphNode_t child_scale =
      KernelNode(child, {}, reinterpret_cast<void*>(Scale), scale_args);
  (void)child_scale;

  // Parent: copy input -> x, child, acc += x, copy acc -> result, host node.
  cudaGraph_t graph;
  CORPUS_CHECK(cudaGraphCreate(&graph, 0));
  cudaGraphNode_t copy_in, child_node, add, copy_out, host_node;
  CORPUS_CHECK(cudaGraphAddMemcpyNode1D(&copy_in, graph, nullptr, 0, x, input,
                                        kN * sizeof(float),
                                        cudaMemcpyHostToDevice));
  CORPUS_CHECK(
      cudaGraphAddChildGraphNode(&child_node, graph, &copy_in, 1, child));
  void* add_args[] = {&acc, &x, &n};
  add = KernelNode(graph, {child_node}, reinterpret_cast<void*>(AddInto),
                   add_args);
  CORPUS_CHECK(cudaGraphAddMemcpyNode1D(&copy_out, graph, &add, 1, result, acc,
                                        kN * sizeof(float),
                                        cudaMemcpyDeviceToHost));
  cudaHostNodeParams host{};
  host.fn = CountCall;
  CORPUS_CHECK(cudaGraphAddHostNode(&host_node, graph, &copy_out, 1, &host));
  size_t nodes = 0;
  CORPUS_CHECK(cudaGraphGetNodes(graph, nullptr, &nodes));
  std::printf("graph: %zu nodes\n", nodes);

  cudaGraph_t clone;
  corpus::Rc("cudaGraphClone", cudaGraphClone(&clone, graph));
  cudaGraphExec_t exec;
  corpus::Rc("cudaGraphInstantiate", cudaGraphInstantiate(&exec, clone, 0));
  constexpr int kLaunches = 10;
  for (int i = 0; i < kLaunches; ++i)
    CORPUS_CHECK(cudaGraphLaunch(exec, stream));
  CORPUS_CHECK(cudaStreamSynchronize(stream));
  int wrong = 0;
  for (int i = 0; i < kN; ++i)
    if (result[i] != kLaunches * 2.0f * input[i]) ++wrong;
  std::printf("10 launches: %d wrong, %d host-node calls\n", wrong,
              host_calls.load());
  corpus::Expect(wrong == 0 && host_calls.load() == kLaunches, "launches");

  // Change the add node's source in the executable graph: acc += acc.
  cudaKernelNodeParams changed{};
  void* double_args[] = {&acc, &acc, &n};
  changed.func = reinterpret_cast<void*>(AddInto);
  changed.gridDim = dim3(kN / 256);
  changed.blockDim = dim3(256);
  changed.kernelParams = double_args;
  cudaGraphNode_t clone_add = nullptr;
  CORPUS_CHECK(cudaGraphNodeFindInClone(&clone_add, add, clone));
  corpus::Rc("cudaGraphExecKernelNodeSetParams",
             cudaGraphExecKernelNodeSetParams(exec, clone_add, &changed));
  CORPUS_CHECK(cudaGraphLaunch(exec, stream));
  CORPUS_CHECK(cudaStreamSynchronize(stream));
  wrong = 0;
  for (int i = 0; i < kN; ++i)
    if (result[i] != 2.0f * kLaunches * 2.0f * input[i]) ++wrong;
  std::printf("after SetParams: %d wrong\n", wrong);
  corpus::Expect(wrong == 0, "exec kernel node set params");

  // Update the whole executable from the original with a new factor.
  factor = 3.0f;
  void* new_scale_args[] = {&x, &n, &factor};
  cudaKernelNodeParams scale_params{};
  scale_params.func = reinterpret_cast<void*>(Scale);
  scale_params.gridDim = dim3(kN / 256);
  scale_params.blockDim = dim3(256);
  scale_params.kernelParams = new_scale_args;
  cudaGraph_t child_in_graph = nullptr;
  CORPUS_CHECK(cudaGraphChildGraphNodeGetGraph(child_node, &child_in_graph));
  size_t child_nodes = 1;
  cudaGraphNode_t inner = nullptr;
  CORPUS_CHECK(cudaGraphGetNodes(child_in_graph, &inner, &child_nodes));
  CORPUS_CHECK(cudaGraphKernelNodeSetParams(inner, &scale_params));
  cudaGraphExecUpdateResultInfo info{};
  corpus::Rc("cudaGraphExecUpdate", cudaGraphExecUpdate(exec, graph, &info));
  std::printf("update result: %d\n", static_cast<int>(info.result));
  CORPUS_CHECK(cudaMemsetAsync(acc, 0, kN * sizeof(float), stream));
  CORPUS_CHECK(cudaGraphLaunch(exec, stream));
  CORPUS_CHECK(cudaStreamSynchronize(stream));
  wrong = 0;
  for (int i = 0; i < kN; ++i)
    if (result[i] != 3.0f * input[i]) ++wrong;
  std::printf("after update: %d wrong\n", wrong);
  corpus::Expect(wrong == 0, "exec update");

  // The same shape captured from a stream.
  cudaGraph_t captured;
  CORPUS_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  CORPUS_CHECK(cudaMemcpyAsync(x, input, kN * sizeof(float),
                               cudaMemcpyHostToDevice, stream));
  CORPUS_CHECK(cudaMemsetAsync(acc, 0, kN * sizeof(float), stream));
  Scale<<<kN / 256, 256, 0, stream>>>(x, kN, 5.0f);
  AddInto<<<kN / 256, 256, 0, stream>>>(acc, x, kN);
  CORPUS_CHECK(cudaMemcpyAsync(result, acc, kN * sizeof(float),
                               cudaMemcpyDeviceToHost, stream));
  CORPUS_CHECK(cudaLaunchHostFunc(stream, CountCall, nullptr));
  corpus::Rc("cudaStreamEndCapture", cudaStreamEndCapture(stream, &captured));
  cudaGraphExec_t captured_exec;
  CORPUS_CHECK(cudaGraphInstantiate(&captured_exec, captured, 0));
  host_calls = 0;
  for (int i = 0; i < 3; ++i)
    CORPUS_CHECK(cudaGraphLaunch(captured_exec, stream));
  CORPUS_CHECK(cudaStreamSynchronize(stream));
  wrong = 0;
  for (int i = 0; i < kN; ++i)
    if (result[i] != 5.0f * input[i]) ++wrong;
  std::printf("captured graph x3: %d wrong, %d host calls\n", wrong,
              host_calls.load());
  corpus::Expect(wrong == 0 && host_calls.load() == 3, "captured graph");

  CORPUS_CHECK(cudaGraphExecDestroy(captured_exec));
  CORPUS_CHECK(cudaGraphExecDestroy(exec));
  CORPUS_CHECK(cudaGraphDestroy(captured));
  CORPUS_CHECK(cudaGraphDestroy(clone));
  CORPUS_CHECK(cudaGraphDestroy(graph));
  CORPUS_CHECK(cudaGraphDestroy(child));
  CORPUS_CHECK(cudaFreeHost(input));
  CORPUS_CHECK(cudaFreeHost(result));
  CORPUS_CHECK(cudaFree(acc));
  CORPUS_CHECK(cudaFree(x));
  CORPUS_CHECK(cudaStreamDestroy(stream));
  return corpus::Finish();
}
