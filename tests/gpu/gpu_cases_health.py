"""GPU cases for the out-of-memory diagnosis on a card
filled by examples/oom_fill, and GPU health through NVML (`gpumemtrace
health --json`, and devices[].health in a traced program's report).

The launcher is GMT_LAUNCHER, else bin/gpumemtrace beside the library's
folder (<lib dir>/../bin, as in gpu_cases_cli.py).
"""
import json
import os
import re


def _launcher(c):
    path = os.environ.get("GMT_LAUNCHER") or os.path.join(
        os.path.dirname(os.path.abspath(c.ctx.lib)), "..", "bin",
        "gpumemtrace")
    path = os.path.normpath(path)
    return path if os.path.isfile(path) else None


def _lines(text, prefix):
    return [l for l in text.splitlines() if l.startswith(prefix)]


def case_oom_fill(t, c):
    """A program that fills the card gets the oom report naming its holder,
    once per burst; the program's error codes are unchanged."""
    argv = [c.example("oom_fill")]
    plain = c.run("plain", argv, tool=False, timeout=300)
    tool = c.run("tool", argv, tool=True, timeout=300)
    c.check(plain.rc == 0, "oom_fill without the tool exited %s: %s" % (
        plain.rc, t._tail(plain.stderr)))
    c.check(tool.rc == plain.rc, "exit code changed by the tool: %s without, "
            "%s with (stderr: %s)" % (plain.rc, tool.rc, t._tail(tool.stderr)))
    for prefix in ("total_bytes", "first failure:", "second failure:",
                   "freed"):
        c.check(_lines(plain.stdout, prefix) == _lines(tool.stdout, prefix),
                "'%s' line changed by the tool: %r without, %r with" % (
                    prefix, _lines(plain.stdout, prefix),
                    _lines(tool.stdout, prefix)))
    c.check("first failure: 2 cudaErrorMemoryAllocation" in plain.stdout,
            "the card did not run out without the tool: %s" % plain.stdout)
    chunks = [int(x) for x in re.findall(r"^chunks (\d+)$", tool.stderr, re.M)]
    total = [int(x) for x in re.findall(r"^total_bytes (\d+)$", plain.stdout,
                                        re.M)]
    c.notes["chunks_tool"] = chunks
    if not c.check(tool.report is not None,
                   "no report: %s" % tool.report_error):
        return
    errors = [e for e in tool.report.get("errors", []) if e.get("kind") == "oom"]
    if not c.check(len(errors) == 1, "expected exactly one oom error (one "
                   "burst), got %d: %s" % (len(errors),
                                           t.describe_errors(tool.report))):
        if not errors:
            return
    e = errors[0]
    c.notes["reading"] = e.get("reading")
    c.check(e.get("cuda_error") == "cudaErrorMemoryAllocation",
            "cuda_error %r" % e.get("cuda_error"))
    c.check(e.get("requested") == 2 << 30, "requested %r" % e.get("requested"))
    c.check(t.stack_has(e.get("stack", []), "FillCardWithChunks"),
            "the failing call's stack lacks FillCardWithChunks: %s" %
            t.short_stack(e.get("stack", [])))
    dt = e.get("device_total")
    c.check(isinstance(dt, int) and dt > 100e9,
            "device_total %r is not the H200's (> 100 GB)" % dt)
    if total and isinstance(dt, int):
        c.check(dt == total[0], "device_total %d differs from the program's "
                "cudaMemGetInfo total %d" % (dt, total[0]))
    df = e.get("device_free")
    c.check(isinstance(df, int) and df < 2 << 30,
            "device_free %r: the card should be (almost) full" % df)
    holders = e.get("holders") or []
    if c.check(holders, "no holders: %s" % json.dumps(e)[:2000]):
        top = holders[0]
        c.check(t.stack_has(top.get("stack", []), "FillCardWithChunks"),
                "largest holder is not FillCardWithChunks: %s" %
                t.short_stack(top.get("stack", [])))
        if chunks:
            c.check(top.get("count") == chunks[0],
                    "largest holder count %r, the program got %d chunks" % (
                        top.get("count"), chunks[0]))
        c.check(top.get("bytes", 0) >= 0.9 * (dt or 0),
                "largest holder has %r bytes, not ~the whole card (%r)" % (
                    top.get("bytes"), dt))
    c.check(e.get("process_bytes", 0) >= 0.9 * (dt or 0),
            "process_bytes %r, expected ~the card" % e.get("process_bytes"))
    reading = e.get("reading", "")
    c.check("the largest holder is FillCardWithChunks" in reading,
            "reading does not name FillCardWithChunks: %r" % reading)
    c.check("This program itself filled the card" in reading,
            "reading does not blame the program: %r" % reading)
    status = e.get("other_processes_status")
    if status != "ok":
        c.warn("other processes not visible through NVML: %r" % status)
    c.check(isinstance(e.get("other_processes"), list),
            "other_processes missing: %s" % json.dumps(e)[:1000])
    c.check(tool.stderr.count("ERROR: oom") == 1,
            "expected one printed oom error, got %d" %
            tool.stderr.count("ERROR: oom"))


