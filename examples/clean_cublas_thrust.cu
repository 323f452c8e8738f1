// clean_cublas_thrust: a bug-free program using cuBLAS (handle created, one
// SGEMM, handle destroyed) and thrust (device_vector, sort, reduce), printing
// checksums. All inputs are small integers, so every result is exact and the
// output is the same on every run.
//
// Expected report: summary.errors == 0 and no leaks: every cudaMalloc made
// by the program, by thrust's temporary storage and by cuBLAS (its workspace,
// released by cublasDestroy) is freed before exit. summary.allocations > 0
// (thrust's device_vectors go through the tool's cudaMalloc). If a cuBLAS
// version keeps memory alive until process exit, the report shows it as a
// leak whose stack is inside libcublas*.so; the GPU test prints such entries.
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <thrust/device_vector.h>
#include <thrust/functional.h>
#include <thrust/host_vector.h>
#include <thrust/reduce.h>
#include <thrust/sequence.h>
#include <thrust/sort.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#include "example_check.h"

#define CHECK_CUBLAS(call)                                               \
  do {                                                                   \
    cublasStatus_t status_ = (call);                                     \
    if (status_ != CUBLAS_STATUS_SUCCESS) {                              \
      std::fprintf(stderr, "%s:%d: %s failed: %d\n", __FILE__, __LINE__, \
                   #call, static_cast<int>(status_));                    \
      std::exit(2);                                                      \
    }                                                                    \
  } while (0)

constexpr int kN = 256;

// C = A * B with integer-valued matrices; returns sum(C) and C[7][11].
__attribute__((noinline)) double CleanCublasGemm(long long* probe) {
  std::vector<float> a(kN * kN), b(kN * kN), c(kN * kN);
  for (int i = 0; i < kN * kN; ++i) {
    a[i] = static_cast<float>((i * 7) % 5 - 2);
    b[i] = static_cast<float>((i * 13) % 3 - 1);
  }
  float *da = nullptr, *db = nullptr, *dc = nullptr;
  const size_t bytes = sizeof(float) * kN * kN;
  EXAMPLE_CHECK_CUDA(cudaMalloc(&da, bytes));
  EXAMPLE_CHECK_CUDA(cudaMalloc(&db, bytes));
  EXAMPLE_CHECK_CUDA(cudaMalloc(&dc, bytes));
  EXAMPLE_CHECK_CUDA(cudaMemcpy(da, a.data(), bytes, cudaMemcpyHostToDevice));
  EXAMPLE_CHECK_CUDA(cudaMemcpy(db, b.data(), bytes, cudaMemcpyHostToDevice));

  cublasHandle_t handle;
  CHECK_CUBLAS(cublasCreate(&handle));
  const float alpha = 1.0f, beta = 0.0f;
  CHECK_CUBLAS(cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, kN, kN, kN, &alpha,
                           da, kN, db, kN, &beta, dc, kN));
  EXAMPLE_CHECK_CUDA(cudaMemcpy(c.data(), dc, bytes, cudaMemcpyDeviceToHost));
  CHECK_CUBLAS(cublasDestroy(handle));

  EXAMPLE_CHECK_CUDA(cudaFree(da));
  EXAMPLE_CHECK_CUDA(cudaFree(db));
  EXAMPLE_CHECK_CUDA(cudaFree(dc));
  double sum = 0;
  for (float v : c) sum += v;
  *probe = static_cast<long long>(c[7 * kN + 11]);
  return sum;
}

// Sorts a scrambled sequence on the device and reduces it.
__attribute__((noinline)) long long CleanThrustSortReduce(int n, int* first,
                                                          int* last) {
  thrust::host_vector<int> h(n);
  for (int i = 0; i < n; ++i) h[i] = static_cast<int>((i * 7919LL) % n) - n / 2;
  thrust::device_vector<int> d = h;
  thrust::sort(d.begin(), d.end());
  long long sum =
      thrust::reduce(d.begin(), d.end(), 0LL, thrust::plus<long long>());
  *first = d.front();
  *last = d.back();
  return sum;
}

int main() {
  long long probe = 0;
  double gemm_sum = CleanCublasGemm(&probe);
  int first = 0, last = 0;
  long long thrust_sum = CleanThrustSortReduce(1 << 20, &first, &last);
  EXAMPLE_CHECK_CUDA(cudaDeviceSynchronize());
  std::printf("clean_cublas_thrust: gemm sum %.1f, C[7][11] %lld\n", gemm_sum,
              probe);
  std::printf("clean_cublas_thrust: thrust sorted [%d .. %d], sum %lld\n",
              first, last, thrust_sum);
  return 0;
}
