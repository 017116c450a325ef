# Held-out runs (tests/data/heldout/ho2_*), written apart from the tuning harness: schedules and
# regimes the rules were not tuned on. /usr/bin/python3 heldout_schedules.py OUT, then
# tw-events-from-jsonl OUT/RUN/log.jsonl LOGDIR/RUN for each run.
import json, math, os, sys
import torch, torch.nn as nn, torch.nn.functional as F
OUT = sys.argv[1]
T0 = 1.80e9

def blobs(n, d=20, k=5, seed=0, noise=1.5):
    g = torch.Generator().manual_seed(seed)
    centers = torch.randn(k, d, generator=torch.Generator().manual_seed(99)) * 2.0
    y = torch.randint(0, k, (n,), generator=g)
    return centers[y] + torch.randn(n, d, generator=g) * noise, y

class Log:
    def __init__(self, name): self.name, self.rows = name, []
    def __call__(self, tag, step, v): self.rows.append({"tag": tag, "step": step, "wall_time": T0 + step * 0.3, "value": float(v)})
    def save(self):
        d = os.path.join(OUT, self.name); os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "log.jsonl"), "w") as f:
            for r in self.rows: f.write(json.dumps(r) + "\n")

def mlp(): return nn.Sequential(nn.Linear(20, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU(), nn.Linear(128, 5))

def run(name, sched, epochs=30, lr=0.05, data_fn=None, bs=64, opt_name="sgd"):
    torch.manual_seed(1)
    xtr, ytr = blobs(3000, seed=1, noise=2.5); xva, yva = blobs(1000, seed=2, noise=2.5)
    m = mlp(); opt = torch.optim.SGD(m.parameters(), lr=lr, momentum=0.9) if opt_name == "sgd" else torch.optim.AdamW(m.parameters(), lr=lr)
    log = Log(name); step = 0; total = epochs * (len(xtr) // bs)
    for ep in range(epochs):
        xs, ys = (data_fn(ep, xtr, ytr) if data_fn else (xtr, ytr))
        perm = torch.randperm(len(xs))
        for i in range(0, len(xs) - bs + 1, bs):
            cur = sched(step, total, lr)
            for gr in opt.param_groups: gr["lr"] = cur
            idx = perm[i:i+bs]; out = m(xs[idx]); loss = F.cross_entropy(out, ys[idx])
            opt.zero_grad(); loss.backward()
            gn = torch.nn.utils.clip_grad_norm_(m.parameters(), 1e9)
            opt.step(); step += 1
            if step % 5 == 0:
                log("train/loss", step, loss.item()); log("train/lr", step, cur); log("train/grad_norm", step, float(gn))
        m.eval()
        with torch.no_grad():
            o = m(xva); log("val/loss", step, F.cross_entropy(o, yva).item()); log("val/acc", step, (o.argmax(1) == yva).float().mean().item())
        m.train()
    log.save(); print(name, "done", step)

# 1. SGDR: cosine with warm restarts every 5 epochs (the loss jumps up at each restart).
def sgdr(step, total, lr, period=None):
    per = total // 6
    t = step % per
    return lr * 0.5 * (1 + math.cos(math.pi * t / per))
run("ho2_healthy_sgdr", sgdr)
# 2. OneCycle: LR rises 10x to its peak at 30%, then anneals.
def onecycle(step, total, lr):
    p = step / total
    return lr * (0.1 + 0.9 * p / 0.3) if p < 0.3 else lr * 0.5 * (1 + math.cos(math.pi * (p - 0.3) / 0.7))
run("ho2_healthy_onecycle", onecycle)
# 3. Curriculum: harder (noisier) data each 6 epochs: the training loss climbs by design.
def curriculum(ep, x, y):
    g = torch.Generator().manual_seed(ep)
    return x + torch.randn(x.shape, generator=g) * (ep // 6) * 0.8, y
run("ho2_healthy_curriculum", lambda s, t, lr: lr * 0.5, data_fn=curriculum)
# 4. Step decay x0.1 at 50% and 75% (classic ResNet schedule).
run("ho2_healthy_step_decay", lambda s, t, lr: lr * (0.01 if s > 0.75 * t else 0.1 if s > 0.5 * t else 1.0))
# 5. Sick: AdamW at lr 0.05 on this MLP (too high for Adam): instability.
run("ho2_adamw_lr_too_high", lambda s, t, lr: lr, lr=0.05, opt_name="adamw")
