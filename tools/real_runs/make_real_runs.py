#!/usr/bin/env python3
"""Make real TensorBoard event files from small real training runs, healthy and sick.

Every run trains a real model on synthetic data made here with fixed seeds (a random
"teacher" MLP labels Gaussian inputs; modular addition for grokking; a token-counting task
for the tiny BERT), and is logged by a real writer: torch.utils.tensorboard.SummaryWriter,
PyTorch Lightning's TensorBoardLogger, or Hugging Face transformers.Trainer with
report_to=["tensorboard"]. After the runs the script reads its own event files back (a
small protobuf reader below, no TensorBoard needed), prints a per-run summary table and
writes real_runs_summary.json plus labels_draft.json (a bare draft of labels.json) into the
logdir's parent directory.

Usage (on a machine with a GPU, torch, lightning, transformers and tensorboard):
  PYTHONUNBUFFERED=1 python3 tools/real_runs/make_real_runs.py --logdir /tmp/real_runs
Options: --only a,b  --skip a,b  --budget-s N (skip runs once the wall clock passes N s).
--mini-writer writes event files with a built-in minimal writer instead of SummaryWriter
(for dry runs where tensorboard is not installed; never used for the committed data).
"""
import argparse
import copy
import dataclasses
import glob
import json
import math
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import traceback

import torch
import torch.nn as nn
import torch.nn.functional as F

T0 = time.time()


# ----------------------------------------------------------------------------------------
# Event files: a minimal reader (for the summary) and a minimal writer (dry runs only).

def _varint(b, i):
    r = 0
    s = 0
    while True:
        c = b[i]
        i += 1
        r |= (c & 0x7F) << s
        if c < 0x80:
            return r, i
        s += 7


def _fields(b):
    i = 0
    n = len(b)
    while i < n:
        key, i = _varint(b, i)
        f, wt = key >> 3, key & 7
        if wt == 0:
            v, i = _varint(b, i)
        elif wt == 1:
            v = b[i:i + 8]
            i += 8
        elif wt == 2:
            ln, i = _varint(b, i)
            v = b[i:i + ln]
            i += ln
        elif wt == 5:
            v = b[i:i + 4]
            i += 4
        else:
            raise ValueError("unsupported wire type %d" % wt)
        yield f, wt, v


def _plugin_name(meta):
    for f, wt, v in _fields(meta):
        if f == 1 and wt == 2:
            for f2, wt2, v2 in _fields(v):
                if f2 == 1 and wt2 == 2:
                    return v2.decode("utf-8", "replace")
    return None


