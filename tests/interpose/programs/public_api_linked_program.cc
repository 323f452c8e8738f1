// Links libgpumemtrace directly and asks it for a JSON snapshot, printed
// between marker lines for the test to parse. Then the C diff: two
// gmt_snapshot_json() documents around 2 cudaMalloc calls from one loop and
// a cudaFree, compared by gmt_diff_json(); and gmt_diff_json() on bad input.
#include <cuda_runtime_api.h>

#include <cstdio>

#include "gmt/gmt.h"

__attribute__((noinline)) void DiffAllocateTwo(void** out, int n) {
  for (int i = 0; i < n; ++i) cudaMalloc(&out[i], 700);
}

int main(int argc, char**) {
  void* p = nullptr;
  std::printf("cudaMalloc(2468) -> %d\n",
              static_cast<int>(cudaMalloc(&p, 2468)));
  std::printf("gmt_active %d\n", gmt_active());
  char* json = gmt_snapshot_json();
  std::printf("--- snapshot ---\n%s\n--- end ---\n", json ? json : "null");

  void* two[2] = {nullptr, nullptr};
  DiffAllocateTwo(two, 1 + argc);  // argc: one call site, not unrolled
  cudaFree(p);
  char* after = gmt_snapshot_json();
  char* diff = gmt_diff_json(json, after);
  std::printf("--- diff ---\n%s\n--- end ---\n", diff ? diff : "null");
  gmt_free(diff);
  char* bad = gmt_diff_json("{\"allocations\":", after);
  std::printf("--- bad ---\n%s\n--- end ---\n", bad ? bad : "null");
  gmt_free(bad);
  char* null_arg = gmt_diff_json(json, nullptr);
  std::printf("--- null ---\n%s\n--- end ---\n", null_arg ? null_arg : "null");
  gmt_free(null_arg);

  gmt_free(after);
  gmt_free(json);
  cudaFree(two[0]);
  cudaFree(two[1]);
  return 0;
}
