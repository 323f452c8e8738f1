// Links libgpumemtrace directly and asks it for a JSON snapshot, printed
// between marker lines for the test to parse.
#include <cuda_runtime_api.h>

#include <cstdio>

#include "gmt/gmt.h"

int main() {
  void* p = nullptr;
  std::printf("cudaMalloc(2468) -> %d\n",
              static_cast<int>(cudaMalloc(&p, 2468)));
  std::printf("gmt_active %d\n", gmt_active());
  char* json = gmt_snapshot_json();
  std::printf("--- snapshot ---\n%s\n--- end ---\n", json ? json : "null");
  gmt_free(json);
  cudaFree(p);
  return 0;
}
