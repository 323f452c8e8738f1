// What the program can ask about a pointer, answered in the user's view of a
// guarded block (DESIGN §2, pitfall 5): its base and size are the user's, not
// the raw block's with the redzones.
//
//   cuMemGetAddressRange_v2            user base / size for an address in the
//   cuPointerGetAttribute(s)           user's bytes; RANGE_START_ADDR and
//                                      RANGE_SIZE likewise
//   cudaIpcGetMemHandle, cuIpc...      export the raw block for any address
//                                      in the user's bytes (the engine leaves
//                                      a header in its front redzone)
//   cudaIpcOpenMemHandle, cuIpc..._v2  hand the peer the user's start
//   cudaIpcCloseMemHandle, cuIpc...    close what CUDA mapped (the raw start)
//
// An address inside a redzone (before the user's first byte or after the
// last) is, to the program, not part of any allocation: there CUDA without
// the tool would answer from free address space (or from a neighbouring
// block, which no program can rely on). So it is answered as an address
// CUDA does not know:
//   cuMemGetAddressRange   CUDA_ERROR_NOT_FOUND, outputs untouched;
//   cuPointerGetAttribute  CUDA_ERROR_INVALID_VALUE for every attribute,
//                          *data untouched, CUDA not called;
//   cuPointerGetAttributes what CUDA answers for an address it does not
//                          know, asked about one (UnknownAddressAnswer).
// For an address in the user's bytes only the range attributes change; the
// others (memory type, device, context, ...) describe the raw block, which is
// the user's. cudaPointerGetAttributes is not shimmed: its fields (type,
// device, devicePointer, hostPointer) describe the pointer asked about, not
// the block; only its redzone answer differs (CUDA would say unregistered).
//
// Unguarded blocks and untracked addresses are forwarded untouched; so is
// everything when tracking is off or the call is nested (cudart's own driver
// calls).
#include <atomic>
#include <cstring>
#include <optional>

#include "absl/base/const_init.h"
#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "interpose/guard_shim_util.h"
#include "interpose/resolve/driver_hooks.h"
#include "interpose/resolve/runtime_hooks.h"

using gmt::InterceptScope;

