// The memtest kernels: write a pattern over device memory, read it back and
// compare (layout, patterns and entry points: memtest_abi.h). Device code
// only; the host side is lib/memtest/cuda_device.cc, which loads this file's
// fatbin with cuLibraryLoadData.
//
// Memory bound by design: each thread moves 16-byte vectors (two words) in a
// grid-stride loop, with kUnroll independent loads in flight in the verify
// loop, streaming (evict-first) loads and stores so a sweep does not sit in L2,
// and one uniform switch on the pattern kind outside the loop (a template per
// kind), so the inner loop is a few integer ops per word. The clean path of a
// verify is one OR of XORs per vector; a mismatch takes an out-of-line path
// that counts it and records it.
//
// Sweep order: vector v of the launch is handled in "wave" v / (grid threads);
// ascending, wave 0 covers the lowest addresses; GMT_MEMTEST_DESCENDING maps v
// to vectors - 1 - v, so the waves run from the highest address down. This is
// how the moving-inversions test (memtest86 tests 7/8: check p and write ~p
// upwards, then check ~p and write p downwards) is adapted to a GPU: the order
// holds between waves, not between the threads of one wave.
#include <stdint.h>

#include "kernels/memtest_abi.h"

namespace {

constexpr unsigned kBlockThreads = 256;
constexpr unsigned kMinBlocksPerSm = 4;
constexpr unsigned kUnroll = 4;

struct Words {
  uint64_t lo, hi;
};

__device__ __forceinline__ Words Split(uint4 v) {
  return {uint64_t{v.x} | (uint64_t{v.y} << 32),
          uint64_t{v.z} | (uint64_t{v.w} << 32)};
}

__device__ __forceinline__ uint4 Join(uint64_t lo, uint64_t hi) {
  return make_uint4(static_cast<unsigned>(lo), static_cast<unsigned>(lo >> 32),
                    static_cast<unsigned>(hi), static_cast<unsigned>(hi >> 32));
}

// The pattern with its kind fixed at compile time, so the loops hold no
// switch.
template <unsigned kKind>
__device__ __forceinline__ uint64_t ValueOf(const GmtMemtestPattern& p,
                                            uint64_t index, uint64_t address) {
  GmtMemtestPattern q = p;
  q.kind = kKind;
  return GmtMemtestValue(&q, index, address);
}

// Out of line: the rare mismatch path costs the clean loop no registers.
__device__ __noinline__ void Record(GmtMemtestLog* log, uint64_t address,
                                    uint64_t expected, uint64_t actual) {
  const unsigned long long slot = atomicAdd(&log->mismatches, 1ull);
  if (slot < GMT_MEMTEST_LOG_CAPACITY) {
    GmtMemtestMismatch* m = &log->records[slot];
    m->address = address;
    m->expected = expected;
    m->actual = actual;
    m->reserved = 0;
  }
}

template <unsigned kKind>
__device__ void WriteSweep(const GmtMemtestPattern& p, uint64_t base,
                           uint64_t vectors, uint64_t first_index) {
  const uint64_t tid = uint64_t{blockIdx.x} * blockDim.x + threadIdx.x;
  const uint64_t stride = uint64_t{gridDim.x} * blockDim.x;
  uint4* v = reinterpret_cast<uint4*>(base);
  for (uint64_t i = tid; i < vectors; i += stride) {
    const uint64_t address = base + i * 16;
    const uint64_t index = first_index + 2 * i;
    __stcs(v + i, Join(ValueOf<kKind>(p, index, address),
                       ValueOf<kKind>(p, index + 1, address + 8)));
  }
}

// Checks one vector (its logical position `i`), then rewrites it if asked.
template <unsigned kKind, bool kRewrite>
__device__ __forceinline__ void CheckVector(const GmtMemtestPattern& p,
                                            uint64_t next, uint64_t base,
                                            uint64_t i, uint64_t first_index,
                                            uint4 got, GmtMemtestLog* log) {
  const uint64_t address = base + i * 16;
  const uint64_t index = first_index + 2 * i;
  const uint64_t e0 = ValueOf<kKind>(p, index, address);
  const uint64_t e1 = ValueOf<kKind>(p, index + 1, address + 8);
  const Words w = Split(got);
  const bool bad0 = w.lo != e0, bad1 = w.hi != e1;
  if (bad0 | bad1) {
    if (bad0) Record(log, address, e0, w.lo);
    if (bad1) Record(log, address + 8, e1, w.hi);
  }
  if (kRewrite) {
    uint4* v = reinterpret_cast<uint4*>(base) + i;
    if (!(bad0 | bad1)) {
      __stcs(v, Join(next, next));
    } else {
      // Leave a mismatched word as read, for the host's second read.
      uint64_t* word = reinterpret_cast<uint64_t*>(v);
      if (!bad0) word[0] = next;
      if (!bad1) word[1] = next;
    }
  }
}

template <unsigned kKind, bool kRewrite>
__device__ void VerifySweep(const GmtMemtestPattern& p, uint64_t next,
                            bool descending, uint64_t base, uint64_t vectors,
                            uint64_t first_index, GmtMemtestLog* log) {
  const uint64_t tid = uint64_t{blockIdx.x} * blockDim.x + threadIdx.x;
  const uint64_t stride = uint64_t{gridDim.x} * blockDim.x;
  const uint4* v = reinterpret_cast<const uint4*>(base);
  // Logical position -> vector index.
  auto at = [&](uint64_t j) { return descending ? vectors - 1 - j : j; };
  uint64_t j = tid;
  for (; j + (kUnroll - 1) * stride < vectors; j += kUnroll * stride) {
    uint4 got[kUnroll];
#pragma unroll
    for (unsigned k = 0; k < kUnroll; ++k)
      got[k] = __ldcs(v + at(j + k * stride));
#pragma unroll
    for (unsigned k = 0; k < kUnroll; ++k) {
      CheckVector<kKind, kRewrite>(p, next, base, at(j + k * stride),
                                   first_index, got[k], log);
    }
  }
  for (; j < vectors; j += stride) {
    CheckVector<kKind, kRewrite>(p, next, base, at(j), first_index,
                                 __ldcs(v + at(j)), log);
  }
}

template <bool kRewrite>
__device__ void VerifyAnyKind(const GmtMemtestPattern& p, uint64_t next,
                              bool descending, uint64_t base, uint64_t vectors,
                              uint64_t first_index, GmtMemtestLog* log) {
  switch (p.kind) {
#define GMT_MEMTEST_CASE(kind)                                      \
  case kind:                                                        \
    VerifySweep<kind, kRewrite>(p, next, descending, base, vectors, \
                                first_index, log);                  \
    break;
    GMT_MEMTEST_CASE(GMT_MEMTEST_WALK1)
    GMT_MEMTEST_CASE(GMT_MEMTEST_WALK0)
    GMT_MEMTEST_CASE(GMT_MEMTEST_ADDRESS)
    GMT_MEMTEST_CASE(GMT_MEMTEST_ADDRESS_INV)
    GMT_MEMTEST_CASE(GMT_MEMTEST_CONST)
    GMT_MEMTEST_CASE(GMT_MEMTEST_MOD20)
    GMT_MEMTEST_CASE(GMT_MEMTEST_RANDOM)
#undef GMT_MEMTEST_CASE
    default:
      break;
  }
}

}  // namespace

