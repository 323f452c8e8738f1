#!/usr/bin/env python3
"""Self-test of the differential corpus runner (gpu_cases_corpus.py), with
no GPU: its pure parts (masking, return codes, first difference, report and
metric checks, manifests, the table) directly, then case "corpus" of
gpu_tests.py end to end against fake programs, a fake nvidia-smi and a fake
tool (the programs write the report the real tool would).

  selftest_corpus.py GPU_TESTS_PY WORK_DIR

Prints PASS/FAIL per check and 'N passed, N failed'; exit 1 on a failure.
"""
import importlib.util
import json
import os
import re
import shutil
import stat
import subprocess
import sys

checks = []


def expect(label, ok, detail=""):
    checks.append(bool(ok))
    print("%s %s" % ("PASS" if ok else "FAIL", label))
    if not ok and detail:
        print("    %s" % str(detail).replace("\n", "\n    "))


def load_runner(gpu_tests):
    path = os.path.join(os.path.dirname(gpu_tests), "gpu_cases_corpus.py")
    spec = importlib.util.spec_from_file_location("gpu_cases_corpus", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def pure_checks(m):
    out = ("start\nalloc -> 0 (cudaSuccess)\n~ 1.25 ms\nRESULT x a=1.5\n"
           "done\n")
    expect("masked_lines drops '~ ' and RESULT lines",
           m.masked_lines(out) == ["start", "alloc -> 0 (cudaSuccess)", "done"],
           m.masked_lines(out))
    expect("masked_lines applies the manifest's masks",
           m.masked_lines("a 1\nElapsed 3.2 ms\nb\n", [r"^Elapsed"]) ==
           ["a 1", "b"])
    expect("return_codes parses 'what -> code (name)'",
           m.return_codes(["attach len 0 -> 1 (cudaErrorInvalidValue)",
                           "x -> 0 (CUDA_SUCCESS)", "no code here"]) ==
           [("attach len 0", 1, "cudaErrorInvalidValue"),
            ("x", 0, "CUDA_SUCCESS")])
    expect("results parses RESULT lines",
           m.results("RESULT corpus_bandwidth texture_gbps=2190.5 n=3\n") ==
           {"RESULT corpus_bandwidth": {"texture_gbps": 2190.5, "n": 3.0}})

    base = (0, out, "")
    expect("identical runs: no difference",
           m.first_difference(base, (0, out, "")) is None)
    expect("masked lines may differ",
           m.first_difference(base, (0, out.replace("1.25", "9.75"), ""))
           is None)
    d = m.first_difference(base, (1, out, ""))
    expect("exit code difference", d and d.startswith("exit code 1"), d)
    d = m.first_difference(base, (0, out.replace(
        "alloc -> 0 (cudaSuccess)", "alloc -> 1 (cudaErrorInvalidValue)"), ""))
    expect("return code difference names the call and both codes",
           d and "alloc -> 1 (cudaErrorInvalidValue)" in d and
           "0 (cudaSuccess)" in d, d)
    d = m.first_difference(base, (0, out.replace("done", "dona"), ""))
    expect("stdout difference gives the line", d and "'dona'" in d and
           "line 3" in d, d)
    d = m.first_difference(base, (0, out + "extra\n", ""))
    expect("an extra line is a difference", d and "more lines" in d and
           "extra" in d, d)
    d = m.first_difference(base, (0, out, "fatal: cudaErrorInvalidValue\n"))
    expect("a CUDA error on the program's stderr is a difference",
           d and "cudaErrorInvalidValue" in d, d)
    d = m.first_difference(base, (0, out, "==42== gpumemtrace: "
                                          "cudaErrorInvalidValue seen\n"))
    expect("the tool's own stderr lines are not", d is None, d)

    prog = dict(m.DEFAULTS, name="p")
    clean = {"summary": {"errors": 0}, "errors": [], "leaks": []}
    expect("no report is an issue", m.report_issues(prog, []) ==
           ["no JSON report written"])
    expect("a clean report has no issue",
           m.report_issues(prog, [("a.json", clean)]) == [])
    err = {"summary": {"errors": 1}, "errors": [{"kind": "oob-write"}],
           "leaks": []}
    issues = m.report_issues(prog, [("a.json", clean), ("b.json", err)])
    expect("an error in any process's report is an issue",
           len(issues) == 1 and "oob-write x1" in issues[0], issues)
    expect("expected errors are no issue",
           m.report_issues(dict(prog, errors={"oob-write": 1}),
                           [("b.json", err)]) == [])
    leak = {"summary": {"errors": 0}, "errors": [],
            "leaks": [{"api": "cudaMalloc", "bytes": 4096, "count": 1}]}
    issues = m.report_issues(prog, [("a.json", leak)])
    expect("a leak is an issue", len(issues) == 1 and
           "cudaMalloc 4096" in issues[0], issues)
    expect("leaks: true ignores leaks",
           m.report_issues(dict(prog, leaks=True), [("a.json", leak)]) == [])
    expect("leaks: [api] allows that api only",
           m.report_issues(dict(prog, leaks=["cudaMalloc"]),
                           [("a.json", leak)]) == [] and
           m.report_issues(dict(prog, leaks=["cuMemCreate"]),
                           [("a.json", leak)]) != [])

    metric = dict(prog, metrics=[{"line": "RESULT bw", "key": "gbps",
                                  "min_ratio": 0.8,
                                  "option_sets": ["default"]}])
    issues = m.metric_issues(metric, "default", "RESULT bw gbps=2000\n",
                             "RESULT bw gbps=900\n")
    expect("a figure below min_ratio is an issue",
           len(issues) == 1 and "0.45x" in issues[0], issues)
    expect("metrics apply only to their option sets",
           m.metric_issues(metric, "kernel", "RESULT bw gbps=2000\n",
                           "RESULT bw gbps=900\n") == [])

    try:
        m.programs_from({"programs": [{"name": "x", "argz": []}]}, "/b")
        expect("an unknown manifest field is refused", False)
    except m.ManifestError:
        expect("an unknown manifest field is refused", True)
    progs = m.programs_from({"corpus": "c", "programs": [
        {"name": "tool"}, {"name": "py", "argv": ["{python}", "{dir}/p.py"]}]},
        "/base")
    expect("defaults and argv resolution",
           progs[0]["timeout"] == 120 and progs[0]["exit_code"] == 0 and
           m.resolve_argv(progs[0], "/py") == ["/base/tool"] and
           m.resolve_argv(progs[1], "/py") == ["/py", "/base/p.py"],
           [m.resolve_argv(p, "/py") for p in progs])

    cells = {("a", "plain"): {"status": "ok"},
             ("a", "default"): {"status": "same"},
             ("a", "kernel"): {"status": "differs",
                               "detail": "stdout line 1: 'x|y'"}}
    rows = m.table_rows(cells, [{"name": "a"}], ["default", "kernel"])
    md = m.table_markdown(rows, ["default", "kernel"])
    expect("markdown table marks and explains differences",
           "| a | ok | same | **differs** |" in md and
           "`a` / kernel: stdout line 1: 'x\\|y'" in md, md)
    text = m.table_text(rows, ["default", "kernel"])
    expect("text table has a row per program", "differs: stdout" in text and
           text.splitlines()[2].startswith("a "), text)


# A fake corpus program: behaves per FAKE_MODE (its name) and, "preloaded"
# or "injected", writes the report the tool would.
FAKE_PROGRAM = r'''#!/usr/bin/env python3
import json, os, re, sys
mode = os.path.basename(sys.argv[0])
gmt = os.environ.get("GMT_OPTIONS", "")
preloaded = bool(os.environ.get("LD_PRELOAD"))
injected = bool(os.environ.get("CUDA_INJECTION64_PATH"))
kernel = "check=kernel" in gmt
rc = 0
print("%s: start" % mode)
code = 1 if (mode == "rc_kernel" and kernel) else 0
print("cudaStreamAttachMemAsync -> %d (%s)" % (
    code, "cudaErrorInvalidValue" if code else "cudaSuccess"))
print("~ %.2f ms" % (1.0 + len(gmt)))
if mode == "bad_baseline":
    rc = 1
report = {"tool": "gpumemtrace", "summary": {"errors": 0}, "errors": [],
          "leaks": []}
if mode in ("leaky", "leaky_ok"):
    report["leaks"] = [{"api": "cudaMalloc", "bytes": 1024, "count": 1}]
write = preloaded or injected
if mode == "noreport_inject" and injected:
    write = False
if write:
    path = re.search(r"report_path=([^:]+)", gmt).group(1)
    with open(path.replace("%p", str(os.getpid())), "w") as f:
        json.dump(report, f)
sys.exit(rc)
'''


def write_exec(path, text):
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR | stat.S_IXGRP |
             stat.S_IXOTH)


