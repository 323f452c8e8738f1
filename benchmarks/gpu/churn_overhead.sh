#!/usr/bin/env bash
# (tools/device_run.sh now runs benchmarks/gpu/perf_suite.sh, which covers
# these runs and more; this script stays for a quick look by hand.)
# Measures the tool's overhead on examples/churn: the same runs without the
# tool, with it, and with it but no stack capture (stack_depth=0), for the
# cudaMalloc/cudaFree loop and for the kernel-launch loop.
#
# Usage: churn_overhead.sh LIB CHURN_BINARY [PAIRS] [LAUNCHES] [WORK_DIR]
#   LIB       path of libgpumemtrace.so
#   PAIRS     cudaMalloc/cudaFree pairs (default 200000)
#   LAUNCHES  kernel launches (default 200000)
#   WORK_DIR  where reports and logs go (default a temporary folder)
# GMT_CHURN_RUN_LIMIT_S bounds each run (default 90 s).
# Prints one line per run, then machine-readable lines:
#   RESULT <what> plain_us=<x> tool_us=<y> ratio=<y/x> [nostack_us=..
#          nostack_ratio=..]
# Exit status: non-zero if a run failed or a report shows leaks or errors.
set -uo pipefail

LIB="${1:?usage: churn_overhead.sh LIB CHURN_BINARY [PAIRS] [LAUNCHES] [DIR]}"
CHURN="${2:?usage: churn_overhead.sh LIB CHURN_BINARY [PAIRS] [LAUNCHES] [DIR]}"
PAIRS="${3:-200000}"
LAUNCHES="${4:-200000}"
WORK="${5:-$(mktemp -d)}"
mkdir -p "$WORK"
RUN_LIMIT="${GMT_CHURN_RUN_LIMIT_S:-90}"  # seconds per run
LIB="$(cd "$(dirname "$LIB")" && pwd)/$(basename "$LIB")"
status=0

# run_one LABEL TOOL(0/1) EXTRA_OPTIONS ARGS... : sets US to the microseconds
# per operation that the run printed (empty if none), and status=1 on failure.
run_one() {
  local label="$1" tool="$2" extra="$3"
  shift 3
  local out="$WORK/$label.out" err="$WORK/$label.err" rc
  if [ "$tool" = 1 ]; then
    LD_PRELOAD="$LIB" \
      GMT_OPTIONS="report=json:report_path=$WORK/$label.%p.json${extra:+:$extra}" \
      timeout -k 5 "$RUN_LIMIT" "$CHURN" "$@" >"$out" 2>"$err"
  else
    env -u LD_PRELOAD -u GMT_OPTIONS timeout -k 5 "$RUN_LIMIT" "$CHURN" "$@" \
      >"$out" 2>"$err"
  fi
  rc=$?
  printf '  %-16s %s' "$label" "$(cat "$out")"
  if [ "$rc" != 0 ]; then
    printf ' [exit %s: %s]' "$rc" "$(tail -c 300 "$err")"
    status=1
  fi
  echo
  if [ "$tool" = 1 ]; then
    local report
    report="$(ls "$WORK/$label".*.json 2>/dev/null | head -1)"
    if [ -z "$report" ]; then
      echo "  $label: no report written"
      status=1
    elif ! python3 -c 'import json, sys
s = json.load(open(sys.argv[1]))["summary"]
sys.exit(0 if s["errors"] == 0 and s["leaks"] == 0 else 1)' "$report"; then
      echo "  $label: report has leaks or errors: $report"
      status=1
    fi
  fi
  US="$(sed -n 's/.*(\([0-9.]*\) us\/[a-z]*).*/\1/p' "$out")"
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a > 0) printf "%.2f", b / a;
                                            else print "nan" }'; }

ROUNDS="${GMT_CHURN_ROUNDS:-3}"
median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{v[NR]=$1} END {
  if (NR == 0) print "nan"; else if (NR % 2) print v[(NR+1)/2];
  else printf "%.3f", (v[NR/2] + v[NR/2+1]) / 2 }'; }

# Configurations run interleaved, ROUNDS times each, and compared by median:
# one run after another on a GPU drifts by more than the tool costs.
echo "churn overhead: $PAIRS pairs, $LAUNCHES launches, $ROUNDS interleaved rounds, $CHURN"
p_plain=""; p_tool=""; p_nostack=""; k_plain=""; k_tool=""
for round in $(seq 1 "$ROUNDS"); do
  run_one "pairs-plain-$round" 0 "" --pairs "$PAIRS"; p_plain+=" $US"
  run_one "pairs-tool-$round" 1 "" --pairs "$PAIRS"; p_tool+=" $US"
  run_one "pairs-nostack-$round" 1 stack_depth=0 --pairs "$PAIRS"; p_nostack+=" $US"
  run_one "launches-plain-$round" 0 "" --kernels --launches "$LAUNCHES"; k_plain+=" $US"
  run_one "launches-tool-$round" 1 "" --kernels --launches "$LAUNCHES"; k_tool+=" $US"
done
p_plain="$(echo "$p_plain" | median)"; p_tool="$(echo "$p_tool" | median)"
p_nostack="$(echo "$p_nostack" | median)"
k_plain="$(echo "$k_plain" | median)"; k_tool="$(echo "$k_tool" | median)"
echo "RESULT churn_pairs plain_us=$p_plain tool_us=$p_tool" \
  "ratio=$(ratio "$p_plain" "$p_tool") nostack_us=$p_nostack" \
  "nostack_ratio=$(ratio "$p_plain" "$p_nostack") (medians of $ROUNDS)"
echo "RESULT churn_launches plain_us=$k_plain tool_us=$k_tool" \
  "ratio=$(ratio "$k_plain" "$k_tool") (medians of $ROUNDS; no call in this loop is intercepted)"
exit "$status"
