#!/usr/bin/env bash
# Runs the GPU checks on the device machine from the bundle that
# tools/device_bundle.sh made here. Run it in the repo root with .device/
# carried:
#
#   bash tools/device_run.sh
#
# Steps (each one may fail; the others still run):
#   nvidia-smi       the GPU, driver and CUDA version
#   preflight        ldd of every bundled program: nothing may be missing
#   gpu-tests        tests/gpu/gpu_tests.py over every example (not the
#                    PyTorch loss comparison, not the corpus)
#   corpus           the differential corpus (.device/corpus): each program
#                    with and without the tool, under several option sets
#   pytorch          examples/pytorch_train.py without and with the tool: the
#                    final loss must be identical
#   perf-suite       benchmarks/gpu/perf_suite.sh: churn (alloc/free pairs),
#                    train_loop (large kernels), train_loop --small-kernels
#                    (launch-heavy) and pytorch_cnn.py, each without the
#                    tool, with guard=0, check=sync and check=kernel (the
#                    CNN also in tensor mode, torch=1)
#                    (interleaved rounds, medians) and under compute-sanitizer
#                    memcheck; memory overhead (host bytes per live
#                    allocation, device bytes added / user bytes); one table
#                    with the overhead targets (PASS / MISS)
#   examples-text    every example under the tool with the text report
#   unit:*           the test binaries bundled into .device/unit/
#   bench:*          the benchmark executables bundled into .device/bench/
# then prints a summary table. Exit status 1 if any step failed.
#
# All steps take longer than one device call may (the GPU tests alone ran
# ~7 min on an H200, 2026-12-05): run them in two calls, e.g.
#   GMT_SKIP_STEPS=corpus,pytorch,perf-suite,examples-text,unit,bench
#   GMT_SKIP_STEPS=gpu-tests
#
# Output: $OUT (set by the device tool; default ./out) gets summary.txt,
# gpu-tests.json, corpus_table.md/.json, pytorch.json, perf.txt (the perf-suite log), perf.tsv and
# perf.md (its table; perf.md is README-ready) and device-logs.tgz (every log
# and JSON report; GMT_KEEP_LOGS=1 keeps them unpacked in $OUT/logs as well).
# Environment: GMT_BUNDLE (default .device), GMT_PYTHON (default python3),
# GMT_RUN_BUDGET_S (default 540: steps that would start later are skipped),
# GMT_GPU_TESTS_LIMIT_S (the gpu-tests step's limit, default 480),
# GMT_GPU_TESTS_ARGS (more gpu_tests.py arguments, e.g. "--only a,b" to rerun
# some cases), GMT_CORPUS_LIMIT_S (the corpus step's, default 300),
# GMT_PERF_LIMIT_S (the perf-suite step's limit, default 240; the suite's own
# budget is 15 s less, or less again when the run budget has less left;
# perf_suite.sh reads its other GMT_PERF_* settings itself), GMT_SKIP_STEPS
# (comma-separated step names not to run, e.g. "pytorch,perf-suite"; "unit"
# and "bench" name every unit:* and bench:* step; they show as SKIP),
# GMT_EXTRA_OPTIONS (appended to GMT_OPTIONS by the GPU tests),
# GMT_PERF_TORCH_SCRIPT (the perf suite's PyTorch program, default
# examples/pytorch_cnn.py).
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT" || exit 1
B="$(cd "${GMT_BUNDLE:-.device}" 2>/dev/null && pwd)" || {
  echo "device_run: no bundle at ${GMT_BUNDLE:-.device}: run" \
    "tools/device_bundle.sh here and carry .device" >&2
  exit 1
}
OUT="${OUT:-$ROOT/out}"
mkdir -p "$OUT" && OUT="$(cd "$OUT" && pwd)"
LOGS="$OUT/logs"
rm -rf "$LOGS" && mkdir -p "$LOGS"
ROWS="$LOGS/rows.tsv"
: >"$ROWS"
PY="${GMT_PYTHON:-python3}"
LIB="$B/lib/libgpumemtrace.so"
# Scripts: the repo's copies (current) where they travelled, else the bundle's.
GPU_TESTS="$ROOT/tests/gpu/gpu_tests.py"
[ -f "$GPU_TESTS" ] || GPU_TESTS="$B/tests/gpu_tests.py"
PERF_SH="$ROOT/benchmarks/gpu/perf_suite.sh"
[ -f "$PERF_SH" ] || PERF_SH="$B/bench/perf_suite.sh"
TORCH_PY="$ROOT/examples/pytorch_train.py"
[ -f "$TORCH_PY" ] || TORCH_PY="$B/examples/pytorch_train.py"
# The perf suite's PyTorch workload: the CNN whose step the overhead targets
# are stated for (pytorch_train.py, an MLP, is the loss comparison's).
CNN_PY="$ROOT/examples/pytorch_cnn.py"
[ -f "$CNN_PY" ] || CNN_PY="$B/examples/pytorch_cnn.py"
START="$(date +%s)"
DEADLINE=$((START + ${GMT_RUN_BUDGET_S:-540}))

