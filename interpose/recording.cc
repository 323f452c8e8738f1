// The recording helpers of shim.h: current device, device facts, error names.
#include <dlfcn.h>

#include "interpose/oom_shim_util.h"
#include "interpose/shim.h"

namespace gmt {
namespace {

// The driver calls the tool itself makes. Resolved from the loaded libcuda
// and called directly (never through a shim).
RealSlot<PFN_cuCtxGetCurrent_v4000> real_cuCtxGetCurrent("cuCtxGetCurrent",
                                                         true);
RealSlot<PFN_cuCtxGetDevice_v2000> real_cuCtxGetDevice("cuCtxGetDevice", true);
RealSlot<PFN_cuDeviceGet_v2000> real_cuDeviceGet("cuDeviceGet", true);
RealSlot<PFN_cuDeviceGetName_v2000> real_cuDeviceGetName("cuDeviceGetName",
                                                         true);
RealSlot<PFN_cuDeviceTotalMem_v3020> real_cuDeviceTotalMem(
    "cuDeviceTotalMem_v2", true);
RealSlot<PFN_cuGetErrorName_v6000> real_cuGetErrorName("cuGetErrorName", true);
using CudaGetErrorNameFn = const char* (*)(cudaError_t);
RealSlot<CudaGetErrorNameFn> real_cudaGetErrorName("cudaGetErrorName", false);

// One-entry per-thread cache: most threads stay in one context.
thread_local CUcontext t_last_context = nullptr;
thread_local int t_last_device = kHostDevice;

void NoteDeviceOnce(int ordinal) {
  Engine& engine = Engine::Get();
  if (engine.DeviceKnown(ordinal)) return;
  char name[256] = "";
  size_t total = 0;
  CUdevice device = 0;
  auto get = real_cuDeviceGet.Get();
  if (get != nullptr && get(&device, ordinal) == CUDA_SUCCESS) {
    if (auto get_name = real_cuDeviceGetName.Get()) {
      if (get_name(name, sizeof(name), device) != CUDA_SUCCESS) name[0] = '\0';
    }
    if (auto get_total = real_cuDeviceTotalMem.Get()) {
      if (get_total(&total, device) != CUDA_SUCCESS) total = 0;
    }
  }
  engine.NoteDevice(ordinal, name, total);
  NoteCudaVersionsOnce();  // Versions for the health report
}

}  // namespace

CallContext CurrentCallContext() {
  CallContext out;
  auto get_current = real_cuCtxGetCurrent.Get();
  CUcontext context = nullptr;
  if (get_current == nullptr || get_current(&context) != CUDA_SUCCESS ||
      context == nullptr) {
    return out;
  }
  out.context = reinterpret_cast<uint64_t>(context);
  if (context == t_last_context) {
    out.device = t_last_device;
    return out;
  }
  CUdevice device = 0;
  auto get_device = real_cuCtxGetDevice.Get();
  if (get_device != nullptr && get_device(&device) == CUDA_SUCCESS) {
    out.device = static_cast<int>(device);
    NoteDeviceOnce(out.device);
    t_last_context = context;
    t_last_device = out.device;
  }
  return out;
}

void RecordAlloc(Api api, uint64_t address, uint64_t bytes, uint64_t stream,
                 StackId stack, int device_override, uint64_t raw_address,
                 uint64_t raw_bytes, const CallContext* known) {
  const CallContext where = known != nullptr ? *known : CurrentCallContext();
  AllocEvent event;
  event.api = api;
  event.address = address;
  event.bytes = bytes;
  event.stream = stream;
  event.context = where.context;
  event.stack = stack;
  event.raw_address = raw_address;
  event.raw_bytes = raw_bytes;
  const MemoryKind kind = ApiMemoryKind(api);
  if (device_override >= 0) {
    event.device = device_override;
    NoteDeviceOnce(device_override);
  } else if (kind == MemoryKind::kPinnedHost ||
             kind == MemoryKind::kRegisteredHost) {
    event.device = kHostDevice;
  } else {
    event.device = where.device;
  }
  Engine::Get().OnAlloc(event);
}

const char* DriverResultName(CUresult result) {
  const char* name = nullptr;
  if (auto get = real_cuGetErrorName.Get()) {
    if (get(result, &name) == CUDA_SUCCESS && name != nullptr) return name;
  }
  return "CUDA_ERROR_UNKNOWN_CODE";
}

const char* RuntimeResultName(cudaError_t result) {
  if (auto get = real_cudaGetErrorName.Get()) {
    if (const char* name = get(result)) return name;
  }
  return "cudaErrorUnknownCode";
}

}  // namespace gmt
