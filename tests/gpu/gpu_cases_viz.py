"""GPU cases of the reports to look at: the PyTorch memory
snapshot read by PyTorch's own viewer, the Chrome trace and the HTML report
of real runs, and the timeline's bounded ring on a long churn.

Loaded by gpu_tests.py (cases(t)); run with
  python3 tests/gpu/gpu_tests.py --only viz_pytorch_snapshot,viz_train_loop_trace,viz_churn_ring
"""
import glob
import html.parser
import json
import os
import re
import subprocess

HERE = os.path.dirname(os.path.abspath(__file__))
CHECK_PICKLE = os.path.join(HERE, "..", "unit", "check_torch_snapshot.py")
CHECK_HTML = os.path.join(HERE, "..", "unit", "check_html_chromium.py")

# Files in the run directory (the cwd of the run); the trace does not end in
# .json, so gpu_tests.py's report finder (*.json) sees only the JSON report.
VIZ_OPTIONS = ("report=json,html,trace,torch:html_path=viz.%p.html:"
               "trace_path=viz.%p.trace:torch_path=viz.%p.pickle")


class _Plots(html.parser.HTMLParser):
    """The plots and the embedded series of one of our HTML reports."""

    def __init__(self):
        super().__init__()
        self.svgs = []
        self.data = ""
        self._in_data = False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "svg" and a.get("id", "").startswith("memory-plot-"):
            self.svgs.append(a["id"])
        if tag == "script" and a.get("id") == "gmt-data":
            self._in_data = True

    def handle_endtag(self, tag):
        if tag == "script":
            self._in_data = False

    def handle_data(self, data):
        if self._in_data:
            self.data += data


def _one(c, run_dir, pattern, what):
    files = sorted(glob.glob(os.path.join(run_dir, pattern)))
    c.check(len(files) == 1, "%s: expected one %s, found %s" % (
        run_dir, what, [os.path.basename(f) for f in files]))
    return files[0] if files else None


