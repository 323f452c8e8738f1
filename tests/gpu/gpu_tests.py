#!/usr/bin/env python3
"""GPU end-to-end tests: run the example programs under libgpumemtrace.so.

Each case runs one program from examples/ without the tool and with
LD_PRELOAD=<library> GMT_OPTIONS=report=json:report_path=<dir>/%p.json, then
checks the JSON report (leaks with the right api, bytes, count and allocating
function; errors of the right kind; a clean program clean) and that the tool
changed nothing the program can see (exit code, stdout, the PyTorch loss).

Guard zones (DESIGN.md section 3): each buggy guard example (oob_*, uaf_write)
and each clean program also runs a third time with check=kernel; a buggy one
must report exactly its one error (kind, offset, changed bytes, allocation,
the offending kernel among `kernels`: with check=kernel the only one), a
clean one nothing. api_bounds: the same CUDA return codes with and without
the tool and one api-bounds error per bad call. user_view: address ranges,
pointer attributes and pitches print the same with and without the tool
(check=sync and check=kernel). ipc_pair: two traced processes share a block
through CUDA IPC; each writes a report, both clean. pytorch_train: the loss is
bit-identical; its loop's ms/step (stderr) goes into the notes with the
tool/plain ratios (informational).

Paths come from arguments or, failing those, the environment, so the same
script runs from a build tree (CTest, tests/gpu/CMakeLists.txt) and from the
bundle that tools/device_bundle.sh makes:

  gpu_tests.py --lib LIB --examples-dir DIR --out-dir DIR [--only a,b]
               [--skip c] [--results FILE] [--python PY] [--list]
               [--corpus-dir DIR] [--corpus-manifest FILE ...]

  --corpus-dir, --corpus-manifest   the differential corpus (case "corpus",
                                    gpu_cases_corpus.py): the committed
                                    corpus' build folder, extra manifests

  GMT_LIB, GMT_EXAMPLES_DIR, GMT_TEST_OUT   defaults for the three paths
  GMT_CORPUS_DIR, GMT_CORPUS_MANIFEST       defaults for the corpus (the
                                            latter os.pathsep-separated)
  GMT_EXTRA_OPTIONS                         appended to GMT_OPTIONS (e.g.
                                            "stack_depth=32")
  GMT_TEST_CHURN_PAIRS, GMT_TEST_TORCH_STEPS, GMT_TEST_TRAIN_ITERS
                                            workload sizes (20000, 200, 20)

Exit status: 0 all selected cases passed, 1 a case failed, 77 every selected
case was skipped (no CUDA device: CTest's SKIP_RETURN_CODE), 2 bad usage.
Needs only the Python standard library.
"""
import argparse
import difflib
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import time

SKIP = 77
MiB = 1 << 20
KiB = 1 << 10


class Skip(Exception):
    """Raised by a case that cannot run here (no torch, say)."""


class Run:
    """One execution of an example program."""

    def __init__(self, rc, stdout, stderr, seconds, report, report_error):
        self.rc = rc
        self.stdout = stdout
        self.stderr = stderr
        self.seconds = seconds
        self.report = report
        self.report_error = report_error


