// Runtime and driver calls mixed, to check that every user call is counted
// exactly once (a runtime call that reaches the driver through the proc table
// must not count twice) and that frees across API levels match.
//
//   call                          n   freed by                     left
//   cudaMalloc(1000)              5   cudaFree x2                  3
//   cuMemAlloc(2000)              3   cudaFree x1 (legal)          2
//   cudaMallocHost(3000)          2   cuMemFreeHost x1             1
//   cuMemAllocHost(4000)          4   cudaFreeHost x4              0
//   cudaMallocPitch(100 x 4)      1   -                            1
//   cudaMalloc3D(100 x 2 x 3)     1   -                            1
//   cudaMallocManaged(5000)       2   cudaFree x2                  0
//   cudaHostAlloc(6000)           1   cudaFreeHost                 0
//   cudaMallocFromPoolAsync(7000) 1   cudaFreeAsync                0
//   cudaMallocArray(float 64x64)  1   cudaFreeArray                0
//   cudaMalloc(0)                 -   (succeeds with nullptr, not an
//   allocation) total                         21  13 8
#include <vector>

#include "tests/interpose/programs/program_util.h"

NOINLINE void MixedCalls() {
  std::vector<void*> rt(5);
  for (void*& p : rt) Rt("cudaMalloc(1000)", cudaMalloc(&p, 1000));
  Rt("cudaFree", cudaFree(rt[0]));
  Rt("cudaFree", cudaFree(rt[1]));

  std::vector<CUdeviceptr> dr(3);
  for (CUdeviceptr& p : dr) Cu("cuMemAlloc(2000)", cuMemAlloc(&p, 2000));
  Rt("cudaFree(cuMemAlloc)", cudaFree(reinterpret_cast<void*>(dr[0])));

  std::vector<void*> pinned(2);
  for (void*& p : pinned) Rt("cudaMallocHost(3000)", cudaMallocHost(&p, 3000));
  Cu("cuMemFreeHost(cudaMallocHost)", cuMemFreeHost(pinned[0]));

  std::vector<void*> dpinned(4);
  for (void*& p : dpinned) Cu("cuMemAllocHost(4000)", cuMemAllocHost(&p, 4000));
  for (void* p : dpinned) Rt("cudaFreeHost(cuMemAllocHost)", cudaFreeHost(p));

  void* pitched = nullptr;
  size_t pitch = 0;
  Rt("cudaMallocPitch", cudaMallocPitch(&pitched, &pitch, 100, 4));
  std::printf("pitch %zu\n", pitch);
  cudaPitchedPtr p3d = {};
  Rt("cudaMalloc3D", cudaMalloc3D(&p3d, cudaExtent{100, 2, 3}));

  std::vector<void*> managed(2);
  for (void*& p : managed) {
    Rt("cudaMallocManaged(5000)",
       cudaMallocManaged(&p, 5000, cudaMemAttachGlobal));
  }
  for (void* p : managed) Rt("cudaFree(managed)", cudaFree(p));

  void* host = nullptr;
  Rt("cudaHostAlloc(6000)", cudaHostAlloc(&host, 6000, cudaHostAllocDefault));
  Rt("cudaFreeHost", cudaFreeHost(host));

  cudaMemPool_t pool = nullptr;
  Rt("cudaDeviceGetDefaultMemPool", cudaDeviceGetDefaultMemPool(&pool, 0));
  void* pooled = nullptr;
  Rt("cudaMallocFromPoolAsync(7000)",
     cudaMallocFromPoolAsync(&pooled, 7000, pool, nullptr));
  Rt("cudaFreeAsync", cudaFreeAsync(pooled, nullptr));

  cudaArray_t array = nullptr;
  cudaChannelFormatDesc desc = {32, 0, 0, 0, cudaChannelFormatKindFloat};
  Rt("cudaMallocArray", cudaMallocArray(&array, &desc, 64, 64));
  Rt("cudaFreeArray", cudaFreeArray(array));

  void* zero = &zero;
  Rt("cudaMalloc(0)", cudaMalloc(&zero, 0));
  std::printf("cudaMalloc(0) gave %s\n",
              zero == nullptr ? "nullptr" : "a pointer");
}

int main() {
  DriverSetup(0);
  MixedCalls();
  std::printf("done\n");
  return 0;
}
