// The installed-package consumer: includes <gmt/gmt.h> from the install
// prefix and asks the tracer for a snapshot when one is loaded. It makes no
// CUDA call, so it runs anywhere; the snapshot is then empty but active.
#include <gmt/gmt.h>

#include <cstdio>

int main() {
  if (!gmt::Available()) {
    std::printf("gmt available=0\n");
    return 0;
  }
  gmt::Snapshot s = gmt::snapshot();
  std::printf("gmt available=1 active=%d allocations=%zu live_bytes=%zu\n",
              s.active ? 1 : 0, s.allocations.size(), s.live_bytes);
  return 0;
}
