#!/usr/bin/env bash
# Start-up and exit cost of the tool, the perf suite's last two workloads
# (benchmarks/gpu/perf_suite.sh runs this; it also runs alone):
#
#   startup    the whole-process wall time of a trivial program, without the
#              tool and with it (default options, LD_PRELOAD only), in
#              interleaved rounds; prints the median difference in seconds
#              (target <= 0.3 s) for
#                * python -c "import torch; torch.zeros(1, device='cuda')"
#                  (skipped without PyTorch), and
#                * examples/churn --pairs 1 (a native CUDA program: context,
#                  one cudaMalloc/cudaFree);
#   tool time  the tool's own one-time work, as it logs it at exit at
#              verbosity=1 ("tool time: start-up ... ms (engine, CUPTI, guard
#              kernels), exit ... ms (reachability, report, NVML wait)"): the
#              median per phase over the tool runs of each workload (the
#              tool rows run with verbosity=1 for it). Free of the import's
#              spread, which whole-process wall times carry;
#   exit_live  examples/churn --live N --keep (N = 10000 blocks live at exit,
#              half still reachable, half lost) under the tool with
#              report=json: the tool's own measured reachability scan time
#              (the report's reachability.ms; target <= 100 ms), median over
#              the rounds, and the whole process's wall time against the
#              plain run's.
#
# Usage: startup_exit.sh LIB EXAMPLES_DIR [WORK_DIR]
# Environment (defaults in brackets):
#   GMT_PERF_STARTUP_ROUNDS  interleaved rounds [5]
#   GMT_PERF_EXIT_LIVE       blocks live at exit [10000]
#   GMT_PERF_TORCH           1 runs the PyTorch row, 0 does not [1]
#   GMT_PERF_TORCH_LD        LD_LIBRARY_PATH for PyTorch [LD_LIBRARY_PATH]
#   GMT_PYTHON               [python3]
#   GMT_PERF_RUN_LIMIT_S     limit of one run [90]
# Output: a line per run, a table, and
#   RESULT perf_startup torch_added_s=<s> native_added_s=<s>
#   RESULT perf_exit_live reachability_ms=<ms> added_s=<s> blocks=<n>
#   RESULT perf_startup_targets met=<n> total=<n> failures=<n>
# Exit status: 1 if a run failed (crash, timeout, no JSON report), else 0; a
# missed target is a MISS, not a failure.
set -uo pipefail

usage="usage: startup_exit.sh LIB EXAMPLES_DIR [WORK_DIR]"
LIB="${1:?$usage}"
EXAMPLES="${2:?$usage}"
WORK="${3:-$(mktemp -d)}"
mkdir -p "$WORK" && WORK="$(cd "$WORK" && pwd)"
LIB="$(cd "$(dirname "$LIB")" && pwd)/$(basename "$LIB")"
CHURN="$(cd "$EXAMPLES" && pwd)/churn"
ROUNDS="${GMT_PERF_STARTUP_ROUNDS:-5}"
LIVE="${GMT_PERF_EXIT_LIVE:-10000}"
PY="${GMT_PYTHON:-python3}"
TORCH_LD="${GMT_PERF_TORCH_LD-${LD_LIBRARY_PATH:-}}"
LIMIT="${GMT_PERF_RUN_LIMIT_S:-90}"
RUN_TORCH="${GMT_PERF_TORCH:-1}"
if [ "$RUN_TORCH" = 1 ] &&
  ! env LD_LIBRARY_PATH="$TORCH_LD" "$PY" -c "import torch" 2>/dev/null; then
  echo "startup_exit: no PyTorch for $PY: the PyTorch start-up row is skipped"
  RUN_TORCH=0
fi
[ -x "$CHURN" ] || { echo "startup_exit: missing $CHURN" >&2; exit 1; }

RUNS="$WORK/startup_runs.tsv"
printf 'workload\tmode\tround\trc\twall_s\treport\n' >"$RUNS"

