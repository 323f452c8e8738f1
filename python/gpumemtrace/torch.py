"""PyTorch tensor mode from inside a script.

The usual way is the launcher, which sets it up before the script's first
line: `gpumemtrace run --torch -- python train.py`. enable() is for a script
that is already traced (`gpumemtrace run -- python train.py`) and wants tensor
mode without the flag: it must run before the first CUDA tensor.

    import gpumemtrace.torch
    gpumemtrace.torch.enable()
    import torch ...

It asks PyTorch for its cudaMallocAsync backend (every tensor its own
guarded block). Freed tensors are quarantined only where the tool was
started with torch=1 (or quarantine_async=1): enable() says so.
"""
import os
import sys
import warnings

import gpumemtrace

_BACKEND = "cudaMallocAsync"


def _backend_of(conf):
    backend = ""
    for item in conf.split(","):
        key, _, value = item.partition(":")
        if key.strip() == "backend":
            backend = value.strip()
    return backend


def enable():
    """Turns tensor mode on for this process; raises RuntimeError with what
    to do where it cannot (not traced, CUDA tensors already made, another
    backend asked for)."""
    if not gpumemtrace.active():
        raise RuntimeError(
            "gpumemtrace.torch.enable(): this process is not traced; run it "
            "with `gpumemtrace run --torch -- python %s`" %
            " ".join(sys.argv))
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_initialized():
        backend = torch.cuda.get_allocator_backend()
        if backend != _BACKEND:
            raise RuntimeError(
                "gpumemtrace.torch.enable(): CUDA is already initialized with "
                "PyTorch's %s allocator, so tensors share segments; call "
                "enable() before the first CUDA tensor, or use "
                "`gpumemtrace run --torch`" % backend)
        return
    for name in ("PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF"):
        conf = os.environ.get(name, "").strip()
        backend = _backend_of(conf) if conf else ""
        if backend and backend != _BACKEND:
            raise RuntimeError(
                "gpumemtrace.torch.enable(): %s asks for backend:%s; leave "
                "the backend out for tensor mode" % (name, backend))
    conf = os.environ.get("PYTORCH_CUDA_ALLOC_CONF", "").strip()
    if _backend_of(conf) != _BACKEND:
        os.environ["PYTORCH_CUDA_ALLOC_CONF"] = (
            conf + "," if conf else "") + "backend:" + _BACKEND
    if "torch=1" not in os.environ.get("GMT_OPTIONS", "") and \
            "quarantine_async=1" not in os.environ.get("GMT_OPTIONS", ""):
        warnings.warn(
            "gpumemtrace: tensors get their own redzones, but freed tensors "
            "are not quarantined (start with `gpumemtrace run --torch` for "
            "use-after-free checks)", stacklevel=2)
