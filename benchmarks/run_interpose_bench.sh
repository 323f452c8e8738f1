#!/usr/bin/env bash
# The added cost of one interposed CUDA call, per API, on the CPU.
#
#   benchmarks/run_interpose_bench.sh BUILD_DIR [extra benchmark flags]
#
# Runs BUILD_DIR/benchmarks/interposed_call_bench against the stand-in runtime
# (fake_runtime_for_bench.cc: a few ns per call), and
# interposed_call_bench_fake_cuda against the project's CUDA test double
# (tests/fake_cuda: runtime -> cuGetProcAddress -> driver, as with the real
# runtime) when it is built: plain, then with libgpumemtrace.so preloaded
# (GMT_OPTIONS=report=none:guard=0) at stack_depth=0 and stack_depth=16, and
# prints the median ns per iteration of each configuration, then the table
# "added ns per call": (tool - plain) / calls per iteration, one row per API:
#
#   cudaMalloc + cudaFree            BM_MallocFree (threads 1 and 2)
#   ... with 256 blocks live         BM_MallocFreeRing
#   cudaMallocAsync + cudaFreeAsync  BM_MallocFreeAsync
#   cuMemAlloc + cuMemFree           BM_CuMemAllocFree
#   cudaLaunchKernel                 BM_LaunchKernel (launch shim)
#   cudaMemcpy D2D                   BM_MemcpyBounds (bounds shim)
#   a tensor op (3 calls)            BM_TensorOp: cudaMallocAsync, launch,
#                                    cudaFreeAsync of the previous output
#
# guard=0 (tracking only): the stand-in has no driver to run guard kernels
# on, and the test double runs them on the CPU (a memset and compare of every
# redzone), so neither says what guard zones cost on a GPU; their cost is
# measured on the GPU by benchmarks/gpu/perf_suite.sh.
# Rows "threads:2" are Google Benchmark's multi-threaded figure: wall time over
# the iterations of both threads (the inverse of throughput), so perfect scaling
# halves it. Target: <= 150 ns added per call without stacks.
# Environment:
#   GMT_BENCH_REPETITIONS (5), GMT_BENCH_MIN_TIME (0.5 s)
#   GMT_BENCH_GUARD=1       also the test double with guard=1 (default options:
#                           fills and checks emulated on the CPU)
#   GMT_BENCH_DIAGNOSTIC=1  also the stand-in with Abseil's debug-mode Mutex
#                           deadlock detection turned off
#                           (absl_deadlock_detection_off.cc), which the library
#                           does not do today
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
      sub(/\/real_time/, "", name)
      t = $3; unit = $5; gsub(/"/, "", unit)
      if (unit == "us") t *= 1000; else if (unit == "ms") t *= 1e6
      printf "%s %.1f\n", name, t }' | sort >"$out"
}

label() {
  case "$1" in
    d0) echo "guard=0 stack_depth=0" ;;
    d16) echo "guard=0 stack_depth=16" ;;
    g1d0) echo "guard=1 stack_depth=0 (CPU-emulated)" ;;
    g1d16) echo "guard=1 stack_depth=16 (CPU-emulated)" ;;
    d0_nodl) echo "guard=0 stack_depth=0, absl deadlock off" ;;
  esac
}

# measure BENCH RUNTIME_LABEL [env assignments for every run...]: runs the
# configurations, prints the per-configuration rows and appends
# "runtime config name added_ns" lines to $tmp/added.
measure() {
  local bench="$1" runtime="$2"
  shift 2
  local base=("$@")
  # The tool must really be in the loop: at verbosity 1 it says so when the
  # first intercepted call creates its engine. (Output to a file first: grep
  # -q on a pipe would cut the program off and fail the pipeline.)
  env "${base[@]}" LD_PRELOAD="$lib" \
    GMT_OPTIONS=report=none:guard=0:verbosity=1 "$bench" \
    --benchmark_filter='BM_MallocFree/' --benchmark_min_time=0.01 \
    >/dev/null 2>"$tmp/check.err" || true
  if ! grep -q "tracking CUDA allocations" "$tmp/check.err"; then
    echo "libgpumemtrace.so did not intercept cudaMalloc in $bench:" >&2
    tail -5 "$tmp/check.err" >&2
    exit 1
  fi
  run "$bench" "$tmp/plain" "${base[@]}"
  local configs=(d0 d16)
  run "$bench" "$tmp/d0" "${base[@]}" LD_PRELOAD="$lib" \
    GMT_OPTIONS=report=none:guard=0:stack_depth=0
  run "$bench" "$tmp/d16" "${base[@]}" LD_PRELOAD="$lib" \
    GMT_OPTIONS=report=none:guard=0:stack_depth=16
  if [ "$runtime" = fake_cuda ] && [ "${GMT_BENCH_GUARD:-0}" = 1 ]; then
    run "$bench" "$tmp/g1d0" "${base[@]}" LD_PRELOAD="$lib" \
      GMT_OPTIONS=report=none:stack_depth=0
    run "$bench" "$tmp/g1d16" "${base[@]}" LD_PRELOAD="$lib" \
      GMT_OPTIONS=report=none:stack_depth=16
    configs+=(g1d0 g1d16)
  fi
  if [ "$runtime" = stand-in ] && [ "${GMT_BENCH_DIAGNOSTIC:-0}" = 1 ] &&
     [ -e "$deadlock_off" ]; then
    local off
    off="$(readlink -f "$deadlock_off")"
    run "$bench" "$tmp/d0_nodl" "${base[@]}" LD_PRELOAD="$off:$lib" \
      GMT_OPTIONS=report=none:guard=0:stack_depth=0
    configs+=(d0_nodl)
  fi
  for c in "${configs[@]}"; do
    join "$tmp/plain" "$tmp/$c" |
      awk -v rt="$runtime" -v cfg="$(label "$c")" -v key="$c" \
        -v added="$tmp/added" '{
        printf "%-10s %-40s %-28s %9.1f %9.1f %9.1f\n", rt, cfg, $1, $2, $3,
               $3 - $2
        printf "%s %s %s %.1f\n", rt, key, $1, $3 - $2 >>added }'
  done
}

