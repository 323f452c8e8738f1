// Graph memory nodes on the test double: memory a CUDA graph
// allocates when it is launched.
//
//   gmt_graph_program runtime   the runtime API (links the fake libcudart)
//   gmt_graph_program driver    the same through the driver API (links the
//                               fake libcuda only: under CUDA_INJECTION64_PATH
//                               alone the tool sees it through CUPTI)
//   gmt_graph_program hidden    CUPTI activity records (driver API): an
//                               allocation no hook sees, freed; another never
//                               freed; a free of an address nobody allocated
//
// runtime / driver, in order (stream s created first):
//   A. GraphLeakNode: a graph with one 4096-byte alloc node and no free node,
//      instantiated, launched, never freed: a leak of 4096 bytes, api
//      "graph-mem-node", allocated in GraphLeakNode
//   B. CapturedPair: cudaMallocAsync(8192) + cudaFreeAsync captured on s,
//      the graph launched twice: no leak, no error
//   C. FreedAfterLaunch: a 2048-byte alloc node, launched, then cudaFree;
//      launched again, then cudaFreeAsync: no invalid or double free
//   D. PlainAsync: cudaMallocAsync(1000) + cudaFreeAsync outside graphs:
//      counted once
//   E. AutoFree: a 512-byte alloc node instantiated with
//      cudaGraphInstantiateFlagAutoFreeOnLaunch, launched twice (the second
//      launch frees the first's block), then cudaFree: no leak, no error
//   F. CapturedNoFree: cudaMallocAsync(256) captured on s with no free in the
//      graph; launched, then cudaFreeAsync; launched again, cudaFreeAsync
//      again: no double free (the address was freed once before, by the
//      first launch's cudaFreeAsync: without graph tracking that second free
//      looked like a double free)
// Totals: 10 allocations, 9 frees, 1 leak (A), 0 errors.
//
// hidden (driver API, stream 0):
//   H1. HiddenFreed: 4096 bytes from fake_cuda_hidden_alloc_async (no hook,
//       no API callback: only CUPTI's memory records), then cuMemFreeAsync:
//       no error, counted once
//   H2. HiddenLeak: 2048 bytes the same way, never freed: a leak ("cupti-
//       activity")
//   H3. BogusFree: cuMemFreeAsync of an address nothing allocated: still an
//       invalid-free
#include <dlfcn.h>

#include <cstring>

#include "tests/interpose/programs/program_util.h"

