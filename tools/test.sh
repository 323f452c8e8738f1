#!/usr/bin/env bash
# The test command (README): set up, build, and run every CPU test. GPU tests
# (CTest label `gpu`) skip with a message when no device is present.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/cuda/bin:$PATH"
tools/setup.sh
build="${GMT_BUILD_DIR:-build}"
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" -j"$(nproc)"
cd "$build"
ctest --output-on-failure -j"$(nproc)" "$@"
