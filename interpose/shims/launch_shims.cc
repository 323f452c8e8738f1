// Kernel launches: the engine hears of each one, for guard-zone fills before
// it and attribution (and, with check=kernel, a check on its stream) after:
//
//   engine.BeforeLaunch(context, stream);
//   result = real launch;
//   if (success) engine.AfterLaunch(context, stream, kernel id, &args);
//
// `args` is the launch as made (lib/launch/launch_args.h): the function, its
// dimensions and the program's own parameter array or `extra` buffer, passed
// through untouched; the engine decides what to read from it.
//
// Covered: cuLaunchKernel, cuLaunchKernelEx, cuLaunchCooperativeKernel and
// cudaLaunchKernel, cudaLaunchKernelExC, cudaLaunchCooperativeKernel, each
// with its _ptsz twin; graph launches (cuGraphLaunch, cudaGraphLaunch, _ptsz)
// under the one name "cudaGraphLaunch". A runtime launch reaches the driver
// nested and is counted once; a statically linked runtime reaches only the
// driver shims, through cuGetProcAddress.
//
// The kernel's name is asked once per function handle (cuFuncGetName, else
// cuKernelGetName for a CUkernel passed as a CUfunction; cudaFuncGetName for
// the runtime), demangled, interned, and cached by handle (KernelIdCache): a
// launch costs a TLS increment, the current context and one lock-free probe,
// plus whatever the engine does. Nothing is asked before the launch succeeds.
#include <cxxabi.h>

#include <cstdlib>
#include <string>

#include "interpose/cupti/kernel_id_cache.h"
#include "interpose/guard_shim_util.h"
#include "interpose/resolve/driver_hooks.h"
#include "interpose/resolve/runtime_hooks.h"
#include "interpose/shims/graph_memory_shims.h"
#include "lib/core/tool_time.h"
#include "lib/launch/launch_args.h"

using gmt::InterceptScope;

