#!/usr/bin/env bash
# Builds the CPU test suite under sanitizers and runs it, then prints a
# summary (tests passed/failed, sanitizer reports found).
#
#   tools/sanitize.sh            ASan+UBSan, then TSan (informational, below)
#   tools/sanitize.sh asan       only ASan+UBSan   (build-asan)
#   tools/sanitize.sh tsan       only TSan         (build-tsan)
#   tools/sanitize.sh asan -R reliability          extra arguments go to ctest
#
# Everything in the build is instrumented: the engine and unit tests,
# libgpumemtrace.so, the CUDA test double, and the test programs. So the tool,
# preloaded into a test program, finds the sanitizer runtime already among the
# program's own libraries (it is not first in the load order, hence
# verify_asan_link_order=0); no runtime has to be preloaded by hand. Reports
# go to files (log_path) under <build>/sanitizer-logs/, which the summary
# counts: a report in a child process cannot hide behind a test that only
# looks at the child's output. UBSan does not recover (every finding aborts).
# -fno-sanitize=enum: CUDA enums (cudaMemcpyKind, ...) reach the tool with
# values out of their range when a program passes a bad one on purpose; the
# tool must forward them unchanged so that CUDA answers its own error, and
# UBSan's enum check would abort on the load.
#
# ASan+UBSan runs every CPU test (labels gpu and script, the GPU suite and its
# self-test, are left out). TSan runs the unit tests and the interposition and
# reliability tests; the fuzz drivers are left out under TSan (single-threaded,
# and slow there; GMT_TSAN_ALL=1 runs them too). The two memory-bound stress
# tests run in normal builds only.
set -uo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/cuda/bin:$PATH"

which="${1:-all}"
# Bounds on the tool's own memory hold for normal builds; sanitizers add their
# own per-allocation memory and quarantines, so these two are left out.
memory_bound_tests='MillionLive|LongChurn'
# The symbolizer unit tests expect glibc's backtrace() to return the caller's
# frame first; ASan intercepts backtrace(), adding its own frame. (In the
# preloaded tool, frames inside the tool are skipped by address range, so its
# reports are not affected; the unit tests have no such range.)
asan_only_excluded='SymbolizerTest\.(ResolvesANoinline|FileAndLine|CapturedChain)|SymbolizeStackTest\.'

