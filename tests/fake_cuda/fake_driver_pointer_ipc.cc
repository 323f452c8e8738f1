// Fake driver: pointer attributes and IPC memory handles, for the guard-zone
// shims that translate them to the user's view
// (interpose/shims/pointer_query_shims.cc).
//
// Pointer attributes know device, managed and VMM-mapped memory (what
// cuMemGetAddressRange knows):
//   cuPointerGetAttribute   RANGE_START_ADDR, RANGE_SIZE, DEVICE_POINTER,
//                           MEMORY_TYPE (always DEVICE), MEMPOOL_HANDLE and
//                           BUFFER_ID (one per allocation); another attribute,
//                           or an unknown pointer: CUDA_ERROR_INVALID_VALUE.
//   cuPointerGetAttributes  the same values; an unknown pointer or attribute
//                           gives zeros and CUDA_SUCCESS, as documented.
// IPC, within one process (the double has no second one): a handle carries
// the base of the block holding the exported address (the real driver maps
// the whole allocation in the peer, and an interior address gives the same
// handle as the base: measured); only cuMemAlloc memory can be exported
// (managed and pool memory: CUDA_ERROR_INVALID_VALUE, measured); opening it
// "maps" that same base, which must still be live; closing takes exactly an
// address opened before (base + 256: CUDA_ERROR_INVALID_VALUE, measured).
// Opening twice without closing is allowed and needs two closes.
//
// Defined weak (fake_weak.h): where another file of the double defines the
// same entry point, that one is kept.
#include <cstring>
#include <map>
#include <mutex>

#include "tests/fake_cuda/fake_driver.h"
#include "tests/fake_cuda/fake_weak.h"

// fake_driver_memory.cc's entry point, called directly (the library is linked
// -Bsymbolic, so this never reaches an interposer).
extern "C" __attribute__((visibility("default"))) CUresult
Fake_cuMemGetAddressRange_v2(
    CUdeviceptr* base, size_t* size,
    CUdeviceptr dptr) __asm__("cuMemGetAddressRange_v2");

namespace {

struct Range {
  CUdeviceptr base = 0;
  size_t size = 0;
};

bool Find(CUdeviceptr ptr, Range* range) {
  return Fake_cuMemGetAddressRange_v2(&range->base, &range->size, ptr) ==
         CUDA_SUCCESS;
}

// The 8-byte value of `attribute` for `ptr` in `range`; false if unsupported.
bool AttributeValue(CUpointer_attribute attribute, CUdeviceptr ptr,
                    const Range& range, uint64_t* value, size_t* bytes) {
  switch (attribute) {
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
      *value = range.base;
      *bytes = sizeof(CUdeviceptr);
      return true;
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
      *value = range.size;
      *bytes = sizeof(size_t);
      return true;
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
      *value = ptr;
      *bytes = sizeof(CUdeviceptr);
      return true;
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
      *value = CU_MEMORYTYPE_DEVICE;
      *bytes = sizeof(unsigned int);
      return true;
    case CU_POINTER_ATTRIBUTE_BUFFER_ID:
      *bytes = sizeof(unsigned long long);
      return fake_cuda::BufferIdOf(ptr, value);
    case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE: {
      CUmemoryPool pool = nullptr;
      if (!fake_cuda::PoolOfAddress(ptr, &pool)) return false;
      *value = reinterpret_cast<uint64_t>(pool);
      *bytes = sizeof(CUmemoryPool);
      return true;
    }
    default:
      return false;
  }
}

// Open IPC mappings: address -> how many opens are not closed yet.
std::mutex g_ipc_mu;
std::map<CUdeviceptr, int>& OpenMappings() {
  static auto* const mappings = new std::map<CUdeviceptr, int>();  // leaked
  return *mappings;
}

CUresult OpenHandle(CUdeviceptr* ptr, CUipcMemHandle handle,
                    unsigned int flags) {
  fake_cuda::Context* ctx = nullptr;
  if (CUresult r = fake_cuda::RequireContext(&ctx); r != CUDA_SUCCESS) return r;
  if (ptr == nullptr || (flags & ~CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS) != 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  CUdeviceptr base = 0;
  std::memcpy(&base, handle.reserved, sizeof(base));
  Range range;
  if (base == 0 || !Find(base, &range) || range.base != base) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  std::lock_guard<std::mutex> lock(g_ipc_mu);
  ++OpenMappings()[base];
  *ptr = base;
  return CUDA_SUCCESS;
}

}  // namespace

// ---- Pointer attributes -----------------------------------------------------

FAKE_CU_API_WEAK(cuPointerGetAttribute,
                 (void* data, CUpointer_attribute attribute, CUdeviceptr ptr)) {
  if (!fake_cuda::Initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (data == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Range range;
  uint64_t value = 0;
  size_t bytes = 0;
  if (!Find(ptr, &range) ||
      !AttributeValue(attribute, ptr, range, &value, &bytes)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  std::memcpy(data, &value, bytes);  // little-endian: the low bytes
  return CUDA_SUCCESS;
}

FAKE_CU_API_WEAK(cuPointerGetAttributes,
                 (unsigned int count, CUpointer_attribute* attributes,
                  void** data, CUdeviceptr ptr)) {
  if (!fake_cuda::Initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (count == 0 || attributes == nullptr || data == nullptr) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  Range range;
  const bool known = Find(ptr, &range);
  for (unsigned int i = 0; i < count; ++i) {
    if (data[i] == nullptr) continue;
    uint64_t value = 0;
    size_t bytes = sizeof(uint64_t);
    if (!known || !AttributeValue(attributes[i], ptr, range, &value, &bytes)) {
      value = 0;
      bytes = sizeof(uint64_t);
      if (attributes[i] == CU_POINTER_ATTRIBUTE_MEMORY_TYPE) {
        bytes = sizeof(unsigned int);
      }
    }
    std::memcpy(data[i], &value, bytes);
  }
  return CUDA_SUCCESS;
}

// ---- IPC memory handles -----------------------------------------------------

FAKE_CU_API_WEAK(cuIpcGetMemHandle,
                 (CUipcMemHandle * handle, CUdeviceptr ptr)) {
  fake_cuda::Context* ctx = nullptr;
  if (CUresult r = fake_cuda::RequireContext(&ctx); r != CUDA_SUCCESS) return r;
  Range range;
  if (handle == nullptr || !Find(ptr, &range) ||
      !fake_cuda::IpcExportable(ptr)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  std::memset(handle, 0, sizeof(*handle));
  std::memcpy(handle->reserved, &range.base, sizeof(range.base));
  return CUDA_SUCCESS;
}

FAKE_CU_API_WEAK(cuIpcOpenMemHandle, (CUdeviceptr * ptr, CUipcMemHandle handle,
                                      unsigned int flags)) {
  return OpenHandle(ptr, handle, flags);
}

FAKE_CU_API_WEAK(cuIpcOpenMemHandle_v2,
                 (CUdeviceptr * ptr, CUipcMemHandle handle,
                  unsigned int flags)) {
  return OpenHandle(ptr, handle, flags);
}

FAKE_CU_API_WEAK(cuIpcCloseMemHandle, (CUdeviceptr ptr)) {
  fake_cuda::Context* ctx = nullptr;
  if (CUresult r = fake_cuda::RequireContext(&ctx); r != CUDA_SUCCESS) return r;
  std::lock_guard<std::mutex> lock(g_ipc_mu);
  auto it = OpenMappings().find(ptr);
  if (it == OpenMappings().end()) return CUDA_ERROR_INVALID_VALUE;
  if (--it->second == 0) OpenMappings().erase(it);
  return CUDA_SUCCESS;
}