class Case:
    """The checks of one test case; failures are collected, not raised."""

    def __init__(self, name, ctx):
        self.name = name
        self.ctx = ctx
        self.failures = []
        self.warnings = []
        self.notes = {}
        self.dir = os.path.join(ctx.out_dir, name)
        shutil.rmtree(self.dir, ignore_errors=True)
        os.makedirs(self.dir, exist_ok=True)

    # -- checks ------------------------------------------------------------
    def check(self, condition, message):
        if not condition:
            self.failures.append(message)
        return condition

    def warn(self, message):
        self.warnings.append(message)

    # -- running -----------------------------------------------------------
    def run(self, label, argv, tool, timeout=180, extra_env=None,
            options=None):
        """Runs argv (with the tool when `tool`); logs under <case>/<label>.
        `options` (e.g. "check=kernel") go last into GMT_OPTIONS, after
        GMT_EXTRA_OPTIONS, so they win over it."""
        run_dir = os.path.join(self.dir, label)
        shutil.rmtree(run_dir, ignore_errors=True)
        os.makedirs(run_dir)
        env = dict(os.environ)
        # A report from an outer run must not leak into this one.
        for key in ("LD_PRELOAD", "GMT_OPTIONS"):
            env.pop(key, None)
        if extra_env:
            env.update(extra_env)
        if tool:
            env["LD_PRELOAD"] = self.ctx.lib
            gmt_options = "report=json:report_path=%s/%%p.json" % run_dir
            extra = os.environ.get("GMT_EXTRA_OPTIONS", "")
            if extra:
                gmt_options += ":" + extra
            if options:
                gmt_options += ":" + options
            env["GMT_OPTIONS"] = gmt_options
        start = time.monotonic()
        proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, cwd=run_dir,
                                start_new_session=True)
        try:
            out, err = proc.communicate(timeout=timeout)
            rc = proc.returncode
        except subprocess.TimeoutExpired:
            # What it was doing, before it is killed: a hang inside the
            # driver reads differently from one in the tool.
            _note_hang(proc.pid, os.path.join(run_dir, "timeout.txt"))
            try:
                os.killpg(proc.pid, 9)
            except OSError:
                pass
            try:
                out, err = proc.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                out, err = b"", b""
            rc = "timeout"
        seconds = time.monotonic() - start
        out = out.decode("utf-8", "replace")
        err = err.decode("utf-8", "replace")
        with open(os.path.join(run_dir, "stdout.txt"), "w") as f:
            f.write(out)
        with open(os.path.join(run_dir, "stderr.txt"), "w") as f:
            f.write(err)
        report, report_error = None, None
        if tool:
            reports = sorted(glob.glob(os.path.join(run_dir, "*.json")))
            if not reports:
                report_error = "no JSON report written in %s" % run_dir
            else:
                # One report per process (%p); should the program start
                # others, prefer the report whose argv[0] is the program.
                chosen = None
                for path in reports:
                    try:
                        with open(path) as f:
                            doc = json.load(f)
                    except (OSError, ValueError) as e:
                        report_error = "unreadable report %s: %s" % (path, e)
                        continue
                    if chosen is None or _argv_matches(doc, argv):
                        chosen = doc
                report = chosen
                if report is not None:
                    report_error = None
                if len(reports) > 1:
                    self.warn("%s: %d reports written (%s)" % (
                        label, len(reports),
                        ", ".join(os.path.basename(p) for p in reports)))
        print("    %-6s %-10s %7.2fs  rc=%s%s" % (
            label, "(tool)" if tool else "(no tool)", seconds, rc,
            "  [%s]" % options if tool and options else ""), flush=True)
        return Run(rc, out, err, seconds, report, report_error)

    def example(self, program):
        path = os.path.join(self.ctx.examples_dir, program)
        if not os.path.isfile(path):
            raise FileNotFoundError("example binary not found: %s" % path)
        return path

    def run_pair(self, program, args=(), timeout=180, compare_stdout=True):
        """Runs an example without and with the tool; checks what must hold
        for every program. Returns (plain, tool)."""
        argv = [self.example(program)] + list(args)
        plain = self.run("plain", argv, tool=False, timeout=timeout)
        tool = self.run("tool", argv, tool=True, timeout=timeout)
        self.check(plain.rc == 0, "%s without the tool exited %s: %s" % (
            program, plain.rc, _tail(plain.stderr)))
        self.check(tool.rc == plain.rc,
                   "exit code changed by the tool: %s without, %s with "
                   "(stderr: %s)" % (plain.rc, tool.rc, _tail(tool.stderr)))
        if compare_stdout:
            self.check(tool.stdout == plain.stdout,
                       "stdout changed by the tool:\n--- without\n%s--- with\n"
                       "%s" % (plain.stdout, tool.stdout))
        self.notes["seconds_plain"] = round(plain.seconds, 3)
        self.notes["seconds_tool"] = round(tool.seconds, 3)
        self.check_report_shape(tool)
        return plain, tool

    def run_kernel_mode(self, program, plain, args=(), timeout=180,
                        compare_stdout=True):
        """Runs the program a third time, with check=kernel (a zone check
        after every kernel); checks it against the plain run like run_pair.
        Returns the run."""
        argv = [self.example(program)] + list(args)
        kern = self.run("kernel", argv, tool=True, timeout=timeout,
                        options="check=kernel")
        self.check(kern.rc == plain.rc,
                   "exit code changed by the tool with check=kernel: %s "
                   "without, %s with (stderr: %s)" % (
                       plain.rc, kern.rc, _tail(kern.stderr)))
        if compare_stdout:
            self.check(kern.stdout == plain.stdout,
                       "stdout changed by the tool with check=kernel:\n"
                       "--- without\n%s--- with\n%s" % (plain.stdout,
                                                        kern.stdout))
        self.notes["seconds_kernel"] = round(kern.seconds, 3)
        self.check_report_shape(kern)
        return kern

    # -- the report --------------------------------------------------------
    def check_report_shape(self, run):
        if not self.check(run.report is not None,
                          "%s; stderr: %s" % (run.report_error,
                                              _tail(run.stderr))):
            return
        r = run.report
        self.check(r.get("tool") == "gpumemtrace",
                   "report.tool is %r" % r.get("tool"))
        for key in ("version", "pid", "argv", "devices", "summary", "leaks",
                    "errors"):
            self.check(key in r, "report has no %r" % key)
        summary = r.get("summary", {})
        for key in ("allocations", "frees", "live_bytes_at_exit", "errors",
                    "leaks", "leaked_bytes"):
            self.check(key in summary, "report.summary has no %r" % key)
        devices = r.get("devices", [])
        if devices:
            for key in ("index", "name", "total_bytes", "peak_bytes"):
                self.check(key in devices[0],
                           "report.devices[0] has no %r" % key)
        self.check(
            len(r.get("errors", [])) <= summary.get("errors", 0),
            "summary.errors %s < %d listed errors" % (summary.get("errors"),
                                                     len(r.get("errors", []))))
        listed = sum(l.get("count", 0) for l in r.get("leaks", []))
        self.check(listed == summary.get("leaks", listed),
                   "summary.leaks %s != sum of leak counts %d" % (
                       summary.get("leaks"), listed))

    def expect_leak(self, report, api, function, count, nbytes, device=None,
                    file_suffix=None, also_allowed=()):
        """Exactly one leak entry from `function` with `api`, count, bytes,
        and none from it with another api (a runtime call counted again at
        the driver level, say) unless listed in `also_allowed`."""
        if report is None:
            return None
        apis = api if isinstance(api, (list, tuple, set)) else [api]
        others = [l for l in report.get("leaks", [])
                  if l.get("api") not in apis and
                  l.get("api") not in also_allowed and
                  stack_has(l.get("stack"), function)]
        self.check(not others, "leaks from %s with an unexpected api (counted "
                   "twice?): %s" % (function,
                                    describe_leaks({"leaks": others})))
        sites = [l for l in report.get("leaks", [])
                 if l.get("api") in apis and stack_has(l.get("stack"),
                                                       function)]
        # Reachability splits one call site by state ("lost" /
        # "reachable"): one entry per state, summed here. Which blocks are
        # still referenced at exit (a stale stack slot, say) is incidental.
        states = [l.get("state") for l in sites]
        if not self.check(len(sites) >= 1 and
                          len(set(states)) == len(states),
                          "expected one %s leak from %s (one per "
                          "reachability state), found %d; leaks: %s"
                          % ("/".join(apis), function, len(sites),
                             describe_leaks(report))):
            return None
        leak = dict(sites[0])
        leak["count"] = sum(l.get("count") or 0 for l in sites)
        leak["bytes"] = sum(l.get("bytes") or 0 for l in sites)
        self.check(leak.get("count") == count,
                   "%s leak from %s: count %s, expected %d" % (
                       leak.get("api"), function, leak.get("count"), count))
        self.check(leak.get("bytes") == nbytes,
                   "%s leak from %s: bytes %s, expected %d" % (
                       leak.get("api"), function, leak.get("bytes"), nbytes))
        if device is not None:
            self.check(leak.get("device") == device,
                       "%s leak from %s: device %s, expected %d" % (
                           leak.get("api"), function, leak.get("device"),
                           device))
        if file_suffix:
            frame = next((f for f in leak.get("stack", [])
                          if function in (f.get("function") or "")), {})
            if not str(frame.get("file", "")).endswith(file_suffix):
                self.warn("frame %s has no file:line in %s (frame: %s)" % (
                    function, file_suffix, json.dumps(frame)))
        return leak

    def expect_no_leak_from(self, report, function):
        if report is None:
            return
        sites = [l for l in report.get("leaks", [])
                 if stack_has(l.get("stack"), function)]
        self.check(not sites, "unexpected leak from %s (freed correctly): %s"
                   % (function, describe_leaks({"leaks": sites})))

    def expect_errors(self, report, kind, n):
        if report is None:
            return []
        found = [e for e in report.get("errors", []) if e.get("kind") == kind]
        self.check(len(found) == n, "expected %d %s error(s), found %d; "
                   "errors: %s" % (n, kind, len(found),
                                   describe_errors(report)))
        return found

    def expect_guard_error(self, run, mode, kind, kernel, alloc_api,
                           alloc_fn, alloc_bytes, offset, changed,
                           free_fn=None):
        """The report of `run` (mode "sync": the default check=sync, or
        "kernel": check=kernel) holds exactly one error, of `kind`, found by a
        zone check: the first changed byte at `offset` from the user's start,
        `changed` contiguous bytes changed, on the `alloc_bytes`-byte block
        from `alloc_api` in `alloc_fn`, with `kernel` among the kernels that
        ran since the last clean check (check=kernel: the only one)."""
        r = run.report
        if r is None:
            return None
        tag = "[check=%s] " % mode
        found = [e for e in r.get("errors", []) if e.get("kind") == kind]
        if not self.check(len(found) == 1, tag + "expected one %s error, "
                          "found %d; errors: %s" % (kind, len(found),
                                                    describe_errors(r))):
            return None
        self.check(r.get("summary", {}).get("errors") == 1 and
                   len(r.get("errors", [])) == 1,
                   tag + "expected that error only (summary.errors=%s): %s"
                   % (r.get("summary", {}).get("errors"), describe_errors(r)))
        e = found[0]
        self.notes["error_" + mode] = {
            k: e.get(k) for k in ("offset", "bytes", "first_offset",
                                  "last_offset", "changed_bytes", "kernels",
                                  "check")}
        self.check(e.get("offset") == offset, tag + "%s offset %r, expected "
                   "%d" % (kind, e.get("offset"), offset))
        self.check(e.get("bytes") == changed, tag + "%s bytes %r, expected %d"
                   " changed bytes" % (kind, e.get("bytes"), changed))
        for key, want in (("first_offset", offset),
                          ("last_offset", offset + changed - 1),
                          ("changed_bytes", changed)):
            self.check(e.get(key) == want, tag + "%s %s %r, expected %d" % (
                kind, key, e.get(key), want))
        alloc = e.get("allocation") or {}
        self.check(alloc.get("api") == alloc_api and
                   alloc.get("bytes") == alloc_bytes and
                   stack_has(alloc.get("stack"), alloc_fn),
                   tag + "%s allocation should be the %d-byte %s from %s: %s"
                   % (kind, alloc_bytes, alloc_api, alloc_fn,
                      json.dumps(alloc)[:400]))
        kernels = e.get("kernels")
        if not self.check(isinstance(kernels, list),
                          tag + "%s has no kernels list: %r" % (kind,
                                                                kernels)):
            kernels = []
        if mode == "kernel":
            self.check(len(kernels) == 1 and kernel in str(kernels[0]),
                       tag + "kernels should be exactly [%s...], got %r" % (
                           kernel, kernels))
        else:
            self.check(any(kernel in str(k) for k in kernels),
                       tag + "kernels should contain %s, got %r" % (kernel,
                                                                   kernels))
        self.check(e.get("check") == mode,
                   tag + "%s found by check %r, expected %r" % (
                       kind, e.get("check"), mode))
        if free_fn:
            first = e.get("first_free") or {}
            self.check(first.get("api") == "cudaFree" and
                       stack_has(first.get("stack"), free_fn),
                       tag + "%s first_free should be cudaFree from %s: %s" % (
                           kind, free_fn, json.dumps(first)[:400]))
        return e

    def expect_clean_errors(self, report):
        if report is None:
            return
        self.check(report.get("summary", {}).get("errors") == 0,
                   "expected no errors, summary.errors=%s; errors: %s" % (
                       report.get("summary", {}).get("errors"),
                       describe_errors(report)))


