// Shared by the guard-zone examples (oob_*, uaf_write): keeps their bad
// writes from faulting when they run WITHOUT the tool, so that every example
// exits 0 and prints the same stdout with and without it.
//
// Without the tool a write past an allocation lands in the allocator's slack
// or in a neighbouring block; that is harmless as long as it stays inside
// memory the driver has mapped. Device memory from cudaMalloc/cuMemAlloc is
// mapped in 2 MiB pages (the allocator carves small blocks out of them), so a
// bad write that stays inside the 2 MiB page holding the allocation's nearest
// byte cannot fault. Managed memory is checked against 4 KiB pages, the
// smallest granularity it is ever mapped with. Under the tool the bad write
// lands in a redzone, which is always mapped; the check uses the addresses
// the program sees, so it passes there too (a miss is printed to stderr and
// the GPU test then fails with "no error found", never with a crash).
#ifndef GMT_EXAMPLES_GUARD_EXAMPLE_H_
#define GMT_EXAMPLES_GUARD_EXAMPLE_H_

#include <cstddef>
#include <cstdint>
#include <cstdio>

constexpr uintptr_t kDevicePageBytes = uintptr_t{2} << 20;
constexpr uintptr_t kManagedPageBytes = uintptr_t{4} << 10;

// True when writing `count` bytes at offset `first` (negative: before the
// start) of the allocation [base, base + bytes) stays in the page (of
// `page_bytes`) that holds the allocation byte nearest to the write.
inline bool BadWriteStaysMapped(const void* base, size_t bytes, long long first,
                                size_t count, uintptr_t page_bytes,
                                const char* program) {
  uintptr_t b = reinterpret_cast<uintptr_t>(base);
  uintptr_t lo = b + static_cast<intptr_t>(first);
  uintptr_t hi = lo + count - 1;
  bool ok;
  if (first < 0) {
    ok = lo / page_bytes == b / page_bytes;  // before the start
  } else {
    ok = hi / page_bytes == (b + bytes - 1) / page_bytes;  // after the end
  }
  if (!ok) {
    std::fprintf(stderr,
                 "%s: the bad write would leave the mapped page; skipped "
                 "(no error to find in this run)\n",
                 program);
  }
  return ok;
}

// Bytes [from, to) of a host copy, summed: the in-bounds checksum the
// examples print (identical with and without the tool).
inline unsigned long long ByteSum(const unsigned char* p, size_t from,
                                  size_t to) {
  unsigned long long s = 0;
  for (size_t i = from; i < to; ++i) s += p[i];
  return s;
}

#endif  // GMT_EXAMPLES_GUARD_EXAMPLE_H_