: >"$tmp/added"
printf '%-10s %-40s %-28s %9s %9s %9s\n' runtime configuration benchmark \
  "plain ns" "tool ns" "added ns"
measure "$build/benchmarks/interposed_call_bench" stand-in
runtimes=(stand-in)
if [ -x "$build/benchmarks/interposed_call_bench_fake_cuda" ] &&
   [ -n "$fake_cuda_lib" ]; then
  measure "$build/benchmarks/interposed_call_bench_fake_cuda" fake_cuda \
    LD_LIBRARY_PATH="$fake_cuda_lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  runtimes+=(fake_cuda)
fi
echo "stand-in: benchmarks/fake_runtime_for_bench.cc (a few ns per call);"
echo "fake_cuda: tests/fake_cuda (runtime -> cuGetProcAddress -> driver, as real)"

# The table: one row per API, one column per runtime x configuration, the
# added ns divided by the calls one iteration makes.
echo
echo "=== added ns per call (tool - plain, medians of $reps; pairs / 2)"
awk -v runtimes="${runtimes[*]}" '
  BEGIN {
    n = split("BM_MallocFree/threads:1 BM_MallocFree/threads:2 " \
              "BM_MallocFreeRing BM_MallocFreeAsync BM_CuMemAllocFree " \
              "BM_LaunchKernel BM_MemcpyBounds BM_TensorOp", rows, " ")
    name["BM_MallocFree/threads:1"] = "cudaMalloc + cudaFree"
    name["BM_MallocFree/threads:2"] = "cudaMalloc + cudaFree, 2 threads"
    name["BM_MallocFreeRing"] = "cudaMalloc + cudaFree, 256 live"
    name["BM_MallocFreeAsync"] = "cudaMallocAsync + cudaFreeAsync"
    name["BM_CuMemAllocFree"] = "cuMemAlloc + cuMemFree"
    name["BM_LaunchKernel"] = "cudaLaunchKernel (launch shim)"
    name["BM_MemcpyBounds"] = "cudaMemcpy D2D (bounds shim)"
    name["BM_TensorOp"] = "tensor op: alloc + launch + free"
    for (i = 1; i <= n; i++) calls[rows[i]] = 2
    calls["BM_LaunchKernel"] = 1
    calls["BM_MemcpyBounds"] = 1
    calls["BM_TensorOp"] = 3
    nr = split(runtimes, rts, " ")
    ncfg = split("d0 d16 g1d0 g1d16 d0_nodl", cfgs, " ")
    head["d0"] = "depth 0"; head["d16"] = "depth 16"
    head["g1d0"] = "guard d0"; head["g1d16"] = "guard d16"
    head["d0_nodl"] = "d0 noDL"
  }
  { v[$1 " " $2 " " $3] = $4; have[$1 " " $2] = 1 }
  END {
    line = sprintf("%-36s", "API (per call)")
    line2 = sprintf("%-36s", "")
    for (r = 1; r <= nr; r++) for (c = 1; c <= ncfg; c++)
      if (have[rts[r] " " cfgs[c]]) {
        line = line sprintf(" %10s", head[cfgs[c]])
        line2 = line2 sprintf(" %10s", substr(rts[r], 1, 10))
      }
    print line2; print line
    for (i = 1; i <= n; i++) {
      line = sprintf("%-36s", name[rows[i]])
      for (r = 1; r <= nr; r++) for (c = 1; c <= ncfg; c++) {
        if (!have[rts[r] " " cfgs[c]]) continue
        k = rts[r] " " cfgs[c] " " rows[i]
        if (k in v) line = line sprintf(" %10.0f", v[k] / calls[rows[i]])
        else line = line sprintf(" %10s", "-")
      }
      print line
    }
  }' "$tmp/added"
echo "target: <= 150 ns added per call at stack_depth=0 (1 thread);" \
  "launch and copy capture no stack"
if [ "${#runtimes[@]}" -gt 1 ]; then
  echo "fake_cuda launch: the double looks cuLaunchKernel up with" \
    "cuGetProcAddress on every launch (the real runtime once), so the tool's"
  echo "cuGetProcAddress shim is in that figure; the stand-in's is the launch" \
    "shim alone"
fi
