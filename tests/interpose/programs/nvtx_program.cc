// NVTX ranges and PyTorch's pluggable-allocator entry points.
//
//   gmt_nvtx_program nvtx    inside NVTX ranges (the NVTX v3 headers, used
//                            in a shared library, nvtx_ranges_lib.cc):
//                              "train" > "forward":  2 x cudaMalloc(1000), kept
//                              "train" (C++ scoped_range "backward" inside a
//                              registered-string domain range): 1 x 3000, kept
//                              outside any range:   1 x cudaMalloc(500), kept
//                              "eval":              1 x 700, freed
//   gmt_nvtx_program torch   gmt_torch_malloc / gmt_torch_free, found with
//                            dlsym as PyTorch's CUDAPluggableAllocator does:
//                            4 x 256 bytes, 3 freed, 1 kept (TorchAllocate)
#include <dlfcn.h>
#include <sys/types.h>

#include <cstring>

#include "tests/interpose/programs/program_util.h"

extern "C" int RunNvtx();  // nvtx_ranges_lib.cc

using TorchMalloc = void* (*)(ssize_t, int, cudaStream_t);
using TorchFree = void (*)(void*, ssize_t, int, cudaStream_t);

NOINLINE void* TorchAllocate(TorchMalloc torch_malloc, ssize_t bytes) {
  return torch_malloc(bytes, 0, nullptr);
}

int RunTorch() {
  auto torch_malloc =
      reinterpret_cast<TorchMalloc>(dlsym(RTLD_DEFAULT, "gmt_torch_malloc"));
  auto torch_free =
      reinterpret_cast<TorchFree>(dlsym(RTLD_DEFAULT, "gmt_torch_free"));
  if (torch_malloc == nullptr || torch_free == nullptr) {
    std::printf("gmt_torch_malloc/free not found\n");
    return 3;
  }
  void* blocks[4];
  for (void*& b : blocks) {
    b = TorchAllocate(torch_malloc, 256);
    std::printf("torch_malloc(256) -> %s\n", b != nullptr ? "ok" : "null");
  }
  for (int i = 0; i < 3; ++i) torch_free(blocks[i], 256, 0, nullptr);
  std::printf("torch_malloc(-1) -> %s\n",
              torch_malloc(-1, 0, nullptr) == nullptr ? "null" : "ok");
  return 0;
}

int main(int argc, char** argv) {
  if (argc == 2 && std::strcmp(argv[1], "nvtx") == 0) return RunNvtx();
  if (argc == 2 && std::strcmp(argv[1], "torch") == 0) return RunTorch();
  std::fprintf(stderr, "usage: gmt_nvtx_program nvtx|torch\n");
  return 2;
}
