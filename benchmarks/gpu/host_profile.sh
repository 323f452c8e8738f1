#!/usr/bin/env bash
# Where the host time of a program under the tool goes in its steady state:
# perf attaches to the running program after its start-up (PyTorch's import
# would be most of a whole-process profile), records a few seconds with
# DWARF call graphs, and prints
#   - self time by shared object,
#   - self time of the tool's library by symbol,
#   - inclusive time (children) of the tool's symbols: which of its entry
#     points and parts the driver's, libc's and libunwind's time is spent
#     under.
# Needs perf: on the GPU machine, the one tools/perf_bundle.sh packs into
# .perf/ (carry it), found as .perf/perf-wrap beside this repo, else perf.
#
# Usage: host_profile.sh LIB OPTIONS -- PROGRAM [ARGS...]
#   LIB      libgpumemtrace.so ("-" for the program without the tool)
#   OPTIONS  GMT_OPTIONS (e.g. torch=1); report=none:verbosity=1 are added
# Environment: GMT_PROFILE_DELAY seconds before recording [12],
#   GMT_PROFILE_SECONDS recorded [4], GMT_PROFILE_HZ [499],
#   GMT_PROFILE_TOP lines of each table [40], GMT_PROFILE_REPORT_LIMIT_S
#   seconds the inclusive table may take [120] (perf unwinds every sample
#   for it: over two minutes for 4 s of a PyTorch process on an H100 box).
# Output: the program's own last lines (the tool's verbosity=1 exit log),
# then each thread's busy share and the four tables. The program should
# run for at least DELAY +
# SECONDS (e.g. examples/pytorch_cnn.py --steps 6000).
set -uo pipefail

usage="usage: host_profile.sh LIB OPTIONS -- PROGRAM [ARGS...]"
LIB="${1:?$usage}"
OPTS="${2?$usage}"
[ "${3:-}" = "--" ] || { echo "$usage" >&2; exit 2; }
shift 3
[ $# -gt 0 ] || { echo "$usage" >&2; exit 2; }
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PERF="$HERE/../../.perf/perf-wrap"
[ -x "$PERF" ] || PERF="$(command -v perf || true)"
[ -n "$PERF" ] || { echo "host_profile: no perf (tools/perf_bundle.sh)" >&2; exit 1; }
DELAY="${GMT_PROFILE_DELAY:-12}"
SECONDS_RECORDED="${GMT_PROFILE_SECONDS:-4}"
HZ="${GMT_PROFILE_HZ:-499}"
TOP="${GMT_PROFILE_TOP:-40}"
REPORT_LIMIT="${GMT_PROFILE_REPORT_LIMIT_S:-120}"
case "$REPORT_LIMIT" in
  '' | *[!0-9]*) echo "host_profile: GMT_PROFILE_REPORT_LIMIT_S must be whole seconds" >&2; exit 2 ;;
esac
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

if [ "$LIB" = - ]; then
  "$@" >"$WORK/out.txt" 2>&1 &
else
  [ -f "$LIB" ] || { echo "host_profile: missing $LIB" >&2; exit 1; }
  LD_PRELOAD="$LIB" GMT_OPTIONS="$OPTS:report=none:verbosity=1" \
    "$@" >"$WORK/out.txt" 2>&1 &
fi
pid=$!
# perf names a shared object by its file, not the link that was preloaded.
DSO=libgpumemtrace.so
[ "$LIB" = - ] || DSO="$(basename "$(readlink -f "$LIB")")"
sleep "$DELAY"
if ! kill -0 "$pid" 2>/dev/null; then
  echo "host_profile: the program ended within ${DELAY}s" >&2
  tail -5 "$WORK/out.txt" >&2
  exit 1
fi
"$PERF" record -F "$HZ" --call-graph dwarf,16384 -p "$pid" \
  -o "$WORK/perf.data" -- sleep "$SECONDS_RECORDED" >/dev/null 2>&1
wait "$pid"
# The program's exit log first: it is read at once, where the tables below
# take perf minutes on a PyTorch process (the inclusive one unwinds every
# sample), and a call's time limit must not cost it.
echo "== the program's last lines"
tail -8 "$WORK/out.txt"
# How busy each thread was: its samples against HZ x SECONDS (a thread that
# never waits has them all). A step bound by the host shows its launching
# thread near 100%; one bound by the GPU leaves it waiting in the driver.
echo "== busy share of each thread (samples / (HZ x seconds recorded))"
"$PERF" report -i "$WORK/perf.data" --no-children --sort pid -g none \
  --stdio -F sample,pid 2>/dev/null | grep -E '^ +[0-9]' | head -n 8 |
  awk -v all="$((HZ * SECONDS_RECORDED))" \
    '{ printf "  %6.1f%%  %s\n", 100 * $1 / all, $0 }'
echo "== self time by shared object"
"$PERF" report -i "$WORK/perf.data" --no-children --sort dso -g none \
  --stdio 2>/dev/null | grep '%' | head -n 15
echo "== self time by symbol, every object"
"$PERF" report -i "$WORK/perf.data" --no-children --sort dso,sym -g none \
  --stdio 2>/dev/null | grep '%' | head -n "$TOP"
echo "== self time of the tool's library by symbol"
"$PERF" report -i "$WORK/perf.data" --no-children --sort sym -g none \
  --dsos "$DSO" --stdio 2>/dev/null |
  grep '%' | head -n "$TOP"
echo "== inclusive time of the tool's symbols (children)"
timeout "$REPORT_LIMIT" "$PERF" report -i "$WORK/perf.data" --children \
  --sort sym -g none --stdio 2>/dev/null >"$WORK/children.txt"
rc=$?
grep '%' "$WORK/children.txt" |
  grep -E 'gmt::|Shim_|Tracked|Guarded|cuda[A-Z]' | head -n "$TOP"
[ "$rc" -eq 124 ] &&
  echo "(cut: perf report took over ${REPORT_LIMIT}s; GMT_PROFILE_REPORT_LIMIT_S)"
exit 0
