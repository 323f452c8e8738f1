"""GPU cases of `gpumemtrace memtest` (the GPU memory tester).

  memtest_clean         2 GiB, every pattern: exit 0, no error, a tested
                        GB/s for each pattern; the GB/s, the copy bandwidth
                        and their ratio go into the notes
  memtest_inject_stored the TEST ONLY fault hook (GMT_MEMTEST_INJECT) flips
                        bits after the first write of a pattern: exit 1, one
                        error, at the injected address (chunk base + offset,
                        computed here from the report's chunk list),
                        expected ^ actual == mask, the flipped bits listed,
                        the second read equal to the wrong value
                        (stored-corruption); for each of the six patterns
  memtest_inject_flaky  the same with ":flaky" (the word is restored before
                        the second read): classified flaky-read
  memtest_usage         bad flags: exit 2 and a message naming the flag

The launcher is found at $GMT_LAUNCHER, or as bin/gpumemtrace beside or
above the library's or the examples' folder (build tree: build/bin/, bundle:
.device/bin/).
"""
import json
import os

GiB = 1 << 30
MiB = 1 << 20


def find_launcher(c):
    env = os.environ.get("GMT_LAUNCHER")
    if env:
        return env
    starts = [os.path.dirname(os.path.abspath(c.ctx.lib)),
              os.path.abspath(c.ctx.examples_dir)]
    for start in starts:
        d = start
        for _ in range(4):
            cand = os.path.join(d, "bin", "gpumemtrace")
            if os.path.isfile(cand) and os.access(cand, os.X_OK):
                return cand
            d = os.path.dirname(d)
    return None


def run_memtest(c, t, label, args, inject=None, timeout=600):
    """Runs `gpumemtrace memtest ARGS --json <dir>/<label>.json`; returns
    (run, report or None)."""
    launcher = find_launcher(c)
    if launcher is None:
        c.check(False, "gpumemtrace launcher not found (set GMT_LAUNCHER)")
        return None, None
    json_path = os.path.join(c.dir, label + ".json")
    env = {"GMT_MEMTEST_INJECT": inject} if inject else None
    if not inject:
        os.environ.pop("GMT_MEMTEST_INJECT", None)
    run = c.run(label, [launcher, "memtest"] + list(args) +
                ["--json", json_path, "--progress", "never"],
                tool=False, timeout=timeout, extra_env=env)
    report = None
    try:
        with open(json_path) as f:
            report = json.load(f)
    except (OSError, ValueError) as e:
        c.check(False, "%s: no readable JSON report (%s); stderr: %s" % (
            label, e, t._tail(run.stderr)))
    return run, report


def region_address(report, offset):
    """Device address of byte `offset` of the tested region (the chunks in
    order), from the report's chunk list."""
    for ch in report.get("chunks", []):
        start = ch["region_offset"]
        if start <= offset < start + ch["bytes"]:
            return int(ch["address"], 16) + (offset - start)
    return None


def check_shape(c, report, label):
    for key in ("tool", "command", "device", "config", "chunks", "copy",
                "tests", "errors", "summary", "health"):
        c.check(key in report, "%s: report has no %r" % (label, key))
    c.check(report.get("command") == "memtest",
            "%s: command %r" % (label, report.get("command")))


def case_memtest_clean(t):
    def case(c):
        run, r = run_memtest(c, t, "clean", ["--size", "2G",
                                              "--patterns", "all"])
        if r is None:
            return
        check_shape(c, r, "clean")
        c.check(run.rc == 0, "exit code %s, expected 0; stderr: %s" % (
            run.rc, t._tail(run.stderr)))
        s = r.get("summary", {})
        c.check(s.get("errors") == 0 and s.get("result") == "pass",
                "clean memory reported errors: %s" % json.dumps(s))
        c.check(r["config"]["size_bytes"] == 2 * GiB and
                sum(ch["bytes"] for ch in r["chunks"]) == 2 * GiB,
                "tested %s bytes, expected 2 GiB" % r["config"]["size_bytes"])
        names = [x["pattern"] for x in r["tests"]]
        c.check(names == ["walking1", "walking0", "address", "movinv",
                          "mod20", "random"], "patterns run: %s" % names)
        copy = (r.get("copy") or {}).get("gbps")
        c.check(bool(copy) and copy > 100,
                "copy bandwidth missing or implausible: %r" % copy)
        for x in r["tests"]:
            c.check(x["tested_gbps"] > 0 and x["errors"] == 0,
                    "pattern %s: %s" % (x["pattern"], json.dumps(x)))
            c.check(x["tested_bytes"] == 2 * GiB * x["verify_sweeps"],
                    "pattern %s tested_bytes %s" % (x["pattern"],
                                                    x["tested_bytes"]))
            c.notes["gbps_" + x["pattern"]] = round(x["tested_gbps"], 1)
            c.notes["ratio_" + x["pattern"]] = round(x["copy_ratio"] or 0, 3)
        c.notes["copy_gbps"] = round(copy or 0, 1)
        c.notes["health_available"] = r["health"]["before"].get("available")
        c.notes["device"] = r["device"].get("name")
    return case


