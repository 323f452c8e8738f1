// Shared by the example programs: abort with a message when a CUDA call that
// must succeed fails. Calls whose failure is the point of an example (a double
// free, say) are not checked with these; the examples print their codes.
#ifndef GMT_EXAMPLES_EXAMPLE_CHECK_H_
#define GMT_EXAMPLES_EXAMPLE_CHECK_H_

#include <cstdio>
#include <cstdlib>

#define EXAMPLE_CHECK_CUDA(call)                                              \
  do {                                                                        \
    cudaError_t example_err_ = (call);                                        \
    if (example_err_ != cudaSuccess) {                                        \
      std::fprintf(stderr, "%s:%d: %s failed: %s (%d)\n", __FILE__, __LINE__, \
                   #call, cudaGetErrorName(example_err_),                     \
                   static_cast<int>(example_err_));                           \
      std::exit(2);                                                           \
    }                                                                         \
  } while (0)

#define EXAMPLE_CHECK_CU(call)                                                \
  do {                                                                        \
    CUresult example_res_ = (call);                                           \
    if (example_res_ != CUDA_SUCCESS) {                                       \
      const char* example_name_ = nullptr;                                    \
      cuGetErrorName(example_res_, &example_name_);                           \
      std::fprintf(stderr, "%s:%d: %s failed: %s (%d)\n", __FILE__, __LINE__, \
                   #call, example_name_ ? example_name_ : "?",                \
                   static_cast<int>(example_res_));                           \
      std::exit(2);                                                           \
    }                                                                         \
  } while (0)

#endif  // GMT_EXAMPLES_EXAMPLE_CHECK_H_
