"""GPU case of transparency on programs written without the tool in mind.

  corpus   every program of the committed corpus (tests/gpu/corpus/, built
           into <build>/tests/gpu/corpus/programs/ beside its manifest
           corpus.json) and
           of every extra manifest (the third-party corpus), run without the
           tool and then under each option set below. Each run must match
           the run without the tool: exit code, stdout (masked lines aside),
           the CUDA return codes the program prints ("what -> 1
           (cudaErrorInvalidValue)"), the CUDA error names on its own stderr;
           and the tool's JSON report of each process must hold no error and
           no leak the manifest does not expect. A table program x option
           set -> same / differs (first difference) is printed and written to
           corpus_table.json and corpus_table.md in the case's folder (and to
           GMT_CORPUS_TABLE_DIR when set).

Where the programs are:
  --corpus-dir DIR / GMT_CORPUS_DIR      the committed corpus' build folder
                                         (found beside --examples-dir's
                                         build tree when not given)
  --corpus-manifest FILE / GMT_CORPUS_MANIFEST (os.pathsep-separated)
                                         extra manifests, e.g. the
                                         third-party corpus3p.json
Selection and pace:
  GMT_CORPUS_ONLY         comma-separated program names
  GMT_CORPUS_OPTION_SETS  comma-separated option sets (default: all of
                          OPTION_SETS; "torch" only when named)
  GMT_CORPUS_JOBS         runs at a time (default: min(12, CPUs))

Without any corpus the case is skipped (the device bundle has none).

Manifest (JSON): {"corpus": "<label>", "programs": [{...}, ...]}; a program:
  name        unique name (the table's row)
  argv        argv; argv[0] is relative to the manifest's folder, or
              "{python}" (the interpreter of --python); "{dir}" in any
              argument is the manifest's folder
  needs       ["torch", "triton"]: skipped with a message when the
              interpreter cannot import them
  data        folder (relative to the manifest's) whose files are linked
              into the run's working folder and its data/ subfolder
  env         extra environment variables
  mask        regular expressions; matching stdout lines are not compared
              (lines starting with "~ " or "RESULT " never are)
  exit_code   expected exit code without the tool (default 0)
  processes   how many processes write reports (default 1; informational)
  peers       true: needs two GPUs, skipped otherwise
  leaks       false (default): no leak may be reported; true: leaks are
              not checked; ["api", ...]: only leaks of these APIs allowed
  errors      {"kind": count}: errors the tool must report (default none);
              a count may be [least, most] where the program's timing
              decides (out-of-memory failures less than 1 s apart are one
              report)
  timeout     seconds per run (default 120)
  exclusive   true: runs alone after every other run (timings)
  metrics     [{"line": "RESULT corpus_bandwidth", "key": "texture_gbps",
                "min_ratio": 0.8, "option_sets": ["default", ...]}]: a
              figure that must stay within min_ratio of the run without
              the tool
  note        free text
"""
import concurrent.futures
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

# (label, GMT_OPTIONS beyond the report, injected). "default" sets no option
# of its own; "inject" loads the tool with CUDA_INJECTION64_PATH only.
OPTION_SETS = [
    ("default", "", False),
    ("kernel", "check=kernel", False),
    ("noguard", "guard=0", False),
    ("inject", "", True),
]
# Run only when GMT_CORPUS_OPTION_SETS names them. "torch" is tensor mode:
# every program's stream-ordered frees held, checked and their blocks
# reused, and PyTorch moved to its cudaMallocAsync backend, whose own
# figures (memory_stats, reserved bytes) a PyTorch program may print.
NAMED_OPTION_SETS = [
    ("torch", "torch=1", False),
]

ALWAYS_MASKED = (r"^~ ", r"^RESULT ")
_RC_LINE = re.compile(r"^(.*?) -> (-?\d+) \(([A-Za-z_0-9]+)\)\s*$")
_STDERR_ERROR = re.compile(r"\b(cuda(?:Error)[A-Za-z]+|CUDA_ERROR_[A-Z_]+)\b")
_TOOL_LINE = re.compile(r"^==\d+==")
_RESULT_LINE = re.compile(r"^(RESULT \S+)((?: \S+=\S+)*)\s*$")

