#!/usr/bin/env python3
"""Where a PyTorch training step's GPU and host time goes, per step.

Runs examples/pytorch_cnn.py's model (64x3x64x64, two 3x3 convolutions, SGD)
for warm-up steps, then records a few steps with torch.profiler and prints,
per step:

  * the GPU operations by kind: the program's kernels, the tool's guard
    kernels (names beginning gmt_), memsets, memcpys; count and GPU time;
  * the host time of the CUDA calls an allocator makes (cudaMallocAsync,
    cudaFreeAsync, cudaMalloc, cudaFree) and of every call taking more than
    a few microseconds in all;
  * the step's wall time and the GPU's busy time, so a reader can tell a
    GPU-bound step (extra GPU work shows one for one) from a host-bound one.

Run it without the tool and under it (tensor mode: GMT_OPTIONS=torch=1) and
compare: the difference in GPU operations is the tool's device work, the
difference in host call time its host work.

Usage: torch_mode_profile.py [--warmup N] [--steps N] [--top K]
Output: human-readable lines, then one "PROFILE key=value ..." line.
"""
import argparse
import collections
import os
import sys
import time

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
from torch.profiler import ProfilerActivity, profile  # noqa: E402


def device_us(event) -> float:
    for name in ("self_device_time_total", "self_cuda_time_total",
                 "device_time_total", "cuda_time_total"):
        value = getattr(event, name, None)
        if value:
            return float(value)
    return 0.0


def kind_of(name: str) -> str:
    if name.startswith("gmt_"):
        return "tool kernel"
    lowered = name.lower()
    if "memset" in lowered:
        return "memset"
    if "memcpy" in lowered:
        return "memcpy"
    return "program kernel"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--warmup", type=int, default=40)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--top", type=int, default=12)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("torch_mode_profile: no CUDA device", file=sys.stderr)
        return 77
    torch.manual_seed(1234)
    device = torch.device("cuda")
    x = torch.randn(64, 3, 64, 64, device=device)
    labels = torch.randint(0, 10, (64,), device=device)
    model = nn.Sequential(
        nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(),
        nn.Conv2d(32, 32, 3, padding=1), nn.ReLU(),
        nn.AvgPool2d(16), nn.Flatten(), nn.Linear(32 * 16, 10),
    ).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()

    def step():
        optimizer.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), labels)
        loss.backward()
        optimizer.step()

    for _ in range(args.warmup):
        step()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(args.steps):
        step()
    torch.cuda.synchronize()
    wall_ms = (time.perf_counter() - start) * 1e3 / args.steps

    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(args.steps):
            step()
        torch.cuda.synchronize()

    n = args.steps
    gpu = collections.defaultdict(lambda: [0, 0.0])  # kind -> count, us
    gpu_names = collections.defaultdict(lambda: [0, 0.0])
    host = []
    for e in prof.key_averages():
        us = device_us(e)
        is_device = str(getattr(e, "device_type", "")).endswith("CUDA")
        if is_device or (us > 0 and e.self_cpu_time_total == 0):
            k = kind_of(e.key)
            gpu[k][0] += e.count
            gpu[k][1] += us
            gpu_names[e.key][0] += e.count
            gpu_names[e.key][1] += us
        elif e.key.startswith(("cuda", "cu")) and e.self_cpu_time_total > 0:
            host.append((e.self_cpu_time_total, e.key, e.count))

    busy = sum(v[1] for v in gpu.values()) / n
    print(f"wall {wall_ms:.3f} ms/step (unprofiled), GPU busy "
          f"{busy / 1e3:.3f} ms/step, {n} steps profiled")
    for k in ("program kernel", "tool kernel", "memset", "memcpy"):
        count, us = gpu.get(k, (0, 0.0))
        print(f"  GPU {k:15s} {count / n:8.1f} ops/step {us / n:9.1f} us/step")
    print(f"  top GPU operations:")
    for name, (count, us) in sorted(gpu_names.items(),
                                    key=lambda kv: -kv[1][1])[:args.top]:
        print(f"    {us / n:9.1f} us/step {count / n:6.1f}/step  {name[:90]}")
    print(f"  host CUDA calls (self time):")
    for us, name, count in sorted(host, reverse=True)[:args.top]:
        print(f"    {us / n:9.1f} us/step {count / n:6.1f}/step  "
              f"{us / max(count, 1):7.2f} us/call  {name}")
    tool_us = gpu.get("tool kernel", (0, 0.0))[1] / n
    memset = gpu.get("memset", (0, 0.0))
    print(f"PROFILE wall_ms={wall_ms:.4f} gpu_busy_ms={busy / 1e3:.4f} "
          f"tool_kernel_us={tool_us:.1f} memsets={memset[0] / n:.1f} "
          f"memset_us={memset[1] / n:.1f} "
          f"backend={torch.cuda.get_allocator_backend()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
