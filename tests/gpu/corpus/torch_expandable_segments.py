"""PyTorch's caching allocator with expandable segments
(PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True), which maps memory with the
CUDA virtual memory API (cuMemCreate/cuMemMap) and grows one segment instead
of allocating new ones: growing tensors, frees, reuse, empty_cache, and work
on two streams with record_stream. Counters and results are printed."""
import os

os.environ["PYTORCH_CUDA_ALLOC_CONF"] = "expandable_segments:True"

from corpus_torch import deterministic, expect, finish  # noqa: E402

torch = deterministic()
dev = torch.device("cuda")
MiB = 1 << 20

tensors = []
for i in range(1, 9):
    tensors.append(torch.full((i * MiB,), float(i), device=dev))
total = sum(t.sum().item() for t in tensors)
want = float(sum(i * i * MiB for i in range(1, 9)))
print("8 growing tensors: sum right %s" % (total == want))
expect(total == want, "sums")
print("allocated %d, segments %d" % (
    torch.cuda.memory_allocated(),
    torch.cuda.memory_stats()["segment.all.current"]))
del tensors[::2]
again = torch.empty(3 * MiB, device=dev).fill_(2.0)
print("allocated after frees and reuse %d" % torch.cuda.memory_allocated())

side = torch.cuda.Stream()
with torch.cuda.stream(side):
    produced = torch.arange(4 * MiB, device=dev, dtype=torch.float32)
produced.record_stream(torch.cuda.current_stream())
torch.cuda.current_stream().wait_stream(side)
print("record_stream sum %d" % int(produced.sum().item()))
del produced, again, tensors
torch.cuda.synchronize()
torch.cuda.empty_cache()
print("after empty_cache: allocated %d, reserved %d" % (
    torch.cuda.memory_allocated(), torch.cuda.memory_reserved()))
expect(torch.cuda.memory_allocated() == 0, "memory left allocated")
finish("torch_expandable_segments")
