"""PyTorch's own driver-level memory checks, as test_cuda.py writes them: the
device memory the driver says is used (torch.cuda.mem_get_info, which is
cudaMemGetInfo) must not grow over 100 CUDA-graph captures of a matmul
(test_repeat_graph_capture_cublas_workspace_memory; its verdict is printed,
since that check fails on the H200 without the tool), and what the caching
allocator frees with empty_cache must come back as free device memory.
The verdicts are compared; the measured figures go on masked lines."""
# Not corpus_torch.deterministic(): its CUBLAS_WORKSPACE_CONFIG gives every
# captured matmul a workspace of its own, which the test forbids (without
# the tool too: 0.11 GB over 100 captures on the H200).
import torch
from corpus_torch import expect, finish

dev = torch.device("cuda")

# test_repeat_graph_capture_cublas_workspace_memory, as in PyTorch's
# test/test_cuda.py: cuBLAS workspaces of captured graphs must be reused.
x, y, z = 1024, 512, 64
a = torch.rand((x, y), device=dev)
b = torch.rand((y, z), device=dev)
torch.mm(a, b)  # warm-up: cuBLAS handle and workspace
free_before, total = torch.cuda.mem_get_info()
used_gb_before = (total - free_before) / 1e9
for _ in range(100):
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        torch.mm(a, b)
    graph.replay()
free_after, _ = torch.cuda.mem_get_info()
used_gb_after = (total - free_after) / 1e9
print("~ used before %.3f GB, after 100 captures %.3f GB" % (
    used_gb_before, used_gb_after))
# PyTorch's test asserts this. PyTorch 2.11 on the H200 fails it without the
# tool (100 captures grew the driver-level use by 0.886 GB), so the verdict
# is printed, not asserted: it must read the same with the tool and without.
print("100 graph captures grew the driver-level use by more than 0.1 GB: %s"
      % ("yes" if used_gb_before + 0.1 < used_gb_after else "no"))

# What empty_cache hands back to the driver shows as free memory again.
torch.cuda.synchronize()
torch.cuda.empty_cache()
free_base, _ = torch.cuda.mem_get_info()
blocks = [torch.empty(64 << 20, dtype=torch.uint8, device=dev)
          for _ in range(4)]
free_held, _ = torch.cuda.mem_get_info()
del blocks
torch.cuda.synchronize()
torch.cuda.empty_cache()
free_back, _ = torch.cuda.mem_get_info()
held_mib = (free_base - free_held) / (1 << 20)
back_mib = (free_back - free_held) / (1 << 20)
print("~ 4 x 64 MiB held %.1f MiB, given back %.1f MiB" % (held_mib,
                                                           back_mib))
expect(held_mib >= 256 and held_mib < 256 + 64,
       "four 64 MiB tensors did not take 256 MiB (+ rounding) of free memory")
expect(abs(back_mib - held_mib) < 2,
       "empty_cache did not give back what the tensors took")
print("empty_cache gives the memory back: checked")
finish("torch_driver_level_memory")
