#!/usr/bin/env bash
# Builds a Release tree here and packs what a GPU run needs into .device/, a
# folder ignored by git that the device tool carries (`carry: [".device"]`) to
# the GPU machine, where tools/device_run.sh runs it. See DESIGN.md §6.
#
# Usage: tools/device_bundle.sh [TEST_BINARY...]
#   TEST_BINARY   extra executables to ship into .device/unit/ (paths, or
#                 names found under build-release/); device_run.sh runs each.
# Environment:
#   GMT_BUILD_DIR   build tree (default build-release)
#   GMT_JOBS        parallel build jobs (default 2)
#   GMT_CMAKE_ARGS  extra arguments for the configure step
#   GMT_BUNDLE_MAX_MIB  size limit of the bundle (default 60)
#   GMT_BUNDLE_TARGETS  build only these targets (the rest of the tree as it
#                   is), e.g. "gpumemtrace gpumemtrace_cli" for a quick rerun;
#                   the example programs are always built
#
# Layout of .device/:
#   lib/        libgpumemtrace.so and the shared libraries that a stock
#               Ubuntu 24.04 + CUDA 13 image lacks (Debian's Abseil,
#               libbenchmark, GoogleTest, libdw.so.1 + libelf.so.1, ...)
#   bin/        the gpumemtrace launcher, if the build has one
#   examples/   the example programs and the Python examples (examples/*.py)
#   tests/      tests/gpu/gpu_tests.py
#   bench/      benchmark executables from build-release/benchmarks and the
#               scripts in benchmarks/gpu/
#   unit/       the TEST_BINARY arguments
#   corpus/     the differential corpus (the build's tests/gpu/corpus/programs)
#   MANIFEST.txt  commit, build date, every file with its size
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT" || exit 1
BUILD="${GMT_BUILD_DIR:-build-release}"
JOBS="${GMT_JOBS:-2}"
BUNDLE="$ROOT/.device"
MAX_MIB="${GMT_BUNDLE_MAX_MIB:-60}"

CONF_LOG="/tmp/device_bundle.configure.$$.log"
BUILD_LOG="/tmp/device_bundle.build.$$.log"

log() { printf 'device_bundle: %s\n' "$*"; }
die() { printf 'device_bundle: error: %s\n' "$*" >&2; exit 1; }

# --- 1. Build ----------------------------------------------------------------
log "configuring $BUILD (Release)"
# shellcheck disable=SC2086
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release ${GMT_CMAKE_ARGS:-} \
  >"$CONF_LOG" 2>&1 ||
  { tail -40 "$CONF_LOG"; die "configure failed"; }
log "building (-j$JOBS)"
partial=0
build_args=()
if [ -n "${GMT_BUNDLE_TARGETS:-}" ]; then
  # shellcheck disable=SC2206
  build_args=(--target ${GMT_BUNDLE_TARGETS} $(
    cmake --build "$BUILD" --target help 2>/dev/null |
      sed -n 's/^\.\.\. \(gmt_example_[A-Za-z0-9_]*\).*/\1/p'))
fi
if ! cmake --build "$BUILD" -j"$JOBS" "${build_args[@]}" >"$BUILD_LOG" 2>&1
then
  grep -E 'error|Error' "$BUILD_LOG" | head -30
  log "the full build failed; trying the library and the examples alone"
  targets=(gpumemtrace)
  while read -r t; do targets+=("$t"); done < <(
    cmake --build "$BUILD" --target help 2>/dev/null |
      sed -n 's/^\.\.\. \(gmt_example_[A-Za-z0-9_]*\).*/\1/p')
  cmake --build "$BUILD" -j"$JOBS" --target "${targets[@]}" ||
    die "the library or an example does not build"
  partial=1
  log "WARNING: bundling a partial build (see $BUILD_LOG)"
fi

# --- 2. Collect ----------------------------------------------------------------
rm -rf "$BUNDLE"
mkdir -p "$BUNDLE"/{lib,bin,examples,tests,bench,unit}

