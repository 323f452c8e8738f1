#!/usr/bin/env bash
# The tool's overhead on the GPU machine, one script, one table:
#
#   churn        examples/churn --pairs N --max-size 1048576 --kernel-every
#                100: cudaMalloc/cudaFree pairs, 256 B .. 1 MiB, 64 live, a
#                small kernel every 100 pairs (us/pair); also run with
#                quarantine_bytes=0 (mode q0: every freed block checked on
#                its way back to CUDA) and with malloc_reuse=0 (mode noreuse:
#                no checked block serves a later cudaMalloc)
#   train_loop   examples/train_loop: 4 x 256 MiB buffers, 8 large kernels and
#                one cudaStreamSynchronize per iteration (ms/iter)
#   kernel_loop  examples/train_loop --small-kernels K --small-window-kib W:
#                K short kernels over W KiB windows of the same buffers per
#                iteration, plus 2 reductions and one sync (us/kernel: the
#                launch-heavy loop). The defaults make it 100 x 50 = 5000
#                kernels of ~12 us each on the H200 (the plain run's us/kernel
#                shows what they took); each kernel's arguments point into two
#                guarded buffers, so check=kernel checks their zones after it
#   pytorch      examples/pytorch_cnn.py: a small CNN, 64x3x64x64, two 3x3
#                convolutions (ms/step, from the
#                script's own "train_seconds=.. steps=.. ms_per_step=.." line
#                on stderr; the whole process's wall time if it has none)
#   startup      (startup_exit.sh) the whole-process wall time of
#                python -c "import torch; torch.zeros(1, device='cuda')" and
#                of examples/churn --pairs 1, tool (default options) minus
#                no tool, in seconds (target <= 0.3 s)
#   exit_live    (startup_exit.sh) examples/churn --live 10000 --keep: the
#                tool's own reachability scan time from its JSON report
#                (reachability.ms, target <= 100 ms)
#
# each without the tool (plain), with guard=0 (tracking only), with the
# default guard=1 check=sync, and with check=kernel (churn: and q0, noreuse; the
# others: and explain, the default with explain_faults=1, the driver's GPU
# core dump armed, whose ratio is taken against the default's; pytorch: and
# torch, tensor mode, target <= 1.15x), in interleaved rounds
# compared by median (one run after another on a GPU drifts by more than the
# tool costs; the verdict is the ratio of the medians, and beside it the
# median of each round's own ratio, "paired", which a box whose speed moves
# between rounds disturbs less); then the memory overhead; then each under compute-sanitizer
# memcheck once, with fewer iterations (the figures are per unit, so they
# compare), skipped when it is absent, disabled, out of budget, or over its
# per-run limit.
#
# Memory:
#   * churn --live N (N blocks live, sizes as in --pairs): host bytes per live
#     allocation (VmRSS growth over the plain run's, / N) and device bytes
#     added (cudaMemGetInfo growth over the plain run's) / user bytes;
#   * churn --pairs: device memory in use at the end of the loop over the
#     plain run's (redzones of the 64 live blocks and the quarantine) / the
#     user bytes then live;
#   * pytorch: device memory in use after training over the plain run's /
#     PyTorch's reserved bytes (its cudaMalloc segments), and the growth of
#     VmHWM; read by a small wrapper that runs the script with runpy and then
#     asks torch.
#   plus, from the tool's JSON reports (report=json): guard.guarded,
#   guard.quarantine_bytes and the devices' peak_bytes.
#
# Usage: perf_suite.sh LIB EXAMPLES_DIR [WORK_DIR]
#   LIB           libgpumemtrace.so
#   EXAMPLES_DIR  the folder holding churn, train_loop (a build's examples/ or
#                 the bundle's .device/examples) and pytorch_train.py
#   WORK_DIR      logs and reports (default a temporary folder)
# Environment (defaults in brackets):
#   OUT                    perf.tsv and perf.md go there too [WORK_DIR]
#   GMT_PERF_BUDGET_S      wall-clock budget of the whole suite [230]; runs
#                          that would start later are skipped, and each run's
#                          limit is cut to what is left
#   GMT_PERF_ROUNDS        interleaved rounds of the native workloads [3]
#   GMT_PERF_TORCH_ROUNDS  rounds that include PyTorch [1]
#   GMT_PERF_PAIRS         churn pairs [100000]
#   GMT_PERF_CHURN_MAX     churn's largest block in bytes [1048576]
#   GMT_PERF_CHURN_KERNEL_EVERY  churn pairs per small kernel [100]
#   GMT_PERF_TRAIN_ITERS   train_loop iterations [200]
#   GMT_PERF_MIB           train_loop / kernel_loop buffer MiB [256]
#   GMT_PERF_SMALL_KERNELS FMA kernels per kernel_loop iteration [48]
#   GMT_PERF_SMALL_ITERS   kernel_loop iterations [100]
#   GMT_PERF_SMALL_WINDOW_KIB  KiB each kernel_loop kernel covers [8192]
#   GMT_PERF_TORCH_STEPS   pytorch steps [1000]
#   GMT_PERF_LIVE          churn --live blocks [20000]; 0 skips
#   GMT_PERF_SAN           1 runs compute-sanitizer, 0 does not [1]
#   GMT_PERF_SAN_DIVISOR   its iterations are the others' / this [10]
#   GMT_PERF_SAN_LIMIT_S   limit of one compute-sanitizer run [45]
#   GMT_PERF_RUN_LIMIT_S   limit of one other run [90]
#   GMT_PERF_WORKLOADS     the workloads of the interleaved rounds, a subset
#                          of "churn train_loop kernel_loop pytorch" [all]
#   GMT_PERF_TORCH         1 runs PyTorch, 0 does not [1]
#   GMT_PERF_STARTUP       1 runs startup and exit_live, 0 does not [1];
#                          skipped when less than 30 s of the budget is left
#   GMT_PERF_STARTUP_ROUNDS, GMT_PERF_EXIT_LIVE  see startup_exit.sh [5, 10000]
#   GMT_PERF_TORCH_SCRIPT  the PyTorch program [EXAMPLES_DIR/pytorch_cnn.py]
#   GMT_PERF_TORCH_LD      LD_LIBRARY_PATH for PyTorch runs [LD_LIBRARY_PATH]
#   GMT_PYTHON             [python3]
#   COMPUTE_SANITIZER      its path [PATH, then /usr/local/cuda/bin]
# Output: a line per run, then the table (workload x mode: median per unit,
# runs, ratio to plain, target, PASS / MISS / info, paired ratio) and the
# memory lines;
# WORK_DIR/perf.tsv and WORK_DIR/perf.md (a README-ready markdown table with
# the date and the GPU), copied to $OUT; machine-readable lines
#   RESULT perf_<workload> <mode>=<ratio> ...
#   RESULT perf_targets met=<n> total=<n> failures=<n>
#   RESULT perf_memory ...
# Exit status: 1 if a run failed (crash, timeout of a non-sanitizer run, a
# tool report with errors or a native program's leaks, a train_loop checksum
# changed by the tool), else 0; a missed target is a MISS in the table, not a
# failure.
set -uo pipefail

