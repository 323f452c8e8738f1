"""GPU cases of the CUPTI front end.

  cupti_static_leaks    static_cudart (nvcc's default static runtime) run with
                        CUDA_INJECTION64_PATH only (no LD_PRELOAD): the same
                        leaks (api, count, bytes, function) and no errors, as
                        under LD_PRELOAD; stdout unchanged
  cupti_static_guard    oob_static the same way: the guard-zone report under
                        injection only equals the LD_PRELOAD one (kind,
                        offset, changed bytes, allocation, the offending
                        kernel named), check=sync and check=kernel
  cupti_count_once      static_cudart and oob_static with LD_PRELOAD and
                        CUDA_INJECTION64_PATH and cupti=on: allocation,
                        free, leak and error counts equal the LD_PRELOAD-only
                        run (not doubled)
  cupti_torch_profiler  examples/pytorch_profile.py (torch.profiler inside):
                        under LD_PRELOAD the profiler still records CUDA
                        events and the loss is bit-identical; with
                        cupti=on the outcome (profiler or tool note) is
                        recorded (informational)
  cupti_launch_cost     train_loop --small-kernels under injection only and
                        under LD_PRELOAD + cupti=on, launch callbacks on and
                        off: us per launch and the ratio (in the notes; the
                        case fails only if a run fails or checksums differ)
  cupti_graph_mem_nodes graph_mem_nodes (shared cudart) and
                        graph_mem_nodes_static (static cudart), each under
                        LD_PRELOAD and under CUDA_INJECTION64_PATH alone
                       : no error at all (no invalid or
                        double free of graph memory), exactly one leak (api
                        "graph-mem-node", 1049088 bytes, GraphMemLeakNode in
                        its stack), 9 allocations and 8 frees (counted once),
                        stdout and exit code unchanged

A run that times out leaves the hung process's thread stacks (gdb, else
eu-stack ($GMT_EU_STACK or on PATH); then /proc/<pid>/task/*/stack and
wchan) in <run>/hang_stacks.txt before it is killed; the check=kernel
injection run of cupti_static_guard has a 90 s limit.

Loaded by gpu_tests.py (cases(t)); run with
  python3 tests/gpu/gpu_tests.py --only cupti_static_leaks,cupti_static_guard,cupti_count_once,cupti_torch_profiler,cupti_launch_cost,cupti_graph_mem_nodes
"""
import glob
import json
import os
import re
import shutil
import subprocess
import time

MiB = 1 << 20


def _inject(t, c, label, argv, options=None, preload=False, timeout=300,
            extra_env=None):
    """Runs argv with CUDA_INJECTION64_PATH=<library> (and LD_PRELOAD only
    when `preload`), a JSON report asked for in the run's folder. Returns a
    t.Run like Case.run does."""
    run_dir = os.path.join(c.dir, label)
    shutil.rmtree(run_dir, ignore_errors=True)
    os.makedirs(run_dir)
    env = dict(os.environ)
    for key in ("LD_PRELOAD", "GMT_OPTIONS", "CUDA_INJECTION64_PATH"):
        env.pop(key, None)
    env["CUDA_INJECTION64_PATH"] = c.ctx.lib
    if preload:
        env["LD_PRELOAD"] = c.ctx.lib
    gmt = "report=json:report_path=%s/%%p.json" % run_dir
    extra = os.environ.get("GMT_EXTRA_OPTIONS", "")
    if extra:
        gmt += ":" + extra
    if options:
        gmt += ":" + options
    env["GMT_OPTIONS"] = gmt
    if extra_env:
        env.update(extra_env)
    start = time.monotonic()
    rc, out, err = _run_dumping_hangs(argv, env, timeout, run_dir)
    seconds = time.monotonic() - start
    out = out.decode("utf-8", "replace")
    err = err.decode("utf-8", "replace")
    with open(os.path.join(run_dir, "stdout.txt"), "w") as f:
        f.write(out)
    with open(os.path.join(run_dir, "stderr.txt"), "w") as f:
        f.write(err)
    report, report_error = None, "no JSON report written in %s" % run_dir
    for path in sorted(glob.glob(os.path.join(run_dir, "*.json"))):
        try:
            with open(path) as f:
                report, report_error = json.load(f), None
        except (OSError, ValueError) as e:
            report_error = "unreadable report %s: %s" % (path, e)
    print("    %-10s %-12s %7.2fs  rc=%s  [%s]" % (
        label, "(inject%s)" % ("+preload" if preload else ""), seconds, rc,
        options or ""), flush=True)
    return t.Run(rc, out, err, seconds, report, report_error)