is_elf() { [ -f "$1" ] && head -c4 "$1" 2>/dev/null | grep -q 'ELF'; }

lib_src="$(find "$BUILD" -name 'libgpumemtrace.so*' \( -type f -o -type l \) \
  -not -path '*/CMakeFiles/*' | sort | head -1)"
[ -n "$lib_src" ] || die "libgpumemtrace.so not found under $BUILD"
cp -L "$lib_src" "$BUNDLE/lib/libgpumemtrace.so"
log "library: $lib_src"

# The launcher (DESIGN §4: "gpumemtrace run ..."), wherever the build put it.
while read -r f; do
  is_elf "$f" && cp -L "$f" "$BUNDLE/bin/" && log "launcher: $f"
done < <(find "$BUILD" -type f -name gpumemtrace -perm -u+x \
  -not -path '*/CMakeFiles/*' 2>/dev/null)

[ -d "$BUILD/examples" ] || die "no $BUILD/examples (is nvcc found?)"
n_examples=0
for f in "$BUILD"/examples/*; do
  if is_elf "$f" && [ -x "$f" ]; then
    cp "$f" "$BUNDLE/examples/"
    n_examples=$((n_examples + 1))
  fi
done
cp examples/*.py "$BUNDLE/examples/"
cp examples/pytorch_profile.py "$BUNDLE/examples/"
log "examples: $n_examples programs"

cp tests/gpu/gpu_tests.py tests/gpu/gpu_cases_*.py "$BUNDLE/tests/" 2>/dev/null || cp tests/gpu/gpu_tests.py "$BUNDLE/tests/"

if [ -d "$BUILD/benchmarks" ]; then
  while read -r f; do
    is_elf "$f" && cp "$f" "$BUNDLE/bench/" && log "benchmark: $f"
  done < <(find "$BUILD/benchmarks" -type f -perm -u+x \
    -not -path '*/CMakeFiles/*' 2>/dev/null)
fi
cp benchmarks/gpu/*.sh benchmarks/gpu/*.py "$BUNDLE/bench/" 2>/dev/null || true

for t in "$@"; do
  src="$t"
  if [ ! -f "$src" ]; then
    src="$(find "$BUILD" -type f -name "$(basename "$t")" -perm -u+x \
      -not -path '*/CMakeFiles/*' | head -1)"
  fi
  [ -n "$src" ] && is_elf "$src" || die "test binary not found: $t"
  cp "$src" "$BUNDLE/unit/"
  log "unit test: $src"
done

# --- 3. Shared libraries the device image lacks ------------------------------
# Everything ldd resolves is copied except what a stock Ubuntu 24.04 + CUDA 13
# image has (glibc, the C++ runtime, compression libraries, CUDA and driver
# libraries): copying those from here would shadow the device's newer ones.
stock_re='^(linux-vdso|ld-linux|libc\.so|libm\.so|libdl\.so|libpthread\.so|librt\.so|libutil\.so|libresolv\.so|libstdc\+\+\.so|libgcc_s\.so|libatomic\.so|libz\.so|liblzma\.so|libbz2\.so|libzstd\.so|libcuda\.so|libcudart\.so|libcublas|libcublasLt|libcupti|libnvrtc|libnvJitLink|libcufft|libcurand|libcusparse|libcusolver|libnvidia-|libnvperf|libOpenCL|libpython|libgomp)'
declare -A copied=()
missing=()
copy_deps() {
  local file="$1" line name path
  while read -r line; do
    name="${line%% *}"
    [ -n "$name" ] || continue
    if [[ "$line" == *"=> not found"* ]]; then
      [[ "$name" =~ $stock_re ]] || missing+=("$name (for $(basename "$file"))")
      continue
    fi
    path="$(sed -n 's/.*=> \(\/[^ ]*\).*/\1/p' <<<"$line")"
    [ -n "$path" ] || continue
    [[ "$name" =~ $stock_re ]] && continue
    [ -n "${copied[$name]:-}" ] && continue
    [ -e "$BUNDLE/lib/$name" ] && continue
    cp -L "$path" "$BUNDLE/lib/$name"
    copied[$name]="$path"
  done < <(ldd "$file" 2>/dev/null | sed 's/^[[:space:]]*//')
}
# libdw/libelf (symbolizer) and libunwind (fast stack capture) are dlopen()ed,
# so ldd cannot see them.
for extra in libdw.so.1 libelf.so.1 libunwind.so.8; do
  path="$(ldconfig -p | awk -v n="$extra" '$1 == n && /x86-64/ {print $NF; exit}')"
  if [ -n "$path" ]; then
    cp -L "$path" "$BUNDLE/lib/$extra"
    copied[$extra]="$path"
  else
    log "WARNING: $extra not found here: stacks will lack file:line there"
  fi