# Test binaries built here find their fixtures in this checkout, not at the
# build machine's path compiled into them.
export GMT_CUDACORE_FIXTURES="$ROOT/tests/fixtures/cudacore"

# The tool's own dependencies (Abseil, libdw, ...) come from the bundle.
BASE_LD="${LD_LIBRARY_PATH:-}"
export LD_LIBRARY_PATH="$B/lib${BASE_LD:+:$BASE_LD}"
TORCH_LD="$LD_LIBRARY_PATH"
# The examples need libcudart.so.13 etc.; if the loader does not find them,
# add the toolkit's folder (not for PyTorch, which brings its own).
if ldd "$B/examples/leak_runtime" 2>/dev/null | grep -q 'not found'; then
  for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib \
    /usr/local/cuda-13*/lib64; do
    if [ -e "$d/libcudart.so.13" ]; then
      LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$d"
      break
    fi
  done
fi
NATIVE_LD="$LD_LIBRARY_PATH"
# For the step functions, which run in a child bash (under timeout).
export B LIB LOGS NATIVE_LD GPU_TESTS PERF_SH

# row NAME STATUS SECONDS DETAIL
row() { printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "${4//$'\t'/ }" >>"$ROWS"; }

# step NAME LIMIT_S CMD... : runs CMD with its output in $LOGS/NAME.log,
# records PASS (exit 0), SKIP (exit 77) or FAIL. Sets STEP_RC.
step() {
  local name="$1" limit="$2" now left t0 t1 secs status
  shift 2
  case ",${GMT_SKIP_STEPS:-}," in
    *",$name,"* | *",${name%%:*},"*)
      echo "skipped: in GMT_SKIP_STEPS" >"$LOGS/$name.log"
      STEP_RC=77 STEP_STATUS=SKIP STEP_SECS=0
      echo "=== $name: skipped (GMT_SKIP_STEPS)"
      return
      ;;
  esac
  now="$(date +%s)"
  left=$((DEADLINE - now))
  if [ "$left" -le 5 ]; then
    echo "skipped: out of time (GMT_RUN_BUDGET_S)" >"$LOGS/$name.log"
    STEP_RC=77 STEP_STATUS=SKIP STEP_SECS=0
    echo "=== $name: skipped, out of time"
    return
  fi
  [ "$limit" -gt "$left" ] && limit="$left"
  echo "=== $name (limit ${limit}s)"
  t0="$(date +%s.%N)"
  timeout -k 10 "$limit" "$@" >"$LOGS/$name.log" 2>&1
  STEP_RC=$?
  t1="$(date +%s.%N)"
  secs="$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')"
  case "$STEP_RC" in
    0) status=PASS ;;
    77) status=SKIP ;;
    124 | 137) status=FAIL; echo "timed out after ${limit}s" >>"$LOGS/$name.log" ;;
    *) status=FAIL ;;
  esac
  STEP_STATUS="$status"
  STEP_SECS="$secs"
  echo "    -> $status (exit $STEP_RC, ${secs}s)"
}

# --- nvidia-smi ----------------------------------------------------------------
step nvidia-smi 60 bash -c 'nvidia-smi && nvidia-smi -L &&
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader'
gpu_line="$(tail -1 "$LOGS/nvidia-smi.log" 2>/dev/null)"
row nvidia-smi "$STEP_STATUS" "$STEP_SECS" "$gpu_line"
head -20 "$LOGS/nvidia-smi.log"

