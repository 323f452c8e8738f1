#!/usr/bin/env bash
# Builds the gpumemtrace wheel: the library, the launcher (as the console
# script `gpumemtrace`) and the Python package python/gpumemtrace.
#
#   bash tools/build_wheel.sh [OUT_DIR]        (default: dist/)
#
# The library and launcher come from GMT_BUILD_DIR (default: build-wheel,
# configured and built here as Release when it has no library yet), stripped.
# Both are self-contained (Abseil linked in; only glibc, libstdc++ and libgcc
# are needed), so the wheel is tagged py3-none-manylinux_<glibc>_<arch> with
# the glibc of the machine that built it: it installs where that glibc or a
# newer one runs. It also carries libunwind, libdw and libelf where this
# machine has them (optional at run time, looked for beside the library
# first). The wheel is packed by the `wheel` package (`python3 -m
# wheel pack`), which writes its RECORD.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT_DIR="$(mkdir -p "${1:-$ROOT/dist}" && cd "${1:-$ROOT/dist}" && pwd)"
BUILD="${GMT_BUILD_DIR:-$ROOT/build-wheel}"
PY="${GMT_WHEEL_PYTHON:-python3}"

if ! "$PY" -c "import wheel" 2>/dev/null; then
  for candidate in /usr/bin/python3; do
    if "$candidate" -c "import wheel" 2>/dev/null; then PY="$candidate"; break; fi
  done
fi
if ! "$PY" -c "import wheel" 2>/dev/null; then
  echo "build_wheel: the 'wheel' package is missing (apt install python3-wheel," \
       "or pip install wheel)" >&2
  exit 77
fi

LIB="$BUILD/interpose/libgpumemtrace.so"
LAUNCHER="$BUILD/bin/gpumemtrace"
if [ ! -f "$LIB" ] || [ ! -f "$LAUNCHER" ]; then
  export PATH="/usr/local/cuda/bin:$PATH"
  cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release \
    -DGMT_BUILD_TESTS=OFF -DGMT_BUILD_EXAMPLES=OFF -DGMT_BUILD_BENCHMARKS=OFF \
    >/dev/null
  cmake --build "$BUILD" -j"$(nproc)" --target gpumemtrace gmt_launcher >/dev/null
fi
for f in "$LIB" "$LAUNCHER"; do
  [ -f "$f" ] || { echo "build_wheel: $f was not built" >&2; exit 1; }
done

VERSION="$(sed -n 's/^project(gpumemtrace VERSION \([0-9.]*\).*/\1/p' "$ROOT/CMakeLists.txt")"
GLIBC="$(getconf GNU_LIBC_VERSION | sed 's/^glibc \([0-9]*\)\.\([0-9]*\).*/\1_\2/')"
ARCH="$(uname -m)"
TAG="py3-none-manylinux_${GLIBC}_${ARCH}"

STAGE="$(mktemp -d)"
trap 'rm -rf "$STAGE"' EXIT
PKG="$STAGE/gpumemtrace-$VERSION"
mkdir -p "$PKG/gpumemtrace/_bin" "$PKG/gpumemtrace-$VERSION.dist-info"
cp "$ROOT"/python/gpumemtrace/*.py "$PKG/gpumemtrace/"
strip --strip-debug -o "$PKG/gpumemtrace/_bin/libgpumemtrace.so" "$LIB"
strip --strip-debug -o "$PKG/gpumemtrace/_bin/gpumemtrace" "$LAUNCHER"
chmod 755 "$PKG/gpumemtrace/_bin/gpumemtrace"
# The optional libraries the library loads at run time from beside itself
# first (lib/core/optional_library.h): libunwind (stack capture ~10x faster
# than glibc's backtrace()), libdw and libelf (file:line). A GPU machine often
# has none of them; the wheel carries this machine's copies where it has them.
for so in libunwind.so.8 libelf.so.1 libdw.so.1; do
  found="$(ldconfig -p 2>/dev/null | awk -v n="$so" \
    '$1 == n && /x86-64|aarch64|AArch64/ && !f {f = $NF} END {print f}')"
  if [ -n "$found" ] && [ -f "$found" ]; then
    strip --strip-debug -o "$PKG/gpumemtrace/_bin/$so" "$(readlink -f "$found")"
  else
    echo "build_wheel: $so not found here; the wheel goes without it" >&2
  fi
done

INFO="$PKG/gpumemtrace-$VERSION.dist-info"
cat >"$INFO/METADATA" <<META
Metadata-Version: 2.1
Name: gpumemtrace
Version: $VERSION
Summary: Finds and explains GPU memory errors in CUDA and PyTorch programs
Requires-Python: >=3.8
Description-Content-Type: text/markdown

$(cat "$ROOT/python/README.md")
META
cat >"$INFO/WHEEL" <<META
Wheel-Version: 1.0
Generator: gpumemtrace tools/build_wheel.sh
Root-Is-Purelib: false
Tag: $TAG
META
cat >"$INFO/entry_points.txt" <<META
[console_scripts]
gpumemtrace = gpumemtrace._launcher:main
META

"$PY" -m wheel pack "$PKG" -d "$OUT_DIR" >/dev/null
WHEEL="$OUT_DIR/gpumemtrace-$VERSION-$TAG.whl"
[ -f "$WHEEL" ] || { echo "build_wheel: no wheel written" >&2; exit 1; }
echo "$WHEEL"
