#!/usr/bin/env python3
"""Self-test of gpu_tests.py, with no GPU: a fake nvidia-smi, fake example
programs and a fake "tool" that writes the JSON report the real one should.

  selftest.py GPU_TESTS_PY WORK_DIR

Checks that (1) ideal reports pass every case, (2) reports with the classic
mistakes (wrong count, missing stack frame, wrong error kind, changed stdout,
changed loss; for guard zones: wrong offset, more than the one kernel under
check=kernel, no first_free, a skipped bad write, a changed return code, a
missing api-bounds error, an error or a changed checksum only under
check=kernel) fail the right cases, and (3) without a GPU every case skips
with exit code 77. Runs on any machine with python3; prints
'N passed, N failed'.
"""
import json
import os
import shutil
import stat
import subprocess
import sys

MiB = 1 << 20
KiB = 1 << 10

# The fake example: prints what the real one prints and, when "preloaded",
# writes the report the real tool should write. FAKE_BREAK names a mistake.
FAKE_EXAMPLE = r'''
import json, os, re, sys
name = sys.argv[1]
args = sys.argv[2:]
brk = os.environ.get("FAKE_BREAK", "")
tool = bool(os.environ.get("LD_PRELOAD"))

def frame(fn, file=None, line=0):
    f = {"address": "0x1000", "function": fn, "module": name}
    if file:
        f["file"] = "/src/examples/" + file
        f["line"] = line
    return f

def stack(fn):
    return [frame(fn + "(void**, int, unsigned long)", name + ".cu", 30),
            frame("main", name + ".cu", 50)]

def leak(api, fn, count, nbytes, device=0, kind="device"):
    return {"api": api, "kind": kind, "bytes": nbytes, "count": count,
            "address": "0x7f0000000000", "device": device, "stack": stack(fn)}

def err(kind, api, fn, offset=0, alloc=None, first=None):
    e = {"kind": kind, "api": api, "address": "0x7f0000001000",
         "offset": offset, "bytes": 0, "detail": "", "stack": stack(fn)}
    if alloc:
        e["allocation"] = {"api": alloc[0], "address": "0x7f0000000000",
                           "bytes": alloc[1], "device": 0,
                           "stack": stack(alloc[2])}
    if first:
        e["first_free"] = {"api": "cudaFree", "stack": stack(first)}
    return e

kmode = "check=kernel" in os.environ.get("GMT_OPTIONS", "")
# freed_check_bytes=N: a freed block larger than N is checked at its ends
# only, N/2 bytes each (rounded up to 256), as the tool does; unset or -1,
# every byte, or 4 MiB in tensor mode (torch=1).
_opts = os.environ.get("GMT_OPTIONS", "")
_fcb = re.search(r"freed_check_bytes=(-?\d+)", _opts)
_fcb_bytes = int(_fcb.group(1)) if _fcb else -1
if _fcb_bytes < 0:
    _fcb_bytes = 4 << 20 if re.search(r"(^|:)torch=(1|true)", _opts) else 0
freed_half = (_fcb_bytes + 511) // 512 * 256


def freed_write_seen(nbytes, offset, changed):
    if freed_half == 0 or nbytes <= 2 * freed_half:
        return True
    return offset < freed_half or offset + changed > nbytes - freed_half

# Guard-zone findings, the way the tool reports them: with check=kernel only
# the offending kernel, otherwise every kernel since the last clean check.
GUARD = {
    "oob_slack": ("oob-write", "OobSlackOverrunKernel", "OobSlackFillKernel",
                  "cudaMalloc", "OobSlackAllocate", 1000, 1000, 12),
    "oob_static": ("oob-write", "OobSlackOverrunKernel", "OobSlackFillKernel",
                   "cuMemAlloc", "OobSlackAllocate", 1000, 1000, 12),
    "oob_neighbour": ("oob-write", "NeighbourSpillKernel",
                      "NeighbourFillKernel", "cudaMalloc",
                      "NeighbourAllocateFirst", 4096, 4096, 64),
    "oob_underflow": ("oob-underflow", "UnderflowHeaderKernel",
                      "UnderflowFillKernel", "cudaMalloc",
                      "UnderflowAllocateTarget", 4096, -16, 16),
    "oob_few_kib": ("oob-write", "FewKibScrambleKernel", "FewKibFillKernel",
                    "cudaMalloc", "FewKibAllocate", 1 << 20, 1 << 20, 3072),
    "oob_managed": ("oob-write", "ManagedOverrunKernel",
                    "ManagedIncrementKernel", "cudaMallocManaged",
                    "ManagedOobAllocate", 100000, 100000, 40),
    "oob_pitched": ("oob-write", "PitchedRowFlipKernel", "PitchedFillKernel",
                    "cudaMallocPitch", "PitchedOobAllocate", 16 * 1024,
                    16 * 1024, 1000),
    "oob_3d": ("oob-write", "Oob3dSliceFlipKernel", "Oob3dFillKernel",
               "cudaMalloc3D", "Oob3dAllocate", 12 * 512, 12 * 512, 500),
    "oob_driver": ("oob-write", "DriverStrideOverrunKernel",
                   "DriverFillKernel", "cuMemAlloc", "DriverOobAllocate",
                   10000, 10100, 24),
    "uaf_write": ("uaf-write", "UafStaleWriteKernel", "UafFillKernel",
                  "cudaMalloc", "UafWriteAllocate", 65536, 128, 32),
}

def guard_err(name):
    kind, kernel, fill, api, fn, nbytes, offset, changed = GUARD[name]
    e = err(kind, "unknown", "main", offset, alloc=(api, nbytes, fn),
            first="UafWriteRelease" if kind == "uaf-write" else None)
    if brk == "first_free" and kind == "uaf-write":
        e.pop("first_free")
    if brk == "offset":
        offset += 1
    e.update({"offset": offset, "bytes": changed, "first_offset": offset,
              "last_offset": offset + changed - 1, "changed_bytes": changed,
              "check": "kernel" if kmode else "sync",
              "kernels": [kernel + "(unsigned char volatile*, int, int)"]})
    if not kmode or brk == "kernels":
        e["kernels"].insert(0, fill + "(unsigned char*, int)")
    return e

API_BOUNDS = [
    ("cudaMemcpy H2D past end", "ApiBoundsMemcpyH2D", 0, 65537,
     "ApiBoundsAllocateMain", "cudaMalloc", 65536),
    ("cudaMemset past end", "ApiBoundsMemset1D", 1024, 64528,
     "ApiBoundsAllocateMain", "cudaMalloc", 65536),
    ("cudaMemcpyAsync D2D past end", "ApiBoundsMemcpyAsyncD2D", 256, 65536,
     "ApiBoundsAllocateDst", "cudaMalloc", 65536),
    ("cuMemsetD8 past end", "ApiBoundsDriverMemsetD8", 65436, 200,
     "ApiBoundsAllocateMain", "cudaMalloc", 65536),
    ("cudaMemset2D past last row", "ApiBoundsMemset2D", 0, 9192,
     "ApiBoundsAllocatePitched", "cudaMallocPitch", 8192),
]

out, leaks, errors = "", [], []
summary_override = {}
guard_override = {}
if name == "leak_runtime":
    out = "leak_runtime: leaked 3 x 1048576 bytes with cudaMalloc\n"
    leaks = [leak("cudaMalloc", "LeakRuntimeBuffers",
                  2 if brk == "count" else 3, 3 << 20)]
    if brk == "frame":
        leaks[0]["stack"] = stack("SomethingElse")
    if brk == "twice":
        leaks.append(leak("cuMemAlloc", "LeakRuntimeBuffers", 3, 3 << 20))
    if brk == "freed_reported":
        leaks.append(leak("cudaMalloc", "UseAndFreeScratch", 1, 1 << 19))
elif name == "leak_driver":
    out = "leak_driver: leaked 2 x 524288 bytes with cuMemAlloc\n"
    leaks = [leak("cuMemAlloc", "LeakDriverBuffers", 2, 1 << 20)]
elif name == "leak_async_pool":
    out = "leak_async_pool: leaked 4 x 262144 bytes with cudaMallocAsync\n"
    leaks = [leak("cudaMallocAsync", "LeakAsyncBuffers", 4, 1 << 20)]
elif name == "leak_pinned_host":
    out = "leak_pinned_host: leaked\n"
    leaks = [leak("cudaMallocHost", "LeakPinnedWithMallocHost", 2, 128 << 10,
                  -1, "pinned-host"),
             leak("cudaHostAlloc", "LeakPinnedWithHostAlloc", 1, 256 << 10,
                  -1, "pinned-host")]
elif name == "leak_managed":
    out = "leak_managed: leaked 4194304 bytes with cudaMallocManaged\n"
    leaks = [leak("cudaMallocManaged", "LeakManagedBuffer", 1, 4 << 20, 0,
                  "managed")]
elif name == "leak_vmm":
    out = "leak_vmm: leaked 4194304 bytes with cuMemCreate (granularity 2097152)\n"
    leaks = [leak("cuMemCreate", "LeakVmmMapping", 1, 4 << 20, 0,
                  "vmm-physical"),
             leak("cuMemAddressReserve", "LeakVmmMapping", 1, 4 << 20, 0,
                  "vmm-reservation")]
elif name == "double_free":
    out = ("double_free: first cudaFree -> 0 (cudaSuccess)\n"
           "double_free: second cudaFree -> 1 (cudaErrorInvalidValue)\n")
    errors = [err("invalid-free" if brk == "kind" else "double-free",
                  "cudaFree", "DoubleFreeSecondRelease",
                  alloc=("cudaMalloc", 64 << 10, "DoubleFreeAllocate"),
                  first="DoubleFreeFirstRelease")]
elif name == "invalid_free":
    out = ("invalid_free: cudaFree(interior pointer) -> 1 (x)\n"
           "invalid_free: cudaFree(base pointer) -> 0 (cudaSuccess)\n")
    errors = [err("invalid-free", "cudaFree", "InvalidFreeInterior", 4096,
                  alloc=("cudaMalloc", 64 << 10, "InvalidFreeAllocate")),
              err("invalid-free", "cudaFree", "InvalidFreeHostPointer")]
elif name == "api_mismatch":
    out = ("api_mismatch: cudaFreeHost(device pointer) -> 1 (x)\n"
           "api_mismatch: cudaFree(device pointer) -> 0 (cudaSuccess)\n")
    errors = [err("api-mismatch", "cudaFreeHost", "MismatchFreeHost",
                  alloc=("cudaMalloc", 128 << 10, "MismatchAllocate"))]
elif name == "clean_cublas_thrust":
    out = "clean_cublas_thrust: gemm sum 1.0\n"
    if brk == "stdout" and tool:
        out = "clean_cublas_thrust: gemm sum 2.0\n"
elif name == "static_cudart":
    out = "static_cudart: leaked\n"
    leaks = [leak("cuMemAlloc", "LeakStaticRuntimeBuffers", 3, 3 << 20)]
elif name == "snapshot_api":
    if tool:
        out = ("snapshot_api: active=1\n"
               "snapshot_api: delta: allocations=+3 bytes=+3145728\n"
               "snapshot_api: allocations from SnapshotApiAllocate: 3\n"
               "snapshot_api: gmt_snapshot_json: 9 chars, names "
               "SnapshotApiAllocate: yes\n"
               "snapshot_api: delta after free: allocations=+0 bytes=+0\n")
    else:
        out = "snapshot_api: gpumemtrace not loaded\n"
elif name == "churn" and "--free-sync" in args:
    # A cudaFree waits for a running kernel, with the tool as without it
    # (mistake 'free_sync': the tool's second free does not).
    late = "no" if brk == "free_sync" and tool else "yes"
    out = ("churn-free-sync: first free: cudaFree waited for the running "
           "kernel: yes\n"
           "churn-free-sync: after 160 MiB of frees: cudaFree waited for "
           "the running kernel: %s\n" % late)
elif name == "churn":
    n = int(args[args.index("--pairs") + 1]) if "--pairs" in args else 200000
    out = "churn: %d pairs in 1.0 ms\n" % n
    if tool:
        summary_override = {"allocations": n, "frees": n}
        guard_override = {"checks": 10, "evicted": n // 2,
                          "check_failures": 0, "quarantine_bytes": 1 << 20}
elif name == "pytorch_train" and "--stages" in args:
    # The first forward pass, stage by stage: a broken run parts at layer2.
    parts = (brk == "loss" and tool) or (brk == "kernel_loss" and kmode)
    out = ("stage x 1111 0x0\nstage layer0:Linear 2222 0x200\n"
           "stage layer2:Linear %s 0x400\nstage loss %s 0x600\n" % (
               ("3334", "4445") if parts else ("3333", "4444")))
elif name == "pytorch_train":
    out = "step 0 loss 1.0\nfinal loss 0.123456789 (0.12345678901)\n"
    sys.stderr.write("train_seconds=%s steps=200 ms_per_step=%s\n" % (
        ("0.500000", "2.5000") if kmode else ("0.300000", "1.5000")
        if tool else ("0.200000", "1.0000")))
    if (brk == "loss" and tool) or (brk == "kernel_loss" and kmode):
        out = "step 0 loss 1.0\nfinal loss 0.123456788 (0.12345678801)\n"
elif name in GUARD:
    out = "%s: in-bounds checksum 12345\n" % name
    if name == "oob_pitched":
        out = "oob_pitched: pitch 1024, 16 rows of 1000 bytes; checksum 1\n"
    if name == "oob_3d":
        out = ("oob_3d: pitch 512, 3 slices of 4 rows of 500 bytes; "
               "checksum 1\n")
    if brk == "skip" and tool:
        sys.stderr.write("%s: the bad write would leave the mapped page; "
                         "skipped\n" % name)
    elif GUARD[name][0] != "uaf-write" or freed_write_seen(*GUARD[name][5:]):
        errors = [guard_err(name)]
elif name == "api_bounds":
    for label in ("cudaMemcpy H2D exact", "cudaMemset last byte",
                  "cudaMemcpyAsync D2D exact", "cuMemsetD8 to the end",
                  "cudaMemset2D exact"):
        out += "api_bounds: %s -> 0 (cudaSuccess)\n" % label
    for i, (label, fn, off, nb, afn, api, ab) in enumerate(API_BOUNDS):
        code = 0 if (brk == "rc" and tool and i == 2) else 1
        out += "api_bounds: %s -> %d (cudaErrorInvalidValue)\n" % (label, code)
        if brk == "missing_bounds" and i == 3:
            continue
        e = err("api-bounds", "unknown", fn, off, alloc=(api, ab, afn))
        e["bytes"] = nb
        e["cuda_result"] = 1
        e["call"] = label.split()[0]
        errors.append(e)
    out += "api_bounds: pitch 1024, checksums 1 2\n"
elif name == "user_view":
    out = ("user_view: cudaMalloc(1000): 1000 bytes, ptr%256=0\n"
           "  cuMemGetAddressRange(ptr): base-ptr=0 size=1000\n"
           "  cuMemGetAddressRange(ptr+size): outside, 500 "
           "(CUDA_ERROR_NOT_FOUND)\n"
           "user_view: cudaMallocPitch(1000 x 7): pitch 1024\n"
           "user_view: 3-D 300 x 5 x 3: kernel checksum 1 (0 wrong), "
           "memset3D 4500/4500 bytes, round trip 4500/4500 bytes "
           "(checksum 2)\n"
           "user_view: done\n")
    summary_override = {"allocations": 10, "frees": 10}
    if brk == "view" and kmode:
        out = out.replace("base-ptr=0 size=1000", "base-ptr=-256 size=5352")
    if brk == "kernel_error" and kmode:
        errors = [guard_err("oob_slack")]
elif name == "ipc_pair":
    out = ("ipc: parent wrote the first pattern into 65536 bytes\n"
           "ipc: child saw 65536/65536 bytes, parent saw 65536/65536 "
           "bytes\n")
    if brk == "child_view" and tool:
        out = out.replace("child saw 65536/", "child saw 65280/")
elif name == "clean_multistream":
    out = "clean_multistream: stream 0: n 100003, sum 1\n"
    summary_override = {"allocations": 40, "frees": 40}
    if brk == "kernel_error" and kmode:
        errors = [guard_err("oob_slack")]
elif name == "train_loop":
    out = ("train_loop: 4 buffers of 256 MiB, 20 iterations in %s ms "
           "(%s ms/iter)\n" % (("12.0", "0.6000") if tool else
                                ("10.0", "0.5000")))
    out += "train_loop: checksum %s\n" % (
        "1.5e+00" if (brk == "checksum" and kmode) else "1.25e+00")
sys.stdout.write(out)
if tool:
    m = re.search(r"report_path=([^:]+)", os.environ.get("GMT_OPTIONS", ""))
    path = m.group(1).replace("%p", str(os.getpid()))
    n_alloc = sum(l["count"] for l in leaks) + 1
    summary = {"allocations": n_alloc, "frees": 1,
               "live_bytes_at_exit": sum(l["bytes"] for l in leaks),
               "errors": len(errors), "leaks": sum(l["count"] for l in leaks),
               "leaked_bytes": sum(l["bytes"] for l in leaks)}
    if name == "churn":
        summary["allocations"] = summary["frees"] = 10 ** 6
    summary.update(summary_override)
    report = {"tool": "gpumemtrace", "version": "0.1.0", "pid": os.getpid(),
              "argv": [name] + args,
              "devices": [{"index": 0, "name": "Fake", "total_bytes": 1,
                           "peak_bytes": 1, "live_bytes": 0,
                           "allocations": 1, "frees": 1}],
              "summary": summary, "leaks": leaks, "errors": errors}
    if guard_override:
        report["guard"] = guard_override
    if brk == "noreport" and name == "leak_driver":
        sys.exit(0)
    with open(path, "w") as f:
        json.dump(report, f)
    if name == "ipc_pair" and brk != "no_child_report":
        # The traced child writes its own report (its own pid).
        child = json.loads(json.dumps(report))
        child["pid"] = os.getpid() + 1
        child["argv"] = [name, "child", "00" * 64, "3"]
        child["summary"]["allocations"] = 0
        if brk == "child_leak":
            child["leaks"] = [leak("cudaIpcOpenMemHandle", "IpcPairChild", 1,
                                   65536)]
            child["summary"]["leaks"] = 1
        if brk == "child_error":
            child["errors"] = [guard_err("oob_slack")]
            child["summary"]["errors"] = 1
        with open(path.replace(".json", ".child.json"), "w") as f:
            json.dump(child, f)
'''

