// Contexts that take their memory with them.
//
//   gmt_context_program MODE   MODE: ctx_destroy primary_release
//
//   ctx_destroy      cuCtxCreate, cuMemAlloc(1500) (LeakInCreatedContext),
//                    cuCtxDestroy; then a new context allocates and frees
//                    1500 bytes again (the driver may hand out the same
//                    address)
//   primary_release  cuDevicePrimaryCtxRetain, cuMemAlloc(1700)
//                    (LeakBeforePrimaryRelease), cuDevicePrimaryCtxRelease: the
//                    last reference, so the driver destroys the context and its
//                    memory; then retain again, allocate and free 1700 bytes
#include <string>

#include "tests/interpose/programs/program_util.h"

NOINLINE void LeakInCreatedContext() {
  CUdeviceptr p = 0;
  Cu("cuMemAlloc(1500)", cuMemAlloc(&p, 1500));
  AfterCall();
}

NOINLINE void AllocAndFree(size_t bytes) {
  CUdeviceptr p = 0;
  Cu("cuMemAlloc", cuMemAlloc(&p, bytes));
  Cu("cuMemFree", cuMemFree(p));
}

NOINLINE void CtxDestroy() {
  Cu("cuInit", cuInit(0));
  CUcontext ctx = nullptr;
  Cu("cuCtxCreate", cuCtxCreate(&ctx, nullptr, 0, 0));
  LeakInCreatedContext();
  Cu("cuCtxDestroy", cuCtxDestroy(ctx));
  Cu("cuCtxCreate", cuCtxCreate(&ctx, nullptr, 0, 0));
  AllocAndFree(1500);
  Cu("cuCtxDestroy", cuCtxDestroy(ctx));
}

NOINLINE void LeakBeforePrimaryRelease() {
  CUdeviceptr p = 0;
  Cu("cuMemAlloc(1700)", cuMemAlloc(&p, 1700));
  AfterCall();
}

NOINLINE void PrimaryRelease() {
  DriverSetup(0);
  LeakBeforePrimaryRelease();
  Cu("cuDevicePrimaryCtxRelease", cuDevicePrimaryCtxRelease(0));
  DriverSetup(0);
  AllocAndFree(1700);
}

int main(int argc, char** argv) {
  std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "ctx_destroy") {
    CtxDestroy();
  } else if (mode == "primary_release") {
    PrimaryRelease();
  } else {
    std::fprintf(stderr, "unknown mode '%s'\n", mode.c_str());
    return 2;
  }
  std::printf("done\n");
  return 0;
}
