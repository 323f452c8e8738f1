// Asks CUDA about pointers: address ranges, pointer attributes and IPC
// handles, for a block's start, an interior byte, its last byte and one byte
// past it. Prints results and values as offsets from the block's start (never
// pointers), so a test can check that the tool shows the user's view and
// returns CUDA's codes.
//
//   gmt_guard_query_program MODE     MODE: driver | runtime | attach | meminfo
//
//   attach   managed memory attached to a stream by its start, with length 0
//            and with its whole size (both mean the whole allocation), and
//            with what CUDA refuses: an interior pointer, a part of it
#include <cstdint>
#include <string>

#include "tests/interpose/programs/program_util.h"

namespace {

constexpr size_t kBytes = 1000;

// An offset from `base`, signed, for printing.
long long Offset(uint64_t value, uint64_t base) {
  return static_cast<long long>(value - base);
}

}  // namespace

NOINLINE void AddressRanges(CUdeviceptr d) {
  struct Case {
    const char* which;
    size_t offset;
  };
  for (Case c : {Case{"start", 0}, Case{"interior", 10},
                 Case{"last", kBytes - 1}, Case{"past", kBytes}}) {
    CUdeviceptr base = 0;
    size_t size = 0;
    std::string what = std::string("cuMemGetAddressRange ") + c.which;
    if (Cu(what.c_str(), cuMemGetAddressRange(&base, &size, d + c.offset)) ==
        CUDA_SUCCESS) {
      std::printf("  base %+lld size %zu\n", Offset(base, d), size);
    }
  }
  size_t size = 0;
  Cu("cuMemGetAddressRange size only",
     cuMemGetAddressRange(nullptr, &size, d + 5));
  std::printf("  size %zu\n", size);
}

NOINLINE void PointerAttributes(CUdeviceptr d) {
  struct Case {
    const char* which;
    size_t offset;
  };
  for (Case c : {Case{"interior", 10}, Case{"past", kBytes}}) {
    CUdeviceptr start = 0;
    size_t size = 0;
    CUdeviceptr device_pointer = 0;
    unsigned int type = 0;
    std::string what = std::string("cuPointerGetAttribute ") + c.which;
    if (Cu((what + " RANGE_START_ADDR").c_str(),
           cuPointerGetAttribute(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
                                 d + c.offset)) == CUDA_SUCCESS) {
      std::printf("  start %+lld\n", Offset(start, d));
    }
    if (Cu((what + " RANGE_SIZE").c_str(),
           cuPointerGetAttribute(&size, CU_POINTER_ATTRIBUTE_RANGE_SIZE,
                                 d + c.offset)) == CUDA_SUCCESS) {
      std::printf("  size %zu\n", size);
    }
    if (Cu((what + " DEVICE_POINTER").c_str(),
           cuPointerGetAttribute(&device_pointer,
                                 CU_POINTER_ATTRIBUTE_DEVICE_POINTER,
                                 d + c.offset)) == CUDA_SUCCESS) {
      std::printf("  device pointer %+lld\n", Offset(device_pointer, d));
    }
    if (Cu((what + " MEMORY_TYPE").c_str(),
           cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                 d + c.offset)) == CUDA_SUCCESS) {
      std::printf("  type %u\n", type);
    }

    CUpointer_attribute attributes[] = {CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
                                        CU_POINTER_ATTRIBUTE_RANGE_SIZE,
                                        CU_POINTER_ATTRIBUTE_MEMORY_TYPE};
    start = 1;
    size = 1;
    type = 99;
    void* data[] = {&start, &size, &type};
    what = std::string("cuPointerGetAttributes ") + c.which;
    if (Cu(what.c_str(),
           cuPointerGetAttributes(3, attributes, data, d + c.offset)) ==
        CUDA_SUCCESS) {
      std::printf("  start %+lld size %zu type %u\n",
                  start == 0 ? 0LL : Offset(start, d), size, type);
    }
  }
}