FAKE_PYTHON = r'''#!/bin/sh
if [ "$1" = "-c" ]; then echo "2.11.0+fake True"; exit 0; fi
script="$1"; shift
exec "{py}" "{fake}" pytorch_train "$@"
'''


def write_exec(path, text):
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR | stat.S_IXGRP |
             stat.S_IXOTH)


def setup(work):
    shutil.rmtree(work, ignore_errors=True)
    bindir = os.path.join(work, "bin")
    exdir = os.path.join(work, "examples")
    os.makedirs(bindir)
    os.makedirs(exdir)
    fake = os.path.join(work, "fake_example.py")
    with open(fake, "w") as f:
        f.write(FAKE_EXAMPLE)
    write_exec(os.path.join(bindir, "nvidia-smi"),
               "#!/bin/sh\necho 'GPU 0: Fake H200 (UUID: GPU-fake)'\n")
    for name in ("leak_runtime", "leak_driver", "leak_async_pool",
                 "leak_pinned_host", "leak_managed", "leak_vmm",
                 "double_free", "invalid_free", "api_mismatch",
                 "clean_cublas_thrust", "static_cudart", "snapshot_api",
                 "churn", "oob_slack", "oob_static", "oob_neighbour", "oob_underflow",
                 "oob_few_kib", "oob_managed", "oob_pitched", "oob_3d",
                 "oob_driver", "uaf_write", "api_bounds", "user_view",
                 "ipc_pair", "clean_multistream", "train_loop"):
        write_exec(os.path.join(exdir, name),
                   '#!/bin/sh\nexec "%s" "%s" %s "$@"\n' % (sys.executable,
                                                            fake, name))
    with open(os.path.join(exdir, "pytorch_train.py"), "w") as f:
        f.write("# fake\n")
    # The memtest cases (gpu_cases_memtest.py) find bin/gpumemtrace above
    # the examples folder: a fake launcher writing the ideal memtest report.
    write_exec(os.path.join(bindir, "gpumemtrace"),
               '#!/bin/sh\nexec "%s" "%s" "$@"\n' % (
                   sys.executable, os.path.join(os.path.dirname(
                       os.path.abspath(__file__)), "selftest_fake_memtest.py")))
    fakepy = os.path.join(bindir, "fakepython")
    write_exec(fakepy, FAKE_PYTHON.replace("{py}", sys.executable)
               .replace("{fake}", fake))
    # LD_PRELOAD of a file that is no ELF object: ld.so warns and goes on.
    lib = os.path.join(work, "libfake.so")
    with open(lib, "w") as f:
        f.write("")
    return bindir, exdir, fakepy, lib


