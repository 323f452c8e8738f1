#!/usr/bin/env bash
# clang-tidy over the library, the interposer and the CLI with the repo's
# .clang-tidy; prints each warning and exits 1 if there is any.
#
# Usage: tools/tidy.sh [BUILD_DIR] [FILE...]
#   BUILD_DIR  a build tree configured with -DCMAKE_EXPORT_COMPILE_COMMANDS=ON
#              (default build)
#   FILE       only these sources (default: every .cc under lib/, interpose/,
#              cli/)
# Environment: GMT_JOBS (parallel clang-tidy processes, default nproc).
# About 4 minutes for the whole tree on the 2-core CI machine.
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT" || exit 2
BUILD="${1:-build}"
shift $(($# > 0 ? 1 : 0))
command -v clang-tidy >/dev/null 2>&1 || {
  echo "tidy: clang-tidy not found (apt-get install clang-tidy)" >&2
  exit 2
}
[ -f "$BUILD/compile_commands.json" ] || {
  echo "tidy: no $BUILD/compile_commands.json: configure with" \
    "-DCMAKE_EXPORT_COMPILE_COMMANDS=ON" >&2
  exit 2
}
if [ $# -gt 0 ]; then
  files=("$@")
else
  mapfile -t files < <(find lib interpose cli -name '*.cc' | sort)
fi
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
printf '%s\n' "${files[@]}" |
  xargs -P"${GMT_JOBS:-$(nproc)}" -n4 clang-tidy -p "$BUILD" --quiet \
    >"$log" 2>/dev/null
# A file clang-tidy cannot parse reports an error: that fails too.
warnings="$(grep -cE '(warning|error):' "$log")"
if [ "$warnings" -gt 0 ]; then
  grep -A2 -E '(warning|error):' "$log"
  echo "tidy: $warnings warning(s) or error(s) in ${#files[@]} file(s)"
  exit 1
fi
echo "tidy: ${#files[@]} file(s), no warnings"
