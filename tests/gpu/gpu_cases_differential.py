"""GPU case of behaviour preservation on the real GPU.

  differential_examples  every example program whose output depends only on
                         what it computes, run without the tool and then
                         under each of the seven option sets below; the exit
                         code and the stdout of each run must equal the run
                         without the tool. Their CUDA return codes are part of that
                         output: a call whose failure is the example's point
                         prints its code, every other call is checked and
                         ends the program (exit 2, its code on stderr) when
                         it fails, so a code the tool changed shows either
                         way. The PyTorch loop's side is case pytorch_train
                         (losses and the training log identical with the tool
                         and with check=kernel).

Left out, each checked by its own case with its own rules: programs that ask
the tool itself (snapshot_api, snapshot_files, linked_snapshot, leak_growth),
whose output depends on where blocks lie (user_view) or prints timings and
device totals (churn), that fill the GPU (oom_fill), plant an Xid
(crash_illegal_address) or spawn a second process (ipc_pair).

Loaded by gpu_tests.py (cases(t)); run with
  python3 tests/gpu/gpu_tests.py --only differential_examples
"""
import concurrent.futures
import os
import re

# Examples and their arguments; train_loop's timing line is masked below.
EXAMPLES = [
    ("api_bounds", []), ("api_mismatch", []), ("clean_cublas_thrust", []),
    ("clean_multistream", []), ("crash_segv", []), ("double_free", []),
    ("graph_mem_nodes", []), ("graph_mem_nodes_static", []),
    ("invalid_free", []), ("leak_async_pool", []), ("leak_driver", []),
    ("leak_managed", []), ("leak_pinned_host", []), ("leak_reachable", []),
    ("leak_runtime", []), ("leak_vmm", []), ("nvtx_mem_pool", []),
    ("oob_3d", []), ("oob_driver", []), ("oob_few_kib", []),
    ("oob_managed", []), ("oob_neighbour", []), ("oob_pitched", []),
    ("oob_slack", []), ("oob_static", []), ("oob_underflow", []),
    ("static_cudart", []), ("train_loop", ["--iters", "20"]),
    ("uaf_write", []),
]

# (label, GMT_OPTIONS, injected). Defaults first, then the modes that change
# the most: every kernel checked, no redzones, no stacks, the tool loaded but
# off; then CUDA_INJECTION64_PATH without LD_PRELOAD, as is and with every
# kernel checked (the mode that once hung at exit).
OPTION_SETS = [
    ("default", "", False),
    ("kernel", "check=kernel", False),
    ("noguard", "guard=0", False),
    ("nostack", "stack_depth=0:symbolize=0:quarantine_bytes=0", False),
    ("disabled", "enabled=0", False),
    ("inject", "", True),
    ("inject_kernel", "check=kernel", True),
]

# Timings a program prints ("in 12.3 ms", "0.0123 ms/iter", "4.5 us/kernel").
_TIMING = re.compile(r"\d+(?:\.\d+)?(?:e[-+]?\d+)? ?(?:ms|us|s)\b(/\w+)?")


def normalized(stdout):
    return _TIMING.sub("<time>", stdout)


def case_differential_examples(t, c):
    jobs = []
    for program, args in EXAMPLES:
        try:
            argv = [c.example(program)] + args
        except FileNotFoundError as e:
            c.check(False, str(e))
            continue
        jobs.append((program, "plain", argv, None, False))
        for label, options, injected in OPTION_SETS:
            jobs.append((program, label, argv, options, injected))

    def run(job):
        program, label, argv, options, injected = job
        run_label = "%s.%s" % (program, label)
        if label == "plain":
            return job, c.run(run_label, argv, tool=False, timeout=300)
        if injected:
            env = {"CUDA_INJECTION64_PATH": c.ctx.lib}
            if options:
                env["GMT_OPTIONS"] = options
            return job, c.run(run_label, argv, tool=False, timeout=120,
                              extra_env=env)
        return job, c.run(run_label, argv, tool=True, timeout=300,
                          options=options or None)

    # Several processes at a time: each is mostly CUDA start-up.
    results = {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=8) as pool:
        for (program, label, _, _, _), r in pool.map(run, jobs):
            results[(program, label)] = r
    compared = 0
    differing = []
    for program, _ in EXAMPLES:
        plain = results.get((program, "plain"))
        if plain is None:
            continue
        c.check(plain.rc != "timeout", "%s timed out without the tool" %
                program)
        for label, options, injected in OPTION_SETS:
            r = results[(program, label)]
            compared += 1
            what = "%s under %s (%sGMT_OPTIONS %r)" % (
                program, label,
                "CUDA_INJECTION64_PATH, " if injected else "", options)
            same_rc = r.rc == plain.rc
            same_out = normalized(r.stdout) == normalized(plain.stdout)
            if not (same_rc and same_out):
                differing.append("%s.%s" % (program, label))
            c.check(same_rc, "%s: exit code %s, %s without the tool "
                    "(stderr: %s)" % (what, r.rc, plain.rc,
                                      t._tail(r.stderr)))
            c.check(same_out, "%s: stdout changed:\n--- without\n%s--- with\n"
                    "%s" % (what, plain.stdout, r.stdout))
    c.notes["programs"] = len(EXAMPLES)
    c.notes["option_sets"] = [label for label, _, _ in OPTION_SETS]
    c.notes["runs_compared"] = compared
    c.notes["differing"] = differing


def cases(t):
    def bind(f):
        return lambda c: f(t, c)
    return [
        ("differential_examples", bind(case_differential_examples)),
    ]
