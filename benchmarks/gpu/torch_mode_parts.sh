#!/usr/bin/env bash
# Where tensor mode's time goes: examples/pytorch_cnn.py's step time under
# option sets that each take one part of the tool away, in interleaved
# rounds, medians, each as a ratio to PyTorch's own allocator without the
# tool (the perf suite's pytorch "torch" row is the whole of it):
#
#   plain          no tool, PyTorch's native caching allocator (the base)
#   plain_async    no tool, PyTorch's cudaMallocAsync backend (what tensor
#                  mode switches to)
#   torch          torch=1 (tensor mode, default quarantine)
#   noreuse        torch=1:quarantine_reuse=0: every tensor from CUDA, none
#                  served by a checked block
#   guard0         torch=1:guard=0: tracking and stacks, no redzones
#   nostacks       torch=1:stack_depth=0:python_stacks=0: redzones, no stacks
#   nopython       torch=1:python_stacks=0: native stacks only
#   q0             torch=1:quarantine_bytes=0: freed tensors not held
#   q256, q1024    torch=1 with a 256 MiB / 1 GiB quarantine (fewer, larger
#                  evictions against more reserved memory)
#   checkexit      torch=1:check=exit: no zone checks at synchronizations
#   freed1m        torch=1:freed_check_bytes=1048576: a freed tensor's first
#                  and last 512 KiB poisoned and checked, not all of it (the
#                  CNN frees about eight 33.5 MB activations a step: their
#                  poison and checks are ~0.5 GB of GPU memory traffic)
#   freed4m        torch=1:freed_check_bytes=4194304: 2 MiB at each end
#   default        the tool's default options without tensor mode (redzones
#                  around PyTorch's cached segments, checks at
#                  synchronizations)
#   checkkernel    check=kernel without tensor mode (a check after each
#                  kernel that reaches a guarded segment)
#
# Usage: torch_mode_parts.sh LIB [SCRIPT] [WORK_DIR]
#   LIB     libgpumemtrace.so
#   SCRIPT  the training script [examples/pytorch_cnn.py beside this repo]
# Environment: GMT_PARTS_ROUNDS [3], GMT_PARTS_STEPS [300], GMT_PARTS_SETS
#   (a subset of the names above, in that order [all]), GMT_PYTHON [python3],
#   GMT_PARTS_BUDGET_S (seconds: no run starts that the longest run so far
#   would take past it, so a device call's limit cuts no summary [none]),
#   GMT_PARTS_BASE_LIB (another libgpumemtrace.so, e.g. the bundle of the
#   commit before a change: each set with the tool also runs with it, as
#   "<set>@base", in the same rounds, so the change is measured against its
#   base on one machine, interleaved).
# Output: a line per run (for runs with the tool, then the tool's own
# "tool time per call:" line: its host time per allocation, free, launch and
# synchronization, the program's own CUDA call left out, and its "stack
# capture:" line: the average native, Python and depot cost of one capture;
# both 1 in 64 timed; its "tool GPU calls," line: of those calls' time, what
# went to the tool's fills, checks, polls, releases and capture queries; and
# its "program-stream fills:" line: the tensor fills
# by how many zones each held; and its "reuse of checked blocks:" line:
# allocations served by reuse, and why the others were not), then one line
# per set:
#   <set>  median <ms> ms/step  <ratio>x  paired <ratio>x  reserved <MB> MB
#          (<each run>)
# where "paired" is the median of each round's ratio to that round's plain
# run (a box whose speed drifts between rounds moves both alike), and
# RESULT torch_mode_parts <set>=<ratio> ...
set -uo pipefail

usage="usage: torch_mode_parts.sh LIB [SCRIPT] [WORK_DIR]"
LIB="${1:?$usage}"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
SCRIPT="${2:-$HERE/../../examples/pytorch_cnn.py}"
WORK="${3:-$(mktemp -d)}"
mkdir -p "$WORK" && WORK="$(cd "$WORK" && pwd)"
[ -f "$LIB" ] || { echo "torch_mode_parts: missing $LIB" >&2; exit 1; }
[ -f "$SCRIPT" ] || { echo "torch_mode_parts: missing $SCRIPT" >&2; exit 1; }
LIB="$(cd "$(dirname "$LIB")" && pwd)/$(basename "$LIB")"
PY="${GMT_PYTHON:-python3}"
ROUNDS="${GMT_PARTS_ROUNDS:-3}"
STEPS="${GMT_PARTS_STEPS:-300}"
SETS="${GMT_PARTS_SETS:-plain plain_async torch noreuse guard0 nostacks nopython q0 q256 q1024 checkexit freed1m}"

options() {  # the GMT_OPTIONS of a set; "-" for a run without the tool
  case "$1" in
    plain | plain_async) echo - ;;
    torch) echo "torch=1" ;;
    noreuse) echo "torch=1:quarantine_reuse=0" ;;
    default) echo "check=sync" ;;
    checkkernel) echo "check=kernel" ;;
    guard0) echo "torch=1:guard=0" ;;
    nostacks) echo "torch=1:stack_depth=0:python_stacks=0" ;;
    nopython) echo "torch=1:python_stacks=0" ;;
    q0) echo "torch=1:quarantine_bytes=0" ;;
    q256) echo "torch=1:quarantine_bytes=268435456" ;;
    q1024) echo "torch=1:quarantine_bytes=1073741824" ;;
    checkexit) echo "torch=1:check=exit" ;;
    freed1m) echo "torch=1:freed_check_bytes=1048576" ;;
    freed4m) echo "torch=1:freed_check_bytes=4194304" ;;
    *) echo "torch_mode_parts: unknown set $1" >&2; exit 2 ;;
  esac
}

