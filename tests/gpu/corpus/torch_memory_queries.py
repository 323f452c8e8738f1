"""What PyTorch's caching allocator reports, as a training script that logs
its memory does: memory_allocated / memory_reserved / max_memory_allocated
after allocations of known sizes, reset_peak_memory_stats, memory_stats
counters, the segments of memory_snapshot, empty_cache, the raw
caching_allocator_alloc/delete API, and an out-of-memory error caught and
recovered from (torch.cuda.OutOfMemoryError, num_ooms). mem_get_info depends
on the rest of the GPU and goes on a masked line."""
from corpus_torch import deterministic, expect, finish

torch = deterministic()

dev = torch.device("cuda")
torch.cuda.init()
MiB = 1 << 20


def state(label):
    print("%s: allocated %d, reserved %d, peak %d" % (
        label, torch.cuda.memory_allocated(), torch.cuda.memory_reserved(),
        torch.cuda.max_memory_allocated()))


state("start")
small = torch.empty(1000, dtype=torch.float32, device=dev)     # small pool
medium = torch.empty(3 * MiB // 4, dtype=torch.float32, device=dev)
large = torch.empty(25 * MiB, dtype=torch.uint8, device=dev)   # large pool
state("three tensors")
del medium
state("medium freed (cached)")
torch.cuda.reset_peak_memory_stats()
state("peak reset")
stats = torch.cuda.memory_stats()
print("active allocations %d, segments %d" % (
    stats["active.all.current"], stats["segment.all.current"]))
snap = torch.cuda.memory_snapshot()
print("snapshot segments: %s" % sorted(
    (s["total_size"], s["segment_type"]) for s in snap))

free, total = torch.cuda.mem_get_info()
print("~ mem_get_info: free %d of %d" % (free, total))

ptr = torch.cuda.caching_allocator_alloc(5 * MiB + 3)
state("raw caching_allocator_alloc")
torch.cuda.caching_allocator_delete(ptr)

# Out of memory on purpose, then recover.
try:
    torch.empty(total * 2, dtype=torch.uint8, device=dev)
    print("allocating twice the GPU succeeded")
    expect(False, "no OutOfMemoryError")
except torch.cuda.OutOfMemoryError:
    print("OutOfMemoryError caught")
print("num_ooms %d" % torch.cuda.memory_stats()["num_ooms"])
after = torch.ones(MiB, device=dev)
print("allocation after the OOM sums to %d" % int(after.sum().item()))
del after

del small, large
torch.cuda.synchronize()
state("all freed")
torch.cuda.empty_cache()
state("after empty_cache")
expect(torch.cuda.memory_reserved() == 0, "empty_cache left memory reserved")
finish("torch_memory_queries")
