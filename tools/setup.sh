#!/usr/bin/env bash
# Installs what a fresh Debian/Ubuntu machine lacks to build and test
# gpumemtrace. Idempotent: installs nothing when everything is there.
# The CUDA toolkit itself (headers, nvcc) is expected at /usr/local/cuda or on
# PATH; it is not a Debian package of the right version.
set -euo pipefail

packages=(
  cmake g++ make pkg-config
  libabsl-dev          # containers, synchronization, strings, symbolize
  libgtest-dev googletest
  libbenchmark-dev
  nlohmann-json3-dev   # JSON reports
  libdw-dev            # file:line symbolization (libdw.so.1, loaded at run time)
  python3-wheel python3-venv  # the wheel (tools/build_wheel.sh) and its test
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" \
    || missing+=("$p")
done

if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# viz: the HTML report is checked in headless Chromium. Optional: where it
# cannot be installed, that one test is skipped (exit 77), nothing else.
if ! command -v chromium >/dev/null 2>&1 &&
   ! dpkg-query -W -f='${Status}' chromium 2>/dev/null | grep -q "install ok installed"; then
  echo "setup: installing chromium (HTML report test)"
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  if ! { $SUDO apt-get update -qq &&
         $SUDO apt-get install -y -qq --no-install-recommends chromium >/dev/null; }; then
    echo "setup: warning: chromium could not be installed; the HTML report's" \
         "browser test will be skipped" >&2
  fi
fi

if ! command -v nvcc >/dev/null 2>&1 && [ ! -x /usr/local/cuda/bin/nvcc ]; then
  echo "setup: warning: no CUDA toolkit found (nvcc); the library needs its" \
       "headers (/usr/local/cuda/include) to build" >&2
fi
echo "setup: ok"