done
while read -r f; do
  is_elf "$f" && copy_deps "$f"
done < <(find "$BUNDLE" -type f)
# A second pass picks up what the copied libraries need in turn.
for f in "$BUNDLE"/lib/*; do copy_deps "$f"; done
log "bundled libraries: ${#copied[@]} ($(printf '%s\n' "${!copied[@]}" |
  sed 's/\.so.*//' | sort -u | sed 's/^libabsl_.*/libabsl_*/' | sort -u |
  tr '\n' ' '))"
if [ ${#missing[@]} -gt 0 ]; then
  log "WARNING: not found here and not expected on the device:"
  printf '  %s\n' "${missing[@]}"
fi

# --- 4. Debug information -------------------------------------------------------
# The device runs report the programs' stacks, not the tool's own lines, and
# the carry limit is small: the tool, its launcher, benchmarks and bundled
# libraries lose their debug sections (symbols stay, for the tool's own
# frames). The examples keep theirs: their file:line is what the tests check.
for f in "$BUNDLE"/lib/* "$BUNDLE"/bin/* "$BUNDLE"/bench/* "$BUNDLE"/unit/*; do
  is_elf "$f" && strip --strip-debug "$f" 2>/dev/null
done

# --- 5. The differential corpus ------------------------------------------------
# The corpus' build folder (tests/gpu/corpus/CMakeLists.txt), when built.
if [ -f "$BUILD/tests/gpu/corpus/programs/corpus.json" ]; then
  cp -r "$BUILD/tests/gpu/corpus/programs" "$BUNDLE/corpus"
  strip --strip-debug "$BUNDLE"/corpus/* 2>/dev/null
  log "corpus: $(find "$BUNDLE/corpus" -type f -perm -u+x | wc -l) programs"
fi

# --- 6. Manifest and size ------------------------------------------------------
{
  echo "gpumemtrace device bundle"
  echo "commit: $(git rev-parse HEAD 2>/dev/null || echo none)$(
    git diff --quiet HEAD 2>/dev/null || echo ' (+ uncommitted changes)')"
  echo "built: $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(uname -n), $BUILD"
  echo "glibc here: $(ldd --version 2>/dev/null | head -1)"
  echo
  (cd "$BUNDLE" && find . -type f ! -name MANIFEST.txt -printf '%10s  %P\n' |
    sort -k2)
} >"$BUNDLE/MANIFEST.txt"

bytes="$(du -sb "$BUNDLE" | cut -f1)"
mib="$(awk -v b="$bytes" 'BEGIN { printf "%.1f", b / 1048576 }')"
log "bundle: $BUNDLE, $(find "$BUNDLE" -type f | wc -l) files, $mib MiB"
if [ "$bytes" -gt $((MAX_MIB * 1048576)) ]; then
  log "largest files:"
  find "$BUNDLE" -type f -printf '%s %P\n' | sort -rn | head -10
  die "bundle is $mib MiB, over the ${MAX_MIB} MiB limit"
fi
rm -f "$CONF_LOG"
[ "$partial" = 1 ] || rm -f "$BUILD_LOG"
log "done; on the GPU machine run: bash tools/device_run.sh (carry .device)"