def expect_injected(c, t, label, pattern, size, offset, mask, flaky):
    spec = "%s:%d:0x%x%s" % (pattern, offset, mask, ":flaky" if flaky else "")
    run, r = run_memtest(c, t, label, ["--size", size, "--patterns", pattern,
                                       "--no-copy-bandwidth"], inject=spec)
    if r is None:
        return
    tag = "[%s] " % spec
    c.check(run.rc == 1, tag + "exit code %s, expected 1; stderr: %s" % (
        run.rc, t._tail(run.stderr)))
    want = region_address(r, offset)
    errors = r.get("errors", [])
    if not c.check(len(errors) == 1 and r["summary"]["errors"] == 1,
                   tag + "expected one error, got %s: %s" % (
                       r["summary"].get("errors"), json.dumps(errors)[:800])):
        return
    e = errors[0]
    c.check(want is not None and int(e["address"], 16) == want,
            tag + "error at %s, injected at 0x%x" % (e["address"], want or 0))
    c.check(int(r["injection"]["address"], 16) == want,
            tag + "injection.address %s" % r["injection"]["address"])
    c.check(e["pattern"] == pattern and e["region_offset"] == offset,
            tag + "pattern/offset %s/%s" % (e["pattern"], e["region_offset"]))
    expected, actual = int(e["expected"], 16), int(e["actual"], 16)
    c.check(expected ^ actual == mask and int(e["xor"], 16) == mask,
            tag + "expected %s actual %s xor %s, mask 0x%x" % (
                e["expected"], e["actual"], e["xor"], mask))
    c.check(e["flipped_bits"] == [b for b in range(64) if mask >> b & 1],
            tag + "flipped_bits %s" % e["flipped_bits"])
    second = int(e["second_read"], 16)
    if flaky:
        c.check(e["class"] == "flaky-read" and second == expected,
                tag + "class %s, second read %s" % (e["class"],
                                                   e["second_read"]))
    else:
        c.check(e["class"] == "stored-corruption" and second == actual,
                tag + "class %s, second read %s" % (e["class"],
                                                   e["second_read"]))
    c.check(("0x%x" % want) in run.stdout,
            tag + "text summary does not name the address: %s" %
            t._tail(run.stdout))


def case_memtest_inject_stored(t):
    def case(c):
        # 2 GiB: the 1 GiB chunks put this offset in the second one.
        expect_injected(c, t, "random", "random", "2G", GiB + 4096 + 8,
                        0x8000000000000101, flaky=False)
        for p in ("walking1", "walking0", "address", "movinv", "mod20"):
            expect_injected(c, t, p, p, "256M", 100 * MiB + 8 * 12345,
                            0x10, flaky=False)
    return case


def case_memtest_inject_flaky(t):
    def case(c):
        expect_injected(c, t, "movinv", "movinv", "1G", 512 * MiB + 64,
                        0x0000000100000000, flaky=True)
        expect_injected(c, t, "random", "random", "256M", 8,
                        0x3, flaky=True)
    return case


def case_memtest_usage(t):
    def case(c):
        launcher = find_launcher(c)
        if not c.check(launcher is not None, "gpumemtrace launcher not found"):
            return
        for label, args, needle in (
                ("size", ["--size", "lots"], "--size"),
                ("patterns", ["--patterns", "walking3"], "walking3"),
                ("inject", ["--inject", "random:7:1"], "multiple of 8")):
            run = c.run(label, [launcher, "memtest"] + args, tool=False)
            c.check(run.rc == 2, "%s: exit %s, expected 2" % (label, run.rc))
            c.check(needle in run.stderr, "%s: stderr lacks %r: %s" % (
                label, needle, t._tail(run.stderr)))
    return case


def cases(t):
    return [
        ("memtest_clean", case_memtest_clean(t)),
        ("memtest_inject_stored", case_memtest_inject_stored(t)),
        ("memtest_inject_flaky", case_memtest_inject_flaky(t)),
        ("memtest_usage", case_memtest_usage(t)),
    ]
