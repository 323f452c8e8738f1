// Linked against the static fake runtime (fake_cudart_static), like nvcc's
// default static cudart: the program exports no cudaMalloc, and the runtime
// reaches the driver only through dlopen("libcuda.so.1") + dlsym.
//
//   gmt_static_program             leaks cudaMalloc(9000)
//   (LeakFromStaticRuntime)
//                                  and frees one cudaMalloc(100)
//   gmt_static_program exports     prints whether cudaMalloc is visible to
//   dlsym
//                                  (run it without the tool)
#include <dlfcn.h>

#include <cstring>

#include "tests/interpose/programs/program_util.h"

NOINLINE void LeakFromStaticRuntime() {
  void* p = nullptr;
  Rt("cudaMalloc(9000)", cudaMalloc(&p, 9000));
  AfterCall();
}

NOINLINE void FreeFromStaticRuntime() {
  void* p = nullptr;
  Rt("cudaMalloc(100)", cudaMalloc(&p, 100));
  Rt("cudaFree", cudaFree(p));
}

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "exports") == 0) {
    std::printf("cudaMalloc exported: %s\n",
                dlsym(RTLD_DEFAULT, "cudaMalloc") ? "yes" : "no");
    return 0;
  }
  FreeFromStaticRuntime();
  LeakFromStaticRuntime();
  std::printf("done\n");
  return 0;
}