extern "C" __global__ void __launch_bounds__(kBlockThreads, kMinBlocksPerSm)
    gmt_memtest_write(GmtMemtestPattern p, uint64_t base, uint64_t vectors,
                      uint64_t first_index) {
  switch (p.kind) {
#define GMT_MEMTEST_CASE(kind)                       \
  case kind:                                         \
    WriteSweep<kind>(p, base, vectors, first_index); \
    break;
    GMT_MEMTEST_CASE(GMT_MEMTEST_WALK1)
    GMT_MEMTEST_CASE(GMT_MEMTEST_WALK0)
    GMT_MEMTEST_CASE(GMT_MEMTEST_ADDRESS)
    GMT_MEMTEST_CASE(GMT_MEMTEST_ADDRESS_INV)
    GMT_MEMTEST_CASE(GMT_MEMTEST_CONST)
    GMT_MEMTEST_CASE(GMT_MEMTEST_MOD20)
    GMT_MEMTEST_CASE(GMT_MEMTEST_RANDOM)
#undef GMT_MEMTEST_CASE
    default:
      break;
  }
}

extern "C" __global__ void __launch_bounds__(kBlockThreads, kMinBlocksPerSm)
    gmt_memtest_verify(GmtMemtestPattern expect, GmtMemtestPattern next,
                       uint64_t flags, uint64_t base, uint64_t vectors,
                       uint64_t first_index, GmtMemtestLog* log) {
  const bool descending = (flags & GMT_MEMTEST_DESCENDING) != 0;
  if ((flags & GMT_MEMTEST_REWRITE) != 0) {
    VerifyAnyKind<true>(expect, next.value, descending, base, vectors,
                        first_index, log);
  } else {
    VerifyAnyKind<false>(expect, next.value, descending, base, vectors,
                         first_index, log);
  }
}

// TEST ONLY: the fault-injection hook (GMT_MEMTEST_INJECT); never launched in
// a normal run.
extern "C" __global__ void gmt_memtest_flip(uint64_t address, uint64_t mask) {
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    volatile uint64_t* word = reinterpret_cast<volatile uint64_t*>(address);
    *word = *word ^ mask;
  }
}
