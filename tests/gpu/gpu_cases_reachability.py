"""GPU cases of reachability of leaks at exit ("lost" vs
"reachable") and growth of call sites while the program runs.

Loaded by gpu_tests.py (cases(t)); run with
  python3 tests/gpu/gpu_tests.py --only reach_lost_vs_cache,reach_growth,reach_pytorch_segments
"""
import glob
import os
import re

MiB = 1 << 20
KiB = 1 << 10


def _leaks_from(report, function):
    return [l for l in (report or {}).get("leaks", [])
            if any(function in (f.get("function") or "")
                   for f in l.get("stack") or [])]


def _describe(t, leaks):
    return "".join("\n      %s bytes=%s count=%s state=%s: %s" % (
        l.get("api"), l.get("bytes"), l.get("count"), l.get("state"),
        t.short_stack(l.get("stack"))) for l in leaks) or " none"


def case_reach_lost_vs_cache(t, c):
    """examples/leak_reachable: the dropped block is "lost", the cache in a
    global "reachable"; summary figures match; the text report tags both."""
    plain, tool = c.run_pair("leak_reachable")
    r = tool.report
    if r is None:
        return
    lost = _leaks_from(r, "DropOnlyPointer")
    cache = _leaks_from(r, "FillCache")
    c.check(len(lost) == 1 and lost[0].get("state") == "lost" and
            lost[0].get("bytes") == MiB and lost[0].get("count") == 1,
            "DropOnlyPointer's block should be one 'lost' entry of 1 MiB:%s"
            % _describe(t, lost))
    c.check(len(cache) == 1 and cache[0].get("state") == "reachable" and
            cache[0].get("bytes") == MiB and cache[0].get("count") == 4,
            "FillCache's 4 x 256 KiB should be one 'reachable' entry:%s"
            % _describe(t, cache))
    reach = r.get("reachability", {})
    c.notes["reachability"] = reach
    c.check(reach.get("ran") is True and reach.get("truncated") is False,
            "reachability did not run to the end: %s" % reach)
    c.check(reach.get("lost_bytes") == MiB and
            reach.get("reachable_bytes") == MiB,
            "reachability lost/reachable bytes %s/%s, expected %d/%d" % (
                reach.get("lost_bytes"), reach.get("reachable_bytes"), MiB,
                MiB))
    c.check(reach.get("modules_excluded", 0) >= 2,
            "libcudart/libcuda and the tool not excluded: %s" % reach)
    c.check(r.get("summary", {}).get("errors") == 0,
            "unexpected errors: %s" % t.describe_errors(r))
    # The same run with the text report: the tags and the scan time.
    text = c.run("text", [c.example("leak_reachable")], tool=True,
                 options="report=text")
    # The harness's report_path (<pid>.json) receives the text report.
    for path in glob.glob(os.path.join(c.dir, "text", "*.json")):
        with open(path, errors="replace") as f:
            text.stderr += f.read()
    c.check("[definitely lost]" in text.stderr and
            "[still reachable]" in text.stderr,
            "text report without lost/reachable tags: %s" %
            t._tail(text.stderr, 2000))
    m = re.search(r"reachability: definitely lost .*\(scan: ([0-9.]+) ms",
                  text.stderr)
    c.check(m is not None, "text report prints no scan time: %s" %
            t._tail(text.stderr, 2000))
    # reachability=0: no state, the old one entry per call site.
    off = c.run("off", [c.example("leak_reachable")], tool=True,
                options="reachability=0")
    if off.report is not None:
        c.check(all("state" not in l for l in off.report.get("leaks", [])),
                "reachability=0 still sets states: %s" %
                _describe(t, off.report.get("leaks", [])))
        c.check(off.report.get("reachability", {}).get("ran") is False,
                "reachability=0 still ran the scan")


