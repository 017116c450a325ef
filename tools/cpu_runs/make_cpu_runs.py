#!/usr/bin/python3
"""Real, small training runs made on CPU, each healthy or sick from a real cause.

    nice /usr/bin/python3 tools/cpu_runs/make_cpu_runs.py \
        --converter build/release/tw-events-from-jsonl --out tests/data/cpu_runs [--only NAME,...]
        [--seed-offset N]   # the same causes on new data and init: a held-out set

Every run trains a small model (MLP, CNN, GRU/RNN, tiny transformer, energy/contrastive model)
on data made with torch from fixed seeds, for a few seconds on one thread, and records each
logged scalar as a JSON line (tag, step, wall_time, value; NaN/Inf as "nan"/"inf"/"-inf").
The converter (tools/cpu_runs/events_from_jsonl.cc) turns each run's JSONL into a TensorBoard
event file in the run's directory. The script measures each run's series (first/min/argmin/
last, decile medians, non-finite counts), prints that summary, and writes a draft labels file
(cause, style, tags, a drafted onset and the measured lines per run) to its work directory.
tests/data/cpu_runs/labels.json was written from that draft by hand, each label checked against
the measured numbers: what a run showed, not what its cause was hoped to show.

Memory-measuring runs run in a fresh child process each (FRESH_PROCESS). Step-time and memory
values are measured, so they differ from machine to machine; the losses are seeded and were the
same on re-runs here (one thread).
"""
import argparse
import json
import math
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.set_num_threads(1)

ALL_RULES = [
    "non_finite_loss", "loss_divergence", "loss_spikes", "loss_plateau", "loss_constant",
    "loss_at_chance", "loss_oscillation", "overfitting", "val_stall", "val_constant",
    "lr_schedule_misaligned", "epoch_boundary_jumps", "grad_explosion", "grad_vanishing",
    "grad_clip_saturation", "step_time_creep", "memory_growth",
]

# --------------------------------------------------------------------------------------------
# Logging


class Run:
    """One run: its points per sub-run ("" for a plain run; "train"/"validation" for Keras)."""

    def __init__(self, name, style, cause):
        self.name, self.style, self.cause = name, style, cause
        self.subs = {}
        self.t0 = time.time()
        self.expect, self.expect_not, self.tags = [], [], {}
        self.onset = None
        self.notes = []

    def log(self, tag, step, value, sub=""):
        v = float(value)
        self.subs.setdefault(sub, []).append((tag, int(step), time.time(), v))

    def series(self, tag, sub=""):
        return [(s, v) for (t, s, _, v) in self.subs.get(sub, []) if t == tag]

    def note(self, text):
        self.notes.append(text)


def jval(v):
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return v


def write_run(run, out_root, converter, work):
    for sub, pts in run.subs.items():
        rel = run.name if not sub else f"{run.name}/{sub}"
        d = os.path.join(out_root, rel)
        if os.path.isdir(d):
            shutil.rmtree(d)
        os.makedirs(d)
        jl = os.path.join(work, rel.replace("/", "__") + ".jsonl")
        with open(jl, "w") as f:
            for (tag, step, wt, v) in pts:
                f.write(json.dumps({"tag": tag, "step": step, "wall_time": round(wt, 3),
                                    "value": jval(v)}) + "\n")
        cmd = [converter] + (["--tf2"] if run.style == "keras" else []) + [jl, d]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)


# --------------------------------------------------------------------------------------------
# Measurement


def fin(vals):
    return [v for v in vals if math.isfinite(v)]


