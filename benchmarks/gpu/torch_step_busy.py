#!/usr/bin/env python3
"""How busy the GPU is during a PyTorch training step, without the tool.

Runs a training script (examples/pytorch_cnn.py by default) under
torch.profiler with CUDA activity only, and prints, over the steady-state
steps (the first third left out):

  torch_step_busy: steps=<n> wall_ms=<per step> kernels=<per step>
      gpu_busy_ms=<kernel time per step> busy=<gpu_busy / wall>
      kernel_us_median=<median kernel duration>

A step whose GPU is busy most of its wall time is bound by the GPU: what the
tool adds there is its own GPU work (a check kernel after each kernel costs
its launch gap on the stream). A step with a low busy fraction waits on the
host: there the tool's host time per call is what moves it. The tool's
per-kernel and tensor-mode ratios read differently on the two, which is why
this is measured on the card that gives the ratios.

Usage: torch_step_busy.py [SCRIPT] [--steps N]   (never under the tool: the
profiler's CUPTI subscriber is the tool's too)
"""
import argparse
import os
import runpy
import statistics
import sys
import time

import torch
from torch.profiler import ProfilerActivity, profile


def main() -> int:
    here = os.path.dirname(os.path.abspath(__file__))
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("script", nargs="?",
                        default=os.path.join(here, "..", "..", "examples",
                                             "pytorch_cnn.py"))
    parser.add_argument("--steps", type=int, default=120)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("torch_step_busy: no CUDA device", file=sys.stderr)
        return 77
    # The script times its own windows; the profiler sees every kernel.
    sys.argv = [args.script, "--steps", str(args.steps), "--log-every", "10"]
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        start = time.perf_counter()
        try:
            runpy.run_path(args.script, run_name="__main__")
        except SystemExit as e:
            if e.code not in (0, None):
                return int(e.code)
        torch.cuda.synchronize()
        wall_s = time.perf_counter() - start
    kernels = [e for e in prof.events()
               if e.device_type == torch.autograd.DeviceType.CUDA]
    if not kernels:
        print("torch_step_busy: the profiler saw no kernel", file=sys.stderr)
        return 1
    # Steady state: the last two thirds of the kernels by start time.
    kernels.sort(key=lambda e: e.time_range.start)
    steady = kernels[len(kernels) // 3:]
    span_us = steady[-1].time_range.end - steady[0].time_range.start
    busy_us = sum(e.time_range.end - e.time_range.start for e in steady)
    steps = args.steps * 2 / 3
    print(f"torch_step_busy: steps={args.steps} "
          f"wall_ms={wall_s * 1e3 / args.steps:.3f} "
          f"kernels={len(steady) / steps:.1f} "
          f"span_ms={span_us / 1e3 / steps:.3f} "
          f"gpu_busy_ms={busy_us / 1e3 / steps:.3f} "
          f"busy={busy_us / max(span_us, 1):.2f} "
          f"kernel_us_median="
          f"{statistics.median(e.time_range.end - e.time_range.start for e in steady):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
