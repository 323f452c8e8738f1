// Internal state of the fake CUDA driver (libcuda.so.1 test double): devices,
// contexts, the memory tables. Shared by the fake_driver_*.cc files only; test
// programs see nothing but the real cuda.h entry points.
//
// The double keeps the real driver's contracts that gpumemtrace depends on:
//   * two devices ("Fake GPU 0", "Fake GPU 1", 16 GiB each);
//   * every call but cuInit/cuDriverGetVersion/cuGetErrorName/String/
//     cuGetProcAddress fails with CUDA_ERROR_NOT_INITIALIZED before cuInit;
//   * one current context per thread, null until cuCtxSetCurrent (a primary
//     retain does NOT make it current, as in the real driver);
//   * device memory is host memory from aligned_alloc(256, round_up(size,
//     256)) (a cuMemAlloc block over 1 MiB on a 2 MiB boundary, as the real
//     driver maps it), kept in a table so that unknown, interior and double
//     frees return CUDA_ERROR_INVALID_VALUE;
//   * memory belongs to the context current at allocation and disappears when
//     that context is destroyed or reset.
#ifndef GMT_TESTS_FAKE_CUDA_FAKE_DRIVER_H_
#define GMT_TESTS_FAKE_CUDA_FAKE_DRIVER_H_

#include <cuda.h>

#include <cstddef>
#include <cstdint>

// Test controls of the per-kernel guard checks (RunDeferredChecks below):
// exported, so a test linked with the double calls them directly.
extern "C" __attribute__((visibility("default"))) void
FakeCudaDeferInlineChecks(int defer);
extern "C" __attribute__((visibility("default"))) void
FakeCudaRunDeferredChecks();
// Inline checks launched so far (run or deferred), for tests that count GPU
// work.
extern "C" __attribute__((visibility("default"))) unsigned long long
FakeCudaInlineCheckLaunches();
// Of those, the ones of gmt_check_zones_inline_small.
extern "C" __attribute__((visibility("default"))) unsigned long long
FakeCudaSmallCheckLaunches();
// Launches of gmt_fill_zones_inline that ran (fills of a program's stream).
extern "C" __attribute__((visibility("default"))) unsigned long long
FakeCudaInlineFillLaunches();
// Launches of gmt_check_fill_zones_inline (a fill with a check riding on
// it); their checks count among FakeCudaInlineCheckLaunches too.
extern "C" __attribute__((visibility("default"))) unsigned long long
FakeCudaCheckFillLaunches();

// Defines an exported driver entry point under its real symbol name. The C++
// name is Fake_<name>, so the macros in cuda.h (cuMemAlloc -> cuMemAlloc_v2,
// cuGetProcAddress -> cuGetProcAddress_v2, ...) cannot rename it:
//
//   FAKE_CU_API(cuMemAlloc_v2, (CUdeviceptr* dptr, size_t bytes)) { ... }
#define FAKE_CU_API(name, params)                   \
  extern "C" __attribute__((visibility("default"))) \
  CUresult Fake_##name params __asm__(#name);       \
  extern "C" CUresult Fake_##name params

