// Shared by the differential corpus programs (tests/gpu/corpus/): how they
// print the outcome of the calls that matter and check their own results.
//
// The corpus runner (tests/gpu/gpu_cases_corpus.py) runs every program without
// and with gpumemtrace and compares stdout line by line, so stdout must be
// deterministic: no addresses, no timings. Lines starting with "~ " (timings,
// bandwidth) and "RESULT " (machine-readable figures) are masked by the runner.
//
//   CORPUS_CHECK(call)       a call that must succeed: on failure its name
//                            and code go to stderr and the program exits 2
//   corpus::Rc("what", rc)   prints "what -> <code> (<name>)" and returns rc,
//                            for calls whose outcome is part of the result
//   corpus::Expect(ok, ...)  a self-check: prints "FAIL: ..." when false
//   return corpus::Finish()  prints "<program>: ok" or the failure count;
//                            exits 1 when any self-check failed
//
// Include the CUDA libraries' headers (cuBLAS, cuFFT, cuSPARSE, cuRAND) before
// this one: their status codes are then understood too.
#ifndef GMT_TESTS_GPU_CORPUS_CORPUS_CHECK_H_
#define GMT_TESTS_GPU_CORPUS_CORPUS_CHECK_H_

#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace corpus {

inline int& Failures() {
  static int failures = 0;
  return failures;
}

inline const char*& ProgramName() {
  static const char* name = "corpus";
  return name;
}

inline const char* ErrorName(cudaError_t rc) { return cudaGetErrorName(rc); }

inline const char* ErrorName(CUresult rc) {
  const char* name = nullptr;
  if (cuGetErrorName(rc, &name) != CUDA_SUCCESS || name == nullptr)
    return "CUDA_ERROR_UNKNOWN_CODE";
  return name;
}

// The CUDA libraries' status codes, when their header came first.
#ifdef CUBLAS_VER_MAJOR
inline const char* ErrorName(cublasStatus_t s) {
  return cublasGetStatusName(s);
}
inline bool Failed(cublasStatus_t s) { return s != CUBLAS_STATUS_SUCCESS; }
#endif
#ifdef CUSPARSE_VER_MAJOR
inline const char* ErrorName(cusparseStatus_t s) {
  return cusparseGetErrorName(s);
}
inline bool Failed(cusparseStatus_t s) { return s != CUSPARSE_STATUS_SUCCESS; }
#endif
#ifdef CUFFT_VER_MAJOR
inline const char* ErrorName(cufftResult r) {
  return r == CUFFT_SUCCESS ? "CUFFT_SUCCESS" : "CUFFT_ERROR";
}
inline bool Failed(cufftResult r) { return r != CUFFT_SUCCESS; }
#endif
#ifdef CURAND_VER_MAJOR
inline const char* ErrorName(curandStatus_t s) {
  return s == CURAND_STATUS_SUCCESS ? "CURAND_STATUS_SUCCESS"
                                    : "CURAND_STATUS_ERROR";
}
inline bool Failed(curandStatus_t s) { return s != CURAND_STATUS_SUCCESS; }
#endif

// Prints the outcome of a call whose return code the comparison includes.
template <typename Code>
Code Rc(const char* what, Code rc) {
  std::printf("%s -> %d (%s)\n", what, static_cast<int>(rc), ErrorName(rc));
  std::fflush(stdout);
  return rc;
}

inline bool Expect(bool ok, const char* format, ...) {
  if (!ok) {
    ++Failures();
    std::va_list args;
    va_start(args, format);
    std::printf("FAIL: ");
    std::vprintf(format, args);
    std::printf("\n");
    std::fflush(stdout);
    va_end(args);
  }
  return ok;
}

inline int Finish() {
  if (Failures() == 0) {
    std::printf("%s: ok\n", ProgramName());
    return 0;
  }
  std::printf("%s: %d check(s) failed\n", ProgramName(), Failures());
  return 1;
}

[[noreturn]] inline void Die(const char* file, int line, const char* call,
                             const char* name, int code) {
  std::fflush(stdout);
  std::fprintf(stderr, "%s:%d: %s failed: %s (%d)\n", file, line, call, name,
               code);
  std::exit(2);
}

inline bool Failed(cudaError_t rc) { return rc != cudaSuccess; }
inline bool Failed(CUresult rc) { return rc != CUDA_SUCCESS; }

}  // namespace corpus

#define CORPUS_CHECK(call)                                                  \
  do {                                                                      \
    auto corpus_rc_ = (call);                                               \
    if (corpus::Failed(corpus_rc_))                                         \
      corpus::Die(__FILE__, __LINE__, #call, corpus::ErrorName(corpus_rc_), \
                  static_cast<int>(corpus_rc_));                            \
  } while (0)

#endif  // GMT_TESTS_GPU_CORPUS_CORPUS_CHECK_H_