def _argv_matches(doc, argv):
    got = doc.get("argv") or []
    return bool(got) and os.path.basename(str(got[0])) == \
        os.path.basename(argv[0])


def _tail(text, n=600):
    text = text.strip()
    return text if len(text) <= n else "..." + text[-n:]


def _first(pattern, text):
    """Group 1 of the first match of `pattern` (multiline) in text, or None."""
    m = re.search(pattern, text, re.M)
    return m.group(1) if m else None


def stack_has(stack, function):
    return any(function in (f.get("function") or "") for f in (stack or []))


def short_stack(stack, n=5):
    out = []
    for f in (stack or [])[:n]:
        name = f.get("function") or f.get("address", "?")
        where = ""
        if f.get("file"):
            where = " %s:%s" % (os.path.basename(f["file"]), f.get("line"))
        elif f.get("module"):
            where = " (%s)" % os.path.basename(f["module"])
        out.append(name + where)
    return " <- ".join(out) if out else "(no stack)"


def describe_leaks(report, limit=12):
    leaks = report.get("leaks", [])
    if not leaks:
        return "none"
    lines = ["\n      %s %s bytes=%s count=%s device=%s%s: %s" % (
        l.get("api"), l.get("kind", ""), l.get("bytes"), l.get("count"),
        l.get("device"),
        " released_by=%s" % l["released_by"] if l.get("released_by") else "",
        short_stack(l.get("stack"))) for l in leaks[:limit]]
    if len(leaks) > limit:
        lines.append("\n      ... %d more" % (len(leaks) - limit))
    return "".join(lines)


def describe_errors(report, limit=12):
    errors = report.get("errors", [])
    if not errors:
        return "none"
    lines = ["\n      %s api=%s offset=%s bytes=%s%s%s: %s" % (
        e.get("kind"), e.get("api"), e.get("offset"), e.get("bytes"),
        " check=%s" % e["check"] if e.get("check") else "",
        " kernels=%s" % e["kernels"] if e.get("kernels") else "",
        short_stack(e.get("stack"))) for e in errors[:limit]]
    return "".join(lines)


def parse_results(stdout, prefix):
    """Lines like '<prefix>: what -> 1 (cudaErrorInvalidValue)' -> {what: 1}."""
    out = {}
    for m in re.finditer(r"^%s: (.*) -> (-?\d+) \(" % re.escape(prefix),
                         stdout, re.M):
        out[m.group(1)] = int(m.group(2))
    return out


# -- the cases ---------------------------------------------------------------

def case_leak_runtime(c):
    _, tool = c.run_pair("leak_runtime")
    r = tool.report
    c.expect_leak(r, "cudaMalloc", "LeakRuntimeBuffers", 3, 3 * MiB, device=0,
                  file_suffix="leak_runtime.cu")
    c.expect_no_leak_from(r, "UseAndFreeScratch")
    c.expect_clean_errors(r)


def case_leak_driver(c):
    _, tool = c.run_pair("leak_driver")
    r = tool.report
    c.expect_leak(r, "cuMemAlloc", "LeakDriverBuffers", 2, 1 * MiB, device=0,
                  file_suffix="leak_driver.cu")
    c.expect_no_leak_from(r, "DriverAllocAndFree")
    c.expect_clean_errors(r)


def case_leak_async_pool(c):
    _, tool = c.run_pair("leak_async_pool")
    r = tool.report
    c.expect_leak(r, "cudaMallocAsync", "LeakAsyncBuffers", 4, 1 * MiB,
                  device=0, file_suffix="leak_async_pool.cu")
    c.expect_no_leak_from(r, "AsyncAllocAndFree")
    c.expect_clean_errors(r)


def case_leak_pinned_host(c):
    _, tool = c.run_pair("leak_pinned_host")
    r = tool.report
    c.expect_leak(r, "cudaMallocHost", "LeakPinnedWithMallocHost", 2,
                  128 * KiB, device=-1, file_suffix="leak_pinned_host.cu")
    c.expect_leak(r, "cudaHostAlloc", "LeakPinnedWithHostAlloc", 1, 256 * KiB,
                  device=-1)
    c.expect_no_leak_from(r, "PinnedAllocAndFree")
    c.expect_clean_errors(r)


def case_leak_managed(c):
    _, tool = c.run_pair("leak_managed")
    r = tool.report
    c.expect_leak(r, "cudaMallocManaged", "LeakManagedBuffer", 1, 4 * MiB,
                  file_suffix="leak_managed.cu")
    c.expect_no_leak_from(r, "ManagedAllocAndFree")
    c.expect_clean_errors(r)


def case_leak_vmm(c):
    plain, tool = c.run_pair("leak_vmm")
    m = re.search(r"leaked (\d+) bytes with cuMemCreate", plain.stdout)
    if not c.check(m, "leak_vmm printed no size: %r" % plain.stdout):
        return
    nbytes = int(m.group(1))
    c.notes["vmm_bytes"] = nbytes
    r = tool.report
    c.expect_leak(r, "cuMemCreate", "LeakVmmMapping", 1, nbytes, device=0,
                  file_suffix="leak_vmm.cu",
                  also_allowed=("cuMemAddressReserve",))
    c.expect_no_leak_from(r, "VmmCreateAndRelease")
    c.expect_clean_errors(r)


def case_double_free(c):
    plain, tool = c.run_pair("double_free")
    c.notes["cuda_results"] = parse_results(plain.stdout, "double_free")
    r = tool.report
    errors = c.expect_errors(r, "double-free", 1)
    if errors:
        e = errors[0]
        c.check(e.get("api") == "cudaFree", "double-free api %r" % e.get("api"))
        c.check(stack_has(e.get("stack"), "DoubleFreeSecondRelease"),
                "double-free stack lacks DoubleFreeSecondRelease: %s" %
                short_stack(e.get("stack")))
        alloc = e.get("allocation") or {}
        c.check(alloc.get("bytes") == 64 * KiB and
                stack_has(alloc.get("stack"), "DoubleFreeAllocate"),
                "double-free allocation should be 65536 bytes from "
                "DoubleFreeAllocate: %s" % json.dumps(alloc)[:400])
        first = e.get("first_free") or {}
        c.check(stack_has(first.get("stack"), "DoubleFreeFirstRelease"),
                "double-free first_free stack lacks DoubleFreeFirstRelease: %s"
                % short_stack(first.get("stack")))
    if r is not None:
        c.check(r.get("summary", {}).get("errors") == 1,
                "expected exactly 1 error (cudaFree(nullptr) is legal): %s" %
                describe_errors(r))
    c.expect_no_leak_from(r, "DoubleFreeAllocate")


def case_invalid_free(c):
    plain, tool = c.run_pair("invalid_free")
    results = parse_results(plain.stdout, "invalid_free")
    c.notes["cuda_results"] = results
    r = tool.report
    errors = c.expect_errors(r, "invalid-free", 2)
    interior = [e for e in errors if stack_has(e.get("stack"),
                                               "InvalidFreeInterior")]
    host = [e for e in errors if stack_has(e.get("stack"),
                                           "InvalidFreeHostPointer")]
    if c.check(len(interior) == 1,
               "no invalid-free from InvalidFreeInterior: %s" %
               (describe_errors(r) if r else "")):
        e = interior[0]
        c.check(e.get("api") == "cudaFree", "interior free api %r" %
                e.get("api"))
        c.check(e.get("offset") == 4096,
                "interior free offset %r, expected 4096" % e.get("offset"))
        alloc = e.get("allocation") or {}
        c.check(alloc.get("bytes") == 64 * KiB and
                stack_has(alloc.get("stack"), "InvalidFreeAllocate"),
                "interior free should name the 65536-byte allocation from "
                "InvalidFreeAllocate: %s" % json.dumps(alloc)[:400])
    c.check(len(host) == 1, "no invalid-free from InvalidFreeHostPointer: %s"
            % (describe_errors(r) if r else ""))
    if r is not None:
        c.check(r.get("summary", {}).get("errors") == 2,
                "expected exactly 2 errors: %s" % describe_errors(r))
    if results.get("cudaFree(base pointer)") == 0:
        c.expect_no_leak_from(r, "InvalidFreeAllocate")


