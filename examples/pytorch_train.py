#!/usr/bin/env python3
"""pytorch_train: a small MLP trained on synthetic data, deterministically.

What the tool should report: no errors. PyTorch's caching allocator keeps the
blocks it got from cudaMalloc until the process ends, so "leaks" (api
"cudaMalloc", stacks inside libc10_cuda.so / libtorch_cuda.so) are expected
and are not bugs in this script. The point of this program is that the tool
changes nothing: the printed "final loss" line must be bit-identical with and
without LD_PRELOAD=libgpumemtrace.so.

The training loop's own time (the steps only: not the import, the set-up or
the final print) goes to stderr, so stdout stays comparable:

  train_seconds=<float> steps=<n> ms_per_step=<float>

With --stages it trains nothing: it runs the first step's forward pass and
prints a hash of each stage's output (the data, the parameters, each layer,
the loss), so two runs whose losses differ show where they first part:

  stage <name> <sha1 of the bytes, 16 hex digits> <address mod 2 MiB>

Usage: pytorch_train.py [--steps N] [--seed S] [--stages]
"""
import argparse
import hashlib
import os
import sys
import time

# cuBLAS needs a fixed workspace configuration for deterministic results; it
# must be set before CUDA is initialised.
os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--seed", type=int, default=1234)
    parser.add_argument("--stages", action="store_true",
                        help="hash each stage of the first forward pass")
    args = parser.parse_args()

    if not torch.cuda.is_available():
        print("pytorch_train: no CUDA device", file=sys.stderr)
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
    # Synthetic regression data made on the CPU, so it does not depend on the
    # GPU's random number generator.
    n, d_in, d_hidden, d_out = 4096, 64, 256, 8
    x = torch.randn(n, d_in, generator=generator)
    w_true = torch.randn(d_in, d_out, generator=generator)
    y = torch.tanh(x @ w_true) + 0.05 * torch.randn(n, d_out,
                                                    generator=generator)
    x, y = x.to(device), y.to(device)

    model = nn.Sequential(
        nn.Linear(d_in, d_hidden),
        nn.ReLU(),
        nn.Linear(d_hidden, d_hidden),
        nn.ReLU(),
        nn.Linear(d_hidden, d_out),
    ).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = nn.MSELoss()

    batch = 256
    order = torch.randperm(n, generator=generator).to(device)
    if args.stages:
        print_stages(model, loss_fn, x, y, order[0:batch])
        return 0
    loss = None
    # The clock covers the steps only: the set-up's copies and kernels are
    # finished first, the steps' own work before it stops.
    torch.cuda.synchronize()
    started = time.perf_counter()
    for step in range(args.steps):
        start = (step * batch) % n
        idx = order[start:start + batch]
        optimizer.zero_grad(set_to_none=True)
        loss = loss_fn(model(x[idx]), y[idx])
        loss.backward()
        optimizer.step()
        if step % 50 == 0:
            print(f"step {step} loss {loss.item():.9f}")
    torch.cuda.synchronize()
    seconds = time.perf_counter() - started
    ms_per_step = 1000.0 * seconds / args.steps if args.steps > 0 else 0.0
    print(f"train_seconds={seconds:.6f} steps={args.steps} "
          f"ms_per_step={ms_per_step:.4f}", file=sys.stderr, flush=True)
    final = loss.item()
    # repr() of a float is exact: equal strings mean equal losses.
    print(f"final loss {final:.9f} ({final!r}, {final.hex()})")
    return 0


def print_stages(model, loss_fn, x, y, idx):
    """The first step's forward pass, every stage computed before any is
    read back (no synchronization between them, as in training), then a hash
    of each stage's bytes."""
    stages = [("x", x), ("y", y)]
    stages += [("param%d" % i, p) for i, p in enumerate(model.parameters())]
    a = x[idx]
    stages.append(("x[idx]", a))
    for i, layer in enumerate(model):
        a = layer(a)
        stages.append(("layer%d:%s" % (i, type(layer).__name__), a))
    stages.append(("loss", loss_fn(a, y[idx])))
    for name, t in stages:
        data = t.detach().contiguous().cpu().numpy().tobytes()
        # Where it lies within its 2 MiB: an algorithm chosen by a pointer's
        # alignment would show here.
        print("stage %s %s %#x" % (name, hashlib.sha1(data).hexdigest()[:16],
                                   t.data_ptr() % (2 << 20)))


if __name__ == "__main__":
    sys.exit(main())
