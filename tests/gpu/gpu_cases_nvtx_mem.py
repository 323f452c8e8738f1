"""GPU case of NVTX memory regions of a pool allocator.

examples/nvtx_mem_pool carves one cudaMalloc into NVTX-annotated regions,
leaks one region and overflows another with cudaMemcpy (inside the pool's
block, so CUDA accepts it). The report must name the region's own call site
for the leak and the overflow; with nvtx_mem=0 the pool is opaque.

Loaded by gpu_tests.py (cases(t)); run with
  python3 tests/gpu/gpu_tests.py --only nvtx_mem_pool
"""

MiB = 1 << 20


def case_nvtx_mem_pool(t, c):
    """examples/nvtx_mem_pool: the leaked region is its own leak at
    LeakyRequest (not double counted with the pool's block), the overflowing
    copy one api-bounds error naming OverflowRequest's region; stdout and the
    copy's cudaSuccess unchanged; nvtx_mem=0 reports neither."""
    plain, tool = c.run_pair("nvtx_mem_pool")
    c.check("-> 0 (cudaSuccess)" in plain.stdout,
            "the overflowing copy failed without the tool: %s" % plain.stdout)
    r = tool.report
    if r is None:
        return
    regions = [l for l in r.get("leaks", []) if l.get("api") == "nvtx-region"]
    c.notes["region_leaks"] = [(l.get("bytes"), l.get("count"),
                                t.short_stack(l.get("stack"), 3))
                               for l in regions]
    c.check(len(regions) == 1, "expected one nvtx-region leak entry:%s" %
            t.describe_leaks({"leaks": regions}))
    if regions:
        leak = regions[0]
        c.check(t.stack_has(leak.get("stack"), "LeakyRequest"),
                "region leak not at LeakyRequest: %s" %
                t.short_stack(leak.get("stack")))
        c.check(leak.get("count") == 1 and leak.get("bytes") == 4096,
                "region leak count/bytes %s/%s, expected 1/4096" % (
                    leak.get("count"), leak.get("bytes")))
        c.check(leak.get("pool_api") == "cudaMalloc" and
                leak.get("heap_name") == "toy pool",
                "region leak pool_api/heap_name %r/%r" % (
                    leak.get("pool_api"), leak.get("heap_name")))
    pool = c.expect_leak(r, "cudaMalloc", "PoolCreate", 1, 4 * MiB)
    if pool is not None:
        c.check(pool.get("nvtx_regions") == 1 and
                pool.get("nvtx_region_bytes") == 4096,
                "pool block nvtx_regions/bytes %s/%s, expected 1/4096" % (
                    pool.get("nvtx_regions"), pool.get("nvtx_region_bytes")))
        if regions:
            c.check(regions[0].get("pool_block") == pool.get("address"),
                    "region's pool_block %s is not the pool's block %s" % (
                        regions[0].get("pool_block"), pool.get("address")))
    for f in ("TidyRequest", "OverflowRequest"):
        c.expect_no_leak_from(r, f)
    s = r.get("summary", {})
    c.check(s.get("leaks") == 2 and s.get("leaked_bytes") == 4 * MiB and
            s.get("nvtx_region_leaks") == 1 and
            s.get("nvtx_region_leaked_bytes") == 4096,
            "summary leaks/leaked_bytes/nvtx_region_leaks/bytes %s/%s/%s/%s, "
            "expected 2/%d/1/4096" % (s.get("leaks"), s.get("leaked_bytes"),
                                      s.get("nvtx_region_leaks"),
                                      s.get("nvtx_region_leaked_bytes"),
                                      4 * MiB))
    c.check(s.get("errors") == 1, "expected exactly one error: %s" %
            t.describe_errors(r))
    found = c.expect_errors(r, "api-bounds", 1)
    if found:
        e = found[0]
        alloc = e.get("allocation") or {}
        c.check(e.get("call") == "cudaMemcpy" and e.get("bytes") == 1500 and
                e.get("cuda_error") == "cudaSuccess",
                "api-bounds call/bytes/cuda_error %r/%r/%r" % (
                    e.get("call"), e.get("bytes"), e.get("cuda_error")))
        c.check(t.stack_has(e.get("stack"), "OverflowCopy"),
                "error stack is not OverflowCopy's: %s" %
                t.short_stack(e.get("stack")))
        c.check(alloc.get("api") == "nvtx-region" and
                alloc.get("bytes") == 1000 and
                t.stack_has(alloc.get("stack"), "OverflowRequest"),
                "error's allocation is not OverflowRequest's 1000-byte "
                "region: %s %s %s" % (alloc.get("api"), alloc.get("bytes"),
                                      t.short_stack(alloc.get("stack"))))
    m = r.get("nvtx_mem", {})
    c.notes["nvtx_mem"] = m
    c.check(m.get("heaps_registered") == 1 and
            m.get("regions_registered") == 5 and
            m.get("regions_unregistered") == 4 and
            m.get("live_regions") == 1 and not m.get("problems"),
            "nvtx_mem section: %s" % m)

    # nvtx_mem=0: the pool is one opaque block again.
    off = c.run("off", [c.example("nvtx_mem_pool")], tool=True,
                options="nvtx_mem=0")
    c.check(off.rc == plain.rc and off.stdout == plain.stdout,
            "nvtx_mem=0 changed the program: rc %s, stdout %r" % (
                off.rc, off.stdout))
    if off.report is not None:
        c.check(not [l for l in off.report.get("leaks", [])
                     if l.get("api") == "nvtx-region"] and
                not off.report.get("errors") and
                "nvtx_mem" not in off.report,
                "nvtx_mem=0 still honours regions: leaks%s errors%s" % (
                    t.describe_leaks(off.report),
                    t.describe_errors(off.report)))


def cases(t):
    def bind(f):
        return lambda c: f(t, c)
    return [
        ("nvtx_mem_pool", bind(case_nvtx_mem_pool)),
    ]
