#!/usr/bin/env bash
# Throughput of `gpumemtrace memtest` per pattern against the device-to-device
# copy bandwidth measured in the same run.
#
# Usage: memtest_bench.sh LAUNCHER [SIZE] [WORK_DIR]
#   LAUNCHER  path of the gpumemtrace launcher (build/bin/gpumemtrace,
#             .device/bin/gpumemtrace)
#   SIZE      memory to test (default 90%: of the free memory; or "16G")
#   WORK_DIR  where the JSON report goes (default a temporary folder)
#
# Definitions (lib/memtest/runner.h): tested GB/s = region bytes x verify
# sweeps / wall time of all the pattern's write and verify kernels (a byte is
# tested once it was written, read back and compared; 1 GB = 1e9 bytes).
# copy GB/s = bytes copied by cuMemcpyDtoD / time (each byte read once and
# written once), so ratio = tested/copy compares like with like; traffic GB/s
# counts every byte read and written.
# Prints one line per pattern:
#   RESULT memtest_<pattern> tested_gbps=<x> traffic_gbps=<y> copy_gbps=<z>
#          ratio=<x/z>
# Exit status: the memtest's (0 clean, 1 memory errors, 2 setup).
set -uo pipefail

LAUNCHER="${1:?usage: memtest_bench.sh LAUNCHER [SIZE] [WORK_DIR]}"
SIZE="${2:-90%}"
WORK="${3:-$(mktemp -d)}"
mkdir -p "$WORK"
JSON="$WORK/memtest_bench.json"

"$LAUNCHER" memtest --size "$SIZE" --patterns all --progress never \
  --json "$JSON" >"$WORK/memtest_bench.txt" 2>&1
status=$?
cat "$WORK/memtest_bench.txt"
[ -s "$JSON" ] || { echo "memtest_bench: no JSON report" >&2; exit 2; }
python3 - "$JSON" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
copy = (r.get("copy") or {}).get("gbps") or 0.0
print("device: %s, tested %.2f GiB, copy %.1f GB/s" % (
    r["device"]["name"], r["config"]["size_bytes"] / 2**30, copy))
for t in r["tests"]:
    print("RESULT memtest_%s tested_gbps=%.1f traffic_gbps=%.1f "
          "copy_gbps=%.1f ratio=%.3f" % (
              t["pattern"], t["tested_gbps"], t["traffic_gbps"], copy,
              t["tested_gbps"] / copy if copy else 0.0))
PY
exit $status
