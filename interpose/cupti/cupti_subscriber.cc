// The CUPTI subscriber (see cupti_subscriber.h). What each callback does:
//
//   driver API, exit   cuMemAlloc*/cuMemHostAlloc/...  -> RecordAlloc
//   driver API, enter  cuMemFree*/cuMemFreeHost        -> Engine::BeginFree,
//              exit                                    -> Engine::EndFree
//   driver API, enter  cuLaunchKernel* / cuGraphLaunch -> Engine::BeforeLaunch
//              exit                                    -> Engine::
//                                                         AfterLaunchDeferred
//                                                         (kernel name from
//                                                         symbolName; no CUDA
//                                                         call in there)
//   driver API, exit   cuGraphLaunch                   -> graph memory nodes'
//                                                         blocks live
//   driver API, exit   cuGraphAddMemAllocNode, cuGraphAddNode(_v2),
//                      cuGraphInstantiate*, cuGraphExecDestroy
//                                                      -> graph memory nodes
//                                                         (graph_memory_shims.h)
//   driver API, exit   cuGetProcAddress(_v2)           -> the program gets our
//                                                         shim (redirect)
//   driver API, enter  cuCtxDestroy, primary ctx reset/release: names the
//                                                         teardown reason
//   resource           context destroy starting        -> final picture, and
//                                                         its blocks dropped
//
// Every callback first checks the thread's intercept depth: non-zero means a
// shim or the tool itself is making this call, and it is counted there.
#include "interpose/cupti/cupti_subscriber.h"

#include <cupti_driver_cbid.h>
#include <cxxabi.h>
#include <dlfcn.h>
#include <link.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

#include "interpose/cupti/cupti_activity.h"
#include "interpose/cupti/kernel_id_cache.h"
#include "interpose/guard_shim_util.h"
#include "interpose/resolve/driver_hooks.h"
#include "interpose/resolve/driver_import_patch.h"
#include "interpose/resolve/driver_table_patch.h"
#include "interpose/shims/graph_memory_shims.h"
#include "lib/core/driver_callback.h"
#include "lib/core/log.h"
#include "lib/core/options.h"
#include "lib/core/tool_time.h"
#include "lib/engine/cupti_plan.h"
#include "lib/launch/launch_args.h"
#include "lib/platform/cupti_loader.h"

