# Held-out runs for fp16_overflow_steps, written after it and apart from the amp runs it was
# tuned on (runs_checks.py): their own loss-scaler emulation, models, causes and logging forms
# (a count per logging interval, Megatron-LM style; a 0/1 flag per logged step).
#   /usr/bin/python3 heldout_overflow.py OUT   (then tw-events-from-jsonl OUT/RUN/log.jsonl LOGDIR/RUN)
import json, os, sys
import torch, torch.nn as nn, torch.nn.functional as F
OUT = sys.argv[1]
torch.set_num_threads(1)
F16_MAX = 65504.0

class Scaler:
    # Dynamic loss scaling as mixed-precision trainers do it: the loss times the scale is
    # backpropagated; a step whose scaled gradients leave float16's range is skipped and the
    # scale halved; `grow_after` clean steps in a row double it. (CPU: float16's range is checked
    # on the float32 gradients.)
    def __init__(self, scale=2.0 ** 15, grow_after=1000):
        self.scale, self.grow_after, self.clean = scale, grow_after, 0
    def step(self, loss, params, opt):
        opt.zero_grad(); (loss * self.scale).backward()
        bad = any((not torch.isfinite(p.grad).all()) or p.grad.abs().max().item() > F16_MAX for p in params if p.grad is not None)
        if bad:
            self.scale /= 2; self.clean = 0; return False
        for p in params:
            if p.grad is not None: p.grad /= self.scale
        opt.step(); self.clean += 1
        if self.clean >= self.grow_after: self.scale *= 2; self.clean = 0
        return True

def blobs(n, seed, k=6):
    g = torch.Generator().manual_seed(seed)
    c = torch.randn(k, 16, generator=torch.Generator().manual_seed(13)) * 2.5
    y = torch.randint(0, k, (n,), generator=g)
    return c[y] + torch.randn(n, 16, generator=g), y

def naive_softmax_ce(z, y):
    # A hand-written softmax under autocast: exp() in float16 without subtracting the max, so a
    # logit above ln(65504) = 11.09 is inf, and inf/inf a NaN, whatever the loss scale.
    # (CPU torch has no float16 exp: float16's overflow is applied to float32's result.)
    e = torch.exp(z); e = torch.where(z > 11.0904, torch.full_like(e, float("inf")), e)
    p = e / e.sum(1, keepdim=True)
    return -torch.log(p[torch.arange(len(y)), y] + 1e-9).mean()

def run(name, form, naive, steps=1500, every=10):
    torch.manual_seed(5); x, y = blobs(6000, 1)
    m = nn.Sequential(nn.Linear(16, 64), nn.GELU(), nn.Linear(64, 6)); params = list(m.parameters())
    opt = torch.optim.AdamW(params, lr=3e-3); sc = Scaler(); g = torch.Generator().manual_seed(2)
    rows, since_log = [], 0
    def log(tag, step, v):  # NaN/Inf as the strings the converter reads
        v = float(v); rows.append({"tag": tag, "step": step, "wall_time": 1.86e9 + step, "value": v if v == v and abs(v) != float("inf") else str(v)})
    for step in range(1, steps + 1):
        idx = torch.randint(0, len(x), (128,), generator=g)
        out = m(x[idx]); loss = naive_softmax_ce(out, y[idx]) if naive else F.cross_entropy(out, y[idx])
        ok = sc.step(loss, params, opt); since_log += 0 if ok else 1
        if step % every == 0:
            log("lm loss", step, loss.item()); log("loss-scale", step, sc.scale)
            if form == "interval": log("skipped-iterations", step, since_log)
            else: log("train/grad_overflow", step, 0 if ok else 1)
            since_log = 0
    d = os.path.join(OUT, name); os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "log.jsonl"), "w") as f:
        for r in rows: f.write(json.dumps(r) + "\n")
    sk = [r["value"] for r in rows if r["tag"] in ("skipped-iterations", "train/grad_overflow")]
    nan = sum(1 for r in rows if r["tag"] == "lm loss" and isinstance(r["value"], str))
    print(name, "skips logged", sum(sk), "final scale", sc.scale, "NaN losses logged", nan)

# Sick: the softmax written by hand (no max subtraction) under float16: as the classifier grows
# confident its logits pass 11.09 on more and more batches, each an inf, a NaN gradient and a
# skipped step at any scale. Logged as Megatron-LM does (skips per logging interval) and as a
# 0/1 flag for the logged step.
run("hf16_naive_softmax_interval_count", "interval", True)
run("hf16_naive_softmax_flag", "flag", True)
# Healthy: F.cross_entropy (a stable log-softmax).
run("hf16_healthy_stable_ce_interval_count", "interval", False)
run("hf16_healthy_stable_ce_flag", "flag", False)