namespace {

bool InUserBytes(const gmt::BlockView& view, uint64_t address) {
  return address >= view.user_address &&
         address - view.user_address < view.user_bytes;
}

std::optional<gmt::BlockView> IpcBlock(uint64_t address);

// The guarded block that `address` falls in (user bytes or redzone), if any:
// one of this process, or one a traced exporter shared through IPC.
std::optional<gmt::BlockView> GuardedBlock(uint64_t address) {
  std::optional<gmt::BlockView> view = gmt::Engine::Get().FindBlock(address);
  if (view && view->guarded) return view;
  return IpcBlock(address);
}

bool IsRangeAttribute(CUpointer_attribute attribute) {
  return attribute == CU_POINTER_ATTRIBUTE_RANGE_START_ADDR ||
         attribute == CU_POINTER_ATTRIBUTE_RANGE_SIZE;
}

// What the program learnt of a block's identity: GPUDirect tokens let a
// device outside the process map it (so the tool never hands it to another
// allocation), and the buffer id of a block the tool served again is the
// one it gave the new allocation (CUDA answers the first owner's).
void AfterIdentityQuery(const gmt::BlockView& view,
                        CUpointer_attribute attribute, void* data) {
  gmt::Engine& engine = gmt::Engine::Get();
  if (attribute == CU_POINTER_ATTRIBUTE_P2P_TOKENS) {
    engine.NoteBlockShared(view.user_address);
  } else if (attribute == CU_POINTER_ATTRIBUTE_BUFFER_ID && data != nullptr) {
    if (std::optional<uint64_t> id = engine.ReusedBufferId(view)) {
      const unsigned long long value = *id;
      std::memcpy(data, &value, sizeof(value));
    }
  }
}

// The user's value of a range attribute.
uint64_t UserRangeValue(const gmt::BlockView& view,
                        CUpointer_attribute attribute) {
  return attribute == CU_POINTER_ATTRIBUTE_RANGE_START_ADDR ? view.user_address
                                                            : view.user_bytes;
}

// cuPointerGetAttributes for `ptr`, a redzone address: what CUDA answers for
// an address it does not know, asked about one (a byte of the tool's own
// host memory, which no program registers). Every field comes from CUDA
// (measured on the H200: memory type 0, device ordinal -2, host pointer the
// address itself); a pointer field naming the probe names `ptr` instead.
template <typename Real>
CUresult UnknownAddressAnswer(Real real, unsigned int count,
                              CUpointer_attribute* attributes, void** data,
                              CUdeviceptr ptr) {
  static const char kNeverRegistered = 0;
  const CUdeviceptr probe = reinterpret_cast<CUdeviceptr>(&kNeverRegistered);
  const CUresult result = real(count, attributes, data, probe);
  if (result != CUDA_SUCCESS) return result;
  for (unsigned int i = 0; i < count; ++i) {
    if (data[i] == nullptr ||
        (attributes[i] != CU_POINTER_ATTRIBUTE_HOST_POINTER &&
         attributes[i] != CU_POINTER_ATTRIBUTE_DEVICE_POINTER)) {
      continue;
    }
    uint64_t value = 0;
    std::memcpy(&value, data[i], sizeof(value));
    if (value == probe) std::memcpy(data[i], &ptr, sizeof(value));
  }
  return result;
}

// Both range attributes are 8 bytes (CUdeviceptr, size_t).
static_assert(sizeof(CUdeviceptr) == sizeof(uint64_t) &&
              sizeof(size_t) == sizeof(uint64_t));

// ---- IPC mappings opened in this process ------------------------------------
// The user's address handed to the program -> the raw address CUDA mapped (for
// the close) and the exporter's user size (for the range queries: the peer's
// allocation is the exporter's block, not CUDA's raw mapping). Only mappings
// whose two addresses differ are kept.

struct IpcMapping {
  uint64_t raw = 0;
  uint64_t user_bytes = 0;  // 0: the exporter did not say
};

ABSL_CONST_INIT absl::Mutex g_ipc_mu(absl::kConstInit);
// How many mappings are kept: range queries look only when there are some.
std::atomic<size_t> g_ipc_count{0};

absl::flat_hash_map<uint64_t, IpcMapping>& IpcMappings()
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(g_ipc_mu) {
  // Leaked: a peer may close handles from static destructors.
  static auto* const mappings = new absl::flat_hash_map<uint64_t, IpcMapping>();
  return *mappings;
}

// After CUDA mapped `raw` in the current context: the address the program
// gets.
uint64_t OpenedIpcAddress(uint64_t raw) {
  uint64_t user_bytes = 0;
  const uint64_t user = gmt::Engine::Get().IpcUserAddress(
      gmt::CurrentCallContext().context, raw, &user_bytes);
  if (user != raw) {
    absl::MutexLock lock(&g_ipc_mu);
    IpcMappings()[user] = IpcMapping{raw, user_bytes};
    g_ipc_count.store(IpcMappings().size(), std::memory_order_relaxed);
  }
  return user;
}

// The address CUDA mapped for the program's `user` address.
uint64_t RawIpcAddress(uint64_t user) {
  absl::MutexLock lock(&g_ipc_mu);
  auto it = IpcMappings().find(user);
  return it == IpcMappings().end() ? user : it->second.raw;
}

void ForgetIpcAddress(uint64_t user) {
  absl::MutexLock lock(&g_ipc_mu);
  IpcMappings().erase(user);
  g_ipc_count.store(IpcMappings().size(), std::memory_order_relaxed);
}

// The opened peer block holding `address` (from its raw start to the end of
// the exporter's user bytes) as a view of the program's block, if any.
std::optional<gmt::BlockView> IpcBlock(uint64_t address) {
  if (g_ipc_count.load(std::memory_order_relaxed) == 0) return std::nullopt;
  absl::MutexLock lock(&g_ipc_mu);
  for (const auto& [user, m] : IpcMappings()) {
    if (m.user_bytes == 0 || address < m.raw ||
        address >= user + m.user_bytes) {
      continue;
    }
    gmt::BlockView view;
    view.raw_address = m.raw;
    view.user_address = user;
    view.user_bytes = m.user_bytes;
    view.guarded = true;
    return view;
  }
  return std::nullopt;
}

}  // namespace