namespace gmt {
namespace {

// The callbacks' functionParams, laid out as in CUPTI's generated_cuda_meta.h
// (which cannot be included beside cuda.h's version macros). Only the
// entry points enabled below.
struct cuMemAlloc_v2_params {
  CUdeviceptr* dptr;
  size_t bytesize;
};
struct cuMemAllocPitch_v2_params {
  CUdeviceptr* dptr;
  size_t* pPitch;
  size_t WidthInBytes;
  size_t Height;
  unsigned int ElementSizeBytes;
};
struct cuMemAllocManaged_params {
  CUdeviceptr* dptr;
  size_t bytesize;
  unsigned int flags;
};
struct cuMemAllocAsync_params {
  CUdeviceptr* dptr;
  size_t bytesize;
  CUstream hStream;
};
struct cuMemAllocFromPoolAsync_params {
  CUdeviceptr* dptr;
  size_t bytesize;
  CUmemoryPool pool;
  CUstream hStream;
};
struct cuMemAllocHost_v2_params {
  void** pp;
  size_t bytesize;
};
struct cuMemHostAlloc_params {
  void** pp;
  size_t bytesize;
  unsigned int Flags;
};
struct cuMemFree_v2_params {
  CUdeviceptr dptr;
};
struct cuMemFreeAsync_params {
  CUdeviceptr dptr;
  CUstream hStream;
};
struct cuMemFreeHost_params {
  void* p;
};
struct cuLaunchKernel_params {
  CUfunction f;
  unsigned int gridDimX, gridDimY, gridDimZ;
  unsigned int blockDimX, blockDimY, blockDimZ;
  unsigned int sharedMemBytes;
  CUstream hStream;
  void** kernelParams;
  void** extra;
};
struct cuLaunchKernelEx_params {
  const CUlaunchConfig* config;
  CUfunction f;
  void** kernelParams;
  void** extra;
};
struct cuLaunchCooperativeKernel_params {
  CUfunction f;
  unsigned int gridDimX, gridDimY, gridDimZ;
  unsigned int blockDimX, blockDimY, blockDimZ;
  unsigned int sharedMemBytes;
  CUstream hStream;
  void** kernelParams;
};
struct cuGraphLaunch_params {
  CUgraphExec hGraph;
  CUstream hStream;
};
struct cuGraphAddMemAllocNode_params {
  CUgraphNode* phGraphNode;
  CUgraph hGraph;
  const CUgraphNode* dependencies;
  size_t numDependencies;
  CUDA_MEM_ALLOC_NODE_PARAMS* nodeParams;
};
struct cuGraphAddNode_params {
  CUgraphNode* phGraphNode;
  CUgraph hGraph;
  const CUgraphNode* dependencies;
  size_t numDependencies;
  CUgraphNodeParams* nodeParams;
};
struct cuGraphAddNode_v2_params {
  CUgraphNode* phGraphNode;
  CUgraph hGraph;
  const CUgraphNode* dependencies;
  const CUgraphEdgeData* dependencyData;
  size_t numDependencies;
  CUgraphNodeParams* nodeParams;
};
struct cuGraphInstantiateWithFlags_params {
  CUgraphExec* phGraphExec;
  CUgraph hGraph;
  unsigned long long flags;
};
struct cuGraphInstantiateWithParams_params {
  CUgraphExec* phGraphExec;
  CUgraph hGraph;
  CUDA_GRAPH_INSTANTIATE_PARAMS* instantiateParams;
};
// cuGraphInstantiate (v1) and cuGraphInstantiate_v2: the CUDA 11 form.
struct cuGraphInstantiate_v2_params {
  CUgraphExec* phGraphExec;
  CUgraph hGraph;
  CUgraphNode* phErrorNode;
  char* logBuffer;
  size_t bufferSize;
};
struct cuGraphExecDestroy_params {
  CUgraphExec hGraphExec;
};
struct cuGetProcAddress_params {
  const char* symbol;
  void** pfn;
  int cudaVersion;
  cuuint64_t flags;
};
struct cuGetProcAddress_v2_params {
  const char* symbol;
  void** pfn;
  int cudaVersion;
  cuuint64_t flags;
  CUdriverProcAddressQueryResult* symbolStatus;
};

std::atomic<bool> g_redirect{false};
// Launch callbacks for guard zones (plan.launches); a graph launch callback
// may be enabled for graph memory alone.
std::atomic<bool> g_launches{false};

// The stream the engine keys a call by: CU_STREAM_PER_THREAD for the legacy
// stream of a _ptsz call.
const void* EngineStreamPtr(const void* stream, CUpti_CallbackId cbid) {
  bool per_thread = false;
  switch (cbid) {
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz:
      per_thread = true;
      break;
    default:
      break;
  }
  return reinterpret_cast<const void*>(EngineStream(stream, per_thread));
}

// The teardown a context-destroy resource callback belongs to, named by the
// driver call that caused it (set at its enter callback on this thread).
thread_local const char* t_teardown_reason = nullptr;

template <typename Params>
const Params& ParamsOf(const CUpti_CallbackData& cb) {
  return *static_cast<const Params*>(cb.functionParams);
}

uint64_t Id(const void* p) { return reinterpret_cast<uint64_t>(p); }

// The program's stack at the call. libcuda's and CUPTI's frames sit above
// it inside a callback: the engine is told once to drop them like its own.
StackId CallbackStack(Engine& engine) {
  static const bool hidden = [] {
    if (void* cuda = FindDriverSymbol("cuMemAlloc_v2")) {
      Engine::HideCallbackModule(cuda);
    }
    std::string why;
    if (const CuptiLibrary* cupti = LoadCupti("", &why)) {
      Engine::HideCallbackModule(
          reinterpret_cast<const void*>(cupti->subscribe));
    }
    return true;
  }();
  (void)hidden;
  return engine.CaptureCallStack();
}

CUresult ResultOf(const CUpti_CallbackData& cb) {
  return cb.functionReturnValue != nullptr
             ? *static_cast<const CUresult*>(cb.functionReturnValue)
             : CUDA_ERROR_UNKNOWN;
}

// ---- Allocations ------------------------------------------------------------

void OnAllocExit(Api api, const CUpti_CallbackData& cb, const void* out_ptr,
                 uint64_t bytes, const void* stream) {
  if (ResultOf(cb) != CUDA_SUCCESS || out_ptr == nullptr) return;
  const uint64_t address = *static_cast<const uint64_t*>(out_ptr);
  if (address == 0) return;
  Engine& engine = Engine::Get();
  // Already live at this address: a shim recorded it (count once).
  if (auto live = engine.FindBlock(address);
      live && live->user_address == address) {
    return;
  }
  RecordAlloc(api, address, bytes, Id(stream), CallbackStack(engine));
}

void OnAlloc(CUpti_CallbackId cbid, const CUpti_CallbackData& cb) {
  if (cb.callbackSite != CUPTI_API_EXIT) return;
  switch (cbid) {
    case CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2: {
      const auto& p = ParamsOf<cuMemAlloc_v2_params>(cb);
      return OnAllocExit(Api::kCuMemAlloc, cb, p.dptr, p.bytesize, nullptr);
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocPitch_v2: {
      const auto& p = ParamsOf<cuMemAllocPitch_v2_params>(cb);
      if (p.pPitch == nullptr) return;
      return OnAllocExit(Api::kCuMemAllocPitch, cb, p.dptr,
                         uint64_t{*p.pPitch} * p.Height, nullptr);
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged: {
      const auto& p = ParamsOf<cuMemAllocManaged_params>(cb);
      return OnAllocExit(Api::kCuMemAllocManaged, cb, p.dptr, p.bytesize,
                         nullptr);
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync_ptsz: {
      const auto& p = ParamsOf<cuMemAllocAsync_params>(cb);
      return OnAllocExit(Api::kCuMemAllocAsync, cb, p.dptr, p.bytesize,
                         EngineStreamPtr(p.hStream, cbid));
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync_ptsz: {
      const auto& p = ParamsOf<cuMemAllocFromPoolAsync_params>(cb);
      return OnAllocExit(Api::kCuMemAllocFromPoolAsync, cb, p.dptr, p.bytesize,
                         EngineStreamPtr(p.hStream, cbid));
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocHost_v2: {
      const auto& p = ParamsOf<cuMemAllocHost_v2_params>(cb);
      return OnAllocExit(Api::kCuMemAllocHost, cb, p.pp, p.bytesize, nullptr);
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemHostAlloc: {
      const auto& p = ParamsOf<cuMemHostAlloc_params>(cb);
      return OnAllocExit(Api::kCuMemHostAlloc, cb, p.pp, p.bytesize, nullptr);
    }
    default:
      return;
  }
}

// ---- Frees ------------------------------------------------------------------

// Enter: the block leaves the live set before CUDA frees it (the engine's
// free protocol); the ticket rides to the exit callback in correlationData.
void OnFreeEnter(Api api, const CUpti_CallbackData& cb, uint64_t address,
                 uint64_t stream) {
  if (cb.correlationData == nullptr) return;
  *cb.correlationData = 0;
  if (address == 0) return;
  Engine& engine = Engine::Get();
  // A guarded block freed past the shims: CUDA gets the user pointer, not
  // the raw block, and refuses. Leave the block to the shims' bookkeeping.
  if (auto live = engine.FindBlock(address); live && live->guarded) return;
  auto* ticket = new FreeTicket(
      engine.BeginFree(api, address, CallbackStack(engine), stream));
  *cb.correlationData = reinterpret_cast<uint64_t>(ticket);
}

void OnFreeExit(const CUpti_CallbackData& cb) {
  if (cb.correlationData == nullptr || *cb.correlationData == 0) return;
  auto* ticket = reinterpret_cast<FreeTicket*>(*cb.correlationData);
  *cb.correlationData = 0;
  const CUresult result = ResultOf(cb);
  Engine::Get().EndFree(
      *ticket, result == CUDA_SUCCESS, static_cast<int>(result),
      result == CUDA_SUCCESS ? "CUDA_SUCCESS" : DriverResultName(result));
  delete ticket;
}

void OnFree(CUpti_CallbackId cbid, const CUpti_CallbackData& cb) {
  if (cb.callbackSite == CUPTI_API_EXIT) return OnFreeExit(cb);
  switch (cbid) {
    case CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2:
      return OnFreeEnter(Api::kCuMemFree, cb,
                         ParamsOf<cuMemFree_v2_params>(cb).dptr, 0);
    case CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync_ptsz: {
      const auto& p = ParamsOf<cuMemFreeAsync_params>(cb);
      return OnFreeEnter(Api::kCuMemFreeAsync, cb, p.dptr,
                         Id(EngineStreamPtr(p.hStream, cbid)));
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemFreeHost:
      return OnFreeEnter(Api::kCuMemFreeHost, cb,
                         Id(ParamsOf<cuMemFreeHost_params>(cb).p), 0);
    default:
      return;
  }
}

// ---- Kernel launches --------------------------------------------------------

std::string Demangle(const char* name) {
  if (name == nullptr || name[0] == '\0') return "?";
  int status = 0;
  char* demangled = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  std::string out = status == 0 && demangled != nullptr ? demangled : name;
  std::free(demangled);
  return out;
}

KernelIdCache& CallbackKernels() {
  static auto* const cache = new KernelIdCache();  // leaked: used at exit
  return *cache;
}

uint32_t GraphLaunchId() {
  static const uint32_t id = Engine::Get().InternKernel("cudaGraphLaunch");
  return id;
}

void OnLaunch(CUpti_CallbackId cbid, const CUpti_CallbackData& cb) {
  const void* function = nullptr;  // null for a graph
  const void* stream = nullptr;
  // The launch as made, passed through (the engine copies the argument words
  // it needs before this callback returns).
  LaunchArgs args;
  switch (cbid) {
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz: {
      const auto& p = ParamsOf<cuLaunchKernel_params>(cb);
      function = p.f;
      stream = p.hStream;
      args.dims = {{p.gridDimX, p.gridDimY, p.gridDimZ},
                   {p.blockDimX, p.blockDimY, p.blockDimZ},
                   p.sharedMemBytes};
      args.params = p.kernelParams;
      args.extra = p.extra;
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz: {
      const auto& p = ParamsOf<cuLaunchKernelEx_params>(cb);
      function = p.f;
      stream = p.config != nullptr ? p.config->hStream : nullptr;
      if (p.config != nullptr) {
        args.dims = {
            {p.config->gridDimX, p.config->gridDimY, p.config->gridDimZ},
            {p.config->blockDimX, p.config->blockDimY, p.config->blockDimZ},
            p.config->sharedMemBytes};
      }
      args.params = p.kernelParams;
      args.extra = p.extra;
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz: {
      const auto& p = ParamsOf<cuLaunchCooperativeKernel_params>(cb);
      function = p.f;
      stream = p.hStream;
      args.dims = {{p.gridDimX, p.gridDimY, p.gridDimZ},
                   {p.blockDimX, p.blockDimY, p.blockDimZ},
                   p.sharedMemBytes};
      args.params = p.kernelParams;
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz:
      stream = ParamsOf<cuGraphLaunch_params>(cb).hStream;
      break;
    default:
      return;
  }
  Engine& engine = Engine::Get();
  const uint64_t context = Id(cb.context);
  const uint64_t engine_stream = Id(EngineStreamPtr(stream, cbid));
  const bool launches = g_launches.load(std::memory_order_relaxed);
  if (cb.callbackSite == CUPTI_API_ENTER) {
    // Before the kernel is enqueued: canaries and the previous kernel's owed
    // check go in ahead of it.
    if (launches) engine.BeforeLaunch(context, engine_stream);
    return;
  }
  if (ResultOf(cb) != CUDA_SUCCESS) return;
  if (function == nullptr) {
    // A graph's memory nodes come to life at its launch.
    NoteGraphLaunched(ParamsOf<cuGraphLaunch_params>(cb).hGraph, context,
                      engine_stream,
                      [&engine] { return CallbackStack(engine); });
  }
  if (!launches) return;
  const char* symbol = cb.symbolName;
  const uint32_t kernel = function == nullptr
                              ? GraphLaunchId()
                              : CallbackKernels().Get(function, [symbol] {
                                  return Demangle(symbol);
                                });
  // The driver's launch call is still in progress here; the check
  // of what this kernel did is owed, not made (Engine::AfterLaunchDeferred).
  // Its argument words are copied now, while the program's arguments exist;
  // at a kernel's first launch that asks the driver for its parameter layout
  // (cuFuncGetParamInfo, a query of the module's metadata: no GPU work, no
  // wait, and CUPTI lets a callback make driver calls).
  args.kind = KernelHandleKind::kDriver;
  args.function = function;
  engine.AfterLaunchDeferred(context, engine_stream, kernel,
                             function != nullptr ? &args : nullptr);
}

// ---- Graph memory nodes ------------------------------------

void OnGraph(CUpti_CallbackId cbid, const CUpti_CallbackData& cb) {
  if (cb.callbackSite != CUPTI_API_EXIT || ResultOf(cb) != CUDA_SUCCESS) {
    return;
  }
  Engine& engine = Engine::Get();
  switch (cbid) {
    case CUPTI_DRIVER_TRACE_CBID_cuGraphAddMemAllocNode: {
      const auto& p = ParamsOf<cuGraphAddMemAllocNode_params>(cb);
      if (p.nodeParams != nullptr) {
        NoteGraphAllocNode(*p.nodeParams, CallbackStack(engine));
      }
      return;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuGraphAddNode: {
      const auto& p = ParamsOf<cuGraphAddNode_params>(cb);
      if (p.nodeParams != nullptr &&
          p.nodeParams->type == CU_GRAPH_NODE_TYPE_MEM_ALLOC) {
        NoteGraphNode(p.nodeParams, CallbackStack(engine));
      }
      return;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuGraphAddNode_v2: {
      const auto& p = ParamsOf<cuGraphAddNode_v2_params>(cb);
      if (p.nodeParams != nullptr &&
          p.nodeParams->type == CU_GRAPH_NODE_TYPE_MEM_ALLOC) {
        NoteGraphNode(p.nodeParams, CallbackStack(engine));
      }
      return;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithFlags: {
      const auto& p = ParamsOf<cuGraphInstantiateWithFlags_params>(cb);
      if (p.phGraphExec != nullptr) {
        NoteGraphInstantiated(*p.phGraphExec, p.hGraph, p.flags);
      }
      return;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithParams:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithParams_ptsz: {
      const auto& p = ParamsOf<cuGraphInstantiateWithParams_params>(cb);
      if (p.phGraphExec != nullptr) {
        NoteGraphInstantiated(
            *p.phGraphExec, p.hGraph,
            p.instantiateParams != nullptr ? p.instantiateParams->flags : 0);
      }
      return;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiate:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiate_v2: {
      const auto& p = ParamsOf<cuGraphInstantiate_v2_params>(cb);
      if (p.phGraphExec != nullptr) {
        NoteGraphInstantiated(*p.phGraphExec, p.hGraph, 0);
      }
      return;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuGraphExecDestroy:
      engine.OnGraphExecDestroyed(
          Id(ParamsOf<cuGraphExecDestroy_params>(cb).hGraphExec));
      return;
    default:
      return;
  }
}

// ---- cuGetProcAddress: hand the program our shims
// ----------------------------

void Redirect(const char* symbol, int cuda_version, uint64_t flags,
              void** pfn) {
  if (pfn == nullptr || *pfn == nullptr || IsDriverShim(*pfn)) return;
  const DriverHook* hook = HookForProcAddress(symbol, cuda_version, flags);
  if (hook == nullptr) return;
  hook->store_real(*pfn);
  *pfn = hook->shim;
}

void OnProcAddress(CUpti_CallbackId cbid, const CUpti_CallbackData& cb) {
  if (cb.callbackSite != CUPTI_API_EXIT || ResultOf(cb) != CUDA_SUCCESS ||
      !g_redirect.load(std::memory_order_relaxed)) {
    return;
  }
  // functionParams is const, but pfn points at the caller's own variable,
  // which the driver has just filled: replacing what it holds is exactly
  // what the cuGetProcAddress shim does under LD_PRELOAD.
  if (cbid == CUPTI_DRIVER_TRACE_CBID_cuGetProcAddress_v2) {
    const auto& p = ParamsOf<cuGetProcAddress_v2_params>(cb);
    if (p.symbolStatus != nullptr &&
        *p.symbolStatus != CU_GET_PROC_ADDRESS_SUCCESS) {
      return;
    }
    Redirect(p.symbol, p.cudaVersion, p.flags, p.pfn);
  } else {
    const auto& p = ParamsOf<cuGetProcAddress_params>(cb);
    Redirect(p.symbol, p.cudaVersion, p.flags, p.pfn);
  }
}

// ---- Contexts ---------------------------------------------------------------

void OnTeardownCall(CUpti_CallbackId cbid, const CUpti_CallbackData& cb) {
  if (cb.callbackSite == CUPTI_API_EXIT) {
    t_teardown_reason = nullptr;
    return;
  }
  switch (cbid) {
    case CUPTI_DRIVER_TRACE_CBID_cuCtxDestroy_v2:
      t_teardown_reason = "cuCtxDestroy";
      return;
    case CUPTI_DRIVER_TRACE_CBID_cuDevicePrimaryCtxReset:
    case CUPTI_DRIVER_TRACE_CBID_cuDevicePrimaryCtxReset_v2:
      t_teardown_reason = "cuDevicePrimaryCtxReset";
      return;
    default:
      t_teardown_reason = "cuDevicePrimaryCtxRelease";
      return;
  }
}

int DeviceOfContext(CUcontext ctx) {
  static RealSlot<PFN_cuCtxGetDevice_v13000> get_device_v2("cuCtxGetDevice_v2",
                                                           true);
  if (auto get = get_device_v2.Get()) {
    CUdevice device = 0;
    if (get(&device, ctx) == CUDA_SUCCESS) return static_cast<int>(device);
  }
  return kHostDevice;
}

void OnResource(CUpti_CallbackId cbid, const CUpti_ResourceData& data) {
  if (cbid == CUPTI_CBID_RESOURCE_CONTEXT_CREATED) {
    // A runtime that filled its driver table after cuInit has done so by its
    // first context: reach those pointers too (driver_table_patch.h).
    static std::atomic<bool> patched{false};
    if (g_redirect.load(std::memory_order_relaxed) && !patched.exchange(true)) {
      const int tables = PatchDriverTables();
      const int imports = PatchDriverImports();
      LogNote(1,
              "CUPTI: %d driver entry point(s) and %d import slot(s) "
              "redirected at the first context",
              tables, imports);
    }
    return;
  }
  if (cbid != CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING ||
      data.context == nullptr) {
    return;
  }
  Engine& engine = Engine::Get();
  const uint64_t context = Id(data.context);
  const int device = DeviceOfContext(data.context);
  // The driver still answers here: the zones' final picture, then the
  // blocks the context takes with it leave the live set.
  engine.BeforeContextTeardown(device, context);
  engine.OnContextTeardown(
      device, context,
      t_teardown_reason != nullptr ? t_teardown_reason : "context destroy");
}

// ---- Dispatch ---------------------------------------------------------------

enum class Family : uint8_t {
  kNone,
  kAlloc,
  kFree,
  kLaunch,
  kGraphLaunch,  // launches, and graph memory
  kGraph,        // graph memory nodes: creation, instantiation, destruction
  kProc,
  kTeardown,
  kPoolImport  // a pool imported from another process (memory records stop)
};

Family FamilyOf(CUpti_CallbackId cbid) {
  switch (cbid) {
    case CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocPitch_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged:
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocHost_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemHostAlloc:
      return Family::kAlloc;
    case CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuMemFreeHost:
      return Family::kFree;
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz:
      return Family::kLaunch;
    case CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz:
      return Family::kGraphLaunch;
    case CUPTI_DRIVER_TRACE_CBID_cuGraphAddMemAllocNode:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphAddNode:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphAddNode_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiate:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiate_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithFlags:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithParams:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithParams_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphExecDestroy:
      return Family::kGraph;
    case CUPTI_DRIVER_TRACE_CBID_cuGetProcAddress:
    case CUPTI_DRIVER_TRACE_CBID_cuGetProcAddress_v2:
      return Family::kProc;
    case CUPTI_DRIVER_TRACE_CBID_cuCtxDestroy_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuDevicePrimaryCtxReset:
    case CUPTI_DRIVER_TRACE_CBID_cuDevicePrimaryCtxReset_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuDevicePrimaryCtxRelease:
    case CUPTI_DRIVER_TRACE_CBID_cuDevicePrimaryCtxRelease_v2:
      return Family::kTeardown;
    case CUPTI_DRIVER_TRACE_CBID_cuMemPoolImportFromShareableHandle:
      return Family::kPoolImport;
    default:
      return Family::kNone;
  }
}

// Enables `family`'s callback ids; returns how many CUPTI refused.
int EnableFamily(const CuptiLibrary& cupti, CUpti_SubscriberHandle subscriber,
                 Family family) {
  int refused = 0;
  // The driver API ids are dense and few hundred: ask FamilyOf for each.
  for (int id = 1; id < CUPTI_DRIVER_TRACE_CBID_SIZE; ++id) {
    if (FamilyOf(static_cast<CUpti_CallbackId>(id)) != family) continue;
    if (cupti.enable_callback(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API,
                              static_cast<CUpti_CallbackId>(id)) !=
        CUPTI_SUCCESS) {
      ++refused;
    }
  }
  return refused;
}

std::mutex g_start_mu;
bool g_subscribed = false;  // guarded by g_start_mu
bool g_decided = false;     // guarded by g_start_mu
bool g_attempted = false;   // guarded by g_start_mu

}  // namespace

namespace {

// Where this library and libcuda stand in the link map (dl_iterate_phdr walks
// it in load order).
struct LoadOrder {
  uintptr_t self = 0;  // an address inside this library
  int index = 0;
  int self_index = -1;
  int cuda_index = -1;
};

int NoteLoadOrder(dl_phdr_info* info, size_t, void* data) {
  auto* order = static_cast<LoadOrder*>(data);
  const int i = order->index++;
  const char* name = info->dlpi_name != nullptr ? info->dlpi_name : "";
  const char* base = std::strrchr(name, '/');
  base = base != nullptr ? base + 1 : name;
  if (order->cuda_index < 0 && std::strncmp(base, "libcuda.so", 10) == 0) {
    order->cuda_index = i;
  }
  for (int h = 0; h < info->dlpi_phnum; ++h) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[h];
    if (ph.p_type != PT_LOAD) continue;
    const uintptr_t begin = info->dlpi_addr + ph.p_vaddr;
    if (order->self >= begin && order->self < begin + ph.p_memsz) {
      order->self_index = i;
    }
  }
  return 0;
}

}  // namespace

bool ShimsInterposed() {
  // The shims see the program's calls when this library was loaded before
  // libcuda (preloaded, or linked into the program). Loaded by libcuda
  // through CUDA_INJECTION64_PATH it comes after it. (A lookup of
  // cuMemAlloc_v2 in the global scope cannot tell: a static runtime opens
  // libcuda RTLD_LOCAL, so the global scope finds this library's export
  // even when nothing is interposed — seen on the H200.)
  LoadOrder order;
  order.self = reinterpret_cast<uintptr_t>(&Shim_cuMemAlloc_v2);
  dl_iterate_phdr(&NoteLoadOrder, &order);
  if (order.self_index < 0) return false;
  return order.cuda_index < 0 || order.self_index < order.cuda_index;
}

void CUPTIAPI CuptiCallback(void* /*userdata*/, CUpti_CallbackDomain domain,
                            CUpti_CallbackId cbid, const void* data) {
  if (t_intercept_depth != 0 || data == nullptr) return;
  // A fork()ed child records nothing (Engine::tracking).
  if (Engine* engine = Engine::IfCreated(); engine && engine->forked_child()) {
    return;
  }
  // From here on the tool's own CUDA calls (context, names, guard kernels)
  // fire callbacks at depth 1 and are ignored.
  InterceptScope scope;
  // The program's driver call is in progress: the engine neither flushes
  // CUPTI nor waits for the GPU from here (lib/core/driver_callback.h).
  DriverCallbackScope in_callback;
  if (!scope.Recording()) return;
  if (domain == CUPTI_CB_DOMAIN_RESOURCE) {
    return OnResource(cbid, *static_cast<const CUpti_ResourceData*>(data));
  }
  if (domain != CUPTI_CB_DOMAIN_DRIVER_API) return;
  const auto& cb = *static_cast<const CUpti_CallbackData*>(data);
  switch (FamilyOf(cbid)) {
    case Family::kAlloc:
      return OnAlloc(cbid, cb);
    case Family::kFree:
      return OnFree(cbid, cb);
    case Family::kLaunch:
    case Family::kGraphLaunch:
      return OnLaunch(cbid, cb);
    case Family::kGraph:
      return OnGraph(cbid, cb);
    case Family::kProc:
      return OnProcAddress(cbid, cb);
    case Family::kTeardown:
      return OnTeardownCall(cbid, cb);
    case Family::kPoolImport:
      // Before the driver imports: no record may concern the imported pool.
      if (cb.callbackSite == CUPTI_API_ENTER) {
        Engine::Get().BeforeMemPoolImport();
      }
      return;
    case Family::kNone:
      return;
  }
}

void StartCupti(bool injected) {
  std::lock_guard<std::mutex> lock(g_start_mu);
  if (g_subscribed || (g_decided && !injected)) return;
  g_decided = true;
  ScopedToolTime timed(ToolPhase::kCupti);
  const Options& options = GlobalOptions();
  const bool interposed = ShimsInterposed();
  const CuptiPlan plan = PlanCuptiForProcess(options, injected, interposed);
  if (!plan.subscribe) {
    LogNote(plan.blind ? 0 : 1, "CUPTI: not subscribing: %s%s", plan.reason,
            plan.blind ? "; nothing is traced without LD_PRELOAD: run with "
                         "LD_PRELOAD=libgpumemtrace.so (or gpumemtrace run)"
                       : "");
    return;
  }
  // One attempt per process: a CUPTI that is missing or taken stays so, and
  // its note is said once.
  if (g_attempted) return;
  g_attempted = true;
  std::string why;
  const CuptiLibrary* cupti = LoadCupti(options.cupti_library, &why);
  if (cupti == nullptr) {
    // Without the shims and without CUPTI the tool sees nothing: say so
    // plainly. Beside the shims it is a detail.
    LogNote(interposed ? 1 : 0, "CUPTI could not be loaded (%s); %s",
            why.c_str(),
            interposed ? "carrying on with interposition only"
                       : "nothing is traced without LD_PRELOAD: run with "
                         "LD_PRELOAD=libgpumemtrace.so (or gpumemtrace run)");
    return;
  }
  CUpti_SubscriberHandle subscriber = nullptr;
  CUptiResult result = CUPTI_SUCCESS;
  char holder[CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN + 1] = "";
  if (cupti->subscribe_v2 != nullptr) {
    CUpti_SubscriberParams params{};
    params.structSize = CUpti_SubscriberParams_STRUCT_SIZE;
    params.subscriberName = "gpumemtrace";
    params.oldSubscriberName = holder;
    params.oldSubscriberSize = sizeof(holder) - 1;
    result = cupti->subscribe_v2(&subscriber, &CuptiCallback, nullptr, &params);
  } else {
    result = cupti->subscribe(&subscriber, &CuptiCallback, nullptr);
  }
  if (result != CUPTI_SUCCESS) {
    LogNote(0, "CUPTI is taken (%s%s%s); carrying on with interposition only%s",
            cupti->ResultName(result).c_str(), holder[0] != '\0' ? " by " : "",
            holder, interposed ? "" : ": without LD_PRELOAD nothing is traced");
    return;
  }
  g_subscribed = true;
  g_redirect.store(plan.redirect, std::memory_order_relaxed);
  int refused = 0;
  if (plan.memory) {
    refused += EnableFamily(*cupti, subscriber, Family::kAlloc);
    refused += EnableFamily(*cupti, subscriber, Family::kFree);
  }
  g_launches.store(plan.launches, std::memory_order_relaxed);
  if (plan.launches) {
    refused += EnableFamily(*cupti, subscriber, Family::kLaunch);
  }
  if (plan.launches || (plan.memory && plan.graphs)) {
    refused += EnableFamily(*cupti, subscriber, Family::kGraphLaunch);
  }
  if (plan.memory && plan.graphs) {
    refused += EnableFamily(*cupti, subscriber, Family::kGraph);
  }
  if (plan.redirect) refused += EnableFamily(*cupti, subscriber, Family::kProc);
  if (plan.contexts) {
    refused += EnableFamily(*cupti, subscriber, Family::kTeardown);
    if (cupti->enable_callback(1, subscriber, CUPTI_CB_DOMAIN_RESOURCE,
                               CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING) !=
        CUPTI_SUCCESS) {
      ++refused;
    }
  }
  if (plan.redirect &&
      cupti->enable_callback(1, subscriber, CUPTI_CB_DOMAIN_RESOURCE,
                             CUPTI_CBID_RESOURCE_CONTEXT_CREATED) !=
          CUPTI_SUCCESS) {
    ++refused;
  }
  // Memory records, cross-checked with the hooks.
  bool activity = false;
  if (plan.activity) {
    std::string activity_why;
    activity = StartMemoryActivity(*cupti, &activity_why);
    if (activity) {
      // A program calling libcuda directly imports pools unseen by the
      // shims: its call stops the records here.
      refused += EnableFamily(*cupti, subscriber, Family::kPoolImport);
    }
    if (!activity) {
      LogNote(1, "CUPTI memory activity not collected: %s",
              activity_why.c_str());
    } else {
      // The records' last word at exit, while CUPTI still answers (its own
      // exit handlers were registered before this one, so run after it). The
      // engine's exit hook does the same when some allocation registered it;
      // a program whose every allocation only CUPTI saw needs this one.
      std::atexit([] {
        if (Engine* engine = Engine::IfCreated()) {
          engine->MarkExiting();
          engine->ReconcileActivity(/*flush=*/true);
        }
      });
    }
  }
  LogNote(1,
          "CUPTI subscribed (%s, %s): memory %d, launches %d, graphs %d, "
          "activity %d, redirect %d, contexts %d; %d callback(s) refused",
          cupti->path.c_str(), plan.reason, plan.memory, plan.launches,
          plan.graphs, activity, plan.redirect, plan.contexts, refused);
}

}  // namespace gmt