def case_api_mismatch(c):
    plain, tool = c.run_pair("api_mismatch")
    results = parse_results(plain.stdout, "api_mismatch")
    c.notes["cuda_results"] = results
    r = tool.report
    errors = c.expect_errors(r, "api-mismatch", 1)
    if errors:
        e = errors[0]
        c.check(e.get("api") == "cudaFreeHost",
                "api-mismatch api %r, expected cudaFreeHost" % e.get("api"))
        c.check(stack_has(e.get("stack"), "MismatchFreeHost"),
                "api-mismatch stack lacks MismatchFreeHost: %s" %
                short_stack(e.get("stack")))
        alloc = e.get("allocation") or {}
        c.check(alloc.get("api") == "cudaMalloc" and
                alloc.get("bytes") == 128 * KiB and
                stack_has(alloc.get("stack"), "MismatchAllocate"),
                "api-mismatch allocation should be the 131072-byte cudaMalloc "
                "from MismatchAllocate: %s" % json.dumps(alloc)[:400])
    if results.get("cudaFree(device pointer)") == 0 and r is not None:
        # The wrong call failed and the right one released the memory.
        c.expect_no_leak_from(r, "MismatchAllocate")
        c.check(r.get("summary", {}).get("errors") == 1,
                "expected only the api-mismatch error: %s" %
                describe_errors(r))


def case_clean_cublas_thrust(c):
    plain, tool = c.run_pair("clean_cublas_thrust", timeout=300)
    # Guard zones must not disturb cuBLAS or thrust, even checked after
    # every kernel.
    kern = c.run_kernel_mode("clean_cublas_thrust", plain, timeout=300)
    if kern.report is not None:
        c.expect_clean_errors(kern.report)
    r = tool.report
    if r is None:
        return
    c.expect_clean_errors(r)
    leaks = r.get("leaks", [])
    c.notes["leaks"] = [{"api": l.get("api"), "bytes": l.get("bytes"),
                         "count": l.get("count"),
                         "released_by": l.get("released_by"),
                         "stack": short_stack(l.get("stack"), 8)}
                        for l in leaks]
    if leaks:
        # Whatever cuBLAS keeps alive until exit shows up here; the message
        # carries the stacks so the run says what it was.
        c.check(False, "clean program has leaks: %s" % describe_leaks(r))
    c.check(r.get("summary", {}).get("allocations", 0) > 0,
            "no allocations tracked: the tool saw none of thrust's cudaMalloc")


def case_static_cudart(c):
    _, tool = c.run_pair("static_cudart")
    r = tool.report
    c.expect_leak(r, ["cudaMalloc", "cuMemAlloc"], "LeakStaticRuntimeBuffers",
                  3, 3 * MiB, device=0)
    c.expect_no_leak_from(r, "StaticUseAndFreeScratch")
    c.expect_clean_errors(r)


def case_snapshot_api(c):
    plain, tool = c.run_pair("snapshot_api", compare_stdout=False)
    c.check("gpumemtrace not loaded" in plain.stdout,
            "without the tool gmt::Available() should be false: %r" %
            plain.stdout)
    out = tool.stdout
    for needle in ("active=1",
                   "delta: allocations=+3 bytes=+3145728",
                   "allocations from SnapshotApiAllocate: 3",
                   "names SnapshotApiAllocate: yes",
                   "delta after free: allocations=+0 bytes=+0"):
        c.check(needle in out, "snapshot_api under the tool did not print %r;"
                " stdout:\n%s" % (needle, out))
    c.expect_clean_errors(tool.report)
    if tool.report is not None:
        c.expect_no_leak_from(tool.report, "SnapshotApiAllocate")


def case_churn(c):
    pairs = int(os.environ.get("GMT_TEST_CHURN_PAIRS", "20000"))
    plain, tool = c.run_pair("churn", ["--pairs", str(pairs)],
                             compare_stdout=False)
    c.notes["plain"] = plain.stdout.strip()
    c.notes["tool"] = tool.stdout.strip()
    r = tool.report
    if r is not None:
        c.expect_clean_errors(r)
        c.check(not r.get("leaks"), "churn leaks: %s" % describe_leaks(r))
        s = r.get("summary", {})
        c.check(s.get("allocations", 0) >= pairs and
                s.get("frees", 0) >= pairs,
                "summary counts %s/%s allocations/frees, expected >= %d" % (
                    s.get("allocations"), s.get("frees"), pairs))
    kplain = c.run("kplain", [c.example("churn"), "--kernels", "--launches",
                              str(pairs)], tool=False)
    ktool = c.run("ktool", [c.example("churn"), "--kernels", "--launches",
                            str(pairs)], tool=True)
    c.check(kplain.rc == 0 and ktool.rc == 0,
            "churn --kernels exited %s / %s" % (kplain.rc, ktool.rc))
    c.notes["kernels_plain"] = kplain.stdout.strip()
    c.notes["kernels_tool"] = ktool.stdout.strip()
    if c.check(ktool.report is not None, str(ktool.report_error)):
        c.expect_clean_errors(ktool.report)
        c.check(not ktool.report.get("leaks"),
                "churn --kernels leaks: %s" % describe_leaks(ktool.report))


def case_churn_freed_checks(c):
    """Frees of guarded blocks under the tool: checked on the tool's stream
    and given back to CUDA later, with and without a quarantine. cudaFree
    must wait for a running kernel exactly when it does without the tool
    (--free-sync prints it), and the issue's churn must run clean."""
    pairs = int(os.environ.get("GMT_TEST_CHURN_PAIRS", "20000"))
    argv = [c.example("churn"), "--free-sync"]
    plain = c.run("syncplain", argv, tool=False)
    c.check(plain.rc == 0, "churn --free-sync exited %s: %s" % (
        plain.rc, _tail(plain.stderr)))
    c.notes["free_sync_plain"] = plain.stdout.strip()
    churn = [c.example("churn"), "--pairs", str(pairs), "--max-size",
             "1048576", "--kernel-every", "100"]
    for label, options in (("default", None), ("q0", "quarantine_bytes=0"),
                           ("kernel", "check=kernel")):
        sync = c.run("sync" + label, argv, tool=True, options=options)
        c.check(sync.rc == plain.rc and sync.stdout == plain.stdout,
                "cudaFree's synchronization changed by the tool [%s]: "
                "without:\n%swith (rc %s):\n%s" % (
                    options, plain.stdout, sync.rc, sync.stdout))
        if c.check(sync.report is not None, str(sync.report_error)):
            c.expect_clean_errors(sync.report)
        run = c.run("churn" + label, churn, tool=True, options=options)
        c.check(run.rc == 0, "churn [%s] exited %s: %s" % (
            options, run.rc, _tail(run.stderr)))
        c.notes["churn_" + label] = run.stdout.strip()
        r = run.report
        if c.check(r is not None, str(run.report_error)):
            c.expect_clean_errors(r)
            c.check(not r.get("leaks"), "churn [%s] leaks: %s" % (
                options, describe_leaks(r)))
            g = r.get("guard", {})
            c.notes["guard_" + label] = {
                k: g.get(k) for k in ("checks", "evicted", "check_failures",
                                      "quarantine_bytes")}
            c.check(g.get("check_failures", 0) == 0,
                    "churn [%s]: %s zone checks failed" % (
                        options, g.get("check_failures")))
            c.check(g.get("evicted", 0) > 0,
                    "churn [%s]: no held block went back to CUDA" % options)


TRAIN_TIMING = re.compile(r"^train_seconds=([0-9.]+) steps=(\d+) "
                          r"ms_per_step=([0-9.]+)\s*$", re.M)


