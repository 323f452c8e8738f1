"""GPU cases of the crash report: a planted illegal device
access (sticky CUDA error 700 at cudaDeviceSynchronize) and a host segfault
after CUDA work. Each compares the program's own outcome (printed code, exit
status or signal) with a run without the tool and checks the report.

Loaded by gpu_tests.py (cases(t)); run with
  python3 tests/gpu/gpu_tests.py --only crash_illegal_address,crash_segv
"""
import glob
import json
import os
import re
import signal


def _names(kernels):
    return [k.get("name", "") for k in kernels]


def _live_apis(crash):
    return sorted(b.get("api", "") for b in crash.get("live_allocations", []))


def case_crash_illegal_address(c, t):
    argv = [c.example("crash_illegal_address")]
    plain = c.run("plain", argv, tool=False)
    tool = c.run("tool", argv, tool=True)
    # What the program sees and does is unchanged.
    c.check(plain.rc == 1, "without the tool: rc %s, expected 1 (stdout: %s)"
            % (plain.rc, plain.stdout))
    c.check("cudaDeviceSynchronize returned 700 (cudaErrorIllegalAddress)"
            in plain.stdout,
            "the planted access did not give 700 without the tool: %s"
            % plain.stdout)
    c.check(tool.rc == plain.rc, "exit code changed by the tool: %s vs %s "
            "(stderr: %s)" % (plain.rc, tool.rc, tool.stderr[-600:]))
    c.check(tool.stdout == plain.stdout,
            "stdout changed by the tool:\n--- without\n%s--- with\n%s"
            % (plain.stdout, tool.stdout))
    c.check_report_shape(tool)
    r = tool.report
    if r is None:
        return
    errors = [e for e in r.get("errors", []) if e.get("kind") == "cuda-error"]
    if c.check(len(errors) == 1, "expected one cuda-error, got: %s"
               % t.describe_errors(r)):
        e = errors[0]
        c.check(e.get("call") == "cudaDeviceSynchronize",
                "cuda-error call %r" % e.get("call"))
        c.check(e.get("cuda_result") == 700,
                "cuda-error cuda_result %r" % e.get("cuda_result"))
        c.check(e.get("cuda_error") == "cudaErrorIllegalAddress",
                "cuda-error name %r" % e.get("cuda_error"))
        kernels = e.get("kernels", [])
        c.check(kernels and kernels[-1].startswith("write_wild"),
                "cuda-error kernels (newest last) %s" % kernels)
        c.check(t.stack_has(e.get("stack", []), "main"),
                "cuda-error stack %s" % t.short_stack(e.get("stack", [])))
        # The newest launch as made, its one argument resolved, and the
        # command that explains the fault.
        detail = e.get("detail", "")
        c.check(re.search(r"The newest launch: write_wild\(int\*\), launched "
                          r"at [^,]*crash_illegal_address\.cu:\d+\), with "
                          r"grid \(1,1,1\) and block \(32,1,1\)", detail)
                is not None, "newest launch or its call site missing: %s"
                % detail)
        # Its argument, 0x10, is below the lowest word kept as an address.
        c.check("no argument holds an address" in detail,
                "argument 0 (0x10) misdescribed: %s" % detail)
        c.check("gpumemtrace run --explain-faults -- " in detail,
                "no explain command: %s" % detail)
    crash = r.get("crash")
    if not c.check(isinstance(crash, dict), "report has no crash object"):
        return
    c.check(crash.get("kind") == "cuda-error", "crash.kind %r"
            % crash.get("kind"))
    c.check(crash.get("call") == "cudaDeviceSynchronize" and
            crash.get("cuda_result") == 700,
            "crash call/code %r/%r" % (crash.get("call"),
                                       crash.get("cuda_result")))
    names = _names(crash.get("recent_kernels", []))
    c.check(any(n.startswith("write_wild") for n in names),
            "recent_kernels lack the planted kernel: %s" % names)
    c.check(any(n.startswith("fill_ok") for n in names),
            "recent_kernels lack fill_ok: %s" % names)
    c.check(crash.get("live_blocks") == 2,
            "crash.live_blocks %r" % crash.get("live_blocks"))
    c.check(_live_apis(crash) == ["cudaMalloc", "cudaMallocHost"],
            "crash.live_allocations %s" % _live_apis(crash))
    c.expect_leak(r, "cudaMalloc", "CrashAllocateBuffer", 1, 1 << 20)
    c.expect_leak(r, "cudaMallocHost", "CrashAllocatePinned", 1, 64 << 10)
    # The report existed before the program returned: written at the call,
    # with the error printed once on stderr.
    c.check(tool.stderr.count("ERROR: cuda-error") == 1,
            "cuda-error printed %d times" % tool.stderr.count(
                "ERROR: cuda-error"))
    c.notes["seconds_tool"] = round(tool.seconds, 3)
    # The planted access is an MMU fault: does the driver's Xid (31 or 13)
    # reach the watcher before the report is written?
    c.notes["xid_events"] = [
        (d.get("xid_status"), d.get("xid_events"))
        for d in (r.get("health") or {}).get("devices", [])]
    # Seen on the H200: Xid 31 "GPU memory page fault" at 0.39 s. NVML tells
    # a watcher only of Xids after it registered (in the background, after
    # the first CUDA call), and this program faults at once: where the
    # watch began after the error, the report must say so instead.
    watched = [d for d in (r.get("health") or {}).get("devices", [])
               if str(d.get("xid_status", "")).startswith("watched")]
    errors = [e for e in r.get("errors", []) if e.get("kind") == "cuda-error"]
    if watched and errors:
        xids = [e.get("xid") for d in watched
                for e in d.get("xid_events") or []]
        since = re.search(r"since ([0-9.]+) s", watched[0]["xid_status"])
        error_s = errors[0].get("time_s", 0)
        if since is not None and float(since.group(1)) > error_s and not xids:
            c.warn("no Xid: the watch began at %s s, after the error at "
                   "%.3f s" % (since.group(1), error_s))
        else:
            c.check(any(x in (13, 31, 43) for x in xids),
                    "the planted illegal access left no Xid 13/31/43 in "
                    "the report (%s; error at %.3f s): %s" % (
                        watched[0]["xid_status"], error_s, xids))