// ---- Address ranges ---------------------------------------------------------

CUresult Shim_cuMemGetAddressRange_v2(CUdeviceptr* base, size_t* size,
                                      CUdeviceptr address) {
  auto real = gmt::g_real_cuMemGetAddressRange_v2.Get();
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  InterceptScope scope;
  if (!scope.Recording()) return real(base, size, address);
  std::optional<gmt::BlockView> view = GuardedBlock(address);
  if (!view) return real(base, size, address);
  // Asked with our own outputs, so a redzone answer leaves the program's
  // untouched; CUDA's errors (context, initialization) still come first.
  CUdeviceptr raw_base = 0;
  size_t raw_size = 0;
  CUresult result = real(&raw_base, &raw_size, address);
  if (result != CUDA_SUCCESS) return result;
  if (!InUserBytes(*view, address)) return CUDA_ERROR_NOT_FOUND;
  if (base != nullptr) *base = view->user_address;
  if (size != nullptr) *size = view->user_bytes;
  return CUDA_SUCCESS;
}

CUresult Shim_cuPointerGetAttribute(void* data, CUpointer_attribute attribute,
                                    CUdeviceptr ptr) {
  auto real = gmt::g_real_cuPointerGetAttribute.Get();
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  InterceptScope scope;
  if (!scope.Recording()) return real(data, attribute, ptr);
  std::optional<gmt::BlockView> view = GuardedBlock(ptr);
  if (!view) return real(data, attribute, ptr);
  if (!InUserBytes(*view, ptr)) return CUDA_ERROR_INVALID_VALUE;
  if (attribute == CU_POINTER_ATTRIBUTE_P2P_TOKENS ||
      (attribute == CU_POINTER_ATTRIBUTE_BUFFER_ID && data != nullptr)) {
    const CUresult result = real(data, attribute, ptr);
    if (result == CUDA_SUCCESS) AfterIdentityQuery(*view, attribute, data);
    return result;
  }
  if (!IsRangeAttribute(attribute) || data == nullptr) {
    return real(data, attribute, ptr);
  }
  uint64_t value = 0;
  CUresult result = real(&value, attribute, ptr);
  if (result != CUDA_SUCCESS) return result;
  value = UserRangeValue(*view, attribute);
  std::memcpy(data, &value, sizeof(value));
  return CUDA_SUCCESS;
}

CUresult Shim_cuPointerGetAttributes(unsigned int count,
                                     CUpointer_attribute* attributes,
                                     void** data, CUdeviceptr ptr) {
  auto real = gmt::g_real_cuPointerGetAttributes.Get();
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  InterceptScope scope;
  const bool recording =
      scope.Recording() && attributes != nullptr && data != nullptr;
  std::optional<gmt::BlockView> view;
  if (recording) view = GuardedBlock(ptr);
  // A redzone address: CUDA is asked about an unknown one only, so what it
  // leaves untouched stays the program's (asked about `ptr` first, it wrote
  // the raw block's range there).
  if (view && !InUserBytes(*view, ptr)) {
    return UnknownAddressAnswer(real, count, attributes, data, ptr);
  }
  CUresult result = real(count, attributes, data, ptr);
  if (result != CUDA_SUCCESS || !view) return result;
  for (unsigned int i = 0; i < count; ++i) {
    if (data[i] == nullptr) continue;
    AfterIdentityQuery(*view, attributes[i], data[i]);
    if (!IsRangeAttribute(attributes[i])) continue;
    const uint64_t value = UserRangeValue(*view, attributes[i]);
    std::memcpy(data[i], &value, sizeof(value));
  }
  return result;
}