def median(xs):
    xs = sorted(xs)
    if not xs:
        return float("nan")
    n = len(xs)
    return xs[n // 2] if n % 2 else 0.5 * (xs[n // 2 - 1] + xs[n // 2])


def deciles(ser):
    vals = [v for _, v in ser]
    n = len(vals)
    out = []
    for i in range(10):
        chunk = fin(vals[i * n // 10:(i + 1) * n // 10])
        out.append(median(chunk) if chunk else float("nan"))
    return out


def smooth(ser, w):
    out = []
    vals = [v for _, v in ser]
    for i in range(len(vals)):
        win = fin(vals[max(0, i - w + 1):i + 1])
        out.append((ser[i][0], median(win) if win else float("nan")))
    return out


def first_nonfinite(ser):
    for s, v in ser:
        if not math.isfinite(v):
            return s
    return None


def argmin(ser):
    best = None
    for s, v in ser:
        if math.isfinite(v) and (best is None or v < best[1]):
            best = (s, v)
    return best if best else (None, float("nan"))


def argmax(ser):
    best = None
    for s, v in ser:
        if math.isfinite(v) and (best is None or v > best[1]):
            best = (s, v)
    return best if best else (None, float("nan"))


def g(x):
    if x is None:
        return "None"
    if isinstance(x, int):
        return str(x)
    if math.isnan(x) or math.isinf(x):
        return str(x)
    return f"{x:.4g}"


def describe(ser, name):
    vals = [v for _, v in ser]
    nf = sum(1 for v in vals if not math.isfinite(v))
    mn = argmin(ser)
    dec = deciles(ser)
    s = (f"{name}: n={len(ser)} steps {ser[0][0]}..{ser[-1][0]} first={g(vals[0])} "
         f"min={g(mn[1])}@{mn[0]} last={g(vals[-1])}")
    if nf:
        s += f" nonfinite={nf} first_nonfinite@{first_nonfinite(ser)}"
    s += " deciles=[" + ", ".join(g(d) for d in dec) + "]"
    return s


def rss_mb():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


# --------------------------------------------------------------------------------------------
# Data (all made with torch from fixed seeds)

K = 10
LN_K = math.log(K)


def teacher_data(n, d=32, k=K, seed=1, teacher_seed=0, label_noise=0.0):
    gt = torch.Generator().manual_seed(teacher_seed)
    w1 = torch.randn(d, 64, generator=gt) / d ** 0.5
    w2 = torch.randn(64, k, generator=gt)
    gd = torch.Generator().manual_seed(seed)
    x = torch.randn(n, d, generator=gd)
    logits = torch.tanh(x @ w1) @ w2
    # Balance classes: subtract each class's median logit so argmax spreads evenly.
    logits = logits - logits.median(0).values
    y = logits.argmax(1)
    if label_noise > 0:
        flip = torch.rand(n, generator=gd) < label_noise
        y = torch.where(flip, torch.randint(0, k, (n,), generator=gd), y)
    return x, y


def image_data(n, k=K, size=12, seed=1, noise=0.6):
    gt = torch.Generator().manual_seed(100)
    templ = torch.randn(k, 1, size // 3, size // 3, generator=gt)
    templ = F.interpolate(templ, size=(size, size), mode="bilinear", align_corners=False)
    gd = torch.Generator().manual_seed(seed)
    y = torch.randint(0, k, (n,), generator=gd)
    x = templ[y].clone()
    shifts = torch.randint(-1, 2, (n, 2), generator=gd)
    for i in range(n):
        x[i] = torch.roll(x[i], shifts=(int(shifts[i, 0]), int(shifts[i, 1])), dims=(1, 2))
    x = x + noise * torch.randn(x.shape, generator=gd)
    return x, y


def markov_tokens(n, length, vocab=16, seed=1):
    gt = torch.Generator().manual_seed(7)
    trans = torch.softmax(3.0 * torch.randn(vocab, vocab, generator=gt), 1)
    gd = torch.Generator().manual_seed(seed)
    seq = torch.zeros(n, length, dtype=torch.long)
    seq[:, 0] = torch.randint(0, vocab, (n,), generator=gd)
    for t in range(1, length):
        seq[:, t] = torch.multinomial(trans[seq[:, t - 1]], 1, generator=gd).squeeze(1)
    return seq


def adding_problem(n, length, seed=1):
    gd = torch.Generator().manual_seed(seed)
    vals = torch.rand(n, length, generator=gd)
    marks = torch.zeros(n, length)
    a = torch.randint(0, length // 2, (n,), generator=gd)
    b = torch.randint(length // 2, length, (n,), generator=gd)
    marks[torch.arange(n), a] = 1
    marks[torch.arange(n), b] = 1
    x = torch.stack([vals, marks], 2)
    y = (vals * marks).sum(1)
    return x, y


# --------------------------------------------------------------------------------------------
# Models


def mlp(d_in, hidden, d_out, depth=2):
    layers, d = [], d_in
    for _ in range(depth):
        layers += [nn.Linear(d, hidden), nn.ReLU()]
        d = hidden
    layers.append(nn.Linear(d, d_out))
    return nn.Sequential(*layers)


class SmallCNN(nn.Module):
    def __init__(self, k=K):
        super().__init__()
        self.c1 = nn.Conv2d(1, 8, 3, padding=1)
        self.c2 = nn.Conv2d(8, 16, 3, padding=1)
        self.fc = nn.Linear(16 * 3 * 3, k)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.c1(x)), 2)
        x = F.max_pool2d(F.relu(self.c2(x)), 2)
        return self.fc(x.flatten(1))


class TinyLM(nn.Module):
    def __init__(self, vocab=16, d=32, layers=2, length=16, norm_first=False):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.pos = nn.Parameter(0.02 * torch.randn(length, d))
        layer = nn.TransformerEncoderLayer(d, 2, 64, dropout=0.0, batch_first=True,
                                           norm_first=norm_first)
        self.enc = nn.TransformerEncoder(layer, layers)
        self.out = nn.Linear(d, vocab)
        self.mask = torch.triu(torch.full((length, length), float("-inf")), 1)

    def forward(self, x):
        h = self.emb(x) + self.pos[: x.shape[1]]
        h = self.enc(h, mask=self.mask[: x.shape[1], : x.shape[1]])
        return self.out(h)


def grad_norm(model):
    tot = 0.0
    for p in model.parameters():
        if p.grad is not None:
            tot += float(p.grad.detach().pow(2).sum())
    return math.sqrt(tot) if math.isfinite(tot) else float("nan") if math.isnan(tot) else tot


def accuracy(logits, y):
    return float((logits.argmax(-1) == y).float().mean())


def evaluate(model, x, y, loss_fn=F.cross_entropy):
    model.eval()
    with torch.no_grad():
        out = model(x)
        loss = float(loss_fn(out, y))
        acc = accuracy(out, y)
    model.train()
    return loss, acc


def batches(n, bs, gen, shuffle=True):
    idx = torch.randperm(n, generator=gen) if shuffle else torch.arange(n)
    for i in range(0, n - bs + 1, bs):
        yield idx[i:i + bs]


# --------------------------------------------------------------------------------------------
# Style helpers: how each framework's logging names and spaces its scalars.

STYLE_TAGS = {
    "pytorch": dict(train_loss="Loss/train", val_loss="Loss/val", train_acc="Accuracy/train",
                    val_acc="Accuracy/val", lr="lr", grad_norm="grad_norm"),
    "hf": dict(train_loss="train/loss", val_loss="eval/loss", val_acc="eval/accuracy",
               lr="train/learning_rate", grad_norm="train/grad_norm", epoch="train/epoch"),
    "lightning": dict(train_loss="train_loss_step", train_loss_epoch="train_loss_epoch",
                      val_loss="val_loss", val_acc="val_acc", lr="lr-Adam", epoch="epoch"),
}


class Rec:
    """Step-wise recorder for the three step-based styles, with per-run tag overrides."""

    def __init__(self, run, style, every=1, **over):
        self.run, self.style, self.every = run, style, every
        self.t = dict(STYLE_TAGS.get(style, {}))
        self.t.update(over)
        self.t = {k: v for k, v in self.t.items() if v}
        self.acc = []   # HF averages the loss over its logging window
        self.ep_losses = []

    def step(self, step, loss, lr=None, gn=None, epoch=None, extra=None):
        self.acc.append(loss)
        self.ep_losses.append(loss)
        if step % self.every != 0:
            return
        if self.style == "hf":
            fv = fin(self.acc)
            val = sum(fv) / len(fv) if len(fv) == len(self.acc) else float("nan")
            if self.acc and not math.isfinite(self.acc[-1]):
                val = self.acc[-1]
        else:
            val = loss
        self.acc = []
        r = self.run
        if "train_loss" in self.t:
            r.log(self.t["train_loss"], step, val)
        if lr is not None and "lr" in self.t:
            r.log(self.t["lr"], step, lr)
        if gn is not None and "grad_norm" in self.t:
            r.log(self.t["grad_norm"], step, gn)
        if epoch is not None and "epoch" in self.t and self.style == "hf":
            r.log(self.t["epoch"], step, round(epoch, 4))
        for k, v in (extra or {}).items():
            r.log(k, step, v)

    def epoch_end(self, step, epoch, val_loss=None, val_acc=None):
        r = self.run
        if self.style == "lightning":
            if "train_loss_epoch" in self.t and self.ep_losses:
                fv = self.ep_losses
                r.log(self.t["train_loss_epoch"], step, sum(fv) / len(fv))
            if "epoch" in self.t:
                r.log(self.t["epoch"], step, epoch)
        self.ep_losses = []
        if val_loss is not None and "val_loss" in self.t:
            r.log(self.t["val_loss"], step, val_loss)
        if val_acc is not None and "val_acc" in self.t:
            r.log(self.t["val_acc"], step, val_acc)


def set_lr(opt, lr):
    for pg in opt.param_groups:
        pg["lr"] = lr


def cosine_warmup(step, total, peak, warm, floor=0.0):
    if step < warm:
        return peak * (step + 1) / warm
    p = min(1.0, (step - warm) / max(1, total - warm))
    return floor + (peak - floor) * 0.5 * (1 + math.cos(math.pi * p))


# --------------------------------------------------------------------------------------------
# Generic classification loop: used by many runs with different causes.


def train_classifier(run, rec, model, opt, xtr, ytr, xva, yva, epochs, bs, seed,
                     lr_fn=None, loss_fn=F.cross_entropy, shuffle=True, order=None,
                     clip=None, eval_every_epoch=1, x_hook=None, max_steps=None):
    gen = torch.Generator().manual_seed(seed)
    step = 0
    n = len(xtr)
    steps_per_epoch = n // bs
    for ep in range(epochs):
        if order is not None:
            idx_all = order
            chunks = [idx_all[i:i + bs] for i in range(0, n - bs + 1, bs)]
        else:
            chunks = list(batches(n, bs, gen, shuffle))
        for idx in chunks:
            step += 1
            if lr_fn is not None:
                set_lr(opt, lr_fn(step))
            xb, yb = xtr[idx], ytr[idx]
            if x_hook is not None:
                xb = x_hook(step, xb)
            out = model(xb)
            loss = loss_fn(out, yb)
            opt.zero_grad()
            loss.backward()
            gn = grad_norm(model)
            if clip is not None:
                torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
            opt.step()
            rec.step(step, float(loss), lr=opt.param_groups[0]["lr"], gn=gn,
                     epoch=step / steps_per_epoch)
            if max_steps and step >= max_steps:
                break
        if (ep + 1) % eval_every_epoch == 0 or ep == epochs - 1:
            vl, va = evaluate(model, xva, yva, loss_fn)
            rec.epoch_end(step, ep, vl, va)
        if max_steps and step >= max_steps:
            break
    return step


def keras_fit(run, model, opt, xtr, ytr, xva, yva, epochs, bs, seed, lr_fn=None,
              loss_fn=F.cross_entropy, shuffle=True):
    """Keras-style: one point per epoch in sibling train/validation runs (epoch index steps)."""
    gen = torch.Generator().manual_seed(seed)
    step = 0
    for ep in range(epochs):
        if lr_fn is not None:
            set_lr(opt, lr_fn(ep))
        losses, accs = [], []
        for idx in batches(len(xtr), bs, gen, shuffle):
            step += 1
            out = model(xtr[idx])
            loss = loss_fn(out, ytr[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(float(loss))
            accs.append(accuracy(out, ytr[idx]))
        tl = sum(losses) / len(losses)
        run.log("epoch_loss", ep, tl, "train")
        run.log("epoch_accuracy", ep, sum(accs) / len(accs), "train")
        run.log("epoch_learning_rate", ep, opt.param_groups[0]["lr"], "train")
        vl, va = evaluate(model, xva, yva, loss_fn)
        run.log("epoch_loss", ep, vl, "validation")
        run.log("epoch_accuracy", ep, va, "validation")


KERAS_TAGS = {"train_loss": "epoch_loss", "train_acc": "epoch_accuracy",
              "lr": "epoch_learning_rate", "val_loss": "validation:epoch_loss",
              "val_acc": "validation:epoch_accuracy"}

# --------------------------------------------------------------------------------------------
# The runs. Each function builds one Run, trains, and sets expect/expect_not/tags/onset from
# what it measured.

RUNS = []
# Runs that measure resident memory run in a fresh process of their own: in a shared process
# the heap freed by an earlier run is reused and hides the growth.
FRESH_PROCESS = {"leak_loss_history", "growing_feature_cache", "healthy_rnn_with_counters"}


def register(fn):
    RUNS.append(fn)
    return fn


def base_not(*extra_ok):
    """expect_not for a healthy run: every loss/val/lr/system rule except those allowed."""
    quiet = ["non_finite_loss", "loss_divergence", "loss_spikes", "loss_plateau", "loss_constant",
             "loss_at_chance", "loss_oscillation", "overfitting", "val_stall", "val_constant",
             "lr_schedule_misaligned", "epoch_boundary_jumps", "grad_explosion",
             "step_time_creep", "memory_growth"]
    return [r for r in quiet if r not in extra_ok]


def loss_series(run):
    t = run.tags["train_loss"]
    sub = ""
    if run.style == "keras":
        sub = "train"
    return run.series(t, sub)


# ---- non-finite / divergence -----------------------------------------------------------------


@register
def sgd_nan_high_lr():
    r = Run("sgd_nan_high_lr", "pytorch", "MLP 32-256-256-10, SGD momentum 0.9 at constant lr 50 "
            "(meant 0.05), no clipping: the weights overflow within a few steps")
    torch.manual_seed(0)
    xtr, ytr = teacher_data(4096, seed=1)
    xva, yva = teacher_data(1024, seed=2)
    m = mlp(32, 256, K)
    opt = torch.optim.SGD(m.parameters(), lr=50.0, momentum=0.9)
    rec = Rec(r, "pytorch")
    train_classifier(r, rec, m, opt, xtr, ytr, xva, yva, epochs=3, bs=64, seed=3)
    r.tags = {k: rec.t[k] for k in ("train_loss", "val_loss", "val_acc", "lr", "grad_norm")}
    ser = loss_series(r)
    r.onset = first_nonfinite(ser)
    r.expect = ["non_finite_loss"] if r.onset is not None else ["loss_divergence"]
    r.expect_not = ["loss_plateau", "loss_constant", "overfitting"]
    return r


@register
def inf_from_first_step():
    r = Run("inf_from_first_step", "custom",
            "hand-written cross-entropy -log(softmax(z)[y]) on raw 16-bit 0..65535 sensor "
            "images (no normalisation): softmax underflows to 0 for the true class, loss is +inf from the "
            "first batch and the gradients are NaN after it")
    torch.manual_seed(0)
    xtr, ytr = image_data(2048, seed=1)
    xva, yva = image_data(512, seed=2)
    xtr = (xtr - xtr.min()) / (xtr.max() - xtr.min()) * 65535.0
    xva = (xva - xva.min()) / (xva.max() - xva.min()) * 65535.0
    m = SmallCNN()

    def naive_ce(z, y):
        return -torch.log(torch.softmax(z, 1)[torch.arange(len(y)), y]).mean()

    opt = torch.optim.SGD(m.parameters(), lr=0.01)
    rec = Rec(r, "pytorch", train_loss="loss_total", val_loss="valid/ce", val_acc="val_acc",
              lr="opt/learning_rate", grad_norm=None, train_acc=None)
    train_classifier(r, rec, m, opt, xtr, ytr, xva, yva, epochs=2, bs=64, seed=3,
                     loss_fn=naive_ce)
    r.tags = {"train_loss": "loss_total", "val_loss": "valid/ce", "val_acc": "val_acc",
              "lr": "opt/learning_rate"}
    ser = loss_series(r)
    r.onset = first_nonfinite(ser)
    r.expect = ["non_finite_loss"]
    r.expect_not = ["loss_plateau", "loss_divergence", "overfitting"]
    return r


@register
def exp_lr_gamma_divergence():
    r = Run("exp_lr_gamma_divergence", "hf",
            "MLP, AdamW lr 1e-3 with ExponentialLR gamma=1.01 per step (a typo for 0.99): the LR "
            "grows 1.01x per step and the loss, after falling, climbs back")
    torch.manual_seed(0)
    xtr, ytr = teacher_data(8192, seed=1)
    xva, yva = teacher_data(1024, seed=2)
    m = mlp(32, 128, K)
    opt = torch.optim.AdamW(m.parameters(), lr=1e-3)
    rec = Rec(r, "hf", every=5)
    sched_lr = lambda s: min(1e-3 * 1.01 ** s, 1e3)
    train_classifier(r, rec, m, opt, xtr, ytr, xva, yva, epochs=6, bs=64, seed=3,
                     lr_fn=sched_lr, eval_every_epoch=1)
    r.tags = {k: rec.t[k] for k in ("train_loss", "val_loss", "val_acc", "lr", "grad_norm",
                                     "epoch")}
    ser = loss_series(r)
    sm = smooth(ser, 5)
    mn = argmin(sm)
    r.onset = mn[0]
    nf = first_nonfinite(ser)
    r.expect = ["loss_divergence"] + (["non_finite_loss"] if nf is not None else [])
    r.expect_not = ["loss_plateau", "overfitting"]
    r.note(f"smoothed(5) min {g(mn[1])}@{mn[0]}")
    return r


@register
def cnn_sgd_lr_blowup():
    r = Run("cnn_sgd_lr_blowup", "lightning",
            "SmallCNN, SGD momentum 0.9 lr 0.8 (no BN, no clipping): after learning for 9 steps the "
            "loss blows up (spikes to 10-30), the ReLUs die and the net sits at chance for the "
            "rest of the run")
    torch.manual_seed(1)
    xtr, ytr = image_data(2048, seed=1)
    xva, yva = image_data(512, seed=2)
    m = SmallCNN()
    opt = torch.optim.SGD(m.parameters(), lr=0.8, momentum=0.9)
    rec = Rec(r, "lightning", lr="lr-SGD")
    train_classifier(r, rec, m, opt, xtr, ytr, xva, yva, epochs=4, bs=32, seed=3)
    r.tags = {"train_loss": "train_loss_step", "val_loss": "val_loss", "val_acc": "val_acc",
              "lr": "lr-SGD", "epoch": "epoch"}
    ser = loss_series(r)
    r.onset = first_nonfinite(ser)
    r.expect = ["non_finite_loss"] if r.onset is not None else ["loss_divergence"]
    r.expect_not = ["loss_plateau", "overfitting"]
    return r


@register
def gaussian_nll_negative_variance():
    r = Run("gaussian_nll_negative_variance", "custom",
            "heteroscedastic regression with a Gaussian NLL whose variance head is a raw linear "
            "output (no softplus): as training shrinks the variance it crosses zero, log(var) is "
            "NaN and the loss is NaN from then on")
    torch.manual_seed(0)
    gd = torch.Generator().manual_seed(1)
    x = torch.randn(4096, 8, generator=gd)
    w = torch.randn(8, 1, generator=gd)
    y = x @ w + 0.1 * torch.randn(4096, 1, generator=gd)
    body = mlp(8, 64, 2, depth=1)
    with torch.no_grad():
        body[-1].bias[1] = 3.0
    opt = torch.optim.Adam(body.parameters(), lr=3e-3)
    step = 0
    for ep in range(8):
        for idx in batches(4096, 64, gd):
            step += 1
            out = body(x[idx])
            mu, var = out[:, :1], out[:, 1:]
            loss = (0.5 * torch.log(var) + 0.5 * (y[idx] - mu) ** 2 / var).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            if step % 4 == 0:
                r.log("train/nll_loss", step, float(loss))
                r.log("optim/lr", step, 3e-3)
                r.log("global_step", step, step)
    r.tags = {"train_loss": "train/nll_loss", "lr": "optim/lr"}
    ser = loss_series(r)
    r.onset = first_nonfinite(ser)
    r.expect = ["non_finite_loss"] if r.onset is not None else []
    r.expect_not = ["loss_plateau"]
    r.note("global_step is a counter (trap)")
    return r


@register
def keras_sgd_nan_first_epoch():
    r = Run("keras_sgd_nan_first_epoch", "keras",
            "Keras-style MLP fit with SGD lr 50 momentum 0.9 (meant 0.05): the weights overflow "
            "in the first epoch's 6th batch, so even epoch 0's mean loss is NaN")
    torch.manual_seed(0)
    xtr, ytr = teacher_data(4096, seed=1)
    xva, yva = teacher_data(1024, seed=2)
    m = mlp(32, 256, K)
    opt = torch.optim.SGD(m.parameters(), lr=50.0, momentum=0.9)
    keras_fit(r, m, opt, xtr, ytr, xva, yva, epochs=8, bs=128, seed=3)
    r.tags = dict(KERAS_TAGS)
    ser = r.series("epoch_loss", "train")
    r.onset = first_nonfinite(ser)
    r.expect = ["non_finite_loss"] if r.onset is not None else ["loss_divergence"]
    r.expect_not = ["loss_plateau", "overfitting"]
    return r


@register
def energy_unbounded():
    r = Run("energy_unbounded", "custom",
            "energy-based model E(x)=MLP(x), loss = mean E(data) - mean E(noise) with no energy "
            "regulariser or weight decay, SGD: nothing bounds the energies and the loss dives "
            "from O(1) toward -1e18")
    torch.manual_seed(0)
    gd = torch.Generator().manual_seed(1)
    data = torch.randn(4096, 2, generator=gd) * 0.3 + torch.tensor([1.0, -1.0])
    e = mlp(2, 64, 1, depth=2)
    opt = torch.optim.SGD(e.parameters(), lr=0.01)
    for step in range(1, 401):
        idx = torch.randint(0, 4096, (128,), generator=gd)
        noise = torch.rand(128, 2, generator=gd) * 6 - 3
        loss = e(data[idx]).mean() - e(noise).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        lv = float(loss)
        stop = lv < -1e18   # the script's guard: stop once the energy passes -1e18
        if step % 2 == 0 or stop:
            r.log("loss", step, lv)
            r.log("grads/global_norm", step, grad_norm(e))
        if stop:
            break
    r.tags = {"train_loss": "loss", "grad_norm": "grads/global_norm"}
    ser = loss_series(r)
    r.expect = ["loss_divergence"]
    r.onset = None
    # onset: the first logged point below the initial scale by 10x the starting magnitude
    base = abs(ser[0][1]) + 1
    for s, v in ser:
        if v < -10 * base:
            r.onset = s
            break
    if first_nonfinite(ser) is not None:
        r.expect.append("non_finite_loss")
    r.expect_not = ["loss_plateau"]
    return r


# ---- instability -----------------------------------------------------------------------------


def train_lm(r, rec, m, opt, data, steps, bs, lr_fn, clip=None, val=None, eval_every=50,
             seed=3):
    gen = torch.Generator().manual_seed(seed)
    for step in range(1, steps + 1):
        set_lr(opt, lr_fn(step))
        idx = torch.randint(0, len(data), (bs,), generator=gen)
        xb = data[idx]
        logits = m(xb[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), xb[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        gn = grad_norm(m)
        if clip:
            torch.nn.utils.clip_grad_norm_(m.parameters(), clip)
        opt.step()
        rec.step(step, float(loss), lr=opt.param_groups[0]["lr"], gn=gn,
                 epoch=step * bs / len(data))
        if val is not None and step % eval_every == 0:
            m.eval()
            with torch.no_grad():
                lg = m(val[:, :-1])
                vl = float(F.cross_entropy(lg.reshape(-1, lg.shape[-1]), val[:, 1:].reshape(-1)))
            m.train()
            rec.epoch_end(step, step // eval_every, vl, None)


@register
def transformer_no_warmup():
    r = Run("transformer_no_warmup", "hf",
            "tiny post-LN transformer LM (2 layers, d=32) on a Markov token task, Adam lr 0.1 "
            "from step 1 with no warmup and no clipping: the first updates wreck it and it "
            "never gets below ~2.5 (the warmed-up twin reaches ~1.07)")
    torch.manual_seed(0)
    data = markov_tokens(4096, 17, seed=1)
    val = markov_tokens(512, 17, seed=2)
    m = TinyLM()
    opt = torch.optim.Adam(m.parameters(), lr=0.1)
    rec = Rec(r, "hf", every=2)
    train_lm(r, rec, m, opt, data, 300, 16, lambda s: 0.1, val=val, eval_every=30)
    r.tags = {k: rec.t[k] for k in ("train_loss", "val_loss", "lr", "grad_norm", "epoch")}
    r.expect = []
    r.expect_not = ["non_finite_loss"]
    return r


@register
def rnn_no_clip_explosion():
    r = Run("rnn_no_clip_explosion", "custom",
            "vanilla tanh RNN (hidden 64) on the adding problem with sequences of 60 steps, SGD "
            "lr 0.1 momentum 0.9, no gradient clipping: the gradient norm explodes (1 -> 1e17) "
            "and the loss follows to inf/NaN")
    torch.manual_seed(0)
    x, y = adding_problem(2048, 60, seed=1)
    rnn = nn.RNN(2, 64, batch_first=True)
    head = nn.Linear(64, 1)
    params = list(rnn.parameters()) + list(head.parameters())
    opt = torch.optim.SGD(params, lr=0.1, momentum=0.9)
    gen = torch.Generator().manual_seed(3)
    mod = nn.ModuleList([rnn, head])
    for step in range(1, 151):
        idx = torch.randint(0, 2048, (32,), generator=gen)
        h, _ = rnn(x[idx])
        loss = F.mse_loss(head(h[:, -1]).squeeze(1), y[idx])
        opt.zero_grad()
        loss.backward()
        gn = grad_norm(mod)
        opt.step()
        r.log("trn/mse", step, float(loss))
        r.log("grads/global_norm", step, gn)
        r.log("optim/lr", step, 0.1)
    r.tags = {"train_loss": "trn/mse", "grad_norm": "grads/global_norm", "lr": "optim/lr"}
    return r


def gru_no_clip_long_seq():  # not registered: 85 s here, and it trained fine (no explosion)
    r = Run("gru_no_clip_long_seq", "hf",
            "GRU (hidden 64) on the adding problem with sequences of 150 steps, Adam lr 0.05, no "
            "gradient clipping")
    torch.manual_seed(0)
    x, y = adding_problem(4096, 150, seed=1)
    gru = nn.GRU(2, 64, batch_first=True)
    head = nn.Linear(64, 1)
    mod = nn.ModuleList([gru, head])
    opt = torch.optim.Adam(mod.parameters(), lr=0.05)
    gen = torch.Generator().manual_seed(3)
    rec = Rec(r, "hf", every=2)
    for step in range(1, 241):
        idx = torch.randint(0, 4096, (32,), generator=gen)
        h, _ = gru(x[idx])
        loss = F.mse_loss(head(h[:, -1]).squeeze(1), y[idx])
        opt.zero_grad()
        loss.backward()
        gn = grad_norm(mod)
        opt.step()
        rec.step(step, float(loss), lr=0.05, gn=gn, epoch=step * 32 / 4096)
    r.tags = {k: rec.t[k] for k in ("train_loss", "lr", "grad_norm", "epoch")}
    return r


@register
def bad_batch_spikes_short():
    r = Run("bad_batch_spikes_short", "custom",
            "MLP regression, 40 logged steps; every 7th batch comes from a corrupt shard whose "
            "features were never standardised (raw scale x100), a real data bug")
    torch.manual_seed(0)
    gd = torch.Generator().manual_seed(1)
    x = torch.randn(4096, 16, generator=gd)
    w = torch.randn(16, 1, generator=gd)
    y = torch.tanh(x @ w / 4) + 0.05 * torch.randn(4096, 1, generator=gd)
    m = mlp(16, 64, 1)
    opt = torch.optim.Adam(m.parameters(), lr=1e-3)
    for step in range(1, 41):
        idx = torch.randint(0, 4096, (64,), generator=gd)
        xb = x[idx]
        if step % 7 == 0:
            xb = xb * 100.0
        loss = F.mse_loss(m(xb), y[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        r.log("Loss/classification_loss", step, float(loss))
    r.tags = {"train_loss": "Loss/classification_loss"}
    ser = loss_series(r)
    r.onset = 7
    return r


@register
def cyclic_lr_oscillation():
    r = Run("cyclic_lr_oscillation", "custom",
            "MLP classifier, full-batch SGD (2048 samples) with CyclicLR triangular base 0.05, "
            "max 3.0 (max_lr past the edge of stability), cycle 16 steps, logged every 2 steps: "
            "the loss rises each time the LR peaks, a period of 8 logged points")
    torch.manual_seed(0)
    xtr, ytr = teacher_data(2048, seed=1)
    m = mlp(32, 64, K)
    opt = torch.optim.SGD(m.parameters(), lr=0.05, momentum=0.0)
    sched = torch.optim.lr_scheduler.CyclicLR(opt, base_lr=0.05, max_lr=3.0, step_size_up=8,
                                              mode="triangular", cycle_momentum=False)
    for step in range(1, 241):
        loss = F.cross_entropy(m(xtr), ytr)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 2 == 0:
            r.log("lm loss", step, float(loss))
            r.log("opt/learning_rate", step, opt.param_groups[0]["lr"])
        sched.step()
    r.tags = {"train_loss": "lm loss", "lr": "opt/learning_rate"}
    return r


@register
def sgd_tanh_divergence():
    r = Run("sgd_tanh_divergence", "lightning",
            "tanh MLP 32-256-256-10, SGD momentum 0.9 at lr 5 (meant 0.005): the loss climbs "
            "from 2.36 to ~100 and stays there (tanh units saturate, logits grow, no NaN)")
    torch.manual_seed(0)
    xtr, ytr = teacher_data(4096, seed=1)
    xva, yva = teacher_data(1024, seed=2)
    m = nn.Sequential(nn.Linear(32, 256), nn.Tanh(), nn.Linear(256, 256), nn.Tanh(),
                      nn.Linear(256, K))
    opt = torch.optim.SGD(m.parameters(), lr=5.0, momentum=0.9)
    rec = Rec(r, "lightning", lr="lr-SGD")
    train_classifier(r, rec, m, opt, xtr, ytr, xva, yva, epochs=3, bs=64, seed=3)
    r.tags = {"train_loss": "train_loss_step", "val_loss": "val_loss", "val_acc": "val_acc",
              "lr": "lr-SGD", "epoch": "epoch"}
    return r


# ---- chance-level / stuck --------------------------------------------------------------------


@register
def shuffled_labels_mlp():
    r = Run("shuffled_labels_mlp", "pytorch",
            "labels drawn uniformly at random, independent of the inputs (a shuffle applied to "
            "the labels only); MLP 32-128-10, Adam 1e-3")
    torch.manual_seed(0)
    xtr, _ = teacher_data(16384, seed=1)
    xva, _ = teacher_data(2048, seed=2)
    gd = torch.Generator().manual_seed(5)
    ytr = torch.randint(0, K, (len(xtr),), generator=gd)
    yva = torch.randint(0, K, (len(xva),), generator=gd)
    m = mlp(32, 128, K)
    opt = torch.optim.Adam(m.parameters(), lr=1e-3)
    rec = Rec(r, "pytorch", every=4)
    train_classifier(r, rec, m, opt, xtr, ytr, xva, yva, epochs=3, bs=64, seed=3)
    r.tags = {k: rec.t[k] for k in ("train_loss", "val_loss", "val_acc", "lr", "grad_norm")}
    r.onset = loss_series(r)[0][0]
    return r


@register
def shuffled_labels_cnn_keras():
    r = Run("shuffled_labels_cnn_keras", "keras",
            "SmallCNN on synthetic images whose labels were shuffled apart from the images; Adam "
            "1e-3, Keras-style epoch logging")
    torch.manual_seed(0)
    xtr, ytr = image_data(4096, seed=1)
    xva, yva = image_data(1024, seed=2)
    gd = torch.Generator().manual_seed(5)
    ytr = ytr[torch.randperm(len(ytr), generator=gd)]
    yva = yva[torch.randperm(len(yva), generator=gd)]
    m = SmallCNN()
    opt = torch.optim.Adam(m.parameters(), lr=1e-3)
    keras_fit(r, m, opt, xtr, ytr, xva, yva, epochs=12, bs=64, seed=3)
    r.tags = dict(KERAS_TAGS)
    r.onset = 0
    return r


@register
def dead_relu_zero_init():
    r = Run("dead_relu_zero_init", "lightning",
            "MLP 32-128-128-10 with every weight and bias initialised to zero and ReLU: hidden "
            "units are all 0 and get no gradient; only the output bias learns, so the loss stays "
            "at the label entropy")
    torch.manual_seed(0)
    xtr, ytr = teacher_data(8192, seed=1)
    xva, yva = teacher_data(1024, seed=2)
    m = mlp(32, 128, K)
    for p in m.parameters():
        nn.init.zeros_(p)
    opt = torch.optim.Adam(m.parameters(), lr=1e-3)
    rec = Rec(r, "lightning", every=2)
    train_classifier(r, rec, m, opt, xtr, ytr, xva, yva, epochs=4, bs=64, seed=3)
    r.tags = {"train_loss": "train_loss_step", "val_loss": "val_loss", "val_acc": "val_acc",
              "lr": "lr-Adam", "epoch": "epoch"}
    r.onset = loss_series(r)[0][0]
    return r


@register
def dead_relu_negative_bias():
    r = Run("dead_relu_negative_bias", "custom",
            "CNN whose conv biases were initialised to -50 (a bad custom init): every ReLU is "
            "dead from step 1, the classifier sees zeros and sits at chance")
    torch.manual_seed(0)
    xtr, ytr = image_data(2048, seed=1)
    xva, yva = image_data(512, seed=2)
    m = SmallCNN()
    with torch.no_grad():
        m.c1.bias.fill_(-50.0)
        m.c2.bias.fill_(-50.0)
    opt = torch.optim.SGD(m.parameters(), lr=0.05, momentum=0.9)
    rec = Rec(r, "pytorch", train_loss="trn/xent", val_loss="valid/ce",
              val_acc="metrics/val_accuracy", lr="optim/lr", grad_norm="grads/global_norm",
              train_acc=None)
    train_classifier(r, rec, m, opt, xtr, ytr, xva, yva, epochs=5, bs=32, seed=3)
    r.tags = {"train_loss": "trn/xent", "val_loss": "valid/ce",
              "val_acc": "metrics/val_accuracy", "lr": "optim/lr",
              "grad_norm": "grads/global_norm"}
    r.onset = loss_series(r)[0][0]
    return r


@register
def lr_too_low():
    r = Run("lr_too_low", "hf",
            "MLP 32-256-256-10, AdamW at lr 1e-7 (a missing zero: 1e-4 was meant); loss stays "
            "near its initial ~ln 10")
    torch.manual_seed(0)
    xtr, ytr = teacher_data(8192, seed=1)
    xva, yva = teacher_data(1024, seed=2)
    m = mlp(32, 256, K)
    opt = torch.optim.AdamW(m.parameters(), lr=1e-7)
    rec = Rec(r, "hf", every=8)
    train_classifier(r, rec, m, opt, xtr, ytr, xva, yva, epochs=3, bs=64, seed=3,
                     lr_fn=lambda s: 1e-7)
    r.tags = {k: rec.t[k] for k in ("train_loss", "val_loss", "val_acc", "lr", "grad_norm",
                                     "epoch")}
    r.onset = loss_series(r)[0][0]
    return r


@register
def mse_onehot_shuffled():
    r = Run("mse_onehot_shuffled", "custom",
            "MSE on one-hot targets (K=10) with labels shuffled apart from the inputs: the best "
            "the model can do is predict 0.1 everywhere, MSE (K-1)/K^2 = 0.09")
    torch.manual_seed(0)
    xtr, _ = teacher_data(8192, seed=1)
    xva, _ = teacher_data(1024, seed=2)
    gd = torch.Generator().manual_seed(5)
    ytr = torch.randint(0, K, (len(xtr),), generator=gd)
    yva = torch.randint(0, K, (len(xva),), generator=gd)
    m = mlp(32, 128, K)
    with torch.no_grad():
        m[-1].weight.mul_(0.1)
        m[-1].bias.fill_(0.1)

    def mse_oh(z, y):
        return F.mse_loss(z, F.one_hot(y, K).float(), reduction="none").mean()

    opt = torch.optim.Adam(m.parameters(), lr=1e-3)
    rec = Rec(r, "pytorch", train_loss="loss_total", val_loss="val/l1_loss_mean", val_acc="val_acc",
              lr="optim/lr", grad_norm=None, train_acc=None)
    # val/l1_loss_mean is honestly an L1 on the one-hot targets (what the script logs for val).
    gen = torch.Generator().manual_seed(3)
    step = 0
    for ep in range(4):
        for idx in batches(len(xtr), 64, gen):
            step += 1
            loss = mse_oh(m(xtr[idx]), ytr[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            if step % 4 == 0:
                r.log("loss_total", step, float(loss))
                r.log("optim/lr", step, 1e-3)
        with torch.no_grad():
            out = m(xva)
            r.log("val/l1_loss_mean", step, float((out - F.one_hot(yva, K).float()).abs().mean()))
            r.log("val_acc", step, accuracy(out, yva))
    r.tags = {"train_loss": "loss_total", "val_loss": "val/l1_loss_mean", "val_acc": "val_acc",
              "lr": "optim/lr"}
    r.onset = loss_series(r)[0][0]
    return r


@register
def shuffled_targets_transformer():
    r = Run("shuffled_targets_transformer", "lightning",
            "tiny transformer LM whose target tokens were drawn uniformly at random (a data "
            "pipeline that shuffled targets apart from inputs), vocab 16: loss stays at ln 16 = "
            "2.773")
    torch.manual_seed(0)
    data = markov_tokens(4096, 17, seed=1)
    gd = torch.Generator().manual_seed(5)
    m = TinyLM()
    opt = torch.optim.Adam(m.parameters(), lr=1e-3)
    gen = torch.Generator().manual_seed(3)
    ep_losses = []
    for step in range(1, 301):
        idx = torch.randint(0, 4096, (32,), generator=gen)
        xb = data[idx]
        tgt = torch.randint(0, 16, (32, 16), generator=gd)
        logits = m(xb[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, 16), tgt.reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        ep_losses.append(float(loss))
        if step % 2 == 0:
            r.log("train_loss_step", step, float(loss))
            r.log("lr-Adam", step, 1e-3)
        if step % 50 == 0:
            r.log("train_loss_epoch", step, sum(ep_losses) / len(ep_losses))
            r.log("epoch", step, step // 50 - 1)
            ep_losses = []
    r.tags = {"train_loss": "train_loss_step", "lr": "lr-Adam", "epoch": "epoch"}
    r.onset = 2
    return r


@register
def deep_sigmoid_vanishing():
    r = Run("deep_sigmoid_vanishing", "pytorch",
            "12-layer sigmoid MLP (width 64, default PyTorch init, no normalisation, no "
            "residuals), SGD lr 0.1: the gradient shrinks ~4x per sigmoid layer on its way back, "
            "the first layers get ~1e-8 of the last layer's gradient and the net stays at chance")
    torch.manual_seed(0)
    xtr, ytr = teacher_data(8192, seed=1)
    xva, yva = teacher_data(1024, seed=2)
    layers, d = [], 32
    for _ in range(11):
        layers += [nn.Linear(d, 64), nn.Sigmoid()]
        d = 64
    layers.append(nn.Linear(d, K))
    m = nn.Sequential(*layers)
    lins = [l for l in m if isinstance(l, nn.Linear)]
    opt = torch.optim.SGD(m.parameters(), lr=0.1)
    gen = torch.Generator().manual_seed(3)
    step = 0
    for ep in range(3):
        for idx in batches(len(xtr), 64, gen):
            step += 1
            loss = F.cross_entropy(m(xtr[idx]), ytr[idx])
            opt.zero_grad()
            loss.backward()
            if step % 4 == 0:
                r.log("Loss/train", step, float(loss))
                r.log("grad_norm", step, grad_norm(m))
                for i, l in enumerate(lins):
                    r.log(f"grad_norm/layer_{i:02d}", step, float(l.weight.grad.norm()))
                r.log("lr", step, 0.1)
            opt.step()
        vl, va = evaluate(m, xva, yva)
        r.log("Loss/val", step, vl)
        r.log("Accuracy/val", step, va)
    r.tags = {"train_loss": "Loss/train", "val_loss": "Loss/val", "val_acc": "Accuracy/val",
              "lr": "lr", "grad_norm": "grad_norm", "grad_norm_layer": "grad_norm/layer_00..11"}
    return r


@register
def clip_saturation_tiny_max_norm():
    r = Run("clip_saturation_tiny_max_norm", "hf",
            "max_grad_norm=0.01 (meant 1.0) with SGD lr 0.1 momentum 0.9: "
            "every step's pre-clip gradient norm (~0.5-2) is far above 0.01, so every update is "
            "rescaled and training crawls")
    torch.manual_seed(0)
    xtr, ytr = teacher_data(16384, seed=1)
    xva, yva = teacher_data(2048, seed=2)
    m = mlp(32, 128, K)
    opt = torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
    rec = Rec(r, "hf", every=5)
    gen = torch.Generator().manual_seed(3)
    step = 0
    for ep in range(2):
        for idx in batches(len(xtr), 64, gen):
            step += 1
            loss = F.cross_entropy(m(xtr[idx]), ytr[idx])
            opt.zero_grad()
            loss.backward()
            gn = float(torch.nn.utils.clip_grad_norm_(m.parameters(), 0.01))
            opt.step()
            rec.step(step, float(loss), lr=0.1, gn=gn, epoch=step / 256,
                     extra=({"max_grad_norm": 0.01} if step % 5 == 0 else None))
        vl, va = evaluate(m, xva, yva)
        rec.epoch_end(step, ep, vl, va)
    r.tags = {k: rec.t[k] for k in ("train_loss", "val_loss", "val_acc", "lr", "grad_norm",
                                     "epoch")}
    r.tags["clip_threshold"] = "max_grad_norm"
    return r


# ---- overfitting / val stall -----------------------------------------------------------------


@register
def overfit_64_samples():
    r = Run("overfit_64_samples", "pytorch",
            "64 training samples with 20% label noise, MLP 32-512-512-10, Adam 1e-3, 120 epochs "
            "(one step each), val on 2048 samples every 3 epochs")
    torch.manual_seed(0)
    xtr, ytr = teacher_data(64, seed=1, label_noise=0.2)
    xva, yva = teacher_data(2048, seed=2, label_noise=0.2)
    m = mlp(32, 512, K)
    opt = torch.optim.Adam(m.parameters(), lr=1e-3)
    rec = Rec(r, "pytorch")
    train_classifier(r, rec, m, opt, xtr, ytr, xva, yva, epochs=120, bs=64, seed=3,
                     eval_every_epoch=3)
    r.tags = {k: rec.t[k] for k in ("train_loss", "val_loss", "val_acc", "lr", "grad_norm")}
    return r


@register
def overfit_val_f1_only():
    r = Run("overfit_val_f1_only", "hf",
            "128 training samples with 30% label noise, MLP 32-512-512-10, AdamW 2e-3 wd 0, eval "
            "logs only macro-F1 (eval/f1), no eval loss")
    torch.manual_seed(0)
    xtr, ytr = teacher_data(128, seed=1, label_noise=0.3)
    xva, yva = teacher_data(2048, seed=2, label_noise=0.3)
    m = mlp(32, 512, K)
    opt = torch.optim.AdamW(m.parameters(), lr=2e-3, weight_decay=0.0)
    gen = torch.Generator().manual_seed(3)
    acc = []
    step = 0
    for ep in range(100):
        for idx in batches(128, 32, gen):
            step += 1
            loss = F.cross_entropy(m(xtr[idx]), ytr[idx])
            opt.zero_grad()
            loss.backward()
            gn = grad_norm(m)
            opt.step()
            acc.append(float(loss))
            if step % 4 == 0:
                r.log("train/loss", step, sum(acc) / len(acc))
                r.log("train/learning_rate", step, 2e-3)
                r.log("train/grad_norm", step, gn)
                r.log("train/epoch", step, step / 4)
                acc = []
        if (ep + 1) % 4 == 0:
            with torch.no_grad():
                pred = m(xva).argmax(1)
            f1s = []
            for c in range(K):
                tp = float(((pred == c) & (yva == c)).sum())
                fp = float(((pred == c) & (yva != c)).sum())
                fn = float(((pred != c) & (yva == c)).sum())
                f1s.append(2 * tp / max(1.0, 2 * tp + fp + fn))
            r.log("eval/f1", step, sum(f1s) / K)
    r.tags = {"train_loss": "train/loss", "val_metric": "eval/f1", "lr": "train/learning_rate",
              "grad_norm": "train/grad_norm", "epoch": "train/epoch"}
    return r


@register
def overfit_keras_cnn():
    r = Run("overfit_keras_cnn", "keras",
            "SmallCNN widened (conv 32/64) on 128 noisy images (pixel noise 1.2, 30% of labels "
            "resampled, in train and val alike), Adam 3e-3, 40 epochs, Keras-style logs")
    torch.manual_seed(0)
    xtr, ytr = image_data(128, seed=1, noise=1.2)
    xva, yva = image_data(1024, seed=2, noise=1.2)
    gn_ = torch.Generator().manual_seed(11)
    for yy in (ytr, yva):
        flip = torch.rand(len(yy), generator=gn_) < 0.3
        yy[flip] = torch.randint(0, K, (int(flip.sum()),), generator=gn_)

    class Wide(SmallCNN):
        def __init__(self):
            super().__init__()
            self.c1 = nn.Conv2d(1, 32, 3, padding=1)
            self.c2 = nn.Conv2d(32, 64, 3, padding=1)
            self.fc = nn.Linear(64 * 3 * 3, K)

    m = Wide()
    opt = torch.optim.Adam(m.parameters(), lr=3e-3)
    keras_fit(r, m, opt, xtr, ytr, xva, yva, epochs=40, bs=32, seed=3)
    r.tags = dict(KERAS_TAGS)
    return r


@register
def overfit_miou_segmentation():
    r = Run("overfit_miou_segmentation", "custom",
            "per-pixel segmentation of 12x12 synthetic images (foreground = template > 0, with "
            "pixel noise) by a fully convolutional net trained on 16 images for 200 epochs; val "
            "logs only mIoU (val/mIoU)")
    torch.manual_seed(0)
    gd = torch.Generator().manual_seed(1)

    def seg_data(n, seed):
        x, _ = image_data(n, seed=seed, noise=0.0)
        gdd = torch.Generator().manual_seed(seed + 50)
        mask = (x > 0).long().squeeze(1)
        flip = torch.rand(mask.shape, generator=gdd) < 0.15
        mask = torch.where(flip, 1 - mask, mask)
        x = x + 1.0 * torch.randn(x.shape, generator=gdd)
        return x, mask

    xtr, ytr = seg_data(16, 1)
    xva, yva = seg_data(256, 2)
    m = nn.Sequential(nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.Conv2d(32, 32, 3, padding=1),
                      nn.ReLU(), nn.Conv2d(32, 2, 1))
    opt = torch.optim.Adam(m.parameters(), lr=3e-3)
    step = 0
    for ep in range(200):
        step += 1
        loss = F.cross_entropy(m(xtr), ytr)
        opt.zero_grad()
        loss.backward()
        opt.step()
        r.log("loss", step, float(loss))
        if ep % 5 == 4:
            with torch.no_grad():
                pred = m(xva).argmax(1)
            ious = []
            for c in range(2):
                inter = float(((pred == c) & (yva == c)).sum())
                union = float(((pred == c) | (yva == c)).sum())
                ious.append(inter / max(1.0, union))
            r.log("val/mIoU", step, sum(ious) / 2)
            r.log("epoch", step, ep)
    r.tags = {"train_loss": "loss", "val_metric": "val/mIoU", "epoch": "epoch"}
    return r


# ---- schedules -------------------------------------------------------------------------------


@register
def linear_decay_ends_at_35pct():
    r = Run("linear_decay_ends_at_35pct", "hf",
            "HF-style linear warmup/decay schedule with num_training_steps computed for the wrong "
            "number of epochs (2 of 6 would be 33%; here 35% of the 1536 steps): LR reaches 0 at "
            "35% and training stalls after")
    torch.manual_seed(0)
    xtr, ytr = teacher_data(16384, seed=1)
    xva, yva = teacher_data(2048, seed=2)
    m = mlp(32, 128, K)
    opt = torch.optim.AdamW(m.parameters(), lr=2e-3)
    total = 1536
    sched_total = int(0.35 * total)
    warm = 30
    lr_fn = lambda s: 2e-3 * (s / warm if s < warm else
                              max(0.0, (sched_total - s) / (sched_total - warm)))
    rec = Rec(r, "hf", every=8)
    train_classifier(r, rec, m, opt, xtr, ytr, xva, yva, epochs=6, bs=64, seed=3, lr_fn=lr_fn)
    r.tags = {k: rec.t[k] for k in ("train_loss", "val_loss", "val_acc", "lr", "grad_norm",
                                     "epoch")}
    lr = r.series(r.tags["lr"])
    r.onset = next(s for s, v in lr if v <= 0.0 and s > warm)
    return r


@register
def multistep_floor_early_lightning():
    r = Run("multistep_floor_early_lightning", "lightning",
            "MultiStepLR milestones at epochs [2, 4] with gamma 0.01, in a 12-epoch run "
            "(milestones written for a 12-step schedule in iterations vs epochs confusion): the "
            "LR hits its 1e-7 floor after a third of the run")
    torch.manual_seed(0)
    xtr, ytr = image_data(2048, seed=1, noise=1.0)
    xva, yva = image_data(512, seed=2, noise=1.0)
    m = SmallCNN()
    opt = torch.optim.Adam(m.parameters(), lr=1e-3)
    spe = 2048 // 64
    lr_fn = lambda s: 1e-3 * (0.01 ** sum(1 for mm in (2, 4) if (s - 1) // spe >= mm))
    rec = Rec(r, "lightning", every=2)
    train_classifier(r, rec, m, opt, xtr, ytr, xva, yva, epochs=12, bs=64, seed=3, lr_fn=lr_fn)
    r.tags = {"train_loss": "train_loss_step", "val_loss": "val_loss", "val_acc": "val_acc",
              "lr": "lr-Adam", "epoch": "epoch"}
    lr = r.series("lr-Adam")
    r.onset = next(s for s, v in lr if v <= 1e-7 * 1.0001)
    return r


@register
def warmup_longer_than_run():
    r = Run("warmup_longer_than_run", "custom",
            "linear warmup of 10000 steps configured for a 2000-step run: the LR is still rising "
            "at the last step (20% of its peak)")
    torch.manual_seed(0)
    xtr, ytr = teacher_data(16384, seed=1)
    xva, yva = teacher_data(2048, seed=2)
    m = mlp(32, 128, K)
    opt = torch.optim.AdamW(m.parameters(), lr=1e-3)
    lr_fn = lambda s: 5e-3 * min(1.0, s / 10000)
    gen = torch.Generator().manual_seed(3)
    step = 0
    while step < 2000:
        for idx in batches(len(xtr), 32, gen):
            step += 1
            set_lr(opt, lr_fn(step))
            loss = F.cross_entropy(m(xtr[idx]), ytr[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            if step % 10 == 0:
                r.log("loss", step, float(loss))
                r.log("optim/lr", step, opt.param_groups[0]["lr"])
                r.log("tokens_seen", step, step * 32 * 32)
            if step % 200 == 0:
                vl, va = evaluate(m, xva, yva)
                r.log("Loss/val", step, vl)
            if step >= 2000:
                break
    r.tags = {"train_loss": "loss", "val_loss": "Loss/val", "lr": "optim/lr"}
    r.onset = None
    r.note("tokens_seen is a counter (trap)")
    return r


# ---- epoch boundaries ------------------------------------------------------------------------


@register
def sorted_by_label_no_shuffle():
    r = Run("sorted_by_label_no_shuffle", "pytorch",
            "training set sorted by label and DataLoader(shuffle=False): each epoch walks through "
            "class 0, then class 1, ...; the model chases the current class and the loss jumps "
            "at every class and epoch boundary")
    torch.manual_seed(0)
    xtr, ytr = teacher_data(2560, seed=1)
    xva, yva = teacher_data(1024, seed=2)
    order = torch.argsort(ytr, stable=True)
    m = mlp(32, 128, K)
    opt = torch.optim.SGD(m.parameters(), lr=0.05, momentum=0.9)
    rec = Rec(r, "pytorch", every=1)
    train_classifier(r, rec, m, opt, xtr, ytr, xva, yva, epochs=8, bs=64, seed=3, order=order)
    r.tags = {k: rec.t[k] for k in ("train_loss", "val_loss", "val_acc", "lr", "grad_norm")}
    r.onset = 2560 // 64
    return r


@register
def sorted_by_difficulty_no_shuffle():
    r = Run("sorted_by_difficulty_no_shuffle", "lightning",
            "curriculum gone wrong: the training set sorted once by teacher margin (easiest "
            "first) and never shuffled; within each epoch the loss climbs from easy to hard "
            "samples and drops at every epoch boundary")
    torch.manual_seed(0)
    gt = torch.Generator().manual_seed(0)
    xtr, ytr = teacher_data(4096, seed=1, label_noise=0.0)
    xva, yva = teacher_data(1024, seed=2)
    # difficulty: label noise grows along the sorted order (a sorted-by-confidence dump)
    gd = torch.Generator().manual_seed(9)
    noise_p = torch.linspace(0.0, 0.8, 4096)
    flip = torch.rand(4096, generator=gd) < noise_p
    ytr = torch.where(flip, torch.randint(0, K, (4096,), generator=gd), ytr)
    order = torch.arange(4096)
    m = mlp(32, 128, K)
    opt = torch.optim.Adam(m.parameters(), lr=1e-3)
    rec = Rec(r, "lightning", every=2)
    train_classifier(r, rec, m, opt, xtr, ytr, xva, yva, epochs=8, bs=64, seed=3, order=order)
    r.tags = {"train_loss": "train_loss_step", "val_loss": "val_loss", "val_acc": "val_acc",
              "lr": "lr-Adam", "epoch": "epoch"}
    r.onset = 4096 // 64
    return r


@register
def concat_sources_no_shuffle():
    r = Run("concat_sources_no_shuffle", "hf",
            "training set = ConcatDataset(clean curated set, 4096) + (web-scraped set with 60% "
            "wrong labels, 2048), iterated without shuffling: each epoch the loss is low on the "
            "clean part, climbs on the noisy tail and drops at the next epoch start")
    torch.manual_seed(0)
    xa, ya = teacher_data(4096, seed=1)
    xb, yb = teacher_data(2048, seed=4, label_noise=0.6)
    xtr, ytr = torch.cat([xa, xb]), torch.cat([ya, yb])
    xva, yva = teacher_data(1024, seed=2)
    m = mlp(32, 128, K)
    opt = torch.optim.AdamW(m.parameters(), lr=1e-3)
    rec = Rec(r, "hf", every=4)
    train_classifier(r, rec, m, opt, xtr, ytr, xva, yva, epochs=6, bs=64, seed=3,
                     order=torch.arange(len(xtr)))
    r.tags = {k: rec.t[k] for k in ("train_loss", "val_loss", "val_acc", "lr", "grad_norm",
                                     "epoch")}
    r.onset = len(xtr) // 64
    return r


# ---- system ----------------------------------------------------------------------------------


@register
def leak_loss_history():
    r = Run("leak_loss_history", "pytorch",
            "`losses.append(loss)` instead of loss.item(): each step keeps its loss tensor and "
            "through it the whole autograd graph with the activations; RSS grows every step")
    torch.manual_seed(0)
    xtr, ytr = teacher_data(16384, seed=1)
    m = mlp(32, 512, K)
    opt = torch.optim.Adam(m.parameters(), lr=1e-3)
    history = []
    gen = torch.Generator().manual_seed(3)
    for step in range(1, 121):
        idx = torch.randint(0, len(xtr), (256,), generator=gen)
        loss = F.cross_entropy(m(xtr[idx]), ytr[idx])
        opt.zero_grad()
        loss.backward(retain_graph=True)
        opt.step()
        history.append(loss)  # the leak: the graph stays alive
        r.log("Loss/train", step, float(loss))
        r.log("lr", step, 1e-3)
        r.log("sys/rss_mb", step, rss_mb())
    r.tags = {"train_loss": "Loss/train", "lr": "lr", "memory": "sys/rss_mb"}
    r.onset = 1
    del history
    return r


@register
def growing_feature_cache():
    r = Run("growing_feature_cache", "hf",
            "an 'embedding cache' for a retrieval metric appends every batch's features (no "
            "eviction); resident memory grows linearly, logged in GB")
    torch.manual_seed(0)
    xtr, ytr = teacher_data(16384, seed=1)
    m = mlp(32, 256, K)
    opt = torch.optim.AdamW(m.parameters(), lr=1e-3)
    cache = []
    gen = torch.Generator().manual_seed(3)
    base = None
    rec = Rec(r, "hf", every=5)
    for step in range(1, 401):
        idx = torch.randint(0, len(xtr), (128,), generator=gen)
        h = m[:-1](xtr[idx])
        loss = F.cross_entropy(m[-1](h), ytr[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        cache.append(torch.cat([h.detach(), h.detach(), h.detach(), h.detach()], 1).clone())
        rec.step(step, float(loss), lr=1e-3, gn=None, epoch=step * 128 / 16384,
                 extra=({"gpu_mem_gb": rss_mb() / 1024} if step % 5 == 0 else None))
    r.tags = {"train_loss": "train/loss", "lr": "train/learning_rate", "epoch": "train/epoch",
              "memory": "gpu_mem_gb"}
    r.onset = 5
    del cache
    return r


@register
def loader_dedup_list_slowdown():
    r = Run("loader_dedup_list_slowdown", "custom",
            "the data loader de-duplicates samples against a Python list of every id served so "
            "far (`if i not in seen`): the scan grows with each batch and the measured step "
            "time creeps up")
    torch.manual_seed(0)
    xtr, ytr = teacher_data(16384, seed=1)
    m = mlp(32, 64, K)
    opt = torch.optim.Adam(m.parameters(), lr=1e-3)
    seen = []
    gen = random.Random(3)
    t_start = time.perf_counter()
    for step in range(1, 301):
        t0 = time.perf_counter()
        ids = [gen.randrange(10 ** 9) for _ in range(64)]
        fresh = [i for i in ids if i not in seen]
        seen.extend(fresh)
        idx = torch.tensor([i % 16384 for i in fresh])
        loss = F.cross_entropy(m(xtr[idx]), ytr[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        ms = (time.perf_counter() - t0) * 1000
        r.log("loss", step, float(loss))
        r.log("time/iter_ms", step, ms)
        r.log("throughput/samples_per_s", step, 64 / (ms / 1000))
        r.log("time_ms", step, (time.perf_counter() - t_start) * 1000)
    r.tags = {"train_loss": "loss", "step_time": "time/iter_ms"}
    r.note("time_ms is a cumulative clock (trap); throughput falls as step time rises")
    return r


@register
def epoch_growing_augment_slowdown():
    r = Run("epoch_growing_augment_slowdown", "lightning",
            "an augmentation whose Python-side cost grows with the epoch (it re-applies every "
            "past epoch's random transform list to each sample); step time in seconds creeps up "
            "epoch after epoch")
    torch.manual_seed(0)
    xtr, ytr = teacher_data(2048, seed=1)
    xva, yva = teacher_data(512, seed=2)
    m = mlp(32, 64, K)
    opt = torch.optim.Adam(m.parameters(), lr=1e-3)
    transforms = []
    gen = torch.Generator().manual_seed(3)
    step = 0
    for ep in range(10):
        transforms.append(float(torch.rand(1, generator=gen)) * 0.01)
        eplosses = []
        for idx in batches(2048, 64, gen):
            step += 1
            t0 = time.perf_counter()
            xb = xtr[idx].clone()
            for _ in range(150):
                for s in transforms:   # cost grows with the number of epochs so far
                    xb = xb + s * 0.0
            loss = F.cross_entropy(m(xb), ytr[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            eplosses.append(float(loss))
            r.log("train_loss_step", step, float(loss))
            r.log("perf/batch_time", step, time.perf_counter() - t0)
        vl, va = evaluate(m, xva, yva)
        r.log("train_loss_epoch", step, sum(eplosses) / len(eplosses))
        r.log("val_loss", step, vl)
        r.log("val_acc", step, va)
        r.log("epoch", step, ep)
    r.tags = {"train_loss": "train_loss_step", "val_loss": "val_loss", "val_acc": "val_acc",
              "step_time": "perf/batch_time", "epoch": "epoch"}
    r.onset = 2048 // 64 + 1
    return r


# ---- healthy ---------------------------------------------------------------------------------


@register
def healthy_mlp_warmup_cosine():
    r = Run("healthy_mlp_warmup_cosine", "pytorch",
            "healthy: MLP 32-256-256-10 on 16k teacher-labelled samples, AdamW 2e-3, 5% warmup "
            "then cosine to 0 at the last step")
    torch.manual_seed(0)
    xtr, ytr = teacher_data(16384, seed=1)
    xva, yva = teacher_data(2048, seed=2)
    m = mlp(32, 256, K)
    opt = torch.optim.AdamW(m.parameters(), lr=2e-3)
    total = 4 * (16384 // 64)
    rec = Rec(r, "pytorch", every=4)
    train_classifier(r, rec, m, opt, xtr, ytr, xva, yva, epochs=4, bs=64, seed=3,
                     lr_fn=lambda s: cosine_warmup(s, total, 2e-3, total // 20))
    r.tags = {k: rec.t[k] for k in ("train_loss", "val_loss", "val_acc", "lr", "grad_norm")}
    return r


@register
def healthy_cnn_keras():
    r = Run("healthy_cnn_keras", "keras",
            "healthy: SmallCNN on 4096 synthetic images, Adam 1e-3 with a per-epoch exponential "
            "decay 0.9, 15 epochs, Keras-style logs")
    torch.manual_seed(0)
    xtr, ytr = image_data(4096, seed=1, noise=1.0)
    xva, yva = image_data(1024, seed=2, noise=1.0)
    m = SmallCNN()
    opt = torch.optim.Adam(m.parameters(), lr=1e-3)
    keras_fit(r, m, opt, xtr, ytr, xva, yva, epochs=15, bs=64, seed=3,
              lr_fn=lambda ep: 1e-3 * 0.9 ** ep)
    r.tags = dict(KERAS_TAGS)
    return r


@register
def healthy_keras_mlp_constant():
    r = Run("healthy_keras_mlp_constant", "keras",
            "healthy: MLP on 16384 teacher-labelled samples (5% label noise), Adam 5e-4 constant, "
            "12 epochs")
    torch.manual_seed(0)
    xtr, ytr = teacher_data(16384, seed=1, label_noise=0.05)
    xva, yva = teacher_data(2048, seed=2, label_noise=0.05)
    m = mlp(32, 128, K)
    opt = torch.optim.Adam(m.parameters(), lr=5e-4)
    keras_fit(r, m, opt, xtr, ytr, xva, yva, epochs=12, bs=128, seed=3)
    r.tags = dict(KERAS_TAGS)
    return r


@register
def healthy_gru_clipped():
    r = Run("healthy_gru_clipped", "lightning",
            "healthy S-curve: GRU (hidden 64) on the adding problem, length 40, Adam 3e-3 with "
            "gradient clipping at 1.0; the MSE sits at the target variance 1/6 = 0.167 (predicting "
            "the mean) until the GRU learns to gate the two marked values, then drops")
    torch.manual_seed(0)
    x, y = adding_problem(4096, 40, seed=1)
    xv, yv = adding_problem(512, 40, seed=2)
    gru = nn.GRU(2, 64, batch_first=True)
    head = nn.Linear(64, 1)
    mod = nn.ModuleList([gru, head])
    opt = torch.optim.Adam(mod.parameters(), lr=3e-3)
    gen = torch.Generator().manual_seed(3)
    eplosses = []
    for step in range(1, 401):
        idx = torch.randint(0, 4096, (32,), generator=gen)
        h, _ = gru(x[idx])
        loss = F.mse_loss(head(h[:, -1]).squeeze(1), y[idx])
        opt.zero_grad()
        loss.backward()
        gn = grad_norm(mod)
        torch.nn.utils.clip_grad_norm_(mod.parameters(), 1.0)
        opt.step()
        eplosses.append(float(loss))
        if step % 2 == 0:
            r.log("train_loss_step", step, float(loss))
            r.log("lr-Adam", step, 3e-3)
            r.log("grad_2.0_norm_total", step, gn)
        if step % 50 == 0:
            with torch.no_grad():
                hv, _ = gru(xv)
                vl = float(F.mse_loss(head(hv[:, -1]).squeeze(1), yv))
            r.log("train_loss_epoch", step, sum(eplosses) / len(eplosses))
            r.log("val_loss", step, vl)
            r.log("epoch", step, step // 50 - 1)
            eplosses = []
    r.tags = {"train_loss": "train_loss_step", "val_loss": "val_loss", "lr": "lr-Adam",
              "grad_norm": "grad_2.0_norm_total", "epoch": "epoch"}
    return r


@register
def healthy_transformer_warmup():
    r = Run("healthy_transformer_warmup", "hf",
            "healthy: the same tiny post-LN transformer LM as transformer_no_warmup, Adam peak "
            "2e-3 with 30 warmup steps then cosine decay to 0 at step 300, clipping 1.0")
    torch.manual_seed(0)
    data = markov_tokens(4096, 17, seed=1)
    val = markov_tokens(512, 17, seed=2)
    m = TinyLM()
    opt = torch.optim.Adam(m.parameters(), lr=2e-3)
    rec = Rec(r, "hf", every=2)
    train_lm(r, rec, m, opt, data, 300, 16, lambda s: cosine_warmup(s, 300, 2e-3, 30), clip=1.0,
             val=val, eval_every=30)
    r.tags = {k: rec.t[k] for k in ("train_loss", "val_loss", "lr", "grad_norm", "epoch")}
    return r


@register
def healthy_mlp_custom_names():
    r = Run("healthy_mlp_custom_names", "custom",
            "healthy: MLP on 16384 samples, SGD momentum 0.9 lr 0.02 constant; tags people invent")
    torch.manual_seed(0)
    xtr, ytr = teacher_data(16384, seed=1)
    xva, yva = teacher_data(2048, seed=2)
    m = mlp(32, 128, K)
    opt = torch.optim.SGD(m.parameters(), lr=0.02, momentum=0.9)
    rec = Rec(r, "pytorch", every=4, train_loss="trn/xent", val_loss="valid/ce",
              val_acc="metrics/val_accuracy", lr="optim/lr", grad_norm="grads/global_norm",
              train_acc=None)
    train_classifier(r, rec, m, opt, xtr, ytr, xva, yva, epochs=3, bs=64, seed=3)
    r.tags = {"train_loss": "trn/xent", "val_loss": "valid/ce", "val_acc": "metrics/val_accuracy",
              "lr": "optim/lr", "grad_norm": "grads/global_norm"}
    return r


@register
def healthy_sparse_parity_s_curve():
    r = Run("healthy_sparse_parity_s_curve", "custom",
            "healthy S-curve: sparse parity (3 relevant bits of 20), MLP 20-256-2, SGD lr 0.1; the "
            "loss sits at ln 2 = 0.693 for hundreds of steps, then drops to ~0 once the features "
            "are found")
    torch.manual_seed(0)
    gd = torch.Generator().manual_seed(0)
    n = 20
    x = torch.randint(0, 2, (20000, n), generator=gd).float() * 2 - 1
    y = (x[:, :3].prod(1) > 0).long()
    xv = torch.randint(0, 2, (2000, n), generator=gd).float() * 2 - 1
    yv = (xv[:, :3].prod(1) > 0).long()
    m = nn.Sequential(nn.Linear(n, 256), nn.ReLU(), nn.Linear(256, 2))
    opt = torch.optim.SGD(m.parameters(), lr=0.1)
    for step in range(1, 1601):
        idx = torch.randint(0, 20000, (64,), generator=gd)
        loss = F.cross_entropy(m(x[idx]), y[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 8 == 0:
            r.log("train/nll_loss", step, float(loss))
            r.log("opt/learning_rate", step, 0.1)
        if step % 80 == 0:
            vl, va = evaluate(m, xv, yv)
            r.log("valid/ce", step, vl)
            r.log("val_acc", step, va)
    r.tags = {"train_loss": "train/nll_loss", "val_loss": "valid/ce", "val_acc": "val_acc",
              "lr": "opt/learning_rate"}
    return r


@register
def healthy_converged_long_flat():
    r = Run("healthy_converged_long_flat", "hf",
            "healthy, converged: linear regression with Gaussian noise (sigma 1) on 16 features, "
            "Adam 1e-2; the MSE falls 10x+ to the noise floor ~1.0 within 10% of the run and "
            "stays there (nothing left to learn)")
    torch.manual_seed(0)
    gd = torch.Generator().manual_seed(1)
    x = torch.randn(32768, 16, generator=gd)
    w = torch.randn(16, 1, generator=gd) * 1.0
    y = x @ w + torch.randn(32768, 1, generator=gd)
    xv = torch.randn(2048, 16, generator=gd)
    yv = xv @ w + torch.randn(2048, 1, generator=gd)
    m = nn.Linear(16, 1)
    opt = torch.optim.Adam(m.parameters(), lr=1e-2)
    rec = Rec(r, "hf", every=10)
    for step in range(1, 3001):
        idx = torch.randint(0, 32768, (64,), generator=gd)
        loss = F.mse_loss(m(x[idx]), y[idx])
        opt.zero_grad()
        loss.backward()
        gn = grad_norm(m)
        opt.step()
        rec.step(step, float(loss), lr=1e-2, gn=gn, epoch=step * 64 / 32768)
        if step % 250 == 0:
            with torch.no_grad():
                r.log("eval/loss", step, float(F.mse_loss(m(xv), yv)))
    r.tags = {"train_loss": "train/loss", "val_loss": "eval/loss", "lr": "train/learning_rate",
              "grad_norm": "train/grad_norm", "epoch": "train/epoch"}
    return r


@register
def healthy_energy_regularized():
    r = Run("healthy_energy_regularized", "custom",
            "healthy: the same energy model as energy_unbounded with the usual fix, an L2 "
            "penalty alpha*(E(data)^2 + E(noise)^2), alpha 1.0, and Adam 1e-3: the loss settles "
            "at a bounded negative value")
    torch.manual_seed(0)
    gd = torch.Generator().manual_seed(1)
    data = torch.randn(4096, 2, generator=gd) * 0.3 + torch.tensor([1.0, -1.0])
    e = mlp(2, 64, 1, depth=2)
    opt = torch.optim.Adam(e.parameters(), lr=1e-3)
    for step in range(1, 601):
        idx = torch.randint(0, 4096, (128,), generator=gd)
        noise = torch.rand(128, 2, generator=gd) * 6 - 3
        ed, en = e(data[idx]), e(noise)
        cd = ed.mean() - en.mean()
        loss = cd + 1.0 * (ed.pow(2).mean() + en.pow(2).mean())
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 3 == 0:
            r.log("loss", step, float(loss))
            r.log("loss/cd", step, float(cd))
            r.log("grads/global_norm", step, grad_norm(e))
    r.tags = {"train_loss": "loss", "grad_norm": "grads/global_norm"}
    return r


@register
def healthy_contrastive_infonce():
    r = Run("healthy_contrastive_infonce", "lightning",
            "healthy: InfoNCE (temperature 0.2, batch 64) between two noisy views of 16-d "
            "points through a shared MLP encoder; the loss falls from 2.3 and levels off near 0.9")
    torch.manual_seed(0)
    gd = torch.Generator().manual_seed(1)
    base = torch.randn(8192, 16, generator=gd)
    enc = mlp(16, 128, 32, depth=2)
    opt = torch.optim.Adam(enc.parameters(), lr=1e-3)
    eplosses = []
    for step in range(1, 401):
        idx = torch.randint(0, 8192, (64,), generator=gd)
        a = base[idx] + 0.3 * torch.randn(64, 16, generator=gd)
        b = base[idx] + 0.3 * torch.randn(64, 16, generator=gd)
        za, zb = F.normalize(enc(a), dim=1), F.normalize(enc(b), dim=1)
        logits = za @ zb.t() / 0.2
        loss = F.cross_entropy(logits, torch.arange(64))
        opt.zero_grad()
        loss.backward()
        opt.step()
        eplosses.append(float(loss))
        if step % 2 == 0:
            r.log("train_loss_step", step, float(loss))
            r.log("lr-Adam", step, 1e-3)
        if step % 50 == 0:
            r.log("train_loss_epoch", step, sum(eplosses) / len(eplosses))
            r.log("epoch", step, step // 50 - 1)
            eplosses = []
    r.tags = {"train_loss": "train_loss_step", "lr": "lr-Adam", "epoch": "epoch"}
    return r


@register
def healthy_hf_mlp_eval():
    r = Run("healthy_hf_mlp_eval", "hf",
            "healthy: MLP on 16k samples with 10% label noise, AdamW 1e-3, linear decay to 0 at "
            "the last step, eval every epoch")
    torch.manual_seed(0)
    xtr, ytr = teacher_data(16384, seed=1, label_noise=0.1)
    xva, yva = teacher_data(2048, seed=2, label_noise=0.1)
    m = mlp(32, 128, K)
    opt = torch.optim.AdamW(m.parameters(), lr=1e-3)
    total = 5 * (16384 // 64)
    rec = Rec(r, "hf", every=10)
    train_classifier(r, rec, m, opt, xtr, ytr, xva, yva, epochs=5, bs=64, seed=3,
                     lr_fn=lambda s: 1e-3 * (1 - s / total))
    r.tags = {k: rec.t[k] for k in ("train_loss", "val_loss", "val_acc", "lr", "grad_norm",
                                     "epoch")}
    return r


@register
def healthy_cnn_lightning():
    r = Run("healthy_cnn_lightning", "lightning",
            "healthy: SmallCNN on 2048 images, Adam 1e-3 constant, 8 epochs with val each epoch")
    torch.manual_seed(0)
    xtr, ytr = image_data(2048, seed=1, noise=1.0)
    xva, yva = image_data(512, seed=2, noise=1.0)
    m = SmallCNN()
    opt = torch.optim.Adam(m.parameters(), lr=1e-3)
    rec = Rec(r, "lightning", every=2)
    train_classifier(r, rec, m, opt, xtr, ytr, xva, yva, epochs=8, bs=64, seed=3)
    r.tags = {"train_loss": "train_loss_step", "val_loss": "val_loss", "val_acc": "val_acc",
              "lr": "lr-Adam", "epoch": "epoch"}
    return r


@register
def healthy_rnn_with_counters():
    r = Run("healthy_rnn_with_counters", "custom",
            "healthy: GRU next-token model on the Markov token task, Adam 3e-3 clipped at 1.0; "
            "logs counters that are not metrics (global_step, tokens_seen, time_ms), a flat "
            "step time (timing/step_s) and a flat RSS (sys/rss_mb)")
    torch.manual_seed(0)
    data = markov_tokens(4096, 33, seed=1)
    emb = nn.Embedding(16, 32)
    gru = nn.GRU(32, 64, batch_first=True)
    head = nn.Linear(64, 16)
    mod = nn.ModuleList([emb, gru, head])
    opt = torch.optim.Adam(mod.parameters(), lr=3e-3)
    gen = torch.Generator().manual_seed(3)
    t_start = time.perf_counter()
    for step in range(1, 301):
        t0 = time.perf_counter()
        idx = torch.randint(0, 4096, (32,), generator=gen)
        xb = data[idx]
        h, _ = gru(emb(xb[:, :-1]))
        loss = F.cross_entropy(head(h).reshape(-1, 16), xb[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(mod.parameters(), 1.0)
        opt.step()
        if step % 2 == 0:
            r.log("lm loss", step, float(loss))
            r.log("global_step", step, step)
            r.log("tokens_seen", step, step * 32 * 32)
            r.log("time_ms", step, (time.perf_counter() - t_start) * 1000)
            r.log("timing/step_s", step, time.perf_counter() - t0)
            r.log("sys/rss_mb", step, rss_mb())
    r.tags = {"train_loss": "lm loss", "step_time": "timing/step_s", "memory": "sys/rss_mb"}
    r.note("counters global_step, tokens_seen, time_ms are traps")
    return r


@register
def healthy_small_batch_noisy():
    r = Run("healthy_small_batch_noisy", "pytorch",
            "healthy but noisy: MLP with batch size 8, SGD lr 0.02 momentum 0.9; loss is noisy "
            "step to step but trends down; val improves")
    torch.manual_seed(0)
    xtr, ytr = teacher_data(4096, seed=1)
    xva, yva = teacher_data(1024, seed=2)
    m = mlp(32, 128, K)
    opt = torch.optim.SGD(m.parameters(), lr=0.02, momentum=0.9)
    rec = Rec(r, "pytorch", every=2)
    train_classifier(r, rec, m, opt, xtr, ytr, xva, yva, epochs=2, bs=8, seed=3,
                     eval_every_epoch=1)
    r.tags = {k: rec.t[k] for k in ("train_loss", "val_loss", "val_acc", "lr", "grad_norm")}
    return r


# More runs, in a module of their own (spikes, oscillations, gradients, schedules, RL, fairseq).
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import runs_more  # noqa: E402

runs_more.register_all(sys.modules[__name__])
import runs_checks  # noqa: E402

runs_checks.register_all(sys.modules[__name__])


# --------------------------------------------------------------------------------------------


def offset_seeds(offset):
    """Shifts every seed the runs set (torch.manual_seed, torch.Generator().manual_seed) by
    `offset`; 0 leaves them as committed."""
    if not offset:
        return
    seed_global = torch.manual_seed
    torch.manual_seed = lambda s: seed_global(int(s) + offset)

    class OffsetGenerator(torch.Generator):
        def manual_seed(self, s):
            return super().manual_seed(int(s) + offset)

    torch.Generator = OffsetGenerator


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--converter", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--only", default="")
    ap.add_argument("--no-write", action="store_true")
    ap.add_argument("--child-summary", default="")
    ap.add_argument("--seed-offset", type=int, default=0,
                    help="add N to every torch seed: the same causes on new data and init, "
                         "a held-out set for rules tuned on the committed runs")
    args = ap.parse_args()
    offset_seeds(args.seed_offset)
    only = set(filter(None, args.only.split(",")))
    os.makedirs(args.out, exist_ok=True)
    work = tempfile.mkdtemp(prefix="cpu_runs_")
    summary = {}
    t_all = time.time()
    for fn in RUNS:
        if only and fn.__name__ not in only:
            continue
        if fn.__name__ in FRESH_PROCESS and not args.child_summary:
            child = os.path.join(work, fn.__name__ + ".summary.json")
            cmd = [sys.executable, os.path.abspath(__file__), "--converter", args.converter,
                   "--out", args.out, "--only", fn.__name__, "--child-summary", child]
            if args.no_write:
                cmd.append("--no-write")
            if args.seed_offset:
                cmd += ["--seed-offset", str(args.seed_offset)]
            subprocess.run(cmd, check=True)
            with open(child) as f:
                summary.update(json.load(f))
            continue
        t0 = time.time()
        r = fn()
        dt = time.time() - t0
        if not args.no_write:
            write_run(r, args.out, args.converter, work)
        print(f"=== {r.name} [{r.style}] {dt:.1f}s")
        lines = []
        for sub, pts in r.subs.items():
            for tag in dict.fromkeys(t for t, _, _, _ in pts):
                ser = r.series(tag, sub)
                line = describe(ser, (sub + ":" if sub else "") + tag)
                lines.append(line)
                print("   ", line)
        summary[r.name] = {"style": r.style, "cause": r.cause, "seconds": round(dt, 1),
                           "onset_draft": r.onset, "tags": r.tags, "measured": lines,
                           "notes": r.notes}
    if args.child_summary:
        with open(args.child_summary, "w") as f:
            json.dump(summary, f, indent=1)
        return
    with open(os.path.join(work, "labels.draft.json"), "w") as f:
        json.dump(summary, f, indent=1)
    print(f"total {time.time() - t_all:.1f}s; draft labels (measured numbers) in {work}/labels.draft.json")


if __name__ == "__main__":
    main()