usage="usage: perf_suite.sh LIB EXAMPLES_DIR [WORK_DIR]"
LIB="${1:?$usage}"
EXAMPLES="${2:?$usage}"
WORK="${3:-$(mktemp -d)}"
mkdir -p "$WORK" && WORK="$(cd "$WORK" && pwd)"
[ -f "$LIB" ] || { echo "perf_suite: missing $LIB" >&2; exit 1; }
[ -d "$EXAMPLES" ] || { echo "perf_suite: missing $EXAMPLES" >&2; exit 1; }
LIB="$(cd "$(dirname "$LIB")" && pwd)/$(basename "$LIB")"
EXAMPLES="$(cd "$EXAMPLES" && pwd)"
CHURN="$EXAMPLES/churn"
TRAIN="$EXAMPLES/train_loop"
TORCH_SCRIPT="${GMT_PERF_TORCH_SCRIPT:-$EXAMPLES/pytorch_cnn.py}"
PY="${GMT_PYTHON:-python3}"
TORCH_LD="${GMT_PERF_TORCH_LD-${LD_LIBRARY_PATH:-}}"
OUTDIR="${OUT:-}"

START="$(date +%s)"
DEADLINE=$((START + ${GMT_PERF_BUDGET_S:-230}))
ROUNDS="${GMT_PERF_ROUNDS:-3}"
WORKLOADS="${GMT_PERF_WORKLOADS:-churn train_loop kernel_loop pytorch}"
TORCH_ROUNDS="${GMT_PERF_TORCH_ROUNDS:-1}"
PAIRS="${GMT_PERF_PAIRS:-100000}"
CHURN_MAX="${GMT_PERF_CHURN_MAX:-1048576}"
CHURN_KERNEL_EVERY="${GMT_PERF_CHURN_KERNEL_EVERY:-100}"
ITERS="${GMT_PERF_TRAIN_ITERS:-200}"
MIB="${GMT_PERF_MIB:-256}"
SMALL_K="${GMT_PERF_SMALL_KERNELS:-48}"
SMALL_ITERS="${GMT_PERF_SMALL_ITERS:-100}"
SMALL_WINDOW_KIB="${GMT_PERF_SMALL_WINDOW_KIB:-8192}"
STEPS="${GMT_PERF_TORCH_STEPS:-1000}"
LIVE="${GMT_PERF_LIVE:-20000}"
SAN_DIV="${GMT_PERF_SAN_DIVISOR:-10}"
SAN_LIMIT="${GMT_PERF_SAN_LIMIT_S:-45}"
RUN_LIMIT="${GMT_PERF_RUN_LIMIT_S:-90}"
div() { local v=$(($1 / SAN_DIV)); [ "$v" -ge "$2" ] && echo "$v" || echo "$2"; }

SANITIZER=""
if [ "${GMT_PERF_SAN:-1}" = 1 ]; then
  SANITIZER="${COMPUTE_SANITIZER:-$(command -v compute-sanitizer 2>/dev/null)}"
  [ -n "$SANITIZER" ] || SANITIZER=/usr/local/cuda/bin/compute-sanitizer
  [ -x "$SANITIZER" ] || SANITIZER=""
