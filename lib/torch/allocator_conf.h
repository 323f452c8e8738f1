// PyTorch tensor mode (option torch, `gpumemtrace run --torch`): every tensor
// its own guarded block, with no change to the script.
//
// PyTorch's default caching allocator cuts tensors out of large cudaMalloc
// segments, so the tool's redzones sit only at the segments' ends and a
// write past one tensor lands in its neighbour. PyTorch's other backend,
// `backend:cudaMallocAsync` in PYTORCH_CUDA_ALLOC_CONF, asks CUDA's
// stream-ordered allocator for every tensor: each is then a
// cudaMallocAsync block with its own front and tail redzone, freed with
// cudaFreeAsync into the tool's quarantine (poisoned, checked, then given
// back in stream order; lib/guard/guard_manager.h). CUDA's pool is the cache
// (blocks reused without new device memory, cross-stream reuse ordered by
// events, torch.cuda.empty_cache() trims it), and PyTorch keeps its own
// bookkeeping: torch.cuda.memory_allocated/reserved/stats and its
// out-of-memory error behave as PyTorch's.
//
// Tensor mode writes that setting into the environment at load, before the
// program's first line runs (PyTorch reads it when it first allocates).
#ifndef GMT_LIB_TORCH_ALLOCATOR_CONF_H_
#define GMT_LIB_TORCH_ALLOCATOR_CONF_H_

#include <string>
#include <utility>
#include <vector>

namespace gmt {

inline constexpr char kTorchCudaConfVar[] = "PYTORCH_CUDA_ALLOC_CONF";
// The device-generic name PyTorch 2.9 and later also read.
inline constexpr char kTorchConfVar[] = "PYTORCH_ALLOC_CONF";

struct TorchModePlan {
  // Variables to set, with their new values; empty when nothing changes.
  std::vector<std::pair<std::string, std::string>> set;
  // Empty when tensor mode applies; else why not, for the user (the
  // program asked for another backend itself: it is left as it is).
  std::string refusal;
};

// What tensor mode does to the two variables' current values (null: unset).
// A configuration without a backend gets `backend:cudaMallocAsync` added to
// its other settings; one that names cudaMallocAsync already is left alone;
// one that names another backend is refused.
TorchModePlan PlanTorchMode(const char* cuda_conf, const char* generic_conf);

// Plans from the process environment and sets what the plan says; the
// refusal, if any, goes to stderr. Returns the plan. Called at load (single
// threaded, before main), only with torch=1.
TorchModePlan ApplyTorchModeAtLoad();

}  // namespace gmt

#endif  // GMT_LIB_TORCH_ALLOCATOR_CONF_H_
