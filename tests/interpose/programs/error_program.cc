// Frees memory wrongly, one mistake per mode; the result CUDA returns is
// printed so a test can check the tool did not change it.
//
//   gmt_error_program MODE     MODE: double_free interior_free host_free
//                                    mismatch driver_double_free
//
//   double_free          cudaMalloc(3000) in DoubleFreeAllocate, cudaFree in
//                        DoubleFreeFirst, cudaFree again in DoubleFreeSecond
//   interior_free        cudaFree(p + 16) of a cudaMalloc(1024) block, then a
//                        good cudaFree(p)
//   host_free            cudaFree of a malloc'd pointer
//   mismatch             cudaFreeHost on cudaMalloc(512) memory, then cudaFree
//   driver_double_free   the same as double_free through cuMemAlloc/cuMemFree
#include <cstdlib>
#include <string>

#include "tests/interpose/programs/program_util.h"

NOINLINE void* DoubleFreeAllocate() {
  void* p = nullptr;
  Rt("cudaMalloc(3000)", cudaMalloc(&p, 3000));
  AfterCall();
  return p;
}

NOINLINE void DoubleFreeFirst(void* p) {
  Rt("cudaFree#1", cudaFree(p));
  AfterCall();
}

NOINLINE void DoubleFreeSecond(void* p) {
  Rt("cudaFree#2", cudaFree(p));
  AfterCall();
}

NOINLINE void InteriorFree() {
  void* p = nullptr;
  Rt("cudaMalloc(1024)", cudaMalloc(&p, 1024));
  Rt("cudaFree(p+16)", cudaFree(static_cast<char*>(p) + 16));
  Rt("cudaFree(p)", cudaFree(p));
}

NOINLINE void HostFree() {
  Rt("cudaFree(nullptr)", cudaFree(nullptr));  // the usual init idiom
  void* q = std::malloc(64);
  Rt("cudaFree(malloc)", cudaFree(q));
  std::free(q);
}

NOINLINE void MismatchFree() {
  void* p = nullptr;
  Rt("cudaMalloc(512)", cudaMalloc(&p, 512));
  Rt("cudaFreeHost(device)", cudaFreeHost(p));
  Rt("cudaFree", cudaFree(p));
}

NOINLINE CUdeviceptr DriverDoubleFreeAllocate() {
  CUdeviceptr p = 0;
  Cu("cuMemAlloc(2500)", cuMemAlloc(&p, 2500));
  AfterCall();
  return p;
}

NOINLINE void DriverDoubleFree(CUdeviceptr p) {
  Cu("cuMemFree#1", cuMemFree(p));
  Cu("cuMemFree#2", cuMemFree(p));
}

int main(int argc, char** argv) {
  std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "double_free") {
    void* p = DoubleFreeAllocate();
    DoubleFreeFirst(p);
    DoubleFreeSecond(p);
  } else if (mode == "interior_free") {
    InteriorFree();
  } else if (mode == "host_free") {
    HostFree();
  } else if (mode == "mismatch") {
    MismatchFree();
  } else if (mode == "driver_double_free") {
    DriverSetup(0);
    DriverDoubleFree(DriverDoubleFreeAllocate());
  } else {
    std::fprintf(stderr, "unknown mode '%s'\n", mode.c_str());
    return 2;
  }
  std::printf("done\n");
  return 0;
}