def _check_health_device(t, c, dev, label):
    """Real values of an H200 (or explicitly unsupported ones)."""
    c.check(dev.get("available") is True, "%s: health not available: %r" % (
        label, dev))
    c.check("H200" in (dev.get("name") or ""), "%s: name %r lacks H200" % (
        label, dev.get("name")))
    total = dev.get("memory_total_bytes")
    c.check(isinstance(total, int) and total > 100e9,
            "%s: memory_total_bytes %r (<= 100 GB)" % (label, total))
    used = dev.get("memory_used_bytes")
    c.check(isinstance(used, int) and 0 <= used <= (total or 0),
            "%s: memory_used_bytes %r" % (label, used))
    temp = dev.get("gpu_temp_c")
    c.check(isinstance(temp, int) and 10 <= temp <= 110,
            "%s: gpu_temp_c %r" % (label, temp))
    missing = dev.get("missing") or {}
    for key in ("memory_temp_c", "gpu_temp_slowdown_c", "memory_temp_max_c",
                "ecc_enabled", "ecc_corrected_volatile",
                "ecc_uncorrected_volatile", "ecc_corrected_aggregate",
                "ecc_uncorrected_aggregate", "retired_pages_pending",
                "remapped_rows", "clock_event_reasons"):
        c.check(key in dev, "%s: %s absent" % (label, key))
        if dev.get(key) is None:
            c.check(bool(missing.get(key)), "%s: %s is null without a "
                    "reason" % (label, key))
    if isinstance(dev.get("memory_temp_c"), int):
        c.check(10 <= dev["memory_temp_c"] <= 120, "%s: memory_temp_c %r" % (
            label, dev["memory_temp_c"]))
    c.check(isinstance(dev.get("driver_version"), str) and
            re.match(r"^\d+\.\d+", dev.get("driver_version") or ""),
            "%s: driver_version %r" % (label, dev.get("driver_version")))
    c.check(isinstance(dev.get("warnings"), list), "%s: warnings" % label)
    c.notes[label] = {k: dev.get(k) for k in (
        "name", "memory_total_bytes", "gpu_temp_c", "memory_temp_c",
        "ecc_enabled", "ecc_uncorrected_aggregate", "remapped_rows",
        "clock_event_reason_names", "driver_version", "driver_cuda_version")}
    c.notes[label + "_warnings"] = dev.get("warnings")
    c.notes[label + "_missing"] = missing


def case_health_cli(t, c):
    """`gpumemtrace health --json` prints real values for the H200; the text
    form prints them with units. Without the launcher, the health in a traced
    program's report is checked instead."""
    launcher = _launcher(c)
    if launcher is None:
        c.warn("launcher not found: checking devices[].health of a report")
        run = c.run("tool", [c.example("leak_runtime")], tool=True)
        if c.check(run.report is not None, "no report: %s" % run.report_error):
            devices = run.report.get("devices") or [{}]
            _check_health_device(t, c, devices[0].get("health") or {},
                                 "report")
        return
    js = c.run("json", [launcher, "health", "--json"], tool=False)
    c.check(js.rc in (0, 1), "health --json exited %s (0 healthy, 1 "
            "warnings): %s" % (js.rc, t._tail(js.stderr)))
    try:
        doc = json.loads(js.stdout)
    except ValueError as e:
        c.check(False, "health --json is not JSON (%s): %s" % (
            e, t._tail(js.stdout)))
        return
    c.check(doc.get("available") is True, "health unavailable: %r" %
            doc.get("reason"))
    devices = doc.get("devices") or []
    if not c.check(devices, "no devices: %s" % js.stdout[:1000]):
        return
    _check_health_device(t, c, devices[0], "cli")
    c.check((js.rc == 1) == bool(doc.get("warnings")),
            "exit code %s does not match warnings %r" % (js.rc,
                                                         doc.get("warnings")))
    versions = doc.get("versions") or {}
    c.check(isinstance(versions.get("driver_cuda_version"), int) and
            versions["driver_cuda_version"] >= 12000,
            "driver_cuda_version %r" % versions.get("driver_cuda_version"))
    text = c.run("text", [launcher, "health"], tool=False)
    c.check(text.rc == js.rc, "text exit %s != json exit %s" % (text.rc,
                                                                js.rc))
    for part in ("GPU health (NVML):", "memory: total", "GiB", "ECC:",
                 "temperature: GPU", " C", "clock event reasons:",
                 "Xid events:"):
        c.check(part in text.stdout, "health text lacks %r:\n%s" % (
            part, text.stdout))
    dev0 = c.run("device0", [launcher, "health", "--device", "0", "--json"],
                 tool=False)
    c.check(dev0.rc in (0, 1), "--device 0 exited %s" % dev0.rc)
    bad = c.run("device99", [launcher, "health", "--device", "99"],
                tool=False)
    c.check(bad.rc == 3 and "no device 99" in bad.stdout,
            "--device 99: rc %s, %r" % (bad.rc, bad.stdout[:300]))


def case_health_in_report(t, c):
    """A traced program's report carries the NVML health of its device, the
    program's CUDA versions, and the Xid watcher's status."""
    plain, tool = c.run_pair("leak_runtime")
    if not c.check(tool.report is not None, "no report: %s" %
                   tool.report_error):
        return
    devices = tool.report.get("devices") or [{}]
    dev = devices[0].get("health") or {}
    _check_health_device(t, c, dev, "report")
    c.check(isinstance(dev.get("runtime_cuda_version"), int) and
            dev["runtime_cuda_version"] >= 12000,
            "runtime_cuda_version %r" % dev.get("runtime_cuda_version"))
    c.check(str(dev.get("xid_status", "")).startswith("watched on"),
            "Xid events not watched: %r" % dev.get("xid_status"))
    c.check(isinstance(dev.get("xid_events"), list), "xid_events missing")
    health = tool.report.get("health") or {}
    c.check(health.get("available") is True,
            "top-level health: %r" % health)


def cases(t):
    return [
        ("oom_fill", lambda c: case_oom_fill(t, c)),
        ("health_cli", lambda c: case_health_cli(t, c)),
        ("health_in_report", lambda c: case_health_in_report(t, c)),
    ]
