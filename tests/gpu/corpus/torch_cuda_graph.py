"""CUDA graphs in PyTorch, following the torch.cuda.graph documentation: a
whole training step (forward, backward, optimizer) captured on static
tensors after warm-up on a side stream, replayed with new data copied into
the static inputs; a second graph sharing the first one's memory pool; and
torch.cuda.make_graphed_callables. Replayed losses are compared with an
identical eager run."""
from corpus_torch import deterministic, expect, finish

torch = deterministic()
import torch.nn as nn  # noqa: E402

dev = torch.device("cuda")


def make():
    torch.manual_seed(3)
    m = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 8)).to(dev)
    return m, torch.optim.SGD(m.parameters(), lr=0.1)


gen = torch.Generator().manual_seed(11)
data = [(torch.randn(32, 64, generator=gen), torch.randn(32, 8, generator=gen))
        for _ in range(12)]
loss_fn = nn.MSELoss()

# Eager reference.
model, opt = make()
eager_losses = []
for x, y in data:
    opt.zero_grad(set_to_none=False)
    loss = loss_fn(model(x.to(dev)), y.to(dev))
    loss.backward()
    opt.step()
    eager_losses.append(loss.item())

# Graphed training step.
model, opt = make()
static_x = torch.zeros(32, 64, device=dev)
static_y = torch.zeros(32, 8, device=dev)
side = torch.cuda.Stream()
side.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(side):
    for x, y in data[:3]:  # warm-up iterations are real steps
        static_x.copy_(x)
        static_y.copy_(y)
        opt.zero_grad(set_to_none=False)
        loss = loss_fn(model(static_x), static_y)
        loss.backward()
        opt.step()
torch.cuda.current_stream().wait_stream(side)
graph_losses = [None, None, None]
graph = torch.cuda.CUDAGraph()
opt.zero_grad(set_to_none=False)
with torch.cuda.graph(graph):
    # Gradients are zeroed inside the graph, or every replay would add to
    # the previous one's (the eager loop zeroes them each step).
    opt.zero_grad(set_to_none=False)
    static_loss = loss_fn(model(static_x), static_y)
    static_loss.backward()
    opt.step()
for x, y in data[3:]:
    static_x.copy_(x)
    static_y.copy_(y)
    graph.replay()
    graph_losses.append(static_loss.item())
close = all(abs(a - b) <= 1e-5 * max(1.0, abs(a))
            for a, b in zip(eager_losses[3:], graph_losses[3:]))
print("replayed losses match eager: %s" % close)
print("last replayed loss %.6f" % graph_losses[-1])
expect(close, "graph replay differs from eager")

# A second graph in the first one's pool.
pool = graph.pool()
g2 = torch.cuda.CUDAGraph()
static_in = torch.ones(1 << 16, device=dev)
with torch.cuda.graph(g2, pool=pool):
    static_out = static_in * 3 + 1
static_in.fill_(2)
g2.replay()
print("second graph in the shared pool: %s" %
      bool((static_out == 7).all().item()))
expect(bool((static_out == 7).all().item()), "shared-pool graph")

# make_graphed_callables.
torch.manual_seed(5)
net = nn.Sequential(nn.Linear(16, 16), nn.Tanh()).to(dev)
sample = torch.randn(8, 16, device=dev, requires_grad=True)
graphed = torch.cuda.make_graphed_callables(net, (sample,))
inp = torch.randn(8, 16, device=dev, requires_grad=True)
out = graphed(inp)
out.sum().backward()
ref = net(inp.detach())
print("graphed callable matches: %s" % torch.allclose(out, ref, atol=1e-6))
expect(torch.allclose(out, ref, atol=1e-6), "graphed callable")
finish("torch_cuda_graph")
