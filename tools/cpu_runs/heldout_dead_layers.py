# Held-out runs for layer_grad_imbalance's flat (data-independent) branch, written after it and
# apart from its tuning runs (dead_layer_runs.py): other models, causes, batch sizes and tags.
#   /usr/bin/python3 heldout_dead_layers.py OUT   (then tw-events-from-jsonl OUT/RUN/log.jsonl LOGDIR/RUN)
import json, os, sys
import torch, torch.nn as nn, torch.nn.functional as F
OUT = sys.argv[1]
torch.set_num_threads(1)

def images(n, k=6, seed=0):
    g = torch.Generator().manual_seed(seed)
    tmpl = torch.rand(k, 1, 12, 12, generator=torch.Generator().manual_seed(17))
    y = torch.randint(0, k, (n,), generator=g)
    return (0.5 * tmpl[y] + 0.5 * torch.rand(n, 1, 12, 12, generator=g)), y

class GatedResCNN(nn.Module):
    # stem -> x + gate * branch(x) -> 2x2 pool -> linear head; the gate starts at 0 (ReZero / LayerScale).
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(1, 8, 3, padding=1)
        self.branch = nn.Sequential(nn.Conv2d(8, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 8, 3, padding=1))
        self.gate = nn.Parameter(torch.zeros(1))
        self.head = nn.Linear(8 * 6 * 6, 6)
    def forward(self, x):
        h = F.relu(self.stem(x)); h = h + self.gate * self.branch(h)
        return self.head(F.max_pool2d(h, 2).flatten(1))

def run(name, m, x, y, params, steps=500, bs=32, l2=1e-3, lr=0.05, every=10, tag="gradients/"):
    o = torch.optim.SGD(params, lr=lr, momentum=0.9); g = torch.Generator().manual_seed(6); rows = []
    for step in range(steps + 1):
        idx = torch.randint(0, len(x), (bs,), generator=g)
        loss = F.cross_entropy(m(x[idx]), y[idx])
        # Keras-style kernel_regularizer: an L2 term on every weight, added to the loss.
        loss = loss + l2 * sum((p ** 2).sum() for n_, p in m.named_parameters() if n_.endswith("weight"))
        o.zero_grad(); loss.backward()
        if step % every == 0:
            rows.append({"tag": "loss", "step": step, "wall_time": 1.84e9 + step, "value": loss.item()})
            for n_, p in m.named_parameters():
                if n_.endswith("weight") and p.grad is not None:
                    rows.append({"tag": tag + n_, "step": step, "wall_time": 1.84e9 + step, "value": p.grad.norm().item()})
        o.step()
    d = os.path.join(OUT, name); os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "log.jsonl"), "w") as f:
        for r in rows: f.write(json.dumps(r) + "\n")
    print(name, "loss", rows[0]["value"], "->", loss.item())

x, y = images(3000)
# Sick: the gate is left out of the optimizer's parameter list (a param-group filter by name
# that matched "gate"), so it stays 0: the branch's convolutions get no gradient from the data,
# only the L2 term's. The stem and head learn; the loss falls.
torch.manual_seed(1); m = GatedResCNN()
run("hd_gate_left_out_of_optimizer", m, x, y, [p for n_, p in m.named_parameters() if n_ != "gate"])
# Healthy twin: the gate trains and opens.
torch.manual_seed(1); m = GatedResCNN()
run("hd_healthy_gate_trained", m, x, y, list(m.parameters()))

class DetachedProj(nn.Module):
    # Tabular model: a projection whose output is .detach()ed by mistake (copied from a
    # target-network update) before the classifier.
    def __init__(self, detach):
        super().__init__(); self.detach = detach
        self.proj = nn.Linear(16, 32); self.body = nn.Linear(16, 32); self.out = nn.Linear(64, 4)
    def forward(self, x):
        p = F.relu(self.proj(x)); p = p.detach() if self.detach else p
        return self.out(torch.cat([p, F.relu(self.body(x))], 1))

g = torch.Generator().manual_seed(3); xt = torch.randn(4000, 16, generator=g); yt = (xt[:, :4] * torch.tensor([1.0, -1, 2, 0.5])).argmax(1)
torch.manual_seed(2); m = DetachedProj(True)
run("hd_projection_detached", m, xt, yt, list(m.parameters()), tag="grad_norm/", l2=2e-4, lr=0.02)
# Healthy: the same model without the detach, at a large batch (1024: less batch noise).
torch.manual_seed(2); m = DetachedProj(False)
run("hd_healthy_large_batch", m, xt, yt, list(m.parameters()), tag="grad_norm/", l2=2e-4, lr=0.02, bs=1024)
