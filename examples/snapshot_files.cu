// snapshot_files: two gmt_snapshot_json() snapshots saved to files, for
// `gpumemtrace report --diff BEFORE.json AFTER.json` (the launcher's diff).
//
//   snapshot_files BEFORE.json AFTER.json
//
// Saves BEFORE, makes three 1 MiB cudaMallocs in SnapshotFilesAllocate and
// frees the block from SnapshotFilesScratch that was live in BEFORE, saves
// AFTER, then frees everything. Expected diff: 3 new blocks (3145728 bytes)
// from SnapshotFilesAllocate, 1 freed (65536 bytes) from
// SnapshotFilesScratch, net +3080192. Without the tool (the weak gmt
// declarations unbound) it prints "gpumemtrace not loaded", writes nothing
// and exits 0. The exit report has no leaks and no errors.
#include <cuda_runtime.h>

#include <cstdio>

#include "example_check.h"
#include "gmt/gmt.h"

constexpr int kCount = 3;
constexpr size_t kBytes = 1 << 20;
constexpr size_t kScratchBytes = 64 << 10;

__attribute__((noinline)) void SnapshotFilesAllocate(void** out) {
  for (int i = 0; i < kCount; ++i) {
    EXAMPLE_CHECK_CUDA(cudaMalloc(&out[i], kBytes));
  }
}

__attribute__((noinline)) void* SnapshotFilesScratch() {
  void* p = nullptr;
  EXAMPLE_CHECK_CUDA(cudaMalloc(&p, kScratchBytes));
  return p;
}

bool Save(const char* path) {
  char* json = gmt_snapshot_json();
  if (json == nullptr) return false;
  FILE* f = std::fopen(path, "w");
  bool ok = f != nullptr && std::fputs(json, f) >= 0;
  if (f != nullptr) ok = std::fclose(f) == 0 && ok;
  gmt_free(json);
  return ok;
}

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: snapshot_files BEFORE.json AFTER.json\n");
    return 2;
  }
  if (&gmt_snapshot_json == nullptr || &gmt_free == nullptr) {
    std::printf("snapshot_files: gpumemtrace not loaded\n");
    return 0;
  }
  void* scratch = SnapshotFilesScratch();
  if (!Save(argv[1])) {
    std::fprintf(stderr, "snapshot_files: cannot write %s\n", argv[1]);
    return 1;
  }
  void* blocks[kCount] = {};
  SnapshotFilesAllocate(blocks);
  EXAMPLE_CHECK_CUDA(cudaFree(scratch));
  if (!Save(argv[2])) {
    std::fprintf(stderr, "snapshot_files: cannot write %s\n", argv[2]);
    return 1;
  }
  for (void* p : blocks) EXAMPLE_CHECK_CUDA(cudaFree(p));
  std::printf("snapshot_files: wrote %s and %s\n", argv[1], argv[2]);
  return 0;
}
