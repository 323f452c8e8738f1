// A driver-API program whose references to libcuda are bound at link time, as
// the tool sees a program it was injected into (CUDA_INJECTION64_PATH) rather
// than preloaded: only CUPTI callbacks (the fake driver emits them to the fake
// libcupti) tell the tool what it does.
//
//   gmt_cupti_program          the steps below
//   gmt_cupti_program early    a driver table filled before cuInit, as nvcc's
//                              static runtime does: cuMemAlloc_v2 looked up
//                              with dlsym into a global before cuInit; after
//                              it, cuMemAlloc(256) through that pointer in
//                              EarlyTableAlloc, "cupti_named_kernel"
//                              launched, one byte written past the end
//   gmt_cupti_program kernels  check=kernel under injection alone:
//                              the same early table, then
//                              "cupti_first_kernel" launched, one byte
//                              written past the end of the 256 as that
//                              kernel would, then "cupti_named_kernel"
//                              launched, then cuCtxSynchronize: the overrun
//                              belongs to the first kernel alone (the
//                              launches through a pointer dlsym gave after
//                              cuInit: CUPTI callbacks only)
//   gmt_cupti_program bounds   direct libcuda calls: cuMemAlloc(1000)
//                              looked up after cuInit, then cuMemsetD8 of
//                              1000 bytes (CUDA_SUCCESS) and of 1001
//                              (CUDA_ERROR_INVALID_VALUE), cuMemFree
//   gmt_cupti_program pool_import direct|lookup
//                              a pool imported from another process, as
//                              pool_ipc's importer does: an open descriptor
//                              imported (the double takes any), two
//                              4096-byte pointers imported from it, one
//                              written and freed with cuMemFreeAsync, one
//                              freed with cuMemFree; "direct" calls
//                              libcuda's own entry points (CUPTI callbacks
//                              only), "lookup" what cuGetProcAddress hands
//                              out after cuInit, as a runtime does
//
//   1. cuInit (loads the injection), primary context current
//   2. cuMemAlloc(1000) in LeakThroughDriver, never freed
//   3. cuMemAlloc(2000) + cuMemFree in AllocAndFree
//   4. cuMemFree of that pointer again in FreeTwice: CUDA_ERROR_INVALID_VALUE
//   5. cuGetProcAddress_v2("cuMemAlloc") after cuInit, as a runtime that looks
//      the driver up lazily; prints "redirected" when the pointer it got is
//      not libcuda's own cuMemAlloc_v2; through it, cuMemAlloc(512) in
//      OverrunAfterLookup, never freed
//   6. cuLaunchKernel of "cupti_named_kernel" (the fake names a CUfunction by
//      the string it points to), then one byte written past the end of the
//      512 as that kernel would (the fake's device memory is host memory)
#include <dlfcn.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "tests/interpose/programs/program_util.h"

namespace {

const char kKernelName[] = "cupti_named_kernel";

// The early table: one entry, in the executable's .bss.
CUresult (*g_early_mem_alloc)(CUdeviceptr*, size_t) = nullptr;

}  // namespace

NOINLINE void LeakThroughDriver() {
  CUdeviceptr p = 0;
  Cu("cuMemAlloc(1000)", cuMemAlloc(&p, 1000));
}

NOINLINE CUdeviceptr AllocAndFree() {
  CUdeviceptr p = 0;
  Cu("cuMemAlloc(2000)", cuMemAlloc(&p, 2000));
  Cu("cuMemFree", cuMemFree(p));
  return p;
}

NOINLINE void FreeTwice(CUdeviceptr p) { Cu("cuMemFree again", cuMemFree(p)); }

NOINLINE CUdeviceptr OverrunAfterLookup() {
  void* fn = nullptr;
  CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  Cu("cuGetProcAddress(cuMemAlloc)",
     cuGetProcAddress("cuMemAlloc", &fn, 13000, CU_GET_PROC_ADDRESS_DEFAULT,
                      &status));
  void* own =
      dlsym(dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD), "cuMemAlloc_v2");
  std::printf("%s\n", fn != own ? "redirected" : "not redirected");
  auto alloc = reinterpret_cast<CUresult (*)(CUdeviceptr*, size_t)>(fn);
  CUdeviceptr p = 0;
  Cu("looked-up cuMemAlloc(512)", alloc(&p, 512));
  return p;
}

NOINLINE void LaunchNamedKernel() {
  auto f = reinterpret_cast<CUfunction>(const_cast<char*>(kKernelName));
  Cu("cuLaunchKernel",
     cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr, nullptr));
}

NOINLINE CUdeviceptr EarlyTableAlloc() {
  CUdeviceptr p = 0;
  Cu("early-table cuMemAlloc(256)", g_early_mem_alloc(&p, 256));
  return p;
}

int Early() {
  g_early_mem_alloc = reinterpret_cast<CUresult (*)(CUdeviceptr*, size_t)>(
      dlsym(dlopen("libcuda.so.1", RTLD_NOW), "cuMemAlloc_v2"));
  if (g_early_mem_alloc == nullptr || !DriverSetup(0)) return 1;
  void* own =
      dlsym(dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD), "cuMemAlloc_v2");
  std::printf("%s\n", reinterpret_cast<void*>(g_early_mem_alloc) != own
                          ? "redirected"
                          : "not redirected");
  const CUdeviceptr p = EarlyTableAlloc();
  LaunchNamedKernel();
  if (p != 0) reinterpret_cast<unsigned char*>(p)[256] = 0x5a;
  return 0;
}

