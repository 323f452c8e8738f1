#!/usr/bin/env python3
"""pytorch_profile: pytorch_train's model, with torch.profiler recording the
first steps (CPU and CUDA activity, through Kineto and CUPTI).

What the tool should do: nothing visible. By default gpumemtrace leaves CUPTI
to the profiler under LD_PRELOAD (cupti=auto), so the profiler must record
CUDA kernel events and the loss must be bit-identical with and without the
tool. stdout: the final loss (comparable); stderr: the profiler's counts

  profiler_events=<n> cuda_events=<n>

Usage: pytorch_profile.py [--steps N] [--profiled K] [--seed S]
"""
import argparse
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
from torch.profiler import ProfilerActivity, profile  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--profiled", type=int, default=5)
    parser.add_argument("--seed", type=int, default=1234)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("pytorch_profile: no CUDA device", file=sys.stderr)
        return 77
    torch.manual_seed(args.seed)
    torch.cuda.manual_seed_all(args.seed)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.use_deterministic_algorithms(True)
    device = torch.device("cuda")
    generator = torch.Generator().manual_seed(args.seed)
    n, d_in, d_hidden, d_out = 4096, 64, 256, 8
    x = torch.randn(n, d_in, generator=generator)
    y = torch.tanh(x @ torch.randn(d_in, d_out, generator=generator))
    x, y = x.to(device), y.to(device)
    model = nn.Sequential(nn.Linear(d_in, d_hidden), nn.ReLU(),
                          nn.Linear(d_hidden, d_out)).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = nn.MSELoss()
    batch = 256

    def step(i):
        start = (i * batch) % n
        optimizer.zero_grad(set_to_none=True)
        loss = loss_fn(model(x[start:start + batch]), y[start:start + batch])
        loss.backward()
        optimizer.step()
        return loss

    loss = None
    with profile(activities=[ProfilerActivity.CPU,
                             ProfilerActivity.CUDA]) as prof:
        for i in range(args.profiled):
            loss = step(i)
        torch.cuda.synchronize()
    events = prof.events()
    cuda_events = [e for e in events
                   if str(getattr(e, "device_type", "")).endswith("CUDA")]
    for i in range(args.profiled, args.steps):
        loss = step(i)
    torch.cuda.synchronize()
    print(f"profiler_events={len(events)} cuda_events={len(cuda_events)}",
          file=sys.stderr, flush=True)
    final = loss.item()
    print(f"final loss {final:.9f} ({final!r}, {final.hex()})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
