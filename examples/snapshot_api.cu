// snapshot_api: the public API (include/gmt/gmt.h) used from a program that
// does NOT link libgpumemtrace: every gmt declaration is weak, so the program
// runs alone, and when the tool is preloaded the calls bind to it.
//
// Expected: without the tool it prints "gpumemtrace not loaded" and exits 0.
// Under the tool, gmt::Available() is true and the snapshots show exactly
// "delta: allocations=+3 bytes=+3145728" after SnapshotApiAllocate's three
// 1 MiB cudaMallocs, a stack containing SnapshotApiAllocate for them, a JSON
// snapshot from gmt_snapshot_json() that names SnapshotApiAllocate, and
// "delta after free: allocations=+0 bytes=+0" once they are freed. The exit
// report has no leaks and no errors.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "example_check.h"
#include "gmt/gmt.h"

constexpr int kCount = 3;
constexpr size_t kBytes = 1 << 20;

__attribute__((noinline)) void SnapshotApiAllocate(void** out, int count,
                                                   size_t bytes) {
  for (int i = 0; i < count; ++i) {
    EXAMPLE_CHECK_CUDA(cudaMalloc(&out[i], bytes));
  }
}

__attribute__((noinline)) void SnapshotApiRelease(void** ptrs, int count) {
  for (int i = 0; i < count; ++i) EXAMPLE_CHECK_CUDA(cudaFree(ptrs[i]));
}

bool StackMentions(const gmt::Allocation& a, const char* name) {
  for (const gmt::Frame& f : a.stack) {
    if (f.function.find(name) != std::string::npos) return true;
  }
  return false;
}

void PrintDelta(const char* label, const gmt::Snapshot& before,
                const gmt::Snapshot& after) {
  std::printf("snapshot_api: %s: allocations=%+lld bytes=%+lld\n", label,
              static_cast<long long>(after.allocations.size()) -
                  static_cast<long long>(before.allocations.size()),
              static_cast<long long>(after.live_bytes) -
                  static_cast<long long>(before.live_bytes));
}

int main() {
  // Create the context and let the runtime make its first allocation before
  // the "before" snapshot, so the deltas are the program's own.
  void* warm = nullptr;
  EXAMPLE_CHECK_CUDA(cudaMalloc(&warm, 256));
  EXAMPLE_CHECK_CUDA(cudaFree(warm));

  if (!gmt::Available()) {
    std::printf(
        "snapshot_api: gpumemtrace not loaded (run it under LD_PRELOAD="
        "libgpumemtrace.so)\n");
    void* ptrs[kCount] = {};
    SnapshotApiAllocate(ptrs, kCount, kBytes);
    SnapshotApiRelease(ptrs, kCount);
    return 0;
  }

  gmt::Snapshot before = gmt::snapshot();
  std::printf("snapshot_api: active=%d\n", before.active ? 1 : 0);
  std::printf("snapshot_api: before: %zu live allocations, %zu bytes\n",
              before.allocations.size(), before.live_bytes);

  void* ptrs[kCount] = {};
  SnapshotApiAllocate(ptrs, kCount, kBytes);
  gmt::Snapshot after = gmt::snapshot();
  std::printf("snapshot_api: after: %zu live allocations, %zu bytes\n",
              after.allocations.size(), after.live_bytes);
  PrintDelta("delta", before, after);

  int with_stack = 0;
  for (const gmt::Allocation& a : after.allocations) {
    if (StackMentions(a, "SnapshotApiAllocate")) ++with_stack;
  }
  std::printf("snapshot_api: allocations from SnapshotApiAllocate: %d\n",
              with_stack);
  for (const gmt::DeviceUsage& d : after.devices) {
    std::printf(
        "snapshot_api: device %d: live %zu bytes, peak %zu bytes, %llu "
        "allocations, %llu frees\n",
        d.device, d.live_bytes, d.peak_bytes,
        static_cast<unsigned long long>(d.allocations),
        static_cast<unsigned long long>(d.frees));
  }

  if (&gmt_snapshot_json != nullptr && &gmt_free != nullptr) {
    char* json = gmt_snapshot_json();
    if (json == nullptr) {
      std::printf("snapshot_api: gmt_snapshot_json returned NULL\n");
    } else {
      std::printf(
          "snapshot_api: gmt_snapshot_json: %zu chars, names "
          "SnapshotApiAllocate: %s\n",
          std::strlen(json),
          std::strstr(json, "SnapshotApiAllocate") ? "yes" : "no");
      gmt_free(json);
    }
  }
  if (&gmt_live_bytes != nullptr) {
    std::printf("snapshot_api: gmt_live_bytes(-2) = %zu\n", gmt_live_bytes(-2));
  }

  SnapshotApiRelease(ptrs, kCount);
  gmt::Snapshot freed = gmt::snapshot();
  PrintDelta("delta after free", before, freed);
  return 0;
}
