#!/usr/bin/env bash
# Cost of the CUPTI kernel-launch callbacks, on the launch-heavy
# loop: examples/train_loop --small-kernels K (K short kernels per iteration,
# one sync; the program prints "us/kernel" for its loop only).
#
# Modes, in interleaved rounds, compared by the median of the rounds:
#   plain           no tool
#   inject_off      CUDA_INJECTION64_PATH only, cupti_kernels=off
#   inject_on       CUDA_INJECTION64_PATH only, cupti_kernels=on
#   preload         LD_PRELOAD only (default cupti=auto: no CUPTI at all)
#   both_off        LD_PRELOAD + injection, cupti=on, cupti_kernels=off
#   both_on         LD_PRELOAD + injection, cupti=on, cupti_kernels=on
# The callbacks' cost per launch is (X_on - X_off) us; the ratio X_on / X_off
# is the slowdown of the whole loop. Every run's checksum must be the same.
#
# Usage: cupti_launch_bench.sh LIB EXAMPLES_DIR [WORK_DIR]
# Environment: ROUNDS [5], KERNELS (per iteration) [64], ITERS [2000],
#              MIB [64], OUT (cupti_launch.md goes there too) [WORK_DIR]
set -euo pipefail

LIB=$(realpath "${1:?usage: $0 LIB EXAMPLES_DIR [WORK_DIR]}")
EXAMPLES=$(realpath "${2:?usage: $0 LIB EXAMPLES_DIR [WORK_DIR]}")
WORK=${3:-$(mktemp -d)}
OUT_DIR=${OUT:-$WORK}
ROUNDS=${ROUNDS:-5}
KERNELS=${KERNELS:-64}
ITERS=${ITERS:-2000}
MIB=${MIB:-64}
TRAIN="$EXAMPLES/train_loop"
[ -x "$TRAIN" ] || { echo "no $TRAIN" >&2; exit 2; }
mkdir -p "$WORK" "$OUT_DIR"
if ! nvidia-smi -L >/dev/null 2>&1; then
  echo "cupti_launch_bench: no CUDA device" >&2
  exit 77
fi

MODES="plain inject_off inject_on preload both_off both_on"

run_mode() {  # mode round -> prints us/kernel
  local mode=$1 round=$2 log="$WORK/$1.$2"
  local -a env=(env -u LD_PRELOAD -u CUDA_INJECTION64_PATH -u GMT_OPTIONS)
  local opts="report=json:report_path=$WORK/$mode.$round.%p.json"
  case $mode in
    plain) ;;
    inject_off) env+=(CUDA_INJECTION64_PATH="$LIB" \
                      GMT_OPTIONS="$opts:cupti_kernels=off") ;;
    inject_on) env+=(CUDA_INJECTION64_PATH="$LIB" \
                     GMT_OPTIONS="$opts:cupti_kernels=on") ;;
    preload) env+=(LD_PRELOAD="$LIB" GMT_OPTIONS="$opts") ;;
    both_off) env+=(LD_PRELOAD="$LIB" CUDA_INJECTION64_PATH="$LIB" \
                    GMT_OPTIONS="$opts:cupti=on:cupti_kernels=off") ;;
    both_on) env+=(LD_PRELOAD="$LIB" CUDA_INJECTION64_PATH="$LIB" \
                   GMT_OPTIONS="$opts:cupti=on:cupti_kernels=on") ;;
  esac
  "${env[@]}" "$TRAIN" --iters "$ITERS" --mib "$MIB" \
    --small-kernels "$KERNELS" >"$log.out" 2>"$log.err" || {
    echo "cupti_launch_bench: $mode round $round failed (rc $?)" >&2
    tail -5 "$log.err" >&2
    return 1
  }
  sed -n 's/.*checksum \(.*\)$/\1/p' "$log.out" >"$log.sum"
  sed -n 's/.* \([0-9.]*\) us\/kernel.*/\1/p' "$log.out"
}

declare -A samples
for round in $(seq 1 "$ROUNDS"); do
  for mode in $MODES; do
    v=$(run_mode "$mode" "$round")
    samples[$mode]+="$v "
  done
done

if [ "$(cat "$WORK"/*.sum | sort -u | wc -l)" -ne 1 ]; then
  echo "cupti_launch_bench: checksums differ between runs:" >&2
  grep -H . "$WORK"/*.sum >&2
  exit 1
fi

median() { tr ' ' '\n' | grep -v '^$' | sort -g |
           awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

declare -A med
{
  echo "# CUPTI launch callbacks: train_loop --small-kernels $KERNELS," \
       "$ITERS iterations, median of $ROUNDS rounds"
  echo
  echo "| mode | us/kernel (median) | samples |"
  echo "|---|---|---|"
  for mode in $MODES; do
    med[$mode]=$(echo "${samples[$mode]}" | median)
    echo "| $mode | ${med[$mode]} | ${samples[$mode]}|"
  done
  echo
  for where in inject both; do
    on=${med[${where}_on]} off=${med[${where}_off]}
    awk -v w="$where" -v on="$on" -v off="$off" 'BEGIN {
      printf "%s: launch callbacks cost %.4f us per launch; loop ratio on/off %.4f\n",
             w, on - off, (off > 0) ? on / off : 0 }'
  done
  awk -v p="${med[plain]}" -v x="${med[inject_on]}" -v y="${med[preload]}" 'BEGIN {
    printf "inject_on / plain %.4f; preload / plain %.4f\n",
           (p > 0) ? x / p : 0, (p > 0) ? y / p : 0 }'
} | tee "$OUT_DIR/cupti_launch.md"