NOINLINE void DriverIpc(CUdeviceptr d) {
  // An interior address first: CUDA exports the whole allocation for it, so
  // the first export of a block need not name its start.
  for (size_t offset : {size_t{16}, size_t{0}}) {
    CUipcMemHandle handle{};
    std::string what = "cuIpcGetMemHandle +" + std::to_string(offset);
    if (Cu(what.c_str(), cuIpcGetMemHandle(&handle, d + offset)) !=
        CUDA_SUCCESS) {
      continue;
    }
    CUdeviceptr mapped = 0;
    if (Cu("cuIpcOpenMemHandle",
           cuIpcOpenMemHandle(&mapped, handle,
                              CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS)) ==
        CUDA_SUCCESS) {
      std::printf("  mapped %+lld\n", Offset(mapped, d));
      CUdeviceptr base = 0;
      size_t size = 0;
      if (Cu("cuMemGetAddressRange mapped",
             cuMemGetAddressRange(&base, &size, mapped)) == CUDA_SUCCESS) {
        std::printf("  base %+lld size %zu\n", Offset(base, mapped), size);
      }
      Cu("cuIpcCloseMemHandle", cuIpcCloseMemHandle(mapped));
      Cu("cuIpcCloseMemHandle again", cuIpcCloseMemHandle(mapped));
    }
  }
  CUipcMemHandle handle{};
  Cu("cuIpcGetMemHandle null", cuIpcGetMemHandle(&handle, 0));
  // Just outside the block: no allocation there (under the tool: redzones).
  Cu("cuIpcGetMemHandle before", cuIpcGetMemHandle(&handle, d - 8));
  Cu("cuIpcGetMemHandle past", cuIpcGetMemHandle(&handle, d + kBytes + 8));
}

NOINLINE void RuntimeIpc() {
  void* a = nullptr;
  Rt("cudaMalloc", cudaMalloc(&a, 2000));
  const auto base = reinterpret_cast<uintptr_t>(a);
  cudaIpcMemHandle_t handle{};
  if (Rt("cudaIpcGetMemHandle", cudaIpcGetMemHandle(&handle, a)) !=
      cudaSuccess) {
    return;
  }
  void* mapped = nullptr;
  if (Rt("cudaIpcOpenMemHandle",
         cudaIpcOpenMemHandle(&mapped, handle,
                              cudaIpcMemLazyEnablePeerAccess)) == cudaSuccess) {
    std::printf("  mapped %+lld\n",
                Offset(reinterpret_cast<uintptr_t>(mapped), base));
    Rt("cudaIpcCloseMemHandle", cudaIpcCloseMemHandle(mapped));
    Rt("cudaIpcCloseMemHandle again", cudaIpcCloseMemHandle(mapped));
  }
  Rt("cudaIpcGetMemHandle interior",
     cudaIpcGetMemHandle(&handle, static_cast<char*>(a) + 100));
  Rt("cudaIpcOpenMemHandle bad flags",
     cudaIpcOpenMemHandle(&mapped, handle, 77));
  Rt("cudaFree", cudaFree(a));
}

NOINLINE void AttachManaged() {
  void* m = nullptr;
  Rt("cudaMallocManaged", cudaMallocManaged(&m, kBytes, cudaMemAttachGlobal));
  cudaStream_t stream = nullptr;
  Rt("cudaStreamCreate", cudaStreamCreate(&stream));
  Rt("cudaStreamAttachMemAsync start 0",
     cudaStreamAttachMemAsync(stream, m, 0, cudaMemAttachSingle));
  Rt("cudaStreamAttachMemAsync start whole",
     cudaStreamAttachMemAsync(stream, m, kBytes, cudaMemAttachSingle));
  Rt("cudaStreamAttachMemAsync start part",
     cudaStreamAttachMemAsync(stream, m, kBytes / 2, cudaMemAttachSingle));
  Rt("cudaStreamAttachMemAsync interior 0",
     cudaStreamAttachMemAsync(stream, static_cast<char*>(m) + 16, 0,
                              cudaMemAttachSingle));
  Cu("cuStreamAttachMemAsync start 0",
     cuStreamAttachMemAsync(reinterpret_cast<CUstream>(stream),
                            reinterpret_cast<CUdeviceptr>(m), 0,
                            CU_MEM_ATTACH_GLOBAL));
  Rt("cudaStreamSynchronize", cudaStreamSynchronize(stream));
  Rt("cudaStreamDestroy", cudaStreamDestroy(stream));
  Rt("cudaFree", cudaFree(m));
}