def run(gpu_tests, work, bindir, exdir, fakepy, lib, extra_env, cases,
        with_gpu=True):
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    env.pop("GMT_OPTIONS", None)
    path = env.get("PATH", "/usr/bin:/bin")
    env["PATH"] = (bindir + os.pathsep + path) if with_gpu else path
    env.update(extra_env)
    results = os.path.join(work, "results.json")
    if os.path.exists(results):
        os.remove(results)
    argv = [sys.executable, gpu_tests, "--lib", lib, "--examples-dir", exdir,
            "--out-dir", os.path.join(work, "out"), "--python", fakepy,
            "--results", results]
    if cases:
        argv += ["--only", ",".join(cases)]
    p = subprocess.run(argv, env=env, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT)
    text = p.stdout.decode("utf-8", "replace")
    statuses = {}
    if os.path.exists(results):
        with open(results) as f:
            statuses = {r["case"]: r["status"] for r in json.load(f)["results"]}
    return p.returncode, text, statuses


# Most feature modules' cases (gpu_cases_*.py) have no fakes here: they are
# checked on the GPU itself. gpu_tests.py's own cases and memtest's are.
os.environ["GMT_GPU_CASE_MODULES"] = "memtest"


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    gpu_tests, work = os.path.abspath(sys.argv[1]), os.path.abspath(
        sys.argv[2])
    bindir, exdir, fakepy, lib = setup(work)
    checks = []

    def expect(label, ok, text):
        checks.append(ok)
        print("%s %s" % ("PASS" if ok else "FAIL", label))
        if not ok:
            print(text)

    listed = subprocess.run([sys.executable, gpu_tests, "--list"],
                            stdout=subprocess.PIPE).stdout.decode().split()
    rc, text, st = run(gpu_tests, work, bindir, exdir, fakepy, lib, {}, None)
    expect("ideal reports pass every case (%d)" % len(listed),
           rc == 0 and len(listed) >= 25 and len(st) == len(listed) and
           set(st.values()) == {"pass"}, text)

    for brk, case in (("count", "leak_runtime"), ("frame", "leak_runtime"),
                      ("freed_reported", "leak_runtime"),
                      ("twice", "leak_runtime"),
                      ("kind", "double_free"),
                      ("stdout", "clean_cublas_thrust"),
                      ("noreport", "leak_driver"),
                      ("loss", "pytorch_train"),
                      ("kernel_loss", "pytorch_train"),
                      ("offset", "oob_slack"),
                      ("offset", "oob_pitched"),
                      ("offset", "oob_3d"),
                      ("kernels", "oob_3d"),
                      ("view", "user_view"),
                      ("kernel_error", "user_view"),
                      ("child_view", "ipc_pair"),
                      ("child_leak", "ipc_pair"),
                      ("child_error", "ipc_pair"),
                      ("kernels", "oob_neighbour"),
                      ("first_free", "uaf_write"),
                      ("skip", "oob_few_kib"),
                      ("rc", "api_bounds"),
                      ("missing_bounds", "api_bounds"),
                      ("kernel_error", "clean_multistream"),
                      ("checksum", "train_loop"),
                      ("free_sync", "churn_freed_checks"),
                      # gpu_cases_memtest.py (selftest_fake_memtest.py)
                      ("mt_address", "memtest_inject_stored"),
                      ("mt_class", "memtest_inject_flaky"),
                      ("mt_rc", "memtest_clean")):
        rc, text, st = run(gpu_tests, work, bindir, exdir, fakepy, lib,
                           {"FAKE_BREAK": brk}, [case])
        expect("mistake '%s' fails %s" % (brk, case),
               rc == 1 and st.get(case) == "fail", text)

    # A changed loss is localized: the first forward pass's stages, without
    # and with the tool, name where the runs part.
    rc, text, st = run(gpu_tests, work, bindir, exdir, fakepy, lib,
                       {"FAKE_BREAK": "kernel_loss"}, ["pytorch_train"])
    with open(os.path.join(work, "results.json")) as f:
        warnings = [w for r in json.load(f)["results"]
                    for w in r.get("warnings", [])]
    expect("a changed loss is localized to its first differing stage",
           any("without the tool all alike; with check=kernel 3 differ, "
               "first at layer2:Linear" in w for w in warnings),
           "\n".join(warnings) + text)

    if shutil.which("nvidia-smi") is None and not os.path.isdir(
            "/proc/driver/nvidia/gpus"):
        rc, text, st = run(gpu_tests, work, bindir, exdir, fakepy, lib, {},
                           None, with_gpu=False)
        expect("no GPU: exit 77 with a message",
               rc == 77 and "no CUDA device: skipping" in text, text)

    passed = sum(checks)
    print("%d passed, %d failed" % (passed, len(checks) - passed))
    return 0 if passed == len(checks) else 1


if __name__ == "__main__":
    sys.exit(main())