namespace {

std::string Demangle(const char* name) {
  int status = 0;
  char* demangled = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  std::string out = status == 0 && demangled != nullptr ? demangled : name;
  std::free(demangled);
  return out;
}

// The name of a kernel CUDA could not name (no query entry point, or a handle
// it does not know).
constexpr const char kUnknownKernel[] = "?";

std::string DriverKernelName(const void* handle) {
  static gmt::RealSlot<PFN_cuFuncGetName_v12030> func_get_name("cuFuncGetName",
                                                               true);
  static gmt::RealSlot<PFN_cuKernelGetName_v12030> kernel_get_name(
      "cuKernelGetName", true);
  const char* name = nullptr;
  if (auto get = func_get_name.Get();
      get != nullptr &&
      get(&name, static_cast<CUfunction>(const_cast<void*>(handle))) ==
          CUDA_SUCCESS &&
      name != nullptr) {
    return Demangle(name);
  }
  name = nullptr;
  if (auto get = kernel_get_name.Get();
      get != nullptr &&
      get(&name, static_cast<CUkernel>(const_cast<void*>(handle))) ==
          CUDA_SUCCESS &&
      name != nullptr) {
    return Demangle(name);
  }
  return kUnknownKernel;
}

std::string RuntimeKernelName(const void* func) {
  static gmt::RealSlot<cudaError_t (*)(const char**, const void*)>
      func_get_name("cudaFuncGetName", false);
  const char* name = nullptr;
  if (auto get = func_get_name.Get();
      get != nullptr && get(&name, func) == cudaSuccess && name != nullptr) {
    return Demangle(name);
  }
  return kUnknownKernel;
}

// Driver handles (CUfunction / CUkernel) and runtime ones (host stub or
// cudaKernel_t) are named by different calls: one cache each. Leaked.
gmt::KernelIdCache& DriverKernels() {
  static auto* const cache = new gmt::KernelIdCache();
  return *cache;
}

gmt::KernelIdCache& RuntimeKernels() {
  static auto* const cache = new gmt::KernelIdCache();
  return *cache;
}

uint32_t DriverKernelId(const void* f) {
  return DriverKernels().Get(f, [f] { return DriverKernelName(f); });
}

uint32_t RuntimeKernelId(const void* func) {
  return RuntimeKernels().Get(func, [func] { return RuntimeKernelName(func); });
}

uint32_t GraphKernelId() {
  static const uint32_t id = gmt::Engine::Get().InternKernel("cudaGraphLaunch");
  return id;
}

// The launch protocol around `call`; `kernel_id()` is asked only on success.
// Works for CUresult and cudaError_t alike (success is 0 in both).
// `name`: the entry point, for a sticky error's report.
template <typename KernelId, typename Call>
auto Launch(const char* name, const void* stream, bool per_thread,
            const gmt::LaunchArgs* args, KernelId&& kernel_id, Call&& call) {
  InterceptScope scope;
  if (!scope.Recording()) return call();
  gmt::SampledCallTime timed(gmt::ToolCall::kLaunch);
  gmt::Engine& engine = gmt::Engine::Get();
  const uint64_t context = gmt::CurrentCallContext().context;
  const uint64_t engine_stream = gmt::EngineStream(stream, per_thread);
  engine.BeforeLaunch(context, engine_stream);
  auto result = timed.Forward(call);
  if (static_cast<int>(result) == 0) {
    engine.AfterLaunch(context, engine_stream, kernel_id(), args);
  } else {
    gmt::NoteStickyResult(name, result);
  }
  return result;
}

// A graph launch also brings its memory nodes' blocks to life
// (graph_memory_shims.h); asked only once the launch succeeded.
template <typename Call>
auto GraphLaunch(const char* name, const void* exec, const void* stream,
                 bool per_thread, Call&& call) {
  // A graph's kernels and their arguments are not seen here.
  return Launch(
      name, stream, per_thread, nullptr,
      [exec, stream, per_thread] {
        gmt::NoteGraphLaunched(
            static_cast<CUgraphExec>(const_cast<void*>(exec)),
            gmt::CurrentCallContext().context,
            gmt::EngineStream(stream, per_thread),
            [] { return gmt::Engine::Get().CaptureCallStack(); });
        return GraphKernelId();
      },
      call);
}

gmt::LaunchArgs DriverArgs(CUfunction f, unsigned int gx, unsigned int gy,
                           unsigned int gz, unsigned int bx, unsigned int by,
                           unsigned int bz, unsigned int shared_bytes,
                           void** params, void** extra) {
  gmt::LaunchArgs a;
  a.kind = gmt::KernelHandleKind::kDriver;
  a.function = f;
  a.dims = {{gx, gy, gz}, {bx, by, bz}, shared_bytes};
  a.params = params;
  a.extra = extra;
  return a;
}

gmt::LaunchArgs DriverArgsEx(const CUlaunchConfig* config, CUfunction f,
                             void** params, void** extra) {
  if (config == nullptr)
    return DriverArgs(f, 0, 0, 0, 0, 0, 0, 0, params, extra);
  return DriverArgs(f, config->gridDimX, config->gridDimY, config->gridDimZ,
                    config->blockDimX, config->blockDimY, config->blockDimZ,
                    config->sharedMemBytes, params, extra);
}

gmt::LaunchArgs RuntimeArgs(const void* func, dim3 grid, dim3 block,
                            void** args, size_t shared_bytes) {
  gmt::LaunchArgs a;
  a.kind = gmt::KernelHandleKind::kRuntime;
  a.function = func;
  a.dims = {{grid.x, grid.y, grid.z},
            {block.x, block.y, block.z},
            static_cast<uint32_t>(shared_bytes)};
  a.params = args;
  return a;
}

gmt::LaunchArgs RuntimeArgsEx(const cudaLaunchConfig_t* config,
                              const void* func, void** args) {
  if (config == nullptr)
    return RuntimeArgs(func, dim3(0, 0, 0), dim3(0, 0, 0), args, 0);
  return RuntimeArgs(func, config->gridDim, config->blockDim, args,
                     config->dynamicSmemBytes);
}

}  // namespace

// ---- Driver -----------------------------------------------------------------

CUresult Shim_cuLaunchKernel(CUfunction f, unsigned int gx, unsigned int gy,
                             unsigned int gz, unsigned int bx, unsigned int by,
                             unsigned int bz, unsigned int shared_bytes,
                             CUstream stream, void** params, void** extra) {
  auto real = gmt::g_real_cuLaunchKernel.Get();
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  const gmt::LaunchArgs launch =
      DriverArgs(f, gx, gy, gz, bx, by, bz, shared_bytes, params, extra);
  return Launch(
      "cuLaunchKernel", stream, false, &launch,
      [f] { return DriverKernelId(f); },
      [&] {
        return real(f, gx, gy, gz, bx, by, bz, shared_bytes, stream, params,
                    extra);
      });
}