def record_train_timing(c, runs):
    """pytorch_train's own loop time (stderr, the steps only) per run into
    the notes, and the ratios to the run without the tool, printed. Never a
    failure: timings are for reading, not for judging here."""
    ms = {}
    for label, run in runs:
        m = TRAIN_TIMING.search(run.stderr)
        if m:
            ms[label] = float(m.group(3))
            c.notes["train_seconds_" + label] = float(m.group(1))
        else:
            c.warn("%s run printed no train_seconds= line on stderr" % label)
    c.notes["ms_per_step"] = ms
    base = ms.get("plain")
    if base:
        ratios = {k: round(v / base, 3) for k, v in ms.items()
                  if k != "plain"}
        c.notes["ms_per_step_ratio"] = ratios
        print("    ms/step: %s" % ", ".join(
            "%s %.3f%s" % (k, v, "" if k == "plain" else
                           " (x%.2f)" % ratios[k]) for k, v in ms.items()),
              flush=True)


def _note_hang(pid, path):
    """Writes what process `pid` and its children were doing: their states
    and kernel wait channels, each thread's kernel stack where readable, and
    the threads' user stacks from cuda-gdb or gdb when present (bounded)."""
    def sh(cmd, limit=60):
        try:
            return subprocess.run(cmd, shell=True, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, timeout=limit
                                  ).stdout.decode("utf-8", "replace")
        except (subprocess.TimeoutExpired, OSError) as e:
            return "(%s)\n" % e
    pids = [pid]
    for line in sh("ps -eo pid=,ppid=").splitlines():
        fields = line.split()
        if len(fields) == 2 and int(fields[1]) in pids:
            pids.append(int(fields[0]))
    debugger = shutil.which("cuda-gdb") or (
        "/usr/local/cuda/bin/cuda-gdb"
        if os.access("/usr/local/cuda/bin/cuda-gdb", os.X_OK) else None
    ) or shutil.which("gdb")
    with open(path, "w") as f:
        f.write(sh("ps -o pid,ppid,stat,wchan:32,etime,cmd -p %s" %
                   ",".join(str(p) for p in pids)))
        for p in pids:
            f.write("\n== pid %d\n" % p)
            f.write(sh("for t in /proc/%d/task/*; do echo \"$t $(cat $t/comm)"
                       " $(cat $t/wchan)\"; cat $t/stack 2>/dev/null; done"
                       % p))
            if debugger:
                f.write(sh("%s -batch -nx -p %d -ex 'thread apply all bt 20'"
                           " 2>&1 | tail -200" % (debugger, p), 90))


def launcher_path(c):
    """The gpumemtrace launcher beside the library (bin/ next to lib/), or
    $GMT_LAUNCHER; raises FileNotFoundError when there is none."""
    path = os.environ.get("GMT_LAUNCHER") or os.path.join(
        os.path.dirname(os.path.abspath(c.ctx.lib)), "..", "bin",
        "gpumemtrace")
    if not os.path.isfile(path):
        raise FileNotFoundError("gpumemtrace launcher not found: %s" % path)
    return os.path.normpath(path)