fi
RUN_TORCH="${GMT_PERF_TORCH:-1}"
if [ "$RUN_TORCH" = 1 ] && [ ! -f "$TORCH_SCRIPT" ]; then
  echo "perf_suite: no $TORCH_SCRIPT: PyTorch rows skipped"
  RUN_TORCH=0
fi

# Runs the PyTorch program with runpy, then prints what it left on the GPU
# (and the process's peak RSS) for the memory table.
TORCH_WRAPPER="$WORK/torch_mem_wrapper.py"
cat >"$TORCH_WRAPPER" <<'PYEOF'
import runpy
import sys

script = sys.argv[1]
sys.argv = [script] + sys.argv[2:]
code = 0
try:
    runpy.run_path(script, run_name="__main__")
except SystemExit as e:
    code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)


def vm(key):
    try:
        for line in open("/proc/self/status"):
            if line.startswith(key):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


try:
    import torch
    if code == 0 and torch.cuda.is_available():
        torch.cuda.synchronize()
        free, total = torch.cuda.mem_get_info()
        print("perf_mem: torch_reserved=%d device_used=%d vmhwm=%d"
              % (torch.cuda.memory_reserved(), total - free, vm("VmHWM:")),
              file=sys.stderr)
except Exception as e:  # the figures are extra: never fail the run
    print("perf_mem: unavailable (%s)" % e, file=sys.stderr)
sys.exit(code)
PYEOF

RUNS="$WORK/runs.tsv"
printf 'workload\tmode\tround\trc\twall_s\tstdout\tstderr\treport\targs\n' >"$RUNS"
status=0

# run_one WORKLOAD MODE ROUND MIN_LEFT_S LIMIT_S CMD... : runs CMD plain, under
# the tool (MODE guard0 / sync / q0 / kernel: report=json in WORK), or under
# compute-sanitizer (MODE sanitizer), with a limit of LIMIT_S cut to the
# budget left; skipped (a line says so) when less than MIN_LEFT_S is left.
run_one() {
  local workload="$1" mode="$2" round="$3" min_left="$4" limit="$5"
  shift 5
  local label="$workload-$mode-$round" now left rc t0 t1 wall opts
  local out="$WORK/$label.out" err="$WORK/$label.err" ld="${LD_LIBRARY_PATH:-}"
  now="$(date +%s)"
  left=$((DEADLINE - now))
  if [ "$left" -lt "$min_left" ]; then
    printf '  %-26s skipped: %ss of the budget left\n' "$label" "$left"
    printf '%s\t%s\t%s\tskip\t0\t\t\t\t%s\n' "$workload" "$mode" "$round" \
      "$*" >>"$RUNS"
    return
  fi
  [ "$limit" -gt "$left" ] && limit="$left"
  [ "$workload" = pytorch ] && ld="$TORCH_LD"
  rm -f "$WORK/$label".*.json
  t0="$(date +%s.%N)"
  case "$mode" in
    plain)
      env -u LD_PRELOAD -u GMT_OPTIONS LD_LIBRARY_PATH="$ld" \
        PYTHONUNBUFFERED=1 timeout -k 5 "$limit" "$@" >"$out" 2>"$err"
      ;;
    sanitizer)
      env -u LD_PRELOAD -u GMT_OPTIONS LD_LIBRARY_PATH="$ld" \
        PYTHONUNBUFFERED=1 timeout -k 5 "$limit" "$SANITIZER" --tool memcheck \
        --print-limit 20 "$@" >"$out" 2>"$err"
      ;;
    *)
      case "$mode" in
        guard0) opts="guard=0" ;;
        sync) opts="guard=1:check=sync" ;;
        q0) opts="guard=1:check=sync:quarantine_bytes=0" ;;
        noreuse) opts="guard=1:check=sync:malloc_reuse=0" ;;
        kernel) opts="guard=1:check=kernel" ;;
        explain) opts="guard=1:check=sync:explain_faults=1" ;;
        torch) opts="guard=1:check=sync:torch=1" ;;
      esac
      env LD_LIBRARY_PATH="$ld" PYTHONUNBUFFERED=1 LD_PRELOAD="$LIB" \
        GMT_OPTIONS="report=json:report_path=$WORK/$label.%p.json:$opts" \
        timeout -k 5 "$limit" "$@" >"$out" 2>"$err"
      ;;
  esac
  rc=$?
  t1="$(date +%s.%N)"
  wall="$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')"
  local report
  report="$(ls "$WORK/$label".*.json 2>/dev/null | head -1)"
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$workload" "$mode" "$round" \
    "$rc" "$wall" "$out" "$err" "$report" "$*" >>"$RUNS"
  printf '  %-26s %7ss  %s' "$label" "$wall" "$(grep -hE \
    'us/pair|ms/iter|churn-live|ms_per_step' "$out" "$err" | head -1 |
    awk '{ print (length($0) > 100 ? "..." substr($0, length($0) - 96) : $0) }')"
  if [ "$rc" != 0 ]; then
    if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
      printf ' [timed out after %ss]' "$limit"
    else
      printf ' [exit %s: %s]' "$rc" "$(tail -c 200 "$err" | tr '\n' ' ')"
    fi
  fi
  echo
}

