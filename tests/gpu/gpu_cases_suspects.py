"""GPU case of suspect checks: the default mode names the kernel that wrote
once the write repeats.

examples/oob_repeat runs 4 steps of three kernels and a synchronization; its
middle kernel writes 16 bytes past a 4000-byte block every step. With the
default options the first step's write is found at a synchronization and
lists the three kernels (suspects_checked), and the later steps' writes are
found by the check after RepeatOverrunKernel ("check": "suspect"), naming
it alone; with suspect_checks=0 every write found is found at a
synchronization, and one made before the previous finding was read is
painted over; with check=kernel every step's names the kernel. stdout and the exit status are the
same as without the tool in all three.

Loaded by gpu_tests.py (cases(t)); run with
  python3 tests/gpu/gpu_tests.py --only oob_repeat
"""

STEPS = 4
KERNEL = "RepeatOverrunKernel"


def case_oob_repeat(t, c):
    plain, tool = c.run_pair("oob_repeat")
    off = c.run("suspects_off", [c.example("oob_repeat")], tool=True,
                options="suspect_checks=0")
    c.check(off.rc == plain.rc and off.stdout == plain.stdout,
            "suspect_checks=0 changed the exit code or stdout: %s / %r" % (
                off.rc, off.stdout))
    kern = c.run_kernel_mode("oob_repeat", plain)
    # check=sync reads a check's answer at the next synchronization, and a
    # finding re-arms its zone: a step that overran before the answer was
    # read is painted over (seen on an H100: the steps 1 and 3 found of 4).
    # Suspects exist from the second synchronization on at the latest, so
    # every later step is found by the suspect's check.
    for label, run, least in (("default", tool, STEPS - 1),
                              ("suspect_checks=0", off, STEPS // 2),
                              ("check=kernel", kern, STEPS)):
        r = run.report
        if r is None:
            continue
        errors = [e for e in r.get("errors", []) if e.get("kind") == "oob-write"]
        c.notes["errors_" + label] = [
            (e.get("check"), e.get("kernels"), e.get("suspects_checked"))
            for e in errors]
        if not c.check(least <= len(errors) <= STEPS and
                       len(r.get("errors", [])) == len(errors),
                       "[%s] expected %d to %d oob-write errors: %s" % (
                           label, least, STEPS, t.describe_errors(r))):
            continue
        checks = [e.get("check") for e in errors]
        want = {"default": ["sync"] + ["suspect"] * (len(errors) - 1),
                "suspect_checks=0": ["sync"] * len(errors),
                "check=kernel": ["kernel"] * len(errors)}[label]
        c.check(checks == want, "[%s] checks %r, expected %r" % (
            label, checks, want))
        for i, e in enumerate(errors):
            alloc = e.get("allocation") or {}
            c.check(e.get("first_offset") == 4000 and
                    e.get("last_offset") == 4015 and
                    e.get("changed_bytes") == 16 and
                    alloc.get("bytes") == 4000 and
                    t.stack_has(alloc.get("stack"), "RepeatAllocateWeights"),
                    "[%s] error %d: offsets %r..%r, %r bytes changed, on %r"
                    % (label, i, e.get("first_offset"), e.get("last_offset"),
                       e.get("changed_bytes"), t.short_stack(
                           alloc.get("stack"), 3)))
            kernels = [str(k) for k in e.get("kernels") or []]
            if e.get("check") in ("kernel", "suspect"):
                c.check(len(kernels) == 1 and KERNEL in kernels[0],
                        "[%s] error %d names %r, expected %s alone" % (
                            label, i, kernels, KERNEL))
            else:
                c.check(any(KERNEL in k for k in kernels) and
                        len(kernels) >= 3,
                        "[%s] error %d lists %r, expected the step's three "
                        "kernels" % (label, i, kernels))
            first = label == "default" and i == 0
            c.check(bool(e.get("suspects_checked")) == first,
                    "[%s] error %d suspects_checked %r, expected %r" % (
                        label, i, e.get("suspects_checked"), first))
    # Each error is printed as found (print_errors): the first says what
    # the tool does next.
    c.check("now checked after each launch" in tool.stderr,
            "the printed error does not say its kernels are now checked: %s"
            % tool.stderr[-600:])


def cases(t):
    return [("oob_repeat", lambda c: case_oob_repeat(t, c))]