# run WORKLOAD MODE ROUND CMD...: MODE plain (no tool) or tool (LD_PRELOAD;
# default options, except exit_live's report=json).
run() {
  local workload="$1" mode="$2" round="$3"
  shift 3
  local label="startup-$workload-$mode-$round" ld="${LD_LIBRARY_PATH:-}" rc
  local t0 t1 wall report=""
  [ "$workload" = torch ] && ld="$TORCH_LD"
  rm -f "$WORK/$label".*.json
  t0="$(date +%s.%N)"
  if [ "$mode" = plain ]; then
    env -u LD_PRELOAD -u GMT_OPTIONS LD_LIBRARY_PATH="$ld" \
      timeout -k 5 "$LIMIT" "$@" >"$WORK/$label.out" 2>"$WORK/$label.err"
  elif [ "$workload" = exit_live ]; then
    env LD_LIBRARY_PATH="$ld" LD_PRELOAD="$LIB" \
      GMT_OPTIONS="report=json:report_path=$WORK/$label.%p.json:verbosity=1" \
      timeout -k 5 "$LIMIT" "$@" >"$WORK/$label.out" 2>"$WORK/$label.err"
  else
    env LD_LIBRARY_PATH="$ld" LD_PRELOAD="$LIB" GMT_OPTIONS=verbosity=1 \
      timeout -k 5 "$LIMIT" "$@" >"$WORK/$label.out" 2>"$WORK/$label.err"
  fi
  rc=$?
  t1="$(date +%s.%N)"
  wall="$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')"
  report="$(ls "$WORK/$label".*.json 2>/dev/null | head -1)"
  printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$workload" "$mode" "$round" "$rc" \
    "$wall" "$report" >>"$RUNS"
  printf '  %-30s %7ss%s\n' "$label" "$wall" \
    "$([ "$rc" = 0 ] || echo " [exit $rc: $(tail -c 160 "$WORK/$label.err" |
      tr '\n' ' ')]")"
}

echo "--- start-up and exit: $ROUNDS interleaved rounds; exit_live $LIVE" \
  "blocks; PyTorch $([ "$RUN_TORCH" = 1 ] && echo on || echo off)"
for round in $(seq 1 "$ROUNDS"); do
  # The order turns each round so that neither mode always runs first.
  if [ $((round % 2)) = 1 ]; then modes="plain tool"; else modes="tool plain"; fi
  for mode in $modes; do
    if [ "$RUN_TORCH" = 1 ]; then
      run torch "$mode" "$round" "$PY" -c \
        "import torch; torch.zeros(1, device='cuda')"
    fi
    run native "$mode" "$round" "$CHURN" --pairs 1
    run exit_live "$mode" "$round" "$CHURN" --live "$LIVE" --keep
  done
done

"$PY" - "$RUNS" "$LIVE" "$WORK" <<'PYEOF'
import csv, json, os, re, statistics, sys

runs = list(csv.DictReader(open(sys.argv[1]), delimiter="\t",
                           quoting=csv.QUOTE_NONE))
live = sys.argv[2]
work = sys.argv[3]
failures = []
walls = {}
by_round = {}
scan_ms = []
# "tool time: start-up 4.2 ms (engine 1.0, CUPTI 2.1, guard kernels 1.1),
# exit 51.3 ms (reachability 40.2, report 11.1, of which waiting for NVML 0.0)"
tool_time_re = re.compile(
    r"tool time: start-up ([0-9.]+) ms \(engine ([0-9.]+), CUPTI ([0-9.]+), "
    r"guard kernels ([0-9.]+)\), exit ([0-9.]+) ms \(reachability ([0-9.]+), "
    r"report ([0-9.]+), of which waiting for NVML ([0-9.]+)\)")
tool_time_fields = ("start-up", "engine", "CUPTI", "guard kernels", "exit",
                    "reachability", "report", "NVML wait")