# The workloads, by name: run_workload NAME MODE ROUND
run_workload() {
  local name="$1" mode="$2" round="$3" lim="$RUN_LIMIT" min=5
  [ "$mode" = sanitizer ] && { lim="$SAN_LIMIT"; min=15; }
  case "$name" in
    churn)
      local n="$PAIRS"
      [ "$mode" = sanitizer ] && n="$(div "$PAIRS" 500)"
      run_one churn "$mode" "$round" "$min" "$lim" "$CHURN" --pairs "$n" \
        --max-size "$CHURN_MAX" --kernel-every "$CHURN_KERNEL_EVERY"
      ;;
    train_loop)
      local n="$ITERS"
      [ "$mode" = sanitizer ] && n="$(div "$ITERS" 5)"
      run_one train_loop "$mode" "$round" "$min" "$lim" "$TRAIN" \
        --iters "$n" --mib "$MIB"
      ;;
    kernel_loop)
      local n="$SMALL_ITERS"
      [ "$mode" = sanitizer ] && n="$(div "$SMALL_ITERS" 5)"
      run_one kernel_loop "$mode" "$round" "$min" "$lim" "$TRAIN" \
        --iters "$n" --mib "$MIB" --small-kernels "$SMALL_K" \
        --small-window-kib "$SMALL_WINDOW_KIB"
      ;;
    pytorch)
      if [ "$mode" = sanitizer ]; then
        run_one pytorch sanitizer "$round" 30 "$lim" "$PY" "$TORCH_SCRIPT" \
          --steps "$(div "$STEPS" 20)"
      else
        run_one pytorch "$mode" "$round" 25 "$lim" "$PY" "$TORCH_WRAPPER" \
          "$TORCH_SCRIPT" --steps "$STEPS"
      fi
      ;;
  esac
}

gpu="$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader \
  2>/dev/null | head -1)"
cuda="$(nvidia-smi 2>/dev/null | sed -n 's/.*CUDA Version: *\([0-9.]*\).*/\1/p' |
  head -1)"
echo "perf suite: $(date -u +%Y-%m-%dT%H:%M:%SZ), GPU: ${gpu:-unknown}," \
  "CUDA ${cuda:-?}; budget ${GMT_PERF_BUDGET_S:-230}s"
echo "  churn $PAIRS pairs (256 B .. $CHURN_MAX B, a kernel every" \
  "$CHURN_KERNEL_EVERY); train_loop $ITERS iterations x $MIB MiB buffers;" \
  "kernel_loop $SMALL_ITERS iterations x ($SMALL_K + 2) kernels over" \
  "$SMALL_WINDOW_KIB KiB;" \
  "pytorch $STEPS steps ($TORCH_ROUNDS round(s), $([ "$RUN_TORCH" = 1 ] &&
    echo on || echo off)); $ROUNDS interleaved rounds"
echo "  compute-sanitizer: ${SANITIZER:-not run (absent or GMT_PERF_SAN=0)};" \
  "library $LIB; logs $WORK"

# 1. Interleaved rounds; the order of the modes turns each round so that no
# mode always runs first. Churn also runs with quarantine_bytes=0 (q0) and
# without the reuse of checked cudaMalloc blocks (noreuse, malloc_reuse=0).
for round in $(seq 1 "$ROUNDS"); do
  echo "--- round $round"
  for w in churn train_loop kernel_loop pytorch; do
    case " $WORKLOADS " in *" $w "*) ;; *) continue ;; esac
    [ "$w" = pytorch ] && { [ "$RUN_TORCH" = 1 ] && [ "$round" -le "$TORCH_ROUNDS" ] || continue; }
    modes=(plain guard0 sync kernel explain)
    [ "$w" = churn ] && modes=(plain guard0 sync q0 noreuse kernel)
    [ "$w" = pytorch ] && modes=(plain guard0 sync kernel explain torch)
    n="${#modes[@]}"
    for i in $(seq 0 $((n - 1))); do
      run_workload "$w" "${modes[$(((i + round - 1) % n))]}" "$round"
    done
  done
done

# 2. Memory: N live blocks, plain, tracking only, guard zones.
if [ "$LIVE" -gt 0 ]; then
  echo "--- memory: churn --live $LIVE"
  for m in plain guard0 sync; do
    run_one churn_live "$m" 1 5 "$RUN_LIMIT" "$CHURN" --live "$LIVE"
  done
fi

# 3. compute-sanitizer memcheck, once each, cheapest first.
if [ -n "$SANITIZER" ]; then
  echo "--- compute-sanitizer memcheck (limit ${SAN_LIMIT}s a run)"
  for w in train_loop kernel_loop churn pytorch; do
    [ "$w" = pytorch ] && [ "$RUN_TORCH" != 1 ] && continue
    # Only the workloads of the rounds: a sanitizer row with no tool row
    # beside it has no ratio, and costs the device call its time.
    case " $WORKLOADS " in *" $w "*) ;; *) continue ;; esac
    run_workload "$w" sanitizer 1
  done
