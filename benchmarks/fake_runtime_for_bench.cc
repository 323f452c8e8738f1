// A stand-in for libcudart (plus the few driver entry points the shims call
// for the current device) so that interposed_call_bench measures the tool's
// own cost, with no GPU and no CUDA library.
//
// cudaMalloc hands out made-up, 256-byte aligned addresses that are never
// dereferenced: a per-thread LIFO of freed addresses first (so an alloc/free
// loop gets the same address back, as from CUDA's own caching), else a bump
// pointer. Nothing here takes a lock or calls malloc, so the baseline is a
// few nanoseconds and the difference with the tool preloaded is the tool.
//
// The other entry points interposed_call_bench calls (stream-ordered and
// driver allocation, a kernel launch, a copy) are as cheap: the same free list,
// or nothing at all (a launch and a copy succeed without doing anything).
//
// Declared with plain C types: the ABI of cudaError_t/CUresult (int),
// CUcontext (a pointer), CUdevice (int), CUdeviceptr (unsigned long long),
// cudaStream_t (a pointer) and dim3 (three unsigned ints) without the CUDA
// headers.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>

#define FAKE_API extern "C" __attribute__((visibility("default")))

namespace {

constexpr int kSuccess = 0;
constexpr int kErrorInvalidValue = 1;
constexpr uintptr_t kBase = 0x100000000000ull;
constexpr size_t kAlignment = 256;
constexpr int kFreeListSize = 4096;

std::atomic<uintptr_t> g_next{kBase};

// Freed addresses, per thread, handed out again first (any size: the memory
// is never touched, and the tool only sees addresses).
struct FreeList {
  uintptr_t addresses[kFreeListSize];
  int count = 0;
};
thread_local FreeList t_free;

int g_context_storage;  // its address is the one "context"

}  // namespace

FAKE_API int cudaMalloc(void** p, size_t bytes) {
  if (p == nullptr) return kErrorInvalidValue;
  FreeList& list = t_free;
  if (list.count > 0) {
    *p = reinterpret_cast<void*>(list.addresses[--list.count]);
    return kSuccess;
  }
  const size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  uintptr_t a = g_next.fetch_add(rounded == 0 ? kAlignment : rounded,
                                 std::memory_order_relaxed);
  *p = reinterpret_cast<void*>(a);
  return kSuccess;
}

FAKE_API int cudaFree(void* p) {
  if (p == nullptr) return kSuccess;
  FreeList& list = t_free;
  if (list.count < kFreeListSize) {
    list.addresses[list.count++] = reinterpret_cast<uintptr_t>(p);
  }
  return kSuccess;
}

FAKE_API int cudaMallocAsync(void** p, size_t bytes, void* /*stream*/) {
  return cudaMalloc(p, bytes);
}

FAKE_API int cudaFreeAsync(void* p, void* /*stream*/) { return cudaFree(p); }

FAKE_API int cuMemAlloc_v2(unsigned long long* p, size_t bytes) {
  if (p == nullptr) return kErrorInvalidValue;
  void* q = nullptr;
  int r = cudaMalloc(&q, bytes);
  *p = reinterpret_cast<uintptr_t>(q);
  return r;
}

FAKE_API int cuMemFree_v2(unsigned long long p) {
  return cudaFree(reinterpret_cast<void*>(static_cast<uintptr_t>(p)));
}

struct FakeDim3 {
  unsigned int x, y, z;
};

FAKE_API int cudaLaunchKernel(const void* func, FakeDim3 /*grid*/,
                              FakeDim3 /*block*/, void** /*args*/,
                              size_t /*shared_bytes*/, void* /*stream*/) {
  return func == nullptr ? kErrorInvalidValue : kSuccess;
}

// The name the tool asks for once per kernel handle (then cached).
FAKE_API int cudaFuncGetName(const char** name, const void* func) {
  if (name == nullptr || func == nullptr) return kErrorInvalidValue;
  *name = "_Z11BenchKernelPfl";
  return kSuccess;
}

FAKE_API int cudaMemcpy(void* /*dst*/, const void* /*src*/, size_t /*bytes*/,
                        int /*kind*/) {
  return kSuccess;
}

FAKE_API const char* cudaGetErrorName(int error) {
  return error == kSuccess ? "cudaSuccess" : "cudaErrorInvalidValue";
}

// The runtime's last-error state, which every guarded allocation peeks at
// (a real runtime has it; without it each call would measure a failed
// symbol lookup instead).
FAKE_API int cudaPeekAtLastError() { return kSuccess; }
FAKE_API int cudaGetLastError() { return kSuccess; }

// Driver entry points the shims use to attribute a block to a device.
FAKE_API int cuCtxGetCurrent(void** context) {
  *context = &g_context_storage;
  return kSuccess;
}

FAKE_API int cuCtxGetDevice(int* device) {
  *device = 0;
  return kSuccess;
}

FAKE_API int cuDeviceGet(int* device, int ordinal) {
  if (ordinal != 0) return kErrorInvalidValue;
  *device = 0;
  return kSuccess;
}

FAKE_API int cuDeviceGetName(char* name, int length, int /*device*/) {
  if (length <= 0) return kErrorInvalidValue;
  std::strncpy(name, "Fake bench GPU", static_cast<size_t>(length) - 1);
  name[length - 1] = '\0';
  return kSuccess;
}

FAKE_API int cuDeviceTotalMem_v2(size_t* bytes, int /*device*/) {
  *bytes = size_t{16} << 30;
  return kSuccess;
}

FAKE_API int cuGetErrorName(int error, const char** name) {
  *name = error == kSuccess ? "CUDA_SUCCESS" : "CUDA_ERROR_INVALID_VALUE";
  return kSuccess;
}
