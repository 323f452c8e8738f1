"""GPU cases for the gpumemtrace launcher (cli/): `gpumemtrace run` on real
CUDA programs, `report` re-rendering their saved reports, and
`report --diff` on two gmt_snapshot_json() files.

The launcher is GMT_LAUNCHER, else bin/gpumemtrace beside the library's
folder (the bundle's .device/bin and a build tree's build/bin both sit at
<lib dir>/../bin).
"""
import glob
import json
import os


_T = None  # gpu_tests.py, set by cases(t)


def _launcher(c):
    return _T.launcher_path(c)


def _launch(t, c, label, flags, argv, timeout=180):
    """Runs `gpumemtrace run FLAGS --report json -o <dir>/%p.json -- argv`
    (no LD_PRELOAD or GMT_OPTIONS from the harness: the launcher sets them)
    and attaches the one JSON report it wrote as run.report."""
    run_dir = os.path.join(c.dir, label)
    cmd = ([_launcher(c), "run"] + list(flags) +
           ["--report", "json", "-o", os.path.join(run_dir, "%p.json"), "--"]
           + list(argv))
    run = c.run(label, cmd, tool=False, timeout=timeout)
    reports = sorted(glob.glob(os.path.join(run_dir, "*.json")))
    c.check(len(reports) == 1, "%s: expected one JSON report in %s, found %s;"
            " stderr: %s" % (label, run_dir, reports, t._tail(run.stderr)))
    run.report_path = reports[0] if reports else None
    if run.report_path:
        with open(run.report_path) as f:
            run.report = json.load(f)
        # The launcher exec()s: the report is the program's, under its pid.
        c.check(os.path.basename(run.report_path) ==
                "%s.json" % run.report.get("pid"),
                "%s: report %s does not carry the program's pid %s" % (
                    label, run.report_path, run.report.get("pid")))
        c.check((run.report.get("argv") or [None])[0] == argv[0],
                "%s: report argv %r, expected the program %r" % (
                    label, run.report.get("argv"), argv[0]))
    else:
        run.report_error = "no report"
    return run


# The fields `gpumemtrace report` carries through (lib/report/report_json_parse.h);
# health figures, reachability, growth, timeline and leak state are not read
# back yet.
_KNOWN_FIELDS = ("tool", "version", "pid", "argv", "reason", "devices",
                 "host", "summary", "leak_check", "leaks", "errors",
                 "errors_dropped", "suppressions", "guard", "notes")


def _known_fields(report):
    out = {k: report[k] for k in _KNOWN_FIELDS if k in report}
    out["devices"] = [{k: v for k, v in d.items() if k != "health"}
                      for d in out.get("devices", [])]
    out["leaks"] = [{k: v for k, v in l.items() if k != "state"}
                    for l in out.get("leaks", [])]
    return out


def _same_as_plain(t, c, plain, run, what):
    c.check(run.rc == plain.rc, "exit code changed %s: %s without, %s with "
            "(stderr: %s)" % (what, plain.rc, run.rc, t._tail(run.stderr)))
    c.check(run.stdout == plain.stdout, "stdout changed %s:\n--- without\n%s"
            "--- with\n%s" % (what, plain.stdout, run.stdout))


def case_cli_run_leak_runtime(t, c):
    """run: leak_runtime's three 1 MiB cudaMalloc leaks, found through the
    launcher exactly as with LD_PRELOAD; then `report` renders the saved
    report again: the same JSON (fields it carries), text naming the leaking
    function."""
    prog = c.example("leak_runtime")
    plain = c.run("plain", [prog], tool=False)
    run = _launch(t, c, "launcher", [], [prog])
    _same_as_plain(t, c, plain, run, "by the launcher")
    c.check_report_shape(run)
    c.expect_leak(run.report, "cudaMalloc", "LeakRuntimeBuffers", 3,
                  3 * t.MiB, device=0, file_suffix="leak_runtime.cu")
    c.expect_no_leak_from(run.report, "UseAndFreeScratch")
    c.expect_clean_errors(run.report)
    if not run.report_path:
        return
    again = os.path.join(c.dir, "again.json")
    r = c.run("report_json", [_launcher(c), "report", run.report_path,
                              "--format", "json", "-o", again], tool=False)
    c.check(r.rc == 0, "report --format json failed (rc %s): %s" % (
        r.rc, t._tail(r.stderr)))
    if r.rc == 0:
        with open(again) as f:
            rendered = json.load(f)
        c.check(_known_fields(rendered) == _known_fields(run.report),
                "report --format json differs from the saved report in the "
                "fields it carries (%s vs %s)" % (again, run.report_path))
    r = c.run("report_text", [_launcher(c), "report", run.report_path],
              tool=False)
    c.check(r.rc == 0 and "LeakRuntimeBuffers" in r.stdout and
            "==%s==" % run.report.get("pid") in r.stdout,
            "report (text) should name LeakRuntimeBuffers under the "
            "program's pid; rc %s, stdout: %s" % (r.rc, t._tail(r.stdout)))