def case_crash_segv(c, t):
    argv = [c.example("crash_segv")]
    plain = c.run("plain", argv, tool=False)
    tool = c.run("tool", argv, tool=True)
    c.check(plain.rc == -signal.SIGSEGV,
            "without the tool: rc %s, expected death by SIGSEGV" % plain.rc)
    c.check(tool.rc == plain.rc, "exit status changed by the tool: %s vs %s "
            "(stderr: %s)" % (plain.rc, tool.rc, tool.stderr[-600:]))
    c.check(tool.stdout == plain.stdout,
            "stdout changed by the tool:\n--- without\n%s--- with\n%s"
            % (plain.stdout, tool.stdout))
    c.check("caught SIGSEGV (SEGV_MAPERR) at address 0x0" in tool.stderr,
            "no signal-safe header line: %s" % tool.stderr[-600:])
    c.check_report_shape(tool)
    r = tool.report
    if r is None:
        return
    c.check(r.get("reason") == "crash", "report reason %r" % r.get("reason"))
    crash = r.get("crash")
    if not c.check(isinstance(crash, dict), "report has no crash object"):
        return
    c.check(crash.get("kind") == "signal" and crash.get("signal") == 11 and
            crash.get("signal_name") == "SIGSEGV",
            "crash signal fields %s" % {k: crash.get(k) for k in (
                "kind", "signal", "signal_name")})
    c.check(crash.get("code_name") == "SEGV_MAPERR",
            "crash.code_name %r" % crash.get("code_name"))
    c.check(crash.get("fault_address") == "0x0",
            "crash.fault_address %r" % crash.get("fault_address"))
    names = _names(crash.get("recent_kernels", []))
    c.check(any(n.startswith("touch_buffer") for n in names),
            "recent_kernels lack touch_buffer: %s" % names)
    c.check(crash.get("live_blocks") == 2,
            "crash.live_blocks %r" % crash.get("live_blocks"))
    c.check(_live_apis(crash) == ["cudaMalloc", "cudaMallocManaged"],
            "crash.live_allocations %s" % _live_apis(crash))
    c.expect_leak(r, "cudaMalloc", "SegvAllocateDevice", 1, 1 << 20)
    c.expect_leak(r, "cudaMallocManaged", "SegvAllocateManaged", 1, 64 << 10)
    c.notes["seconds_tool"] = round(tool.seconds, 3)