fi

# 4. The table.
GMT_PERF_TORCH_DESC="$(basename "$TORCH_SCRIPT")" \
GMT_PERF_CHURN_DESC="256 B-$CHURN_MAX B, a kernel every $CHURN_KERNEL_EVERY" \
  "$PY" - "$RUNS" "$WORK" "${gpu:-unknown GPU}" "${cuda:-?}" "$ROUNDS" \
  "$TORCH_ROUNDS" "$PAIRS" "$ITERS" "$MIB" "$SMALL_ITERS" "$SMALL_K" "$STEPS" \
  "$LIVE" "$(($(date +%s) - START))" <<'PYEOF'
import csv, json, os, re, statistics, sys, time

(runs_path, work, gpu, cuda, rounds, torch_rounds, pairs, iters, mib,
 small_iters, small_k, steps, live, elapsed) = sys.argv[1:15]
runs = list(csv.DictReader(open(runs_path), delimiter="\t",
                              quoting=csv.QUOTE_NONE))
failures = []

def text(path):
    try:
        return open(path, errors="replace").read() if path else ""
    except OSError:
        return ""

def report(run):
    try:
        return json.load(open(run["report"])) if run["report"] else None
    except (OSError, ValueError):
        return None

TORCH_LINE = re.compile(r"train_seconds=([0-9.]+) steps=(\d+) "
                        r"ms_per_step=([0-9.]+)")
UNITS = {"churn": (r"\(([0-9.]+) us/pair\)", "us/pair"),
         "train_loop": (r"\(([0-9.]+) ms/iter\)", "ms/iter"),
         "kernel_loop": (r"([0-9.]+) us/kernel", "us/kernel")}

# PyTorch: the script's own per-step time where every timed run has it, else
# the wall time of the whole process (import included) for all of them.
torch_runs = [r for r in runs if r["workload"] == "pytorch" and r["rc"] == "0"]
torch_own = bool(torch_runs) and all(
    TORCH_LINE.search(text(r["stderr"])) for r in torch_runs
    if r["mode"] != "sanitizer")

def value(run):
    """(figure, unit) of one successful run, or (None, unit)."""
    w = run["workload"]
    if w == "pytorch":
        m = TORCH_LINE.search(text(run["stderr"]))
        if torch_own and m:
            return float(m.group(3)), "ms/step"
        n = re.search(r"--steps (\d+)", run["args"])
        n = int(n.group(1)) if n else int(steps)
        return float(run["wall_s"]) * 1000.0 / max(n, 1), "ms/step (wall)"
    pattern, unit = UNITS[w]
    m = re.search(pattern, text(run["stdout"]))
    return (float(m.group(1)) if m else None), unit

# Per-run checks: exit status, the tool's report, checksums.
checksums = {}
for r in runs:
    label = "%s-%s-%s" % (r["workload"], r["mode"], r["round"])
    if r["rc"] == "skip":
        continue
    if r["rc"] != "0":
        why = ("timed out" if r["rc"] in ("124", "137")
               else "exit %s" % r["rc"])
        r["note"] = why
        if r["mode"] != "sanitizer":
            failures.append("%s: %s" % (label, why))
        continue
    if r["mode"] in ("guard0", "sync", "q0", "noreuse", "kernel"):
        rep = report(r)
        if rep is None:
            failures.append("%s: no JSON report" % label)
        else:
            s = rep.get("summary", {})
            if s.get("errors", 0):
                failures.append("%s: report has %s error(s)" % (label,
                                                               s["errors"]))
            if r["workload"] != "pytorch" and s.get("leaks", 0):
                failures.append("%s: report has %s leak(s)" % (label,
                                                              s["leaks"]))
    if r["mode"] == "sanitizer":
        both = text(r["stdout"]) + text(r["stderr"])
        m = re.search(r"ERROR SUMMARY: (\d+) error", both)
        r["note"] = ("%s error(s) reported" % m.group(1)) if m and \
            m.group(1) != "0" else ""
    if r["workload"] in ("train_loop", "kernel_loop") and \
            r["mode"] != "sanitizer":
        m = re.search(r"^train_loop: checksum (.*)$", text(r["stdout"]), re.M)
        checksums.setdefault(r["workload"], {}).setdefault(
            m.group(1) if m else None, []).append(label)
for w, sums in checksums.items():
    if len(sums) > 1:
        failures.append("%s: checksums differ between runs: %s" % (
            w, "; ".join("%s in %s" % (k, ",".join(v)) for k, v in
                         sums.items())))