def case_cli_run_static_cudart(t, c):
    """run on a statically linked cudart program (nvcc's default): the
    launcher's preload (and CUDA_INJECTION64_PATH when the library exports
    InitializeInjection) must still see its three leaks, once each."""
    prog = c.example("static_cudart")
    plain = c.run("plain", [prog], tool=False)
    run = _launch(t, c, "launcher", [], [prog])
    _same_as_plain(t, c, plain, run, "by the launcher")
    c.check_report_shape(run)
    c.expect_leak(run.report, ["cudaMalloc", "cuMemAlloc"],
                  "LeakStaticRuntimeBuffers", 3, 3 * t.MiB, device=0)
    c.expect_no_leak_from(run.report, "StaticUseAndFreeScratch")
    c.expect_clean_errors(run.report)


def case_cli_run_flags_exitcode(t, c):
    """run --check kernel --error-exitcode 9 on oob_slack: the flags reach
    the library (the one oob-write is found by the per-kernel check, naming
    the kernel alone) and the process exits 9; --no-guard turns guard zones
    off (no error, the program's own exit code)."""
    prog = c.example("oob_slack")
    plain = c.run("plain", [prog], tool=False)
    run = _launch(t, c, "launcher", ["--check", "kernel",
                                     "--error-exitcode", "9"], [prog])
    c.check(plain.rc == 0, "oob_slack without the tool exited %s" % plain.rc)
    c.check(run.rc == 9, "--error-exitcode 9 with an error: exit %s, "
            "expected 9 (stderr: %s)" % (run.rc, t._tail(run.stderr)))
    c.check(run.stdout == plain.stdout, "stdout changed by the launcher")
    c.check_report_shape(run)
    if run.report is not None:
        spec = t.GUARD_EXAMPLES["oob_slack"]
        c.expect_guard_error(run, "kernel", spec["kind"], spec["kernel"],
                             spec["alloc_api"], spec["alloc_fn"],
                             spec["alloc_bytes"], spec["offset"],
                             spec["changed"])
    off = _launch(t, c, "noguard", ["--no-guard", "--error-exitcode", "9"],
                  [prog])
    c.check(off.rc == plain.rc, "--no-guard: exit %s, expected the "
            "program's %s" % (off.rc, plain.rc))
    if off.report is not None:
        c.expect_clean_errors(off.report)
        c.check(off.report.get("guard", {}).get("enabled") is False,
                "--no-guard: report guard.enabled is %r" %
                off.report.get("guard", {}).get("enabled"))