DEFAULTS = {
    "argv": None, "needs": [], "data": None, "env": {}, "mask": [],
    "exit_code": 0, "processes": 1, "peers": False, "leaks": False,
    "errors": {}, "timeout": 120, "exclusive": False, "metrics": [],
    "note": "",
}


class ManifestError(Exception):
    pass


# -- manifests (pure) ---------------------------------------------------------

def load_manifest(path):
    """The programs of one manifest, defaults filled in and paths resolved."""
    try:
        with open(path) as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        raise ManifestError("%s: %s" % (path, e))
    return programs_from(doc, os.path.dirname(os.path.abspath(path)), path)


def programs_from(doc, base, where="manifest"):
    label = doc.get("corpus", os.path.basename(base))
    out = []
    for i, entry in enumerate(doc.get("programs", [])):
        unknown = set(entry) - set(DEFAULTS) - {"name", "source"}
        if unknown:
            raise ManifestError("%s: program %d: unknown field(s) %s" % (
                where, i, ", ".join(sorted(unknown))))
        if not entry.get("name"):
            raise ManifestError("%s: program %d has no name" % (where, i))
        p = dict(DEFAULTS)
        p.update(entry)
        p["corpus"] = label
        p["base"] = base
        if not p["argv"]:
            p["argv"] = [p["name"]]
        for pattern in p["mask"]:
            try:
                re.compile(pattern)
            except re.error as e:
                raise ManifestError("%s: %s: bad mask %r: %s" % (
                    where, p["name"], pattern, e))
        out.append(p)
    return out


def resolve_argv(program, python):
    argv = []
    for k, arg in enumerate(program["argv"]):
        arg = arg.replace("{dir}", program["base"])
        if k == 0:
            if arg == "{python}":
                arg = python
            elif not os.path.isabs(arg):
                arg = os.path.join(program["base"], arg)
        argv.append(arg)
    return argv


# -- comparison (pure) ----------------------------------------------------------

def masked_lines(text, patterns=()):
    """stdout's lines without the masked ones."""
    regexes = [re.compile(p) for p in tuple(ALWAYS_MASKED) + tuple(patterns)]
    return [line for line in text.splitlines()
            if not any(r.search(line) for r in regexes)]


def return_codes(lines):
    """[(what, code, name)] of every "what -> code (name)" line."""
    out = []
    for line in lines:
        m = _RC_LINE.match(line)
        if m:
            out.append((m.group(1), int(m.group(2)), m.group(3)))
    return out


def stderr_errors(text):
    """CUDA error names the program itself wrote to stderr (the tool's own
    "==pid==" lines left out), sorted."""
    found = []
    for line in text.splitlines():
        if _TOOL_LINE.match(line):
            continue
        found.extend(_STDERR_ERROR.findall(line))
    return sorted(found)


def results(text):
    """{"RESULT tag": {key: float}} of the machine-readable lines."""
    out = {}
    for line in text.splitlines():
        m = _RESULT_LINE.match(line)
        if not m:
            continue
        values = {}
        for pair in m.group(2).split():
            key, _, value = pair.partition("=")
            try:
                values[key] = float(value)
            except ValueError:
                pass
        out[m.group(1)] = values
    return out