def torch_python(c):
    """The interpreter for a PyTorch case (c.ctx.python), once it is known to
    import torch and see a CUDA device; raises Skip otherwise. Notes the torch
    version."""
    py = c.ctx.python
    probe = subprocess.run([py, "-c", "import torch; print(torch.__version__,"
                            " torch.cuda.is_available())"],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    text = probe.stdout.decode("utf-8", "replace").strip()
    if probe.returncode != 0:
        last = text.splitlines()[-1] if text else "no output"
        raise Skip("torch is not importable by %s: %s" % (py, last))
    c.notes["torch"] = text
    if not text.endswith("True"):
        raise Skip("torch sees no CUDA device (%s)" % text)
    return py


def localize_loss_difference(c, py, script, options, runs=3):
    """After a loss differed: where the first step's forward pass parts, from
    `runs` runs of `script --stages` without the tool and `runs` with it
    (`options`). Notes and warns which stages differ from the first run
    without the tool, and whether the runs without the tool agree among
    themselves (then the difference is not the tool's)."""
    def stages(label, tool):
        run = c.run(label, [py, script, "--stages"], tool=tool, timeout=240,
                    options=options)
        return [line.split()[1:] for line in run.stdout.splitlines()
                if line.startswith("stage ")]
    plain = [stages("stages-plain-%d" % i, False) for i in range(runs)]
    tool = [stages("stages-tool-%d" % i, True) for i in range(runs)]
    base = plain[0]

    def first_difference(other):
        # Stage lines: name, digest, address within its 2 MiB (named for the
        # stage that differs: an alignment-chosen algorithm shows there).
        for mine, theirs in zip(base, other):
            if mine[:2] != theirs[:2]:
                where = ""
                if len(mine) > 2 and len(theirs) > 2:
                    where = " (at %s, %s without the tool)" % (theirs[2],
                                                              mine[2])
                return mine[0] + where
        return None if len(base) == len(other) else "(stage count)"
    plain_diffs = [first_difference(p) for p in plain[1:]]
    tool_diffs = [first_difference(t) for t in tool]
    text = ("first forward pass, %d runs each: without the tool %s; with "
            "%s %s" % (
                runs,
                "all alike" if not any(plain_diffs) else
                "they differ among themselves (first at %s)" %
                ", ".join(d for d in plain_diffs if d),
                options or "the default options",
                "all alike the run without it" if not any(tool_diffs) else
                "%d differ, first at %s" % (
                    sum(1 for d in tool_diffs if d),
                    ", ".join(d for d in tool_diffs if d))))
    c.notes.setdefault("loss_diagnosis", []).append(text)
    c.warn("loss difference localized: " + text)


def case_pytorch_train(c):
    script = os.path.join(c.ctx.examples_dir, "pytorch_train.py")
    if not os.path.isfile(script):
        raise FileNotFoundError("not found: %s" % script)
    py = torch_python(c)
    steps = os.environ.get("GMT_TEST_TORCH_STEPS", "200")
    argv = [py, script, "--steps", steps]
    env = {"PYTHONUNBUFFERED": "1"}
    plain = c.run("plain", argv, tool=False, timeout=480, extra_env=env)
    tool = c.run("tool", argv, tool=True, timeout=480, extra_env=env)
    # Guard zones checked after every kernel (check=kernel): the training
    # must still compute bit-identical losses.
    kern = c.run("kernel", argv, tool=True, timeout=480, extra_env=env,
                 options="check=kernel")
    runs = (("without the tool", plain), ("with the tool", tool),
            ("with check=kernel", kern))
    losses = []
    for _, run in runs:
        m = re.search(r"^final loss .*$", run.stdout, re.M)
        losses.append(m.group(0) if m else None)
    c.notes["loss_plain"], c.notes["loss_tool"], c.notes["loss_kernel"] = \
        losses
    c.notes["seconds_plain"] = round(plain.seconds, 3)
    c.notes["seconds_tool"] = round(tool.seconds, 3)
    c.notes["seconds_kernel"] = round(kern.seconds, 3)
    record_train_timing(c, (("plain", plain), ("tool", tool),
                            ("kernel", kern)))
    for (what, run), loss in zip(runs, losses):
        c.check(run.rc == 0 and loss,
                "pytorch_train %s failed (rc %s): %s" % (what, run.rc,
                                                         _tail(run.stderr)))
    for (what, run), loss, options in zip(runs[1:], losses[1:],
                                          (None, "check=kernel")):
        c.check(losses[0] == loss, "loss changed %s: %r without, %r with" % (
            what, losses[0], loss))
        c.check(plain.stdout == run.stdout,
                "training log changed %s:\n--- without\n%s--- with\n%s"
                % (what, plain.stdout, run.stdout))
        if losses[0] != loss and loss:
            localize_loss_difference(c, py, script, options)
    for mode, run in (("sync", tool), ("kernel", kern)):
        c.check_report_shape(run)
        r = run.report
        if r is None:
            continue
        c.expect_clean_errors(r)
        s = r.get("summary", {})
        c.check(s.get("allocations", 0) > 0,
                "[check=%s] no allocations tracked in PyTorch (its cudaMalloc"
                " calls were not seen)" % mode)
        # The caching allocator keeps its blocks to the end: informational.
        c.notes["summary" if mode == "sync" else "summary_kernel"] = s


# -- guard zones (redzones, quarantine, API range checks) ---------------------
#
# Each buggy example runs three times: without the tool, with it (default
# check=sync) and with check=kernel; exit code and stdout must not change.

# program -> what its one error must say. Offsets and sizes are the ones the
# example's comment documents; `changed` is exact because every bad write
# flips the bytes it touches.
GUARD_EXAMPLES = {
    "oob_slack": dict(kind="oob-write", kernel="OobSlackOverrunKernel",
                      alloc_api="cudaMalloc", alloc_fn="OobSlackAllocate",
                      alloc_bytes=1000, offset=1000, changed=12),
    # oob_slack under the static runtime: seen at the driver level only.
    "oob_static": dict(kind="oob-write", kernel="OobSlackOverrunKernel",
                       alloc_api="cuMemAlloc", alloc_fn="OobSlackAllocate",
                       alloc_bytes=1000, offset=1000, changed=12),
    "oob_neighbour": dict(kind="oob-write", kernel="NeighbourSpillKernel",
                          alloc_api="cudaMalloc",
                          alloc_fn="NeighbourAllocateFirst",
                          alloc_bytes=4096, offset=4096, changed=64),
    "oob_underflow": dict(kind="oob-underflow",
                          kernel="UnderflowHeaderKernel",
                          alloc_api="cudaMalloc",
                          alloc_fn="UnderflowAllocateTarget",
                          alloc_bytes=4096, offset=-16, changed=16),
    "oob_few_kib": dict(kind="oob-write", kernel="FewKibScrambleKernel",
                        alloc_api="cudaMalloc", alloc_fn="FewKibAllocate",
                        alloc_bytes=MiB, offset=MiB, changed=3 * KiB),
    "oob_managed": dict(kind="oob-write", kernel="ManagedOverrunKernel",
                        alloc_api="cudaMallocManaged",
                        alloc_fn="ManagedOobAllocate", alloc_bytes=100000,
                        offset=100000, changed=40),
    # oob_pitched: offset and size depend on the pitch the program prints.
    "oob_pitched": dict(kind="oob-write", kernel="PitchedRowFlipKernel",
                        alloc_api="cudaMallocPitch",
                        alloc_fn="PitchedOobAllocate", rows=16, width=1000),
    # oob_3d: likewise; one row past the last slice's last row (12 rows in
    # all: 3 slices of 4).
    "oob_3d": dict(kind="oob-write", kernel="Oob3dSliceFlipKernel",
                   alloc_api="cudaMalloc3D", alloc_fn="Oob3dAllocate",
                   rows=12, width=500),
    "oob_driver": dict(kind="oob-write", kernel="DriverStrideOverrunKernel",
                       alloc_api="cuMemAlloc", alloc_fn="DriverOobAllocate",
                       alloc_bytes=10000, offset=10100, changed=24),
    "uaf_write": dict(kind="uaf-write", kernel="UafStaleWriteKernel",
                      alloc_api="cudaMalloc", alloc_fn="UafWriteAllocate",
                      alloc_bytes=64 * KiB, offset=128, changed=32,
                      free_fn="UafWriteRelease"),
}


def guard_case(program):
    def case(c):
        spec = dict(GUARD_EXAMPLES[program])
        plain, tool = c.run_pair(program)
        kern = c.run_kernel_mode(program, plain)
        if "rows" in spec:
            m = re.search(r"pitch (\d+),", plain.stdout)
            if not c.check(m, "%s printed no pitch: %r" % (program,
                                                           plain.stdout)):
                return
            pitch = int(m.group(1))
            c.notes["pitch"] = pitch
            rows, width = spec.pop("rows"), spec.pop("width")
            spec.update(alloc_bytes=pitch * rows, offset=pitch * rows,
                        changed=width)
        skipped = _first(r"^(%s: .*skipped.*)$" % program,
                         tool.stderr + kern.stderr)
        c.check(skipped is None, "the example skipped its bad write under "
                "the tool: %s" % skipped)
        for run, mode in ((tool, "sync"), (kern, "kernel")):
            c.expect_guard_error(run, mode, **spec)
            if run.report is not None:
                # Freed (or quarantined) by the program: never a leak.
                c.expect_no_leak_from(run.report, spec["alloc_fn"])
    case.__name__ = "case_" + program
    return case


def case_uaf_write_freed_ends(c):
    """freed_check_bytes on the GPU: with 4096 only 2 KiB at each end of the
    freed 64 KiB block are poisoned and checked (split fills and checks in
    the guard kernels); the stale write at offset 128 is found as with every
    byte. (A write between the ends going unseen is a CPU test's: the
    smallest end, 256 bytes, still holds this example's offset.)"""
    program = "uaf_write"
    argv = [c.example(program)]
    plain = c.run("plain", argv, tool=False)
    run = c.run("ends4096", argv, tool=True, options="freed_check_bytes=4096")
    c.check(run.rc == plain.rc and run.stdout == plain.stdout,
            "exit %s / stdout changed by the tool (plain exit %s)" % (
                run.rc, plain.rc))
    c.expect_guard_error(run, "sync", **GUARD_EXAMPLES[program])


# api_bounds: label printed by the program -> (function making the call,
# offset, bytes or None, allocating function, allocation api, allocation
# bytes or "pitched").
API_BOUNDS_CALLS = {
    "cudaMemcpy H2D past end": ("ApiBoundsMemcpyH2D", 0, 64 * KiB + 1,
                                "ApiBoundsAllocateMain", "cudaMalloc",
                                64 * KiB),
    "cudaMemset past end": ("ApiBoundsMemset1D", 1024, 64 * KiB - 1008,
                            "ApiBoundsAllocateMain", "cudaMalloc", 64 * KiB),
    "cudaMemcpyAsync D2D past end": ("ApiBoundsMemcpyAsyncD2D", 256,
                                     64 * KiB, "ApiBoundsAllocateDst",
                                     "cudaMalloc", 64 * KiB),
    "cuMemsetD8 past end": ("ApiBoundsDriverMemsetD8", 64 * KiB - 100, 200,
                            "ApiBoundsAllocateMain", "cudaMalloc", 64 * KiB),
    "cudaMemset2D past last row": ("ApiBoundsMemset2D", 0, None,
                                   "ApiBoundsAllocatePitched",
                                   "cudaMallocPitch", "pitched"),
}
API_BOUNDS_EDGES = ("cudaMemcpy H2D exact", "cudaMemset last byte",
                    "cudaMemcpyAsync D2D exact", "cuMemsetD8 to the end",
                    "cudaMemset2D exact")


def case_api_bounds(c):
    plain, tool = c.run_pair("api_bounds")
    results = parse_results(plain.stdout, "api_bounds")
    c.notes["cuda_results"] = results
    tool_results = parse_results(tool.stdout, "api_bounds")
    for label in API_BOUNDS_CALLS:
        c.check(label in results, "api_bounds did not print %r" % label)
        c.check(tool_results.get(label) == results.get(label),
                "%s returned %s with the tool, %s without" % (
                    label, tool_results.get(label), results.get(label)))
        c.check(results.get(label, 0) != 0,
                "%s succeeded without the tool (CUDA accepted a range past "
                "the end?): the example's premise fails" % label)
    for label in API_BOUNDS_EDGES:
        c.check(results.get(label) == 0 and tool_results.get(label) == 0,
                "edge call %s: %s without the tool, %s with (both must be 0)"
                % (label, results.get(label), tool_results.get(label)))
    m = re.search(r"pitch (\d+),", plain.stdout)
    pitch = int(m.group(1)) if m else None
    r = tool.report
    if r is None:
        return
    errors = c.expect_errors(r, "api-bounds", len(API_BOUNDS_CALLS))
    c.check(r.get("summary", {}).get("errors") == len(API_BOUNDS_CALLS),
            "expected the %d api-bounds errors only (nothing reached a "
            "redzone): %s" % (len(API_BOUNDS_CALLS), describe_errors(r)))
    for label, (fn, offset, nbytes, alloc_fn, alloc_api,
                alloc_bytes) in API_BOUNDS_CALLS.items():
        mine = [e for e in errors if stack_has(e.get("stack"), fn)]
        if not c.check(len(mine) == 1, "expected one api-bounds error from %s"
                       " (%s), found %d: %s" % (fn, label, len(mine),
                                                describe_errors(r))):
            continue
        e = mine[0]
        call = label.split()[0]  # "cudaMemcpyAsync D2D past end" -> call
        if not str(e.get("call") or e.get("api") or "").startswith(call):
            c.warn("%s: error names call %r / api %r, expected %s" % (
                label, e.get("call"), e.get("api"), call))
        c.check(e.get("offset") == offset, "%s: offset %r, expected %d" % (
            label, e.get("offset"), offset))
        if alloc_bytes == "pitched":
            alloc_bytes = pitch * 8 if pitch else None
            c.check(pitch is not None and
                    (e.get("offset") or 0) + (e.get("bytes") or 0) >
                    pitch * 8, "%s: range [%r, +%r) should pass the end of "
                    "the %s-byte block" % (label, e.get("offset"),
                                           e.get("bytes"), alloc_bytes))
        else:
            c.check(e.get("bytes") == nbytes, "%s: bytes %r, expected %d" % (
                label, e.get("bytes"), nbytes))
        c.check(e.get("cuda_result") == results.get(label),
                "%s: cuda_result %r, the program got %r" % (
                    label, e.get("cuda_result"), results.get(label)))
        alloc = e.get("allocation") or {}
        c.check(alloc.get("api") == alloc_api and
                alloc.get("bytes") == alloc_bytes and
                stack_has(alloc.get("stack"), alloc_fn),
                "%s: allocation should be the %s-byte %s from %s: %s" % (
                    label, alloc_bytes, alloc_api, alloc_fn,
                    json.dumps(alloc)[:400]))
    for fn in ("ApiBoundsAllocateMain", "ApiBoundsAllocateDst",
               "ApiBoundsAllocatePitched"):
        c.expect_no_leak_from(r, fn)


def case_clean_multistream(c):
    plain, tool = c.run_pair("clean_multistream", timeout=300)
    kern = c.run_kernel_mode("clean_multistream", plain, timeout=300)
    for run, mode in ((tool, "sync"), (kern, "kernel")):
        r = run.report
        if r is None:
            continue
        c.expect_clean_errors(r)
        c.check(not r.get("leaks"), "[check=%s] clean program has leaks: %s"
                % (mode, describe_leaks(r)))
        s = r.get("summary", {})
        c.check(s.get("allocations", 0) >= 20,
                "[check=%s] only %s allocations tracked (stream-ordered, "
                "pitched, 3D, managed, thrust and CUB temporaries expected)"
                % (mode, s.get("allocations")))


def case_train_loop(c):
    iters = os.environ.get("GMT_TEST_TRAIN_ITERS", "20")
    args = ["--iters", iters]
    plain, tool = c.run_pair("train_loop", args, timeout=300,
                             compare_stdout=False)
    kern = c.run_kernel_mode("train_loop", plain, args, timeout=300,
                             compare_stdout=False)
    sums = []
    for run in (plain, tool, kern):
        m = re.search(r"^train_loop: checksum .*$", run.stdout, re.M)
        sums.append(m.group(0) if m else None)
    c.notes["checksums"] = sums
    c.notes["ms_per_iter"] = [_first(r"\(([0-9.]+) ms/iter\)", run.stdout)
                              for run in (plain, tool, kern)]
    c.check(sums[0] is not None, "train_loop printed no checksum: %r" %
            plain.stdout)
    c.check(sums[1] == sums[0], "checksum changed by the tool: %r without, "
            "%r with" % (sums[0], sums[1]))
    c.check(sums[2] == sums[0], "checksum changed by the tool with "
            "check=kernel: %r without, %r with" % (sums[0], sums[2]))
    for run, mode in ((tool, "sync"), (kern, "kernel")):
        r = run.report
        if r is None:
            continue
        c.expect_clean_errors(r)
        c.check(not r.get("leaks"), "[check=%s] train_loop leaks: %s" % (
            mode, describe_leaks(r)))


# -- what the program observes (DESIGN.md section 2, pitfall 5) --------------

def _stdout_diff(a, b, label_a, label_b, limit=40):
    """The lines that differ, as a unified diff (at most `limit` lines)."""
    lines = list(difflib.unified_diff(a.splitlines(), b.splitlines(),
                                      label_a, label_b, lineterm="", n=1))
    if len(lines) > limit:
        lines = lines[:limit] + ["... %d more lines" % (len(lines) - limit)]
    return "\n".join(lines)


# Facts measured on an H200 without the tool, printed by user_view: if CUDA
# answers otherwise the premise of the case changed (a warning, not a
# failure: the comparison with the tool is what counts).
USER_VIEW_PREMISES = (
    "user_view: cudaMalloc(1000): 1000 bytes, ptr%256=0",
    "  cuMemGetAddressRange(ptr+size): outside, 500 (CUDA_ERROR_NOT_FOUND)",
    "user_view: cudaMallocPitch(1000 x 7): pitch 1024",
)


def case_user_view(c):
    plain, tool = c.run_pair("user_view", compare_stdout=False)
    kern = c.run_kernel_mode("user_view", plain, compare_stdout=False)
    c.check(plain.rc == 0 and "user_view: done" in plain.stdout,
            "user_view did not finish without the tool (rc %s): %s" % (
                plain.rc, _tail(plain.stderr)))
    m = re.search(r"^user_view: 3-D .*$", plain.stdout, re.M)
    c.notes["three_d"] = m.group(0) if m else None
    c.check(m and re.search(r"\(0 wrong\), memset3D (\d+)/\1 bytes, round "
                            r"trip (\d+)/\2 bytes", m.group(0)),
            "the 3-D block did not round-trip without the tool: %r" % (
                m.group(0) if m else plain.stdout[-400:]))
    for premise in USER_VIEW_PREMISES:
        if premise not in plain.stdout.splitlines():
            c.warn("without the tool user_view did not print %r (CUDA's "
                   "answer changed?)" % premise)
    c.notes["pitches"] = re.findall(r"^user_view: .*pitch.*$", plain.stdout,
                                    re.M)
    for run, mode in ((tool, "sync"), (kern, "kernel")):
        c.check(run.stdout == plain.stdout,
                "[check=%s] what the program observes changed with the tool:"
                "\n%s" % (mode, _stdout_diff(plain.stdout, run.stdout,
                                              "without the tool",
                                              "with the tool")))
        r = run.report
        if r is None:
            continue
        c.expect_clean_errors(r)
        c.check(not r.get("leaks"), "[check=%s] user_view leaks: %s" % (
            mode, describe_leaks(r)))
        c.check(r.get("summary", {}).get("allocations", 0) >= 10,
                "[check=%s] only %s allocations tracked (10 expected: "
                "cudaMalloc x4, cuMemAlloc, managed, async, pitch, 3-D, "
                "cuMemAllocPitch)" % (mode, r.get("summary", {}).get(
                    "allocations")))


IPC_BYTES = 64 * KiB


def case_ipc_pair(c):
    plain, tool = c.run_pair("ipc_pair", timeout=240)
    want = "ipc: child saw %d/%d bytes, parent saw %d/%d bytes" % (
        IPC_BYTES, IPC_BYTES, IPC_BYTES, IPC_BYTES)
    for what, run in (("without the tool", plain), ("with the tool", tool)):
        line = _first(r"^(ipc: child saw .*)$", run.stdout)
        c.check(line == want, "%s: %r, expected %r (stderr: %s)" % (
            what, line, want, _tail(run.stderr)))
    # With the tool each process writes its report (%p): the parent's and
    # the child's (argv[1] "child"); both must be clean.
    run_dir = os.path.join(c.dir, "tool")
    parents, children = [], []
    for path in sorted(glob.glob(os.path.join(run_dir, "*.json"))):
        try:
            with open(path) as f:
                doc = json.load(f)
        except (OSError, ValueError) as e:
            c.check(False, "unreadable report %s: %s" % (path, e))
            continue
        argv = doc.get("argv") or []
        is_child = len(argv) > 1 and str(argv[1]).startswith("child")
        (children if is_child else parents).append((path, doc))
    c.notes["reports"] = {"parent": [os.path.basename(p) for p, _ in parents],
                          "child": [os.path.basename(p) for p, _ in children]}
    c.check(len(parents) == 1, "expected one report from the parent, found "
            "%d in %s" % (len(parents), run_dir))
    if not children:
        c.warn("no report from the child process (it inherits LD_PRELOAD "
               "and GMT_OPTIONS; was it traced?)")
    for who, docs in (("parent", parents), ("child", children)):
        for path, doc in docs:
            tag = "[%s %s] " % (who, os.path.basename(path))
            s = doc.get("summary", {})
            c.check(s.get("errors") == 0 and not doc.get("errors"),
                    tag + "expected no errors, summary.errors=%s: %s" % (
                        s.get("errors"), describe_errors(doc)))
            c.check(s.get("leaks") == 0 and not doc.get("leaks"),
                    tag + "expected no leaks, summary.leaks=%s: %s" % (
                        s.get("leaks"), describe_leaks(doc)))
            c.notes["summary_" + who] = s
    for _, doc in parents:
        c.check(doc.get("summary", {}).get("allocations", 0) >= 1,
                "the parent's report tracked no allocation (IpcPairAllocate)")


CASES = [
    ("leak_runtime", case_leak_runtime),
    ("leak_driver", case_leak_driver),
    ("leak_async_pool", case_leak_async_pool),
    ("leak_pinned_host", case_leak_pinned_host),
    ("leak_managed", case_leak_managed),
    ("leak_vmm", case_leak_vmm),
    ("double_free", case_double_free),
    ("invalid_free", case_invalid_free),
    ("api_mismatch", case_api_mismatch),
    ("clean_cublas_thrust", case_clean_cublas_thrust),
    ("static_cudart", case_static_cudart),
    ("snapshot_api", case_snapshot_api),
    ("churn", case_churn),
    ("churn_freed_checks", case_churn_freed_checks),
] + [(name, guard_case(name)) for name in GUARD_EXAMPLES] + [
    ("uaf_write_freed_ends", case_uaf_write_freed_ends),
    ("api_bounds", case_api_bounds),
    ("user_view", case_user_view),
    ("ipc_pair", case_ipc_pair),
    ("clean_multistream", case_clean_multistream),
    ("train_loop", case_train_loop),
    ("pytorch_train", case_pytorch_train),
]


def load_case_modules():
    """Cases of other features live in gpu_cases_*.py beside this script.

    Each such module defines `cases(t)`, where `t` is this module (for Case,
    Skip, stack_has, ...), and returns a list of (name, function) pairs.
    """
    import importlib.util
    # GMT_GPU_CASE_MODULES (comma-separated topics, e.g. "memtest") loads
    # only those modules: the self-test (selftest.py) fakes a GPU for this
    # file's cases and the modules it has fakes for.
    only = os.environ.get("GMT_GPU_CASE_MODULES")
    wanted = None if only is None else set(filter(None, only.split(",")))
    here = os.path.dirname(os.path.abspath(__file__))
    this = sys.modules[__name__]
    out = []
    for path in sorted(glob.glob(os.path.join(here, "gpu_cases_*.py"))):
        name = os.path.splitext(os.path.basename(path))[0]
        if wanted is not None and name[len("gpu_cases_"):] not in wanted:
            continue
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        out.extend(module.cases(this))
    return out


CASES = CASES + load_case_modules()


def cuda_device_present():
    """(present, reason). nvidia-smi -L first, the driver's proc files next."""
    smi = shutil.which("nvidia-smi")
    if smi:
        try:
            p = subprocess.run([smi, "-L"], stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, timeout=60)
            text = p.stdout.decode("utf-8", "replace").strip()
            if p.returncode == 0 and re.search(r"^GPU \d+:", text, re.M):
                return True, text.splitlines()[0]
            return False, "nvidia-smi -L: rc %d, %s" % (p.returncode,
                                                      _tail(text, 200))
        except (OSError, subprocess.TimeoutExpired) as e:
            return False, "nvidia-smi -L failed: %s" % e
    gpus = "/proc/driver/nvidia/gpus"
    if os.path.isdir(gpus) and os.listdir(gpus):
        return True, "%s lists %d GPU(s)" % (gpus, len(os.listdir(gpus)))
    return False, "no nvidia-smi and no %s" % gpus


class Context:
    def __init__(self, lib, examples_dir, out_dir, python):
        self.lib = lib
        self.examples_dir = examples_dir
        self.out_dir = out_dir
        self.python = python


def main(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--lib", default=os.environ.get("GMT_LIB"))
    parser.add_argument("--examples-dir",
                        default=os.environ.get("GMT_EXAMPLES_DIR"))
    parser.add_argument("--out-dir", default=os.environ.get("GMT_TEST_OUT"))
    parser.add_argument("--only", default="",
                        help="comma-separated case names to run")
    parser.add_argument("--skip", default="",
                        help="comma-separated case names not to run")
    parser.add_argument("--results", help="write a JSON summary here")
    parser.add_argument("--python", default=os.environ.get(
        "GMT_TEST_PYTHON", sys.executable or "python3"),
        help="interpreter for pytorch_train.py")
    parser.add_argument("--list", action="store_true")
    parser.add_argument("--corpus-dir", default=os.environ.get(
        "GMT_CORPUS_DIR"), help="the committed corpus' build folder")
    parser.add_argument("--corpus-manifest", action="append", default=[],
                        help="an extra corpus manifest (repeatable)")
    args = parser.parse_args(argv)

    names = [n for n, _ in CASES]
    if args.list:
        print("\n".join(names))
        return 0
    only = [n for n in args.only.split(",") if n]
    skip = [n for n in args.skip.split(",") if n]
    unknown = [n for n in only + skip if n not in names]
    if unknown:
        print("unknown case(s): %s (known: %s)" % (", ".join(unknown),
                                                   ", ".join(names)))
        return 2
    selected = [(n, f) for n, f in CASES
                if (not only or n in only) and n not in skip]

    present, reason = cuda_device_present()
    if not present:
        print("no CUDA device: skipping %s (%s)" % (
            ", ".join(n for n, _ in selected), reason))
        return SKIP
    print("CUDA device: %s" % reason)

    missing = [k for k in ("lib", "examples_dir", "out_dir")
               if not getattr(args, k)]
    if missing:
        print("missing: %s (arguments or GMT_LIB / GMT_EXAMPLES_DIR / "
              "GMT_TEST_OUT)" % ", ".join("--" + m.replace("_", "-")
                                          for m in missing))
        return 2
    lib = os.path.abspath(args.lib)
    if not os.path.isfile(lib):
        print("FAIL: the library %s does not exist (build target "
              "gpumemtrace first)" % lib)
        return 1
    ctx = Context(lib, os.path.abspath(args.examples_dir),
                  os.path.abspath(args.out_dir), args.python)
    ctx.corpus_dir = args.corpus_dir
    ctx.corpus_manifests = args.corpus_manifest
    os.makedirs(ctx.out_dir, exist_ok=True)
    print("library:  %s\nexamples: %s\nout:      %s" % (
        ctx.lib, ctx.examples_dir, ctx.out_dir), flush=True)

    results = []
    for name, fn in selected:
        print("[ RUN      ] %s" % name, flush=True)
        case = Case(name, ctx)
        start = time.monotonic()
        status = "pass"
        try:
            fn(case)
        except Skip as e:
            status = "skip"
            case.notes["skip_reason"] = str(e)
        except Exception as e:  # a broken case fails, the others still run
            case.failures.append("%s: %s" % (type(e).__name__, e))
        if status != "skip" and case.failures:
            status = "fail"
        seconds = time.monotonic() - start
        for w in case.warnings:
            print("  warning: %s" % w)
        for f in case.failures:
            print("  FAILED: %s" % f)
        if status == "skip":
            print("  skipped: %s" % case.notes["skip_reason"])
        tag = {"pass": "      OK", "fail": "  FAILED", "skip": " SKIPPED"}
        print("[%s ] %s (%.1f s)" % (tag[status], name, seconds), flush=True)
        results.append({"case": name, "status": status,
                        "seconds": round(seconds, 3),
                        "failures": case.failures,
                        "warnings": case.warnings, "notes": case.notes})

    passed = sum(r["status"] == "pass" for r in results)
    failed = sum(r["status"] == "fail" for r in results)
    skipped = sum(r["status"] == "skip" for r in results)
    if args.results:
        with open(args.results, "w") as f:
            json.dump({"device": reason, "library": ctx.lib,
                       "results": results}, f, indent=2)
    print("%d passed, %d failed, %d skipped" % (passed, failed, skipped))
    if failed:
        return 1
    if skipped and not passed:
        return SKIP
    return 0


if __name__ == "__main__":
    sys.exit(main())
