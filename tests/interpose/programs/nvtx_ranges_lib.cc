// The NVTX half of gmt_nvtx_program, built as a shared library: NVTX code in
// a shared library (as in libtorch) reaches the preloaded tool through NVTX's
// static-injection symbol, which an executable would bind to its own null
// definition. See nvtx_program.cc.
#include <nvtx3/nvToolsExt.h>

#include <cstdio>
#include <nvtx3/nvtx3.hpp>

#include "tests/interpose/programs/program_util.h"

NOINLINE void* ForwardAllocate(size_t bytes) {
  void* p = nullptr;
  Rt("cudaMalloc(forward)", cudaMalloc(&p, bytes));
  return p;
}

NOINLINE void* BackwardAllocate(size_t bytes) {
  void* p = nullptr;
  Rt("cudaMalloc(backward)", cudaMalloc(&p, bytes));
  return p;
}

NOINLINE void* OutsideAllocate(size_t bytes) {
  void* p = nullptr;
  Rt("cudaMalloc(outside)", cudaMalloc(&p, bytes));
  return p;
}

struct my_domain {
  static constexpr char const* name{"gmt_test"};
};
struct backward_message {
  static constexpr char const* message{"backward"};
};

extern "C" __attribute__((visibility("default"))) int RunNvtx() {
  std::printf("push train -> %d\n", nvtxRangePushA("train"));
  std::printf("push forward -> %d\n", nvtxRangePushA("forward"));
  ForwardAllocate(1000);
  ForwardAllocate(1000);
  std::printf("pop -> %d\n", nvtxRangePop());
  {
    // The C++ API: a domain range whose message is a registered string.
    auto& message =
        nvtx3::registered_string_in<my_domain>::get<backward_message>();
    nvtx3::scoped_range_in<my_domain> range{nvtx3::event_attributes{message}};
    BackwardAllocate(3000);
  }
  std::printf("pop -> %d\n", nvtxRangePop());
  OutsideAllocate(500);
  nvtxRangePushA("eval");
  void* p = nullptr;
  Rt("cudaMalloc(eval)", cudaMalloc(&p, 700));
  Rt("cudaFree(eval)", cudaFree(p));
  nvtxRangePop();
  return 0;
}