def first_difference(plain, other, patterns=()):
    """None when `other` (rc, stdout, stderr) matches `plain`, else a short
    description of the first difference: the exit code, then the return
    codes, then stdout, then CUDA errors on stderr."""
    p_rc, p_out, p_err = plain
    o_rc, o_out, o_err = other
    if o_rc != p_rc:
        return "exit code %s (without the tool: %s)" % (o_rc, p_rc)
    p_lines = masked_lines(p_out, patterns)
    o_lines = masked_lines(o_out, patterns)
    p_codes = return_codes(p_lines)
    o_codes = return_codes(o_lines)
    for (pw, pc, pn), (ow, oc, on) in zip(p_codes, o_codes):
        if pw == ow and pc != oc:
            return "return code: %s -> %d (%s) (without the tool: %d (%s))" % (
                ow, oc, on, pc, pn)
    for i, (pl, ol) in enumerate(zip(p_lines, o_lines)):
        if pl != ol:
            return "stdout line %d: %r (without the tool: %r)" % (i + 1, ol, pl)
    if len(o_lines) != len(p_lines):
        longer, which = (o_lines, "more") if len(o_lines) > len(p_lines) else (
            p_lines, "fewer")
        extra = longer[min(len(p_lines), len(o_lines))]
        return "stdout has %s lines (%d vs %d without the tool), first: %r" % (
            which, len(o_lines), len(p_lines), extra)
    p_errs, o_errs = stderr_errors(p_err), stderr_errors(o_err)
    if p_errs != o_errs:
        new = sorted(set(o_errs) - set(p_errs)) or o_errs
        return "CUDA errors on stderr: %s (without the tool: %s)" % (
            ", ".join(new) or "none", ", ".join(sorted(set(p_errs))) or "none")
    return None


def _leak_text(leak):
    return "%s %s bytes x%s" % (leak.get("api"), leak.get("bytes"),
                                leak.get("count"))


def report_issues(program, reports, report_error=None):
    """What is wrong with the tool's reports of one run: none written, errors
    the manifest does not expect (or expected ones missing), leaks it does
    not allow. `reports` is [(path, doc)]."""
    issues = []
    if report_error:
        issues.append(report_error)
    if not reports:
        if not report_error:
            issues.append("no JSON report written")
        return issues
    kinds = {}
    leaks = []
    for _, doc in reports:
        for e in doc.get("errors", []):
            kinds[e.get("kind")] = kinds.get(e.get("kind"), 0) + 1
        n = doc.get("summary", {}).get("errors", 0)
        listed = len(doc.get("errors", []))
        if n > listed:  # summarized beyond the list
            kinds["(unlisted)"] = kinds.get("(unlisted)", 0) + n - listed
        leaks.extend(doc.get("leaks", []))
    expected = dict(program.get("errors") or {})

    def count_ok(kind):
        want = expected.get(kind, 0)
        got = kinds.get(kind, 0)
        if isinstance(want, list):
            return want[0] <= got <= want[1]
        return got == want

    if not all(count_ok(k) for k in set(kinds) | set(expected)):
        got = ", ".join("%s x%d" % (k, v) for k, v in sorted(kinds.items()))
        want = ", ".join(
            "%s x%s" % (k, "%d-%d" % tuple(v) if isinstance(v, list) else v)
            for k, v in sorted(expected.items()))
        issues.append("tool errors: %s (expected: %s)" % (got or "none",
                                                          want or "none"))
    allowed = program.get("leaks", False)
    if allowed is not True:
        apis = set(allowed) if isinstance(allowed, list) else set()
        bad = [l for l in leaks if l.get("api") not in apis]
        if bad:
            issues.append("tool leaks: %s" % "; ".join(
                _leak_text(l) for l in bad[:4]) +
                (" (+%d more)" % (len(bad) - 4) if len(bad) > 4 else ""))
    return issues


def metric_issues(program, label, plain_out, out):
    issues = []
    if not program.get("metrics"):
        return issues
    base, got = results(plain_out), results(out)
    for m in program["metrics"]:
        sets = m.get("option_sets")
        if sets and label not in sets:
            continue
        before = base.get(m["line"], {}).get(m["key"])
        after = got.get(m["line"], {}).get(m["key"])
        if before is None or after is None:
            issues.append("%s: not printed" % m["key"])
            continue
        ratio = after / before if before else 1.0
        if ratio < m.get("min_ratio", 0.8):
            issues.append("%s %.1f (without the tool %.1f: %.2fx)" % (
                m["key"], after, before, ratio))
    return issues


