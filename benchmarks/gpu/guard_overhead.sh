#!/usr/bin/env bash
# (tools/device_run.sh now runs benchmarks/gpu/perf_suite.sh, which covers
# these runs and more; this script stays for a quick look by hand.)
# What guard zones cost (DESIGN.md section 3), on the GPU machine:
#
#   train loop  examples/train_loop (4 x 256 MiB buffers, 8 kernels and one
#               cudaStreamSynchronize per iteration) without the tool, with it
#               (check=sync, the default: zones checked at every sync), with
#               check=kernel (a check after every kernel), and under
#               `compute-sanitizer --tool memcheck` when there is one (fewer
#               iterations: its figure is per iteration, so it scales);
#   churn       examples/churn --pairs N (cudaMalloc/cudaFree, 256 B .. 4 MiB)
#               without the tool, with guard=1 (redzones + quarantine) and
#               with guard=0 (tracking only), per pair.
#
# Configurations run interleaved, ROUNDS times each, compared by median (one
# run after another on a GPU drifts by more than the tool costs).
#
# Usage: guard_overhead.sh LIB EXAMPLES_DIR [ITERS] [WORK_DIR]
#   LIB           libgpumemtrace.so
#   EXAMPLES_DIR  the folder holding train_loop and churn (a build's
#                 examples/ or the bundle's .device/examples)
#   ITERS         train_loop iterations (default 200)
#   WORK_DIR      logs and reports (default a temporary folder)
# Environment:
#   GMT_GUARD_ROUNDS       interleaved rounds (default 3)
#   GMT_GUARD_MIB          train_loop buffer size in MiB (default 256)
#   GMT_GUARD_SAN_ITERS    iterations under compute-sanitizer (default
#                          ITERS / 10, at least 5); 0 skips it
#   GMT_GUARD_SAN_ROUNDS   rounds that include compute-sanitizer (default 1)
#   GMT_GUARD_CHURN_PAIRS  churn pairs (default 50000); 0 skips churn
#   GMT_GUARD_RUN_LIMIT_S  bound on each run (default 120 s)
#   COMPUTE_SANITIZER      its path (default: PATH, then /usr/local/cuda/bin)
#   OUT                    if set, the table also goes to $OUT/guard_overhead.tsv
# Prints one line per run, a summary table, then machine-readable lines:
#   RESULT guard_train plain_ms=.. sync_ms=.. sync_ratio=.. kernel_ms=..
#          kernel_ratio=.. sanitizer_ms=.. sanitizer_ratio=..
#   RESULT guard_churn plain_us=.. guard_us=.. guard_ratio=.. noguard_us=..
#          noguard_ratio=..
# Exit status: non-zero if a run failed, a tool report shows errors or leaks,
# the tool changed train_loop's checksum, or compute-sanitizer found errors.
set -uo pipefail

usage="usage: guard_overhead.sh LIB EXAMPLES_DIR [ITERS] [WORK_DIR]"
LIB="${1:?$usage}"
EXAMPLES="${2:?$usage}"
ITERS="${3:-200}"
WORK="${4:-$(mktemp -d)}"
mkdir -p "$WORK" && WORK="$(cd "$WORK" && pwd)"
LIB="$(cd "$(dirname "$LIB")" && pwd)/$(basename "$LIB")"
EXAMPLES="$(cd "$EXAMPLES" && pwd)"
TRAIN="$EXAMPLES/train_loop"
CHURN="$EXAMPLES/churn"
ROUNDS="${GMT_GUARD_ROUNDS:-3}"
MIB="${GMT_GUARD_MIB:-256}"
SAN_ITERS="${GMT_GUARD_SAN_ITERS:-$((ITERS / 10 > 5 ? ITERS / 10 : 5))}"
SAN_ROUNDS="${GMT_GUARD_SAN_ROUNDS:-1}"
PAIRS="${GMT_GUARD_CHURN_PAIRS:-50000}"
RUN_LIMIT="${GMT_GUARD_RUN_LIMIT_S:-120}"
status=0

for f in "$LIB" "$TRAIN"; do
  [ -f "$f" ] || { echo "guard_overhead: missing $f" >&2; exit 1; }
done
SANITIZER="${COMPUTE_SANITIZER:-$(command -v compute-sanitizer 2>/dev/null)}"
[ -n "$SANITIZER" ] || SANITIZER=/usr/local/cuda/bin/compute-sanitizer
[ -x "$SANITIZER" ] || SANITIZER=""
if [ "$SAN_ITERS" = 0 ]; then SANITIZER=""; fi

