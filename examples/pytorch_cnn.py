#!/usr/bin/env python3
"""pytorch_cnn: a small CNN trained on synthetic images, deterministically.

The workload of the PyTorch overhead figures: a batch of 64 images of
3x64x64, two 3x3 convolution layers, a linear head, SGD, 200 steps. What the
tool should report: no errors. The "final loss" line on stdout must be
bit-identical with and without the tool (and in torch mode).

Timing goes to stderr, so stdout stays comparable:

  train_seconds=<float> steps=<n> ms_per_step=<median of 5 windows>
  cnn: step_ms=<the same> reserved_mb=<float> allocated_mb=<float>
       backend=<PyTorch's allocator backend>

Usage: pytorch_cnn.py [--steps N] [--seed S] [--log-every K]
  --log-every K: read the loss on the host every K steps (a synchronization,
  as a training loop that logs does); 0: only at the end.
"""
import argparse
import os
import statistics
import sys
import time

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--seed", type=int, default=1234)
    parser.add_argument("--log-every", type=int, default=10)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("pytorch_cnn: no CUDA device", file=sys.stderr)
        return 77

    torch.manual_seed(args.seed)
    torch.cuda.manual_seed_all(args.seed)
    torch.backends.cudnn.deterministic = True
    torch.backends.cudnn.benchmark = False
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.use_deterministic_algorithms(True)

    device = torch.device("cuda")
    generator = torch.Generator().manual_seed(args.seed)
    x = torch.randn(64, 3, 64, 64, generator=generator).to(device)
    labels = torch.randint(0, 10, (64,), generator=generator).to(device)
    model = nn.Sequential(
        nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(),
        nn.Conv2d(32, 32, 3, padding=1), nn.ReLU(),
        # A plain average pool: the adaptive one has no deterministic
        # backward on CUDA.
        nn.AvgPool2d(16), nn.Flatten(), nn.Linear(32 * 16, 10),
    ).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()

    # Steps are timed in windows; the first window (warm-up: cuDNN plans,
    # the allocator's first segments) is left out of the median.
    windows = 6
    per_window = max(1, args.steps // windows)
    times = []
    loss = None
    torch.cuda.synchronize()
    for w in range(windows):
        start = time.perf_counter()
        for step in range(per_window):
            optimizer.zero_grad(set_to_none=True)
            loss = loss_fn(model(x), labels)
            loss.backward()
            optimizer.step()
            if args.log_every and (step + 1) % args.log_every == 0:
                loss.item()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - start) / per_window)
    print(f"final loss {loss.item():.10f}")
    try:
        backend = torch.cuda.get_allocator_backend()
    except Exception:  # noqa: BLE001 (older PyTorch)
        backend = "?"
    step_s = statistics.median(times[1:])
    # The line benchmarks/gpu/perf_suite.sh reads (as for pytorch_train.py).
    print(f"train_seconds={step_s * per_window * (windows - 1):.6f} "
          f"steps={per_window * (windows - 1)} ms_per_step={step_s * 1e3:.4f}",
          file=sys.stderr)
    print(f"cnn: step_ms={step_s * 1e3:.4f} "
          f"reserved_mb={torch.cuda.memory_reserved() / 2**20:.1f} "
          f"allocated_mb={torch.cuda.memory_allocated() / 2**20:.1f} "
          f"backend={backend}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