# --- preflight -------------------------------------------------------------------
preflight() {
  echo "scripts: $GPU_TESTS $PERF_SH"
  echo "bundle: $(head -3 "$B/MANIFEST.txt" 2>/dev/null | tail -2 | tr '\n' ' ')"
  echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
  local bad=0 f
  [ -f "$LIB" ] || { echo "missing $LIB"; bad=1; }
  while read -r f; do
    head -c4 "$f" | grep -q ELF || continue
    if ldd "$f" 2>&1 | grep -q 'not found'; then
      echo "$(basename "$f"): $(ldd "$f" 2>&1 | grep 'not found' |
        awk '{print $1}' | tr '\n' ' ')"
      bad=1
    fi
  done < <(find "$B" -type f \( -path '*/examples/*' -o -path '*/unit/*' -o \
    -path '*/bench/*' -o -path '*/bin/*' -o -name 'libgpumemtrace.so' \))
  for l in libdw.so.1 libelf.so.1; do
    [ -f "$B/lib/$l" ] || echo "note: $l not bundled: no file:line in stacks"
  done
  return "$bad"
}
export -f preflight
step preflight 60 bash -c preflight
row preflight "$STEP_STATUS" "$STEP_SECS" "$(grep -m3 -E 'not found|missing|: lib' \
  "$LOGS/preflight.log" | tr '\n' ' ' | cut -c1-150)"
cat "$LOGS/preflight.log"

# --- GPU tests -------------------------------------------------------------------
# The PyTorch loss comparison and the corpus are steps of their own below.
# shellcheck disable=SC2086
step gpu-tests "${GMT_GPU_TESTS_LIMIT_S:-480}" env LD_LIBRARY_PATH="$NATIVE_LD" "$PY" "$GPU_TESTS" \
  --lib "$LIB" --examples-dir "$B/examples" --out-dir "$LOGS/gpu-tests" \
  --python "$PY" --skip pytorch_train,corpus --results "$LOGS/gpu-tests.json" \
  ${GMT_GPU_TESTS_ARGS:-}
gpu_status="$STEP_STATUS"
grep -E '^\[|FAILED:|warning:|passed,' "$LOGS/gpu-tests.log" | cut -c1-400
row gpu-tests "$gpu_status" "$STEP_SECS" "$(tail -1 "$LOGS/gpu-tests.log")"

# One row per case, from the results file.
case_rows() {
  "$PY" - "$1" "$2" <<'PYEOF'
import json, sys
path, prefix = sys.argv[1], sys.argv[2]
try:
    results = json.load(open(path))["results"]
except Exception as e:  # the step failed before writing it
    print("%s\tFAIL\t0\tno results: %s" % (prefix, e))
    sys.exit(0)
for r in results:
    n = r.get("notes", {})
    detail = ""
    if r["failures"]:
        detail = r["failures"][0].replace("\n", " ")
    elif r["status"] == "skip":
        detail = n.get("skip_reason", "")
    elif r["case"] == "pytorch_train":
        detail = "%s | %.1fs -> %.1fs" % (n.get("loss_tool"),
                                         n.get("seconds_plain", 0),
                                         n.get("seconds_tool", 0))
    elif r["case"] == "churn":
        detail = "%s / %s" % (n.get("plain", ""), n.get("tool", ""))
    elif "seconds_plain" in n and "seconds_tool" in n:
        detail = "%.2fs -> %.2fs with the tool" % (n["seconds_plain"],
                                                    n["seconds_tool"])
    elif "seconds_plain" in n:  # e.g. seconds_pluggable: another second run
        other = sorted(k for k in n if k.startswith("seconds_"))
        detail = ", ".join("%s %.2fs" % (k[len("seconds_"):], n[k])
                           for k in other)
    if r["warnings"]:
        detail += " [%d warning(s)]" % len(r["warnings"])
    detail = " ".join(detail.split())
    print("%s:%s\t%s\t%.1f\t%s" % (prefix, r["case"], r["status"].upper(),
                                   r["seconds"], detail[:160]))
PYEOF
}
if [ -f "$LOGS/gpu-tests.json" ] || [ "$gpu_status" = FAIL ]; then
  case_rows "$LOGS/gpu-tests.json" gpu >>"$ROWS"
