#!/usr/bin/env bash
# Packs this machine's `perf` with the shared libraries it needs into .perf/,
# a folder ignored by git for the device tool to carry (`carry: [".perf"]`,
# about 30 MiB, beside the parts of .device/ a run needs): the GPU machine
# has no perf, and a profile of a traced program's steady state is how the
# tool's host time per call is taken apart (docs/measurements.md).
#
# Usage: tools/perf_bundle.sh
# On the GPU machine: .perf/perf-wrap record ... -- PROGRAM, .perf/perf-wrap
# report ... (perf-wrap runs perf through the dynamic loader with .perf/lib,
# so the libraries are perf's alone and the profiled program keeps its own:
# Debian's libstdc++ is older than the one PyTorch needs on Ubuntu 24.04).
# glibc itself is not packed: the GPU machine's is newer.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT="$ROOT/.perf"
PERF="$(command -v perf || true)"
if [ -z "$PERF" ]; then
  echo "perf_bundle: no perf here (apt-get install linux-perf)" >&2
  exit 1
fi
rm -rf "$OUT"
mkdir -p "$OUT/lib"
cp "$(readlink -f "$PERF")" "$OUT/perf"
ldd "$PERF" | awk '$3 ~ /^\// {print $3}' | while read -r lib; do
  case "$(basename "$lib")" in
    libc.so* | libm.so* | libpthread* | libdl.so* | librt.so* | ld-linux*) ;;
    *) cp -L "$lib" "$OUT/lib/" ;;
  esac
done
cat >"$OUT/perf-wrap" <<'WRAP'
#!/bin/sh
# perf with its own libraries, for perf alone (not the program it runs).
D=$(cd "$(dirname "$0")" && pwd)
exec /lib64/ld-linux-x86-64.so.2 --library-path "$D/lib" "$D/perf" "$@"
WRAP
chmod +x "$OUT/perf-wrap"
"$OUT/perf-wrap" --version
du -sh "$OUT"