# Targets: churn <= 1.15x with the default options, <= 1.5x with
# quarantine_bytes=0, <= 1.3x tracking only and with check=kernel;
# train_loop <= 1.10x tracking only and with check=sync; the kernel loop (5000
# ~12 us kernels) and PyTorch <= 1.03x with the default (check=sync), and with
# check=kernel, whose per-kernel checks cover only what each kernel's
# arguments reach: kernel loop <= 1.5x, PyTorch <= 1.10x; tracking only
# <= 1.10x / 1.05x. compute-sanitizer: info.
TARGETS = {("churn", "guard0"): 1.30, ("churn", "sync"): 1.15,
           ("churn", "q0"): 1.50, ("churn", "kernel"): 1.30,
           ("train_loop", "guard0"): 1.10, ("train_loop", "sync"): 1.10,
           ("kernel_loop", "guard0"): 1.10, ("kernel_loop", "sync"): 1.03,
           ("kernel_loop", "kernel"): 1.50,
           ("pytorch", "guard0"): 1.05, ("pytorch", "sync"): 1.03,
           ("pytorch", "kernel"): 1.10, ("pytorch", "torch"): 1.15}
# explain_faults (the GPU core dump armed) against the default's own run:
# <= 1.01x for a program that does not fault.
EXPLAIN_TARGET = 1.01
MODE_NAMES = {"plain": "no tool", "guard0": "guard=0 (tracking)",
              "sync": "guard=1 check=sync",
              "explain": "check=sync explain_faults=1 (vs check=sync)",
              "q0": "check=sync quarantine_bytes=0",
              "noreuse": "check=sync malloc_reuse=0",
              "kernel": "guard=1 check=kernel",
              "torch": "torch=1 (tensor mode)",
              "sanitizer": "compute-sanitizer memcheck"}
WORK_NAMES = {
    "churn": "churn: cudaMalloc/cudaFree, %s pairs, %s" % (
        pairs, os.environ.get("GMT_PERF_CHURN_DESC", "")),
    "train_loop": "train_loop: %s it. x 8 kernels, 4 x %s MiB" % (iters, mib),
    "kernel_loop": "kernel_loop: %s it. x (%s + 2) small kernels" % (
        small_iters, small_k),
    "pytorch": "%s, %s steps" % (
        os.environ.get("GMT_PERF_TORCH_DESC", "pytorch"), steps)}

def fmt(v):
    if v is None:
        return "-"
    return "%.4g" % v if v < 100 else "%.0f" % v

def per_round(these):
    """{round: figure} of the successful runs."""
    out = {}
    for r in these:
        if r["rc"] == "0":
            v, _ = value(r)
            if v is not None:
                out[r["round"]] = v
    return out

def paired_ratio(mine, base):
    """The median of each round's own ratio (a mode's run against the base
    run of the same round): the box's drift between rounds moves both sides
    of a round alike, where it moves the two medians apart."""
    ratios = [mine[k] / base[k] for k in mine if base.get(k)]
    return statistics.median(ratios) if len(ratios) >= 2 else None

rows = []
met = total = 0
results = {}
for w in ("churn", "train_loop", "kernel_loop", "pytorch"):
    mine = [r for r in runs if r["workload"] == w]
    if not mine:
        continue
    base = None
    meds = {}
    by_round = {}
    for mode in ("plain", "guard0", "sync", "q0", "noreuse", "kernel",
                 "explain",
                 "torch", "sanitizer"):
        these = [r for r in mine if r["mode"] == mode]
        if not these:
            continue
        vals, unit, notes = [], UNITS.get(w, ("", "ms/step"))[1], []
        for r in these:
            if r["rc"] == "0":
                v, unit = value(r)
                if v is not None:
                    vals.append(v)
            if r.get("note"):
                notes.append(r["note"])
            if r["rc"] == "skip":
                notes.append("skipped (budget)")
        med = statistics.median(vals) if vals else None
        meds[mode] = med
        by_round[mode] = per_round(these)
        if mode == "plain":
            base = med
        ratio = med / base if med is not None and base else None
        target = TARGETS.get((w, mode))
        if mode == "explain":
            ratio = (med / meds["sync"] if med is not None and
                     meds.get("sync") else None)
            target = EXPLAIN_TARGET
        verdict = "-" if mode == "plain" else "info"
        if target is not None:
            total += 1
            if ratio is None:
                verdict = "n/a"
            elif ratio <= target:
                verdict, met = "PASS", met + 1
            else:
                verdict = "MISS"
        if mode == "sanitizer" and these[0]["rc"] != "skip":
            n = re.search(r"--(?:pairs|iters|steps) (\d+)", these[0]["args"])
            notes.insert(0, "%s %s, once" % (n.group(1) if n else "?",
                                            "pairs" if w == "churn" else
                                            "steps" if w == "pytorch" else
                                            "iterations"))
        paired = None
        if mode not in ("plain", "sanitizer"):
            paired = paired_ratio(by_round[mode],
                                  by_round.get("sync" if mode == "explain"
                                               else "plain", {}))
        results.setdefault(w, {})[mode] = ratio
        rows.append(dict(workload=w, mode=mode, unit=unit, median=med,
                         runs=len(vals), ratio=ratio, paired=paired,
                         target=("<= %.2f" % target) if target else "-",
                         result=verdict, note="; ".join(dict.fromkeys(
                             n for n in notes if n))))

# Memory.
def parse_live(run):
    m = re.search(r"churn-live: (\d+) blocks, (\d+) user bytes, device "
                  r"\+(-?\d+) bytes, host \+(-?\d+) bytes", text(run["stdout"]))
    return tuple(int(x) for x in m.groups()) if m and run["rc"] == "0" \
        else None