fi

# --- the differential corpus ------------------------------------------------------
# Each program of the bundle's corpus with and without the tool, under several
# option sets: the same output and exit status.
if [ -d "$B/corpus" ]; then
  step corpus "${GMT_CORPUS_LIMIT_S:-300}" env LD_LIBRARY_PATH="$NATIVE_LD" \
    GMT_CORPUS_TABLE_DIR="$OUT" \
    "$PY" "$GPU_TESTS" --lib "$LIB" --examples-dir "$B/examples" \
    --out-dir "$LOGS/corpus" --python "$PY" --only corpus \
    --corpus-dir "$B/corpus" --results "$LOGS/corpus.json"
  grep -E '^\[|FAILED:|passed,' "$LOGS/corpus.log" | cut -c1-400
  if [ -f "$LOGS/corpus.json" ] || [ "$STEP_STATUS" = FAIL ]; then
    case_rows "$LOGS/corpus.json" gpu >>"$ROWS"
  fi
fi

# --- PyTorch ---------------------------------------------------------------------
step pytorch 420 env LD_LIBRARY_PATH="$TORCH_LD" PYTHONUNBUFFERED=1 "$PY" \
  "$GPU_TESTS" --lib "$LIB" --examples-dir "$B/examples" \
  --out-dir "$LOGS/pytorch" --python "$PY" --only pytorch_train \
  --results "$LOGS/pytorch.json"
