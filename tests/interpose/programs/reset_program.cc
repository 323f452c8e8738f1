// cudaDeviceReset with blocks still live.
//
//   FreedBeforeReset      cudaMalloc(1000), freed before the reset
//   LiveAtReset           cudaMalloc(2000) and cudaMalloc(3000), live at reset
//   PinnedLiveAtReset     cudaMallocHost(4000), live at reset (the primary
//                         context's pinned memory goes with it too)
//   AfterReset            cudaMalloc(5000) after the reset, freed
//
//   gmt_reset_program [device]   resets device 0 (default) or 1
//
// With device 1, blocks made on device 0 before (OtherDeviceBlock: cudaMalloc
// 6000 and cudaMallocHost 6100 in device 0's context) must survive the reset
// of device 1; they are freed at the end.
#include <cstdlib>

#include "tests/interpose/programs/program_util.h"

NOINLINE void FreedBeforeReset() {
  void* p = nullptr;
  Rt("cudaMalloc(1000)", cudaMalloc(&p, 1000));
  Rt("cudaFree", cudaFree(p));
}

NOINLINE void LiveAtReset() {
  void* a = nullptr;
  void* b = nullptr;
  Rt("cudaMalloc(2000)", cudaMalloc(&a, 2000));
  Rt("cudaMalloc(3000)", cudaMalloc(&b, 3000));
}

NOINLINE void PinnedLiveAtReset() {
  void* h = nullptr;
  Rt("cudaMallocHost(4000)", cudaMallocHost(&h, 4000));
  AfterCall();
}

NOINLINE void AfterReset() {
  void* p = nullptr;
  Rt("cudaMalloc(5000)", cudaMalloc(&p, 5000));
  Rt("cudaFree", cudaFree(p));
}

NOINLINE void OtherDeviceBlock(void** device_block, void** host_block) {
  Rt("cudaSetDevice(0)", cudaSetDevice(0));
  Rt("cudaMalloc(6000)", cudaMalloc(device_block, 6000));
  Rt("cudaMallocHost(6100)", cudaMallocHost(host_block, 6100));
}

int main(int argc, char** argv) {
  int device = argc > 1 ? std::atoi(argv[1]) : 0;
  void* other_device = nullptr;
  void* other_host = nullptr;
  if (device != 0) OtherDeviceBlock(&other_device, &other_host);
  Rt("cudaSetDevice", cudaSetDevice(device));
  FreedBeforeReset();
  LiveAtReset();
  PinnedLiveAtReset();
  Rt("cudaDeviceReset", cudaDeviceReset());
  AfterReset();
  if (device != 0) {
    Rt("cudaSetDevice(0)", cudaSetDevice(0));
    Rt("cudaFree(other device)", cudaFree(other_device));
    Rt("cudaFreeHost(other device)", cudaFreeHost(other_host));
  }
  std::printf("done\n");
  return 0;
}