def _tensor_scalar(t):
    dtype = 0
    vals = []
    content = None
    for f, wt, v in _fields(t):
        if f == 1 and wt == 0:
            dtype = v
        elif f == 4 and wt == 2:
            content = v
        elif f == 5:  # float_val
            if wt == 5:
                vals.append(struct.unpack("<f", v)[0])
            elif wt == 2:
                vals += list(struct.unpack("<%df" % (len(v) // 4), v))
        elif f == 6:  # double_val
            if wt == 1:
                vals.append(struct.unpack("<d", v)[0])
            elif wt == 2:
                vals += list(struct.unpack("<%dd" % (len(v) // 8), v))
    if vals:
        return float(vals[0])
    if content is not None:
        if dtype == 1 and len(content) >= 4:
            return struct.unpack("<f", content[:4])[0]
        if dtype == 2 and len(content) >= 8:
            return struct.unpack("<d", content[:8])[0]
    return None


def read_event_file(path, out):
    """Appends (step, value, wall_time) per scalar tag from one event file into out."""
    with open(path, "rb") as fh:
        data = fh.read()
    i = 0
    scalar_tags = set()  # TF2 writes the plugin metadata only with a tag's first value
    while i + 12 <= len(data):
        (ln,) = struct.unpack_from("<Q", data, i)
        i += 12
        rec = data[i:i + ln]
        i += ln + 4
        if len(rec) < ln:
            break
        step = 0
        wall = 0.0
        summ = None
        for f, wt, v in _fields(rec):
            if f == 1 and wt == 1:
                wall = struct.unpack("<d", v)[0]
            elif f == 2 and wt == 0:
                step = v if v < (1 << 63) else v - (1 << 64)
            elif f == 5 and wt == 2:
                summ = v
        if summ is None:
            continue
        for f, wt, v in _fields(summ):
            if f != 1 or wt != 2:
                continue
            tag = None
            sv = None
            tensor = None
            plugin = None
            for f2, wt2, v2 in _fields(v):
                if f2 == 1 and wt2 == 2:
                    tag = v2.decode("utf-8", "replace")
                elif f2 == 2 and wt2 == 5:
                    sv = struct.unpack("<f", v2)[0]
                elif f2 == 8 and wt2 == 2:
                    tensor = v2
                elif f2 == 9 and wt2 == 2:
                    plugin = _plugin_name(v2)
            if plugin == "scalars":
                scalar_tags.add(tag)
            if sv is None and tensor is not None and tag in scalar_tags:
                sv = _tensor_scalar(tensor)
            if tag is not None and sv is not None:
                out.setdefault(tag, []).append((step, float(sv), wall))


def read_run(run_dir, recursive=True):
    """{tag: [(step, value, wall)]} over the event files of one run directory."""
    out = {}
    pattern = os.path.join(run_dir, "**", "*tfevents*") if recursive else os.path.join(run_dir, "*tfevents*")
    for p in sorted(glob.glob(pattern, recursive=recursive)):
        read_event_file(p, out)
    for k in out:
        out[k].sort(key=lambda t: t[0])
    return out


def _masked_crc_dummy(_b):
    return 0


class MiniWriter:
    """Dry-run stand-in for SummaryWriter (scalars only, zero CRCs): never for real data."""

    def __init__(self, log_dir, **_):
        os.makedirs(log_dir, exist_ok=True)
        self.path = os.path.join(log_dir, "events.out.tfevents.%d.mini.%d.0" % (int(time.time()), os.getpid()))
        self.fh = open(self.path, "wb")
        self._write(self._event(time.time(), 0, file_version=b"brain.Event:2"))

    @staticmethod
    def _key(f, wt):
        return MiniWriter._vi((f << 3) | wt)

    @staticmethod
    def _vi(n):
        out = bytearray()
        while True:
            b = n & 0x7F
            n >>= 7
            if n:
                out.append(b | 0x80)
            else:
                out.append(b)
                return bytes(out)

    def _event(self, wall, step, file_version=None, summary=None):
        b = self._key(1, 1) + struct.pack("<d", wall) + self._key(2, 0) + self._vi(step)
        if file_version is not None:
            b += self._key(3, 2) + self._vi(len(file_version)) + file_version
        if summary is not None:
            b += self._key(5, 2) + self._vi(len(summary)) + summary
        return b

    def _write(self, rec):
        self.fh.write(struct.pack("<Q", len(rec)) + struct.pack("<I", 0) + rec + struct.pack("<I", 0))

    def add_scalar(self, tag, value, global_step=0):
        t = tag.encode()
        val = self._key(1, 2) + self._vi(len(t)) + t + self._key(2, 5) + struct.pack("<f", float(value))
        summ = self._key(1, 2) + self._vi(len(val)) + val
        self._write(self._event(time.time(), int(global_step), summary=summ))

    def add_hparams(self, hparam_dict, metric_dict, run_name=None, **_):
        for k, v in metric_dict.items():
            self.add_scalar(k, v, 0)

    def add_histogram(self, *a, **k):
        pass

    def flush(self):
        self.fh.flush()

    def close(self):
        self.fh.close()


# ----------------------------------------------------------------------------------------
# Data and models.

D_IN = 32
N_CLS = 10


def teacher_logits(x):
    g = torch.Generator().manual_seed(1234)
    w1 = torch.randn(D_IN, 64, generator=g) / math.sqrt(D_IN)
    b1 = torch.randn(64, generator=g) * 0.1
    w2 = torch.randn(64, N_CLS, generator=g) / math.sqrt(64) * 4.0
    return torch.tanh(x @ w1 + b1) @ w2


def make_data(n, seed, noise=0.0):
    """Gaussian inputs labelled by the fixed teacher (argmax); `noise` of labels resampled uniformly."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, D_IN, generator=g)
    lg = teacher_logits(x)
    y = lg.argmax(1)
    if noise > 0:
        flip = torch.rand(n, generator=g) < noise
        y[flip] = torch.randint(0, N_CLS, (int(flip.sum()),), generator=g)
    return x, y, lg


class MLP(nn.Module):
    def __init__(self, d_in=D_IN, hidden=256, depth=2, d_out=N_CLS):
        super().__init__()
        layers = []
        d = d_in
        for _ in range(depth):
            layers += [nn.Linear(d, hidden), nn.ReLU()]
            d = hidden
        self.body = nn.Sequential(*layers)
        self.head = nn.Linear(d, d_out)

    def forward(self, x):
        h = self.body(x)
        return self.head(h), h


def total_grad_norm(params):
    norms = [torch.linalg.vector_norm(p.grad.detach()) for p in params if p.grad is not None]
    return torch.linalg.vector_norm(torch.stack(norms))


@torch.no_grad()
def evaluate(model, x, y):
    was = model.training
    model.eval()
    loss = F.cross_entropy(model(x)[0], y).item()
    model.train(was)
    return loss


class Ctx:
    def __init__(self, args):
        self.args = args
        self.root = args.logdir
        self.dev = torch.device(args.device)
        self.data_cache = {}

    def writer(self, name):
        path = os.path.join(self.root, name)
        if self.args.mini_writer:
            return MiniWriter(path)
        from torch.utils.tensorboard import SummaryWriter
        return SummaryWriter(log_dir=path, flush_secs=30)

    def mem(self):
        return float(torch.cuda.memory_allocated(self.dev)) if self.dev.type == "cuda" else 0.0

    def sync(self):
        if self.dev.type == "cuda":
            torch.cuda.synchronize(self.dev)

    def data(self, key, n, seed, noise=0.0):
        k = (key, n, seed, noise)
        if k not in self.data_cache:
            x, y, _ = make_data(n, seed, noise)
            self.data_cache[k] = (x.to(self.dev), y.to(self.dev))
        return self.data_cache[k]


def train_mlp(ctx, name, steps, *, seed=0, data=None, val=None, batch=128, hidden=256, depth=2,
              opt="adamw", lr=1e-3, wd=0.01, momentum=0.9, lr_lambda=None, clip=None,
              shuffle=True, eval_every=100, eval_each_epoch=False, log_every=10, loss_every=None,
              bad_steps=(), frozen_eval=False, detached_opt=False, leak=False, creep=False,
              hparams=None, histogram_every=0):
    """The shared PyTorch training loop; the keyword flags switch on each run's bug."""
    dev = ctx.dev
    torch.manual_seed(seed)
    xtr, ytr = data if data is not None else ctx.data("train", 100000, 1)
    xva, yva = val if val is not None else ctx.data("val", 4096, 2)
    model = MLP(hidden=hidden, depth=depth).to(dev)
    # BUG (constant loss): the optimizer owns a copy's parameters, not the model's.
    opt_model = copy.deepcopy(model) if detached_opt else model
    # BUG (val constant): evaluation runs a frozen copy of the initial model.
    eval_model = copy.deepcopy(model) if frozen_eval else model
    if opt == "adamw":
        optim = torch.optim.AdamW(opt_model.parameters(), lr=lr, weight_decay=wd)
    else:
        optim = torch.optim.SGD(opt_model.parameters(), lr=lr, momentum=momentum)
    sched = torch.optim.lr_scheduler.LambdaLR(optim, lr_lambda) if lr_lambda else None
    w = ctx.writer(name)
    n = xtr.shape[0]
    spe = n // batch
    gen = torch.Generator().manual_seed(seed + 1)
    loss_every = loss_every or log_every
    bad = set(bad_steps)
    kept = []
    hist = []
    running = None
    perm = None
    ctx.sync()
    t_last = time.perf_counter()
    since = 0
    last_loss = float("nan")
    for step in range(1, steps + 1):
        it = step - 1
        epoch, i = divmod(it, spe)
        if i == 0:
            perm = torch.randperm(n, generator=gen).to(dev) if shuffle else torch.arange(n, device=dev)
        idx = perm[i * batch:(i + 1) * batch]
        xb = xtr[idx]
        yb = ytr[idx]
        if step in bad:
            xb = xb * 30.0  # a corrupted batch (e.g. a unit mix-up in preprocessing)
        model.train()
        logits, feats = model(xb)
        loss = F.cross_entropy(logits, yb)
        optim.zero_grad(set_to_none=True)
        if detached_opt:
            model.zero_grad(set_to_none=True)
        loss.backward()
        if clip is not None:
            gn = torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
        else:
            gn = total_grad_norm(list(model.parameters()))
        cur_lr = optim.param_groups[0]["lr"]
        optim.step()
        if sched is not None:
            sched.step()
        if leak:
            kept.append(feats)  # BUG: keeps each step's activations (with grad_fn) alive
        if creep:
            hist.append(loss.detach())
            running = sum(hist) / len(hist)  # BUG: O(step) kernel launches every step
        since += 1
        if step % loss_every == 0:
            last_loss = loss.item()
            w.add_scalar("Loss/train", last_loss, step)
        if step % log_every == 0:
            ctx.sync()
            now = time.perf_counter()
            w.add_scalar("lr", cur_lr, step)
            w.add_scalar("grad_norm", float(gn), step)
            w.add_scalar("step_time", (now - t_last) / since, step)
            w.add_scalar("memory", ctx.mem(), step)
            w.add_scalar("epoch", epoch, step)
            t_last = now
            since = 0
        if histogram_every and step % histogram_every == 0:
            w.add_histogram("weights/body.0", model.body[0].weight.detach().float().cpu(), step, bins=30)
        if (eval_each_epoch and i == spe - 1) or (not eval_each_epoch and eval_every and step % eval_every == 0):
            ctx.sync()
            te = time.perf_counter()
            w.add_scalar("Loss/val", evaluate(eval_model, xva, yva), step)
            ctx.sync()
            t_last += time.perf_counter() - te  # eval time is not step time
    if hparams is not None:
        w.add_hparams(hparams, {"hparam/final_train_loss": last_loss}, run_name=".")
    w.close()
    del kept, hist, running


# ----------------------------------------------------------------------------------------
# The runs.

def cosine_warmup(total, warm_frac=0.05, floor=0.1):
    warm = max(1, int(total * warm_frac))

    def f(it):  # it = number of scheduler steps taken; LR used at step it+1
        if it < warm:
            return (it + 1) / warm
        prog = min(1.0, (it - warm) / max(1, total - 1 - warm))
        return floor + (1 - floor) * 0.5 * (1 + math.cos(math.pi * prog))
    return f


def run_torch_healthy_cosine(ctx):
    train_mlp(ctx, "torch_healthy_cosine", 3000, lr=1e-3, lr_lambda=cosine_warmup(3000),
              eval_every=100, histogram_every=1000)


NAN_RESULTS = {}
# (lr, momentum): tried in order; the first run whose loss goes non-finite and stays so is kept.
# (A first attempt, SGD warmed up over 100 steps to lr 50, blew up to ~1e7 on the H100 but then
# settled at a finite loss of ~80 with dead ReLUs, so the LR is absurd from the first step.)
NAN_CANDIDATES = ((50.0, 0.9), (200.0, 0.9), (1000.0, 0.0))


def run_torch_nan_high_lr(ctx):
    # Plain SGD at an absurd constant LR, no clipping; every tag logged every step (short run).
    for k, (lr, mom) in enumerate(NAN_CANDIDATES):
        tmp = "_nan_try_%d" % k
        train_mlp(ctx, tmp, ctx.args.nan_steps, opt="sgd", lr=lr, momentum=mom, eval_every=50, log_every=1)
        tl = pts(read_run(os.path.join(ctx.root, tmp)), "Loss/train")
        bad = [s for s, v in tl if not isfin(v)]
        ok = bool(bad) and not isfin(tl[-1][1]) and tl[-1][0] - bad[0] >= 300
        NAN_RESULTS[tmp] = {"lr": lr, "momentum": mom, "first_nonfinite_step": bad[0] if bad else None,
                            "last_loss": tl[-1][1] if tl else None, "kept": ok}
        print("nan candidate %s" % json.dumps(NAN_RESULTS[tmp]))
        if ok:
            os.rename(os.path.join(ctx.root, tmp), os.path.join(ctx.root, "torch_nan_high_lr"))
            return
        shutil.rmtree(os.path.join(ctx.root, tmp), ignore_errors=True)
    print("WARNING: no NaN candidate went non-finite")


def run_torch_divergence(ctx):
    def ramp(it):  # BUG: warmup formula applied after step 1000 instead of decay
        return 1.0 if it < 1000 else 1.0 + (it - 1000) / ctx.args.div_ramp
    train_mlp(ctx, "torch_divergence", 3000, lr=1e-3, lr_lambda=ramp, eval_every=100)


def run_torch_overfit(ctx):
    # 1024 training samples, 25% of labels resampled uniformly (val labels equally noisy), a wide MLP,
    # 150 epochs of 16 steps, no weight decay, validation after every epoch.
    data = ctx.data("overfit_train", 1024, 11, noise=0.25)
    val = ctx.data("overfit_val", 4096, 12, noise=0.25)
    train_mlp(ctx, "torch_overfit", 2400, data=data, val=val, batch=64, hidden=1024, lr=2e-4, wd=0.0,
              eval_each_epoch=True)


def run_torch_constant_loss(ctx):
    data = ctx.data("const", 512, 21)
    train_mlp(ctx, "torch_constant_loss", 1500, data=data, batch=512, shuffle=False, eval_every=0,
              detached_opt=True)


def run_torch_lr_floor_early(ctx):
    total = 3000
    tmax = total // 4

    def f(it):  # cosine to eta_min=0 over T_max=750, then held at 0 (progress clamped)
        return 0.5 * (1 + math.cos(math.pi * min(it, tmax) / tmax))
    train_mlp(ctx, "torch_lr_floor_early", total, lr=1e-3, lr_lambda=f, eval_every=100)


def run_torch_epoch_jumps(ctx):
    # Labels sampled from the teacher's softmax (ambiguous inputs get noisy labels); the file
    # is sorted by teacher confidence (easy -> hard) and the loader never shuffles.
    # The validation set is drawn the same way, in random order.
    g = torch.Generator().manual_seed(31)
    x = torch.randn(10000 + 4096, D_IN, generator=g)
    probs = torch.softmax(teacher_logits(x) * ctx.args.jump_beta, 1)
    y = torch.multinomial(probs, 1, generator=g).squeeze(1)
    xt, yt, pt = x[:10000], y[:10000], probs[:10000]
    order = torch.argsort(pt.max(1).values, descending=True)
    data = (xt[order].to(ctx.dev), yt[order].to(ctx.dev))
    val = (x[10000:].to(ctx.dev), y[10000:].to(ctx.dev))
    train_mlp(ctx, "torch_epoch_jumps", 1500, data=data, val=val, batch=100, shuffle=False, lr=1e-3,
              eval_every=100, loss_every=5)


SPIKES = (800, 1600, 2300)


def run_torch_spikes_recover(ctx):
    train_mlp(ctx, "torch_spikes_recover", 3000, lr=1e-3, lr_lambda=cosine_warmup(3000), eval_every=100,
              loss_every=5, bad_steps=SPIKES)


RECUR = tuple(range(1000, 3001, 40))


def run_torch_spikes_recurring(ctx):
    train_mlp(ctx, "torch_spikes_recurring", 3000, lr=1e-3, lr_lambda=cosine_warmup(3000), eval_every=100,
              loss_every=5, bad_steps=RECUR)


def run_torch_memory_leak(ctx):
    train_mlp(ctx, "torch_memory_leak", 2000, lr=1e-3, eval_every=100, leak=True)


def run_torch_step_time_creep(ctx):
    train_mlp(ctx, "torch_step_time_creep", ctx.args.creep_steps, lr=1e-3, eval_every=100, creep=True)


def run_torch_grad_clip_saturation(ctx):
    lr = 0.05
    train_mlp(ctx, "torch_grad_clip_saturation", 2000, opt="sgd", lr=lr, momentum=0.9, clip=0.01,
              eval_every=100, hparams={"max_grad_norm": 0.01, "lr": lr})


def run_torch_val_constant(ctx):
    train_mlp(ctx, "torch_val_constant", 2000, lr=1e-3, eval_every=100, frozen_eval=True)


def run_torch_plateau_stuck(ctx):
    train_mlp(ctx, "torch_plateau_stuck", 2000, lr=1e-7, eval_every=100)


def grok_main(args):
    """Modular addition mod 97, 40% of pairs for training, MLP, AdamW weight_decay 1.0."""
    ctx = Ctx(args)
    dev = ctx.dev
    p = 97
    torch.manual_seed(0)
    a, b = torch.meshgrid(torch.arange(p), torch.arange(p), indexing="ij")
    a = a.flatten()
    b = b.flatten()
    y = (a + b) % p
    perm = torch.randperm(p * p, generator=torch.Generator().manual_seed(5))
    ntr = int(args.grok_frac * p * p)
    tr, va = perm[:ntr], perm[ntr:]
    xa, xb, yy = a.to(dev), b.to(dev), y.to(dev)
    tr, va = tr.to(dev), va.to(dev)

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(p, 128)
            self.fc1 = nn.Linear(256, 512)
            self.fc2 = nn.Linear(512, p)

        def forward(self, i, j):
            return self.fc2(F.relu(self.fc1(torch.cat([self.emb(i), self.emb(j)], 1))))

    net = Net().to(dev)
    opt = torch.optim.AdamW(net.parameters(), lr=args.grok_lr, weight_decay=args.grok_wd, betas=(0.9, 0.98))
    w = ctx.writer(args.grok_name)
    print("grokking %s: frac %.2f wd %g lr %g, %d train pairs" % (args.grok_name, args.grok_frac, args.grok_wd,
                                                                 args.grok_lr, ntr))
    t0 = time.time()
    groked_at = None
    step = 0
    while step < args.grok_steps:
        step += 1
        out = net(xa[tr], xb[tr])
        loss = F.cross_entropy(out, yy[tr])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if step % args.grok_log == 0:
            with torch.no_grad():
                net.eval()
                vo = net(xa[va], xb[va])
                vl = F.cross_entropy(vo, yy[va]).item()
                vacc = (vo.argmax(1) == yy[va]).float().mean().item()
                tacc = (out.argmax(1) == yy[tr]).float().mean().item()
                net.train()
            w.add_scalar("Loss/train", loss.item(), step)
            w.add_scalar("Loss/val", vl, step)
            w.add_scalar("Accuracy/train", tacc, step)
            w.add_scalar("Accuracy/val", vacc, step)
            if groked_at is None and vacc > 0.99:
                groked_at = step
                print("grokking %s: val acc > 0.99 at step %d (%.1fs)" % (args.grok_name, step, time.time() - t0))
            if groked_at is not None and step >= groked_at + args.grok_tail:
                break
            if time.time() - t0 > args.grok_time:
                print("grokking %s: time cap reached at step %d" % (args.grok_name, step))
                break
    w.close()
    print("grokking %s: done, %d steps in %.1fs" % (args.grok_name, step, time.time() - t0))


def run_lightning_healthy(ctx):
    try:
        import lightning.pytorch as L
        from lightning.pytorch.callbacks import LearningRateMonitor
        from lightning.pytorch.loggers import TensorBoardLogger
    except ImportError:
        import pytorch_lightning as L
        from pytorch_lightning.callbacks import LearningRateMonitor
        from pytorch_lightning.loggers import TensorBoardLogger
    print("lightning", L.__version__)
    L.seed_everything(0)
    xtr, ytr, _ = make_data(100000, 1)
    xva, yva, _ = make_data(4096, 2)
    tl = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(xtr, ytr), batch_size=256, shuffle=True)
    vl = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(xva, yva), batch_size=1024)

    class LitMLP(L.LightningModule):
        def __init__(self, lr=3e-3):
            super().__init__()
            self.save_hyperparameters()
            self.net = MLP()

        def training_step(self, batch, batch_idx):
            x, y = batch
            loss = F.cross_entropy(self.net(x)[0], y)
            self.log("train_loss", loss, on_step=True, on_epoch=False)
            return loss

        def validation_step(self, batch, batch_idx):
            x, y = batch
            self.log("val_loss", F.cross_entropy(self.net(x)[0], y), on_step=False, on_epoch=True)

        def configure_optimizers(self):
            opt = torch.optim.AdamW(self.parameters(), lr=self.hparams.lr, weight_decay=0.01)
            sch = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=self.hparams.lr,
                                                      total_steps=self.trainer.estimated_stepping_batches,
                                                      pct_start=0.1)
            return {"optimizer": opt, "lr_scheduler": {"scheduler": sch, "interval": "step"}}

    logger = TensorBoardLogger(save_dir=ctx.root, name="lightning_healthy")
    tr = L.Trainer(max_epochs=6, accelerator="gpu" if ctx.dev.type == "cuda" else "cpu", devices=1,
                   logger=logger, callbacks=[LearningRateMonitor(logging_interval="step")],
                   log_every_n_steps=10, enable_checkpointing=False, enable_progress_bar=False,
                   enable_model_summary=False, default_root_dir=tempfile.mkdtemp(prefix="lit_"))
    tr.fit(LitMLP(), tl, vl)
    print("lightning log dir:", logger.log_dir)


class TokDS(torch.utils.data.Dataset):
    """Token-count task: [CLS]=1 then 31 tokens in 2..99; label = at least 16 of them are <= 50."""

    def __init__(self, n, seed):
        g = torch.Generator().manual_seed(seed)
        toks = torch.randint(2, 100, (n, 31), generator=g)
        self.ids = torch.cat([torch.ones(n, 1, dtype=torch.long), toks], 1)
        self.labels = ((toks <= 50).sum(1) >= 16).long()

    def __len__(self):
        return self.ids.shape[0]

    def __getitem__(self, i):
        return {"input_ids": self.ids[i], "attention_mask": torch.ones_like(self.ids[i]),
                "labels": self.labels[i]}


def run_hf(ctx, name, nan):
    import transformers
    from transformers import BertConfig, BertForSequenceClassification, Trainer, TrainingArguments
    print("transformers", transformers.__version__)
    logdir = os.path.join(ctx.root, name)
    os.makedirs(logdir, exist_ok=True)
    os.environ["TENSORBOARD_LOGGING_DIR"] = logdir  # transformers >= 5 reads this
    fields = {f.name for f in dataclasses.fields(TrainingArguments)}
    out_dir = tempfile.mkdtemp(prefix="hf_out_")
    kw = dict(output_dir=out_dir, report_to=["tensorboard"], logging_steps=10, eval_steps=50,
              save_strategy="no", per_device_train_batch_size=32, per_device_eval_batch_size=256,
              weight_decay=0.01, seed=0, disable_tqdm=True, dataloader_num_workers=0)
    kw["eval_strategy" if "eval_strategy" in fields else "evaluation_strategy"] = "steps"
    if "logging_dir" in fields:
        kw["logging_dir"] = logdir
    if nan:
        kw.update(learning_rate=ctx.args.hf_nan_lr, max_steps=300, lr_scheduler_type="constant", warmup_steps=0)
    else:
        kw.update(learning_rate=1e-3, num_train_epochs=4, lr_scheduler_type="linear", warmup_steps=50)
    dropped = sorted(k for k in kw if k not in fields)
    if dropped:
        print("TrainingArguments here lacks %s; leaving them out" % dropped)
    args = TrainingArguments(**{k: v for k, v in kw.items() if k in fields})
    transformers.set_seed(0)
    cfg = BertConfig(vocab_size=100, hidden_size=64, num_hidden_layers=2, num_attention_heads=2,
                     intermediate_size=128, max_position_embeddings=64, num_labels=2)
    model = BertForSequenceClassification(cfg)
    trainer = Trainer(model=model, args=args, train_dataset=TokDS(4000, 41), eval_dataset=TokDS(512, 42))
    try:
        from transformers.trainer_callback import PrinterCallback
        trainer.remove_callback(PrinterCallback)
    except Exception:
        pass
    trainer.train()
    if not glob.glob(os.path.join(logdir, "*tfevents*")):
        found = glob.glob(os.path.join(out_dir, "**", "*tfevents*"), recursive=True) + \
            glob.glob(os.path.join("runs", "**", "*tfevents*"), recursive=True)
        print("WARNING: no event file in %s; moving %s" % (logdir, found))
        for f in found:
            shutil.move(f, logdir)
    shutil.rmtree(out_dir, ignore_errors=True)


def run_hf_trainer_healthy(ctx):
    run_hf(ctx, "hf_trainer_healthy", nan=False)


def run_hf_trainer_nan(ctx):
    run_hf(ctx, "hf_trainer_nan", nan=True)


# ----------------------------------------------------------------------------------------
# Summary: numbers read back from the event files, and draft labels.

def isfin(v):
    return not (math.isnan(v) or math.isinf(v))


def med(xs):
    xs = sorted(xs)
    if not xs:
        return float("nan")
    m = len(xs) // 2
    return xs[m] if len(xs) % 2 else 0.5 * (xs[m - 1] + xs[m])


def pts(sc, tag):
    return [(s, v) for s, v, _ in sc.get(tag, [])]


def basic(p):
    if not p:
        return None
    fin = [(s, v) for s, v in p if isfin(v)]
    nonfin = [(s, v) for s, v in p if not isfin(v)]
    k = max(1, len(p) // 10)
    d = {"n": len(p), "first": p[0][1], "first_step": p[0][0], "last": p[-1][1], "last_step": p[-1][0],
         "nonfinite": len(nonfin), "first_nonfinite_step": nonfin[0][0] if nonfin else None,
         "first_nonfinite": repr(nonfin[0][1]) if nonfin else None,
         "distinct": len(set(repr(v) for _, v in p)),
         "med_first10": med([v for _, v in p[:k] if isfin(v)]),
         "med_last10": med([v for _, v in p[-k:] if isfin(v)])}
    if fin:
        smin = min(fin, key=lambda t: t[1])
        smax = max(fin, key=lambda t: t[1])
        d.update(min=smin[1], min_step=smin[0], max=smax[1], max_step=smax[0])
    return d


def smooth_min(p, win=10):
    """Step and value of the minimum of a centred running median (finite points only)."""
    fin = [(s, v) for s, v in p if isfin(v)]
    best = None
    for i in range(len(fin)):
        lo, hi = max(0, i - win // 2), min(len(fin), i + win // 2 + 1)
        m = med([v for _, v in fin[lo:hi]])
        if best is None or m < best[1]:
            best = (fin[i][0], m)
    return best


def value_at(p, step):
    for s, v in p:
        if s == step:
            return v
    return None


TAGS_TORCH = {"train_loss": "Loss/train", "val_loss": "Loss/val", "lr": "lr", "grad_norm": "grad_norm",
              "step_time": "step_time", "memory": "memory", "epoch": "epoch"}
TAGS_LIGHTNING = {"train_loss": "train_loss", "val_loss": "val_loss", "lr": "lr-AdamW", "epoch": "epoch"}
TAGS_HF = {"train_loss": "train/loss", "val_loss": "eval/loss", "lr": "train/learning_rate",
           "grad_norm": "train/grad_norm", "epoch": "train/epoch"}
TAGS_GROK = {"train_loss": "Loss/train", "val_loss": "Loss/val", "lr": "lr",
             "train_acc": "Accuracy/train", "val_acc": "Accuracy/val"}


def summarize(name, run_dir):
    sc = read_run(run_dir)
    if name.startswith("lightning"):
        tags = TAGS_LIGHTNING
    elif name.startswith("hf_"):
        tags = TAGS_HF
    elif name == "torch_grokking":
        tags = TAGS_GROK
    else:
        tags = TAGS_TORCH
    tags = {r: t for r, t in tags.items() if t in sc}
    s = {"tags_present": sorted(sc), "tags": tags, "points": sum(len(v) for v in sc.values())}
    for role, tag in tags.items():
        s[role] = basic(pts(sc, tag))
    tl = pts(sc, tags.get("train_loss", ""))
    if tl:
        sm = smooth_min(tl)
        if sm:
            s["train_smooth_min_step"], s["train_smooth_min"] = sm
    vl = pts(sc, tags.get("val_loss", ""))
    lr = pts(sc, tags.get("lr", ""))
    if lr:
        zero = [st for st, v in lr if v == 0.0]
        s["lr_first_zero_step"] = zero[0] if zero else None
    gn = pts(sc, tags.get("grad_norm", ""))
    if name == "torch_grad_clip_saturation" and gn:
        s["grad_norm_frac_above_0.01"] = sum(1 for _, v in gn if v > 0.01) / len(gn)
    if name == "torch_epoch_jumps" and tl:
        jumps = []
        for b in range(100, 1500, 100):
            before, after = value_at(tl, b), value_at(tl, b + 5)
            if before is not None and after is not None:
                jumps.append(after - before)
        within = [abs(tl[i + 1][1] - tl[i][1]) for i in range(len(tl) - 1) if tl[i][0] // 100 == (tl[i + 1][0] - 1) // 100]
        s["boundary_jumps"] = [round(j, 3) for j in jumps]
        s["boundary_jump_median"] = med(jumps)
        s["within_epoch_absdiff_median"] = med(within)
        # loss at epoch position 5 vs 100 (first vs last logged batch of each epoch), averaged over epochs
        s["epoch_start_loss_med"] = med([v for st, v in tl if (st - 1) % 100 < 5 and st > 100])
        s["epoch_end_loss_med"] = med([v for st, v in tl if st % 100 == 0])
    if name in ("torch_spikes_recover", "torch_spikes_recurring") and tl:
        bad = SPIKES if name == "torch_spikes_recover" else RECUR
        info = []
        for b in bad:
            base = med([v for st, v in tl if b - 100 <= st < b])
            at = value_at(tl, b)
            rec = None
            for st, v in tl:
                if st > b and v <= 1.5 * base:
                    rec = st - b
                    break
            after = {d: value_at(tl, b + d) for d in (5, 10, 20, 50)}
            info.append({"step": b, "baseline": base, "at": at, "after": after, "recovered_within": rec})
        if name == "torch_spikes_recover":
            s["spikes"] = info
        else:
            s["spikes_n"] = len(info)
            s["spike_at_med"] = med([i["at"] for i in info if i["at"] is not None])
            s["spike_recovered_within_med"] = med([i["recovered_within"] for i in info if i["recovered_within"] is not None])
            s["spikes_first3"] = info[:3]
        s["max_nonbad_loss_after_800"] = max([v for st, v in tl if st not in set(bad) and st > 800] or [float("nan")])
    if name == "torch_grokking":
        va = pts(sc, "Accuracy/val")
        ta = pts(sc, "Accuracy/train")
        s["train_acc_099_step"] = next((st for st, v in ta if v > 0.99), None)
        s["val_acc_050_step"] = next((st for st, v in va if v > 0.5), None)
        s["val_acc_099_step"] = next((st for st, v in va if v > 0.99), None)
        if vl:
            s["val_loss_at_train_acc_099"] = value_at(vl, s["train_acc_099_step"]) if s["train_acc_099_step"] else None
    if vl:
        vb = basic(vl)
        if vb and "min_step" in vb:
            s["val_best_step"], s["val_best"] = vb["min_step"], vb["min"]
    return s, sc


def f3(v):
    if v is None:
        return "-"
    if isinstance(v, float):
        if not isfin(v):
            return repr(v)
        if v != 0 and (abs(v) >= 1e5 or abs(v) < 1e-3):
            return "%.3g" % v
        return "%.4g" % v
    return str(v)


def draft_label(name, rel, s):
    writer = "lightning" if name.startswith("lightning") else "hf_trainer" if name.startswith("hf_") else "pytorch"
    tl = s.get("train_loss") or {}
    vl = s.get("val_loss") or {}
    L = {"writer": writer, "expect": [], "expect_not": [], "onset_step": None, "tags": s["tags"], "notes": ""}
    ls = "train loss %s -> min %s@%s -> last %s@%s" % (f3(tl.get("first")), f3(tl.get("min")), tl.get("min_step"),
                                                       f3(tl.get("last")), tl.get("last_step"))
    vs = "val %s -> best %s@%s -> last %s" % (f3(vl.get("first")), f3(s.get("val_best")), s.get("val_best_step"),
                                              f3(vl.get("last"))) if vl else ""
    L["notes"] = "; ".join(x for x in (ls, vs) if x)
    return writer, L


RUNS = [
    ("torch_healthy_cosine", run_torch_healthy_cosine),
    ("torch_nan_high_lr", run_torch_nan_high_lr),
    ("torch_divergence", run_torch_divergence),
    ("torch_overfit", run_torch_overfit),
    ("torch_constant_loss", run_torch_constant_loss),
    ("torch_lr_floor_early", run_torch_lr_floor_early),
    ("torch_epoch_jumps", run_torch_epoch_jumps),
    ("torch_spikes_recover", run_torch_spikes_recover),
    ("torch_spikes_recurring", run_torch_spikes_recurring),
    ("torch_memory_leak", run_torch_memory_leak),
    ("torch_step_time_creep", run_torch_step_time_creep),
    ("torch_grad_clip_saturation", run_torch_grad_clip_saturation),
    ("torch_val_constant", run_torch_val_constant),
    ("torch_plateau_stuck", run_torch_plateau_stuck),
]
FRAMEWORK_RUNS = [
    ("lightning_healthy", run_lightning_healthy),
    ("hf_trainer_healthy", run_hf_trainer_healthy),
    ("hf_trainer_nan", run_hf_trainer_nan),
]


def dir_size(path):
    tot = 0
    for dp, _, fs in os.walk(path):
        for f in fs:
            tot += os.path.getsize(os.path.join(dp, f))
    return tot


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--logdir", required=True)
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--only", default="")
    ap.add_argument("--skip", default="")
    ap.add_argument("--budget-s", type=float, default=330.0)
    ap.add_argument("--mini-writer", action="store_true")
    ap.add_argument("--grok-child", action="store_true")
    ap.add_argument("--grok-steps", type=int, default=20000)
    ap.add_argument("--grok-time", type=float, default=110.0)
    ap.add_argument("--grok-frac", type=float, default=0.4)
    ap.add_argument("--grok-wd", type=float, default=1.0)
    ap.add_argument("--grok-lr", type=float, default=1e-3)
    ap.add_argument("--grok-name", default="torch_grokking")
    # candidates frac:weight_decay:lr, run side by side; the one with the longest delay that groks is kept
    ap.add_argument("--grok-configs", default="0.5:1.0:1e-3,0.4:1.0:1e-3,0.3:1.0:1e-3")
    ap.add_argument("--grok-log", type=int, default=25)
    ap.add_argument("--grok-tail", type=int, default=1500)
    ap.add_argument("--nan-steps", type=int, default=400)
    ap.add_argument("--creep-steps", type=int, default=2000)
    ap.add_argument("--div-ramp", type=float, default=40.0)
    ap.add_argument("--jump-beta", type=float, default=1.0)
    ap.add_argument("--hf-nan-lr", type=float, default=1e4)
    ap.add_argument("--summary-only", action="store_true")
    args = ap.parse_args()
    if args.grok_child:
        grok_main(args)
        return
    os.makedirs(args.logdir, exist_ok=True)
    print("versions:", json.dumps(versions()), "device:", args.device)
    only = set(filter(None, args.only.split(",")))
    skip = set(filter(None, args.skip.split(",")))

    def wanted(n):
        return (not only or n in only) and n not in skip

    ctx = Ctx(args)
    timings = {}
    errors = {}
    grok = None
    if not args.summary_only and wanted("torch_grokking"):
        procs = []
        for k, c in enumerate(args.grok_configs.split(",")):
            frac, wd, lr = c.split(":")
            cmd = [sys.executable, os.path.abspath(__file__), "--grok-child", "--logdir", args.logdir,
                   "--device", args.device, "--grok-steps", str(args.grok_steps), "--grok-time", str(args.grok_time),
                   "--grok-frac", frac, "--grok-wd", wd, "--grok-lr", lr, "--grok-name", "_grok_%d" % k,
                   "--grok-log", str(args.grok_log), "--grok-tail", str(args.grok_tail)]
            procs.append(subprocess.Popen(cmd + (["--mini-writer"] if args.mini_writer else [])))
        grok = (procs, time.time())
    order = FRAMEWORK_RUNS + RUNS
    for name, fn in ([] if args.summary_only else order):
        if not wanted(name):
            continue
        if grok is not None and name == RUNS[0][0]:
            # keep the GPU to ourselves for the runs that log step_time
            finish_grok(args, grok, timings)
            grok = None
        if time.time() - T0 > args.budget_s:
            print("== SKIP %s: over budget (%.0fs)" % (name, time.time() - T0))
            errors[name] = "skipped: over budget"
            continue
        t = time.time()
        print("== %s ..." % name)
        try:
            fn(ctx)
        except Exception:
            traceback.print_exc()
            errors[name] = traceback.format_exc(limit=3)[-600:]
        timings[name] = time.time() - t
        print("== %s done in %.1fs (total %.0fs)" % (name, timings[name], time.time() - T0))
        if ctx.dev.type == "cuda":
            torch.cuda.empty_cache()
    if grok is not None:
        finish_grok(args, grok, timings)

    # ---- summary
    summary = {}
    labels = {}
    for name, _ in order + [("torch_grokking", None)]:
        d = os.path.join(args.logdir, name)
        if not os.path.isdir(d):
            continue
        run_dirs = sorted({os.path.dirname(p) for p in glob.glob(os.path.join(d, "**", "*tfevents*"), recursive=True)})
        rel = os.path.relpath(run_dirs[0], args.logdir) if run_dirs else name
        try:
            s, _ = summarize(name, d)
        except Exception:
            traceback.print_exc()
            continue
        s["event_dirs"] = [os.path.relpath(r, args.logdir) for r in run_dirs]
        s["bytes"] = dir_size(d)
        s["seconds"] = round(timings.get(name, 0.0), 1)
        if name in errors:
            s["error"] = errors[name]
        summary[rel] = s
        _, labels[rel] = draft_label(name, rel, s)
    print()
    hdr = "%-34s %7s %5s %9s %9s %13s %9s %6s %9s %9s %13s %9s %9s %9s %9s" % (
        "run", "KiB", "s", "loss0", "lossLast", "lossMin@", "nonfin", "nfStep", "val0", "valLast", "valBest@",
        "stepT10%", "stepT90%", "mem0", "memLast")
    print(hdr)
    for rel, s in summary.items():
        tl = s.get("train_loss") or {}
        vl = s.get("val_loss") or {}
        st = s.get("step_time") or {}
        mm = s.get("memory") or {}
        print("%-34s %7.1f %5.0f %9s %9s %13s %9s %6s %9s %9s %13s %9s %9s %9s %9s" % (
            rel, s["bytes"] / 1024, s["seconds"], f3(tl.get("first")), f3(tl.get("last")),
            "%s@%s" % (f3(tl.get("min")), tl.get("min_step")), tl.get("nonfinite", "-"),
            f3(tl.get("first_nonfinite_step")), f3(vl.get("first")), f3(vl.get("last")),
            "%s@%s" % (f3(s.get("val_best")), s.get("val_best_step")), f3(st.get("med_first10")),
            f3(st.get("med_last10")), f3(mm.get("first")), f3(mm.get("last"))))
    print()
    for rel, s in summary.items():
        extra = {k: v for k, v in s.items() if k not in ("tags_present", "tags", "train_loss", "val_loss", "step_time",
                                                          "memory", "epoch", "event_dirs", "dir")}
        print("--", rel, json.dumps(extra, default=str)[:1500])
        for role in ("train_loss", "val_loss", "lr", "grad_norm", "train_acc", "val_acc"):
            if s.get(role):
                print("   %-10s %s" % (role, json.dumps(s[role], default=str)))
        print("   tags:", s["tags_present"])
    tot = dir_size(args.logdir)
    print("\nTOTAL logdir bytes: %d (%.2f MiB); wall %.0fs" % (tot, tot / 2**20, time.time() - T0))
    if errors:
        print("ERRORS:", json.dumps(errors, indent=1))
    out = {"summary": summary, "grokking_candidates": GROK_RESULTS, "nan_candidates": NAN_RESULTS, "errors": errors, "total_bytes": tot, "wall_s": time.time() - T0,
           "versions": versions()}
    with open(os.path.join(os.path.dirname(os.path.abspath(args.logdir)), "real_runs_summary.json"), "w") as fh:
        json.dump(out, fh, indent=1, default=str)
    with open(os.path.join(os.path.dirname(os.path.abspath(args.logdir)), "labels_draft.json"), "w") as fh:
        json.dump(labels, fh, indent=1, default=str)


GROK_RESULTS = {}


def finish_grok(args, grok, timings):
    """Waits for the grokking candidates; keeps the one that groks with the longest delay."""
    procs, t0 = grok
    rcs = [p.wait() for p in procs]
    timings["torch_grokking"] = time.time() - t0
    best = None
    for k, c in enumerate(args.grok_configs.split(",")):
        d = os.path.join(args.logdir, "_grok_%d" % k)
        if not os.path.isdir(d):
            continue
        sc = read_run(d)
        ta = pts(sc, "Accuracy/train")
        va = pts(sc, "Accuracy/val")
        t99 = next((st for st, v in ta if v > 0.99), None)
        v99 = next((st for st, v in va if v > 0.99), None)
        r = {"config(frac:wd:lr)": c, "rc": rcs[k], "train_acc_099_step": t99, "val_acc_099_step": v99,
             "last_step": ta[-1][0] if ta else None, "last_val_acc": va[-1][1] if va else None}
        GROK_RESULTS["_grok_%d" % k] = r
        print("== grokking candidate %d %s" % (k, json.dumps(r)))
        if t99 is not None and v99 is not None:
            delay = v99 - t99
            if best is None or delay > best[0]:
                best = (delay, d, c)
    if best is not None:
        os.rename(best[1], os.path.join(args.logdir, "torch_grokking"))
        GROK_RESULTS["kept"] = best[2]
        print("== torch_grokking: kept config %s (delay %d steps)" % (best[2], best[0]))
    else:
        print("== torch_grokking: no candidate grokked; none kept")
    for k in range(len(procs)):
        shutil.rmtree(os.path.join(args.logdir, "_grok_%d" % k), ignore_errors=True)
    print("== torch_grokking finished in %.1fs" % timings["torch_grokking"])


def versions():
    v = {"python": sys.version.split()[0], "torch": torch.__version__}
    if torch.cuda.is_available():
        v["gpu"] = torch.cuda.get_device_name(0)
        v["cuda"] = torch.version.cuda
    for mod in ("lightning", "pytorch_lightning", "transformers", "tensorboard", "numpy"):
        try:
            v[mod] = __import__(mod).__version__
        except Exception:
            pass
    return v


if __name__ == "__main__":
    main()