CUresult Shim_cuLaunchKernel_ptsz(CUfunction f, unsigned int gx,
                                  unsigned int gy, unsigned int gz,
                                  unsigned int bx, unsigned int by,
                                  unsigned int bz, unsigned int shared_bytes,
                                  CUstream stream, void** params,
                                  void** extra) {
  auto real = gmt::g_real_cuLaunchKernel_ptsz.Get();
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  const gmt::LaunchArgs launch =
      DriverArgs(f, gx, gy, gz, bx, by, bz, shared_bytes, params, extra);
  return Launch(
      "cuLaunchKernel_ptsz", stream, true, &launch,
      [f] { return DriverKernelId(f); },
      [&] {
        return real(f, gx, gy, gz, bx, by, bz, shared_bytes, stream, params,
                    extra);
      });
}

CUresult Shim_cuLaunchKernelEx(const CUlaunchConfig* config, CUfunction f,
                               void** params, void** extra) {
  auto real = gmt::g_real_cuLaunchKernelEx.Get();
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  const gmt::LaunchArgs launch = DriverArgsEx(config, f, params, extra);
  return Launch(
      "cuLaunchKernelEx", config != nullptr ? config->hStream : nullptr, false,
      &launch, [f] { return DriverKernelId(f); },
      [&] { return real(config, f, params, extra); });
}

CUresult Shim_cuLaunchKernelEx_ptsz(const CUlaunchConfig* config, CUfunction f,
                                    void** params, void** extra) {
  auto real = gmt::g_real_cuLaunchKernelEx_ptsz.Get();
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  const gmt::LaunchArgs launch = DriverArgsEx(config, f, params, extra);
  return Launch(
      "cuLaunchKernelEx_ptsz", config != nullptr ? config->hStream : nullptr,
      true, &launch, [f] { return DriverKernelId(f); },
      [&] { return real(config, f, params, extra); });
}

CUresult Shim_cuLaunchCooperativeKernel(CUfunction f, unsigned int gx,
                                        unsigned int gy, unsigned int gz,
                                        unsigned int bx, unsigned int by,
                                        unsigned int bz,
                                        unsigned int shared_bytes,
                                        CUstream stream, void** params) {
  auto real = gmt::g_real_cuLaunchCooperativeKernel.Get();
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  const gmt::LaunchArgs launch =
      DriverArgs(f, gx, gy, gz, bx, by, bz, shared_bytes, params, nullptr);
  return Launch(
      "cuLaunchCooperativeKernel", stream, false, &launch,
      [f] { return DriverKernelId(f); },
      [&] {
        return real(f, gx, gy, gz, bx, by, bz, shared_bytes, stream, params);
      });
}

CUresult Shim_cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned int gx,
                                             unsigned int gy, unsigned int gz,
                                             unsigned int bx, unsigned int by,
                                             unsigned int bz,
                                             unsigned int shared_bytes,
                                             CUstream stream, void** params) {
  auto real = gmt::g_real_cuLaunchCooperativeKernel_ptsz.Get();
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  const gmt::LaunchArgs launch =
      DriverArgs(f, gx, gy, gz, bx, by, bz, shared_bytes, params, nullptr);
  return Launch(
      "cuLaunchCooperativeKernel_ptsz", stream, true, &launch,
      [f] { return DriverKernelId(f); },
      [&] {
        return real(f, gx, gy, gz, bx, by, bz, shared_bytes, stream, params);
      });
}

CUresult Shim_cuGraphLaunch(CUgraphExec exec, CUstream stream) {
  auto real = gmt::g_real_cuGraphLaunch.Get();
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  return GraphLaunch("cuGraphLaunch", exec, stream, false,
                     [&] { return real(exec, stream); });
}

CUresult Shim_cuGraphLaunch_ptsz(CUgraphExec exec, CUstream stream) {
  auto real = gmt::g_real_cuGraphLaunch_ptsz.Get();
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  return GraphLaunch("cuGraphLaunch_ptsz", exec, stream, true,
                     [&] { return real(exec, stream); });
}

// ---- Runtime ----------------------------------------------------------------

