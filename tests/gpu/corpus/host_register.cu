// Page-locking memory the program already owns, as an I/O library that
// receives user buffers does it: cudaHostRegister (mapped, portable) on an
// aligned buffer and on a std::vector's storage, the device alias from
// cudaHostGetDevicePointer used by a zero-copy kernel, truly asynchronous
// copies from registered memory, the flags read back, the error codes of
// registering twice and of unregistering what was never registered, and the
// driver's cuMemHostRegister/cuMemHostGetDevicePointer.
#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "corpus_check.h"

namespace {

__global__ void Square(const int* in, int* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i] * in[i];
}

__global__ void Increment(int* p, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] += 1;
}

}  // namespace

int main() {
  corpus::ProgramName() = "host_register";
  CORPUS_CHECK(cudaSetDevice(0));
  int read_only = 0, host_register = 0;
  CORPUS_CHECK(cudaDeviceGetAttribute(&host_register,
                                      cudaDevAttrHostRegisterSupported, 0));
  CORPUS_CHECK(cudaDeviceGetAttribute(
      &read_only, cudaDevAttrHostRegisterReadOnlySupported, 0));
  std::printf("host register supported %d, read-only %d\n", host_register,
              read_only);

  constexpr int kN = 1 << 20;
  constexpr size_t kBytes = kN * sizeof(int);
  int* buffer = static_cast<int*>(std::aligned_alloc(4096, kBytes));
  for (int i = 0; i < kN; ++i) buffer[i] = i % 1000;
  corpus::Rc(
      "cudaHostRegister mapped|portable",
      cudaHostRegister(buffer, kBytes,
                       cudaHostRegisterMapped | cudaHostRegisterPortable));
  unsigned flags = 0;
  corpus::Rc("cudaHostGetFlags", cudaHostGetFlags(&flags, buffer));
  std::printf("flags %u\n", flags);
  int* alias = nullptr;
  corpus::Rc(
      "cudaHostGetDevicePointer",
      cudaHostGetDevicePointer(reinterpret_cast<void**>(&alias), buffer, 0));
  std::printf("device alias equals the host pointer: %s\n",
              alias == buffer ? "yes" : "no");

  // Zero-copy: the kernel reads and writes host memory.
  int* squares = nullptr;
  CORPUS_CHECK(cudaMalloc(&squares, kBytes));
  Square<<<kN / 256, 256>>>(alias, squares, kN);
  Increment<<<kN / 256, 256>>>(alias, kN);
  CORPUS_CHECK(cudaGetLastError());
  CORPUS_CHECK(cudaDeviceSynchronize());
  int wrong = 0;
  for (int i = 0; i < kN; ++i)
    if (buffer[i] != i % 1000 + 1) ++wrong;
  std::printf("zero-copy increment: %d wrong\n", wrong);
  corpus::Expect(wrong == 0, "zero-copy increment");

  // Asynchronous copy back into registered memory.
  cudaStream_t stream;
  CORPUS_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  CORPUS_CHECK(
      cudaMemcpyAsync(buffer, squares, kBytes, cudaMemcpyDeviceToHost, stream));
  CORPUS_CHECK(cudaStreamSynchronize(stream));
  wrong = 0;
  for (int i = 0; i < kN; ++i)
    if (buffer[i] != (i % 1000) * (i % 1000)) ++wrong;
  std::printf("async copy into registered memory: %d wrong\n", wrong);
  corpus::Expect(wrong == 0, "async copy");

  // Registering again, part of it again, an interior unregister.
  corpus::Rc("cudaHostRegister again",
             cudaHostRegister(buffer, kBytes, cudaHostRegisterDefault));
  corpus::Rc("  cudaGetLastError", cudaGetLastError());
  corpus::Rc(
      "cudaHostRegister of its second half",
      cudaHostRegister(buffer + kN / 2, kBytes / 2, cudaHostRegisterDefault));
  corpus::Rc("  cudaGetLastError", cudaGetLastError());
  corpus::Rc("cudaHostUnregister of an interior pointer",
             cudaHostUnregister(buffer + 1024));
  corpus::Rc("  cudaGetLastError", cudaGetLastError());
  corpus::Rc("cudaHostUnregister", cudaHostUnregister(buffer));
  corpus::Rc("cudaHostUnregister again", cudaHostUnregister(buffer));
  corpus::Rc("  cudaGetLastError", cudaGetLastError());

  // A std::vector's storage: not page-aligned, registered as is.
  std::vector<int> vec(300001, 7);
  corpus::Rc("cudaHostRegister std::vector",
             cudaHostRegister(vec.data(), vec.size() * sizeof(int),
                              cudaHostRegisterDefault));
  int* d_vec = nullptr;
  CORPUS_CHECK(cudaMalloc(&d_vec, vec.size() * sizeof(int)));
  CORPUS_CHECK(cudaMemcpyAsync(d_vec, vec.data(), vec.size() * sizeof(int),
                               cudaMemcpyHostToDevice, stream));
  Increment<<<(300001 + 255) / 256, 256, 0, stream>>>(d_vec, 300001);
  CORPUS_CHECK(cudaMemcpyAsync(vec.data(), d_vec, vec.size() * sizeof(int),
                               cudaMemcpyDeviceToHost, stream));
  CORPUS_CHECK(cudaStreamSynchronize(stream));
  wrong = 0;
  for (int v : vec)
    if (v != 8) ++wrong;
  std::printf("vector round trip: %d wrong\n", wrong);
  corpus::Expect(wrong == 0, "vector round trip");
  cudaPointerAttributes attr{};
  CORPUS_CHECK(cudaPointerGetAttributes(&attr, vec.data() + 5));
  std::printf("vector element: type %d\n", static_cast<int>(attr.type));
  corpus::Rc("cudaHostUnregister std::vector", cudaHostUnregister(vec.data()));

  // Read-only registration where supported.
  if (read_only) {
    corpus::Rc(
        "cudaHostRegister read-only",
        cudaHostRegister(buffer, kBytes,
                         cudaHostRegisterMapped | cudaHostRegisterReadOnly));
    CORPUS_CHECK(
        cudaHostGetDevicePointer(reinterpret_cast<void**>(&alias), buffer, 0));
    Square<<<kN / 256, 256>>>(alias, squares, kN);
    CORPUS_CHECK(cudaGetLastError());
    CORPUS_CHECK(cudaDeviceSynchronize());
    corpus::Rc("cudaHostUnregister read-only", cudaHostUnregister(buffer));
  }

  // The driver's calls.
  CORPUS_CHECK(cuInit(0));
  corpus::Rc("cuMemHostRegister devicemap",
             cuMemHostRegister(buffer, kBytes, CU_MEMHOSTREGISTER_DEVICEMAP));
  CUdeviceptr dptr = 0;
  corpus::Rc("cuMemHostGetDevicePointer",
             cuMemHostGetDevicePointer(&dptr, buffer, 0));
  for (int i = 0; i < kN; ++i) buffer[i] = 41;
  Increment<<<kN / 256, 256>>>(reinterpret_cast<int*>(dptr), kN);
  CORPUS_CHECK(cudaDeviceSynchronize());
  wrong = 0;
  for (int i = 0; i < kN; ++i)
    if (buffer[i] != 42) ++wrong;
  std::printf("driver-registered zero-copy: %d wrong\n", wrong);
  corpus::Expect(wrong == 0, "driver zero-copy");
  corpus::Rc("cuMemHostUnregister", cuMemHostUnregister(buffer));

  CORPUS_CHECK(cudaFree(d_vec));
  CORPUS_CHECK(cudaFree(squares));
  CORPUS_CHECK(cudaStreamDestroy(stream));
  std::free(buffer);
  return corpus::Finish();
}