# -- table (pure) ---------------------------------------------------------------

def cell_text(cell, width=None):
    status = cell["status"]
    text = status if not cell.get("detail") else "%s: %s" % (status,
                                                             cell["detail"])
    if width and len(text) > width:
        text = text[:width - 3] + "..."
    return text


def table_rows(cells, programs, option_sets):
    """[(program, baseline, {option set: cell})] in manifest order."""
    rows = []
    for p in programs:
        name = p["name"]
        rows.append((name, cells.get((name, "plain")),
                     {label: cells.get((name, label))
                      for label in option_sets}))
    return rows


def table_markdown(rows, option_sets, title="gpumemtrace corpus"):
    out = ["# %s" % title, "",
           "| program | without the tool | %s |" % " | ".join(option_sets),
           "|---|---|%s" % "---|" * len(option_sets)]
    details = []
    for name, base, by_set in rows:
        cols = []
        for label in option_sets:
            cell = by_set.get(label) or {"status": "not run"}
            if cell["status"] in ("same", "skipped", "not run"):
                cols.append(cell["status"])
            else:
                cols.append("**%s**" % cell["status"])
                details.append("- `%s` / %s: %s" % (name, label,
                                                    cell.get("detail", "")))
        base_text = (base or {"status": "not run"})["status"]
        if base and base.get("detail"):
            details.append("- `%s` without the tool: %s" % (name,
                                                            base["detail"]))
        out.append("| %s | %s | %s |" % (name, base_text, " | ".join(cols)))
    if details:
        out += ["", "## Differences", ""] + [d.replace("|", "\\|")
                                             for d in details]
    return "\n".join(out) + "\n"


def table_text(rows, option_sets, width=34):
    name_w = max([7] + [len(r[0]) for r in rows])
    head = "%-*s  %-10s  %s" % (name_w, "program", "plain", "  ".join(
        "%-*s" % (width, s) for s in option_sets))
    lines = [head, "-" * len(head)]
    for name, base, by_set in rows:
        lines.append("%-*s  %-10s  %s" % (
            name_w, name, (base or {"status": "-"})["status"][:10],
            "  ".join("%-*s" % (width, cell_text(
                by_set.get(s) or {"status": "-"}, width))
                for s in option_sets)))
    return "\n".join(lines)


# -- running --------------------------------------------------------------------

class RunResult:
    def __init__(self, rc, stdout, stderr, seconds, reports, report_error):
        self.rc = rc
        self.stdout = stdout
        self.stderr = stderr
        self.seconds = seconds
        self.reports = reports
        self.report_error = report_error


def _library_path(lib, toolkit):
    """LD_LIBRARY_PATH for the programs: the tool's folder (its bundled
    dependencies) and, last and for compiled programs only (PyTorch brings
    its own CUDA libraries), the toolkit's libraries where they exist."""
    parts = [p for p in os.environ.get("LD_LIBRARY_PATH", "").split(":") if p]
    extra = [os.path.dirname(lib)]
    for d in ("/usr/local/cuda/lib64",
              "/usr/local/cuda/targets/x86_64-linux/lib"):
        if toolkit and os.path.isdir(d):
            extra.append(d)
    return ":".join(parts + [d for d in extra if d not in parts])


def _link_data(program, work):
    if not program.get("data"):
        return
    src = os.path.join(program["base"], program["data"])
    if not os.path.isdir(src):
        return
    data = os.path.join(work, "data")
    os.makedirs(data, exist_ok=True)
    for name in os.listdir(src):
        for where in (work, data):
            link = os.path.join(where, name)
            if not os.path.lexists(link):
                os.symlink(os.path.join(src, name), link)


