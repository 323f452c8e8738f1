"""torch.compile with the inductor backend, which generates Triton kernels:
an MLP block (matmuls, GELU, LayerNorm, residual) compiled for inference and
for a training step; compiled results compared with eager ones."""
from corpus_torch import deterministic, expect, finish

torch = deterministic()
import torch.nn as nn  # noqa: E402


class MLPBlock(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.norm = nn.LayerNorm(d)
        self.fc1 = nn.Linear(d, 4 * d)
        self.fc2 = nn.Linear(4 * d, d)

    def forward(self, x):
        return x + self.fc2(torch.nn.functional.gelu(self.fc1(self.norm(x))))


dev = torch.device("cuda")
model = nn.Sequential(MLPBlock(256), MLPBlock(256)).to(dev)
x = torch.randn(128, 256, device=dev)
eager = model(x)
compiled = torch.compile(model, backend="inductor")
out = compiled(x)
same = torch.allclose(out, eager, atol=1e-4, rtol=1e-4)
print("compiled forward matches eager: %s" % same)
expect(same, "compiled forward differs")

# A fused elementwise function (one generated Triton kernel).
@torch.compile
def fused(a, b):
    return torch.sigmoid(a) * torch.tanh(b) + a * 0.5

a = torch.linspace(-3, 3, 1 << 20, device=dev)
b = torch.linspace(2, -2, 1 << 20, device=dev)
ref = torch.sigmoid(a) * torch.tanh(b) + a * 0.5
got = fused(a, b)
ok = torch.allclose(got, ref, atol=1e-6)
print("fused elementwise matches: %s, sum %.3f" % (ok, got.sum().item()))
expect(ok, "fused elementwise differs")

# A compiled training step.
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
target = torch.randn(128, 256, device=dev)


@torch.compile
def train_step(inp, tgt):
    loss = torch.nn.functional.mse_loss(model(inp), tgt)
    loss.backward()
    return loss


losses = []
for _ in range(5):
    opt.zero_grad(set_to_none=True)
    losses.append(train_step(x, target).item())
    opt.step()
print("compiled training losses decrease: %s" %
      all(b < a for a, b in zip(losses, losses[1:])))
expect(losses[-1] < losses[0], "compiled training did not reduce the loss")
finish("torch_compile")
