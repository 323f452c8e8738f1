"""GPU cases: PyTorch tensor mode, the pluggable allocator, NVTX ranges.

torch_pluggable_train  examples/torch_pluggable.py --train under the tool,
                       every tensor its own guarded cudaMalloc: the final loss
                       equals pytorch_train.py's without the tool; no errors;
                       many more allocations tracked than segments.
torch_pluggable_oob    a PTX kernel writes one float past a 1024-float tensor:
                       with the pluggable allocator one oob-write at offset
                       4096 (4 bytes) naming gmt_torch_oob_fill, allocated by
                       gmt_torch_malloc; the same program with PyTorch's
                       caching allocator (under the tool too) reports nothing:
                       the write hides inside a segment.
torch_mode_oob         examples/torch_kernel_bugs.py --case oob: a Triton
                       kernel's unmasked store writes 24 floats past a
                       1000-float tensor between two live ones. In torch
                       mode (torch=1) one oob-write at offset 4000 naming
                       store_unmasked, the block allocated through PyTorch's
                       cudaMallocAsync backend; with PyTorch's default
                       allocator under the tool: nothing (noted). The
                       script's output is the same in every run.
torch_mode_uaf         --case uaf: a Triton kernel writes through a deleted
                       tensor's data_ptr(): in torch mode a uaf-write into
                       the 4000-byte block, with its free stack.
torch_mode_train       examples/pytorch_cnn.py in torch mode: the final loss
                       equals the run without the tool (same backend) and
                       with PyTorch's default allocator; no errors;
                       allocations tracked per tensor.
torch_nvtx             the same with torch.cuda.nvtx ranges: the report's
                       nvtx_ranges has gmt_oob and gmt_train with their
                       allocations (NVTX_INJECTION64_PATH set, as `gpumemtrace
                       run` does; a second run with preload alone notes
                       whether PyTorch's NVTX honours static injection).
"""
import os
import re


def _script(c, name):
    path = os.path.join(c.ctx.examples_dir, name)
    if not os.path.isfile(path):
        raise FileNotFoundError("not found: %s" % path)
    return path


def _loss(run):
    m = re.search(r"^final loss .*$", run.stdout, re.M)
    return m.group(0) if m else None


ENV = {"PYTHONUNBUFFERED": "1"}


