// Running out of memory on purpose, and recovering, as a program that probes
// how much it can allocate does: every allocator asked for more than the GPU
// has (cudaMalloc, cudaMallocAsync, cudaMallocPitch, cudaMalloc3D,
// cuMemAlloc, cuMemCreate, cudaMallocHost of a petabyte), each failure
// checked with cudaGetLastError (reported once, then cleared), and then a
// normal-sized allocation that must succeed and work. Nothing here holds on
// to a large block, so other programs may run beside it.
#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <vector>

#include "corpus_check.h"

namespace {

__global__ void Iota(unsigned* p, size_t n) {
  size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x;
  if (i < n) p[i] = static_cast<unsigned>(i);
}

void AfterFailure() {
  cudaError_t first = cudaGetLastError();
  cudaError_t second = cudaGetLastError();
  std::printf("  last error %s, then %s\n", cudaGetErrorName(first),
              cudaGetErrorName(second));
}

}  // namespace

int main() {
  corpus::ProgramName() = "oom_recover";
  CORPUS_CHECK(cudaSetDevice(0));
  CORPUS_CHECK(cuInit(0));
  size_t free_bytes = 0, total = 0;
  CORPUS_CHECK(cudaMemGetInfo(&free_bytes, &total));
  const size_t too_much = total + (size_t{1} << 30);
  std::printf("asking for the device's total + 1 GiB\n");

  void* p = reinterpret_cast<void*>(0x1);
  corpus::Rc("cudaMalloc(total + 1 GiB)", cudaMalloc(&p, too_much));
  std::printf("  pointer left null: %s\n", p == nullptr ? "yes" : "no");
  AfterFailure();
  corpus::Rc("cudaMalloc(total)", cudaMalloc(&p, total));
  AfterFailure();

  cudaStream_t stream;
  CORPUS_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  corpus::Rc("cudaMallocAsync(total + 1 GiB)",
             cudaMallocAsync(&p, too_much, stream));
  AfterFailure();
  corpus::Rc("cudaStreamSynchronize after the failure",
             cudaStreamSynchronize(stream));

  size_t pitch = 0;
  corpus::Rc("cudaMallocPitch(1 MiB x 1 Mi rows)",
             cudaMallocPitch(&p, &pitch, size_t{1} << 20, size_t{1} << 20));
  AfterFailure();
  cudaPitchedPtr vol{};
  corpus::Rc("cudaMalloc3D(64 KiB x 64 Ki x 64)",
             cudaMalloc3D(
                 &vol, make_cudaExtent(size_t{1} << 16, size_t{1} << 16, 64)));
  AfterFailure();
  corpus::Rc("cudaMallocHost(1 PiB)", cudaMallocHost(&p, size_t{1} << 50));
  AfterFailure();

  CUdeviceptr dptr = 0;
  corpus::Rc("cuMemAlloc(total + 1 GiB)", cuMemAlloc(&dptr, too_much));
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = 0;
  size_t gran = 0;
  CORPUS_CHECK(cuMemGetAllocationGranularity(&gran, &prop,
                                             CU_MEM_ALLOC_GRANULARITY_MINIMUM));
  CUmemGenericAllocationHandle handle = 0;
  corpus::Rc(
      "cuMemCreate(total + 1 GiB, rounded)",
      cuMemCreate(&handle, (too_much + gran - 1) / gran * gran, &prop, 0));
  AfterFailure();

  // Back to normal.
  constexpr size_t kN = size_t{64} << 20;  // 256 MiB of unsigned
  unsigned* ok = nullptr;
  corpus::Rc("cudaMalloc(256 MiB)", cudaMalloc(&ok, kN * sizeof(unsigned)));
  Iota<<<static_cast<unsigned>((kN + 255) / 256), 256, 0, stream>>>(ok, kN);
  CORPUS_CHECK(cudaGetLastError());
  std::vector<unsigned> tail(1024);
  CORPUS_CHECK(cudaMemcpyAsync(tail.data(), ok + kN - 1024,
                               1024 * sizeof(unsigned), cudaMemcpyDeviceToHost,
                               stream));
  CORPUS_CHECK(cudaStreamSynchronize(stream));
  int wrong = 0;
  for (size_t i = 0; i < 1024; ++i)
    if (tail[i] != static_cast<unsigned>(kN - 1024 + i)) ++wrong;
  std::printf("256 MiB block after the failures: %d wrong\n", wrong);
  corpus::Expect(wrong == 0, "allocation after OOM");
  void* async_ok = nullptr;
  corpus::Rc("cudaMallocAsync(64 MiB)",
             cudaMallocAsync(&async_ok, size_t{64} << 20, stream));
  CORPUS_CHECK(cudaFreeAsync(async_ok, stream));
  CORPUS_CHECK(cudaStreamSynchronize(stream));
  CORPUS_CHECK(cudaFree(ok));
  CORPUS_CHECK(cudaStreamDestroy(stream));
  return corpus::Finish();
}
