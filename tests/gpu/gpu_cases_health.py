"""GPU cases for the out-of-memory diagnosis on a card
filled by examples/oom_fill, and GPU health through NVML (`gpumemtrace
health --json`, and devices[].health in a traced program's report).

The launcher is GMT_LAUNCHER, else bin/gpumemtrace beside the library's
folder (<lib dir>/../bin, as in gpu_cases_cli.py).
"""
import json
import os
import re
import shutil
import subprocess


def _launcher(c):
    path = os.environ.get("GMT_LAUNCHER") or os.path.join(
        os.path.dirname(os.path.abspath(c.ctx.lib)), "..", "bin",
        "gpumemtrace")
    path = os.path.normpath(path)
    return path if os.path.isfile(path) else None


def _smi_device():
    """(name, memory total in bytes) of device 0 as nvidia-smi tells them,
    or None: what the card is, for checks that hold on any card."""
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return None
    try:
        p = subprocess.run([smi, "--query-gpu=name,memory.total",
                            "--format=csv,noheader,nounits", "-i", "0"],
                           capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    parts = [x.strip() for x in p.stdout.strip().split(",")]
    if p.returncode != 0 or len(parts) != 2 or not parts[1].isdigit():
        return None
    return parts[0], int(parts[1]) << 20


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
    smi = _smi_device()
    if smi is not None:
        # cuMemGetInfo's total leaves out what the driver keeps for itself
        # (79.2 of 79.6 GiB on an H100, as nvidia-smi counts it).
        c.check(isinstance(dt, int) and 0.85 * smi[1] <= dt <= smi[1],
                "device_total %r is not the card's (nvidia-smi: %s, %d "
                "bytes)" % (dt, smi[0], smi[1]))
    else:
        c.check(isinstance(dt, int) and dt > 1 << 30,
                "device_total %r is not a card's" % dt)
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
    """Real values of the card nvidia-smi names (or explicitly unsupported
    ones)."""
    c.check(dev.get("available") is True, "%s: health not available: %r" % (
        label, dev))
    total = dev.get("memory_total_bytes")
    smi = _smi_device()
    if smi is not None:
        c.check(dev.get("name") == smi[0], "%s: name %r, nvidia-smi says "
                "%r" % (label, dev.get("name"), smi[0]))
        # Both from NVML: nvidia-smi prints whole MiB.
        c.check(isinstance(total, int) and abs(total - smi[1]) < 1 << 20,
                "%s: memory_total_bytes %r, nvidia-smi says %d" % (
                    label, total, smi[1]))
    else:
        c.check(bool(dev.get("name")), "%s: no name" % label)
        c.check(isinstance(total, int) and total > 1 << 30,
                "%s: memory_total_bytes %r (<= 1 GiB)" % (label, total))
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
    """`gpumemtrace health --json` prints real values for the card; the text
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
