"""Shared by the PyTorch programs of the differential corpus.

The corpus runner (tests/gpu/gpu_cases_corpus.py) compares their stdout with
and without gpumemtrace line by line, so they print only deterministic values;
lines starting with "~ " are masked. Each program ends with finish(): it prints
"<name>: ok" or the failed checks and exits 1 when one failed.
"""
import os
import sys

_failures = []


def deterministic():
    """Settings that make the programs' numbers bit-identical run to run.
    Must run before CUDA work; CUBLAS_WORKSPACE_CONFIG before cuBLAS starts."""
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    import torch
    torch.manual_seed(0)
    torch.use_deterministic_algorithms(True, warn_only=True)
    torch.backends.cudnn.benchmark = False
    torch.backends.cudnn.deterministic = True
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    return torch


def expect(ok, what):
    if not ok:
        _failures.append(what)
        print("FAIL: %s" % what, flush=True)
    return ok


def finish(name):
    if _failures:
        print("%s: %d check(s) failed" % (name, len(_failures)), flush=True)
        sys.exit(1)
    print("%s: ok" % name, flush=True)
    sys.exit(0)