def _dump_stacks(pid, path):
    """Best effort: the thread stacks of a hung process, into `path`."""
    lines = []
    gdb = shutil.which("gdb")
    if gdb:
        try:
            r = subprocess.run(
                [gdb, "-p", str(pid), "-batch", "-nx",
                 "-ex", "set pagination off",
                 "-ex", "thread apply all bt 40"],
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=60)
            lines.append(r.stdout.decode("utf-8", "replace"))
        except (OSError, subprocess.TimeoutExpired) as e:
            lines.append("gdb failed: %s" % e)
    # elfutils' eu-stack where there is no gdb (the device image has
    # neither; GMT_EU_STACK names a carried copy): user frames with symbols.
    eu_stack = os.environ.get("GMT_EU_STACK") or shutil.which("eu-stack")
    if not gdb and eu_stack:
        try:
            r = subprocess.run(
                [eu_stack, "-p", str(pid), "-m", "-i", "-s"],
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=60)
            lines.append(r.stdout.decode("utf-8", "replace"))
        except (OSError, subprocess.TimeoutExpired) as e:
            lines.append("eu-stack failed: %s" % e)
    for task in sorted(glob.glob("/proc/%d/task/*" % pid)):
        lines.append("== %s" % task)
        for name in ("comm", "wchan", "stack"):
            try:
                with open(os.path.join(task, name)) as f:
                    lines.append("%s: %s" % (name, f.read().strip()))
            except OSError as e:
                lines.append("%s: (%s)" % (name, e.strerror))
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def _run_dumping_hangs(argv, env, timeout, run_dir):
    """subprocess.run with a time limit; a process still running at the limit
    has its stacks dumped into <run_dir>/hang_stacks.txt, then is killed.
    Returns (rc or "timeout", stdout bytes, stderr bytes)."""
    out_path = os.path.join(run_dir, ".stdout.raw")
    err_path = os.path.join(run_dir, ".stderr.raw")
    with open(out_path, "wb") as out_f, open(err_path, "wb") as err_f:
        proc = subprocess.Popen(argv, env=env, stdout=out_f, stderr=err_f,
                                cwd=run_dir)
        try:
            rc = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            _dump_stacks(proc.pid, os.path.join(run_dir, "hang_stacks.txt"))
            proc.kill()
            proc.wait()
            rc = "timeout"
    with open(out_path, "rb") as f:
        out = f.read()
    with open(err_path, "rb") as f:
        err = f.read()
    os.unlink(out_path)
    os.unlink(err_path)
    return rc, out, err


def _leak_sites(report):
    """{(api, first program function): (count, bytes)} of a report."""
    out = {}
    for leak in (report or {}).get("leaks", []):
        stack = leak.get("stack") or []
        fn = stack[0].get("function", "?") if stack else "?"
        key = (leak.get("api"), fn)
        count, nbytes = out.get(key, (0, 0))
        out[key] = (count + leak.get("count", 0), nbytes + leak.get("bytes", 0))
    return out


def _error_view(report):
    return sorted(
        (e.get("kind"), e.get("offset"), e.get("bytes"),
         (e.get("allocation") or {}).get("api"),
         (e.get("allocation") or {}).get("bytes"),
         tuple(str(k) for k in (e.get("kernels") or [])))
        for e in (report or {}).get("errors", []))


def _same_exit_and_stdout(t, c, plain, run, what):
    c.check(run.rc == plain.rc, "%s: exit code %s, %s without the tool "
            "(stderr: %s)" % (what, run.rc, plain.rc, t._tail(run.stderr)))
    c.check(run.stdout == plain.stdout, "%s: stdout changed:\n--- without\n"
            "%s--- with\n%s" % (what, plain.stdout, run.stdout))


