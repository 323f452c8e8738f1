"""Inference the way a serving script does it: a residual CNN in eval mode
under torch.no_grad and torch.inference_mode, channels_last, fp16 autocast,
batches of several sizes; top-1 classes and rounded checksums printed."""
from corpus_torch import deterministic, expect, finish

torch = deterministic()
import torch.nn as nn  # noqa: E402


class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.conv1 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(c)
        self.conv2 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(c)

    def forward(self, x):
        y = torch.relu(self.bn1(self.conv1(x)))
        return torch.relu(x + self.bn2(self.conv2(y)))


dev = torch.device("cuda")
model = nn.Sequential(
    nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(), Block(32), nn.MaxPool2d(2),
    Block(32), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, 10),
).to(dev).eval()
gen = torch.Generator().manual_seed(7)
inputs = torch.randn(64, 3, 32, 32, generator=gen)

with torch.no_grad():
    ref = model(inputs.to(dev))
print("no_grad top-1 of the first 16:", ref.argmax(1)[:16].tolist())
print("no_grad checksum %.4f" % ref.double().abs().sum().item())

with torch.inference_mode():
    for bs in (1, 7, 64):
        out = model(inputs[:bs].to(dev))
        expect(torch.equal(out, ref[:bs]) or
               torch.allclose(out, ref[:bs], atol=1e-5),
               "inference_mode batch %d differs from no_grad" % bs)
    model_cl = model.to(memory_format=torch.channels_last)
    out_cl = model_cl(inputs.to(dev).to(memory_format=torch.channels_last))
    print("channels_last close to NCHW: %s" %
          torch.allclose(out_cl, ref, atol=1e-4))
    with torch.autocast("cuda", dtype=torch.float16):
        half = model(inputs.to(dev))
    print("fp16 autocast dtype %s, top-1 agreement %d/64" % (
        half.dtype, (half.argmax(1) == ref.argmax(1)).sum().item()))
    expect((half.argmax(1) == ref.argmax(1)).sum().item() >= 56,
           "fp16 top-1 disagrees too often")
finish("torch_inference")
