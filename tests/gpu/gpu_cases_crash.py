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
        c.check("The newest launch: write_wild(int*) with grid (1,1,1) and "
                "block (32,1,1)" in detail, "newest launch missing: %s"
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
    # Seen on the H200: Xid 31 "GPU memory page fault" at 0.39 s.
    watched = [d for d in (r.get("health") or {}).get("devices", [])
               if str(d.get("xid_status", "")).startswith("watched")]
    if watched:
        xids = [e.get("xid") for d in watched
                for e in d.get("xid_events") or []]
        c.check(any(x in (13, 31, 43) for x in xids),
                "the planted illegal access left no Xid 13/31/43 in the "
                "report: %s" % xids)


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


def cases(t):
    return [
        ("crash_illegal_address", lambda c: case_crash_illegal_address(c, t)),
        ("crash_segv", lambda c: case_crash_segv(c, t)),
    ]