# The four faulting programs of the explain-faults report: the CUDA ones are
# the examples built from tests/fixtures/cudacore/*.cu; the Triton one runs
# that folder's triton_oob.py. Each: (label, program, kernel as the report
# names it, source line, exception words, where the address must lie when
# nvdisasm derives it (None: not asserted)).
# The dump fixtures' sources: $GMT_CUDACORE_FIXTURES (tools/device_run.sh
# sets it to the checkout's folder; the bundle's tests/ holds no fixtures),
# else beside this file in the source tree.
_FIXTURES = os.environ.get("GMT_CUDACORE_FIXTURES") or os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "fixtures", "cudacore")
# label, example, kernel, (source, text of the faulting line), exception,
# where the address lies, text of the line that launched the kernel (the
# default report's launch site). Lines are found by their text, so a
# reformatted fixture keeps its expectations.
_FAULTS = [
    ("wild_write", "crash_wild_write", "scatter(float*, int const*, int)",
     ("wild_write.cu", "out[idx[i]] = 1.0f"), "Invalid Address Space",
     "past the end of the 4.0 KiB", "scatter<<<"),
    ("misaligned", "crash_misaligned", "store_pairs(char*, int)",
     ("misaligned.cu", "*slot = i;"), "Misaligned Address",
     "bytes into the 8.0 KiB", "store_pairs<<<"),
    ("null_member", "crash_null_member", "scale_kernel(Params)",
     ("null_member.cu", "p.out[i] = p.in[i]"), "Illegal Address",
     "past a null pointer", "scale_kernel<<<"),
    ("triton_oob", None, "copy_kernel",
     ("triton_oob.py", "tl.store(dst"), "Illegal Address", None, None),
]


def _fixture_line(source, text):
    """`source:N` for the first line of the fixture `source` holding `text`
    (the line a report names), or raises."""
    with open(os.path.join(_FIXTURES, source)) as f:
        for number, line in enumerate(f, 1):
            if text in line:
                return "%s:%d" % (source, number)
    raise ValueError("%s holds no line with %r" % (source, text))


def _section(text, start, lines=14):
    """The lines of `text` from the first holding `start`, a few."""
    out = text.splitlines()
    for i, line in enumerate(out):
        if start in line:
            return "\n".join(out[i:i + lines])
    return ""