# run_one LABEL MODE ARGS... : MODE is plain, tool:<extra options>, or
# sanitizer. Sets VALUE (the program's per-operation figure: ms/iter or
# us/pair), WALL (seconds of the whole process) and SUM (its checksum line).
run_one() {
  local label="$1" mode="$2"
  shift 2
  local out="$WORK/$label.out" err="$WORK/$label.err" rc t0 t1 extra report
  t0="$(date +%s.%N)"
  case "$mode" in
    plain)
      env -u LD_PRELOAD -u GMT_OPTIONS timeout -k 5 "$RUN_LIMIT" "$@" \
        >"$out" 2>"$err"
      ;;
    tool:*)
      extra="${mode#tool:}"
      LD_PRELOAD="$LIB" \
        GMT_OPTIONS="report=json:report_path=$WORK/$label.%p.json${extra:+:$extra}" \
        timeout -k 5 "$RUN_LIMIT" "$@" >"$out" 2>"$err"
      ;;
    sanitizer)
      env -u LD_PRELOAD -u GMT_OPTIONS timeout -k 5 "$RUN_LIMIT" \
        "$SANITIZER" --tool memcheck --print-limit 20 "$@" >"$out" 2>"$err"
      ;;
  esac
  rc=$?
  t1="$(date +%s.%N)"
  WALL="$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')"
  VALUE="$(sed -n 's/.*(\([0-9.]*\) \(ms\/iter\|us\/pair\)).*/\1/p' "$out" |
    head -1)"
  SUM="$(grep -m1 'checksum' "$out")"
  printf '  %-22s %8ss  %s' "$label" "$WALL" \
    "$(grep -E 'ms/iter|us/pair' "$out" | head -1)"
  if [ "$rc" != 0 ]; then
    printf ' [exit %s: %s]' "$rc" "$(tail -c 300 "$err" | tr '\n' ' ')"
    status=1
    VALUE=""
  fi
  echo
  case "$mode" in
    tool:*)
      report="$(ls "$WORK/$label".*.json 2>/dev/null | head -1)"
      if [ -z "$report" ]; then
        echo "  $label: no report written"
        status=1
      elif ! python3 -c 'import json, sys
s = json.load(open(sys.argv[1]))["summary"]
sys.exit(0 if s["errors"] == 0 and s["leaks"] == 0 else 1)' "$report"; then
        echo "  $label: report has errors or leaks: $report"
        status=1
      fi
      ;;
    sanitizer)
      # "========= ERROR SUMMARY: 0 errors"
      if ! grep -q 'ERROR SUMMARY: 0 errors' "$out" "$err"; then
        echo "  $label: compute-sanitizer: $(grep -h 'ERROR SUMMARY' \
          "$out" "$err" | head -1)"
        status=1
      fi
      ;;
  esac
}

median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{v[NR]=$1} END {
  if (NR == 0) print "nan"; else if (NR % 2) print v[(NR+1)/2];
  else printf "%.4f", (v[NR/2] + v[NR/2+1]) / 2 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a > 0 && b != "nan" && b != "")
  printf "%.2f", b / a; else print "nan" }'; }

if [ -n "$SANITIZER" ]; then
  san_note="$SANITIZER, $SAN_ITERS iterations in $SAN_ROUNDS round(s)"
else
  san_note="not run (absent or GMT_GUARD_SAN_ITERS=0)"
fi
echo "guard overhead: train_loop $ITERS iterations x $MIB MiB buffers," \
  "churn $PAIRS pairs, $ROUNDS interleaved rounds"
echo "compute-sanitizer: $san_note"
echo "library $LIB; examples $EXAMPLES; logs $WORK"

targs=(--iters "$ITERS" --mib "$MIB")
declare -A V W
for c in plain sync kernel sanitizer cplain cguard cnoguard; do
  V[$c]=""
  W[$c]=""