grep -E '^\[|FAILED:|skipped:|passed,' "$LOGS/pytorch.log" | cut -c1-400
grep -h 'final loss' "$LOGS"/pytorch/pytorch_train/*/stdout.txt 2>/dev/null
if [ -f "$LOGS/pytorch.json" ] || [ "$STEP_STATUS" = FAIL ]; then
  case_rows "$LOGS/pytorch.json" torch >>"$ROWS"
else
  row pytorch "$STEP_STATUS" "$STEP_SECS" "$(tail -1 "$LOGS/pytorch.log")"
fi

# --- performance suite ---------------------------------------------
# One script, one table: overhead per workload and mode against the targets,
# compute-sanitizer for reference, memory overhead. Its budget is cut to what
# the run has left, so that it ends (and prints its table) before its limit.
perf_limit="${GMT_PERF_LIMIT_S:-240}"
perf_left=$((DEADLINE - $(date +%s)))
[ "$perf_limit" -gt "$perf_left" ] && perf_limit="$perf_left"
perf_budget=$((perf_limit - 15))
[ "$perf_budget" -gt 5 ] || perf_budget=5
step perf-suite "$perf_limit" env LD_LIBRARY_PATH="$NATIVE_LD" \
  GMT_PERF_TORCH_LD="$TORCH_LD" GMT_PYTHON="$PY" \
  GMT_PERF_TORCH_SCRIPT="${GMT_PERF_TORCH_SCRIPT:-$CNN_PY}" \
  GMT_PERF_BUDGET_S="$perf_budget" \
  OUT="$OUT" bash "$PERF_SH" "$LIB" "$B/examples" "$LOGS/perf"
cat "$LOGS/perf-suite.log"
perf_status="$STEP_STATUS"
line="$(grep '^RESULT perf_targets ' "$LOGS/perf-suite.log")"
if [ -n "$line" ]; then
  row perf-suite "$perf_status" "$STEP_SECS" \
    "targets ${line#RESULT perf_targets } (table: perf.md, perf.tsv)"
else
  row perf-suite "$perf_status" "$STEP_SECS" \
    "no table ($(tail -1 "$LOGS/perf-suite.log" | cut -c1-100))"
fi
for what in churn train_loop kernel_loop pytorch; do
  line="$(grep "^RESULT perf_$what " "$LOGS/perf-suite.log")"
  [ -n "$line" ] || continue
  row "perf:$what" "$perf_status" "$STEP_SECS" "ratios: ${line#RESULT perf_$what }"
done

# --- examples under the tool, text report ---------------------------------------
examples_text() {
  local f name rc failed=0 ran=0 crashes
  mkdir -p "$LOGS/examples"
  for f in "$B"/examples/*; do
    name="$(basename "$f")"
    [ -x "$f" ] && head -c4 "$f" | grep -q ELF || continue
    [ "$name" = churn ] && continue
    # The crash_* examples die on purpose (their report is the point);
    # snapshot_files writes the two snapshots it is given.
    local args=()
    crashes=0
    case "$name" in
      crash_*) crashes=1 ;;
      snapshot_files) args=("$LOGS/examples/before.json" "$LOGS/examples/after.json") ;;
    esac
    LD_LIBRARY_PATH="$NATIVE_LD" LD_PRELOAD="$LIB" GMT_OPTIONS="report=text" \
      timeout -k 5 120 "$f" "${args[@]}" >"$LOGS/examples/$name.log" 2>&1
    rc=$?
    ran=$((ran + 1))
    printf '%-22s exit %s, %s report lines\n' "$name" "$rc" \
      "$(wc -l <"$LOGS/examples/$name.log")"
    if [ "$crashes" = 1 ]; then
      [ "$rc" != 0 ] || failed=$((failed + 1))
    else
      [ "$rc" = 0 ] || failed=$((failed + 1))
    fi
  done
  echo "examples: $ran ran, $failed did not end as they should"
  [ "$failed" = 0 ] && [ "$ran" -gt 0 ]
}
export -f examples_text
step examples-text 240 bash -c examples_text
cat "$LOGS/examples-text.log"
row examples-text "$STEP_STATUS" "$STEP_SECS" "$(tail -1 "$LOGS/examples-text.log")"

# --- bundled unit tests and benchmarks ------------------------------------------
for f in "$B"/unit/*; do
  [ -f "$f" ] || continue
  name="unit:$(basename "$f")"
  step "$name" 180 env LD_LIBRARY_PATH="$NATIVE_LD" "$f"
  row "$name" "$STEP_STATUS" "$STEP_SECS" "$(grep -E 'PASSED|FAILED|passed|failed' \
    "$LOGS/$name.log" | tail -1 | cut -c1-150)"
done
mkdir -p "$LOGS/bench"
for f in "$B"/bench/*; do
  [ -f "$f" ] && [ -x "$f" ] && head -c4 "$f" | grep -q ELF || continue
  case "$f" in *.so) continue ;; esac  # the benchmarks' preload libraries
  name="bench:$(basename "$f")"
  step "$name" 150 env LD_LIBRARY_PATH="$NATIVE_LD" "$f" \
    --benchmark_min_time=0.1 \
    --benchmark_out="$LOGS/bench/$(basename "$f").json" \
    --benchmark_out_format=json
  row "$name" "$STEP_STATUS" "$STEP_SECS" "$(grep -cE '^[A-Za-z].* ns ' \
    "$LOGS/$name.log") benchmarks (see bench/$(basename "$f").json)"
done

# --- summary ---------------------------------------------------------------------
fails="$(awk -F'\t' '$2 == "FAIL"' "$ROWS" | wc -l)"
{
  echo
  echo "================ gpumemtrace device run: $(date -u +%H:%M:%SZ)," \
    "$(($(date +%s) - START))s ================"
  # Failure details first, so the table stays the last thing printed.
  awk -F'\t' '$2 == "FAIL" { printf "FAIL %s: %s\n", $1, $4 }' "$ROWS" |
    cut -c1-300
  printf '%-28s %-5s %7s  %s\n' STEP RESULT SECONDS DETAIL
  awk -F'\t' '{ printf "%-28s %-5s %7s  %s\n", $1, $2, $3, substr($4, 1, 110) }' \
    "$ROWS"
  echo "steps failed: $fails"
} | tee "$OUT/summary.txt"

for f in gpu-tests.json pytorch.json perf-suite.log; do
  dest="${f/perf-suite.log/perf.txt}"
  [ -f "$LOGS/$f" ] && cp "$LOGS/$f" "$OUT/$dest"
done
tar -czf "$OUT/device-logs.tgz" -C "$OUT" logs 2>/dev/null
[ "${GMT_KEEP_LOGS:-0}" = 1 ] || rm -rf "$LOGS"
[ "$fails" = 0 ]
