# Held-out runs for loss_divergence's "validation accuracy holds" reading, written after it and
# apart from the curriculum run it was made on (heldout_schedules.py): a small CNN, other data,
# Adam, Lightning-style tags, evaluation every 40 steps.
#   /usr/bin/python3 heldout_divergence.py OUT   (then tw-events-from-jsonl OUT/RUN/log.jsonl LOGDIR/RUN)
import json, os, sys
import torch, torch.nn as nn, torch.nn.functional as F
OUT = sys.argv[1]
torch.set_num_threads(1)

def images(n, seed, k=8):
    g = torch.Generator().manual_seed(seed)
    tmpl = torch.rand(k, 1, 10, 10, generator=torch.Generator().manual_seed(23))
    y = torch.randint(0, k, (n,), generator=g)
    return 0.2 * tmpl[y] + 0.8 * torch.rand(n, 1, 10, 10, generator=g), y

def cnn(): return nn.Sequential(nn.Conv2d(1, 12, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(12 * 25, 64), nn.ReLU(), nn.Linear(64, 8))

def run(name, steps=1200, lr=2e-3, lr_at=None, augment=None, reset_at=None):
    torch.manual_seed(4)
    x, y = images(4000, 1); xv, yv = images(800, 2)
    m = cnn(); o = torch.optim.Adam(m.parameters(), lr=lr); g = torch.Generator().manual_seed(8); rows = []
    def log(tag, step, v): rows.append({"tag": tag, "step": step, "wall_time": 1.85e9 + 2 * step, "value": float(v)})
    for step in range(1, steps + 1):
        if reset_at and step == reset_at:  # a resume that rebuilt the optimizer and the warm LR
            o = torch.optim.Adam(m.parameters(), lr=lr * 40)
        cur = lr_at(step, lr) if lr_at else (lr * 40 if reset_at and step >= reset_at else lr)
        for gr in o.param_groups: gr["lr"] = cur
        idx = torch.randint(0, len(x), (64,), generator=g); xb = x[idx]
        if augment: xb = augment(step, xb, g)
        loss = F.cross_entropy(m(xb), y[idx]); o.zero_grad(); loss.backward(); o.step()
        if step % 5 == 0: log("train_loss_step", step, loss.item()); log("lr-Adam", step, cur)
        if step % 40 == 0:
            m.eval()
            with torch.no_grad():
                out = m(xv); log("val_loss", step, F.cross_entropy(out, yv).item()); log("val_acc", step, (out.argmax(1) == yv).float().mean().item())
            m.train()
    d = os.path.join(OUT, name); os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "log.jsonl"), "w") as f:
        for r in rows: f.write(json.dumps(r) + "\n")
    va = [r["value"] for r in rows if r["tag"] == "val_acc"]
    tl = [r["value"] for r in rows if r["tag"] == "train_loss_step"]
    print(name, "val_acc", va[len(va) // 3], "->", va[-1], "train loss", min(tl), "min,", sum(tl[-20:]) / 20, "last 20")

# Sick: a scheduler bug multiplies the LR by 50 at 40 % of the run (a warm restart to the
# wrong peak): the loss climbs and the validation accuracy goes with it.
run("hv_lr_jump_at_40pct", lr_at=lambda s, lr: lr * (50 if s > 480 else 1))
# Sick: a resume at step 500 rebuilt Adam (moments lost) at 40x the LR.
run("hv_resume_lost_optimizer_state", reset_at=500)
# Healthy: augmentation (additive noise on training inputs only) ramped up over the run.
run("hv_healthy_noise_augmentation_ramp", augment=lambda s, xb, g: xb + torch.randn(xb.shape, generator=g) * (s / 1200) * 0.6)