def end_to_end(gpu_tests, work):
    shutil.rmtree(work, ignore_errors=True)
    bindir = os.path.join(work, "bin")
    corpus = os.path.join(work, "corpus")
    os.makedirs(bindir)
    os.makedirs(corpus)
    write_exec(os.path.join(bindir, "nvidia-smi"),
               "#!/bin/sh\necho 'GPU 0: Fake H200 (UUID: GPU-fake)'\n")
    names = ["good", "rc_kernel", "leaky", "leaky_ok", "noreport_inject",
             "bad_baseline"]
    for n in names:
        write_exec(os.path.join(corpus, n), FAKE_PROGRAM.replace(
            "#!/usr/bin/env python3", "#!" + sys.executable))
    manifest = {"corpus": "fake", "programs": [
        {"name": "good"}, {"name": "rc_kernel"}, {"name": "leaky"},
        {"name": "leaky_ok", "leaks": True}, {"name": "noreport_inject"},
        {"name": "bad_baseline"},
        {"name": "needs_two_gpus", "peers": True},
        {"name": "missing_binary"}]}
    with open(os.path.join(corpus, "corpus.json"), "w") as f:
        json.dump(manifest, f)
    lib = os.path.join(work, "libfake.so")
    open(lib, "w").close()

    def run(extra_env, with_corpus=True):
        env = dict(os.environ)
        for k in ("LD_PRELOAD", "GMT_OPTIONS", "CUDA_INJECTION64_PATH",
                  "GMT_CORPUS_DIR", "GMT_CORPUS_MANIFEST", "GMT_CORPUS_ONLY"):
            env.pop(k, None)
        env["PATH"] = bindir + os.pathsep + env.get("PATH", "/usr/bin:/bin")
        env["GMT_GPU_CASE_MODULES"] = "corpus"
        env.update(extra_env)
        results = os.path.join(work, "results.json")
        if os.path.exists(results):
            os.remove(results)
        argv = [sys.executable, gpu_tests, "--lib", lib, "--examples-dir",
                os.path.join(work, "examples"), "--out-dir",
                os.path.join(work, "out"), "--results", results,
                "--only", "corpus"]
        if with_corpus:
            argv += ["--corpus-dir", corpus]
        p = subprocess.run(argv, env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT)
        status = None
        if os.path.exists(results):
            with open(results) as f:
                status = json.load(f)["results"][0]["status"]
        return p.returncode, p.stdout.decode("utf-8", "replace"), status

    rc, text, status = run({})
    expect("a corpus with differences fails the case",
           rc == 1 and status == "fail", text[-3000:])
    table_path = os.path.join(work, "out", "corpus", "corpus_table.json")
    table = {}
    if os.path.exists(table_path):
        with open(table_path) as f:
            for p in json.load(f)["programs"]:
                table[p["name"]] = p
    expect("the table lists every program", sorted(table) == sorted(
        p["name"] for p in manifest["programs"]), sorted(table))

    def cell(name, label):
        prog = table.get(name, {})
        return (prog.get("plain") if label == "plain"
                else prog.get("runs", {}).get(label)) or {}

    expect("a clean program is the same everywhere",
           all(cell("good", s).get("status") == "same"
               for s in ("default", "kernel", "noguard", "inject")),
           table.get("good"))
    expect("a return code changed under check=kernel differs there only",
           cell("rc_kernel", "kernel").get("status") == "differs" and
           "cudaErrorInvalidValue" in cell("rc_kernel", "kernel").get(
               "detail", "") and
           cell("rc_kernel", "default").get("status") == "same",
           table.get("rc_kernel"))
    expect("a leak the manifest does not allow differs",
           cell("leaky", "default").get("status") == "differs" and
           "tool leaks" in cell("leaky", "default").get("detail", ""),
           table.get("leaky"))
    expect("a leak the manifest allows does not",
           cell("leaky_ok", "default").get("status") == "same",
           table.get("leaky_ok"))
    expect("a missing report under injection differs there only",
           cell("noreport_inject", "inject").get("status") == "differs" and
           cell("noreport_inject", "default").get("status") == "same",
           table.get("noreport_inject"))
    expect("a program failing without the tool is flagged",
           cell("bad_baseline", "plain").get("status") == "FAILED" and
           cell("bad_baseline", "default").get("status") == "same",
           table.get("bad_baseline"))
    expect("peers without two GPUs and missing binaries are skipped",
           cell("needs_two_gpus", "plain").get("status") == "skipped" and
           "not built" in cell("missing_binary", "plain").get("detail", ""),
           [table.get("needs_two_gpus"), table.get("missing_binary")])
    md = os.path.join(work, "out", "corpus", "corpus_table.md")
    expect("the markdown table is written", os.path.exists(md))
    # Each run's verdict is printed as it comes in, before the table.
    run_lines = text.split("program", 1)[0].splitlines()
    expect("each run's output verdict is printed as it comes in",
           any(re.search(r"\brc_kernel +kernel .*output differs: return "
                         r"code", line) for line in run_lines) and
           any(re.search(r"\bgood +default .*output same$", line)
               for line in run_lines), "\n".join(run_lines[-40:]))

    rc, text, status = run({"GMT_CORPUS_ONLY": "good,leaky_ok"})
    expect("a clean selection passes", rc == 0 and status == "pass",
           text[-3000:])
    rc, text, status = run({"GMT_CORPUS_ONLY": "good",
                            "GMT_CORPUS_OPTION_SETS": "kernel"})
    expect("option sets can be chosen", rc == 0 and "kernel" in text and
           "noguard" not in text.split("program", 1)[-1], text[-2000:])
    rc, text, status = run({}, with_corpus=False)
    expect("no corpus: the case skips", rc == 77 and status == "skip",
           text[-2000:])


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    gpu_tests = os.path.abspath(sys.argv[1])
    work = os.path.abspath(sys.argv[2])
    pure_checks(load_runner(gpu_tests))
    end_to_end(gpu_tests, work)
    passed = sum(checks)
    print("%d passed, %d failed" % (passed, len(checks) - passed))
    return 0 if passed == len(checks) else 1


if __name__ == "__main__":
    sys.exit(main())