done
sums_ok=1
for round in $(seq 1 "$ROUNDS"); do
  run_one "train-plain-$round" plain "$TRAIN" "${targs[@]}"
  V[plain]+=" $VALUE"; W[plain]+=" $WALL"; ref_sum="$SUM"
  run_one "train-sync-$round" tool:check=sync "$TRAIN" "${targs[@]}"
  V[sync]+=" $VALUE"; W[sync]+=" $WALL"
  [ "$SUM" = "$ref_sum" ] || { sums_ok=0; echo "  checksum differs: '$SUM' vs '$ref_sum'"; }
  run_one "train-kernel-$round" tool:check=kernel "$TRAIN" "${targs[@]}"
  V[kernel]+=" $VALUE"; W[kernel]+=" $WALL"
  [ "$SUM" = "$ref_sum" ] || { sums_ok=0; echo "  checksum differs: '$SUM' vs '$ref_sum'"; }
  if [ -n "$SANITIZER" ] && [ "$round" -le "$SAN_ROUNDS" ]; then
    run_one "train-sanitizer-$round" sanitizer "$TRAIN" --iters "$SAN_ITERS" \
      --mib "$MIB"
    V[sanitizer]+=" $VALUE"; W[sanitizer]+=" $WALL"
  fi
  if [ "$PAIRS" != 0 ] && [ -x "$CHURN" ]; then
    run_one "churn-plain-$round" plain "$CHURN" --pairs "$PAIRS"
    V[cplain]+=" $VALUE"; W[cplain]+=" $WALL"
    run_one "churn-guard-$round" tool:guard=1 "$CHURN" --pairs "$PAIRS"
    V[cguard]+=" $VALUE"; W[cguard]+=" $WALL"
    run_one "churn-noguard-$round" tool:guard=0 "$CHURN" --pairs "$PAIRS"
    V[cnoguard]+=" $VALUE"; W[cnoguard]+=" $WALL"
  fi
done
[ "$sums_ok" = 1 ] || status=1

declare -A M MW
for c in "${!V[@]}"; do
  M[$c]="$(echo "${V[$c]}" | median)"
  MW[$c]="$(echo "${W[$c]}" | median)"
done

# The table: configuration, figure, unit, ratio to its baseline, median wall
# seconds of the whole process, what it is.
TSV="$WORK/guard_overhead.tsv"
{
  printf 'config\tmedian\tunit\tratio\twall_s\truns\tnote\n'
  row() {  # row NAME KEY BASE UNIT NOTE
    local n
    n="$(echo "${V[$2]}" | wc -w)"
    [ "$n" -gt 0 ] || return 0
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$1" "${M[$2]}" "$4" \
      "$(ratio "${M[$3]}" "${M[$2]}")" "${MW[$2]}" "$n" "$5"
  }
  row train-plain plain plain ms/iter "no tool"
  row train-check-sync sync plain ms/iter "guard=1 check=sync (default)"
  row train-check-kernel kernel plain ms/iter "guard=1 check=kernel"
  row train-sanitizer sanitizer plain ms/iter \
    "compute-sanitizer memcheck, $SAN_ITERS iterations (wall not comparable)"
  row churn-plain cplain cplain us/pair "no tool"
  row churn-guard cguard cplain us/pair "guard=1 (redzones, quarantine)"
  row churn-noguard cnoguard cplain us/pair "guard=0 (tracking only)"
} >"$TSV"

echo
echo "=== guard overhead (medians of $ROUNDS rounds; ratio = config / no tool)"
awk -F'\t' '{ printf "%-20s %10s %-8s %6s %8s %5s  %s\n", $1, $2, $3, $4,
  $5, $6, $7 }' "$TSV"
if [ -n "${OUT:-}" ]; then
  mkdir -p "$OUT" && cp "$TSV" "$OUT/guard_overhead.tsv"
fi

echo "RESULT guard_train plain_ms=${M[plain]} sync_ms=${M[sync]}" \
  "sync_ratio=$(ratio "${M[plain]}" "${M[sync]}") kernel_ms=${M[kernel]}" \
  "kernel_ratio=$(ratio "${M[plain]}" "${M[kernel]}")" \
  "sanitizer_ms=${M[sanitizer]}" \
  "sanitizer_ratio=$(ratio "${M[plain]}" "${M[sanitizer]}")" \
  "(ms/iter, medians of $ROUNDS)"
echo "RESULT guard_churn plain_us=${M[cplain]} guard_us=${M[cguard]}" \
  "guard_ratio=$(ratio "${M[cplain]}" "${M[cguard]}")" \
  "noguard_us=${M[cnoguard]}" \
  "noguard_ratio=$(ratio "${M[cplain]}" "${M[cnoguard]}") (us/pair)"
exit "$status"