def run_program(t, ctx, program, label, options, injected, run_dir):
    """One run of `program`: without the tool (label "plain"), under
    LD_PRELOAD, or injected. Output and reports under run_dir."""
    shutil.rmtree(run_dir, ignore_errors=True)
    work = os.path.join(run_dir, "work")
    reports_dir = os.path.join(run_dir, "reports")
    os.makedirs(work)
    os.makedirs(reports_dir)
    _link_data(program, work)
    env = dict(os.environ)
    for key in ("LD_PRELOAD", "GMT_OPTIONS", "CUDA_INJECTION64_PATH"):
        env.pop(key, None)
    env["LD_LIBRARY_PATH"] = _library_path(
        ctx.lib, toolkit=program["argv"][0] != "{python}")
    env["PYTHONUNBUFFERED"] = "1"
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env.update(program.get("env") or {})
    if label != "plain":
        gmt = "report=json:report_path=%s/%%p.json" % reports_dir
        extra = os.environ.get("GMT_EXTRA_OPTIONS", "")
        for more in (extra, options):
            if more:
                gmt += ":" + more
        env["GMT_OPTIONS"] = gmt
        env["CUDA_INJECTION64_PATH" if injected else "LD_PRELOAD"] = ctx.lib
    argv = resolve_argv(program, ctx.python)
    start = time.monotonic()
    try:
        proc = subprocess.Popen(argv, env=env, cwd=work,
                                stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                start_new_session=True)
    except OSError as e:
        return RunResult("not started", "", str(e), 0.0, [], None)
    try:
        out, err = proc.communicate(timeout=program["timeout"])
        rc = proc.returncode
    except subprocess.TimeoutExpired:
        # The whole session: a forked child goes too.
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            pass
        out, err = proc.communicate()
        rc = "timeout"
    seconds = time.monotonic() - start
    out = out.decode("utf-8", "replace")
    err = err.decode("utf-8", "replace")
    with open(os.path.join(run_dir, "stdout.txt"), "w") as f:
        f.write(out)
    with open(os.path.join(run_dir, "stderr.txt"), "w") as f:
        f.write(err)
    reports, report_error = [], None
    for path in sorted(glob.glob(os.path.join(reports_dir, "*.json"))):
        try:
            with open(path) as f:
                reports.append((path, json.load(f)))
        except (OSError, ValueError) as e:
            report_error = "unreadable report %s: %s" % (
                os.path.basename(path), e)
    return RunResult(rc, out, err, seconds, reports, report_error)


def _can_import(python, modules):
    if not modules:
        return True, ""
    code = "; ".join("import %s" % m for m in modules)
    try:
        p = subprocess.run([python, "-c", code], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, timeout=180)
    except (OSError, subprocess.TimeoutExpired) as e:
        return False, str(e)
    if p.returncode != 0:
        tail = p.stdout.decode("utf-8", "replace").strip().splitlines()
        return False, tail[-1] if tail else "exit %d" % p.returncode
    return True, ""


