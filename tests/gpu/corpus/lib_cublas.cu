// cuBLAS as an application uses it: a handle bound to a stream with a
// workspace the application allocated (cublasSetWorkspace), matrices moved
// with cublasSetMatrix/GetMatrix, SGEMM on odd sizes, strided-batched DGEMM,
// a half-precision GemmEx with float accumulation (tensor cores), level-1/2
// calls with host and device pointer modes. Inputs are small integers, so
// every result is exact and compared exactly with the CPU's.
#include <cublas_v2.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <vector>

#include "corpus_check.h"

namespace {

int Small(int i, int salt) { return ((i * 37 + salt * 11) % 5) - 2; }

// Column-major C = A * B (m x k times k x n).
template <typename T>
std::vector<T> HostGemm(const std::vector<T>& a, const std::vector<T>& b, int m,
                        int n, int k) {
  std::vector<T> c(static_cast<size_t>(m) * n, 0);
  for (int j = 0; j < n; ++j)
    for (int p = 0; p < k; ++p)
      for (int i = 0; i < m; ++i) c[i + j * m] += a[i + p * m] * b[p + j * k];
  return c;
}

}  // namespace

int main() {
  corpus::ProgramName() = "lib_cublas";
  CORPUS_CHECK(cudaSetDevice(0));
  cudaStream_t stream;
  CORPUS_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cublasHandle_t handle;
  corpus::Rc("cublasCreate", cublasCreate(&handle));
  CORPUS_CHECK(cublasSetStream(handle, stream));
  void* workspace = nullptr;
  constexpr size_t kWorkspace = 4 << 20;
  CORPUS_CHECK(cudaMalloc(&workspace, kWorkspace));
  corpus::Rc("cublasSetWorkspace 4 MiB",
             cublasSetWorkspace(handle, workspace, kWorkspace));

  // SGEMM, 257 x 129 x 65.
  const int m = 257, n = 129, k = 65;
  std::vector<float> a(m * k), b(k * n), c(m * n, 1.0f);
  for (int i = 0; i < m * k; ++i) a[i] = static_cast<float>(Small(i, 1));
  for (int i = 0; i < k * n; ++i) b[i] = static_cast<float>(Small(i, 2));
  float *da, *db, *dc;
  CORPUS_CHECK(cudaMalloc(&da, a.size() * sizeof(float)));
  CORPUS_CHECK(cudaMalloc(&db, b.size() * sizeof(float)));
  CORPUS_CHECK(cudaMalloc(&dc, c.size() * sizeof(float)));
  CORPUS_CHECK(cublasSetMatrix(m, k, sizeof(float), a.data(), m, da, m));
  CORPUS_CHECK(cublasSetMatrix(k, n, sizeof(float), b.data(), k, db, k));
  CORPUS_CHECK(cublasSetMatrix(m, n, sizeof(float), c.data(), m, dc, m));
  const float alpha = 2.0f, beta = -1.0f;
  corpus::Rc("cublasSgemm", cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, m, n,
                                        k, &alpha, da, m, db, k, &beta, dc, m));
  std::vector<float> got(m * n);
  // cublasGetMatrix copies on the legacy default stream: wait for ours.
  CORPUS_CHECK(cudaStreamSynchronize(stream));
  CORPUS_CHECK(cublasGetMatrix(m, n, sizeof(float), dc, m, got.data(), m));
  std::vector<float> want = HostGemm(a, b, m, n, k);
  int wrong = 0;
  for (int i = 0; i < m * n; ++i)
    if (got[i] != 2.0f * want[i] - 1.0f) ++wrong;
  std::printf("sgemm 257x129x65: %d wrong\n", wrong);
  corpus::Expect(wrong == 0, "sgemm");

  // Strided-batched DGEMM: 8 products of 32 x 32.
  const int s = 32, batch = 8;
  std::vector<double> ba(s * s * batch), bb(s * s * batch);
  for (size_t i = 0; i < ba.size(); ++i) {
    ba[i] = Small(static_cast<int>(i), 3);
    bb[i] = Small(static_cast<int>(i), 4);
  }
  double *dba, *dbb, *dbc;
  CORPUS_CHECK(cudaMalloc(&dba, ba.size() * sizeof(double)));
  CORPUS_CHECK(cudaMalloc(&dbb, bb.size() * sizeof(double)));
  CORPUS_CHECK(cudaMalloc(&dbc, ba.size() * sizeof(double)));
  CORPUS_CHECK(cudaMemcpyAsync(dba, ba.data(), ba.size() * sizeof(double),
                               cudaMemcpyHostToDevice, stream));
  CORPUS_CHECK(cudaMemcpyAsync(dbb, bb.data(), bb.size() * sizeof(double),
                               cudaMemcpyHostToDevice, stream));
  const double one = 1.0, zero = 0.0;
  corpus::Rc("cublasDgemmStridedBatched",
             cublasDgemmStridedBatched(handle, CUBLAS_OP_N, CUBLAS_OP_T, s, s,
                                       s, &one, dba, s, s * s, dbb, s, s * s,
                                       &zero, dbc, s, s * s, batch));
  std::vector<double> bc(ba.size());
  CORPUS_CHECK(cudaMemcpyAsync(bc.data(), dbc, bc.size() * sizeof(double),
                               cudaMemcpyDeviceToHost, stream));
  CORPUS_CHECK(cudaStreamSynchronize(stream));
  wrong = 0;
  for (int q = 0; q < batch; ++q)
    for (int j = 0; j < s; ++j)
      for (int i = 0; i < s; ++i) {
        double w = 0;
        for (int p = 0; p < s; ++p)
          w += ba[q * s * s + i + p * s] * bb[q * s * s + j + p * s];
        if (bc[q * s * s + i + j * s] != w) ++wrong;
      }
  std::printf("dgemm strided batched (8 x 32^3, B transposed): %d wrong\n",
              wrong);
  corpus::Expect(wrong == 0, "dgemm batched");

  // Half-precision inputs, float accumulation.
  const int hm = 128, hn = 64, hk = 256;
  std::vector<__half> ha(hm * hk), hb(hk * hn);
  std::vector<float> fa(hm * hk), fb(hk * hn);
  for (int i = 0; i < hm * hk; ++i) {
    fa[i] = static_cast<float>(Small(i, 5));
    ha[i] = __float2half(fa[i]);
  }
  for (int i = 0; i < hk * hn; ++i) {
    fb[i] = static_cast<float>(Small(i, 6));
    hb[i] = __float2half(fb[i]);
  }
  __half *dha, *dhb;
  float* dhc;
  CORPUS_CHECK(cudaMalloc(&dha, ha.size() * sizeof(__half)));
  CORPUS_CHECK(cudaMalloc(&dhb, hb.size() * sizeof(__half)));
  CORPUS_CHECK(cudaMalloc(&dhc, hm * hn * sizeof(float)));
  CORPUS_CHECK(cudaMemcpy(dha, ha.data(), ha.size() * sizeof(__half),
                          cudaMemcpyHostToDevice));
  CORPUS_CHECK(cudaMemcpy(dhb, hb.data(), hb.size() * sizeof(__half),
                          cudaMemcpyHostToDevice));
  const float f_one = 1.0f, f_zero = 0.0f;
  corpus::Rc(
      "cublasGemmEx fp16 -> fp32",
      cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, hm, hn, hk, &f_one, dha,
                   CUDA_R_16F, hm, dhb, CUDA_R_16F, hk, &f_zero, dhc,
                   CUDA_R_32F, hm, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  std::vector<float> hc(hm * hn);
  CORPUS_CHECK(cudaMemcpyAsync(hc.data(), dhc, hc.size() * sizeof(float),
                               cudaMemcpyDeviceToHost, stream));
  CORPUS_CHECK(cudaStreamSynchronize(stream));
  std::vector<float> hwant = HostGemm(fa, fb, hm, hn, hk);
  wrong = 0;
  for (int i = 0; i < hm * hn; ++i)
    if (hc[i] != hwant[i]) ++wrong;
  std::printf("gemmEx fp16 128x64x256: %d wrong\n", wrong);
  corpus::Expect(wrong == 0, "gemmEx");

  // Level 1 and 2, host then device pointer mode.
  float dot_host = 0;
  corpus::Rc("cublasSdot (host pointer mode)",
             cublasSdot(handle, m * k, da, 1, da, 1, &dot_host));
  float want_dot = 0;
  for (float v : a) want_dot += v * v;
  std::printf("sdot %.1f (expected %.1f)\n", dot_host, want_dot);
  corpus::Expect(dot_host == want_dot, "sdot");
  int argmax = 0;
  CORPUS_CHECK(cublasIsamax(handle, m * k, da, 1, &argmax));
  std::printf(
      "isamax: |a[%d]| = %.1f\n", argmax - 1,
      static_cast<double>(a[argmax - 1] < 0 ? -a[argmax - 1] : a[argmax - 1]));
  CORPUS_CHECK(cublasSetPointerMode(handle, CUBLAS_POINTER_MODE_DEVICE));
  float* d_scalars = nullptr;
  CORPUS_CHECK(cudaMalloc(&d_scalars, 3 * sizeof(float)));
  float scalars[3] = {3.0f, 0.0f, 0.0f};  // alpha, beta, dot result
  CORPUS_CHECK(
      cudaMemcpy(d_scalars, scalars, sizeof scalars, cudaMemcpyHostToDevice));
  float* dy = nullptr;
  CORPUS_CHECK(cudaMalloc(&dy, m * sizeof(float)));
  corpus::Rc("cublasSgemv (device pointer mode)",
             cublasSgemv(handle, CUBLAS_OP_N, m, k, d_scalars, da, m, db, 1,
                         d_scalars + 1, dy, 1));
  corpus::Rc("cublasSdot (device pointer mode)",
             cublasSdot(handle, m, dy, 1, dy, 1, d_scalars + 2));
  CORPUS_CHECK(cudaMemcpyAsync(scalars, d_scalars, sizeof scalars,
                               cudaMemcpyDeviceToHost, stream));
  CORPUS_CHECK(cudaStreamSynchronize(stream));
  float want_y_dot = 0;
  for (int i = 0; i < m; ++i) {
    float y = 0;
    for (int p = 0; p < k; ++p) y += a[i + p * m] * b[p];
    want_y_dot += 9.0f * y * y;
  }
  std::printf("gemv + dot in device mode: %.1f (expected %.1f)\n", scalars[2],
              want_y_dot);
  corpus::Expect(scalars[2] == want_y_dot, "device pointer mode");

  corpus::Rc("cublasDestroy", cublasDestroy(handle));
  for (void* p :
       {static_cast<void*>(da), static_cast<void*>(db), static_cast<void*>(dc),
        static_cast<void*>(dba), static_cast<void*>(dbb),
        static_cast<void*>(dbc), static_cast<void*>(dha),
        static_cast<void*>(dhb), static_cast<void*>(dhc),
        static_cast<void*>(d_scalars), static_cast<void*>(dy), workspace})
    CORPUS_CHECK(cudaFree(p));
  CORPUS_CHECK(cudaStreamDestroy(stream));
  return corpus::Finish();
}
