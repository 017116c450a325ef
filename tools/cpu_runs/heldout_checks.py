# Held-out runs for the seeds' checks of issue 18 (tests/data/heldout), written apart from the
# tuning harness (make_cpu_runs.py): its own data, loop and logging. /usr/bin/python3 heldout_checks.py OUT
# then tw-events-from-jsonl OUT/RUN/log.jsonl LOGDIR/RUN for each run.
import json, math, os, sys, time
import torch, torch.nn as nn, torch.nn.functional as F
OUT = sys.argv[1]
T0 = 1.80e9

def blobs(n, d=20, k=5, seed=0, prior=None):
    g = torch.Generator().manual_seed(seed)
    centers = torch.randn(k, d, generator=torch.Generator().manual_seed(99)) * 2.0
    if prior is None:
        y = torch.randint(0, k, (n,), generator=g)
    else:
        y = torch.multinomial(torch.tensor(prior), n, replacement=True, generator=g)
    x = centers[y] + torch.randn(n, d, generator=g) * 1.5
    return x, y

class Log:
    def __init__(self, name): self.name, self.rows = name, []
    def __call__(self, tag, step, v): self.rows.append({"tag": tag, "step": step, "wall_time": T0 + step * 0.5, "value": float(v)})
    def save(self):
        d = os.path.join(OUT, self.name); os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "log.jsonl"), "w") as f:
            for r in self.rows: f.write(json.dumps(r) + "\n")

def evaluate(m, x, y, bs=256, train_mode=False):
    m.train(train_mode)
    with torch.no_grad():
        losses, correct = [], 0
        for i in range(0, len(x), bs):
            out = m(x[i:i+bs]); losses.append(F.cross_entropy(out, y[i:i+bs], reduction="sum").item())
            correct += (out.argmax(1) == y[i:i+bs]).sum().item()
    m.train(True)
    return sum(losses) / len(x), correct / len(x)

def train(name, m, xtr, ytr, xva, yva, epochs=6, lr=1e-2, bs=64, eval_bs=256, eval_train_mode=False,
          loss_fn=None, mutate_val=None, params=None, mixup=0.0):
    log = Log(name); opt = torch.optim.SGD(params if params is not None else m.parameters(), lr=lr, momentum=0.9)
    step = 0; g = torch.Generator().manual_seed(5)
    for ep in range(epochs):
        perm = torch.randperm(len(xtr), generator=g)
        for i in range(0, len(xtr), bs):
            idx = perm[i:i+bs]; xb, yb = xtr[idx], ytr[idx]
            if mixup > 0:
                lam = float(torch.distributions.Beta(mixup, mixup).sample())
                j = torch.randperm(len(xb)); out = m(lam * xb + (1 - lam) * xb[j])
                loss = lam * F.cross_entropy(out, yb) + (1 - lam) * F.cross_entropy(out, yb[j])
            else:
                out = m(xb); loss = (loss_fn or F.cross_entropy)(out, yb)
            opt.zero_grad(); loss.backward(); opt.step(); step += 1
            acc = (out.argmax(1) == yb).float().mean().item()
            if step % 5 == 0:
                log("train/loss", step, loss.item()); log("train/acc", step, acc); log("train/lr", step, lr)
        xv = mutate_val(xva) if mutate_val else xva
        vl, va = evaluate(m, xv, yva, bs=eval_bs, train_mode=eval_train_mode)
        log("val/loss", step, vl); log("val/acc", step, va)
    log.save(); print(name, "final val", vl, va, "train", loss.item())

def bn_mlp():
    return nn.Sequential(nn.Linear(20, 64), nn.BatchNorm1d(64), nn.ReLU(), nn.Linear(64, 64), nn.BatchNorm1d(64), nn.ReLU(), nn.Linear(64, 5))

torch.manual_seed(0)
xtr, ytr = blobs(6000, seed=1); xva, yva = blobs(1500, seed=2)
# 1. Sick: evaluation forgets model.eval() and feeds batches of 2: BatchNorm normalises each
#    pair by itself, so every validation pair looks alike to the classifier.
train("ho_bn_eval_train_mode", bn_mlp(), xtr, ytr, xva, yva, eval_bs=2, eval_train_mode=True)
# 2. Sick: the validation loader maps labels through a different class order (sorted folder
#    names vs the training's index file): classes are rotated by one.
train("ho_val_labels_rotated", bn_mlp(), xtr, ytr, xva, (yva + 1) % 5)
# 3. Healthy: mixup on training only, so training loss sits above validation.
train("ho_healthy_mixup", bn_mlp(), xtr, ytr, xva, yva, mixup=0.4)
# 4. Healthy: label smoothing 0.3 in the training loss, plain CE for validation.
train("ho_healthy_label_smoothing", bn_mlp(), xtr, ytr, xva, yva, loss_fn=lambda o, y: F.cross_entropy(o, y, label_smoothing=0.3))
# 5. Sick: only the last layer's bias trains (a freeze loop that left `bias` params trainable
#    by name), on imbalanced classes: the loss falls to the prior's entropy, accuracy stays the
#    majority share.
prior = [0.6, 0.1, 0.1, 0.1, 0.1]
xi, yi = blobs(6000, seed=3, prior=prior); xvi, yvi = blobs(1500, seed=4, prior=prior)
m = bn_mlp()
with torch.no_grad(): m[-1].weight.mul_(0.01)
train("ho_bias_only_imbalanced", m, xi, yi, xvi, yvi, params=[m[-1].bias], lr=0.05)
# 6. Healthy: the same imbalanced data, everything trains.
train("ho_healthy_imbalanced", bn_mlp(), xi, yi, xvi, yvi)