def _gpu_count():
    smi = shutil.which("nvidia-smi")
    if not smi:
        return 1
    try:
        p = subprocess.run([smi, "-L"], stdout=subprocess.PIPE, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return 1
    return max(1, len(re.findall(r"^GPU \d+:", p.stdout.decode(
        "utf-8", "replace"), re.M)))


def find_corpora(ctx):
    """[manifest paths]: the committed corpus, then the extra manifests."""
    paths = []
    corpus_dir = getattr(ctx, "corpus_dir", None) or os.environ.get(
        "GMT_CORPUS_DIR")
    if not corpus_dir and ctx.examples_dir:
        guess = os.path.join(os.path.dirname(ctx.examples_dir), "tests", "gpu",
                             "corpus", "programs")
        if os.path.isfile(os.path.join(guess, "corpus.json")):
            corpus_dir = guess
    if corpus_dir:
        paths.append(os.path.join(os.path.abspath(corpus_dir), "corpus.json"))
    extra = list(getattr(ctx, "corpus_manifests", None) or [])
    env = os.environ.get("GMT_CORPUS_MANIFEST", "")
    extra += [p for p in env.split(os.pathsep) if p]
    for p in extra:
        p = os.path.abspath(p)
        if p not in paths:
            paths.append(p)
    return paths


def case_corpus(t, c):
    manifests = find_corpora(c.ctx)
    if not manifests:
        raise t.Skip("no corpus: give --corpus-dir (the build's "
                     "tests/gpu/corpus) or --corpus-manifest")
    programs = []
    for path in manifests:
        if not c.check(os.path.isfile(path), "manifest not found: %s" % path):
            continue
        try:
            programs.extend(load_manifest(path))
        except ManifestError as e:
            c.check(False, str(e))
    names = [p["name"] for p in programs]
    dups = sorted({n for n in names if names.count(n) > 1})
    c.check(not dups, "program names used twice: %s" % ", ".join(dups))
    only = [n for n in os.environ.get("GMT_CORPUS_ONLY", "").split(",") if n]
    if only:
        programs = [p for p in programs if p["name"] in only]
    wanted_sets = [s for s in os.environ.get("GMT_CORPUS_OPTION_SETS",
                                             "").split(",") if s]
    option_sets = [o for o in OPTION_SETS + NAMED_OPTION_SETS
                   if (o in OPTION_SETS and not wanted_sets) or
                   o[0] in wanted_sets]
    labels = [o[0] for o in option_sets]

    cells = {}
    gpus = _gpu_count()
    import_cache = {}
    runnable = []
    for p in programs:
        reason = None
        if p["peers"] and gpus < 2:
            reason = "needs two GPUs (%d here)" % gpus
        needs = tuple(p["needs"])
        if reason is None and needs:
            if needs not in import_cache:
                import_cache[needs] = _can_import(c.ctx.python, needs)
            ok, why = import_cache[needs]
            if not ok:
                reason = "%s cannot import %s: %s" % (
                    c.ctx.python, ", ".join(needs), why)
        argv0 = resolve_argv(p, c.ctx.python)[0]
        if reason is None and argv0 != c.ctx.python and not os.path.isfile(
                argv0):
            reason = "not built: %s" % argv0
        if reason:
            cells[(p["name"], "plain")] = {"status": "skipped",
                                           "detail": reason}
            for label in labels:
                cells[(p["name"], label)] = {"status": "skipped"}
            print("  skipped %s: %s" % (p["name"], reason), flush=True)
        else:
            runnable.append(p)

    jobs_n = int(os.environ.get("GMT_CORPUS_JOBS", "0") or 0) or min(
        12, os.cpu_count() or 4)
    runs = {}

    def one(job):
        p, label, options, injected = job
        run_dir = os.path.join(c.dir, p["name"], label)
        r = run_program(t, c.ctx, p, label, options, injected, run_dir)
        # The output's verdict as soon as the run is in (the table comes at
        # the end, and a run cut off by a time limit would not print it).
        verdict = ""
        plain = runs.get((p["name"], "plain"))
        if label != "plain" and plain is not None:
            diff = ("timed out" if r.rc == "timeout" else first_difference(
                (plain.rc, plain.stdout, plain.stderr),
                (r.rc, r.stdout, r.stderr), p["mask"]))
            verdict = ("  output differs: %s" % diff[:200] if diff
                       else "  output same")
        print("    %-28s %-8s %6.1fs rc=%s%s%s" % (
            p["name"], label, r.seconds, r.rc,
            "  (%d report(s))" % len(r.reports) if label != "plain" else "",
            verdict), flush=True)
        return job, r

    def run_all(jobs, parallel):
        # Longest first, so the slow ones do not finish last.
        jobs = sorted(jobs, key=lambda j: -j[0]["timeout"])
        if parallel > 1 and len(jobs) > 1:
            with concurrent.futures.ThreadPoolExecutor(parallel) as pool:
                for (p, label, _, _), r in pool.map(one, jobs):
                    runs[(p["name"], label)] = r
        else:
            for job in jobs:
                (p, label, _, _), r = one(job)
                runs[(p["name"], label)] = r

    shared = [p for p in runnable if not p["exclusive"]]
    alone = [p for p in runnable if p["exclusive"]]
    start = time.monotonic()
    # Without the tool first (it also warms compilation caches), then every
    # option set; programs that time themselves alone at the end.
    run_all([(p, "plain", "", False) for p in shared], jobs_n)
    run_all([(p, label, options, injected) for p in shared
             for label, options, injected in option_sets], jobs_n)
    for p in alone:
        run_all([(p, "plain", "", False)] +
                [(p, label, options, injected)
                 for label, options, injected in option_sets], 1)
    c.notes["seconds"] = round(time.monotonic() - start, 1)

    metrics = {}
    for p in runnable:
        name = p["name"]
        plain = runs[(name, "plain")]
        base = {"status": "ok", "seconds": round(plain.seconds, 2)}
        if plain.rc != p["exit_code"]:
            base = {"status": "FAILED",
                    "detail": "exit %s, expected %s: %s" % (
                        plain.rc, p["exit_code"], t._tail(
                            plain.stderr or plain.stdout, 300))}
            c.check(False, "%s fails without the tool: %s" % (
                name, base["detail"]))
        cells[(name, "plain")] = base
        if results(plain.stdout):
            metrics.setdefault(name, {})["plain"] = results(plain.stdout)
        for label, _, _ in option_sets:
            r = runs[(name, label)]
            problems = []
            if r.rc == "timeout":
                problems.append("timed out after %ss" % p["timeout"])
            else:
                diff = first_difference(
                    (plain.rc, plain.stdout, plain.stderr),
                    (r.rc, r.stdout, r.stderr), p["mask"])
                if diff:
                    problems.append(diff)
            problems += report_issues(p, r.reports, r.report_error)
            problems += metric_issues(p, label, plain.stdout, r.stdout)
            if results(r.stdout):
                metrics.setdefault(name, {})[label] = results(r.stdout)
            if problems:
                cells[(name, label)] = {"status": "differs",
                                        "detail": "; ".join(problems),
                                        "seconds": round(r.seconds, 2)}
                c.check(False, "%s under %s: %s" % (name, label,
                                                    "; ".join(problems)))
            else:
                cells[(name, label)] = {"status": "same",
                                        "seconds": round(r.seconds, 2)}

    rows = table_rows(cells, programs, labels)
    print(table_text(rows, labels), flush=True)
    doc = {"option_sets": {label: {"GMT_OPTIONS": options,
                                   "injected": injected}
                           for label, options, injected in option_sets},
           "manifests": manifests,
           "programs": [{"name": name,
                         "corpus": next(p["corpus"] for p in programs
                                        if p["name"] == name),
                         "plain": base, "runs": by_set}
                        for name, base, by_set in rows],
           "metrics": metrics}
    md = table_markdown(rows, labels)
    targets = [c.dir]
    if os.environ.get("GMT_CORPUS_TABLE_DIR"):
        targets.append(os.environ["GMT_CORPUS_TABLE_DIR"])
    for d in targets:
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "corpus_table.json"), "w") as f:
            json.dump(doc, f, indent=2)
        with open(os.path.join(d, "corpus_table.md"), "w") as f:
            f.write(md)
    statuses = [cell["status"] for (_, label), cell in cells.items()
                if label != "plain"]
    c.notes["programs"] = len(programs)
    c.notes["option_sets"] = labels
    c.notes["same"] = statuses.count("same")
    c.notes["differs"] = statuses.count("differs")
    c.notes["skipped_programs"] = sum(
        1 for p in programs
        if cells.get((p["name"], "plain"), {}).get("status") == "skipped")
    c.notes["table"] = os.path.join(c.dir, "corpus_table.md")
    c.notes["metrics"] = metrics


def cases(t):
    def bind(f):
        return lambda c: f(t, c)
    return [("corpus", bind(case_corpus))]
