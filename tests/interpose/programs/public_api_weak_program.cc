// Uses the public API the opt-in way: includes gmt/gmt.h, does NOT link the
// library. Under LD_PRELOAD gmt::Available() is true and snapshot() lists the
// live blocks; without the tool Available() is false and nothing crashes.
// Then the diff workflow: snapshot, allocate 3 blocks from one function and 1
// from another, free the pinned block, snapshot, gmt::diff().
#include <cuda_runtime_api.h>

#include <cstdio>
#include <string>
#include <vector>

#include "gmt/gmt.h"

__attribute__((noinline)) void* SnapshotVisibleAllocation() {
  void* p = nullptr;
  std::printf("cudaMalloc(1234) -> %d\n",
              static_cast<int>(cudaMalloc(&p, 1234)));
  return p;
}

// Three blocks from one call site (one cudaMalloc line, one caller line).
__attribute__((noinline)) void DiffAllocateThree(void** out, int n) {
  for (int i = 0; i < n; ++i) {
    std::printf("cudaMalloc(%d) -> %d\n", 1000 * (i + 1),
                static_cast<int>(cudaMalloc(&out[i], 1000 * (i + 1))));
  }
}

__attribute__((noinline)) void* DiffAllocateOne() {
  void* p = nullptr;
  std::printf("cudaMalloc(5000) -> %d\n",
              static_cast<int>(cudaMalloc(&p, 5000)));
  return p;
}

void PrintGroups(const char* label, const std::vector<gmt::DiffGroup>& groups) {
  for (const gmt::DiffGroup& g : groups) {
    std::string where = g.stack.empty() ? "?" : g.stack[0].function;
    std::printf("diff %s count=%llu bytes=%zu api=%s device=%d top=%s\n", label,
                static_cast<unsigned long long>(g.count), g.bytes,
                g.api.c_str(), g.device, where.c_str());
  }
}

int main(int argc, char**) {
  void* device = SnapshotVisibleAllocation();
  void* host = nullptr;
  std::printf("cudaMallocHost(4321) -> %d\n",
              static_cast<int>(cudaMallocHost(&host, 4321)));
  std::printf("available %d\n", gmt::Available() ? 1 : 0);
  if (gmt::Available()) {
    gmt::Snapshot s = gmt::snapshot();
    std::printf("active %d live_bytes %zu count %zu\n", s.active ? 1 : 0,
                s.live_bytes, s.allocations.size());
    for (const gmt::Allocation& a : s.allocations) {
      bool frame = false;
      for (const gmt::Frame& f : a.stack) {
        if (f.function.find("SnapshotVisibleAllocation") != std::string::npos) {
          frame = true;
        }
      }
      std::printf("allocation api=%s bytes=%zu device=%d frame=%d\n",
                  a.api.c_str(), a.bytes, a.device, frame ? 1 : 0);
    }
  }
  void* three[3] = {nullptr, nullptr, nullptr};
  void* one = nullptr;
  if (gmt::Available()) {
    gmt::Snapshot before = gmt::snapshot();
    // argc keeps the trip count unknown to the compiler: one call site.
    DiffAllocateThree(three, 2 + argc);
    one = DiffAllocateOne();
    cudaFreeHost(host);
    host = nullptr;
    gmt::SnapshotDiff d = gmt::diff(before, gmt::snapshot());
    std::printf("diff active=%d new=%llu/%zu freed=%llu/%zu net=%lld\n",
                d.active ? 1 : 0, static_cast<unsigned long long>(d.new_count),
                d.new_bytes, static_cast<unsigned long long>(d.freed_count),
                d.freed_bytes, static_cast<long long>(d.net_bytes));
    PrintGroups("new", d.added);
    PrintGroups("freed", d.freed);
    for (const gmt::DeviceDiff& dev : d.devices) {
      std::printf("diff device=%d net=%lld\n", dev.device,
                  static_cast<long long>(dev.net_bytes));
    }
    std::printf("--- diff text ---\n%s--- end ---\n",
                gmt::diff_text(d).c_str());
  }
  for (void* p : three) cudaFree(p);
  cudaFree(one);
  cudaFree(device);
  if (host != nullptr) cudaFreeHost(host);
  std::printf("done\n");
  return 0;
}