def case_cli_report_diff(t, c):
    """report --diff on two gmt_snapshot_json() files that snapshot_files
    saved under the launcher: 3 new 1 MiB cudaMallocs from
    SnapshotFilesAllocate, 1 freed 64 KiB block from SnapshotFilesScratch."""
    prog = c.example("snapshot_files")
    before = os.path.join(c.dir, "before.json")
    after = os.path.join(c.dir, "after.json")
    run = _launch(t, c, "launcher", [], [prog, before, after])
    c.check(run.rc == 0, "snapshot_files under the launcher exited %s: %s" % (
        run.rc, t._tail(run.stderr)))
    if run.report is not None:
        c.expect_clean_errors(run.report)
        c.expect_no_leak_from(run.report, "SnapshotFilesAllocate")
    if not (os.path.isfile(before) and os.path.isfile(after)):
        c.check(False, "snapshot files not written: %s" % t._tail(run.stdout))
        return
    r = c.run("diff_json", [_launcher(c), "report", "--diff", before, after,
                            "--format", "json"], tool=False)
    if not c.check(r.rc == 0, "report --diff --format json: rc %s: %s" % (
            r.rc, t._tail(r.stderr))):
        return
    d = json.loads(r.stdout)
    c.notes["diff"] = {k: d.get(k) for k in ("new_count", "new_bytes",
                                             "freed_count", "freed_bytes",
                                             "net_bytes")}
    c.check(d.get("new_count") == 3 and d.get("new_bytes") == 3 * t.MiB,
            "diff new: %s blocks, %s bytes; expected 3, %d" % (
                d.get("new_count"), d.get("new_bytes"), 3 * t.MiB))
    c.check(d.get("freed_count") == 1 and d.get("freed_bytes") == 64 * t.KiB,
            "diff freed: %s blocks, %s bytes; expected 1, %d" % (
                d.get("freed_count"), d.get("freed_bytes"), 64 * t.KiB))
    c.check(d.get("net_bytes") == 3 * t.MiB - 64 * t.KiB,
            "diff net_bytes %s" % d.get("net_bytes"))
    new = d.get("new") or []
    c.check(len(new) == 1 and new[0].get("api") == "cudaMalloc" and
            new[0].get("count") == 3 and
            t.stack_has(new[0].get("stack"), "SnapshotFilesAllocate"),
            "diff new groups should be one of 3 cudaMallocs from "
            "SnapshotFilesAllocate: %s" % json.dumps(new)[:600])
    freed = d.get("freed") or []
    c.check(len(freed) == 1 and
            t.stack_has(freed[0].get("stack"), "SnapshotFilesScratch"),
            "diff freed groups should be the block from SnapshotFilesScratch:"
            " %s" % json.dumps(freed)[:600])
    r = c.run("diff_text", [_launcher(c), "report", "--diff", before, after],
              tool=False)
    c.check(r.rc == 0 and "SnapshotFilesAllocate" in r.stdout and
            "NEW" in r.stdout,
            "report --diff (text) should list the NEW blocks from "
            "SnapshotFilesAllocate; rc %s, stdout: %s" % (r.rc,
                                                          t._tail(r.stdout)))


def _nvdisasm():
    """The toolkit's disassembler, where explain-dump looks for it."""
    import shutil
    for path in (shutil.which("nvdisasm"),
                 os.path.join(os.environ.get("CUDA_HOME", "/nonexistent"),
                              "bin", "nvdisasm"),
                 "/usr/local/cuda/bin/nvdisasm"):
        if path and os.access(path, os.X_OK):
            return path
    return None