// Free memory as the program sees it, in whole MiB: what a 64 MiB block
// takes, and that freeing it gives it all back (under the tool the block
// has redzones, and a freed one is held in quarantine; neither is the
// program's).
NOINLINE void MemInfo() {
  auto free_mib = [](const char* what) {
    size_t free_bytes = 0, total_bytes = 0;
    Rt(what, cudaMemGetInfo(&free_bytes, &total_bytes));
    size_t driver_free = 0, driver_total = 0;
    Cu("cuMemGetInfo", cuMemGetInfo(&driver_free, &driver_total));
    if (driver_free != free_bytes || driver_total != total_bytes) {
      std::printf("  runtime and driver disagree\n");
    }
    return static_cast<long long>(free_bytes >> 20);
  };
  const long long before = free_mib("cudaMemGetInfo before");
  void* p = nullptr;
  Rt("cudaMalloc(64 MiB)", cudaMalloc(&p, size_t{64} << 20));
  const long long held = free_mib("cudaMemGetInfo allocated");
  std::printf("  the block takes %lld MiB\n", before - held);
  Rt("cudaFree", cudaFree(p));
  const long long after = free_mib("cudaMemGetInfo freed");
  std::printf("  freeing gave back %lld MiB\n", after - held);
}

// What the device's pool says it holds for the program: two stream-ordered
// blocks, then one freed (under the tool each has redzones, and a freed one
// may be held in quarantine; the pool counts both).
NOINLINE void PoolUsage() {
  cudaMemPool_t pool = nullptr;
  Rt("cudaDeviceGetDefaultMemPool", cudaDeviceGetDefaultMemPool(&pool, 0));
  // The high watermark only while the peak is now: the tool's is exact then
  // (size_query_shims.cc).
  auto used = [&](const char* what, bool with_high) {
    uint64_t current = 0, high = 0;
    Rt(what,
       cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &current));
    uint64_t driver_current = 0;
    Cu("cuMemPoolGetAttribute",
       cuMemPoolGetAttribute(reinterpret_cast<CUmemoryPool>(pool),
                             CU_MEMPOOL_ATTR_USED_MEM_CURRENT,
                             &driver_current));
    Rt("cudaMemPoolGetAttribute high",
       cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemHigh, &high));
    std::printf("  used %llu (driver %llu)",
                static_cast<unsigned long long>(current),
                static_cast<unsigned long long>(driver_current));
    if (with_high) {
      std::printf(", high %llu", static_cast<unsigned long long>(high));
    }
    std::printf("\n");
  };
  void* a = nullptr;
  void* b = nullptr;
  Rt("cudaMallocAsync(1000)", cudaMallocAsync(&a, 1000, nullptr));
  Rt("cudaMallocAsync(300000)", cudaMallocAsync(&b, 300000, nullptr));
  used("cudaMemPoolGetAttribute two blocks", true);
  Rt("cudaFreeAsync", cudaFreeAsync(b, nullptr));
  Rt("cudaStreamSynchronize", cudaStreamSynchronize(nullptr));
  used("cudaMemPoolGetAttribute one freed", false);
  Rt("cudaFreeAsync", cudaFreeAsync(a, nullptr));
  Rt("cudaStreamSynchronize", cudaStreamSynchronize(nullptr));
  // cudaFree of stream-ordered memory is legal once ordered; CUDA goes on
  // counting such a block as used (measured), and so would its redzones.
  void* c = nullptr;
  Rt("cudaMallocAsync(4096)", cudaMallocAsync(&c, 4096, nullptr));
  Rt("cudaStreamSynchronize", cudaStreamSynchronize(nullptr));
  Rt("cudaFree(stream-ordered)", cudaFree(c));
  used("cudaMemPoolGetAttribute after cudaFree", false);
}

int main(int argc, char** argv) {
  std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "driver") {
    if (!DriverSetup(0)) return 1;
    CUdeviceptr d = 0;
    Cu("cuMemAlloc", cuMemAlloc(&d, kBytes));
    AddressRanges(d);
    PointerAttributes(d);
    DriverIpc(d);
    Cu("cuMemFree", cuMemFree(d));
  } else if (mode == "runtime") {
    RuntimeIpc();
  } else if (mode == "attach") {
    AttachManaged();
  } else if (mode == "meminfo") {
    MemInfo();
  } else if (mode == "pool") {
    PoolUsage();
  } else {
    std::fprintf(stderr, "unknown mode '%s'\n", mode.c_str());
    return 2;
  }
  std::printf("done\n");
  return 0;
}