cudaError_t Shim_cudaLaunchKernel(const void* func, dim3 grid, dim3 block,
                                  void** args, size_t shared_bytes,
                                  cudaStream_t stream) {
  auto real = gmt::g_real_cudaLaunchKernel.Get();
  if (real == nullptr) return gmt::NoRuntimeError();
  const gmt::LaunchArgs launch =
      RuntimeArgs(func, grid, block, args, shared_bytes);
  return Launch(
      "cudaLaunchKernel", stream, false, &launch,
      [func] { return RuntimeKernelId(func); },
      [&] { return real(func, grid, block, args, shared_bytes, stream); });
}

cudaError_t Shim_cudaLaunchKernel_ptsz(const void* func, dim3 grid, dim3 block,
                                       void** args, size_t shared_bytes,
                                       cudaStream_t stream) {
  auto real = gmt::g_real_cudaLaunchKernel_ptsz.Get();
  if (real == nullptr) return gmt::NoRuntimeError();
  const gmt::LaunchArgs launch =
      RuntimeArgs(func, grid, block, args, shared_bytes);
  return Launch(
      "cudaLaunchKernel_ptsz", stream, true, &launch,
      [func] { return RuntimeKernelId(func); },
      [&] { return real(func, grid, block, args, shared_bytes, stream); });
}

cudaError_t Shim_cudaLaunchKernelExC(const cudaLaunchConfig_t* config,
                                     const void* func, void** args) {
  auto real = gmt::g_real_cudaLaunchKernelExC.Get();
  if (real == nullptr) return gmt::NoRuntimeError();
  const gmt::LaunchArgs launch = RuntimeArgsEx(config, func, args);
  return Launch(
      "cudaLaunchKernelExC", config != nullptr ? config->stream : nullptr,
      false, &launch, [func] { return RuntimeKernelId(func); },
      [&] { return real(config, func, args); });
}

cudaError_t Shim_cudaLaunchKernelExC_ptsz(const cudaLaunchConfig_t* config,
                                          const void* func, void** args) {
  auto real = gmt::g_real_cudaLaunchKernelExC_ptsz.Get();
  if (real == nullptr) return gmt::NoRuntimeError();
  const gmt::LaunchArgs launch = RuntimeArgsEx(config, func, args);
  return Launch(
      "cudaLaunchKernelExC_ptsz", config != nullptr ? config->stream : nullptr,
      true, &launch, [func] { return RuntimeKernelId(func); },
      [&] { return real(config, func, args); });
}

cudaError_t Shim_cudaLaunchCooperativeKernel(const void* func, dim3 grid,
                                             dim3 block, void** args,
                                             size_t shared_bytes,
                                             cudaStream_t stream) {
  auto real = gmt::g_real_cudaLaunchCooperativeKernel.Get();
  if (real == nullptr) return gmt::NoRuntimeError();
  const gmt::LaunchArgs launch =
      RuntimeArgs(func, grid, block, args, shared_bytes);
  return Launch(
      "cudaLaunchCooperativeKernel", stream, false, &launch,
      [func] { return RuntimeKernelId(func); },
      [&] { return real(func, grid, block, args, shared_bytes, stream); });
}

cudaError_t Shim_cudaLaunchCooperativeKernel_ptsz(const void* func, dim3 grid,
                                                  dim3 block, void** args,
                                                  size_t shared_bytes,
                                                  cudaStream_t stream) {
  auto real = gmt::g_real_cudaLaunchCooperativeKernel_ptsz.Get();
  if (real == nullptr) return gmt::NoRuntimeError();
  const gmt::LaunchArgs launch =
      RuntimeArgs(func, grid, block, args, shared_bytes);
  return Launch(
      "cudaLaunchCooperativeKernel_ptsz", stream, true, &launch,
      [func] { return RuntimeKernelId(func); },
      [&] { return real(func, grid, block, args, shared_bytes, stream); });
}

cudaError_t Shim_cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t stream) {
  auto real = gmt::g_real_cudaGraphLaunch.Get();
  if (real == nullptr) return gmt::NoRuntimeError();
  return GraphLaunch("cudaGraphLaunch", exec, stream, false,
                     [&] { return real(exec, stream); });
}

cudaError_t Shim_cudaGraphLaunch_ptsz(cudaGraphExec_t exec,
                                      cudaStream_t stream) {
  auto real = gmt::g_real_cudaGraphLaunch_ptsz.Get();
  if (real == nullptr) return gmt::NoRuntimeError();
  return GraphLaunch("cudaGraphLaunch_ptsz", exec, stream, true,
                     [&] { return real(exec, stream); });
}