tool_times = {}
for r in runs:
    label = "%s-%s-%s" % (r["workload"], r["mode"], r["round"])
    if r["rc"] != "0":
        failures.append("%s: exit %s" % (label, r["rc"]))
        continue
    walls.setdefault((r["workload"], r["mode"]), []).append(float(r["wall_s"]))
    by_round.setdefault((r["workload"], r["round"]), {})[r["mode"]] = float(
        r["wall_s"])
    if r["mode"] == "tool":
        try:
            err = open(os.path.join(work, "startup-%s.err" % label)).read()
        except OSError:
            err = ""
        m = tool_time_re.search(err)
        if m:
            tool_times.setdefault(r["workload"], []).append(
                [float(x) for x in m.groups()])
        else:
            failures.append("%s: no 'tool time:' line at verbosity=1" % label)
    if r["workload"] == "exit_live" and r["mode"] == "tool":
        try:
            rep = json.load(open(r["report"]))
            reach = rep["reachability"]
            if not reach.get("ran"):
                failures.append("%s: the reachability scan did not run" %
                                label)
            else:
                scan_ms.append(float(reach["ms"]))
        except (OSError, ValueError, KeyError, TypeError):
            failures.append("%s: no JSON report with reachability" % label)

def added(workload):
    plain = walls.get((workload, "plain"))
    tool = walls.get((workload, "tool"))
    if not plain or not tool:
        return None, None, None
    p, t = statistics.median(plain), statistics.median(tool)
    return p, t, t - p

def paired(workload):
    # The median of each round's own difference: a slow round (a cold page
    # cache, another process) moves both of its runs.
    d = [m["tool"] - m["plain"] for (w, _), m in by_round.items()
         if w == workload and "tool" in m and "plain" in m]
    return statistics.median(d) if d else None

rows = []
met = total = 0
def verdict(value, target):
    global met, total
    if value is None:
        return "-"
    total += 1
    if value <= target:
        met += 1
        return "PASS"
    return "MISS"

for workload, what in (("torch", "python -c \"import torch; "
                        "torch.zeros(1, device='cuda')\""),
                       ("native", "examples/churn --pairs 1")):
    p, t, d = added(workload)
    if p is None:
        continue
    rows.append(("startup", what, "%.3f s" % p, "%.3f s" % t,
                 "+%.3f s" % d, "<= 0.3 s", verdict(d, 0.3)))
    pd = paired(workload)
    if pd is not None:
        rows.append(("startup", "  the same, median of each round's difference",
                     "-", "-", "%+.3f s" % pd, "-", "info"))
p, t, d = added("exit_live")
ms = statistics.median(scan_ms) if scan_ms else None
if p is not None:
    rows.append(("exit_live", "churn --live %s --keep: wall" % live,
                 "%.3f s" % p, "%.3f s" % t, "+%.3f s" % d, "-", "info"))
rows.append(("exit_live", "reachability scan (report's reachability.ms)",
             "-", "-" if ms is None else "%.1f ms" % ms, "-", "<= 100 ms",
             verdict(ms, 100.0)))

print()
print("=== start-up and exit: medians of the rounds; added = tool - no tool")
fmt = "%-10s %-56s %10s %10s %10s %10s %5s"
print(fmt % ("workload", "what", "no tool", "tool", "added", "target",
             "result"))
for row in rows:
    print(fmt % row)
if tool_times:
    print()
    print("=== the tool's own time (its 'tool time:' line at exit), ms, "
          "medians of the tool runs")
    tfmt = "%-10s" + " %13s" * len(tool_time_fields)
    print(tfmt % (("workload",) + tool_time_fields))
    for workload in ("torch", "native", "exit_live"):
        values = tool_times.get(workload)
        if not values:
            continue
        med = [statistics.median(v[i] for v in values)
               for i in range(len(tool_time_fields))]
        print(tfmt % ((workload,) + tuple("%.1f" % x for x in med)))
        print("RESULT perf_tool_time workload=%s startup_ms=%.1f exit_ms=%.1f" %
              (workload, med[0], med[4]))
_, _, torch_d = added("torch")
_, _, native_d = added("native")
_, _, live_d = added("exit_live")
f = lambda v: "nan" if v is None else "%.3f" % v
print("RESULT perf_startup torch_added_s=%s native_added_s=%s" % (
    f(torch_d), f(native_d)))
print("RESULT perf_exit_live reachability_ms=%s added_s=%s blocks=%s" % (
    "nan" if ms is None else "%.1f" % ms, f(live_d), live))
print("RESULT perf_startup_targets met=%d total=%d failures=%d" % (
    met, total, len(failures)))
if failures:
    print("FAILURES:")
    for x in failures:
        print("  " + x)
sys.exit(1 if failures else 0)
PYEOF
