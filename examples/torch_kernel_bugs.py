#!/usr/bin/env python3
"""torch_kernel_bugs: the two bugs custom Triton kernels make most, in PyTorch.

  --case oob   a Triton kernel whose store is unmasked writes 24 floats past
               the end of a 1000-float tensor that sits between two other
               live tensors (999 and 1001 floats: no size is a multiple of
               512 bytes).
  --case uaf   a Triton kernel writes through a tensor's old data_ptr() after
               `del` dropped the tensor.
  --case oom   asks for more memory than the GPU has; catches
               torch.OutOfMemoryError and exits 0.

What the tool should report:
  * in torch mode (gpumemtrace run --torch, or GMT_OPTIONS=torch=1): oob: an
    `oob-write` past the end of the 4000-byte block, naming the kernel
    `store_unmasked`; uaf: a `uaf-write` into the freed 4000-byte block;
    oom: the out-of-memory report with the holders of device memory.
  * with PyTorch's own caching allocator (the default): nothing for oob and
    uaf: the writes land inside one of the allocator's segments, where no
    redzone is.

The script's own output (stdout) is the same with and without the tool.
"""
import argparse
import sys

import torch
import triton
import triton.language as tl


@triton.jit
def store_unmasked(out_ptr, value, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offsets, value)  # no mask: the bug


class RawPointer:
    """What Triton needs of a tensor argument: its address and dtype."""

    def __init__(self, address: int):
        self.address = address
        self.dtype = torch.float32

    def data_ptr(self) -> int:
        return self.address


def make_neighbours():
    before = torch.ones(999, device="cuda")
    target = torch.zeros(1000, device="cuda")
    after = torch.ones(1001, device="cuda")
    return before, target, after


def case_oob() -> int:
    before, target, after = make_neighbours()
    store_unmasked[(1,)](target, 7.0, BLOCK=1024)  # 1024 > 1000
    torch.cuda.synchronize()
    print(f"oob: target sum {target.sum().item():.1f}, "
          f"neighbours {before.sum().item():.1f} {after.sum().item():.1f}")
    return 0


def case_uaf() -> int:
    before, target, after = make_neighbours()
    stale = target.data_ptr()
    del target
    store_unmasked[(1,)](RawPointer(stale), 5.0, BLOCK=512)
    torch.cuda.synchronize()
    print(f"uaf: neighbours {before.sum().item():.1f} {after.sum().item():.1f}")
    return 0


def case_oom() -> int:
    free, total = torch.cuda.mem_get_info()
    keep = torch.empty(free // 2, dtype=torch.uint8, device="cuda")
    try:
        torch.empty(total, dtype=torch.uint8, device="cuda")
        print("oom: the allocation succeeded")
        return 1
    except torch.OutOfMemoryError:
        print("oom: torch.OutOfMemoryError raised")
    del keep
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--case", choices=["oob", "uaf", "oom"],
                        required=True)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("torch_kernel_bugs: no CUDA device", file=sys.stderr)
        return 77
    return {"oob": case_oob, "uaf": case_uaf, "oom": case_oom}[args.case]()


if __name__ == "__main__":
    sys.exit(main())