def case_reach_growth(t, c):
    """examples/leak_growth: the leaking site is flagged while the program
    runs (the callback fires before "loop done"), the churning one is not."""
    argv = [c.example("leak_growth"), "60", "50"]
    options = ("growth_interval_ms=200:growth_samples=5:"
               "growth_min_bytes=262144")
    plain = c.run("plain", argv, tool=False)
    tool = c.run("tool", argv, tool=True, options=options)
    c.check(plain.rc == 0 and tool.rc == 0, "leak_growth exited %s / %s: %s"
            % (plain.rc, tool.rc, t._tail(tool.stderr)))
    c.check("growth callback" not in plain.stdout,
            "callback fired without the tool: %s" % plain.stdout)
    fired = tool.stdout.find("growth callback fired at iteration")
    done = tool.stdout.find("loop done")
    c.check(fired >= 0 and done > fired,
            "growth callback did not fire before the loop ended: %s" %
            t._tail(tool.stdout))
    m = re.search(r"growth callback fired at iteration (\d+): (.*)$",
                  tool.stdout, re.M)
    if m:
        c.notes["flagged_at_iteration"] = int(m.group(1))
        c.check("LeakOneStep" in m.group(2),
                "callback site is %r, expected LeakOneStep" % m.group(2))
    c.check("suspected leak: LeakOneStep" in tool.stderr,
            "no 'suspected leak: LeakOneStep' line on stderr: %s" %
            t._tail(tool.stderr, 2000))
    c.check_report_shape(tool)
    r = tool.report
    if r is None:
        return
    growth = r.get("growth", [])
    c.notes["growth"] = [{k: g.get(k) for k in ("rises", "first_bytes",
                                                 "last_bytes", "first_s",
                                                 "last_s")} for g in growth]
    c.notes["growth_samples"] = r.get("growth_samples")
    leaking = [g for g in growth if t.stack_has(g.get("stack"), "LeakOneStep")]
    c.check(len(leaking) == 1, "expected one growth entry from LeakOneStep, "
            "found %d of %d" % (len(leaking), len(growth)))
    c.check(not any(t.stack_has(g.get("stack"), "ChurnScratch")
                    for g in growth),
            "ChurnScratch (allocated and freed each step) was flagged")
    if leaking:
        g = leaking[0]
        c.check(g.get("rises", 0) >= 5 and
                g.get("last_bytes", 0) - g.get("first_bytes", 0) >= 256 * KiB,
                "growth entry too small: %s" % g)


def case_reach_pytorch_segments(t, c):
    """examples/pytorch_train.py: the caching allocator's segments (cudaMalloc
    leaks from libc10_cuda) are "reachable", none "lost"; the scan's time and
    size go into the notes."""
    script = os.path.join(c.ctx.examples_dir, "pytorch_train.py")
    if not os.path.isfile(script):
        raise FileNotFoundError("not found: %s" % script)
    py = t.torch_python(c)
    steps = os.environ.get("GMT_TEST_TORCH_STEPS", "200")
    run = c.run("tool", [py, script, "--steps", steps], tool=True,
                timeout=480, extra_env={"PYTHONUNBUFFERED": "1"})
    c.check(run.rc == 0, "pytorch_train failed (rc %s): %s" % (
        run.rc, t._tail(run.stderr)))
    r = run.report
    if not c.check(r is not None, "no report: %s" % run.report_error):
        return
    reach = r.get("reachability", {})
    c.notes["reachability"] = reach
    c.notes["scan_ms"] = reach.get("ms")
    c.notes["scan_bytes"] = reach.get("bytes_scanned")
    print("    reachability scan of the PyTorch process: %s ms, %s bytes read,"
          " %s heap objects, %s threads (%s CUDA threads left out)" % (
              reach.get("ms"), reach.get("bytes_scanned"),
              reach.get("heap_chunks"), reach.get("threads"),
              reach.get("threads_excluded")), flush=True)
    c.check(reach.get("ran") is True, "reachability did not run: %s" % reach)
    c.check(reach.get("truncated") is False,
            "reachability scan truncated: %s" % reach)
    segments = [l for l in r.get("leaks", [])
                if l.get("api") == "cudaMalloc" and
                any("c10_cuda" in (f.get("module") or "") or
                    "CUDACachingAllocator" in (f.get("function") or "")
                    for f in l.get("stack") or [])]
    c.notes["segments"] = [(l.get("bytes"), l.get("count"), l.get("state"))
                           for l in segments]
    c.check(segments, "no caching-allocator leaks (cudaMalloc from "
            "libc10_cuda) in the report:%s" % _describe(t, r.get("leaks", [])))
    lost = [l for l in segments if l.get("state") != "reachable"]
    c.check(not lost, "caching-allocator segments not 'reachable':%s" %
            _describe(t, lost))
    others = [l for l in r.get("leaks", []) if l not in segments]
    c.notes["other_leaks"] = [(l.get("api"), l.get("bytes"), l.get("state"),
                               t.short_stack(l.get("stack"), 3))
                              for l in others]


def cases(t):
    def bind(f):
        return lambda c: f(t, c)
    return [
        ("reach_lost_vs_cache", bind(case_reach_lost_vs_cache)),
        ("reach_growth", bind(case_reach_growth)),
        ("reach_pytorch_segments", bind(case_reach_pytorch_segments)),
    ]
