// Fake driver: initialization, devices and contexts.
#include <atomic>
#include <cstdio>
#include <mutex>
#include <set>
#include <vector>

#include "tests/fake_cuda/fake_cupti_emit.h"
#include "tests/fake_cuda/fake_driver.h"
#include "tests/fake_cuda/fake_sticky_error.h"

namespace fake_cuda {
namespace {

std::atomic<bool> g_initialized{false};
std::mutex g_mu;
Context g_primary[kDeviceCount] = {{0, true, 0}, {1, true, 0}};
// Contexts made by cuCtxCreate and not destroyed yet (guarded by g_mu).
std::set<const Context*>* g_created = new std::set<const Context*>();
thread_local Context* t_current = nullptr;
// The thread's context stack below t_current (cuCtxPushCurrent); the top of
// the stack is t_current itself, which cuCtxSetCurrent replaces. On the heap,
// made at the first push and freed when popped empty: a thread_local vector
// would be destroyed at exit before the atexit handlers run, and a traced
// program's exit handler (the tool's last check) still pushes a context.
thread_local std::vector<Context*>* t_below = nullptr;

bool BelowEmpty() { return t_below == nullptr || t_below->empty(); }

void PushBelow(Context* ctx) {
  if (t_below == nullptr) t_below = new std::vector<Context*>();
  t_below->push_back(ctx);
}

Context* PopBelow() {
  Context* top = t_below->back();
  t_below->pop_back();
  if (t_below->empty()) {
    delete t_below;
    t_below = nullptr;
  }
  return top;
}

bool ValidDevice(CUdevice dev) { return dev >= 0 && dev < kDeviceCount; }

}  // namespace

bool Initialized() { return g_initialized.load(std::memory_order_acquire); }

Context* PrimaryContext(int device) { return &g_primary[device]; }

Context* CurrentContext() { return t_current; }

CUresult RequireContext(Context** ctx) {
  if (!Initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (t_current == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
  *ctx = t_current;
  return CUDA_SUCCESS;
}

bool IsLiveContext(CUcontext ctx) {
  auto* c = reinterpret_cast<const Context*>(ctx);
  for (const Context& p : g_primary) {
    if (c == &p) return true;
  }
  std::lock_guard<std::mutex> lock(g_mu);
  return g_created->count(c) != 0;
}

}  // namespace fake_cuda

using fake_cuda::Context;
using fake_cuda::Initialized;
using fake_cuda::kDeviceCount;

FAKE_CU_API(cuInit, (unsigned int flags)) {
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  fake_cuda::g_initialized.store(true, std::memory_order_release);
  fake_cuda::LoadInjectionOnce();  // CUDA_INJECTION64_PATH
  return CUDA_SUCCESS;
}

FAKE_CU_API(cuDriverGetVersion, (int* version)) {
  if (version == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *version = fake_cuda::kDriverVersion;
  return CUDA_SUCCESS;
}

FAKE_CU_API(cuDeviceGetCount, (int* count)) {
  if (!Initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (count == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *count = kDeviceCount;
  return CUDA_SUCCESS;
}

FAKE_CU_API(cuDeviceGet, (CUdevice * device, int ordinal)) {
  if (!Initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (device == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!fake_cuda::ValidDevice(ordinal)) return CUDA_ERROR_INVALID_DEVICE;
  *device = ordinal;
  return CUDA_SUCCESS;
}

FAKE_CU_API(cuDeviceGetName, (char* name, int len, CUdevice dev)) {
  if (!Initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (name == nullptr || len <= 0) return CUDA_ERROR_INVALID_VALUE;
  if (!fake_cuda::ValidDevice(dev)) return CUDA_ERROR_INVALID_DEVICE;
  std::snprintf(name, static_cast<size_t>(len), "Fake GPU %d", dev);
  return CUDA_SUCCESS;
}

// "0000:41:00.0" for device 0, "0000:42:00.0" for device 1: the real
// driver's "domain:bus:device.function" in hex, cut to `len` with its NUL.
FAKE_CU_API(cuDeviceGetPCIBusId, (char* bus_id, int len, CUdevice dev)) {
  if (!Initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (bus_id == nullptr || len <= 0) return CUDA_ERROR_INVALID_VALUE;
  if (!fake_cuda::ValidDevice(dev)) return CUDA_ERROR_INVALID_DEVICE;
  std::snprintf(bus_id, static_cast<size_t>(len), "0000:%02x:00.0", 0x41 + dev);
  return CUDA_SUCCESS;
}

FAKE_CU_API(cuDeviceTotalMem_v2, (size_t * bytes, CUdevice dev)) {
  if (!Initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (bytes == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!fake_cuda::ValidDevice(dev)) return CUDA_ERROR_INVALID_DEVICE;
  *bytes = fake_cuda::kDeviceBytes;
  return CUDA_SUCCESS;
}

FAKE_CU_API(cuCtxGetCurrent, (CUcontext * pctx)) {
  if (!Initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (pctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *pctx = reinterpret_cast<CUcontext>(fake_cuda::t_current);
  return CUDA_SUCCESS;
}

FAKE_CU_API(cuCtxSetCurrent, (CUcontext ctx)) {
  if (!Initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (ctx != nullptr && !fake_cuda::IsLiveContext(ctx)) {
    return CUDA_ERROR_INVALID_CONTEXT;
  }
  // Replaces the top of the context stack; null pops it, as in the driver.
  if (ctx == nullptr && !fake_cuda::BelowEmpty()) {
    fake_cuda::t_current = fake_cuda::PopBelow();
    return CUDA_SUCCESS;
  }
  fake_cuda::t_current = reinterpret_cast<Context*>(ctx);
  return CUDA_SUCCESS;
}

FAKE_CU_API(cuCtxPushCurrent_v2, (CUcontext ctx)) {
  if (!Initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (ctx == nullptr || !fake_cuda::IsLiveContext(ctx)) {
    return CUDA_ERROR_INVALID_CONTEXT;
  }
  if (fake_cuda::t_current != nullptr) {
    fake_cuda::PushBelow(fake_cuda::t_current);
  }
  fake_cuda::t_current = reinterpret_cast<Context*>(ctx);
  return CUDA_SUCCESS;
}

FAKE_CU_API(cuCtxPopCurrent_v2, (CUcontext * pctx)) {
  if (!Initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (fake_cuda::t_current == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
  if (pctx != nullptr) {
    *pctx = reinterpret_cast<CUcontext>(fake_cuda::t_current);
  }
  fake_cuda::t_current =
      fake_cuda::BelowEmpty() ? nullptr : fake_cuda::PopBelow();
  return CUDA_SUCCESS;
}

FAKE_CU_API(cuCtxGetDevice, (CUdevice * device)) {
  Context* ctx = nullptr;
  if (CUresult r = fake_cuda::RequireContext(&ctx); r != CUDA_SUCCESS) {
    return r;
  }
  if (device == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *device = ctx->device;
  return CUDA_SUCCESS;
}

// CUDA 13: cuGetProcAddress("cuCtxGetDevice", ..., 13000) returns this one.
FAKE_CU_API(cuCtxGetDevice_v2, (CUdevice * device, CUcontext ctx)) {
  if (ctx == nullptr) return Fake_cuCtxGetDevice(device);
  if (!Initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (!fake_cuda::IsLiveContext(ctx)) return CUDA_ERROR_INVALID_CONTEXT;
  if (device == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *device = reinterpret_cast<Context*>(ctx)->device;
  return CUDA_SUCCESS;
}

// A planted fault (fake_sticky_error.h) is returned by every synchronizing
// call after it.
FAKE_CU_API(cuCtxSynchronize, ()) {
  fake_cuda::CheckCallFromLaunchCallback("cuCtxSynchronize");
  Context* ctx = nullptr;
  if (CUresult r = fake_cuda::RequireContext(&ctx); r != CUDA_SUCCESS) return r;
  fake_cuda::RunDeferredChecks();
  return fake_cuda::StickyError();
}

FAKE_CU_API(cuCtxSynchronize_v2, (CUcontext ctx)) {
  fake_cuda::CheckCallFromLaunchCallback("cuCtxSynchronize_v2");
  if (ctx == nullptr) return Fake_cuCtxSynchronize();
  if (!Initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (!fake_cuda::IsLiveContext(ctx)) return CUDA_ERROR_INVALID_CONTEXT;
  fake_cuda::RunDeferredChecks();
  return fake_cuda::StickyError();
}

FAKE_CU_API(cuStreamSynchronize, (CUstream /*stream*/)) {
  fake_cuda::CheckCallFromLaunchCallback("cuStreamSynchronize");
  Context* ctx = nullptr;
  if (CUresult r = fake_cuda::RequireContext(&ctx); r != CUDA_SUCCESS) return r;
  fake_cuda::RunDeferredChecks();
  return fake_cuda::StickyError();
}

FAKE_CU_API(cuDevicePrimaryCtxRetain, (CUcontext * pctx, CUdevice dev)) {
  if (!Initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (pctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!fake_cuda::ValidDevice(dev)) return CUDA_ERROR_INVALID_DEVICE;
  std::lock_guard<std::mutex> lock(fake_cuda::g_mu);
  ++fake_cuda::g_primary[dev].primary_refcount;
  *pctx = reinterpret_cast<CUcontext>(&fake_cuda::g_primary[dev]);
  return CUDA_SUCCESS;
}

// Dropping the last reference destroys the primary context's memory, as the
// real driver does.
FAKE_CU_API(cuDevicePrimaryCtxRelease_v2, (CUdevice dev)) {
  if (!Initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (!fake_cuda::ValidDevice(dev)) return CUDA_ERROR_INVALID_DEVICE;
  Context* ctx = &fake_cuda::g_primary[dev];
  {
    std::lock_guard<std::mutex> lock(fake_cuda::g_mu);
    if (ctx->primary_refcount <= 0) return CUDA_ERROR_INVALID_CONTEXT;
    if (--ctx->primary_refcount > 0) return CUDA_SUCCESS;
  }
  fake_cuda::FreeContextMemory(ctx);
  return CUDA_SUCCESS;
}

FAKE_CU_API(cuDevicePrimaryCtxGetState,
            (CUdevice dev, unsigned int* flags, int* active)) {
  if (!Initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (!fake_cuda::ValidDevice(dev)) return CUDA_ERROR_INVALID_DEVICE;
  if (flags == nullptr || active == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<std::mutex> lock(fake_cuda::g_mu);
  *flags = 0;
  *active = fake_cuda::g_primary[dev].primary_refcount > 0 ? 1 : 0;
  return CUDA_SUCCESS;
}

// Frees every block made in the primary context of `dev` (device, managed and
// pinned memory); the context handle stays valid.
FAKE_CU_API(cuDevicePrimaryCtxReset_v2, (CUdevice dev)) {
  if (!Initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (!fake_cuda::ValidDevice(dev)) return CUDA_ERROR_INVALID_DEVICE;
  fake_cuda::FreeContextMemory(&fake_cuda::g_primary[dev]);
  return CUDA_SUCCESS;
}

namespace {

CUresult CreateContext(CUcontext* pctx, CUdevice dev) {
  if (!Initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (pctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!fake_cuda::ValidDevice(dev)) return CUDA_ERROR_INVALID_DEVICE;
  auto* ctx = new Context{dev, false, 0};
  {
    std::lock_guard<std::mutex> lock(fake_cuda::g_mu);
    fake_cuda::g_created->insert(ctx);
  }
  fake_cuda::t_current = ctx;  // the new context is made current
  *pctx = reinterpret_cast<CUcontext>(ctx);
  return CUDA_SUCCESS;
}

}  // namespace

FAKE_CU_API(cuCtxCreate_v2,
            (CUcontext * pctx, unsigned int /*flags*/, CUdevice dev)) {
  return CreateContext(pctx, dev);
}

// What cuCtxCreate maps to in CUDA 13's cuda.h.
FAKE_CU_API(cuCtxCreate_v4, (CUcontext * pctx, CUctxCreateParams* /*params*/,
                             unsigned int /*flags*/, CUdevice dev)) {
  return CreateContext(pctx, dev);
}

FAKE_CU_API(cuCtxDestroy_v2, (CUcontext ctx)) {
  if (!Initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  auto* c = reinterpret_cast<Context*>(ctx);
  {
    std::lock_guard<std::mutex> lock(fake_cuda::g_mu);
    if (c == nullptr || fake_cuda::g_created->erase(c) == 0) {
      return CUDA_ERROR_INVALID_VALUE;
    }
  }
  fake_cuda::FreeContextMemory(c);
  if (fake_cuda::t_current == c) fake_cuda::t_current = nullptr;
  delete c;
  return CUDA_SUCCESS;
}