def _check_html(c, path, report, exact=True):
    """The page parses, has a plot per device with allocations, and its
    embedded series ends at the device's bytes in use at exit and peaks at
    its peak. `exact` False (programs that allocate from several threads):
    those two are warnings, since the timeline's counter and the device
    figures are separate atomics that threads may interleave differently."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    c.check(text.startswith("<!DOCTYPE html>"), "HTML: no doctype")
    c.check("https://" not in text and "<link" not in text,
            "HTML is not self-contained (a URL or <link>)")
    p = _Plots()
    p.feed(text)
    c.check("memory-plot-0" in p.svgs, "HTML: no memory-plot-0 (%s)" % p.svgs)
    try:
        series = json.loads(p.data)["series"]
    except ValueError as e:
        c.check(False, "HTML: embedded series unreadable: %s" % e)
        return
    points = series.get("0", [])
    c.check(len(points) >= 2, "HTML: device 0 series has %d points" %
            len(points))
    devices = {d["index"]: d for d in report.get("devices", [])}
    if points and 0 in devices:
        judge = c.check if exact else (lambda ok, m: ok or c.warn(m))
        judge(points[-1][1] == devices[0]["live_bytes"],
              "HTML: series ends at %d bytes, report says %d live" % (
                  points[-1][1], devices[0]["live_bytes"]))
        judge(max(v for _, v in points) == devices[0]["peak_bytes"],
              "HTML: series peak %d != device peak %d" % (
                  max(v for _, v in points), devices[0]["peak_bytes"]))
    c.notes["html_bytes"] = len(text)
    if os.path.isfile(CHECK_HTML):
        r = subprocess.run(["python3", CHECK_HTML, path],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        out = r.stdout.decode("utf-8", "replace").strip()
        c.notes["html_chromium"] = out[-300:]
        c.check(r.returncode in (0, 77), "HTML in chromium: %s" % out[-600:])


def _embedded_segments(page):
    """Segments in the snapshot a _memory_viz page embeds, or None."""
    import base64
    import pickle
    best = None
    for blob in re.findall(r"[A-Za-z0-9+/=]{1000,}", page):
        try:
            data = pickle.loads(base64.b64decode(blob))
        except Exception:  # not the snapshot: some other long token
            continue
        if isinstance(data, dict) and "segments" in data:
            best = len(data["segments"])
    return best


def _check_trace(c, path, report, allow_dropped=False, exact=True):
    with open(path) as f:
        trace = json.load(f)
    events = trace.get("traceEvents", [])
    begins = [e for e in events if e.get("ph") == "b"]
    ends = [e for e in events if e.get("ph") == "e"]
    counters = [e for e in events if e.get("ph") == "C" and e.get("pid") == 1]
    c.check(len(begins) == len(ends) and begins,
            "trace: %d begin / %d end lifetimes" % (len(begins), len(ends)))
    c.check(counters, "trace: no bytes-in-use counter for GPU 0")
    names = [e for e in events if e.get("ph") == "M" and e.get("pid") == 1
             and e.get("name") == "process_name"]
    c.check(names and names[0]["args"]["name"].startswith("GPU 0"),
            "trace: GPU 0 process not named: %s" % names)
    other = trace.get("otherData", {})
    s = report.get("summary", {})
    if not allow_dropped:
        c.check(other.get("events_dropped") == 0,
                "trace: %s events dropped" % other.get("events_dropped"))
        c.check(len(begins) == s.get("allocations"),
                "trace: %d lifetimes for %s allocations" % (
                    len(begins), s.get("allocations")))
    devices = {d["index"]: d for d in report.get("devices", [])}
    if counters and 0 in devices:
        peak = max(e["args"]["bytes"] for e in counters)
        judge = c.check if exact else (lambda ok, m: ok or c.warn(m))
        judge(peak == devices[0]["peak_bytes"],
                "trace: counter peak %d != device peak %d" % (
                    peak, devices[0]["peak_bytes"]))
    c.notes["trace_events"] = len(events)
    return trace


def _check_pickle(c, path, py=None):
    if os.path.isfile(CHECK_PICKLE):
        r = subprocess.run([py or "python3", CHECK_PICKLE, path],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        out = r.stdout.decode("utf-8", "replace").strip()
        c.notes["pickle_check"] = out[-300:]
        c.check(r.returncode == 0, "snapshot check: %s" % out[-800:])


def case_viz_pytorch_snapshot(c, t):
    """pytorch_train under the tool with every viz format; PyTorch's own
    torch.cuda._memory_viz reads our snapshot (trace_plot, segment_plot,
    stats, trace) with the same python."""
    script = os.path.join(c.ctx.examples_dir, "pytorch_train.py")
    if not os.path.isfile(script):
        raise FileNotFoundError("not found: %s" % script)
    py = t.torch_python(c)
    argv = [py, script, "--steps", os.environ.get("GMT_TEST_TORCH_STEPS",
                                                  "50")]
    run = c.run("tool", argv, tool=True, timeout=480,
                extra_env={"PYTHONUNBUFFERED": "1"}, options=VIZ_OPTIONS)
    c.check(run.rc == 0, "pytorch_train failed (rc %s): %s" % (
        run.rc, run.stderr[-600:]))
    c.check_report_shape(run)
    if run.report is None:
        return
    tl = run.report.get("timeline", {})
    c.check(tl.get("events_recorded", 0) > 0 and tl.get("series", {}).get("0"),
            "JSON report has no timeline: %s" % json.dumps(tl)[:300])
    run_dir = os.path.join(c.dir, "tool")
    pickle_path = _one(c, run_dir, "viz.*.pickle", "torch snapshot")
    html_path = _one(c, run_dir, "viz.*.html", "HTML report")
    trace_path = _one(c, run_dir, "viz.*.trace", "Chrome trace")
    # PyTorch allocates from its autograd threads too: see _check_html.
    if html_path:
        _check_html(c, html_path, run.report, exact=False)
    if trace_path:
        _check_trace(c, trace_path, run.report, exact=False)
    if not pickle_path:
        return
    c.notes["pickle_bytes"] = os.path.getsize(pickle_path)
    _check_pickle(c, pickle_path, py)
    for kind, marker in (("trace_plot", "Active Memory Timeline"),
                         ("segment_plot", "Allocator State History")):
        out = os.path.join(c.dir, kind + ".html")
        r = subprocess.run([py, "-m", "torch.cuda._memory_viz", kind,
                            pickle_path, "-o", out],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           timeout=300)
        log = r.stdout.decode("utf-8", "replace")
        if not c.check(r.returncode == 0, "_memory_viz %s failed: %s" % (
                kind, log[-800:])):
            continue
        size = os.path.getsize(out) if os.path.isfile(out) else 0
        c.notes[kind + "_bytes"] = size
        with open(out, encoding="utf-8", errors="replace") as f:
            page = f.read()
        # The page embeds the snapshot it read, re-pickled by PyTorch and
        # base64-encoded: decode it and count its segments (a page that
        # dropped our data would hold none).
        embedded = _embedded_segments(page)
        c.notes[kind + "_embedded_segments"] = embedded
        c.check(marker in page and embedded is not None and embedded > 0,
                "_memory_viz %s wrote %d bytes, marker %r %s, embedded "
                "snapshot segments: %s" % (
                    kind, size, marker,
                    "found" if marker in page else "missing", embedded))
    # The text views parse every segment and trace entry.
    for kind in ("stats", "trace"):
        r = subprocess.run([py, "-m", "torch.cuda._memory_viz", kind,
                            pickle_path], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, timeout=300)
        log = r.stdout.decode("utf-8", "replace")
        c.check(r.returncode == 0, "_memory_viz %s failed: %s" % (
            kind, log[-800:]))
        if kind == "stats":
            m = re.search(r"^segments: (\d+)$", log, re.M)
            c.notes["stats_segments"] = m.group(1) if m else log[-200:]
        else:
            c.check(re.search(r"^\d+ entries$", log, re.M) is not None,
                    "_memory_viz trace printed no entries line: %s" %
                    log[:300])


def case_viz_train_loop_trace(c, t):
    """train_loop (C++) with every viz format: every allocation is one
    lifetime in the trace, the counter's peak is the device's peak, the HTML
    plot ends at the bytes still in use, and the snapshot reads back."""
    iters = os.environ.get("GMT_TEST_TRAIN_ITERS", "10")
    argv = [c.example("train_loop"), "--iters", iters]
    plain = c.run("plain", argv, tool=False, timeout=300)
    run = c.run("tool", argv, tool=True, timeout=300, options=VIZ_OPTIONS)
    c.check(run.rc == plain.rc == 0, "train_loop rc %s without, %s with: %s"
            % (plain.rc, run.rc, run.stderr[-600:]))
    sums = [re.search(r"^train_loop: checksum .*$", r.stdout, re.M)
            for r in (plain, run)]
    c.check(sums[0] and sums[1] and sums[0].group(0) == sums[1].group(0),
            "checksum changed by the tool")
    c.check_report_shape(run)
    if run.report is None:
        return
    run_dir = os.path.join(c.dir, "tool")
    trace_path = _one(c, run_dir, "viz.*.trace", "Chrome trace")
    html_path = _one(c, run_dir, "viz.*.html", "HTML report")
    pickle_path = _one(c, run_dir, "viz.*.pickle", "torch snapshot")
    if trace_path:
        trace = _check_trace(c, trace_path, run.report)
        names = {e["name"] for e in trace["traceEvents"] if e.get("ph") == "b"}
        c.notes["call_sites"] = sorted(names)[:10]
        c.check(any("(train_loop.cu:" in n for n in names),
                "trace: no lifetime named after a train_loop.cu call site: "
                "%s" % sorted(names)[:10])
    if html_path:
        _check_html(c, html_path, run.report)
    if pickle_path:
        _check_pickle(c, pickle_path)


def case_viz_churn_ring(c, t):
    """A long churn with a small ring (timeline_events=4096): the newest
    events are kept, the rest counted as dropped, the plot still ends at the
    exact bytes in use; and the cost of recording, churn's own us/pair with
    the timeline on (report=json) and off (report=text), for reading."""
    pairs = int(os.environ.get("GMT_TEST_CHURN_PAIRS", "200000"))
    argv = [c.example("churn"), "--pairs", str(pairs)]
    run = c.run("ring", argv, tool=True, timeout=300,
                options=VIZ_OPTIONS + ":timeline_events=4096")
    c.check(run.rc == 0, "churn rc %s: %s" % (run.rc, run.stderr[-600:]))
    c.check_report_shape(run)
    if run.report is None:
        return
    r = run.report
    tl = r.get("timeline", {})
    s = r.get("summary", {})
    recorded = s.get("allocations", 0) + s.get("frees", 0)
    c.check(tl.get("capacity") == 4096, "capacity %s" % tl.get("capacity"))
    c.check(tl.get("events_recorded") == recorded,
            "timeline recorded %s events, summary counts %d" % (
                tl.get("events_recorded"), recorded))
    c.check(tl.get("events_dropped") == recorded - 4096,
            "dropped %s, expected %d" % (tl.get("events_dropped"),
                                          recorded - 4096))
    points = tl.get("series", {}).get("0", [])
    devices = {d["index"]: d for d in r.get("devices", [])}
    c.check(points and len(points) <= 2000, "series has %d points" %
            len(points))
    if points and 0 in devices:
        c.check(points[-1][1] == devices[0]["live_bytes"],
                "series ends at %d, device has %d live" % (
                    points[-1][1], devices[0]["live_bytes"]))
    run_dir = os.path.join(c.dir, "ring")
    trace_path = _one(c, run_dir, "viz.*.trace", "Chrome trace")
    if trace_path:
        _check_trace(c, trace_path, r, allow_dropped=True, exact=False)
        c.notes["trace_bytes"] = os.path.getsize(trace_path)
    pickle_path = _one(c, run_dir, "viz.*.pickle", "torch snapshot")
    if pickle_path:
        _check_pickle(c, pickle_path)
        c.notes["pickle_bytes"] = os.path.getsize(pickle_path)
    # Cost of the timeline, read from churn's own timing (not judged here).
    us = {}
    for label, options in (("off", "report=text"),
                           ("on", "report=json:timeline_events=1048576")):
        timed = c.run("cost_" + label, argv, tool=True, timeout=300,
                      options=options)
        m = re.search(r"\(([0-9.]+) us/pair\)", timed.stdout)
        us[label] = float(m.group(1)) if m else None
    c.notes["us_per_pair_timeline"] = us
    print("    us/pair: timeline off %s, on %s" % (us.get("off"),
                                                    us.get("on")), flush=True)


def cases(t):
    return [
        ("viz_pytorch_snapshot", lambda c: case_viz_pytorch_snapshot(c, t)),
        ("viz_train_loop_trace", lambda c: case_viz_train_loop_trace(c, t)),
        ("viz_churn_ring", lambda c: case_viz_churn_ring(c, t)),
    ]
