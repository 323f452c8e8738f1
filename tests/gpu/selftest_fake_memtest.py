"""A fake `gpumemtrace memtest` for selftest.py (no GPU): parses the flags the
memtest cases pass and writes the JSON report the real launcher should
(lib/memtest/memtest_report.h), honouring the TEST ONLY GMT_MEMTEST_INJECT hook.
FAKE_BREAK names a mistake that the cases in gpu_cases_memtest.py must catch:
  mt_address  the error is reported 8 bytes off the injected word
  mt_class    a flaky fault is classified stored-corruption
  mt_rc       a clean run exits 1
"""
import json
import os
import sys

GiB = 1 << 30
SWEEPS = {"walking1": 1, "walking0": 1, "address": 2, "movinv": 3,
          "mod20": 20, "random": 1}


def usage_error(msg):
    sys.stderr.write("usage: gpumemtrace memtest [FLAGS]\n"
                     "gpumemtrace memtest: error: %s\n" % msg)
    sys.exit(2)


def parse_size(text):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
    if text and text[-1] in units and text[:-1].isdigit():
        return int(text[:-1]) * units[text[-1]]
    usage_error("--size: '%s' is not a size" % text)


def main(argv):
    brk = os.environ.get("FAKE_BREAK", "")
    if not argv or argv[0] != "memtest":
        usage_error("fake launcher knows only memtest")
    args = argv[1:]
    size, patterns, json_path = int(0.9 * 80 * GiB), list(SWEEPS), None
    inject = os.environ.get("GMT_MEMTEST_INJECT", "")
    i = 0
    while i < len(args):
        flag = args[i]
        value = args[i + 1] if i + 1 < len(args) else ""
        if flag in ("--no-copy-bandwidth",):
            i += 1
            continue
        if flag == "--size":
            size = parse_size(value)
        elif flag == "--patterns":
            patterns = list(SWEEPS) if value == "all" else value.split(",")
            for p in patterns:
                if p not in SWEEPS:
                    usage_error("--patterns: unknown pattern '%s'" % p)
        elif flag == "--json":
            json_path = value
        elif flag == "--inject":
            inject = value
        elif flag != "--progress":
            usage_error("unknown flag '%s'" % flag)
        i += 2
    injection = None
    if inject:
        parts = inject.split(":")
        if int(parts[1], 0) % 8:
            usage_error("--inject: the byte offset must be a multiple of 8")
        injection = (parts[0], int(parts[1], 0), int(parts[2], 0),
                     len(parts) > 3 and parts[3] == "flaky")
    chunks, off = [], 0
    while off < size:
        n = min(GiB, size - off)
        chunks.append({"address": "0x%016x" % (0x7f0000000000 + len(chunks) *
                                               0x100000000),
                       "bytes": n, "region_offset": off})
        off += n
    errors, text = [], []
    if injection:
        pattern, offset, mask, flaky = injection
        ch = [c for c in chunks
              if c["region_offset"] <= offset < c["region_offset"] + c["bytes"]][0]
        address = int(ch["address"], 16) + offset - ch["region_offset"]
        reported = address + (8 if brk == "mt_address" else 0)
        expected = 0x5555555555555555
        actual = expected ^ mask
        stored = not flaky or brk == "mt_class"
        errors.append({"pattern": pattern, "pass": 0, "step": 1,
                       "address": "0x%016x" % reported,
                       "chunk": chunks.index(ch), "region_offset": offset,
                       "expected": "0x%016x" % expected,
                       "actual": "0x%016x" % actual, "xor": "0x%016x" % mask,
                       "flipped_bits": [b for b in range(64) if mask >> b & 1],
                       "second_read": "0x%016x" % (actual if stored else
                                                   expected),
                       "class": "stored-corruption" if stored else
                       "flaky-read"})
        text.append("  BAD %s pass 0: address 0x%x" % (pattern, reported))
    tests = [{"pattern": p, "pass": 0, "verify_sweeps": SWEEPS[p],
              "tested_bytes": size * SWEEPS[p], "traffic_bytes": 0,
              "seconds": 1.0, "tested_gbps": 2100.0, "traffic_gbps": 4200.0,
              "copy_ratio": 1.0,
              "errors": len(errors) if injection and injection[0] == p else 0}
             for p in patterns]
    report = {
        "tool": "gpumemtrace", "command": "memtest", "version": "0.0.0",
        "device": {"index": 0, "name": "Fake H200", "pci_bus_id": "",
                   "total_bytes": 0, "free_bytes": 0},
        "config": {"size_bytes": size, "patterns": patterns, "passes": 1,
                   "seed": "0x0"},
        "chunks": chunks, "copy": {"bytes": 1, "seconds": 1, "gbps": 2100.0},
        "tests": tests, "errors": errors,
        "summary": {"errors": len(errors), "errors_listed": len(errors),
                    "result": "fail" if errors else "pass"},
        "health": {"before": {"available": False, "reason": "fake"},
                   "after": {"available": False, "reason": "fake"}}}
    if injection:
        report["injection"] = {"address": "0x%016x" % address,
                               "test_only": True}
    if json_path:
        with open(json_path, "w") as f:
            json.dump(report, f)
    print("\n".join(text + ["memtest: %s" % ("FAIL" if errors else "PASS")]))
    return 1 if errors or brk == "mt_rc" else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