namespace {

// ---- Runtime
// -------------------------------------------------------------------

NOINLINE void* RtGraphLeakNode(cudaStream_t s) {
  cudaGraph_t g = nullptr;
  Rt("cudaGraphCreate", cudaGraphCreate(&g, 0));
  cudaMemAllocNodeParams p{};
  p.poolProps.allocType = cudaMemAllocationTypePinned;
  p.poolProps.location.type = cudaMemLocationTypeDevice;
  p.poolProps.location.id = 0;
  p.bytesize = 4096;
  cudaGraphNode_t node = nullptr;
  Rt("cudaGraphAddMemAllocNode(4096)",
     cudaGraphAddMemAllocNode(&node, g, nullptr, 0, &p));
  cudaGraphExec_t exec = nullptr;
  Rt("cudaGraphInstantiate", cudaGraphInstantiate(&exec, g, 0));
  Rt("cudaGraphLaunch", cudaGraphLaunch(exec, s));
  Rt("cudaStreamSynchronize", cudaStreamSynchronize(s));
  Rt("cudaGraphExecDestroy", cudaGraphExecDestroy(exec));
  Rt("cudaGraphDestroy", cudaGraphDestroy(g));
  AfterCall();
  return p.dptr;
}

NOINLINE void RtCapturedPair(cudaStream_t s) {
  Rt("cudaStreamBeginCapture",
     cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  void* q = nullptr;
  Rt("captured cudaMallocAsync(8192)", cudaMallocAsync(&q, 8192, s));
  Rt("captured cudaFreeAsync", cudaFreeAsync(q, s));
  cudaGraph_t g = nullptr;
  Rt("cudaStreamEndCapture", cudaStreamEndCapture(s, &g));
  cudaGraphExec_t exec = nullptr;
  Rt("cudaGraphInstantiateWithFlags",
     cudaGraphInstantiateWithFlags(&exec, g, 0));
  Rt("cudaGraphLaunch", cudaGraphLaunch(exec, s));
  Rt("cudaGraphLaunch again", cudaGraphLaunch(exec, s));
  Rt("cudaStreamSynchronize", cudaStreamSynchronize(s));
  Rt("cudaGraphExecDestroy", cudaGraphExecDestroy(exec));
  Rt("cudaGraphDestroy", cudaGraphDestroy(g));
  AfterCall();
}

cudaGraphExec_t RtOneAllocGraph(size_t bytes, unsigned long long flags,
                                void** dptr) {
  cudaGraph_t g = nullptr;
  Rt("cudaGraphCreate", cudaGraphCreate(&g, 0));
  cudaMemAllocNodeParams p{};
  p.poolProps.allocType = cudaMemAllocationTypePinned;
  p.poolProps.location.type = cudaMemLocationTypeDevice;
  p.poolProps.location.id = 0;
  p.bytesize = bytes;
  cudaGraphNode_t node = nullptr;
  Rt("cudaGraphAddMemAllocNode",
     cudaGraphAddMemAllocNode(&node, g, nullptr, 0, &p));
  cudaGraphExec_t exec = nullptr;
  Rt("cudaGraphInstantiate", cudaGraphInstantiate(&exec, g, flags));
  *dptr = p.dptr;
  return exec;
}

NOINLINE void RtFreedAfterLaunch(cudaStream_t s) {
  void* p = nullptr;
  cudaGraphExec_t exec = RtOneAllocGraph(2048, 0, &p);
  Rt("cudaGraphLaunch", cudaGraphLaunch(exec, s));
  Rt("cudaStreamSynchronize", cudaStreamSynchronize(s));
  Rt("cudaFree(graph memory)", cudaFree(p));
  Rt("cudaGraphLaunch again", cudaGraphLaunch(exec, s));
  Rt("cudaFreeAsync(graph memory)", cudaFreeAsync(p, s));
  Rt("cudaStreamSynchronize", cudaStreamSynchronize(s));
  Rt("cudaGraphExecDestroy", cudaGraphExecDestroy(exec));
  AfterCall();
}

NOINLINE void RtPlainAsync(cudaStream_t s) {
  void* r = nullptr;
  Rt("cudaMallocAsync(1000)", cudaMallocAsync(&r, 1000, s));
  Rt("cudaFreeAsync", cudaFreeAsync(r, s));
  AfterCall();
}

NOINLINE void RtAutoFree(cudaStream_t s) {
  void* p = nullptr;
  cudaGraphExec_t exec =
      RtOneAllocGraph(512, cudaGraphInstantiateFlagAutoFreeOnLaunch, &p);
  Rt("cudaGraphLaunch", cudaGraphLaunch(exec, s));
  Rt("cudaGraphLaunch (auto free)", cudaGraphLaunch(exec, s));
  Rt("cudaStreamSynchronize", cudaStreamSynchronize(s));
  Rt("cudaFree(graph memory)", cudaFree(p));
  Rt("cudaGraphExecDestroy", cudaGraphExecDestroy(exec));
  AfterCall();
}

NOINLINE void RtCapturedNoFree(cudaStream_t s) {
  Rt("cudaStreamBeginCapture",
     cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  void* q = nullptr;
  Rt("captured cudaMallocAsync(256)", cudaMallocAsync(&q, 256, s));
  cudaGraph_t g = nullptr;
  Rt("cudaStreamEndCapture", cudaStreamEndCapture(s, &g));
  cudaGraphExec_t exec = nullptr;
  Rt("cudaGraphInstantiate", cudaGraphInstantiate(&exec, g, 0));
  for (int i = 0; i < 2; ++i) {
    Rt("cudaGraphLaunch", cudaGraphLaunch(exec, s));
    Rt("cudaStreamSynchronize", cudaStreamSynchronize(s));
    Rt("cudaFreeAsync(captured memory)", cudaFreeAsync(q, s));
  }
  Rt("cudaStreamSynchronize", cudaStreamSynchronize(s));
  Rt("cudaGraphExecDestroy", cudaGraphExecDestroy(exec));
  Rt("cudaGraphDestroy", cudaGraphDestroy(g));
  AfterCall();
}

int Runtime() {
  if (Rt("cudaSetDevice", cudaSetDevice(0)) != cudaSuccess) return 1;
  cudaStream_t s = nullptr;
  Rt("cudaStreamCreate", cudaStreamCreate(&s));
  RtGraphLeakNode(s);
  RtCapturedPair(s);
  RtFreedAfterLaunch(s);
  RtPlainAsync(s);
  RtAutoFree(s);
  RtCapturedNoFree(s);
  Rt("cudaDeviceSynchronize", cudaDeviceSynchronize());
  return 0;
}

// ---- Driver
// --------------------------------------------------------------------

CUDA_MEM_ALLOC_NODE_PARAMS AllocParams(size_t bytes) {
  CUDA_MEM_ALLOC_NODE_PARAMS p{};
  p.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  p.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  p.poolProps.location.id = 0;
  p.bytesize = bytes;
  return p;
}

NOINLINE CUdeviceptr CuGraphLeakNode(CUstream s) {
  CUgraph g = nullptr;
  Cu("cuGraphCreate", cuGraphCreate(&g, 0));
  CUDA_MEM_ALLOC_NODE_PARAMS p = AllocParams(4096);
  CUgraphNode node = nullptr;
  Cu("cuGraphAddMemAllocNode(4096)",
     cuGraphAddMemAllocNode(&node, g, nullptr, 0, &p));
  CUgraphExec exec = nullptr;
  Cu("cuGraphInstantiate", cuGraphInstantiate(&exec, g, 0));
  Cu("cuGraphLaunch", cuGraphLaunch(exec, s));
  Cu("cuStreamSynchronize", cuStreamSynchronize(s));
  Cu("cuGraphExecDestroy", cuGraphExecDestroy(exec));
  Cu("cuGraphDestroy", cuGraphDestroy(g));
  AfterCall();
  return p.dptr;
}

NOINLINE void CuCapturedPair(CUstream s) {
  Cu("cuStreamBeginCapture",
     cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  CUdeviceptr q = 0;
  Cu("captured cuMemAllocAsync(8192)", cuMemAllocAsync(&q, 8192, s));
  Cu("captured cuMemFreeAsync", cuMemFreeAsync(q, s));
  CUgraph g = nullptr;
  Cu("cuStreamEndCapture", cuStreamEndCapture(s, &g));
  CUgraphExec exec = nullptr;
  Cu("cuGraphInstantiateWithFlags", cuGraphInstantiateWithFlags(&exec, g, 0));
  Cu("cuGraphLaunch", cuGraphLaunch(exec, s));
  Cu("cuGraphLaunch again", cuGraphLaunch(exec, s));
  Cu("cuStreamSynchronize", cuStreamSynchronize(s));
  Cu("cuGraphExecDestroy", cuGraphExecDestroy(exec));
  Cu("cuGraphDestroy", cuGraphDestroy(g));
  AfterCall();
}

CUgraphExec CuOneAllocGraph(size_t bytes, unsigned long long flags,
                            CUdeviceptr* dptr) {
  CUgraph g = nullptr;
  Cu("cuGraphCreate", cuGraphCreate(&g, 0));
  // Through the generic entry point (cuGraphAddNode), as newer code does.
  CUgraphNodeParams params{};
  params.type = CU_GRAPH_NODE_TYPE_MEM_ALLOC;
  params.alloc.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  params.alloc.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  params.alloc.poolProps.location.id = 0;
  params.alloc.bytesize = bytes;
  CUgraphNode node = nullptr;
  Cu("cuGraphAddNode(mem alloc)",
     cuGraphAddNode(&node, g, nullptr, nullptr, 0, &params));
  CUgraphExec exec = nullptr;
  Cu("cuGraphInstantiate", cuGraphInstantiate(&exec, g, flags));
  *dptr = params.alloc.dptr;
  return exec;
}

NOINLINE void CuFreedAfterLaunch(CUstream s) {
  CUdeviceptr p = 0;
  CUgraphExec exec = CuOneAllocGraph(2048, 0, &p);
  Cu("cuGraphLaunch", cuGraphLaunch(exec, s));
  Cu("cuStreamSynchronize", cuStreamSynchronize(s));
  Cu("cuMemFree(graph memory)", cuMemFree(p));
  Cu("cuGraphLaunch again", cuGraphLaunch(exec, s));
  Cu("cuMemFreeAsync(graph memory)", cuMemFreeAsync(p, s));
  Cu("cuStreamSynchronize", cuStreamSynchronize(s));
  Cu("cuGraphExecDestroy", cuGraphExecDestroy(exec));
  AfterCall();
}

NOINLINE void CuPlainAsync(CUstream s) {
  CUdeviceptr r = 0;
  Cu("cuMemAllocAsync(1000)", cuMemAllocAsync(&r, 1000, s));
  Cu("cuMemFreeAsync", cuMemFreeAsync(r, s));
  AfterCall();
}

NOINLINE void CuAutoFree(CUstream s) {
  CUdeviceptr p = 0;
  CUgraphExec exec =
      CuOneAllocGraph(512, CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH, &p);
  Cu("cuGraphLaunch", cuGraphLaunch(exec, s));
  Cu("cuGraphLaunch (auto free)", cuGraphLaunch(exec, s));
  Cu("cuStreamSynchronize", cuStreamSynchronize(s));
  Cu("cuMemFree(graph memory)", cuMemFree(p));
  Cu("cuGraphExecDestroy", cuGraphExecDestroy(exec));
  AfterCall();
}

NOINLINE void CuCapturedNoFree(CUstream s) {
  Cu("cuStreamBeginCapture",
     cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  CUdeviceptr q = 0;
  Cu("captured cuMemAllocAsync(256)", cuMemAllocAsync(&q, 256, s));
  CUgraph g = nullptr;
  Cu("cuStreamEndCapture", cuStreamEndCapture(s, &g));
  CUgraphExec exec = nullptr;
  Cu("cuGraphInstantiate", cuGraphInstantiate(&exec, g, 0));
  for (int i = 0; i < 2; ++i) {
    Cu("cuGraphLaunch", cuGraphLaunch(exec, s));
    Cu("cuStreamSynchronize", cuStreamSynchronize(s));
    Cu("cuMemFreeAsync(captured memory)", cuMemFreeAsync(q, s));
  }
  Cu("cuStreamSynchronize", cuStreamSynchronize(s));
  Cu("cuGraphExecDestroy", cuGraphExecDestroy(exec));
  Cu("cuGraphDestroy", cuGraphDestroy(g));
  AfterCall();
}

int Driver() {
  if (!DriverSetup(0)) return 1;
  CUstream s = nullptr;
  Cu("cuStreamCreate", cuStreamCreate(&s, CU_STREAM_DEFAULT));
  CuGraphLeakNode(s);
  CuCapturedPair(s);
  CuFreedAfterLaunch(s);
  CuPlainAsync(s);
  CuAutoFree(s);
  CuCapturedNoFree(s);
  Cu("cuCtxSynchronize", cuCtxSynchronize());
  return 0;
}

// ---- CUPTI activity records
// ----------------------------------------------------

using HiddenAlloc = CUresult (*)(CUdeviceptr*, size_t);

HiddenAlloc Hidden() {
  return reinterpret_cast<HiddenAlloc>(
      dlsym(dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD),
            "fake_cuda_hidden_alloc_async"));
}

NOINLINE void HiddenFreed(HiddenAlloc hidden) {
  CUdeviceptr p = 0;
  Cu("hidden alloc(4096)", hidden(&p, 4096));
  Cu("cuMemFreeAsync(hidden)", cuMemFreeAsync(p, nullptr));
  AfterCall();
}

NOINLINE void HiddenLeak(HiddenAlloc hidden) {
  CUdeviceptr p = 0;
  Cu("hidden alloc(2048)", hidden(&p, 2048));
  AfterCall();
}

NOINLINE void BogusFree() {
  static unsigned char not_cuda[512] __attribute__((aligned(256)));
  Cu("cuMemFreeAsync(bogus)",
     cuMemFreeAsync(reinterpret_cast<CUdeviceptr>(not_cuda + 256), nullptr));
  AfterCall();
}

int HiddenMode() {
  if (!DriverSetup(0)) return 1;
  HiddenAlloc hidden = Hidden();
  if (hidden == nullptr) return 1;
  HiddenFreed(hidden);
  HiddenLeak(hidden);
  BogusFree();
  Cu("cuCtxSynchronize", cuCtxSynchronize());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "runtime";
  if (std::strcmp(mode, "runtime") == 0) return Runtime();
  if (std::strcmp(mode, "driver") == 0) return Driver();
  if (std::strcmp(mode, "hidden") == 0) return HiddenMode();
  return 2;
}