def case_cli_explain_dump_live(t, c):
    """explain-dump on a GPU core dump this driver writes now: the example
    crash_illegal_address (built with -lineinfo) writes through 0x10; the
    driver writes a lightweight dump and aborts; explain-dump names the
    exception, the kernel write_wild(int*) with its offset and line, block
    (0,0,0) threads (0,0,0)..(31,0,0), and, with nvdisasm, the address 0x10
    read as 16 bytes past a null pointer. Times the dump and the reading."""
    import re
    import time
    dump = os.path.join(c.dir, "crash.cudacore")
    env = {
        "CUDA_ENABLE_COREDUMP_ON_EXCEPTION": "1",
        "CUDA_ENABLE_CPU_COREDUMP_ON_EXCEPTION": "0",
        "CUDA_COREDUMP_GENERATION_FLAGS":
            "skip_nonrelocated_elf_images,skip_global_memory,"
            "skip_shared_memory,skip_local_memory,skip_constbank_memory",
        "CUDA_COREDUMP_FILE": dump,
    }
    crash = c.run("crash", [c.example("crash_illegal_address")], tool=False,
                  extra_env=env)
    c.notes["crash_seconds_with_dump"] = round(crash.seconds, 3)
    # The driver aborts after writing the dump.
    c.check(crash.rc in (-6, 134), "the program should die by SIGABRT after "
            "the dump; rc %s, stderr: %s" % (crash.rc, t._tail(crash.stderr)))
    if not c.check(os.path.isfile(dump), "no dump written at %s" % dump):
        return
    c.notes["dump_bytes"] = os.path.getsize(dump)
    start = time.monotonic()
    r = c.run("explain", [_launcher(c), "explain-dump", "--max-warps", "1",
                          dump], tool=False)
    c.notes["explain_seconds"] = round(time.monotonic() - start, 3)
    c.notes["explain_stdout"] = r.stdout[:1500]
    c.check(r.rc == 0, "explain-dump rc %s, stderr: %s" % (
        r.rc, t._tail(r.stderr)))
    c.check(re.search(r"Warp [A-Za-z -]*Address", r.stdout) is not None,
            "no address exception named: %s" % t._tail(r.stdout))
    c.check(re.search(r"in write_wild\(int\*\) at _Z10write_wildPi\+0x[0-9a-f]+ "
                      r"\(PC 0x[0-9a-f]+\) \([^)]*crash_illegal_address\.cu:28\)",
                      r.stdout) is not None,
            "kernel, offset or line (crash_illegal_address.cu:28) missing: %s"
            % t._tail(r.stdout))
    c.check("block (0,0,0), threads (0,0,0)..(31,0,0)" in r.stdout,
            "faulting block/threads missing: %s" % t._tail(r.stdout))
    if _nvdisasm() is None:
        c.warn("nvdisasm not found: the address is not checked")
        return
    c.check("address 0x10 (thread (0,0,0)): 16 bytes past a null pointer"
            in r.stdout, "derived address 0x10 missing: %s"
            % t._tail(r.stdout))


def case_cli_explain_faults_live(t, c):
    """gpumemtrace run --explain-faults on crash_illegal_address: the launcher
    arms the dump, the driver writes it and aborts the program, the library's
    crash report explains it (exception, write_wild(int*) at line 28, block
    and threads, the address), the dump and its folder are removed, and the
    launcher dies by SIGABRT."""
    import glob
    import re
    tmp = os.path.join(c.dir, "tmp")
    os.makedirs(tmp, exist_ok=True)
    r = c.run("explain", [_launcher(c), "run", "--explain-faults", "--",
                          c.example("crash_illegal_address")],
              tool=False, extra_env={"TMPDIR": tmp})
    c.notes["seconds"] = round(r.seconds, 3)
    c.notes["stderr_tail"] = r.stderr[-1500:]
    c.check(r.rc in (-6, 134), "the launcher should die by SIGABRT as the "
            "program did; rc %s, stderr: %s" % (r.rc, t._tail(r.stderr)))
    # The library's crash report explains it (it has the blocks); the
    # launcher's own reading is the fallback and must not repeat it.
    c.check("GPU fault, read from the GPU core dump" in r.stderr,
            "the crash report did not explain the dump: %s"
            % t._tail(r.stderr))
    c.check("the GPU fault, from the driver's core dump" not in r.stderr,
            "the launcher explained the dump a second time")
    if _nvdisasm() is not None:
        c.check("16 bytes past a null pointer" in r.stderr,
                "derived address 0x10 missing: %s" % t._tail(r.stderr))
    c.check(re.search(r"in write_wild\(int\*\) at _Z10write_wildPi\+0x"
                      r"[0-9a-f]+ \(PC 0x[0-9a-f]+\) \([^)]*"
                      r"crash_illegal_address\.cu:28\)", r.stderr)
            is not None, "kernel, offset or line missing: %s"
            % t._tail(r.stderr))
    c.check(not glob.glob(os.path.join(tmp, "gpumemtrace-dump.*")),
            "the dump folder was left behind in %s" % tmp)


def cases(t):
    global _T
    _T = t
    def bind(fn):
        return lambda c: fn(t, c)
    return [
        ("cli_run_leak_runtime", bind(case_cli_run_leak_runtime)),
        ("cli_run_static_cudart", bind(case_cli_run_static_cudart)),
        ("cli_run_flags_exitcode", bind(case_cli_run_flags_exitcode)),
        ("cli_report_diff", bind(case_cli_report_diff)),
        ("cli_explain_dump_live", bind(case_cli_explain_dump_live)),
        ("cli_explain_faults_live", bind(case_cli_explain_faults_live)),
    ]