LINES="$WORK/lines.txt"
: >"$LINES"
BASE_LIB="${GMT_PARTS_BASE_LIB:-}"
if [ -n "$BASE_LIB" ]; then
  [ -f "$BASE_LIB" ] || { echo "torch_mode_parts: missing $BASE_LIB" >&2; exit 1; }
  BASE_LIB="$(cd "$(dirname "$BASE_LIB")" && pwd)/$(basename "$BASE_LIB")"
fi

# run_line NAME ERR: the run's line (exit status, step time, reserved
# memory), then, for a run with the tool, its own host time per call by
# kind, what one stack capture cost by part, how many zones its fills on the
# program's streams held (memsets or a fill launch), which of its own GPU
# calls the timed calls' time went to, and what reuse served (verbosity=1).
run_line() {
  local rc=$? name="$1" err="$2" line
  line="$(grep -o 'step_ms=[0-9.]* reserved_mb=[0-9.]*' "$err" | tail -1)"
  echo "$name $round rc=$rc $line" | tee -a "$LINES"
  grep -o 'tool time per call: .*' "$err" | tail -1 | sed 's/^/    /'
  grep -o 'stack capture: .*' "$err" | tail -1 | sed 's/^/    /'
  grep -o 'program-stream fills: .*' "$err" | tail -1 | sed 's/^/    /'
  grep -o 'tool GPU calls, .*' "$err" | tail -1 | sed 's/^/    /'
  grep -o 'reuse of checked blocks: .*' "$err" | tail -1 | sed 's/^/    /'
  # A run whose fast unwinder or symbolizer did not load is not comparable
  # with one whose did (glibc's backtrace() costs ~7x a capture).
  grep -o '[^ ]* could not be loaded: .*' "$err" | sort -u | sed 's/^/    NOTE /'
}
BUDGET_S="${GMT_PARTS_BUDGET_S:-}"
case "$BUDGET_S" in
  '' | *[!0-9]*) [ -z "$BUDGET_S" ] ||
    { echo "torch_mode_parts: GMT_PARTS_BUDGET_S must be seconds" >&2; exit 2; } ;;
esac
START_S="$(date +%s)"
LONGEST_S=0
STOPPED=""
# fits: whether a run as long as the longest so far ends within the budget.
fits() {
  [ -z "$BUDGET_S" ] && return 0
  [ $(($(date +%s) - START_S + LONGEST_S)) -le "$BUDGET_S" ]
}
# timed CMD...: runs CMD, keeps LONGEST_S.
timed() {
  local t0 rc took
  t0="$(date +%s)"
  "$@"
  rc=$?
  took=$(($(date +%s) - t0))
  [ "$took" -gt "$LONGEST_S" ] && LONGEST_S="$took"
  return "$rc"
}
for round in $(seq 1 "$ROUNDS"); do
  [ -n "$STOPPED" ] && break
  for set in $SETS; do
    opts="$(options "$set")" || exit 2
    err="$WORK/$set.$round.err"
    if ! fits; then
      STOPPED="round $round, before $set"
      echo "torch_mode_parts: budget of ${BUDGET_S}s reached ($STOPPED):" \
        "the summary covers the runs made"
      break
    fi
    if [ "$opts" = - ]; then
      if [ "$set" = plain_async ]; then
        PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync \
          timed "$PY" "$SCRIPT" --steps "$STEPS" >/dev/null 2>"$err"
      else
        timed "$PY" "$SCRIPT" --steps "$STEPS" >/dev/null 2>"$err"
      fi
      run_line "$set" "$err"
      continue
    fi
    for lib in "$LIB" ${BASE_LIB:+"$BASE_LIB"}; do
      name="$set"
      [ "$lib" = "$LIB" ] || name="$set@base"
      err="$WORK/$name.$round.err"
      # The optional libraries (libunwind, libdw) the tool loads from its
      # own folder are found beside LIB for a base library kept elsewhere.
      LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$(dirname "$LIB")" \
        LD_PRELOAD="$lib" GMT_OPTIONS="$opts:report=none:verbosity=1" \
        timed "$PY" "$SCRIPT" --steps "$STEPS" >/dev/null 2>"$err"
      run_line "$name" "$err"
    done
  done
done

python3 - "$LINES" <<'PYEOF'
import collections
import re
import statistics
import sys

steps = collections.defaultdict(list)
reserved = collections.defaultdict(list)
by_round = collections.defaultdict(dict)  # round -> set -> ms
order = []
for line in open(sys.argv[1]):
    m = re.match(r"(\S+) (\d+) rc=0 step_ms=([0-9.]+) reserved_mb=([0-9.]+)",
                 line)
    if not m:
        continue
    name, rnd, ms = m.group(1), int(m.group(2)), float(m.group(3))
    if name not in order:
        order.append(name)
    steps[name].append(ms)
    reserved[name].append(float(m.group(4)))
    by_round[rnd][name] = ms
base = statistics.median(steps["plain"]) if steps["plain"] else None
ratios = []
for name in order:
    med = statistics.median(steps[name])
    ratio = med / base if base else float("nan")
    pairs = [r[name] / r["plain"] for r in by_round.values()
             if name in r and r.get("plain")]
    paired = statistics.median(pairs) if pairs else float("nan")
    ratios.append("%s=%.3f" % (name, ratio))
    print("%-12s median %.3f ms/step  %.2fx  paired %.2fx  reserved %.0f MB"
          "  (%s)" % (name, med, ratio, paired,
                      statistics.median(reserved[name]),
                      " ".join("%.2f" % v for v in steps[name])))
print("RESULT torch_mode_parts " + " ".join(ratios))
PYEOF
