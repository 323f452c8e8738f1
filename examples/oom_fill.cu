// oom_fill: fills the card with 2 GiB cudaMalloc blocks from one call site
// until cudaMalloc fails, asks once more at once (the same burst), then frees
// everything and exits 0.
//
// Expected report: exactly one error of kind "oom" (the two
// failures are one burst) with cuda_error "cudaErrorMemoryAllocation",
// requested 2147483648, device_total the card's total memory, and
// holders[0] the call site FillCardWithChunks (oom_fill.cu) with almost all
// of the card; its reading names FillCardWithChunks as the largest holder.
// The program's printed error codes are the same with and without the tool.
//
// stdout: "total_bytes N" (cudaMemGetInfo before filling),
// "first failure: <code> <name>", "second failure: <code> <name>",
// "freed all"; stderr: "chunks N".
#include <cuda_runtime.h>

#include <cstdio>
#include <vector>

constexpr size_t kChunk = size_t{2} << 30;
constexpr int kMaxChunks = 1024;  // 2 TiB: more than any card

// The one call site that holds the card.
__attribute__((noinline)) cudaError_t FillCardWithChunks(
    std::vector<void*>* blocks) {
  for (int i = 0; i < kMaxChunks; ++i) {
    void* p = nullptr;
    cudaError_t e = cudaMalloc(&p, kChunk);
    if (e != cudaSuccess) return e;
    blocks->push_back(p);
  }
  return cudaSuccess;
}

__attribute__((noinline)) cudaError_t AskOnceMore() {
  void* p = nullptr;
  cudaError_t e = cudaMalloc(&p, kChunk);
  if (e == cudaSuccess) cudaFree(p);
  return e;
}

int main() {
  size_t free_bytes = 0, total_bytes = 0;
  if (cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess) {
    std::fprintf(stderr, "oom_fill: cudaMemGetInfo failed\n");
    return 1;
  }
  std::printf("total_bytes %zu\n", total_bytes);
  std::vector<void*> blocks;
  const cudaError_t first = FillCardWithChunks(&blocks);
  // The tool's own context work may leave one chunk fewer: printed apart
  // (stderr) so the comparison of stdout is about the error codes.
  std::fprintf(stderr, "chunks %zu\n", blocks.size());
  std::printf("first failure: %d %s\n", static_cast<int>(first),
              cudaGetErrorName(first));
  const cudaError_t second = AskOnceMore();
  std::printf("second failure: %d %s\n", static_cast<int>(second),
              cudaGetErrorName(second));
  // A failed cudaMalloc leaves no sticky error: clear the last-error state.
  cudaGetLastError();
  size_t freed = 0;
  for (void* p : blocks) freed += cudaFree(p) == cudaSuccess;
  std::printf("%s\n", freed == blocks.size() ? "freed all" : "a free failed");
  return first == cudaErrorMemoryAllocation ? 0 : 1;
}