namespace fake_cuda {

inline constexpr int kDeviceCount = 2;
inline constexpr size_t kDeviceBytes = size_t{16} << 30;
inline constexpr int kDriverVersion = 13000;
inline constexpr size_t kAlignment = 256;
// Where a cuMemAlloc block over 1 MiB starts: a 2 MiB page of its own.
inline constexpr size_t kLargeBlockAlignment = size_t{2} << 20;
// Where a pool block over 1 MiB starts: a 64 KiB page (measured on the H100).
inline constexpr size_t kPoolLargeBlockAlignment = size_t{64} << 10;
inline constexpr size_t kPitchAlignment = 512;
inline constexpr size_t kVmmGranularity = size_t{2} << 20;
// CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT of both devices.
inline constexpr int kMultiprocessorCount = 4;

// `value` rounded up to a multiple of `to`; SIZE_MAX when that does not fit.
// A size near SIZE_MAX must never wrap to a small block: CUDA answers such
// requests out of memory (cuMemAlloc, cuMemAllocManaged, cuMemAllocAsync,
// cuMemAllocHost of SIZE_MAX; measured on an H200, driver 580).
inline size_t RoundUp(size_t value, size_t to) {
  size_t sum = 0;
  if (__builtin_add_overflow(value, to - 1, &sum)) return SIZE_MAX;
  return sum / to * to;
}

// What a cuMemAlloc block of `bytes` takes from the device's free memory
// (cuMemGetInfo): over 1 MiB, whole 2 MiB pages; smaller blocks share pages
// in 512-byte granules (measured on the H200, driver 580). Pool blocks are
// carved from the pool's reservation instead.
inline size_t DeviceFootprint(size_t bytes) {
  return bytes > (size_t{1} << 20) ? RoundUp(bytes, size_t{2} << 20)
                                   : RoundUp(bytes, 512);
}

// A context: the primary context of a device or one made by cuCtxCreate.
// CUcontext values handed out are pointers to these.
struct Context {
  int device = 0;
  bool primary = false;
  int primary_refcount = 0;  // primary contexts only
};

// True once cuInit succeeded.
bool Initialized();
// The primary context of `device` (0 <= device < kDeviceCount).
Context* PrimaryContext(int device);
// The calling thread's current context, or null.
Context* CurrentContext();
// CUDA_SUCCESS and the current context, or NOT_INITIALIZED / INVALID_CONTEXT.
CUresult RequireContext(Context** ctx);
// Whether `ctx` is the primary context of a device or a live created context.
bool IsLiveContext(CUcontext ctx);

// Per-kernel guard checks (gmt_check_zones_inline) launched while deferral
// is on (FakeCudaDeferInlineChecks, or FAKE_CUDA_DEFER_INLINE_CHECKS=1 in the
// environment) wait in a queue, as work the GPU has not reached yet: they run
// at the next synchronization (context, stream or event), at cuEventQuery
// (time passes while someone polls), when their context is destroyed, and at
// FakeCudaRunDeferredChecks. Launches run at once otherwise.
void RunDeferredChecks();

// Memory owned by `ctx` (device, managed, pinned, arrays) is freed and removed
// from the tables; called on context destruction and primary context reset.
void FreeContextMemory(const Context* ctx);
// Device bytes in use on `device` (for cuMemGetInfo).
size_t DeviceBytesInUse(int device);
// Whether cuIpcGetMemHandle may export the block holding `address`: memory
// from cuMemAlloc / cuMemAllocPitch only. Managed memory and stream-ordered
// (pool) allocations are refused with CUDA_ERROR_INVALID_VALUE by the real
// driver (measured); an interior address of a device block is accepted and
// names the whole block (measured: the same handle as its base).
bool IpcExportable(uintptr_t address);
// The stream-ordered pool holding any byte of a block
// (CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE); false for other memory.
bool PoolOfAddress(CUdeviceptr address, CUmemoryPool* pool);
// CU_POINTER_ATTRIBUTE_BUFFER_ID of the device or managed block holding
// `address`; false for other memory.
bool BufferIdOf(CUdeviceptr address, uint64_t* id);
// Accounts VMM physical memory against a device's capacity. False when the
// device has no room (the caller returns CUDA_ERROR_OUT_OF_MEMORY).
bool ChargeDevice(int device, size_t bytes);
void UnchargeDevice(int device, size_t bytes);

// CUDA_SUCCESS when [address, address + bytes) lies inside one known block
// (device, managed or pinned) or a mapped VMM range; otherwise
// CUDA_ERROR_INVALID_VALUE, unless `need_device` is false and the range is
// no memory the driver knows (pageable host memory under unified addressing).
// For copies, sets and the emulated kernels (fake_driver_memory.cc).
CUresult CheckMemoryRange(uintptr_t address, size_t bytes, bool need_device);

// CUDA_SUCCESS when [address, address + bytes) is a non-empty range inside
// one managed block; else CUDA_ERROR_INVALID_VALUE (measured: advice,
// prefetch and range attributes refuse count 0, a range past the end and
// memory that is not managed).
CUresult CheckManagedRange(uintptr_t address, size_t bytes);
// CUDA_SUCCESS when [address, address + bytes) may be exported as a dma-buf
// (cuMemGetHandleForAddressRange): a non-empty range of whole host pages,
// starting on one, inside one device block; else CUDA_ERROR_INVALID_VALUE
// (measured on the H200: the base + 4096 with a page-multiple size is
// accepted; base + 256, and a range past the end, are refused).
CUresult CheckDmaBufRange(uintptr_t address, size_t bytes);
// A discard: the driver drops whole pages, so every 4 KiB page the range
// touches (within its block) gets indeterminate contents (0xdd here).
void DiscardManagedRange(uintptr_t address, size_t bytes);
// Whether `address` lies in a device or managed block (any byte of it).
bool KnownBlockAddress(uintptr_t address);
// The backing store and size in bytes of a live CUDA array.
bool ArrayMemory(CUarray array, void** memory, size_t* bytes);
// Whether `stream` is a stream handle the double accepts: null, the
// CU_STREAM_LEGACY / CU_STREAM_PER_THREAD handles, or a live created stream
// (fake_driver_streams.cc). The double runs all work at once, in call order.
bool IsValidStream(CUstream stream);

// VMM address ranges (fake_driver_vmm.cc), for copies and address queries.
enum class VmmRange { kNotVmm, kMapped, kUnmapped };
// Whether [address, address + bytes) is inside a reservation and, if so,
// whether it is wholly mapped; *base / *size get the mapping holding `address`.
VmmRange CheckVmmRange(uintptr_t address, size_t bytes, uintptr_t* base,
                       size_t* size);

// Fault injection (FAKE_CUDA_FAIL_ALLOC_AFTER=N, FAKE_CUDA_FAIL_ALLOC_COUNT=K):
// counts one allocation attempt and returns true when this one must fail with
// CUDA_ERROR_OUT_OF_MEMORY. See fake_fault_injection.cc.
bool InjectAllocationFailure();

// ---- Graphs and stream capture (fake_driver_graphs.cc,
// fake_driver_streams.cc, fake_driver_memory.cc) ----
// A graph alloc node's memory is made once, when the node is created (its
// address is fixed for the graph's life), and is a device block of the
// memory table only from a launch until it is freed (by a free node,
// cuMemFree(Async), or an auto-free relaunch). Freeing it never returns the
// backing to the host allocator.
// Makes the backing of an alloc node (not yet a device block).
CUresult MakeGraphBacking(size_t bytes, CUdeviceptr* dptr);
// Enters it in the device table (a launch); false if it is there already.
bool MapGraphBlock(CUdeviceptr dptr, size_t bytes, int device,
                   const Context* ctx);
// Removes it from the device table if there (a free node, auto-free).
bool UnmapGraphBlock(CUdeviceptr dptr);
// The graph `stream` is being captured into, or null.
CUgraph CaptureGraphOf(CUstream stream);
// A new empty graph (cuGraphCreate, and the target of a capture).
CUgraph NewGraph();
// While capturing: cuMemAllocAsync / cuMemFreeAsync become nodes.
CUresult CaptureAllocNode(CUgraph graph, size_t bytes, int device,
                          CUdeviceptr* dptr);
CUresult CaptureFreeNode(CUgraph graph, CUdeviceptr dptr);

// Resolves a driver symbol like cuGetProcAddress_v2 does
// (fake_proc_address.cc).
CUresult LookupProc(const char* symbol, void** pfn, int cuda_version,
                    cuuint64_t flags, CUdriverProcAddressQueryResult* status);

}  // namespace fake_cuda

#endif  // GMT_TESTS_FAKE_CUDA_FAKE_DRIVER_H_