def case_explain_faults_programs(c, t):
    """Four programs that fault on the GPU, each in the default mode (the
    report at the sticky error: the newest launch with its arguments
    resolved, and the command that explains the fault) and under
    `gpumemtrace run --explain-faults` (the library arms the driver's dump;
    its crash report reads it: exception, kernel, line, threads, and the
    address placed among the blocks). Notes both texts and the seconds of
    each run (the difference is the dump plus its reading)."""
    import re
    import shutil
    launcher = t.launcher_path(c)
    have_nvdisasm = shutil.which("nvdisasm") or os.access(
        "/usr/local/cuda/bin/nvdisasm", os.X_OK)
    for label, example, kernel, where, exception, place, site in _FAULTS:
        line = _fixture_line(*where)
        if site:
            site = _fixture_line(where[0], site)
        if example is None:
            try:
                py = t.torch_python(c)
            except Exception as e:  # Skip: no torch here
                c.warn("%s: %s" % (label, e))
                continue
            argv = [py, os.path.join(_FIXTURES, "triton_oob.py")]
        else:
            argv = [c.example(example)]
        plain = c.run(label + "-plain", argv, tool=False)
        default = c.run(label + "-default", argv, tool=True,
                        options="report=text,json")
        c.check(default.rc == plain.rc,
                "%s: exit %s under the tool, %s without" % (
                    label, default.rc, plain.rc))
        # A wild address far from every block faults as 717 or 700 by
        # what lies there, which redzones move (docs/limits.md): the two
        # are one outcome for the program (the context is lost).
        lost = lambda text: text.replace("cudaErrorInvalidAddressSpace",
                                         "cudaErrorIllegalAddress")
        same = (default.stdout == plain.stdout or
                (label == "wild_write" and
                 lost(default.stdout) == lost(plain.stdout)))
        if same and default.stdout != plain.stdout:
            c.warn("%s: the fault's error differs (717 vs 700): %r vs %r" % (
                label, plain.stdout.strip(), default.stdout.strip()))
        c.check(same, "%s: stdout changed by the tool:\n%s\nvs\n%s" % (
            label, plain.stdout, default.stdout))
        err = default.stderr
        c.notes[label + "_default"] = _section(err, "ERROR: cuda-error", 6)
        c.check("The newest launch: " in err,
                "%s: the newest launch is not shown: %s" % (label,
                                                           t._tail(err)))
        c.check("gpumemtrace run --explain-faults -- " in err,
                "%s: no explain command: %s" % (label, t._tail(err)))
        if site:
            c.check(re.search(r"launched at main \([^)]*%s\)" % re.escape(
                site), err) is not None, "%s: the launch site should be "
                "main at %s: %s" % (label, site, t._tail(err)))
        if example is None:
            # Launched by Triton's launcher (C) under its JIT (Python, in
            # site-packages): the script's line is named below them.
            launch = _fixture_line("triton_oob.py", "copy_kernel[(")
            c.check(re.search(r"from Python at <module> \([^)]*%s\)" %
                              re.escape(launch), err) is not None,
                    "%s: the script's launching line (%s) is not named: %s"
                    % (label, launch, t._tail(err)))
        tmp = os.path.join(c.dir, label + "-tmp")
        os.makedirs(tmp, exist_ok=True)
        explain = c.run(label + "-explain", [launcher, "run",
                                             "--explain-faults", "--"] + argv,
                        tool=False, extra_env={"TMPDIR": tmp}, timeout=60)
        err = explain.stderr
        section = _section(err, "GPU fault, read from the GPU core dump",
                           12)
        c.notes[label + "_explain"] = section
        c.notes[label + "_seconds"] = {
            "plain": round(plain.seconds, 3),
            "default": round(default.seconds, 3),
            "explain": round(explain.seconds, 3)}
        c.check(explain.rc in (-6, 134), "%s: --explain-faults should die "
                "by SIGABRT; rc %s, stderr: %s" % (label, explain.rc,
                                                   t._tail(err)))
        if not c.check(section != "", "%s: the crash report did not explain "
                       "the dump: %s" % (label, t._tail(err, 2500))):
            continue
        # Now and then the driver's dump holds the SMs' exception records
        # but no faulting warp (they exited before it was taken): the
        # errorPC still names the kernel and the line; the exception is
        # the SM's (an illegal address, where the lane said more) and the
        # block, threads and address are not known.
        warps_gone = "no warp left to show (they exited)" in section
        if warps_gone:
            c.warn("%s: the dump held no faulting warp, only the SMs' "
                   "records" % label)
        c.check(exception in section or
                (warps_gone and "Illegal Address" in section),
                "%s: exception %r not named:\n%s" % (label, exception,
                                                     section))
        c.check(kernel in section, "%s: kernel %r not named:\n%s" % (
            label, kernel, section))
        c.check(line in section, "%s: line %s not named:\n%s" % (
            label, line, section))
        if not warps_gone:
            c.check(re.search(r"block \(\d+,\d+,\d+\), threads? \(",
                              section) is not None,
                    "%s: no block/threads:\n%s" % (label, section))
            if place and have_nvdisasm:
                c.check(place in section, "%s: the address should lie %r:\n%s"
                        % (label, place, section))
        c.check(not os.listdir(tmp), "%s: left in TMPDIR: %s" % (
            label, os.listdir(tmp)))


def cases(t):
    return [
        ("crash_illegal_address", lambda c: case_crash_illegal_address(c, t)),
        ("crash_segv", lambda c: case_crash_segv(c, t)),
        ("explain_faults_programs",
         lambda c: case_explain_faults_programs(c, t)),
    ]
