// Uses the public API the opt-in way: includes gmt/gmt.h, does NOT link the
// library. Under LD_PRELOAD gmt::Available() is true and snapshot() lists the
// live blocks; without the tool Available() is false and nothing crashes.
#include <cuda_runtime_api.h>

#include <cstdio>

#include "gmt/gmt.h"

__attribute__((noinline)) void* SnapshotVisibleAllocation() {
  void* p = nullptr;
  std::printf("cudaMalloc(1234) -> %d\n",
              static_cast<int>(cudaMalloc(&p, 1234)));
  return p;
}

int main() {
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
  cudaFree(device);
  cudaFreeHost(host);
  std::printf("done\n");
  return 0;
}
