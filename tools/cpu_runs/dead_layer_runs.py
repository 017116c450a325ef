# Runs for layer_grad_imbalance's "constant" branch (issue 18: dead layers are "exactly 0, or
# near zero and constant"): a layer cut off from the data whose only gradient is an L2 term in
# the loss, so its norm is 2*lambda*||W||, shrinking by the same tiny factor every step.
#   /usr/bin/python3 dead_layer_runs.py OUT   (then tw-events-from-jsonl OUT/RUN/log.jsonl LOGDIR/RUN)
import json, os, sys
import torch, torch.nn as nn, torch.nn.functional as F
OUT = sys.argv[1]
torch.set_num_threads(1)

def save(name, rows):
    d = os.path.join(OUT, name); os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "log.jsonl"), "w") as f:
        for r in rows: f.write(json.dumps(r) + "\n")

def blobs(n, d=32, k=10, seed=0):
    g = torch.Generator().manual_seed(seed)
    c = torch.randn(k, d, generator=torch.Generator().manual_seed(11)) * 1.5
    y = torch.randint(0, k, (n,), generator=g)
    return c[y] + torch.randn(n, d, generator=g), y

def train(name, m, x, y, steps=600, lr=0.05, bs=64, l2=0.0, every=10, full_batch=False, params=None):
    o = torch.optim.SGD(params if params is not None else m.parameters(), lr=lr, momentum=0.9)
    g = torch.Generator().manual_seed(2); rows = []
    for step in range(steps + 1):
        idx = torch.arange(len(x)) if full_batch else torch.randint(0, len(x), (bs,), generator=g)
        loss = F.cross_entropy(m(x[idx]), y[idx])
        if l2: loss = loss + l2 * sum((p ** 2).sum() for n_, p in m.named_parameters() if n_.endswith("weight"))
        o.zero_grad(); loss.backward()
        if step % every == 0:
            rows.append({"tag": "train/loss", "step": step, "wall_time": 1.83e9 + step, "value": loss.item()})
            for n_, p in m.named_parameters():
                if n_.endswith("weight") and p.grad is not None:
                    rows.append({"tag": "grad_norm/" + n_, "step": step, "wall_time": 1.83e9 + step, "value": p.grad.norm().item()})
        o.step()
    save(name, rows)
    print(name, "loss", rows[0]["value"], "->", loss.item())

def mlp(): return nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10))

class TwoBranch(nn.Module):
    # Two parallel towers whose features are concatenated before the classifier.
    def __init__(self):
        super().__init__()
        self.a = nn.Sequential(nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 32), nn.ReLU())
        self.b = nn.Sequential(nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 32), nn.ReLU())
        self.head = nn.Linear(64, 10)
    def forward(self, x): return self.head(torch.cat([self.a(x), self.b(x)], 1))

x, y = blobs(4000)
# Sick: tower b's first layer has its bias at -20 (a bad init copied from a gating layer): its
# ReLUs are off for every input, so b.0 and b.2 get no gradient from the data, only the loss's
# L2 term. Tower a learns alone: the loss falls, half the model is dead.
torch.manual_seed(0); m = TwoBranch(); nn.init.constant_(m.b[0].bias, -20.0)
train("dead_tower_l2_in_loss", m, x, y, l2=5e-4)
# Healthy twin: same net and L2, normal bias.
torch.manual_seed(0)
train("healthy_mlp_l2_in_loss", mlp(), x, y, l2=5e-4)
# Healthy: full-batch training, every layer's gradient smooth (no minibatch noise).
torch.manual_seed(0)
train("healthy_full_batch_l2", mlp(), x[:1000], y[:1000], l2=5e-4, full_batch=True, lr=0.02)