if [[ $# -gt 0 ]]; then shift; fi
jobs="$(nproc)"
summary=()

# -lgmock: tests/unit/options_test.cc uses gmock matchers but links only
# GTest::gtest_main; optimized builds inline what it needs, instrumented ones
# do not and fail to link without it.
configure_and_build() {  # <dir> <flags>
  local dir="$1" flags="$2"
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DGMT_BUILD_EXAMPLES=OFF -DGMT_BUILD_BENCHMARKS=OFF \
    -DCMAKE_C_FLAGS="$flags" -DCMAKE_CXX_FLAGS="$flags" \
    -DCMAKE_EXE_LINKER_FLAGS="$flags" -DCMAKE_SHARED_LINKER_FLAGS="$flags" \
    -DCMAKE_MODULE_LINKER_FLAGS="$flags" \
    -DCMAKE_CXX_STANDARD_LIBRARIES="-lgmock -lgtest" >/dev/null || return 1
  cmake --build "$dir" -j"$jobs" >"$dir/build.log" 2>&1 || {
    tail -40 "$dir/build.log"
    return 1
  }
}

# run_suite <name> <dir> <ctest args...>
run_suite() {
  local name="$1" dir="$2"
  shift 2
  local logs="$PWD/$dir/sanitizer-logs"
  rm -rf "$logs"
  mkdir -p "$logs"
  local start=$SECONDS
  (cd "$dir" && ctest --output-on-failure -j"$jobs" "$@") >"$dir/ctest.log" 2>&1
  local rc=$?
  local line
  line="$(grep -E '^[0-9]+% tests passed' "$dir/ctest.log" || echo "no ctest summary")"
  local reports
  reports="$(find "$logs" -type f | wc -l)"
  summary+=("$name: $line; $reports sanitizer report file(s) in $logs; $((SECONDS - start)) s")
  if ((rc != 0)); then
    summary+=("  failed: $(grep -E '^\s+[0-9]+ - ' "$dir/ctest.log" | sed 's/^ *//' | tr '\n' ';')")
  fi
  if ((reports > 0)); then
    summary+=("  first findings:")
    while IFS= read -r l; do summary+=("    $l"); done < <(
      grep -hE 'ERROR: AddressSanitizer|runtime error:|WARNING: ThreadSanitizer|ERROR: LeakSanitizer|SUMMARY:' \
        "$logs"/* | sort | uniq -c | sort -rn | head -12)
  fi
}

if [[ "$which" == all || "$which" == asan ]]; then
  echo "sanitize: building build-asan (address,undefined)"
  if configure_and_build build-asan \
      "-fsanitize=address,undefined -fno-sanitize=enum -fno-sanitize-recover=all -fno-omit-frame-pointer -g"; then
    logs="$PWD/build-asan/sanitizer-logs"
    # max_malloc_fill_size=0: the CUDA test double hands out malloc'ed memory
    # as device memory, and its own test expects fresh blocks to read as zero
    # (as fresh pages do) rather than ASan's 0xbe fill.
    ASAN_OPTIONS="verify_asan_link_order=0:detect_leaks=1:max_malloc_fill_size=0:log_path=$logs/asan" \
    UBSAN_OPTIONS="print_stacktrace=1:log_path=$logs/ubsan" \
    LSAN_OPTIONS="suppressions=$PWD/tools/sanitize_lsan.supp:print_suppressions=0" \
      run_suite "ASan+UBSan" build-asan -LE 'gpu|script' -E "$memory_bound_tests|$asan_only_excluded" "$@"
  else
    summary+=("ASan+UBSan: build failed (build-asan/build.log)")
  fi
fi

if [[ "$which" == all || "$which" == tsan ]]; then
  echo "sanitize: building build-tsan (thread)"
  if configure_and_build build-tsan "-fsanitize=thread -fno-omit-frame-pointer -g"; then
    logs="$PWD/build-tsan/sanitizer-logs"
    select=(-LE 'gpu|script')
    if [[ "${GMT_TSAN_ALL:-0}" == 1 ]]; then
      select+=(-E "$memory_bound_tests")
    else
      select+=(-E "$memory_bound_tests|fuzz\\.")
    fi
    # report_signal_unsafe=0: two reliability programs call exit() from a
    # signal handler on purpose (the tool's exit path then mallocs).
    TSAN_OPTIONS="log_path=$logs/tsan:halt_on_error=0:second_deadlock_stack=1:report_signal_unsafe=0" \
      run_suite "TSan" build-tsan "${select[@]}" "$@"
    if [[ "${GMT_TSAN_STRICT:-0}" != 1 ]]; then
      summary+=("  (TSan is informational: Debian's Abseil is not built with"
                "   -fsanitize=thread, so TSan cannot see absl::Mutex and reports"
                "   every access the engine guards with one as a race. Point"
                "   CMAKE_PREFIX_PATH at a TSan-built Abseil and set"
                "   GMT_TSAN_STRICT=1 to make its findings fail this script.)")
      tsan_informational=1
    fi
  else
    summary+=("TSan: build failed (build-tsan/build.log)")
  fi
fi

echo
echo "==== sanitize summary ===="
printf '%s\n' "${summary[@]}"
# Only the ASan+UBSan part decides the exit status unless GMT_TSAN_STRICT=1.
in_tsan=0
for s in "${summary[@]}"; do
  case "$s" in
    TSan:*) in_tsan=1 ;;
    ASan*) in_tsan=0 ;;
  esac
  if ((in_tsan)) && [[ "${tsan_informational:-0}" == 1 ]]; then continue; fi
  case "$s" in
    *"build failed"* | *"  failed:"* | *"first findings"*) exit 1 ;;
  esac
done
exit 0
