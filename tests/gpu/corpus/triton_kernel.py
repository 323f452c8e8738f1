"""Hand-written Triton kernels launched on PyTorch tensors, as custom-op code
does: a masked vector add over a length that is no multiple of the block, a
row-wise fused softmax, and a kernel that reads a strided (non-contiguous)
view; each compared with PyTorch's result."""
from corpus_torch import deterministic, expect, finish

torch = deterministic()
import triton  # noqa: E402
import triton.language as tl  # noqa: E402


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + y, mask=mask)


@triton.jit
def softmax_kernel(out_ptr, in_ptr, in_stride, out_stride, n_cols,
                   BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(in_ptr + row * in_stride + cols, mask=mask,
                other=-float("inf"))
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    tl.store(out_ptr + row * out_stride + cols, num / tl.sum(num, axis=0),
             mask=mask)


@triton.jit
def strided_scale_kernel(in_ptr, out_ptr, n, stride, factor,
                         BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    v = tl.load(in_ptr + offs * stride, mask=mask)
    tl.store(out_ptr + offs, v * factor, mask=mask)


dev = torch.device("cuda")
n = 1_000_003
x = torch.rand(n, device=dev)
y = torch.rand(n, device=dev)
out = torch.empty_like(x)
add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)
same = torch.equal(out, x + y)
print("vector add of %d elements equals torch: %s" % (n, same))
expect(same, "vector add")

rows, cols = 1823, 781
m = torch.randn(rows, cols, device=dev)
sm = torch.empty_like(m)
softmax_kernel[(rows,)](sm, m, m.stride(0), sm.stride(0), cols,
                        BLOCK=triton.next_power_of_2(cols))
ok = torch.allclose(sm, torch.softmax(m, dim=1), atol=1e-6)
print("fused softmax %dx%d close to torch: %s" % (rows, cols, ok))
expect(ok, "softmax")

base = torch.arange(3 * 50000, device=dev, dtype=torch.float32)
view = base[::3]
scaled = torch.empty(view.numel(), device=dev)
strided_scale_kernel[(triton.cdiv(view.numel(), 512),)](
    view, scaled, view.numel(), view.stride(0), 0.5, BLOCK=512)
same = torch.equal(scaled, view * 0.5)
print("strided view scaled: %s" % same)
expect(same, "strided scale")
finish("triton_kernel")
