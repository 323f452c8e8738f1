// linked_snapshot: a program that LINKS libgpumemtrace (find_package
// gpumemtrace / target gpumemtrace::gpumemtrace, or -lgpumemtrace) instead of
// being run under LD_PRELOAD. The tracer is then always on in this program:
// gmt::Available() is true without any environment, its cudaMalloc binds to
// the tracer before the runtime (the library comes first on the link line),
// and the exit report is written as usual (GMT_OPTIONS still applies).
//
// Expected (no LD_PRELOAD):
//   linked_snapshot: available=1 active=1
//   linked_snapshot: delta: allocations=+4 bytes=+4194304
//   linked_snapshot: allocations from LinkedSnapshotAllocate: 4
//   linked_snapshot: delta after free: allocations=+1 bytes=+4096
// and an exit report whose only leak is the 4096-byte cudaMalloc from
// LinkedSnapshotLeak (kept on purpose), with no errors.
#include <cuda_runtime.h>

#include <cstdio>
#include <string>

#include "example_check.h"
#include "gmt/gmt.h"

constexpr int kCount = 4;
constexpr size_t kBytes = 1 << 20;
constexpr size_t kLeakBytes = 4096;

__attribute__((noinline)) void LinkedSnapshotAllocate(void** out) {
  for (int i = 0; i < kCount; ++i) {
    EXAMPLE_CHECK_CUDA(cudaMalloc(&out[i], kBytes));
  }
}

__attribute__((noinline)) void LinkedSnapshotRelease(void** ptrs) {
  for (int i = 0; i < kCount; ++i) EXAMPLE_CHECK_CUDA(cudaFree(ptrs[i]));
}

// Never freed: the exit report must list it, which shows that the linked
// tracer also writes its report.
__attribute__((noinline)) void* LinkedSnapshotLeak() {
  void* p = nullptr;
  EXAMPLE_CHECK_CUDA(cudaMalloc(&p, kLeakBytes));
  return p;
}

bool StackMentions(const gmt::Allocation& a, const char* name) {
  for (const gmt::Frame& f : a.stack) {
    if (f.function.find(name) != std::string::npos) return true;
  }
  return false;
}

void PrintDelta(const char* label, const gmt::Snapshot& before,
                const gmt::Snapshot& after) {
  std::printf("linked_snapshot: %s: allocations=%+lld bytes=%+lld\n", label,
              static_cast<long long>(after.allocations.size()) -
                  static_cast<long long>(before.allocations.size()),
              static_cast<long long>(after.live_bytes) -
                  static_cast<long long>(before.live_bytes));
}

int main() {
  // Context creation and the runtime's own first allocations happen before
  // the "before" snapshot, so the deltas are the program's.
  void* warm = nullptr;
  EXAMPLE_CHECK_CUDA(cudaMalloc(&warm, 256));
  EXAMPLE_CHECK_CUDA(cudaFree(warm));

  // Linked, so this is true whatever the environment says.
  std::printf("linked_snapshot: available=%d", gmt::Available() ? 1 : 0);
  if (!gmt::Available()) {
    std::printf("\n");
    return 1;
  }
  gmt::Snapshot before = gmt::snapshot();
  std::printf(" active=%d\n", before.active ? 1 : 0);

  void* ptrs[kCount] = {};
  LinkedSnapshotAllocate(ptrs);
  gmt::Snapshot after = gmt::snapshot();
  PrintDelta("delta", before, after);
  int from_allocate = 0;
  for (const gmt::Allocation& a : after.allocations) {
    if (a.bytes == kBytes && StackMentions(a, "LinkedSnapshotAllocate")) {
      ++from_allocate;
    }
  }
  std::printf("linked_snapshot: allocations from LinkedSnapshotAllocate: %d\n",
              from_allocate);

  LinkedSnapshotRelease(ptrs);
  LinkedSnapshotLeak();
  PrintDelta("delta after free", before, gmt::snapshot());
  return 0;
}
