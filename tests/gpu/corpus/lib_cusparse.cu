// cuSPARSE's generic API as an iterative solver uses it: a banded matrix in
// CSR and in COO form, SpMV with the external buffer the application
// allocates from cusparseSpMV_bufferSize, SpMM against a dense block, on the
// application's stream. Small integer values, so results compare exactly.
#include <cuda_runtime.h>
#include <cusparse.h>

#include <cstdio>
#include <vector>

#include "corpus_check.h"

int main() {
  corpus::ProgramName() = "lib_cusparse";
  CORPUS_CHECK(cudaSetDevice(0));
  cudaStream_t stream;
  CORPUS_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cusparseHandle_t handle;
  corpus::Rc("cusparseCreate", cusparseCreate(&handle));
  CORPUS_CHECK(cusparseSetStream(handle, stream));

  // A pentadiagonal 10007 x 10007 matrix with entries in {-2..2}.
  const int n = 10007;
  std::vector<int> row_ptr(n + 1), cols, coo_rows;
  std::vector<float> vals;
  for (int i = 0; i < n; ++i) {
    row_ptr[i] = static_cast<int>(cols.size());
    for (int d = -2; d <= 2; ++d) {
      int j = i + d * 3;
      if (j < 0 || j >= n) continue;
      cols.push_back(j);
      coo_rows.push_back(i);
      vals.push_back(static_cast<float>(((i + 2 * j) % 5) - 2));
    }
  }
  row_ptr[n] = static_cast<int>(cols.size());
  const int nnz = row_ptr[n];
  std::printf("matrix %d x %d, %d non-zeros\n", n, n, nnz);
  std::vector<float> x(n);
  for (int i = 0; i < n; ++i) x[i] = static_cast<float>(i % 7 - 3);
  std::vector<float> want(n, 0.0f);
  for (int i = 0; i < n; ++i)
    for (int p = row_ptr[i]; p < row_ptr[i + 1]; ++p)
      want[i] += vals[p] * x[cols[p]];

  int *d_row_ptr, *d_cols, *d_coo_rows;
  float *d_vals, *d_x, *d_y;
  CORPUS_CHECK(cudaMalloc(&d_row_ptr, (n + 1) * sizeof(int)));
  CORPUS_CHECK(cudaMalloc(&d_cols, nnz * sizeof(int)));
  CORPUS_CHECK(cudaMalloc(&d_coo_rows, nnz * sizeof(int)));
  CORPUS_CHECK(cudaMalloc(&d_vals, nnz * sizeof(float)));
  CORPUS_CHECK(cudaMalloc(&d_x, n * sizeof(float)));
  CORPUS_CHECK(cudaMalloc(&d_y, n * sizeof(float)));
  CORPUS_CHECK(cudaMemcpy(d_row_ptr, row_ptr.data(), (n + 1) * sizeof(int),
                          cudaMemcpyHostToDevice));
  CORPUS_CHECK(cudaMemcpy(d_cols, cols.data(), nnz * sizeof(int),
                          cudaMemcpyHostToDevice));
  CORPUS_CHECK(cudaMemcpy(d_coo_rows, coo_rows.data(), nnz * sizeof(int),
                          cudaMemcpyHostToDevice));
  CORPUS_CHECK(cudaMemcpy(d_vals, vals.data(), nnz * sizeof(float),
                          cudaMemcpyHostToDevice));
  CORPUS_CHECK(
      cudaMemcpy(d_x, x.data(), n * sizeof(float), cudaMemcpyHostToDevice));

  cusparseSpMatDescr_t csr, coo;
  cusparseDnVecDescr_t vx, vy;
  CORPUS_CHECK(cusparseCreateCsr(&csr, n, n, nnz, d_row_ptr, d_cols, d_vals,
                                 CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I,
                                 CUSPARSE_INDEX_BASE_ZERO, CUDA_R_32F));
  CORPUS_CHECK(cusparseCreateCoo(&coo, n, n, nnz, d_coo_rows, d_cols, d_vals,
                                 CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO,
                                 CUDA_R_32F));
  CORPUS_CHECK(cusparseCreateDnVec(&vx, n, d_x, CUDA_R_32F));
  CORPUS_CHECK(cusparseCreateDnVec(&vy, n, d_y, CUDA_R_32F));
  const float one = 1.0f, zero = 0.0f;
  std::vector<float> y(n);
  for (int form = 0; form < 2; ++form) {
    cusparseSpMatDescr_t mat = form == 0 ? csr : coo;
    const char* name = form == 0 ? "CSR" : "COO";
    size_t buffer_size = 0;
    CORPUS_CHECK(cusparseSpMV_bufferSize(
        handle, CUSPARSE_OPERATION_NON_TRANSPOSE, &one, mat, vx, &zero, vy,
        CUDA_R_32F, CUSPARSE_SPMV_ALG_DEFAULT, &buffer_size));
    void* buffer = nullptr;
    CORPUS_CHECK(cudaMalloc(&buffer, buffer_size > 0 ? buffer_size : 1));
    CORPUS_CHECK(cudaMemsetAsync(d_y, 0xff, n * sizeof(float), stream));
    corpus::Rc(
        form == 0 ? "cusparseSpMV CSR" : "cusparseSpMV COO",
        cusparseSpMV(handle, CUSPARSE_OPERATION_NON_TRANSPOSE, &one, mat, vx,
                     &zero, vy, CUDA_R_32F, CUSPARSE_SPMV_ALG_DEFAULT, buffer));
    CORPUS_CHECK(cudaMemcpyAsync(y.data(), d_y, n * sizeof(float),
                                 cudaMemcpyDeviceToHost, stream));
    CORPUS_CHECK(cudaStreamSynchronize(stream));
    int wrong = 0;
    for (int i = 0; i < n; ++i)
      if (y[i] != want[i]) ++wrong;
    std::printf("SpMV %s: %d wrong\n", name, wrong);
    corpus::Expect(wrong == 0, "SpMV %s", name);
    CORPUS_CHECK(cudaFree(buffer));
  }

  // SpMM: A (n x n) times a dense n x 8 block, column-major.
  const int k = 8;
  std::vector<float> b(n * k), c(n * k);
  for (int i = 0; i < n * k; ++i) b[i] = static_cast<float>((i * 5) % 9 - 4);
  float *d_b, *d_c;
  CORPUS_CHECK(cudaMalloc(&d_b, b.size() * sizeof(float)));
  CORPUS_CHECK(cudaMalloc(&d_c, c.size() * sizeof(float)));
  CORPUS_CHECK(cudaMemcpy(d_b, b.data(), b.size() * sizeof(float),
                          cudaMemcpyHostToDevice));
  cusparseDnMatDescr_t mb, mc;
  CORPUS_CHECK(
      cusparseCreateDnMat(&mb, n, k, n, d_b, CUDA_R_32F, CUSPARSE_ORDER_COL));
  CORPUS_CHECK(
      cusparseCreateDnMat(&mc, n, k, n, d_c, CUDA_R_32F, CUSPARSE_ORDER_COL));
  size_t mm_size = 0;
  CORPUS_CHECK(cusparseSpMM_bufferSize(handle, CUSPARSE_OPERATION_NON_TRANSPOSE,
                                       CUSPARSE_OPERATION_NON_TRANSPOSE, &one,
                                       csr, mb, &zero, mc, CUDA_R_32F,
                                       CUSPARSE_SPMM_ALG_DEFAULT, &mm_size));
  void* mm_buffer = nullptr;
  CORPUS_CHECK(cudaMalloc(&mm_buffer, mm_size > 0 ? mm_size : 1));
  corpus::Rc(
      "cusparseSpMM CSR x dense",
      cusparseSpMM(handle, CUSPARSE_OPERATION_NON_TRANSPOSE,
                   CUSPARSE_OPERATION_NON_TRANSPOSE, &one, csr, mb, &zero, mc,
                   CUDA_R_32F, CUSPARSE_SPMM_ALG_DEFAULT, mm_buffer));
  CORPUS_CHECK(cudaMemcpyAsync(c.data(), d_c, c.size() * sizeof(float),
                               cudaMemcpyDeviceToHost, stream));
  CORPUS_CHECK(cudaStreamSynchronize(stream));
  int wrong = 0;
  for (int col = 0; col < k; ++col)
    for (int i = 0; i < n; ++i) {
      float w = 0;
      for (int p = row_ptr[i]; p < row_ptr[i + 1]; ++p)
        w += vals[p] * b[col * n + cols[p]];
      if (c[col * n + i] != w) ++wrong;
    }
  std::printf("SpMM: %d wrong\n", wrong);
  corpus::Expect(wrong == 0, "SpMM");

  CORPUS_CHECK(cusparseDestroyDnMat(mb));
  CORPUS_CHECK(cusparseDestroyDnMat(mc));
  CORPUS_CHECK(cusparseDestroyDnVec(vx));
  CORPUS_CHECK(cusparseDestroyDnVec(vy));
  CORPUS_CHECK(cusparseDestroySpMat(csr));
  CORPUS_CHECK(cusparseDestroySpMat(coo));
  corpus::Rc("cusparseDestroy", cusparseDestroy(handle));
  for (void* p : {static_cast<void*>(d_row_ptr), static_cast<void*>(d_cols),
                  static_cast<void*>(d_coo_rows), static_cast<void*>(d_vals),
                  static_cast<void*>(d_x), static_cast<void*>(d_y),
                  static_cast<void*>(d_b), static_cast<void*>(d_c), mm_buffer})
    CORPUS_CHECK(cudaFree(p));
  CORPUS_CHECK(cudaStreamDestroy(stream));
  return corpus::Finish();
}