// ---- IPC, driver ------------------------------------------------------------

CUresult Shim_cuIpcGetMemHandle(CUipcMemHandle* handle, CUdeviceptr ptr) {
  auto real = gmt::g_real_cuIpcGetMemHandle.Get();
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  InterceptScope scope;
  if (!scope.Recording()) return real(handle, ptr);
  std::optional<uint64_t> raw = gmt::Engine::Get().PrepareIpcExport(ptr);
  if (!raw) return CUDA_ERROR_INVALID_VALUE;
  return real(handle, *raw);
}

namespace {

template <typename Real>
CUresult OpenIpc(Real real, CUdeviceptr* ptr, CUipcMemHandle handle,
                 unsigned int flags) {
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  InterceptScope scope;
  CUresult result = real(ptr, handle, flags);
  if (result == CUDA_SUCCESS && ptr != nullptr && scope.Recording()) {
    *ptr = OpenedIpcAddress(*ptr);
  }
  return result;
}

}  // namespace

CUresult Shim_cuIpcOpenMemHandle(CUdeviceptr* ptr, CUipcMemHandle handle,
                                 unsigned int flags) {
  return OpenIpc(gmt::g_real_cuIpcOpenMemHandle.Get(), ptr, handle, flags);
}

CUresult Shim_cuIpcOpenMemHandle_v2(CUdeviceptr* ptr, CUipcMemHandle handle,
                                    unsigned int flags) {
  return OpenIpc(gmt::g_real_cuIpcOpenMemHandle_v2.Get(), ptr, handle, flags);
}

CUresult Shim_cuIpcCloseMemHandle(CUdeviceptr ptr) {
  auto real = gmt::g_real_cuIpcCloseMemHandle.Get();
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  InterceptScope scope;
  if (!scope.Recording()) return real(ptr);
  CUresult result = real(RawIpcAddress(ptr));
  if (result == CUDA_SUCCESS) ForgetIpcAddress(ptr);
  return result;
}

// ---- IPC, runtime -----------------------------------------------------------

cudaError_t Shim_cudaIpcGetMemHandle(cudaIpcMemHandle_t* handle, void* ptr) {
  auto real = gmt::g_real_cudaIpcGetMemHandle.Get();
  if (real == nullptr) return gmt::NoRuntimeError();
  InterceptScope scope;
  if (!scope.Recording()) return real(handle, ptr);
  std::optional<uint64_t> raw =
      gmt::Engine::Get().PrepareIpcExport(reinterpret_cast<uintptr_t>(ptr));
  if (!raw) {
    gmt::NoteRuntimeError(cudaErrorInvalidValue);
    return cudaErrorInvalidValue;
  }
  return real(handle, reinterpret_cast<void*>(*raw));
}

cudaError_t Shim_cudaIpcOpenMemHandle(void** ptr, cudaIpcMemHandle_t handle,
                                      unsigned int flags) {
  auto real = gmt::g_real_cudaIpcOpenMemHandle.Get();
  if (real == nullptr) return gmt::NoRuntimeError();
  InterceptScope scope;
  cudaError_t result = real(ptr, handle, flags);
  if (result == cudaSuccess && ptr != nullptr && scope.Recording()) {
    *ptr = reinterpret_cast<void*>(
        OpenedIpcAddress(reinterpret_cast<uintptr_t>(*ptr)));
  }
  return result;
}

cudaError_t Shim_cudaIpcCloseMemHandle(void* ptr) {
  auto real = gmt::g_real_cudaIpcCloseMemHandle.Get();
  if (real == nullptr) return gmt::NoRuntimeError();
  InterceptScope scope;
  if (!scope.Recording()) return real(ptr);
  const auto user = reinterpret_cast<uintptr_t>(ptr);
  cudaError_t result = real(reinterpret_cast<void*>(RawIpcAddress(user)));
  if (result == cudaSuccess) ForgetIpcAddress(user);
  return result;
}
