#!/usr/bin/env bash
# The added cost of one interposed cudaMalloc + cudaFree pair.
#
#   benchmarks/run_interpose_bench.sh BUILD_DIR [extra benchmark flags]
#
# Runs BUILD_DIR/benchmarks/interposed_call_bench against the stand-in runtime
# (fake_runtime_for_bench.cc), and interposed_call_bench_fake_cuda against the
# project's CUDA test double when it is built: plain, then with
# libgpumemtrace.so preloaded (GMT_OPTIONS=report=none) at stack_depth=0 and
# stack_depth=16, and prints the median ns per pair and what the tool adds.
# A last, diagnostic pair of configurations repeats both with Abseil's
# debug-mode Mutex deadlock detection turned off (absl_deadlock_detection_off.cc),
# which the library does not do today.
# Rows "threads:2" are Google Benchmark's multi-threaded figure: wall time over
# the iterations of both threads (the inverse of throughput), so perfect scaling
# halves it. Targets (threads:1 rows): <= 150 ns added without stacks,
# <= 1000 ns with 16 frames.
# Environment: GMT_BENCH_REPETITIONS (5), GMT_BENCH_MIN_TIME (0.5 s).
# Exits 1 if the tool did not intercept the calls.
set -euo pipefail

build="${1:?usage: $0 BUILD_DIR [benchmark flags]}"
shift
lib="$build/interpose/libgpumemtrace.so"
[ -e "$lib" ] || { echo "missing $lib (build it first)" >&2; exit 2; }
lib="$(readlink -f "$lib")"
deadlock_off="$build/benchmarks/libgmt_bench_absl_deadlock_off.so"
fake_cuda_lib="$(readlink -f "$build/tests/fake_cuda/lib" 2>/dev/null || true)"
reps="${GMT_BENCH_REPETITIONS:-5}"
min_time="${GMT_BENCH_MIN_TIME:-0.5}"
extra=("$@")
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

# run BENCH FILE [env assignments...]: "name median_ns" lines, sorted by name.
run() {
  local bench="$1" out="$2"
  shift 2
  env "$@" "$bench" --benchmark_format=csv --benchmark_repetitions="$reps" \
    --benchmark_report_aggregates_only=true \
    --benchmark_min_time="$min_time" "${extra[@]}" 2>/dev/null |
    awk -F, '$1 ~ /_median"?$/ {
      name = $1; gsub(/"/, "", name); sub(/_median$/, "", name)
      t = $3; unit = $5; gsub(/"/, "", unit)
      if (unit == "us") t *= 1000; else if (unit == "ms") t *= 1e6
      printf "%s %.1f\n", name, t }' | sort >"$out"
}

label() {
  case "$1" in
    d0) echo "stack_depth=0" ;;
    d16) echo "stack_depth=16" ;;
    d0_nodl) echo "stack_depth=0, absl deadlock det. off" ;;
    d16_nodl) echo "stack_depth=16, absl deadlock det. off" ;;
  esac
}

# measure BENCH RUNTIME_LABEL [env assignments for every run...]
measure() {
  local bench="$1" runtime="$2"
  shift 2
  local base=("$@")
  # The tool must really be in the loop: at verbosity 1 it says so when the
  # first intercepted call creates its engine.
  if ! env "${base[@]}" LD_PRELOAD="$lib" GMT_OPTIONS=report=none:verbosity=1 \
      "$bench" --benchmark_filter='BM_MallocFree/' --benchmark_min_time=0.01 \
      2>&1 >/dev/null | grep -q "tracking CUDA allocations"; then
    echo "libgpumemtrace.so did not intercept cudaMalloc in $bench" >&2
    exit 1
  fi
  run "$bench" "$tmp/plain" "${base[@]}"
  run "$bench" "$tmp/d0" "${base[@]}" LD_PRELOAD="$lib" \
    GMT_OPTIONS=report=none:stack_depth=0
  run "$bench" "$tmp/d16" "${base[@]}" LD_PRELOAD="$lib" \
    GMT_OPTIONS=report=none:stack_depth=16
  local configs=(d0 d16)
  if [ -e "$deadlock_off" ]; then
    local off
    off="$(readlink -f "$deadlock_off")"
    run "$bench" "$tmp/d0_nodl" "${base[@]}" LD_PRELOAD="$off:$lib" \
      GMT_OPTIONS=report=none:stack_depth=0
    run "$bench" "$tmp/d16_nodl" "${base[@]}" LD_PRELOAD="$off:$lib" \
      GMT_OPTIONS=report=none:stack_depth=16
    configs+=(d0_nodl d16_nodl)
  fi
  for c in "${configs[@]}"; do
    join "$tmp/plain" "$tmp/$c" |
      awk -v rt="$runtime" -v cfg="$(label "$c")" '{
        printf "%-10s %-38s %-36s %9.1f %9.1f %9.1f\n", rt, cfg, $1, $2, $3,
               $3 - $2 }'
  done
}

printf '%-10s %-38s %-36s %9s %9s %9s\n' runtime configuration benchmark \
  "plain ns" "tool ns" "added ns"
measure "$build/benchmarks/interposed_call_bench" stand-in
if [ -x "$build/benchmarks/interposed_call_bench_fake_cuda" ] &&
   [ -n "$fake_cuda_lib" ]; then
  measure "$build/benchmarks/interposed_call_bench_fake_cuda" fake_cuda \
    LD_LIBRARY_PATH="$fake_cuda_lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
echo "stand-in: benchmarks/fake_runtime_for_bench.cc (a few ns per call);"
echo "fake_cuda: tests/fake_cuda (runtime -> cuGetProcAddress -> driver, as real)"
echo "targets: added <= 150 ns per pair at stack_depth=0, <= 1000 ns at 16"
