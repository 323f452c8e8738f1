// Fake driver: device, managed, stream-ordered, pinned and registered host
// memory, CUDA arrays, and the copies that check them.
//
// Device memory is host memory: aligned_alloc(256, round_up(bytes, 256)), so a
// test program can read and write it. Every block sits in a table keyed by its
// base address; frees look the pointer up there, so a pointer the table does
// not hold as a base (unknown, interior, already freed, or from another table)
// returns CUDA_ERROR_INVALID_VALUE, as the real driver does.
#include <cupti_driver_cbid.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <vector>

#include "tests/fake_cuda/fake_cupti_emit.h"
#include "tests/fake_cuda/fake_driver.h"

namespace fake_cuda {
namespace {

enum class Kind { kDevice, kManaged, kPinned, kArray };

struct Block {
  size_t bytes = 0;     // what the program asked for
  size_t reserved = 0;  // what is charged to the device
  Kind kind = Kind::kDevice;
  int device = 0;
  const Context* ctx = nullptr;
  void* memory = nullptr;  // arrays: the backing store behind the handle
  bool graph = false;      // a graph alloc node's: the backing stays
  bool pool = false;       // stream-ordered: from a memory pool
  bool imported = false;   // cuMemPoolImportPointer's, of an imported pool
  // CU_POINTER_ATTRIBUTE_BUFFER_ID: process-wide unique, from 1, one per
  // allocation (a later one at the same address gets a new one).
  uint64_t buffer_id = 0;
};
std::atomic<uint64_t> g_next_buffer_id{0};

// A default memory pool; CUmemoryPool values are pointers to these.
struct Pool {
  int device;
  uint64_t used_high = 0;  // USED_MEM_HIGH (T().mu)
  // Bytes of the device's live pool blocks, kept as they come and go: a
  // sum over every block per allocation made a quarantine of tens of
  // thousands of blocks cost the double ~100 us per cuMemAllocAsync. (T().mu)
  uint64_t live_bytes = 0;
  // Bytes of pool blocks freed with cuMemFree (not cuMemFreeAsync): CUDA
  // goes on counting them in USED_MEM_CURRENT for good (measured on the
  // H200, driver 580: through later frees, syncs and trims). (T().mu)
  uint64_t freed_synchronously = 0;
  // Bytes freed with cuMemFreeAsync that the pool keeps reserved until a
  // trim (cuMemPoolTrimTo) or a later allocation takes them. (T().mu)
  uint64_t freed_reserved = 0;
};
Pool g_pools[kDeviceCount] = {{0}, {1}};

struct Tables {
  std::mutex mu;
  std::map<uintptr_t, Block> device;       // kDevice, kManaged
  std::map<uintptr_t, Block> pinned;       // kPinned
  std::map<uintptr_t, Block> arrays;       // kArray, keyed by handle
  std::map<uintptr_t, size_t> registered;  // cuMemHostRegister ranges
  size_t in_use[kDeviceCount] = {};
};

// Leaked on purpose: programs may free memory from static destructors.
Tables& T() {
  static Tables* const tables = new Tables();
  return *tables;
}

// The block of `table` that contains `address`, or end().
std::map<uintptr_t, Block>::iterator Containing(
    std::map<uintptr_t, Block>& table, uintptr_t address) {
  auto it = table.upper_bound(address);
  if (it == table.begin()) return table.end();
  --it;
  size_t extent = it->second.bytes == 0 ? 1 : it->second.bytes;
  return address - it->first < extent ? it : table.end();
}

// Charges `bytes` to `device` under T().mu; false when it does not fit.
bool ChargeLocked(int device, size_t bytes) {
  Tables& t = T();
  // Written so that a huge request cannot wrap the sum past the capacity.
  if (bytes > kDeviceBytes - t.in_use[device]) return false;
  t.in_use[device] += bytes;
  return true;
}

// Allocates a device or managed block in the current context (or, for pools,
// on `device` >= 0).
CUresult AllocDevice(CUdeviceptr* dptr, size_t bytes, Kind kind,
                     int device = -1, bool async = false) {
  Context* ctx = nullptr;
  if (CUresult r = RequireContext(&ctx); r != CUDA_SUCCESS) return r;
  if (dptr == nullptr || bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  const Context* owner = ctx;
  if (device < 0) {
    device = ctx->device;
  } else if (device != ctx->device) {
    owner = PrimaryContext(device);
  }
  // Out of memory leaves the pointer null, as CUDA does (measured on the
  // H200 through cudaMalloc).
  *dptr = 0;
  if (InjectAllocationFailure()) return CUDA_ERROR_OUT_OF_MEMORY;
  const size_t reserved = kind == Kind::kDevice && !async
                              ? DeviceFootprint(bytes)
                              : RoundUp(bytes, kAlignment);
  {
    std::lock_guard<std::mutex> lock(T().mu);
    if (!ChargeLocked(device, reserved)) return CUDA_ERROR_OUT_OF_MEMORY;
  }
  // One more unit of host memory than is charged: on a real device a small
  // block lies inside a mapped 2 MiB page, so a program's overrun just past
  // its end (the bug the guard zones are there to catch) writes memory
  // without faulting. The double must allow the same, or a run without
  // redzones corrupts the host heap (ASan reported it in cupti_program).
  // A cudaMalloc / cuMemAlloc block over 1 MiB is mapped in 2 MiB pages of
  // its own and starts on one (so on a host page too: a dma-buf of its start
  // is accepted); smaller ones share pages. A pool block over 1 MiB starts
  // on a 64 KiB page (measured on the H100: a 4 MiB cudaMallocAsync block).
  const size_t align = kind != Kind::kDevice || bytes <= (1u << 20) ? kAlignment
                       : async ? kPoolLargeBlockAlignment
                               : kLargeBlockAlignment;
  void* p = std::aligned_alloc(
      align, RoundUp(RoundUp(bytes, kAlignment) + kAlignment, align));
  std::lock_guard<std::mutex> lock(T().mu);
  if (p == nullptr) {
    T().in_use[device] -= reserved;
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  Block& block = T().device[reinterpret_cast<uintptr_t>(p)];
  block = Block{bytes, reserved, kind, device, owner, nullptr};
  block.pool = async;
  block.buffer_id = ++g_next_buffer_id;
  if (async) {
    Pool& pool = g_pools[device];
    pool.live_bytes += bytes;
    pool.used_high = std::max(pool.used_high, pool.live_bytes);
    pool.freed_reserved -= std::min<uint64_t>(pool.freed_reserved, bytes);
  }
  *dptr = reinterpret_cast<CUdeviceptr>(p);
  // CUPTI's memory record of it.
  FakeMemoryRecord record;
  record.address = *dptr;
  record.bytes = bytes;
  record.device = device;
  record.async = async;
  record.pool = async;
  record.managed = kind == Kind::kManaged;
  EmitMemoryActivity(record);
  return CUDA_SUCCESS;
}

CUresult FreeDevice(CUdeviceptr dptr, bool async = false) {
  if (!Initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (dptr == 0) return CUDA_SUCCESS;
  void* memory = nullptr;
  FakeMemoryRecord record;
  record.alloc = false;
  record.address = dptr;
  record.async = async;
  {
    Tables& t = T();
    std::lock_guard<std::mutex> lock(t.mu);
    auto it = t.device.find(static_cast<uintptr_t>(dptr));
    if (it == t.device.end()) return CUDA_ERROR_INVALID_VALUE;
    if (it->second.imported &&
        g_activity_emitter.load(std::memory_order_acquire) != nullptr) {
      // CUPTI 13.0's defect, as seen on the H200 (driver 580): with memory
      // records on, freeing a pointer imported from another process's pool
      // faults inside libcupti at address 0x68.
      std::fprintf(stderr,
                   "fake libcupti: freeing an imported pool pointer with "
                   "memory records on: SIGSEGV at 0x68 (as CUPTI 13.0)\n");
      std::raise(SIGSEGV);
    }
    t.in_use[it->second.device] -= it->second.reserved;
    if (it->second.pool) {
      g_pools[it->second.device].live_bytes -= it->second.bytes;
    }
    if (!it->second.graph) memory = reinterpret_cast<void*>(it->first);
    record.bytes = it->second.bytes;
    record.device = it->second.device;
    record.pool = async || it->second.graph;
    record.managed = it->second.kind == Kind::kManaged;
    if (it->second.pool && !async) {
      g_pools[it->second.device].freed_synchronously += it->second.bytes;
    }
    if (it->second.pool && async) {
      g_pools[it->second.device].freed_reserved += it->second.bytes;
    }
    t.device.erase(it);
  }
  std::free(memory);
  EmitMemoryActivity(record);
  return CUDA_SUCCESS;
}

CUresult AllocPinned(void** pp, size_t bytes) {
  Context* ctx = nullptr;
  if (CUresult r = RequireContext(&ctx); r != CUDA_SUCCESS) return r;
  if (pp == nullptr || bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  if (InjectAllocationFailure()) return CUDA_ERROR_OUT_OF_MEMORY;
  size_t reserved = RoundUp(bytes, kAlignment);
  // RoundUp saturates: SIZE_MAX is no multiple of the alignment, which
  // aligned_alloc may not be given (ASan aborts on it).
  if (reserved == SIZE_MAX) return CUDA_ERROR_OUT_OF_MEMORY;
  void* p = std::aligned_alloc(kAlignment, reserved);
  if (p == nullptr) return CUDA_ERROR_OUT_OF_MEMORY;
  std::lock_guard<std::mutex> lock(T().mu);
  T().pinned[reinterpret_cast<uintptr_t>(p)] =
      Block{bytes, reserved, Kind::kPinned, ctx->device, ctx, nullptr};
  *pp = p;
  return CUDA_SUCCESS;
}

size_t FormatBytes(CUarray_format format) {
  switch (format) {
    case CU_AD_FORMAT_UNSIGNED_INT8:
    case CU_AD_FORMAT_SIGNED_INT8:
      return 1;
    case CU_AD_FORMAT_UNSIGNED_INT16:
    case CU_AD_FORMAT_SIGNED_INT16:
    case CU_AD_FORMAT_HALF:
      return 2;
    case CU_AD_FORMAT_UNSIGNED_INT32:
    case CU_AD_FORMAT_SIGNED_INT32:
    case CU_AD_FORMAT_FLOAT:
      return 4;
    default:
      return 0;
  }
}

// OK when [address, address + bytes) is host memory the driver does not know
// (pageable, under unified addressing) or lies inside one known block /
// mapping. `need_device`: pageable host memory is not acceptable (memset).
CUresult CheckRange(uintptr_t address, size_t bytes, bool need_device) {
  Tables& t = T();
  for (auto* table : {&t.device, &t.pinned}) {
    auto it = Containing(*table, address);
    if (it != table->end()) {
      return address + bytes <= it->first + it->second.bytes
                 ? CUDA_SUCCESS
                 : CUDA_ERROR_INVALID_VALUE;
    }
  }
  uintptr_t base = 0;
  size_t size = 0;
  switch (CheckVmmRange(address, bytes, &base, &size)) {
    case VmmRange::kMapped:
      return CUDA_SUCCESS;
    case VmmRange::kUnmapped:
      return CUDA_ERROR_INVALID_VALUE;
    case VmmRange::kNotVmm:
      break;
  }
  return need_device ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}

}  // namespace

void FreeContextMemory(const Context* ctx) {
  // The GPU finishes queued work before a context's memory goes.
  RunDeferredChecks();
  std::vector<void*> to_free;
  {
    Tables& t = T();
    std::lock_guard<std::mutex> lock(t.mu);
    for (auto* table : {&t.device, &t.pinned, &t.arrays}) {
      for (auto it = table->begin(); it != table->end();) {
        if (it->second.ctx != ctx) {
          ++it;
          continue;
        }
        if (it->second.kind != Kind::kPinned) {
          t.in_use[it->second.device] -= it->second.reserved;
        }
        if (!it->second.graph) {
          to_free.push_back(it->second.kind == Kind::kArray
                                ? it->second.memory
                                : reinterpret_cast<void*>(it->first));
        }
        if (it->second.kind == Kind::kArray) {
          delete reinterpret_cast<char*>(it->first);
        }
        if (table == &t.device && it->second.pool) {
          g_pools[it->second.device].live_bytes -= it->second.bytes;
        }
        it = table->erase(it);
      }
    }
  }
  for (void* p : to_free) std::free(p);
}

CUresult MakeGraphBacking(size_t bytes, CUdeviceptr* dptr) {
  if (dptr == nullptr || bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  if (RoundUp(bytes, kAlignment) == SIZE_MAX) return CUDA_ERROR_OUT_OF_MEMORY;
  void* p = std::aligned_alloc(kAlignment, RoundUp(bytes, kAlignment));
  if (p == nullptr) return CUDA_ERROR_OUT_OF_MEMORY;
  *dptr = reinterpret_cast<CUdeviceptr>(p);
  return CUDA_SUCCESS;
}

bool MapGraphBlock(CUdeviceptr dptr, size_t bytes, int device,
                   const Context* ctx) {
  {
    std::lock_guard<std::mutex> lock(T().mu);
    auto [it, inserted] = T().device.try_emplace(static_cast<uintptr_t>(dptr));
    if (!inserted) return false;
    const size_t reserved = RoundUp(bytes, kAlignment);
    it->second = Block{bytes, reserved, Kind::kDevice, device, ctx, nullptr};
    it->second.graph = true;
    T().in_use[device] += reserved;
  }
  FakeMemoryRecord record;
  record.address = dptr;
  record.bytes = bytes;
  record.device = device;
  record.async = true;
  record.pool = true;
  EmitMemoryActivity(record);
  return true;
}

bool UnmapGraphBlock(CUdeviceptr dptr) {
  {
    std::lock_guard<std::mutex> lock(T().mu);
    if (!T().device.contains(static_cast<uintptr_t>(dptr))) return false;
  }
  return FreeDevice(dptr, /*async=*/true) == CUDA_SUCCESS;
}

CUresult CheckMemoryRange(uintptr_t address, size_t bytes, bool need_device) {
  std::lock_guard<std::mutex> lock(T().mu);
  return CheckRange(address, bytes, need_device);
}

CUresult CheckManagedRange(uintptr_t address, size_t bytes) {
  std::lock_guard<std::mutex> lock(T().mu);
  auto it = Containing(T().device, address);
  if (bytes == 0 || it == T().device.end() ||
      it->second.kind != Kind::kManaged ||
      address + bytes > it->first + it->second.bytes ||
      address + bytes < address) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

CUresult CheckDmaBufRange(uintptr_t address, size_t bytes) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  std::lock_guard<std::mutex> lock(T().mu);
  auto it = Containing(T().device, address);
  if (bytes == 0 || address % page != 0 || bytes % page != 0 ||
      it == T().device.end() || it->second.kind != Kind::kDevice ||
      address + bytes < address) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  // CUDA exports any page it mapped for the block: a cudaMalloc /
  // cuMemAlloc block over 1 MiB has whole 2 MiB pages of its own, so a range
  // may run past its last byte to the end of its last page (measured on the
  // H200); a smaller block shares its pages, so only its own bytes.
  const Block& block = it->second;
  // A pool block only from its own start (measured on the H100, driver
  // 580: a 4 MiB cudaMallocAsync block's first half and whole succeed, an
  // interior page and its last half do not).
  if (block.pool && address != it->first) return CUDA_ERROR_INVALID_VALUE;
  const size_t mapped = !block.pool && block.bytes > (size_t{1} << 20)
                            ? DeviceFootprint(block.bytes)
                            : block.bytes;
  if (address + bytes > it->first + mapped) return CUDA_ERROR_INVALID_VALUE;
  return CUDA_SUCCESS;
}

void DiscardManagedRange(uintptr_t address, size_t bytes) {
  constexpr uintptr_t kPage = 4096;
  std::lock_guard<std::mutex> lock(T().mu);
  auto it = Containing(T().device, address);
  if (it == T().device.end()) return;
  const uintptr_t base = it->first;
  const uintptr_t end = base + it->second.bytes;
  const uintptr_t first = std::max(base, address / kPage * kPage);
  const uintptr_t last =
      std::min(end, (address + bytes + kPage - 1) / kPage * kPage);
  if (last > first) {
    std::memset(reinterpret_cast<void*>(first), 0xdd, last - first);
  }
}

bool KnownBlockAddress(uintptr_t address) {
  std::lock_guard<std::mutex> lock(T().mu);
  return Containing(T().device, address) != T().device.end();
}

bool ArrayMemory(CUarray array, void** memory, size_t* bytes) {
  std::lock_guard<std::mutex> lock(T().mu);
  auto it = T().arrays.find(reinterpret_cast<uintptr_t>(array));
  if (it == T().arrays.end()) return false;
  *memory = it->second.memory;
  *bytes = it->second.bytes;
  return true;
}

bool IpcExportable(uintptr_t address) {
  std::lock_guard<std::mutex> lock(T().mu);
  auto it = Containing(T().device, address);
  return it != T().device.end() && it->second.kind == Kind::kDevice &&
         !it->second.pool && !it->second.graph;
}

size_t DeviceBytesInUse(int device) {
  std::lock_guard<std::mutex> lock(T().mu);
  return T().in_use[device];
}

bool ChargeDevice(int device, size_t bytes) {
  std::lock_guard<std::mutex> lock(T().mu);
  return ChargeLocked(device, bytes);
}

void UnchargeDevice(int device, size_t bytes) {
  std::lock_guard<std::mutex> lock(T().mu);
  T().in_use[device] -= bytes;
}

}  // namespace fake_cuda

using fake_cuda::Kind;

// ---- Device and managed memory ----------------------------------------------

FAKE_CU_API(cuMemAlloc_v2, (CUdeviceptr * dptr, size_t bytes)) {
  const struct {
    CUdeviceptr* dptr;
    size_t bytes;
  } params{dptr, bytes};
  return fake_cuda::WithCuptiCallbacks(
      CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, "cuMemAlloc_v2", &params, nullptr,
      [&] { return fake_cuda::AllocDevice(dptr, bytes, Kind::kDevice); });
}

// pitch = round_up(width, 512); the block is pitch * height bytes.
FAKE_CU_API(cuMemAllocPitch_v2,
            (CUdeviceptr * dptr, size_t* pitch, size_t width, size_t height,
             unsigned int element_bytes)) {
  if (pitch == nullptr || width == 0 || height == 0 ||
      (element_bytes != 4 && element_bytes != 8 && element_bytes != 16)) {
    return fake_cuda::Initialized() ? CUDA_ERROR_INVALID_VALUE
                                    : CUDA_ERROR_NOT_INITIALIZED;
  }
  // A block past what the device can address is refused as a bad shape, not
  // out of memory (measured: width SIZE_MAX, or height 2^50 rows of 1 MiB).
  size_t row = fake_cuda::RoundUp(width, fake_cuda::kPitchAlignment);
  size_t bytes = 0;
  if (row == SIZE_MAX || __builtin_mul_overflow(row, height, &bytes)) {
    return fake_cuda::Initialized() ? CUDA_ERROR_INVALID_VALUE
                                    : CUDA_ERROR_NOT_INITIALIZED;
  }
  CUresult r = fake_cuda::AllocDevice(dptr, bytes, Kind::kDevice);
  if (r == CUDA_SUCCESS) *pitch = row;
  return r;
}

FAKE_CU_API(cuMemAllocManaged,
            (CUdeviceptr * dptr, size_t bytes, unsigned int flags)) {
  if (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST) {
    return fake_cuda::Initialized() ? CUDA_ERROR_INVALID_VALUE
                                    : CUDA_ERROR_NOT_INITIALIZED;
  }
  return fake_cuda::AllocDevice(dptr, bytes, Kind::kManaged);
}

// Attaching managed memory to a stream: as CUDA documents it, `dptr` must be
// a managed allocation's start and `length` zero or its whole size (no part
// of one can be attached). The double runs all work at once, so the
// association itself changes nothing it does.
namespace {
CUresult AttachManaged(CUstream stream, CUdeviceptr dptr, size_t length,
                       unsigned int flags) {
  if (!fake_cuda::Initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (!fake_cuda::IsValidStream(stream)) return CUDA_ERROR_INVALID_HANDLE;
  if (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST &&
      flags != CU_MEM_ATTACH_SINGLE) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  fake_cuda::Tables& t = fake_cuda::T();
  std::lock_guard<std::mutex> lock(t.mu);
  auto it = t.device.find(static_cast<uintptr_t>(dptr));
  if (it == t.device.end() || it->second.kind != Kind::kManaged) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (length != 0 && length != it->second.bytes) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}
}  // namespace

FAKE_CU_API(cuStreamAttachMemAsync, (CUstream stream, CUdeviceptr dptr,
                                     size_t length, unsigned int flags)) {
  return AttachManaged(stream, dptr, length, flags);
}

FAKE_CU_API(cuStreamAttachMemAsync_ptsz, (CUstream stream, CUdeviceptr dptr,
                                          size_t length, unsigned int flags)) {
  return AttachManaged(stream, dptr, length, flags);
}

FAKE_CU_API(cuMemFree_v2, (CUdeviceptr dptr)) {
  return fake_cuda::WithCuptiCallbacks(
      CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2, "cuMemFree_v2", &dptr, nullptr,
      [&] { return fake_cuda::FreeDevice(dptr); });
}

// ---- Stream-ordered allocation
// ------------------------------------------------ The fake has no streams: the
// memory is usable at once and freed at once.

namespace {

// On a capturing stream the allocation is a node of the
// graph being captured; its memory exists at each launch of that graph.
CUresult AllocAsync(CUdeviceptr* dptr, size_t bytes, CUstream stream,
                    int device = -1) {
  if (CUgraph graph = fake_cuda::CaptureGraphOf(stream)) {
    fake_cuda::Context* ctx = nullptr;
    if (CUresult r = fake_cuda::RequireContext(&ctx); r != CUDA_SUCCESS) {
      return r;
    }
    return fake_cuda::CaptureAllocNode(
        graph, bytes, device >= 0 ? device : ctx->device, dptr);
  }
  return fake_cuda::AllocDevice(dptr, bytes, Kind::kDevice, device,
                                /*async=*/true);
}

CUresult FreeAsync(CUdeviceptr dptr, CUstream stream) {
  if (CUgraph graph = fake_cuda::CaptureGraphOf(stream)) {
    return fake_cuda::CaptureFreeNode(graph, dptr);
  }
  return fake_cuda::FreeDevice(dptr, /*async=*/true);
}

struct AllocAsyncParams {
  CUdeviceptr* dptr;
  size_t bytes;
  CUstream stream;
};
struct FreeAsyncParams {
  CUdeviceptr dptr;
  CUstream stream;
};

}  // namespace

FAKE_CU_API(cuMemAllocAsync,
            (CUdeviceptr * dptr, size_t bytes, CUstream stream)) {
  const AllocAsyncParams params{dptr, bytes, stream};
  return fake_cuda::WithCuptiCallbacks(
      CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync, "cuMemAllocAsync", &params,
      nullptr, [&] { return AllocAsync(dptr, bytes, stream); });
}

FAKE_CU_API(cuMemAllocAsync_ptsz,
            (CUdeviceptr * dptr, size_t bytes, CUstream stream)) {
  const AllocAsyncParams params{dptr, bytes, stream};
  return fake_cuda::WithCuptiCallbacks(
      CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync_ptsz, "cuMemAllocAsync_ptsz",
      &params, nullptr, [&] { return AllocAsync(dptr, bytes, stream); });
}

// Tests only: a stream-ordered allocation through a path no
// hook and no API callback sees (as a call the tool cannot reach would be);
// only CUPTI's memory records tell of it.
extern "C" __attribute__((visibility("default"))) CUresult
fake_cuda_hidden_alloc_async(CUdeviceptr* dptr, size_t bytes) {
  return AllocAsync(dptr, bytes, nullptr);
}

FAKE_CU_API(cuDeviceGetDefaultMemPool, (CUmemoryPool * pool, CUdevice dev)) {
  if (!fake_cuda::Initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (pool == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (dev < 0 || dev >= fake_cuda::kDeviceCount) {
    return CUDA_ERROR_INVALID_DEVICE;
  }
  *pool = reinterpret_cast<CUmemoryPool>(&fake_cuda::g_pools[dev]);
  return CUDA_SUCCESS;
}

namespace {

CUresult AllocFromPool(CUdeviceptr* dptr, size_t bytes, CUmemoryPool pool,
                       CUstream stream) {
  for (fake_cuda::Pool& p : fake_cuda::g_pools) {
    if (reinterpret_cast<CUmemoryPool>(&p) == pool) {
      return AllocAsync(dptr, bytes, stream, p.device);
    }
  }
  return fake_cuda::Initialized() ? CUDA_ERROR_INVALID_VALUE
                                  : CUDA_ERROR_NOT_INITIALIZED;
}

}  // namespace

FAKE_CU_API(cuMemAllocFromPoolAsync, (CUdeviceptr * dptr, size_t bytes,
                                      CUmemoryPool pool, CUstream stream)) {
  return AllocFromPool(dptr, bytes, pool, stream);
}

FAKE_CU_API(cuMemAllocFromPoolAsync_ptsz,
            (CUdeviceptr * dptr, size_t bytes, CUmemoryPool pool,
             CUstream stream)) {
  return AllocFromPool(dptr, bytes, pool, stream);
}

FAKE_CU_API(cuMemFreeAsync, (CUdeviceptr dptr, CUstream stream)) {
  const FreeAsyncParams params{dptr, stream};
  return fake_cuda::WithCuptiCallbacks(CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync,
                                       "cuMemFreeAsync", &params, nullptr,
                                       [&] { return FreeAsync(dptr, stream); });
}

FAKE_CU_API(cuMemFreeAsync_ptsz, (CUdeviceptr dptr, CUstream stream)) {
  const FreeAsyncParams params{dptr, stream};
  return fake_cuda::WithCuptiCallbacks(
      CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync_ptsz, "cuMemFreeAsync_ptsz",
      &params, nullptr, [&] { return FreeAsync(dptr, stream); });
}

// ---- Pinned and registered host memory
// ----------------------------------------

FAKE_CU_API(cuMemHostAlloc, (void** pp, size_t bytes, unsigned int flags)) {
  constexpr unsigned int kKnown = CU_MEMHOSTALLOC_PORTABLE |
                                  CU_MEMHOSTALLOC_DEVICEMAP |
                                  CU_MEMHOSTALLOC_WRITECOMBINED;
  if ((flags & ~kKnown) != 0) {
    return fake_cuda::Initialized() ? CUDA_ERROR_INVALID_VALUE
                                    : CUDA_ERROR_NOT_INITIALIZED;
  }
  return fake_cuda::AllocPinned(pp, bytes);
}

// Under unified addressing a pinned block's device address is its host
// address. CUDA refuses flags other than 0 and memory it did not pin.
FAKE_CU_API(cuMemHostGetDevicePointer_v2,
            (CUdeviceptr * pdptr, void* p, unsigned int flags)) {
  fake_cuda::Context* ctx = nullptr;
  if (CUresult r = fake_cuda::RequireContext(&ctx); r != CUDA_SUCCESS) return r;
  if (pdptr == nullptr || p == nullptr || flags != 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  fake_cuda::Tables& t = fake_cuda::T();
  std::lock_guard<std::mutex> lock(t.mu);
  if (fake_cuda::Containing(t.pinned, reinterpret_cast<uintptr_t>(p)) ==
      t.pinned.end()) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  *pdptr = reinterpret_cast<CUdeviceptr>(p);
  return CUDA_SUCCESS;
}

FAKE_CU_API(cuMemAllocHost_v2, (void** pp, size_t bytes)) {
  return fake_cuda::AllocPinned(pp, bytes);
}

FAKE_CU_API(cuMemFreeHost, (void* p)) {
  if (!fake_cuda::Initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (p == nullptr) return CUDA_SUCCESS;
  {
    fake_cuda::Tables& t = fake_cuda::T();
    std::lock_guard<std::mutex> lock(t.mu);
    if (t.pinned.erase(reinterpret_cast<uintptr_t>(p)) == 0) {
      return CUDA_ERROR_INVALID_VALUE;
    }
  }
  std::free(p);
  return CUDA_SUCCESS;
}

FAKE_CU_API(cuMemHostRegister_v2, (void* p, size_t bytes, unsigned int flags)) {
  fake_cuda::Context* ctx = nullptr;
  if (CUresult r = fake_cuda::RequireContext(&ctx); r != CUDA_SUCCESS) return r;
  (void)flags;
  if (p == nullptr || bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  auto base = reinterpret_cast<uintptr_t>(p);
  fake_cuda::Tables& t = fake_cuda::T();
  std::lock_guard<std::mutex> lock(t.mu);
  auto next = t.registered.lower_bound(base);
  if (next != t.registered.end() && next->first < base + bytes) {
    return CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
  }
  if (next != t.registered.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second > base) {
      return CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
    }
  }
  t.registered[base] = bytes;
  return CUDA_SUCCESS;
}

FAKE_CU_API(cuMemHostUnregister, (void* p)) {
  if (!fake_cuda::Initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  fake_cuda::Tables& t = fake_cuda::T();
  std::lock_guard<std::mutex> lock(t.mu);
  if (t.registered.erase(reinterpret_cast<uintptr_t>(p)) == 0) {
    return CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
  }
  return CUDA_SUCCESS;
}

// ---- CUDA arrays (behind cudaMallocArray)
// -------------------------------------

FAKE_CU_API(cuArrayCreate_v2,
            (CUarray * handle, const CUDA_ARRAY_DESCRIPTOR* desc)) {
  fake_cuda::Context* ctx = nullptr;
  if (CUresult r = fake_cuda::RequireContext(&ctx); r != CUDA_SUCCESS) return r;
  if (handle == nullptr || desc == nullptr || desc->Width == 0 ||
      desc->NumChannels == 0 || fake_cuda::FormatBytes(desc->Format) == 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  size_t bytes = 0;
  if (__builtin_mul_overflow(desc->Width, desc->Height == 0 ? 1 : desc->Height,
                             &bytes) ||
      __builtin_mul_overflow(
          bytes, desc->NumChannels * fake_cuda::FormatBytes(desc->Format),
          &bytes)) {
    return CUDA_ERROR_INVALID_VALUE;  // past any array dimension CUDA allows
  }
  if (fake_cuda::InjectAllocationFailure()) return CUDA_ERROR_OUT_OF_MEMORY;
  size_t reserved = fake_cuda::RoundUp(bytes, fake_cuda::kAlignment);
  if (!fake_cuda::ChargeDevice(ctx->device, reserved)) {
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  void* memory = std::aligned_alloc(fake_cuda::kAlignment, reserved);
  if (memory == nullptr) {
    fake_cuda::UnchargeDevice(ctx->device, reserved);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  auto* token = new char(0);  // a distinct handle value
  fake_cuda::Tables& t = fake_cuda::T();
  std::lock_guard<std::mutex> lock(t.mu);
  t.arrays[reinterpret_cast<uintptr_t>(token)] =
      fake_cuda::Block{bytes, reserved, Kind::kArray, ctx->device, ctx, memory};
  *handle = reinterpret_cast<CUarray>(token);
  return CUDA_SUCCESS;
}

FAKE_CU_API(cuArrayDestroy, (CUarray handle)) {
  if (!fake_cuda::Initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  void* memory = nullptr;
  {
    fake_cuda::Tables& t = fake_cuda::T();
    std::lock_guard<std::mutex> lock(t.mu);
    auto it = t.arrays.find(reinterpret_cast<uintptr_t>(handle));
    if (it == t.arrays.end()) return CUDA_ERROR_INVALID_HANDLE;
    t.in_use[it->second.device] -= it->second.reserved;
    memory = it->second.memory;
    t.arrays.erase(it);
  }
  delete reinterpret_cast<char*>(handle);
  std::free(memory);
  return CUDA_SUCCESS;
}

// ---- Queries and copies
// ---------------------------------------------------------

FAKE_CU_API(cuMemGetInfo_v2, (size_t * free_bytes, size_t* total_bytes)) {
  fake_cuda::Context* ctx = nullptr;
  if (CUresult r = fake_cuda::RequireContext(&ctx); r != CUDA_SUCCESS) return r;
  if (free_bytes == nullptr || total_bytes == nullptr) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  *total_bytes = fake_cuda::kDeviceBytes;
  *free_bytes =
      fake_cuda::kDeviceBytes - fake_cuda::DeviceBytesInUse(ctx->device);
  return CUDA_SUCCESS;
}

// ---- Stream-ordered pools: what they count
// ----------------------------------- USED_MEM_CURRENT is the sum of the sizes
// asked for of the pool's live blocks (measured on the H200: exact, not
// rounded); USED_MEM_HIGH its high watermark, which only 0 resets. Other
// attributes: invalid value (the tests ask for none).

namespace fake_cuda {

bool BufferIdOf(CUdeviceptr address, uint64_t* id) {
  Tables& t = T();
  std::lock_guard<std::mutex> lock(t.mu);
  auto it = Containing(t.device, static_cast<uintptr_t>(address));
  if (it == t.device.end() || it->second.buffer_id == 0) return false;
  *id = it->second.buffer_id;
  return true;
}

// The pool holding the block at `address` (any byte of it), if any.
bool PoolOfAddress(CUdeviceptr address, CUmemoryPool* pool) {
  Tables& t = T();
  std::lock_guard<std::mutex> lock(t.mu);
  auto it = Containing(t.device, static_cast<uintptr_t>(address));
  if (it == t.device.end() || !it->second.pool) return false;
  *pool = reinterpret_cast<CUmemoryPool>(&g_pools[it->second.device]);
  return true;
}

}  // namespace fake_cuda

namespace {

uint64_t PoolUsedLocked(int device) {
  const fake_cuda::Pool& pool = fake_cuda::g_pools[device];
  return pool.freed_synchronously + pool.live_bytes;
}

}  // namespace

FAKE_CU_API(cuMemPoolGetAttribute,
            (CUmemoryPool pool, CUmemPool_attribute attribute, void* value)) {
  if (!fake_cuda::Initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (value == nullptr) return CUDA_ERROR_INVALID_VALUE;
  for (fake_cuda::Pool& p : fake_cuda::g_pools) {
    if (reinterpret_cast<CUmemoryPool>(&p) != pool) continue;
    std::lock_guard<std::mutex> lock(fake_cuda::T().mu);
    const uint64_t used = PoolUsedLocked(p.device);
    p.used_high = std::max(p.used_high, used);
    uint64_t answer = 0;
    switch (attribute) {
      case CU_MEMPOOL_ATTR_USED_MEM_CURRENT:
        answer = used;
        break;
      case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
        answer = p.used_high;
        break;
      case CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT:
        answer = used + p.freed_reserved;
        break;
      default:
        return CUDA_ERROR_INVALID_VALUE;
    }
    std::memcpy(value, &answer, sizeof(answer));
    return CUDA_SUCCESS;
  }
  return CUDA_ERROR_INVALID_VALUE;
}

// USED_MEM_HIGH reset to 0 restarts the watermark from the pool's use now;
// another value, or another attribute, is refused (only that is modeled).
FAKE_CU_API(cuMemPoolSetAttribute,
            (CUmemoryPool pool, CUmemPool_attribute attribute, void* value)) {
  if (!fake_cuda::Initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (value == nullptr || attribute != CU_MEMPOOL_ATTR_USED_MEM_HIGH) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  uint64_t v = 0;
  std::memcpy(&v, value, sizeof(v));
  if (v != 0) return CUDA_ERROR_INVALID_VALUE;
  for (fake_cuda::Pool& p : fake_cuda::g_pools) {
    if (reinterpret_cast<CUmemoryPool>(&p) != pool) continue;
    std::lock_guard<std::mutex> lock(fake_cuda::T().mu);
    p.used_high = PoolUsedLocked(p.device);
    return CUDA_SUCCESS;
  }
  return CUDA_ERROR_INVALID_VALUE;
}

// Gives back freed reserved bytes until the pool holds no more than
// `keep` reserved; live blocks are never released.
FAKE_CU_API(cuMemPoolTrimTo, (CUmemoryPool pool, size_t keep)) {
  if (!fake_cuda::Initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  for (fake_cuda::Pool& p : fake_cuda::g_pools) {
    if (reinterpret_cast<CUmemoryPool>(&p) != pool) continue;
    std::lock_guard<std::mutex> lock(fake_cuda::T().mu);
    const uint64_t used = PoolUsedLocked(p.device);
    p.freed_reserved =
        used >= keep ? 0 : std::min<uint64_t>(p.freed_reserved, keep - used);
    return CUDA_SUCCESS;
  }
  return CUDA_ERROR_INVALID_VALUE;
}

FAKE_CU_API(cuMemGetAddressRange_v2,
            (CUdeviceptr * base, size_t* size, CUdeviceptr dptr)) {
  if (!fake_cuda::Initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  auto address = static_cast<uintptr_t>(dptr);
  uintptr_t found_base = 0;
  size_t found_size = 0;
  {
    fake_cuda::Tables& t = fake_cuda::T();
    std::lock_guard<std::mutex> lock(t.mu);
    auto it = fake_cuda::Containing(t.device, address);
    if (it != t.device.end()) {
      found_base = it->first;
      found_size = it->second.bytes;
    }
  }
  if (found_base == 0 &&
      fake_cuda::CheckVmmRange(address, 1, &found_base, &found_size) !=
          fake_cuda::VmmRange::kMapped) {
    return CUDA_ERROR_NOT_FOUND;
  }
  if (base != nullptr) *base = found_base;
  if (size != nullptr) *size = found_size;
  return CUDA_SUCCESS;
}

// Unified addressing: either side may be host or device memory; a device side
// must lie inside its block.
FAKE_CU_API(cuMemcpy, (CUdeviceptr dst, CUdeviceptr src, size_t bytes)) {
  fake_cuda::Context* ctx = nullptr;
  if (CUresult r = fake_cuda::RequireContext(&ctx); r != CUDA_SUCCESS) return r;
  if (bytes == 0) return CUDA_SUCCESS;
  if (dst == 0 || src == 0) return CUDA_ERROR_INVALID_VALUE;
  {
    std::lock_guard<std::mutex> lock(fake_cuda::T().mu);
    if (fake_cuda::CheckRange(dst, bytes, false) != CUDA_SUCCESS ||
        fake_cuda::CheckRange(src, bytes, false) != CUDA_SUCCESS) {
      return CUDA_ERROR_INVALID_VALUE;
    }
  }
  std::memmove(reinterpret_cast<void*>(dst), reinterpret_cast<void*>(src),
               bytes);
  return CUDA_SUCCESS;
}

FAKE_CU_API(cuMemsetD8_v2, (CUdeviceptr dst, unsigned char value, size_t n)) {
  fake_cuda::Context* ctx = nullptr;
  if (CUresult r = fake_cuda::RequireContext(&ctx); r != CUDA_SUCCESS) return r;
  if (n == 0) return CUDA_SUCCESS;
  {
    std::lock_guard<std::mutex> lock(fake_cuda::T().mu);
    if (fake_cuda::CheckRange(dst, n, true) != CUDA_SUCCESS) {
      return CUDA_ERROR_INVALID_VALUE;
    }
  }
  std::memset(reinterpret_cast<void*>(dst), value, n);
  return CUDA_SUCCESS;
}

// ---- Pools imported from another process
// ---------------------------------- The double has no second process: an
// imported pool is a handle of its own, and cuMemPoolImportPointer makes a
// fresh block of the size the export data names. The double's export data:
// its first 8 bytes hold the block's size (a test program writes them).

namespace {

constexpr int kMaxImportedPools = 8;
fake_cuda::Pool g_imported_pools[kMaxImportedPools] = {};
int g_imported_pool_count = 0;  // guarded by T().mu

bool IsImportedPool(CUmemoryPool pool) {
  for (fake_cuda::Pool& p : g_imported_pools) {
    if (reinterpret_cast<CUmemoryPool>(&p) == pool) return true;
  }
  return false;
}

struct PoolImportParams {
  CUmemoryPool* pool_out;
  void* handle;
  CUmemAllocationHandleType type;
  unsigned long long flags;
};

}  // namespace

// A POSIX descriptor (any open one: the double cannot tell an exported pool's
// from another), no flags.
FAKE_CU_API(cuMemPoolImportFromShareableHandle,
            (CUmemoryPool * pool_out, void* handle,
             CUmemAllocationHandleType type, unsigned long long flags)) {
  PoolImportParams params{pool_out, handle, type, flags};
  return fake_cuda::WithCuptiCallbacks(
      CUPTI_DRIVER_TRACE_CBID_cuMemPoolImportFromShareableHandle,
      "cuMemPoolImportFromShareableHandle", &params, nullptr, [&] {
        fake_cuda::Context* ctx = nullptr;
        if (CUresult r = fake_cuda::RequireContext(&ctx); r != CUDA_SUCCESS) {
          return r;
        }
        const int fd = static_cast<int>(reinterpret_cast<intptr_t>(handle));
        if (pool_out == nullptr || flags != 0 ||
            type != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR || fd < 0 ||
            fcntl(fd, F_GETFD) == -1) {
          return CUDA_ERROR_INVALID_VALUE;
        }
        std::lock_guard<std::mutex> lock(fake_cuda::T().mu);
        if (g_imported_pool_count == kMaxImportedPools) {
          return CUDA_ERROR_OUT_OF_MEMORY;
        }
        fake_cuda::Pool& pool = g_imported_pools[g_imported_pool_count++];
        pool.device = ctx->device;
        *pool_out = reinterpret_cast<CUmemoryPool>(&pool);
        return CUDA_SUCCESS;
      });
}

FAKE_CU_API(cuMemPoolImportPointer, (CUdeviceptr * ptr_out, CUmemoryPool pool,
                                     CUmemPoolPtrExportData* share_data)) {
  if (!fake_cuda::Initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (ptr_out == nullptr || share_data == nullptr || !IsImportedPool(pool)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  uint64_t bytes = 0;
  std::memcpy(&bytes, share_data->reserved, sizeof bytes);
  const int device = reinterpret_cast<fake_cuda::Pool*>(pool)->device;
  CUresult r = fake_cuda::AllocDevice(ptr_out, bytes, Kind::kDevice, device);
  if (r != CUDA_SUCCESS) return r;
  std::lock_guard<std::mutex> lock(fake_cuda::T().mu);
  fake_cuda::T().device[static_cast<uintptr_t>(*ptr_out)].imported = true;
  return CUDA_SUCCESS;
}
