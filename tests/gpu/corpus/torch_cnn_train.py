"""A small CNN trained on synthetic images, the everyday PyTorch loop:
Conv2d/BatchNorm/ReLU/Linear on CUDA, SGD with momentum, cross-entropy, a
DataLoader-like loop over pinned CPU batches copied non-blocking. Seeds and
deterministic kernels make the losses bit-identical run to run; they are
printed with all their digits, with the peak of the caching allocator."""
from corpus_torch import deterministic, expect, finish

torch = deterministic()
import torch.nn as nn  # noqa: E402

dev = torch.device("cuda")
gen = torch.Generator().manual_seed(1234)
images = torch.randn(1024, 1, 28, 28, generator=gen)
labels = (images.mean(dim=(1, 2, 3)) > 0).long() + 2 * (
    images[:, :, :14].mean(dim=(1, 2, 3)) > 0).long()

model = nn.Sequential(
    nn.Conv2d(1, 16, 3, stride=2, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
    nn.Conv2d(16, 32, 3, stride=2, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
    nn.Flatten(), nn.Linear(32 * 7 * 7, 64), nn.ReLU(), nn.Linear(64, 4),
).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
loss_fn = nn.CrossEntropyLoss()

torch.cuda.reset_peak_memory_stats()
batch = 64
step = 0
for epoch in range(3):
    for start in range(0, images.shape[0], batch):
        x = images[start:start + batch].pin_memory().to(dev, non_blocking=True)
        y = labels[start:start + batch].pin_memory().to(dev, non_blocking=True)
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        step += 1
        if step % 16 == 0:
            print("epoch %d step %d loss %r" % (epoch, step, loss.item()))

model.eval()
with torch.no_grad():
    pred = model(images.to(dev)).argmax(dim=1).cpu()
acc = (pred == labels).float().mean().item()
print("train accuracy %.4f" % acc)
expect(acc > 0.6, "the model did not learn (accuracy %.3f)" % acc)
print("peak allocated %d bytes" % torch.cuda.max_memory_allocated())
finish("torch_cnn_train")
