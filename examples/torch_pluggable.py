#!/usr/bin/env python3
"""torch_pluggable: PyTorch with gpumemtrace as its CUDA allocator.

PyTorch's caching allocator cuts tensors out of large cudaMalloc segments, so
a kernel writing past the end of one tensor lands in a neighbour or in cached
free space: no redzone is there, and the write goes unseen. With the tool's
pluggable-allocator entry points every tensor is its own cudaMalloc, tracked
and guarded on its own:

    torch.cuda.memory.change_current_allocator(
        torch.cuda.memory.CUDAPluggableAllocator(
            LIB, "gmt_torch_malloc", "gmt_torch_free"))

Run it under the tool (LD_PRELOAD=libgpumemtrace.so or `gpumemtrace run`);
LIB is found in LD_PRELOAD or given with --lib.

Modes:
  --train       the MLP of pytorch_train.py (same data, same steps): the
                "final loss" line must equal pytorch_train.py's without the tool
  --oob         a kernel (hand-written PTX, loaded through the driver API)
                writes one float past the end of a 1024-float tensor, then the
                program synchronizes: under the tool with the pluggable
                allocator this is an oob-write at offset 4096 naming the kernel
                gmt_torch_oob_fill; with --caching (PyTorch's own allocator)
                the same write lands inside a caching-allocator segment and
                nothing can see it
  --nvtx        wraps each part in an NVTX range (torch.cuda.nvtx):
                "gmt_oob" and "gmt_train"; the report's nvtx_ranges show
                them (the tool needs NVTX_INJECTION64_PATH=<lib>, which
                `gpumemtrace run` sets, or preload alone where the NVTX
                build honours static injection)
Both --train and --oob may be given. Exit status 0, or 77 without CUDA.
"""
import argparse
import ctypes
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")

import torch  # noqa: E402

# One thread per element; the bound check is `i > n` instead of `i >= n`, so
# thread n writes element n: one float past the end.
OOB_PTX = r"""
.version 8.0
.target sm_90
.address_size 64

.visible .entry gmt_torch_oob_fill(.param .u64 p, .param .u32 n)
{
    .reg .pred %pr<2>;
    .reg .b32 %r<6>;
    .reg .b64 %rd<5>;
    .reg .f32 %f<2>;
    ld.param.u64 %rd1, [p];
    ld.param.u32 %r1, [n];
    mov.u32 %r2, %ctaid.x;
    mov.u32 %r3, %ntid.x;
    mov.u32 %r4, %tid.x;
    mad.lo.s32 %r5, %r2, %r3, %r4;
    setp.gt.s32 %pr1, %r5, %r1;
    @%pr1 bra DONE;
    cvta.to.global.u64 %rd2, %rd1;
    mul.wide.s32 %rd3, %r5, 4;
    add.s64 %rd4, %rd2, %rd3;
    mov.f32 %f1, 0f3F800000;
    st.global.f32 [%rd4], %f1;
DONE:
    ret;
}
"""


def find_lib(explicit):
    if explicit:
        return explicit
    for entry in os.environ.get("LD_PRELOAD", "").replace(":", " ").split():
        if "gpumemtrace" in os.path.basename(entry):
            return entry
    return None


def launch_oob(tensor):
    """Runs gmt_torch_oob_fill over `tensor` (float32) on the current stream."""
    cuda = ctypes.CDLL("libcuda.so.1")

    def check(what, result):
        if result != 0:
            raise RuntimeError("%s failed: CUresult %d" % (what, result))

    module = ctypes.c_void_p()
    check("cuModuleLoadData",
          cuda.cuModuleLoadData(ctypes.byref(module), OOB_PTX.encode()))
    function = ctypes.c_void_p()
    check("cuModuleGetFunction",
          cuda.cuModuleGetFunction(ctypes.byref(function), module,
                                   b"gmt_torch_oob_fill"))
    n = tensor.numel()
    pointer = ctypes.c_uint64(tensor.data_ptr())
    count = ctypes.c_uint32(n)
    params = (ctypes.c_void_p * 2)(ctypes.addressof(pointer),
                                   ctypes.addressof(count))
    threads = 256
    blocks = (n + 1 + threads - 1) // threads
    stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
    check("cuLaunchKernel",
          cuda.cuLaunchKernel(function, blocks, 1, 1, threads, 1, 1, 0,
                              stream, params, None))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--lib", help="libgpumemtrace.so (default: from "
                        "LD_PRELOAD)")
    parser.add_argument("--caching", action="store_true",
                        help="keep PyTorch's caching allocator")
    parser.add_argument("--train", action="store_true")
    parser.add_argument("--oob", action="store_true")
    parser.add_argument("--nvtx", action="store_true")
    parser.add_argument("--steps", type=int, default=200)
    args = parser.parse_args()
    if not (args.train or args.oob):
        parser.error("give --train and/or --oob")
    if not torch.cuda.is_available():
        print("torch_pluggable: no CUDA device", file=sys.stderr)
        return 77

    if not args.caching:
        lib = find_lib(args.lib)
        if lib is None:
            print("torch_pluggable: libgpumemtrace.so is neither preloaded "
                  "nor given with --lib", file=sys.stderr)
            return 2
        allocator = torch.cuda.memory.CUDAPluggableAllocator(
            lib, "gmt_torch_malloc", "gmt_torch_free")
        torch.cuda.memory.change_current_allocator(allocator)
        print("allocator: gpumemtrace (%s)" % os.path.basename(lib))
    else:
        print("allocator: caching")

    def push(name):
        if args.nvtx:
            torch.cuda.nvtx.range_push(name)

    def pop():
        if args.nvtx:
            torch.cuda.nvtx.range_pop()

    if args.oob:
        push("gmt_oob")
        # A neighbour first, so that in the caching allocator the overrun
        # lands in live memory of the same segment.
        victim = torch.zeros(1024, device="cuda")
        neighbour = torch.zeros(1024, device="cuda")
        launch_oob(victim)
        torch.cuda.synchronize()
        print("oob: wrote element 1024 of a 1024-float tensor; victim sum "
              "%.1f" % victim.sum().item())
        del victim, neighbour
        pop()

    if args.train:
        here = os.path.dirname(os.path.abspath(__file__))
        sys.path.insert(0, here)
        import pytorch_train  # noqa: E402
        sys.argv = [sys.argv[0], "--steps", str(args.steps)]
        push("gmt_train")
        rc = pytorch_train.main()
        pop()
        return rc
    return 0


if __name__ == "__main__":
    sys.exit(main())