// Through a pointer dlsym gives after cuInit, as a program that loads the
// driver itself: no slot the injection could redirect holds it, so only the
// launch callbacks see these launches (the path the kernels mode tests).
NOINLINE void LaunchKernelNamed(const char* name) {
  using Launch =
      CUresult (*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                   unsigned, unsigned, CUstream, void**, void**);
  static const auto launch = reinterpret_cast<Launch>(
      dlsym(dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD), "cuLaunchKernel"));
  auto f = reinterpret_cast<CUfunction>(const_cast<char*>(name));
  Cu("cuLaunchKernel",
     launch(f, 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr, nullptr));
}

// A block from cuMemAlloc looked up with cuGetProcAddress after cuInit, as
// a runtime allocates (the injection hands out the shim: the block gets
// redzones), then direct calls into libcuda through the executable's own PLT
// slots, bound lazily (or at load in the -z now build): a memset to the end
// CUDA accepts and one byte past it CUDA refuses, each code printed.
int Bounds() {
  if (!DriverSetup(0)) return 1;
  void* fn = nullptr;
  CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  Cu("cuGetProcAddress(cuMemAlloc)",
     cuGetProcAddress("cuMemAlloc", &fn, 13000, CU_GET_PROC_ADDRESS_DEFAULT,
                      &status));
  auto alloc = reinterpret_cast<CUresult (*)(CUdeviceptr*, size_t)>(fn);
  CUdeviceptr p = 0;
  Cu("cuMemAlloc(1000)", alloc(&p, 1000));
  Cu("cuMemsetD8(1000)", cuMemsetD8(p, 0, 1000));
  Cu("cuMemsetD8(1001)", cuMemsetD8(p, 0, 1001));
  Cu("cuMemFree", cuMemFree(p));
  return 0;
}

// `own` (libcuda's entry point, bound at link time), or with `lookup` what
// cuGetProcAddress answers for `name`.
template <typename Fn>
Fn Driver(const char* name, bool lookup, Fn own) {
  if (!lookup) return own;
  void* fn = nullptr;
  CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  Cu(name,
     cuGetProcAddress(name, &fn, 13000, CU_GET_PROC_ADDRESS_DEFAULT, &status));
  return reinterpret_cast<Fn>(fn);
}

int PoolImport(bool lookup) {
  if (!DriverSetup(0)) return 1;
  auto import_pool = Driver("cuMemPoolImportFromShareableHandle", lookup,
                            &cuMemPoolImportFromShareableHandle);
  auto import_pointer =
      Driver("cuMemPoolImportPointer", lookup, &cuMemPoolImportPointer);
  auto free_async = Driver("cuMemFreeAsync", lookup, &cuMemFreeAsync);
  auto free_sync = Driver("cuMemFree", lookup, &cuMemFree);
  const int fd = open("/dev/null", O_RDONLY);
  CUmemoryPool pool = nullptr;
  if (Cu("cuMemPoolImportFromShareableHandle",
         import_pool(&pool, reinterpret_cast<void*>(static_cast<intptr_t>(fd)),
                     CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0)) !=
      CUDA_SUCCESS) {
    return 1;
  }
  // The double's export data: the block's size in its first 8 bytes.
  CUmemPoolPtrExportData data{};
  const uint64_t bytes = 4096;
  std::memcpy(data.reserved, &bytes, sizeof bytes);
  CUdeviceptr a = 0, b = 0;
  Cu("cuMemPoolImportPointer a", import_pointer(&a, pool, &data));
  Cu("cuMemPoolImportPointer b", import_pointer(&b, pool, &data));
  if (a != 0) std::memset(reinterpret_cast<void*>(a), 0x11, bytes);
  Cu("cuMemFreeAsync a", free_async(a, nullptr));
  Cu("cuMemFree b", free_sync(b));
  close(fd);
  return 0;
}

const char kFirstKernelName[] = "cupti_first_kernel";

int Kernels() {
  g_early_mem_alloc = reinterpret_cast<CUresult (*)(CUdeviceptr*, size_t)>(
      dlsym(dlopen("libcuda.so.1", RTLD_NOW), "cuMemAlloc_v2"));
  if (g_early_mem_alloc == nullptr || !DriverSetup(0)) return 1;
  const CUdeviceptr p = EarlyTableAlloc();
  LaunchKernelNamed(kFirstKernelName);
  if (p != 0) reinterpret_cast<unsigned char*>(p)[256] = 0x5a;
  LaunchKernelNamed(kKernelName);
  Cu("cuCtxSynchronize", cuCtxSynchronize());
  return 0;
}

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "early") == 0) return Early();
  if (argc > 1 && std::strcmp(argv[1], "kernels") == 0) return Kernels();
  if (argc > 1 && std::strcmp(argv[1], "bounds") == 0) return Bounds();
  if (argc > 2 && std::strcmp(argv[1], "pool_import") == 0) {
    return PoolImport(std::strcmp(argv[2], "lookup") == 0);
  }
  if (!DriverSetup(0)) return 1;
  LeakThroughDriver();
  FreeTwice(AllocAndFree());
  const CUdeviceptr overrun = OverrunAfterLookup();
  LaunchNamedKernel();
  if (overrun != 0) {
    reinterpret_cast<unsigned char*>(overrun)[512] = 0x5a;  // past the end
  }
  Cu("cuCtxSynchronize", cuCtxSynchronize());
  return 0;
}
