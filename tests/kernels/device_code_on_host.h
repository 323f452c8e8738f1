// Just enough of CUDA's device-side vocabulary to compile a kernel file as
// host C++ (zone_kernels_host_test.cc includes kernels/zone_kernels.cu after
// this header), so the kernels' own code runs in CPU tests.
//
// A launch runs every thread of every block in turn (RunGrid). That is exact
// only for kernels without __syncthreads, shared memory or warp intrinsics
// that exchange data between threads: the table kernels use none, and their
// atomics become plain read-modify-writes, which sequential threads make
// atomic. The inline check (one block, shared tallies, a barrier) is run by
// phases instead (zone_kernels_host_test.cc).
#ifndef GMT_TESTS_KERNELS_DEVICE_CODE_ON_HOST_H_
#define GMT_TESTS_KERNELS_DEVICE_CODE_ON_HOST_H_

#include <cstdint>
#include <cstring>

// System headers first: the macros below would break their attributes.
#define __global__
#define __device__
#define __forceinline__ inline
#define __noinline__
#define __launch_bounds__(...)
// A kernel with block-shared state compiles, but only its phases between
// barriers can run here, called one after another by the test (the inline
// check's InlineClear / InlineScan / InlinePublish): sequential threads would
// pass a barrier before the others reached it.
#define __shared__ static
inline void __syncthreads() {}
inline void __threadfence_system() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }

struct uint4 {
  unsigned int x, y, z, w;
};
inline uint4 make_uint4(unsigned x, unsigned y, unsigned z, unsigned w) {
  return uint4{x, y, z, w};
}

struct HostDim3 {
  unsigned int x = 0, y = 0, z = 0;
};
inline HostDim3 threadIdx, blockIdx, blockDim, gridDim;

inline unsigned long long __ldg(const unsigned long long* p) { return *p; }
inline uint4 __ldcs(const uint4* p) { return *p; }
inline uint4 __ldcg(const uint4* p) { return *p; }
inline void __stcs(uint4* p, uint4 v) { *p = v; }

// 0xff in each byte lane where a and b differ.
inline unsigned int __vcmpne4(unsigned int a, unsigned int b) {
  unsigned int out = 0;
  for (int lane = 0; lane < 4; ++lane) {
    const unsigned int mask = 0xffu << (8 * lane);
    if ((a & mask) != (b & mask)) out |= mask;
  }
  return out;
}
inline int __popc(unsigned int x) { return __builtin_popcount(x); }
inline int __ffs(unsigned int x) { return __builtin_ffs(static_cast<int>(x)); }
inline int __clz(unsigned int x) { return x == 0 ? 32 : __builtin_clz(x); }

inline unsigned long long atomicAdd(unsigned long long* p,
                                    unsigned long long v) {
  const unsigned long long old = *p;
  *p = old + v;
  return old;
}
inline unsigned long long atomicMax(unsigned long long* p,
                                    unsigned long long v) {
  const unsigned long long old = *p;
  if (v > old) *p = v;
  return old;
}

// Runs `kernel(args...)` as a grid of `grid` blocks of `block` threads.
template <typename Kernel, typename... Args>
void RunGrid(unsigned grid, unsigned block, Kernel kernel, Args... args) {
  gridDim = {grid, 1, 1};
  blockDim = {block, 1, 1};
  for (unsigned b = 0; b < grid; ++b) {
    for (unsigned t = 0; t < block; ++t) {
      blockIdx = {b, 0, 0};
      threadIdx = {t, 0, 0};
      kernel(args...);
    }
  }
}

#endif  // GMT_TESTS_KERNELS_DEVICE_CODE_ON_HOST_H_
