// The data layout and pattern values shared by the memtest kernels
// (kernels/memtest_kernels.cu) and the host code that runs them
// (lib/memtest/runner.cc, lib/memtest/cuda_device.cc, and the CPU tests that
// run the kernels' own code on the host). Plain C layout, every field 8 bytes
// so both compilers lay it out identically.
//
// A memtest buffer is seen as 64-bit words. Word `index` counts from the start
// of the whole tested region (over all chunks), so a pattern is continuous
// across chunk boundaries. The value a word must hold is a pure function of
// (pattern, index, address): the verify kernels regenerate it instead of
// reading a reference copy.
#ifndef GMT_KERNELS_MEMTEST_ABI_H_
#define GMT_KERNELS_MEMTEST_ABI_H_

#include <stdint.h>

#if defined(__CUDACC__)
#define GMT_MEMTEST_HD __host__ __device__ __forceinline__
#else
#define GMT_MEMTEST_HD inline
#endif

#ifdef __cplusplus
extern "C" {
#endif

// Mismatches one verify launch records in full (all are counted).
#define GMT_MEMTEST_LOG_CAPACITY 256u

// What a word holds. Host names: lib/memtest_patterns.cc.
enum GmtMemtestKind {
  GMT_MEMTEST_WALK1 = 0,        // 1 << ((index + shift) % 64)
  GMT_MEMTEST_WALK0 = 1,        // ~(1 << ((index + shift) % 64))
  GMT_MEMTEST_ADDRESS = 2,      // the word's own device address
  GMT_MEMTEST_ADDRESS_INV = 3,  // its complement
  GMT_MEMTEST_CONST = 4,        // `value` everywhere (moving inversions)
  GMT_MEMTEST_MOD20 = 5,   // `value` where index % 20 == shift, else ~value
  GMT_MEMTEST_RANDOM = 6,  // Mix64(seed + index * golden ratio)
  GMT_MEMTEST_KIND_COUNT = 7
};

typedef struct GmtMemtestPattern {
  uint64_t kind;   // GmtMemtestKind
  uint64_t shift;  // walking: bit rotation; modulo-20: the offset (0..19)
  uint64_t value;  // constant / modulo-20 pattern
  uint64_t seed;   // random
} GmtMemtestPattern;

// One word that did not hold its expected value.
typedef struct GmtMemtestMismatch {
  uint64_t address;
  uint64_t expected;
  uint64_t actual;
  uint64_t reserved;
} GmtMemtestMismatch;

// Written by a verify launch; the host zeroes `mismatches` before it.
// records[0 .. min(mismatches, capacity)) hold the first ones found (in no
// particular order: threads race for the slots).
typedef struct GmtMemtestLog {
  unsigned long long mismatches;  // every mismatched word, recorded or not
  unsigned long long reserved;
  GmtMemtestMismatch records[GMT_MEMTEST_LOG_CAPACITY];
} GmtMemtestLog;

// Verify flags.
#define GMT_MEMTEST_REWRITE 1u     // after checking a word, write `next.value`
#define GMT_MEMTEST_DESCENDING 2u  // sweep from the highest address down

// splitmix64's finalizer: a counter-based generator, so word i's random value
// is regenerated from (seed, i) alone.
GMT_MEMTEST_HD uint64_t GmtMemtestMix64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 31;
  return x;
}

// The value word `index` at `address` must hold under `p`.
GMT_MEMTEST_HD uint64_t GmtMemtestValue(const GmtMemtestPattern* p,
                                        uint64_t index, uint64_t address) {
  switch (p->kind) {
    case GMT_MEMTEST_WALK1:
      return 1ull << ((index + p->shift) & 63u);
    case GMT_MEMTEST_WALK0:
      return ~(1ull << ((index + p->shift) & 63u));
    case GMT_MEMTEST_ADDRESS:
      return address;
    case GMT_MEMTEST_ADDRESS_INV:
      return ~address;
    case GMT_MEMTEST_CONST:
      return p->value;
    case GMT_MEMTEST_MOD20:
      return index % 20u == p->shift ? p->value : ~p->value;
    case GMT_MEMTEST_RANDOM:
    default:
      return GmtMemtestMix64(p->seed + index * 0x9e3779b97f4a7c15ull);
  }
}

// Kernel entry points (extern "C" names, for cuLibraryGetKernel). `base` is
// 16-byte aligned, `vectors` counts 16-byte vectors (two words each) from it,
// and `first_index` is the word index of `base`. Grid-stride: any grid works.
//
//   gmt_memtest_write(GmtMemtestPattern p, uint64_t base, uint64_t vectors,
//                     uint64_t first_index)
//     stores p's value into every word.
//
//   gmt_memtest_verify(GmtMemtestPattern expect, GmtMemtestPattern next,
//                      uint64_t flags, uint64_t base, uint64_t vectors,
//                      uint64_t first_index, GmtMemtestLog* log)
//     compares every word with expect's value; counts and records mismatches
//     in *log. GMT_MEMTEST_REWRITE: then stores next.value (a constant) into
//     each word that matched (a mismatched word is left as read, so the host
//     can read it again). GMT_MEMTEST_DESCENDING: the sweep runs downwards.
//
//   gmt_memtest_flip(uint64_t address, uint64_t mask)
//     TEST ONLY (the fault-injection hook): one thread XORs the 64-bit word
//     at `address` with `mask`.

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // GMT_KERNELS_MEMTEST_ABI_H_
