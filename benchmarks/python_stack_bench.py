#!/usr/bin/env python3
"""What a Python caller pays per cudaMalloc/cudaFree pair for its stacks.

With --launches, per kernel launch instead (cudaLaunchKernel of a
`fill(float*, int)` whose handle is its name, as the test double takes it):
the tool records each launch's site, its innermost native frames and Python
frames, for the report at a sticky error.

Allocates and frees through the CUDA runtime the loader finds (ctypes), from
a Python call chain DEPTH frames deep, holding the GIL (ctypes.PyDLL, as a
binding that keeps it, or as Python's deallocator freeing a tensor does) and
releasing it (ctypes.CDLL, as PyTorch's operators do). Prints microseconds
per pair for each; run it without the tool and under it (python_stacks=1,
python_stacks=0) and compare, e.g. on the test double:

  LD_LIBRARY_PATH=build/tests/fake_cuda/lib python3 benchmarks/python_stack_bench.py
  LD_LIBRARY_PATH=build/tests/fake_cuda/lib LD_PRELOAD=build/interpose/libgpumemtrace.so \\
    GMT_OPTIONS=guard=0:report=none python3 benchmarks/python_stack_bench.py

Usage: python_stack_bench.py [--pairs N] [--depth D] [--rounds R] [--launches]
Output: "python_stack_bench: gil=held|released depth=D us_per_pair=X"
(us_per_launch=X with --launches; the median of R rounds), one line each.
"""
import argparse
import ctypes
import statistics
import sys
import time


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--pairs", type=int, default=20000)
    parser.add_argument("--depth", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--launches", action="store_true",
                        help="time kernel launches instead of pairs")
    args = parser.parse_args()
    runtimes = {"held": ctypes.PyDLL("libcudart.so.13"),
                "released": ctypes.CDLL("libcudart.so.13")}
    for lib in runtimes.values():
        lib.cudaMalloc.argtypes = [ctypes.POINTER(ctypes.c_void_p),
                                   ctypes.c_size_t]
        lib.cudaFree.argtypes = [ctypes.c_void_p]

    class Dim3(ctypes.Structure):
        _fields_ = [("x", ctypes.c_uint), ("y", ctypes.c_uint),
                    ("z", ctypes.c_uint)]

    # The test double's kernel handles are their mangled names.
    kernel = ctypes.create_string_buffer(b"_Z4fillPfi")
    block = ctypes.c_void_p()
    count = ctypes.c_int(0)
    params = (ctypes.c_void_p * 2)(ctypes.cast(ctypes.byref(block),
                                               ctypes.c_void_p),
                                   ctypes.cast(ctypes.byref(count),
                                               ctypes.c_void_p))
    for lib in runtimes.values():
        lib.cudaLaunchKernel.argtypes = [ctypes.c_void_p, Dim3, Dim3,
                                         ctypes.c_void_p, ctypes.c_size_t,
                                         ctypes.c_void_p]

    def launches(runtime, n):
        grid, threads = Dim3(1, 1, 1), Dim3(32, 1, 1)
        start = time.perf_counter()
        for _ in range(n):
            if runtime.cudaLaunchKernel(ctypes.addressof(kernel), grid, threads,
                                        ctypes.addressof(params), 0,
                                        None) != 0:
                raise RuntimeError("cudaLaunchKernel failed")
        return time.perf_counter() - start

    def pairs(runtime, n):
        pointer = ctypes.c_void_p()
        start = time.perf_counter()
        for _ in range(n):
            if runtime.cudaMalloc(ctypes.byref(pointer), 4096) != 0:
                raise RuntimeError("cudaMalloc failed")
            runtime.cudaFree(pointer)
        return time.perf_counter() - start

    def nested(depth, runtime, n):
        # A call chain `depth` frames deep, as a model's forward is.
        if depth == 0:
            return (launches if args.launches else pairs)(runtime, n)
        return nested(depth - 1, runtime, n)

    for gil, runtime in runtimes.items():
        nested(args.depth, runtime, 100)  # warm-up: caches, first calls
        times = [nested(args.depth, runtime, args.pairs)
                 for _ in range(args.rounds)]
        unit = "launch" if args.launches else "pair"
        print(f"python_stack_bench: gil={gil} depth={args.depth} "
              f"us_per_{unit}="
              f"{statistics.median(times) * 1e6 / args.pairs:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
