"""GPU cases of CI use and packaging: the library
linked into a program (no LD_PRELOAD) with gmt::snapshot() and its exit
report, and a suppression derived from a first report silencing the error of
a second run, exit code included.

Loaded by gpu_tests.py (cases(t)); run with
  python3 tests/gpu/gpu_tests.py --only packaging_linked_snapshot,packaging_suppress_oob_slack
"""
import glob
import json
import os

MiB = 1 << 20


def _reports(run_dir):
    out = []
    for path in sorted(glob.glob(os.path.join(run_dir, "*.json"))):
        with open(path) as f:
            out.append(json.load(f))
    return out


def case_packaging_linked_snapshot(t, c):
    """linked_snapshot links libgpumemtrace: the tracer is on without
    LD_PRELOAD, snapshots see its four 1 MiB blocks with the allocating
    function on their stacks, and its exit report lists the one block it
    keeps (and nothing else)."""
    label = "linked"
    run_dir = os.path.join(c.dir, label)
    argv = [c.example("linked_snapshot")]
    run = c.run(label, argv, tool=False, extra_env={
        "GMT_OPTIONS": "report=json:report_path=%s/%%p.json" % run_dir})
    c.check(run.rc == 0, "linked_snapshot exited %s; stderr: %s" % (
        run.rc, t._tail(run.stderr)))
    for needle in ("linked_snapshot: available=1 active=1\n",
                   "linked_snapshot: delta: allocations=+4 bytes=+%d\n"
                   % (4 * MiB),
                   "linked_snapshot: allocations from LinkedSnapshotAllocate:"
                   " 4\n",
                   "linked_snapshot: delta after free: allocations=+1 "
                   "bytes=+4096\n"):
        c.check(needle in run.stdout, "linked_snapshot did not print %r; "
                "stdout:\n%s" % (needle, run.stdout))
    reports = _reports(run_dir)
    if not c.check(len(reports) == 1, "expected one exit report from the "
                   "linked tracer in %s, found %d; stderr: %s" % (
                       run_dir, len(reports), t._tail(run.stderr))):
        return
    report = reports[0]
    c.check(report.get("tool") == "gpumemtrace", "not a gpumemtrace report")
    c.expect_clean_errors(report)
    leak = c.expect_leak(report, "cudaMalloc", "LinkedSnapshotLeak", 1, 4096,
                         device=0)
    c.expect_no_leak_from(report, "LinkedSnapshotAllocate")
    c.check(report.get("summary", {}).get("leaks") == 1,
            "summary.leaks %s, expected 1; leaks: %s" % (
                report.get("summary", {}).get("leaks"),
                t.describe_leaks(report)))
    if leak is not None:
        c.check(leak.get("suppression") == "leak:fun:LinkedSnapshotLeak",
                "leak suppression %r, expected leak:fun:LinkedSnapshotLeak"
                % leak.get("suppression"))
    c.notes["seconds"] = round(run.seconds, 3)


def case_packaging_suppress_oob_slack(t, c):
    """oob_slack's one oob-write: the first run reports it (exitcode=17
    applies) with a `suppression` rule, printed too; a second run with that
    rule in a suppressions file reports 0 errors, 1 suppressed, the rule's
    hit, prints nothing and exits with the program's own code."""
    argv = [c.example("oob_slack")]
    plain = c.run("plain", argv, tool=False)
    c.check(plain.rc == 0, "oob_slack without the tool exited %s" % plain.rc)
    first = c.run("first", argv, tool=True, options="exitcode=17")
    c.check_report_shape(first)
    if first.report is None:
        return
    errors = c.expect_errors(first.report, "oob-write", 1)
    c.check(first.report["summary"].get("errors") == 1,
            "first run: summary.errors %s, expected 1; errors: %s" % (
                first.report["summary"].get("errors"),
                t.describe_errors(first.report)))
    c.check(first.rc == 17, "first run: exitcode=17 with an error, but the "
            "program exited %s" % first.rc)
    if not errors:
        return
    rule = errors[0].get("suppression", "")
    c.notes["rule"] = rule
    c.check(rule in ("oob-write:kernel:OobSlackOverrunKernel",
                     "oob-write:fun:OobSlackAllocate"),
            "suggested rule %r names neither the kernel nor the allocating "
            "function" % rule)
    c.check("to suppress: %s" % rule in first.stderr,
            "the printed error does not show 'to suppress: %s'; stderr: %s"
            % (rule, t._tail(first.stderr, 2000)))
    if not rule:
        return
    supp = os.path.join(c.dir, "oob_slack.supp")
    with open(supp, "w") as f:
        f.write("# from the first run's report\n%s\n" % rule)
    second = c.run("second", argv, tool=True,
                   options="exitcode=17:suppressions=%s" % supp)
    c.check_report_shape(second)
    c.check(second.rc == plain.rc, "suppressed run exited %s, the program "
            "itself %s (exitcode must ignore suppressed errors)" % (
                second.rc, plain.rc))
    c.check(second.stdout == plain.stdout, "stdout changed by the tool")
    if second.report is None:
        return
    s = second.report.get("summary", {})
    c.check(second.report.get("errors") == [] and s.get("errors") == 0,
            "suppressed run still reports errors: %s" %
            t.describe_errors(second.report))
    c.check(s.get("suppressed_errors") == 1,
            "summary.suppressed_errors %s, expected 1" %
            s.get("suppressed_errors"))
    uses = second.report.get("suppressions", [])
    c.check(len(uses) == 1 and uses[0].get("rule") == rule and
            uses[0].get("file") == supp and uses[0].get("line") == 2 and
            uses[0].get("hits") == 1,
            "report.suppressions %s, expected one use of %r (line 2, 1 hit)"
            % (json.dumps(uses), rule))
    c.check("ERROR: oob-write" not in second.stderr,
            "a suppressed error was printed: %s" % t._tail(second.stderr))
    # The guard still ran: the error was found, then silenced.
    c.check(second.report.get("guard", {}).get("checks", 0) > 0,
            "no guard check ran in the suppressed run")


def cases(t):
    def bind(fn):
        def case(c):
            return fn(t, c)
        case.__name__ = fn.__name__
        return case
    return [
        ("packaging_linked_snapshot", bind(case_packaging_linked_snapshot)),
        ("packaging_suppress_oob_slack",
         bind(case_packaging_suppress_oob_slack)),
    ]
