#!/usr/bin/env bash
# The wheel (tools/build_wheel.sh) from this build, installed with pip into a
# fresh virtual environment with nothing else: its console script runs the
# launcher with the library beside it, and its Python API answers inside a
# traced process and refuses clearly outside one.
#
#   check_wheel.sh BUILD_DIR WORK_DIR
# Exit 77 (skip) where no wheel can be packed or no venv made here.
set -uo pipefail
BUILD="$1"
WORK="$2"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
rm -rf "$WORK" && mkdir -p "$WORK"
fail() { echo "check_wheel: $*" >&2; exit 1; }

WHEEL="$(GMT_BUILD_DIR="$BUILD" bash "$ROOT/tools/build_wheel.sh" "$WORK/dist")"
rc=$?
[ $rc -eq 77 ] && exit 77
[ $rc -eq 0 ] && [ -f "$WHEEL" ] || fail "build_wheel.sh failed ($rc)"
case "$(basename "$WHEEL")" in
  gpumemtrace-*-py3-none-manylinux_*_"$(uname -m)".whl) ;;
  *) fail "unexpected wheel name $(basename "$WHEEL")" ;;
esac
python3 -m venv "$WORK/venv" >/dev/null 2>&1 || exit 77
V="$WORK/venv/bin"
"$V/pip" install -q --no-index "$WHEEL" || fail "pip install failed"

"$V/gpumemtrace" --help | grep -q "gpumemtrace run" ||
  fail "the console script does not run the launcher"
out="$("$V/python" -c '
import gpumemtrace, gpumemtrace.torch
print("outside", gpumemtrace.active())
try:
    gpumemtrace.snapshot()
except gpumemtrace.NotTracedError:
    print("refused")
try:
    gpumemtrace.torch.enable()
except RuntimeError as e:
    print("torch refused" if "gpumemtrace run --torch" in str(e) else e)
')" || fail "the package does not import"
[ "$out" = "$(printf 'outside False\nrefused\ntorch refused')" ] ||
  fail "outside a traced process: $out"
out="$(cd "$WORK" && "$V/gpumemtrace" run --report none -- "$V/python" -c '
import gpumemtrace
s = gpumemtrace.snapshot()
print("inside", gpumemtrace.active(), "active" in s, gpumemtrace.check_now(),
      gpumemtrace.live_bytes(-2))
')" || fail "the launcher failed"
[ "$out" = "inside True True 0 0" ] || fail "inside a traced process: $out"
# The optional libraries ride along where the build machine has them.
for so in libunwind.so.8 libdw.so.1 libelf.so.1; do
  if ldconfig -p 2>/dev/null | grep "^\s*$so " >/dev/null; then
    ls "$WORK/venv/lib/"python3*/site-packages/gpumemtrace/_bin/$so >/dev/null ||
      fail "the wheel lacks $so"
  fi
done
# Nothing but glibc, libstdc++ and libgcc.
lib="$WORK/venv/lib/"python3*/site-packages/gpumemtrace/_bin/libgpumemtrace.so
needed="$(readelf -d $lib | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | sort | tr '\n' ' ')"
for n in $needed; do
  case "$n" in
    libc.so.*|libm.so.*|libstdc++.so.*|libgcc_s.so.*|libdl.so.*|libpthread.so.*|ld-linux*) ;;
    *) fail "the wheel's library needs $n" ;;
  esac
done
echo "check_wheel: $(basename "$WHEEL") ok (needs: $needed)"