def _no_cupti_trouble(c, run, what):
    for bad in ("CUPTI could not be loaded", "CUPTI is taken"):
        c.check(bad not in run.stderr, "%s: %r on stderr: %s" % (
            what, bad, run.stderr[-600:]))


def case_cupti_static_leaks(t):
    def case(c):
        plain, pre = c.run_pair("static_cudart")
        inj = _inject(t, c, "inject", [c.example("static_cudart")])
        _same_exit_and_stdout(t, c, plain, inj, "injection only")
        _no_cupti_trouble(c, inj, "injection only")
        c.check_report_shape(inj)
        for what, run in (("LD_PRELOAD", pre), ("injection only", inj)):
            r = run.report
            c.expect_leak(r, ["cudaMalloc", "cuMemAlloc"],
                          "LeakStaticRuntimeBuffers", 3, 3 * MiB, device=0)
            c.expect_no_leak_from(r, "StaticUseAndFreeScratch")
            c.expect_clean_errors(r)
        if pre.report and inj.report:
            c.check(_leak_sites(pre.report) == _leak_sites(inj.report),
                    "leak sites differ: LD_PRELOAD %s, injection %s" % (
                        _leak_sites(pre.report), _leak_sites(inj.report)))
            for key in ("allocations", "frees", "leaks", "leaked_bytes"):
                c.check(pre.report["summary"].get(key) ==
                        inj.report["summary"].get(key),
                        "summary.%s: LD_PRELOAD %s, injection %s" % (
                            key, pre.report["summary"].get(key),
                            inj.report["summary"].get(key)))
        c.notes["seconds_inject"] = round(inj.seconds, 3)
    return case


def case_cupti_static_guard(t):
    spec = dict(t.GUARD_EXAMPLES["oob_static"])

    def expect(c, run, mode):
        return c.expect_guard_error(
            run, mode, spec["kind"], spec["kernel"], spec["alloc_api"],
            spec["alloc_fn"], spec["alloc_bytes"], spec["offset"],
            spec["changed"])

    def case(c):
        argv = [c.example("oob_static")]
        plain, pre = c.run_pair("oob_static")
        for mode, options in (("sync", None), ("kernel", "check=kernel")):
            # Check=kernel under injection alone once hung (300 s);
            # a short limit makes a regression fail fast, with the stacks.
            inj = _inject(t, c, "inject_" + mode, argv, options=options,
                          timeout=90 if mode == "kernel" else 300)
            if inj.rc == "timeout":
                c.notes["hang_stacks_" + mode] = os.path.join(
                    c.dir, "inject_" + mode, "hang_stacks.txt")
            _same_exit_and_stdout(t, c, plain, inj,
                                  "injection only, check=%s" % mode)
            _no_cupti_trouble(c, inj, "injection only")
            c.check_report_shape(inj)
            e = expect(c, inj, mode)
            if mode == "sync":
                expect(c, pre, "sync")
                c.check(_error_view(pre.report) == _error_view(inj.report),
                        "guard reports differ: LD_PRELOAD %s, injection %s"
                        % (_error_view(pre.report),
                           _error_view(inj.report)))
            if e is None:
                # Say which part is missing: no redzones at all (the static
                # runtime's driver table was not redirected) or no name.
                g = (inj.report or {}).get("guard", {})
                c.notes["guard_" + mode] = g
    return case


def case_cupti_count_once(t):
    def case(c):
        for program in ("static_cudart", "oob_static"):
            argv = [c.example(program)]
            pre = c.run(program + "_preload", argv, tool=True)
            both = _inject(t, c, program + "_both", argv, options="cupti=on",
                           preload=True)
            c.check(both.rc == pre.rc, "%s: exit %s with both paths, %s with "
                    "LD_PRELOAD" % (program, both.rc, pre.rc))
            c.check(both.stdout == pre.stdout, "%s: stdout differs with both "
                    "paths" % program)
            c.check_report_shape(both)
            if pre.report is None or both.report is None:
                continue
            for key in ("allocations", "frees", "leaks", "leaked_bytes",
                        "errors"):
                c.check(pre.report["summary"].get(key) ==
                        both.report["summary"].get(key),
                        "%s: summary.%s %s with both paths, %s with LD_PRELOAD"
                        " (counted twice?)" % (
                            program, key, both.report["summary"].get(key),
                            pre.report["summary"].get(key)))
            c.check(_leak_sites(pre.report) == _leak_sites(both.report),
                    "%s: leak sites differ: %s vs %s" % (
                        program, _leak_sites(pre.report),
                        _leak_sites(both.report)))
            c.check(_error_view(pre.report) == _error_view(both.report),
                    "%s: errors differ: %s vs %s" % (
                        program, _error_view(pre.report),
                        _error_view(both.report)))
    return case


