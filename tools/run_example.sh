#!/usr/bin/env bash
# The main job (README): set up, build, and trace a bundled example program
# with the tool. On a machine with a GPU it traces examples/leak_runtime (a
# real CUDA program that leaks); without one it traces the same scenario
# against the CPU test double from tests/ and says so.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/cuda/bin:$PATH"
tools/setup.sh
build="${GMT_BUILD_DIR:-build}"
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" -j"$(nproc)"
lib="$(readlink -f "$build/interpose/libgpumemtrace.so")"

if nvidia-smi -L >/dev/null 2>&1 && [ -x "$build/examples/leak_runtime" ]; then
  echo "== tracing $build/examples/leak_runtime on $(nvidia-smi -L | head -1)"
  LD_PRELOAD="$lib" "$build/examples/leak_runtime"
else
  # A leak from each API family (tests/interpose/programs/leak_program.cc).
  demo="$build/tests/interpose/gmt_leak_program"
  fake="$build/tests/fake_cuda/lib"
  echo "== no GPU here: tracing $demo against the CPU test double ($fake)"
  LD_PRELOAD="$lib" LD_LIBRARY_PATH="$fake${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$demo" all
fi