def cases(t):
    def torch_pluggable_train(c):
        py = t.torch_python(c)
        steps = os.environ.get("GMT_TEST_TORCH_STEPS", "200")
        plain = c.run("plain", [py, _script(c, "pytorch_train.py"), "--steps",
                                steps], tool=False, timeout=480,
                      extra_env=ENV)
        tool = c.run("pluggable", [py, _script(c, "torch_pluggable.py"),
                                   "--train", "--steps", steps], tool=True,
                     timeout=480, extra_env=ENV)
        c.check(plain.rc == 0 and _loss(plain),
                "pytorch_train without the tool failed (rc %s): %s" % (
                    plain.rc, t._tail(plain.stderr)))
        c.check(tool.rc == 0 and "allocator: gpumemtrace" in tool.stdout,
                "torch_pluggable --train failed (rc %s): %s" % (
                    tool.rc, t._tail(tool.stderr)))
        c.notes["loss_plain"] = _loss(plain)
        c.notes["loss_pluggable"] = _loss(tool)
        c.check(_loss(plain) is not None and _loss(plain) == _loss(tool),
                "loss differs: %r with the caching allocator and no tool, %r "
                "with the tool's allocator" % (_loss(plain), _loss(tool)))
        c.check_report_shape(tool)
        r = tool.report
        if r is None:
            return
        c.expect_clean_errors(r)
        s = r.get("summary", {})
        c.notes["summary"] = s
        c.notes["seconds_plain"] = round(plain.seconds, 2)
        c.notes["seconds_pluggable"] = round(tool.seconds, 2)
        # 200 steps of an MLP make thousands of tensors; the caching allocator
        # makes a handful of segments.
        c.check(s.get("allocations", 0) > 1000 and s.get("frees", 0) > 1000,
                "the pluggable allocator's tensors were not tracked one by "
                "one: %s" % s)
        torch_sites = [l for l in r.get("leaks", [])
                       if t.stack_has(l.get("stack"), "CUDAPluggableAllocator")]
        c.notes["leak_sites_via_pluggable_allocator"] = len(torch_sites)

    def torch_pluggable_oob(c):
        py = t.torch_python(c)
        script = _script(c, "torch_pluggable.py")
        plain = c.run("plain", [py, script, "--caching", "--oob"], tool=False,
                      timeout=300, extra_env=ENV)
        caching = c.run("caching", [py, script, "--caching", "--oob"],
                        tool=True, timeout=300, extra_env=ENV)
        plug = c.run("pluggable", [py, script, "--oob"], tool=True,
                     timeout=300, extra_env=ENV)
        for what, run in (("plain", plain), ("caching", caching),
                          ("pluggable", plug)):
            c.check(run.rc == 0 and "oob: wrote element 1024" in run.stdout,
                    "%s run failed (rc %s): %s" % (what, run.rc,
                                                   t._tail(run.stderr)))
        c.check_report_shape(caching)
        c.check_report_shape(plug)
        if caching.report is not None:
            n = caching.report.get("summary", {}).get("errors")
            c.notes["caching_errors"] = n
            c.check(n == 0, "with the caching allocator the overrun should be "
                    "invisible (inside a segment), yet errors were reported: "
                    "%s" % t.describe_errors(caching.report))
        if plug.report is None:
            return
        errors = plug.report.get("errors", [])
        c.check(len(errors) == 1, "expected exactly one error with the "
                "pluggable allocator: %s" % t.describe_errors(plug.report))
        if not errors:
            return
        e = errors[0]
        c.notes["error"] = {k: e.get(k) for k in (
            "kind", "offset", "bytes", "changed_bytes", "kernels", "check")}
        c.check(e.get("kind") == "oob-write", "kind %r" % e.get("kind"))
        c.check(e.get("offset") == 4096, "offset %r, expected 4096 (element "
                "1024 of a float tensor)" % e.get("offset"))
        c.check(e.get("changed_bytes", e.get("bytes")) == 4,
                "changed bytes %r, expected 4" % e.get("changed_bytes"))
        c.check(any("gmt_torch_oob_fill" in k for k in e.get("kernels", [])),
                "kernels %r do not name gmt_torch_oob_fill" % e.get("kernels"))
        alloc = e.get("allocation", {})
        # The tool's own frames (gmt_torch_malloc) are cut from stacks: the
        # innermost frame is PyTorch's pluggable allocator calling it.
        c.check(alloc.get("bytes") == 4096 and
                t.stack_has(alloc.get("stack"), "CUDAPluggableAllocator"),
                "allocation %s should be the 4096-byte tensor from "
                "CUDAPluggableAllocator" % t.short_stack(alloc.get("stack")))

    def torch_nvtx(c):
        py = t.torch_python(c)
        script = _script(c, "torch_pluggable.py")
        argv = [py, script, "--nvtx", "--oob", "--train", "--steps", "20"]
        env = dict(ENV)
        env["NVTX_INJECTION64_PATH"] = c.ctx.lib
        run = c.run("env", argv, tool=True, timeout=300, extra_env=env)
        c.check(run.rc == 0, "torch_pluggable --nvtx failed (rc %s): %s" % (
            run.rc, t._tail(run.stderr)))
        c.check_report_shape(run)
        if run.report is None:
            return
        ranges = {r.get("range"): r for r in run.report.get("nvtx_ranges", [])}
        c.notes["nvtx_ranges"] = sorted(ranges)[:12]
        for name in ("gmt_oob", "gmt_train"):
            r = ranges.get(name)
            c.check(r is not None and r.get("allocations", 0) > 0,
                    "range %s missing or without allocations: %s" % (
                        name, sorted(ranges)))
        if ranges.get("gmt_train"):
            c.notes["gmt_train"] = ranges["gmt_train"]
        leaks_in_ranges = [l.get("nvtx_range") for l in
                           run.report.get("leaks", []) if l.get("nvtx_range")]
        c.notes["leaks_in_ranges"] = len(leaks_in_ranges)
        # Informational: preload alone (no NVTX_INJECTION64_PATH).
        bare = c.run("preload", argv, tool=True, timeout=300, extra_env=ENV)
        if bare.report is not None:
            c.notes["preload_only_ranges"] = sorted(
                r.get("range") for r in bare.report.get("nvtx_ranges", []))

    def _bug_runs(c, case):
        py = t.torch_python(c)
        script = _script(c, "torch_kernel_bugs.py")
        plain = c.run("plain", [py, script, "--case", case], tool=False,
                      timeout=300, extra_env=ENV)
        default = c.run("default", [py, script, "--case", case], tool=True,
                        timeout=300, extra_env=ENV)
        torch_mode = c.run("torch", [py, script, "--case", case], tool=True,
                           timeout=300, extra_env=ENV, options="torch=1")
        for what, run in (("plain", plain), ("default", default),
                          ("torch", torch_mode)):
            c.check(run.rc == 0 and run.stdout == plain.stdout,
                    "%s run: rc %s, stdout %r (without the tool %r): %s" % (
                        what, run.rc, run.stdout, plain.stdout,
                        t._tail(run.stderr)))
        c.check_report_shape(torch_mode)
        if default.report is not None:
            c.notes["default_mode_errors"] = t.describe_errors(default.report)
        return torch_mode.report

    def _one_error(c, report, kind, offset):
        if report is None:
            return None
        errors = report.get("errors", [])
        c.check(len(errors) == 1, "expected one error in torch mode: %s" %
                t.describe_errors(report))
        if not errors:
            return None
        e = errors[0]
        c.notes["error"] = {k: e.get(k) for k in (
            "kind", "offset", "bytes", "changed_bytes", "kernels", "check")}
        c.notes["allocation_stack"] = t.short_stack(
            e.get("allocation", {}).get("stack"))
        c.check(e.get("kind") == kind, "kind %r, expected %s" % (
            e.get("kind"), kind))
        c.check(e.get("offset") == offset, "offset %r, expected %d" % (
            e.get("offset"), offset))
        alloc = e.get("allocation", {})
        c.check(alloc.get("bytes") == 4000 and
                alloc.get("api") == "cudaMallocAsync",
                "allocation %s should be the 4000-byte tensor from "
                "cudaMallocAsync" % {k: alloc.get(k) for k in ("bytes", "api")})
        c.check(any("store_unmasked" in k for k in e.get("kernels", [])),
                "kernels %r do not name store_unmasked" % e.get("kernels"))
        return e

    def torch_mode_oob(c):
        report = _bug_runs(c, "oob")
        _one_error(c, report, "oob-write", 4000)

    def torch_mode_uaf(c):
        report = _bug_runs(c, "uaf")
        e = _one_error(c, report, "uaf-write", 0)
        if e is not None:
            first_free = e.get("first_free") or {}
            c.notes["free_stack"] = t.short_stack(first_free.get("stack"))
            c.check(first_free.get("api") == "cudaFreeAsync" and
                    first_free.get("stack"),
                    "the uaf-write has no free record: %s" % first_free)

    def torch_mode_train(c):
        py = t.torch_python(c)
        script = _script(c, "pytorch_cnn.py")
        steps = ["--steps", os.environ.get("GMT_TEST_TORCH_STEPS", "120")]
        native = c.run("plain", [py, script] + steps, tool=False, timeout=300,
                       extra_env=ENV)
        env = dict(ENV)
        env["PYTORCH_CUDA_ALLOC_CONF"] = "backend:cudaMallocAsync"
        asynchronous = c.run("plain_async", [py, script] + steps, tool=False,
                             timeout=300, extra_env=env)
        tool = c.run("torch", [py, script] + steps, tool=True, timeout=300,
                     extra_env=ENV, options="torch=1")
        for what, run in (("plain", native), ("plain_async", asynchronous),
                          ("torch", tool)):
            c.check(run.rc == 0 and _loss(run),
                    "%s run failed (rc %s): %s" % (what, run.rc,
                                                   t._tail(run.stderr)))
            c.notes["loss_" + what] = _loss(run)
            m = re.search(r"cnn: (.*)", run.stderr)
            c.notes["cnn_" + what] = m.group(1) if m else None
        c.check(_loss(tool) is not None and
                _loss(tool) == _loss(asynchronous) == _loss(native),
                "loss differs: %r native, %r cudaMallocAsync, %r torch mode" %
                (_loss(native), _loss(asynchronous), _loss(tool)))
        c.check("backend=cudaMallocAsync" in tool.stderr,
                "torch mode did not switch PyTorch's backend: %s" %
                t._tail(tool.stderr))
        c.check_report_shape(tool)
        if tool.report is None:
            return
        c.expect_clean_errors(tool.report)
        s = tool.report.get("summary", {})
        c.notes["summary"] = s
        c.check(s.get("allocations", 0) > 1000,
                "tensors were not tracked one by one: %s" % s)
        # Tensors of a step's sizes come back each step: past the first
        # steps checked blocks serve them, not CUDA.
        guard = tool.report.get("guard", {})
        c.notes["reused"] = guard.get("reused")
        c.notes["evicted"] = guard.get("evicted")
        c.check(guard.get("reused", 0) > 0,
                "no tensor was served by a checked block: %s" % guard)

    return [("torch_mode_oob", torch_mode_oob),
            ("torch_mode_uaf", torch_mode_uaf),
            ("torch_mode_train", torch_mode_train),
            ("torch_pluggable_train", torch_pluggable_train),
            ("torch_pluggable_oob", torch_pluggable_oob),
            ("torch_nvtx", torch_nvtx)]