def case_cupti_torch_profiler(t):
    def case(c):
        script = os.path.join(c.ctx.examples_dir, "pytorch_profile.py")
        if not os.path.isfile(script):
            raise FileNotFoundError("not found: %s" % script)
        py = t.torch_python(c)
        argv = [py, script]
        env = {"PYTHONUNBUFFERED": "1"}
        plain = c.run("plain", argv, tool=False, timeout=480, extra_env=env)
        tool = c.run("tool", argv, tool=True, timeout=480, extra_env=env)
        on = c.run("cupti_on", argv, tool=True, timeout=480, extra_env=env,
                   options="cupti=on")

        def counts(run):
            m = re.search(r"profiler_events=(\d+) cuda_events=(\d+)",
                          run.stderr)
            return (int(m.group(1)), int(m.group(2))) if m else None

        c.check(plain.rc == 0 and counts(plain) and counts(plain)[1] > 0,
                "profiler without the tool: rc %s, %r" % (
                    plain.rc, t._tail(plain.stderr)))
        c.check(tool.rc == 0, "profiler under the tool failed: rc %s: %s" % (
            tool.rc, t._tail(tool.stderr)))
        got = counts(tool)
        c.check(got is not None and got[0] > 0 and got[1] > 0,
                "torch.profiler under the tool recorded %r events (CUDA "
                "events must be > 0): %s" % (got, t._tail(tool.stderr)))
        c.check(tool.stdout == plain.stdout,
                "loss changed by the tool:\n--- without\n%s--- with\n%s" % (
                    plain.stdout, tool.stdout))
        c.check("CUPTI is taken" not in tool.stderr,
                "default cupti=auto subscribed under LD_PRELOAD")
        c.check_report_shape(tool)
        if tool.report is not None:
            c.expect_clean_errors(tool.report)
        c.notes["events_plain"] = counts(plain)
        c.notes["events_tool"] = got
        # cupti=on: the tool subscribes first; with the multi-subscriber API
        # both work, without it the profiler loses CUDA events. Recorded.
        c.notes["events_cupti_on"] = counts(on)
        c.notes["cupti_on_rc"] = on.rc
        c.notes["cupti_on_loss_same"] = on.stdout == plain.stdout
        c.notes["cupti_on_note"] = [l for l in on.stderr.splitlines()
                                    if "CUPTI" in l][:3]
        c.check(on.stdout == plain.stdout,
                "output changed with cupti=on:\n--- without\n%s--- with\n%s"
                "--- stderr\n%s" % (plain.stdout, on.stdout,
                                     t._tail(on.stderr, 1500)))
    return case