memory = []  # (what, mode, figure, note)
live_runs = {r["mode"]: parse_live(r) for r in runs
             if r["workload"] == "churn_live"}
for r in runs:
    if r["workload"] == "churn_live" and r["rc"] not in ("0", "skip"):
        failures.append("churn_live-%s: exit %s" % (r["mode"], r["rc"]))
lp = live_runs.get("plain")
for mode in ("guard0", "sync"):
    lt = live_runs.get(mode)
    if lp and lt:
        n = lt[0]
        memory.append(("host bytes per live allocation (churn --live %d)" % n,
                       mode, "%.0f B" % ((lt[3] - lp[3]) / n),
                       "VmRSS growth over the plain run's"))
        memory.append(("device bytes added / user bytes (churn --live %d)" % n,
                       mode, "%.1f%%" % (100.0 * (lt[2] - lp[2]) / lt[1]),
                       "%.0f MiB over %.0f MiB" % ((lt[2] - lp[2]) / 2**20,
                                                   lt[1] / 2**20)))

def med_of(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None

pairs_end = {}
for r in runs:
    if r["workload"] == "churn" and r["mode"] != "sanitizer" and \
            r["rc"] == "0":
        m = re.search(r"churn: device \+(-?\d+) bytes at the end, (\d+) user "
                      r"bytes live", text(r["stdout"]))
        if m:
            pairs_end.setdefault(r["mode"], []).append(
                (int(m.group(1)), int(m.group(2))))
if "plain" in pairs_end:
    base = med_of([d for d, _ in pairs_end["plain"]])
    for mode in ("guard0", "sync", "q0", "noreuse"):
        if mode in pairs_end:
            d = med_of([d for d, _ in pairs_end[mode]])
            u = med_of([u for _, u in pairs_end[mode]])
            memory.append(("device bytes added / user bytes live (churn, "
                           "end of loop)", mode,
                           "%.0f%%" % (100.0 * (d - base) / u) if u else "-",
                           "%.0f MiB over %.0f MiB live: redzones + "
                           "quarantine" % ((d - base) / 2**20, u / 2**20)))

def guard_json(workload, mode):
    for r in runs:
        if r["workload"] == workload and r["mode"] == mode and \
                r["rc"] == "0":
            rep = report(r)
            if rep:
                g = rep.get("guard", {})
                peak = sum(d.get("peak_bytes", 0) for d in
                           rep.get("devices", []) if d.get("index", 0) >= 0)
                return g, peak
    return None, None

torch_mem = {}
for r in runs:
    if r["workload"] == "pytorch" and r["mode"] != "sanitizer" and \
            r["rc"] == "0":
        m = re.search(r"perf_mem: torch_reserved=(\d+) device_used=(\d+) "
                      r"vmhwm=(\d+)", text(r["stderr"]))
        if m:
            torch_mem.setdefault(r["mode"], []).append(
                tuple(int(x) for x in m.groups()))
if "plain" in torch_mem:
    p = [med_of([t[i] for t in torch_mem["plain"]]) for i in range(3)]
    for mode in ("guard0", "sync", "kernel"):
        if mode in torch_mem:
            t = [med_of([x[i] for x in torch_mem[mode]]) for i in range(3)]
            memory.append(("device bytes added / PyTorch reserved bytes",
                           mode, "%.1f%%" % (100.0 * (t[1] - p[1]) / p[0])
                           if p[0] else "-",
                           "%.1f MiB over %.1f MiB reserved" % (
                               (t[1] - p[1]) / 2**20, p[0] / 2**20)))
            memory.append(("host peak RSS added (PyTorch)", mode,
                           "%.1f MiB" % ((t[2] - p[2]) / 2**20),
                           "VmHWM over the plain run's"))
for w in ("churn", "pytorch"):
    g, peak = guard_json(w, "sync")
    if g is not None:
        memory.append(("guard report (%s, check=sync)" % w, "sync",
                       "%s guarded" % g.get("guarded", "?"),
                       "quarantine %.1f MiB at exit, peak %.1f MiB user, "
                       "%s checks" % (g.get("quarantine_bytes", 0) / 2**20,
                                       (peak or 0) / 2**20,
                                       g.get("checks", "?"))))

# Print, TSV, markdown.
head = ("workload", "mode", "unit", "median", "runs", "ratio", "target",
        "result", "note", "paired")
lines = []
lines.append("%-12s %-27s %-15s %10s %4s %7s %7s %6s %6s  %s" % (
    head[:8] + head[9:] + head[8:9]))
for r in rows:
    lines.append("%-12s %-27s %-15s %10s %4d %7s %7s %6s %6s  %s" % (
        r["workload"], MODE_NAMES[r["mode"]], r["unit"], fmt(r["median"]),
        r["runs"], "%.2f" % r["ratio"] if r["ratio"] is not None else "-",
        r["target"], r["result"],
        "%.2f" % r["paired"] if r["paired"] is not None else "-", r["note"]))
print()
print("=== perf suite: %s, CUDA %s, %s; medians of %s interleaved rounds "
      "(PyTorch %s); ratio = mode / no tool (the verdict's); paired = the "
      "median of each round's own ratio" % (
          gpu, cuda, time.strftime("%Y-%m-%d"), rounds, torch_rounds))
print("\n".join(lines))
print("targets met: %d of %d" % (met, total))
if memory:
    print("memory:")
    for what, mode, fig, note in memory:
        print("  %-57s %-20s %11s  %s" % (what, MODE_NAMES[mode], fig, note))
print("suite wall time: %ss" % elapsed)

with open(os.path.join(work, "perf.tsv"), "w") as f:
    f.write("\t".join(head) + "\n")
    for r in rows:
        f.write("\t".join(str(x) for x in (
            r["workload"], r["mode"], r["unit"],
            "" if r["median"] is None else "%.6g" % r["median"], r["runs"],
            "" if r["ratio"] is None else "%.4f" % r["ratio"], r["target"],
            r["result"], r["note"],
            "" if r["paired"] is None else "%.4f" % r["paired"])) + "\n")
    for what, mode, fig, note in memory:
        f.write("\t".join(("memory", mode, what, fig, "", "", "-", "info",
                           note, "")) + "\n")

md = []
md.append("### Overhead on the GPU (%s, %s, CUDA %s)" % (
    time.strftime("%Y-%m-%d"), gpu, cuda))
md.append("")
md.append("`benchmarks/gpu/perf_suite.sh` (from `tools/device_run.sh`, step "
          "`perf-suite`): medians of %s interleaved rounds (PyTorch: %s); "
          "ratio to the same run without the tool (of the medians: the "
          "verdict's); paired, the median of each round's own ratio; "
          "compute-sanitizer with fewer iterations, per unit." % (
              rounds, torch_rounds))
md.append("")
md.append("| workload | mode | per unit | ratio | paired | target | |")
md.append("| --- | --- | --- | --- | --- | --- | --- |")
last = None
for r in rows:
    name = WORK_NAMES[r["workload"]] if r["workload"] != last else ""
    last = r["workload"]
    per = "-" if r["median"] is None else "%s %s" % (fmt(r["median"]),
                                                     r["unit"])
    ratio = "-" if r["ratio"] is None else "%.2f×" % r["ratio"]
    result = r["result"] if r["result"] not in ("-", "info") else ""
    if r["note"]:
        result = (result + " " if result else "") + "(%s)" % r["note"]
    paired = "" if r["paired"] is None else "%.2f×" % r["paired"]
    md.append("| %s | %s | %s | %s | %s | %s | %s |" % (
        name, MODE_NAMES[r["mode"]], per, ratio, paired,
        r["target"].replace("<=", "≤") if r["target"] != "-" else "", result))
if memory:
    md.append("")
    md.append("| memory | mode | figure | how |")
    md.append("| --- | --- | --- | --- |")
    for what, mode, fig, note in memory:
        md.append("| %s | %s | %s | %s |" % (what, MODE_NAMES[mode], fig,
                                             note))
open(os.path.join(work, "perf.md"), "w").write("\n".join(md) + "\n")

for w, by_mode in results.items():
    print("RESULT perf_%s %s" % (w, " ".join(
        "%s=%s" % (m, "%.3f" % v if v is not None else "nan")
        for m, v in by_mode.items() if m != "plain")))
print("RESULT perf_targets met=%d total=%d failures=%d" % (met, total,
                                                        len(failures)))
if memory:
    print("RESULT perf_memory %s" % " | ".join(
        "%s [%s] %s" % (w, m, f) for w, m, f, _ in memory
        if not w.startswith("guard report")))
if failures:
    print("FAILURES:")
    for f in failures:
        print("  " + f)
sys.exit(1 if failures else 0)
PYEOF
status=$?

# 5. Start-up and exit: the startup and exit_live workloads
# (startup_exit.sh, beside this script; its own table and RESULT lines).
if [ "${GMT_PERF_STARTUP:-1}" = 1 ]; then
  STARTUP_SH="$(dirname "$0")/startup_exit.sh"
  left=$((DEADLINE - $(date +%s)))
  if [ ! -f "$STARTUP_SH" ]; then
    echo "perf_suite: no $STARTUP_SH: start-up and exit rows skipped"
  elif [ "$left" -lt 30 ] && [ -z "${GMT_PERF_STARTUP_ROUNDS:-}" ]; then
    echo "perf_suite: ${left}s of the budget left: start-up and exit rows" \
      "skipped (set GMT_PERF_STARTUP_ROUNDS to run them anyway)"
  else
    GMT_PERF_TORCH="$RUN_TORCH" GMT_PERF_TORCH_LD="$TORCH_LD" \
      GMT_PYTHON="$PY" GMT_PERF_RUN_LIMIT_S="$RUN_LIMIT" \
      bash "$STARTUP_SH" "$LIB" "$EXAMPLES" "$WORK" || status=1
  fi
fi

if [ -n "$OUTDIR" ]; then
  mkdir -p "$OUTDIR" && cp "$WORK/perf.tsv" "$WORK/perf.md" "$OUTDIR/" \
    2>/dev/null
fi
exit "$status"
