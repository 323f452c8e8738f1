#!/usr/bin/env python3
"""Opens an HTML report in headless Chromium and checks, in the DOM after the
page's scripts ran, that every memory plot was drawn: <svg id="memory-plot-N">
holds a <path class="usage"> whose step line has as many levels as the
embedded series has points.

  check_html_chromium.py FILE.html [--plots N]

Exits 77 (CTest: skipped) with a message when no Chromium is installed
(tools/setup.sh installs Debian's chromium), 1 when a check fails.
"""
import argparse
import html.parser
import json
import os
import shutil
import subprocess
import sys
import tempfile


class Dom(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.svgs = {}  # id -> {"drawn": str, "paths": {class: d}}
        self.current = None
        self.in_data = False
        self.data = ""

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "svg" and a.get("id", "").startswith("memory-plot-"):
            self.current = a["id"]
            self.svgs[self.current] = {"drawn": a.get("data-drawn"),
                                       "paths": {}}
        elif tag == "path" and self.current:
            self.svgs[self.current]["paths"][a.get("class")] = a.get("d", "")
        elif tag == "script" and a.get("id") == "gmt-data":
            self.in_data = True

    def handle_endtag(self, tag):
        if tag == "svg":
            self.current = None
        if tag == "script":
            self.in_data = False

    def handle_data(self, data):
        if self.in_data:
            self.data += data


def main():
    p = argparse.ArgumentParser()
    p.add_argument("file")
    p.add_argument("--plots", type=int)
    args = p.parse_args()
    browser = next((shutil.which(b) for b in
                    ("chromium", "chromium-browser", "google-chrome")
                    if shutil.which(b)), None)
    if browser is None:
        print("SKIP: no chromium on this machine (tools/setup.sh installs it)")
        return 77
    with tempfile.TemporaryDirectory() as profile:
        r = subprocess.run(
            [browser, "--headless", "--no-sandbox", "--disable-gpu",
             "--disable-dev-shm-usage", f"--user-data-dir={profile}",
             "--virtual-time-budget=5000", "--dump-dom",
             "file://" + os.path.abspath(args.file)],
            capture_output=True, text=True, timeout=180)
    if r.returncode != 0 or "<svg" not in r.stdout:
        print("chromium failed:", r.returncode, r.stderr[-2000:])
        return 1
    dom = Dom()
    dom.feed(r.stdout)
    series = json.loads(dom.data)["series"] if dom.data else {}
    problems = []
    if not dom.svgs:
        problems.append("no <svg id=memory-plot-N> in the rendered page")
    if args.plots is not None and len(dom.svgs) != args.plots:
        problems.append(f"{len(dom.svgs)} plots, expected {args.plots}")
    for svg_id, svg in sorted(dom.svgs.items()):
        usage = svg["paths"].get("usage")
        if not usage:
            problems.append(f"{svg_id}: no <path class=usage> after scripts")
            continue
        key = svg_id[len("memory-plot-"):]
        key = "-1" if key == "host" else key
        points = len(series.get(key, []))
        steps = usage.count("V")
        if not usage.startswith("M") or steps != points - 1:
            problems.append(f"{svg_id}: path {usage[:80]!r} has {steps} "
                            f"steps for {points} points")
        if svg["drawn"] != str(points):
            problems.append(f"{svg_id}: data-drawn={svg['drawn']}")
    for problem in problems:
        print("check_html_chromium:", problem)
    if problems:
        return 1
    print(f"check_html_chromium: ok: {len(dom.svgs)} plots drawn "
          f"({os.path.basename(browser)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