def case_cupti_launch_cost(t):
    def case(c):
        k = os.environ.get("GMT_TEST_CUPTI_KERNELS", "64")
        iters = os.environ.get("GMT_TEST_CUPTI_ITERS", "500")
        argv = [c.example("train_loop"), "--iters", iters, "--mib", "64",
                "--small-kernels", k]

        def us(run):
            m = re.search(r"([0-9.]+) us/kernel", run.stdout)
            return float(m.group(1)) if m else None

        def checksum(run):
            m = re.search(r"checksum (\S+)", run.stdout)
            return m.group(1) if m else None

        best = {}
        sums = {}
        for rnd in range(3):
            runs = {
                "plain": c.run("plain%d" % rnd, argv, tool=False),
                "inject_cb_off": _inject(t, c, "ioff%d" % rnd, argv,
                                         options="cupti_kernels=off"),
                "inject_cb_on": _inject(t, c, "ion%d" % rnd, argv,
                                        options="cupti_kernels=on"),
                "preload_cb_off": _inject(
                    t, c, "poff%d" % rnd, argv, preload=True,
                    options="cupti=on:cupti_kernels=off"),
                "preload_cb_on": _inject(
                    t, c, "pon%d" % rnd, argv, preload=True,
                    options="cupti=on:cupti_kernels=on"),
            }
            for name, run in runs.items():
                c.check(run.rc == 0, "%s failed: rc %s: %s" % (
                    name, run.rc, t._tail(run.stderr)))
                v = us(run)
                if v is not None:
                    best[name] = min(best.get(name, v), v)
                sums.setdefault(checksum(run), []).append(name)
        c.check(len(sums) == 1, "checksums differ between runs: %s" % sums)
        c.notes["us_per_kernel_min_of_3"] = best
        for where in ("inject", "preload"):
            on, off = best.get(where + "_cb_on"), best.get(where + "_cb_off")
            if on and off:
                c.notes[where + "_callback_us_per_launch"] = round(on - off, 4)
                c.notes[where + "_ratio_on_off"] = round(on / off, 4)
        if best.get("plain") and best.get("inject_cb_on"):
            c.notes["inject_cb_on_vs_plain"] = round(
                best["inject_cb_on"] / best["plain"], 4)
    return case


GRAPH_LEAK_BYTES = (1 << 20) + 512


def case_cupti_graph_mem_nodes(t):
    def expect(c, run, what):
        c.check(run.rc == 0, "%s: exit %s (stderr: %s)" % (
            what, run.rc, t._tail(run.stderr)))
        c.check_report_shape(run)
        r = run.report
        if r is None:
            return
        # The bug this guards: frees of graph memory taken for invalid or
        # double frees.
        c.check(not r.get("errors"), "%s: errors (expected none): %s" % (
            what, json.dumps(r.get("errors"))[:1500]))
        c.expect_clean_errors(r)
        c.expect_leak(r, "graph-mem-node", "GraphMemLeakNode", 1,
                      GRAPH_LEAK_BYTES, device=0,
                      file_suffix="graph_mem_nodes.cu")
        others = [l for l in r.get("leaks", [])
                  if l.get("api") != "graph-mem-node"]
        c.check(not others, "%s: other leaks: %s" % (
            what, json.dumps(others)[:1500]))
        summary = r.get("summary", {})
        c.check(summary.get("allocations") == 9 and
                summary.get("frees") == 8,
                "%s: %s allocations, %s frees (expected 9 and 8: each graph "
                "launch's block once)" % (what, summary.get("allocations"),
                                          summary.get("frees")))
        c.notes[what] = {k: summary.get(k) for k in
                         ("allocations", "frees", "leaks", "leaked_bytes",
                          "untracked_frees")}

    def case(c):
        for program in ("graph_mem_nodes", "graph_mem_nodes_static"):
            argv = [c.example(program)]
            plain = c.run(program + "_plain", argv, tool=False)
            c.check(plain.rc == 0, "%s without the tool: rc %s: %s" % (
                program, plain.rc, t._tail(plain.stderr)))
            pre = c.run(program + "_preload", argv, tool=True)
            inj = _inject(t, c, program + "_inject", argv, timeout=180)
            for what, run in ((program + " LD_PRELOAD", pre),
                              (program + " injection only", inj)):
                _same_exit_and_stdout(t, c, plain, run, what)
                expect(c, run, what)
            _no_cupti_trouble(c, inj, program + " injection only")
            if pre.report and inj.report:
                for key in ("allocations", "frees", "leaks", "leaked_bytes",
                            "errors"):
                    c.check(pre.report["summary"].get(key) ==
                            inj.report["summary"].get(key),
                            "%s summary.%s: LD_PRELOAD %s, injection %s" % (
                                program, key, pre.report["summary"].get(key),
                                inj.report["summary"].get(key)))
    return case


def cases(t):
    return [
        ("cupti_static_leaks", case_cupti_static_leaks(t)),
        ("cupti_static_guard", case_cupti_static_guard(t)),
        ("cupti_count_once", case_cupti_count_once(t)),
        ("cupti_torch_profiler", case_cupti_torch_profiler(t)),
        ("cupti_launch_cost", case_cupti_launch_cost(t)),
        ("cupti_graph_mem_nodes", case_cupti_graph_mem_nodes(t)),
    ]
