#!/usr/bin/python3
"""make_blind_runs.py: a second, independent generator of labelled training runs.

Written blind (without reading the project's own generator, rules or their docs) from what
training runs look like in practice (the reference texts in /work/shared/seeds and the public sick
runs in /work/shared/corpus-sick). It is meant to measure how the doctor does on runs it was never
tuned on: other tag names, other curve shapes, other logging cadences.

    /usr/bin/python3 tools/blind_gen/make_blind_runs.py --seed N --out DIR \
        --converter /work/main/build/release/tw-events-from-jsonl

What it draws (everything below is drawn from --seed; the same seed gives identical output):

* About 63 sick runs (3-5 per pathology: NaN/Inf loss, divergence up and down, recurring and
  unrecovered and validation and short-run spikes, early plateaus, constant losses, loss at chance
  for K = 2/10/100/1000/vocabulary, periodic oscillation, overfitting on a loss or on a
  higher-is-better metric, validation stalls, constant validation, three kinds of misaligned LR
  schedule, unshuffled-epoch sawtooth, gradient explosion/vanishing/clip saturation, step-time
  creep, memory leaks, one grokking run) and about 30 healthy runs, each built around a trap a
  naive detector falls into (warmup, converged floors, S-curves, noisy small batches, a maximised
  ELBO, NaN only in a per-bucket AP, cumulative counters, YOLO warmup, a small noisy val set, loss
  components, cosine to zero, compile spikes, memory plateaus, small per-epoch drops, resumes
  that rewind the step, ...).
* The framework that "wrote" each run: HF Trainer, Lightning, Keras (TF2 tensor scalars in
  RUN/train + RUN/validation), detectron2, mmdet/mmengine, Ultralytics YOLO, timm, fairseq
  (RUN/train_inner), Megatron, nanoGPT, Stable-Baselines3, or invented names (W&B system
  metrics, perf/batch_time, gpu_mem_gb, sys/rss_mb, val/mIoU, ...). Each framework brings its
  tag names, its logging cadence (every step, every 10/20/50/100 steps, per epoch), its first
  step (0, 1, 19, 49, 1000 after a resume) and its units (ms or s, MB, GB, bytes or percent).
* Curve shapes: power law, exponential, step decays at LR drops, S-curves, converged floors;
  noise that is Gaussian, heavy-tailed, proportional to the level, or AR(1); lengths from 20 to
  ~20000 points; value scales from 1e-3 to 1e4.

Labels (DIR/labels.json, keyed by run directory) are computed from the drawn curve: the notes quote
the numbers the curve actually has (first, min/argmin, last, decile medians), onsets are clamped
inside the run, and a draw whose effect did not survive its noise is redrawn.
"""
import argparse
import json
import math
import os
import shutil
import subprocess
import tempfile

import numpy as np

LN = math.log

# ----------------------------------------------------------------------------------------------
# small helpers


def U(rng, a, b):
    return float(rng.uniform(a, b))


def LU(rng, a, b):
    """log-uniform"""
    return float(math.exp(rng.uniform(math.log(a), math.log(b))))


def pick(rng, seq):
    return seq[int(rng.integers(len(seq)))]


def fmt(v):
    if v is None:
        return "-"
    if isinstance(v, float) and not math.isfinite(v):
        return str(v)
    a = abs(v)
    if a != 0 and (a < 1e-3 or a >= 1e5):
        return "%.3g" % v
    return "%.4g" % v


def describe(steps, vals, hib=False):
    """first, min/max with step, last, decile medians of the finite values"""
    steps = np.asarray(steps)
    vals = np.asarray(vals, dtype=float)
    fin = np.isfinite(vals)
    n = len(vals)
    out = ["%d pts, steps %d-%d" % (n, steps[0], steps[-1])]
    if fin.sum() < n:
        out.append("%d non-finite" % (n - fin.sum()))
    if fin.sum() == 0:
        return ", ".join(out)
    fv, fs = vals[fin], steps[fin]
    out.append("first %s@%d" % (fmt(fv[0]), fs[0]))
    i = int(np.argmax(fv)) if hib else int(np.argmin(fv))
    out.append("%s %s@%d" % ("max" if hib else "min", fmt(fv[i]), fs[i]))
    out.append("last %s@%d" % (fmt(fv[-1]), fs[-1]))
    if len(fv) >= 10:
        dm = [np.median(c) for c in np.array_split(fv, 10)]
        out.append("decile medians " + " ".join(fmt(float(x)) for x in dm))
    return ", ".join(out)


def noise(rng, n, kind, sig):
    """a unit-free noise sequence (relative); kinds: gauss, heavy, ar1, mixed"""
    if kind == "gauss":
        e = rng.normal(0, 1, n)
    elif kind == "heavy":
        e = np.clip(rng.standard_t(3, n) / 1.7, -2.5, 4.0)
    elif kind == "ar1":
        phi = U(rng, 0.5, 0.9)
        z = rng.normal(0, math.sqrt(1 - phi * phi), n)
        e = np.empty(n)
        prev = 0.0
        for i in range(n):
            prev = phi * prev + z[i]
            e[i] = prev
    else:
        e = 0.7 * rng.normal(0, 1, n) + 0.5 * np.clip(rng.standard_t(4, n) / 1.4, -2.5, 3.5)
    return e * sig


def apply_noise(rng, m, sig, kind=None, hetero=True):
    kind = kind or pick(rng, ["gauss", "heavy", "ar1", "mixed"])
    e = noise(rng, len(m), kind, sig)
    if hetero:
        return m * np.exp(e), kind
    scale = np.median(np.abs(m))
    return m + e * scale, kind


def decay_curve(rng, p, l0, lf, kind=None, milestones=(), drop=0.3):
    """mean loss over progress p in [0,1]: l0 at p=0 to roughly lf"""
    kind = kind or pick(rng, ["power", "exp", "power", "mixed"])
    if kind == "power":
        a, t0 = U(rng, 0.4, 1.2), LU(rng, 0.003, 0.05)
        m = lf + (l0 - lf) * (1 + p / t0) ** -a
    elif kind == "exp":
        tau = U(rng, 0.04, 0.3)
        m = lf + (l0 - lf) * np.exp(-p / tau)
    else:
        tau, t0 = U(rng, 0.01, 0.05), LU(rng, 0.01, 0.1)
        m = lf + (l0 - lf) * (0.6 * np.exp(-p / tau) + 0.4 * (1 + p / t0) ** -0.7)
    for ms in milestones:
        k = U(rng, 0.005, 0.02)
        m = m * (1 - drop * (p > ms) * (1 - np.exp(-(p - ms) / k)))
    return m, kind


def acc_from_loss(loss, l0, lf, K, amax):
    x = np.clip((loss - lf) / max(l0 - lf, 1e-9), 0, 1)
    return amax - (amax - 1.0 / K) * x ** 0.8


def cos_sched(n, peak, warm=0, end_frac=0.0, total=None):
    """LR per step 0..n-1: linear warmup, cosine to end_frac*peak at `total` (default n)"""
    total = total or n
    s = np.arange(n, dtype=float)
    lr = np.empty(n)
    w = s < warm
    lr[w] = peak * (s[w] + 1) / max(warm, 1)
    q = np.clip((s - warm) / max(total - warm, 1), 0, 1)
    lr[~w] = peak * (end_frac + (1 - end_frac) * 0.5 * (1 + np.cos(np.pi * q[~w])))
    return lr


def lin_sched(n, peak, warm=0, total=None):
    total = total or n
    s = np.arange(n, dtype=float)
    lr = np.where(s < warm, peak * (s + 1) / max(warm, 1),
                  peak * np.clip((total - s) / max(total - warm, 1), 0, 1))
    return lr


def step_sched(n, peak, milestones, gamma=0.1, warm=0):
    s = np.arange(n, dtype=float)
    lr = peak * gamma ** np.sum([s >= m for m in milestones], axis=0) if milestones else np.full(n, peak)
    if warm:
        lr = np.where(s < warm, lr * (0.001 + 0.999 * s / warm), lr)
    return lr


# ----------------------------------------------------------------------------------------------
# frameworks: tag names, cadence, units

class Run:
    """one run: series of points per sub-run, role->tag map, and the label"""

    def __init__(self, rng, style, tf2=False):
        self.rng = rng
        self.style = style
        self.tf2 = tf2
        self.subs = {}          # sub ('' = the run dir) -> list of (wall, order, tag, step, value)
        self.tags = {}
        self.t0 = float(rng.uniform(1.60e9, 1.76e9))
        self.sec = U(rng, 0.05, 1.5)   # seconds per optimiser step
        self.cum = None         # optional cumulative seconds per step
        self.order = 0
        self.n_points = 0

    def set_step_seconds(self, secs):
        self.cum = np.concatenate([[0.0], np.cumsum(secs)])

    def wall(self, steps, lag=0.0):
        steps = np.asarray(steps)
        if self.cum is not None:
            idx = np.clip(steps, 0, len(self.cum) - 1)
            base = self.cum[idx.astype(int)]
        else:
            base = steps * self.sec
        return self.t0 + base + lag

    def add(self, tag, steps, vals, role=None, sub="", lag=0.0, walls=None):
        steps = np.asarray(steps).astype(np.int64)
        vals = np.asarray(vals, dtype=float)
        assert len(steps) == len(vals), tag
        w = self.wall(steps, lag) if walls is None else np.asarray(walls)
        lst = self.subs.setdefault(sub, [])
        for i in range(len(steps)):
            lst.append((float(w[i]), self.order, tag, int(steps[i]), float(vals[i])))
            self.order += 1
        self.n_points += len(steps)
        if role and role not in self.tags:
            self.tags[role] = tag if not sub or sub in ("train", "train_inner") else \
                "%s (sibling NAME/%s)" % (tag, sub)

    def write(self, outdir, name, converter, tmp, pid):
        for sub, pts in self.subs.items():
            pts.sort(key=lambda x: (x[0], x[1]))
            d = os.path.join(outdir, name, sub) if sub else os.path.join(outdir, name)
            os.makedirs(d, exist_ok=True)
            jl = os.path.join(tmp, "%s_%s.jsonl" % (name.replace("/", "_"), sub or "root"))
            with open(jl, "w") as f:
                for (w, _, tag, st, v) in pts:
                    if math.isnan(v):
                        vs = '"nan"'
                    elif math.isinf(v):
                        vs = '"inf"' if v > 0 else '"-inf"'
                    else:
                        vs = "%.7g" % v
                    f.write('{"tag": %s, "step": %d, "wall_time": %.3f, "value": %s}\n'
                            % (json.dumps(tag), st, w, vs))
            cmd = [converter] + (["--tf2"] if self.tf2 else []) + ["--pid", str(pid), jl, d]
            r = subprocess.run(cmd, capture_output=True, text=True)
            if r.returncode != 0:
                raise RuntimeError("converter failed for %s/%s: %s" % (name, sub, r.stderr))


def label(style, cause, expect, expect_not, onset, tags, notes, weak=()):
    d = {"style": style, "cause": cause, "expect": list(expect), "expect_not": list(expect_not)}
    if weak:
        d["weak"] = list(weak)
    d["onset_step"] = None if onset is None else int(onset)
    d["tags"] = tags
    d["notes"] = notes
    return d


# A "plan" is the shared skeleton of a supervised run for a style: steps that get logged,
# tag names per role, eval points. Families fill in the curves.

CLS_STYLES = ["hf", "lightning", "keras", "timm", "custom"]


def plan(rng, style, n_pts=None, every=None, first=None, kind="step", classes=10):
    """returns dict: style, tag names, log steps, eval steps, total steps"""
    P = {"style": style}
    if style == "keras":
        E = min(n_pts or int(rng.integers(12, 60)), 80)
        P.update(total=E, log=np.arange(E), ev=np.arange(E), epoch_steps=1, per_epoch=True,
                 tl="epoch_loss", vl="epoch_loss", acc="epoch_accuracy", lr="epoch_learning_rate",
                 va="epoch_accuracy", subs=("train", "validation"), tf2=True)
        return P
    if style == "yolo":
        E = n_pts or int(rng.integers(30, 200))
        off = pick(rng, [0, 1])
        st = np.arange(E) + off
        P.update(total=E + off, log=st, ev=st, epoch_steps=1, per_epoch=True, tl="train/box_loss",
                 vl="val/box_loss", va=pick(rng, ["metrics/mAP50-95(B)", "metrics/mAP50(B)"]),
                 lr="lr/pg0", subs=("",), tf2=False)
        return P
    if style == "timm":
        E = n_pts or int(rng.integers(30, 300))
        st = np.arange(E)
        P.update(total=E, log=st, ev=st, epoch_steps=1, per_epoch=True, tl="train_loss",
                 vl="eval_loss", va="eval_top1", lr="lr", subs=("",), tf2=False)
        return P
    every = every or pick(rng, {"hf": [10, 20, 50, 100, 500], "lightning": [50, 50, 10, 1],
                                "detectron2": [20], "mmdet": [50], "megatron": [1, 10, 100],
                                "nanogpt": [1, 10, 20], "fairseq": [100, 50],
                                "custom": [1, 10, 25, 100], "sb3": [2048]}[style])
    n = n_pts or int(LU(rng, 60, 700))
    first = first if first is not None else {
        "hf": every, "lightning": every - 1, "detectron2": 19, "mmdet": every,
        "megatron": every, "nanogpt": 0, "fairseq": every, "sb3": every,
        "custom": pick(rng, [0, 1, every])}[style]
    log = first + every * np.arange(n)
    total = int(log[-1]) + 1
    ev_every = every * int(rng.integers(max(2, n // 40), max(3, n // 8)))
    ev = np.arange(int(log[0]) + ev_every, total, ev_every) - (1 if style in ("lightning", "detectron2") else 0)
    if len(ev) < 5:
        ev = np.linspace(log[0] + (total - log[0]) / 6, total - 1, 6).astype(int)
    names = {
        "hf": dict(tl="train/loss", vl="eval/loss", va=pick(rng, ["eval/accuracy", "eval/f1"]),
                   lr="train/learning_rate", gn="train/grad_norm", ep="train/epoch"),
        "lightning": dict(tl=pick(rng, ["train_loss_step", "train_loss", "loss", "train/loss_step"]),
                          vl=pick(rng, ["val_loss", "val/loss", "valid_loss"]),
                          va=pick(rng, ["val_acc", "val/acc", "val_accuracy", "val/f1"]),
                          lr=pick(rng, ["lr-AdamW", "lr-SGD", "lr-Adam", "lr-AdamW/pg1"]),
                          gn="grad_2.0_norm_total", ep="epoch"),
        "detectron2": dict(tl="total_loss", vl="validation_loss", va="bbox/AP", lr="lr",
                           gn=None, ep=None),
        "mmdet": dict(tl="train/loss", vl="val/loss", va="val/coco/bbox_mAP", lr="train/lr",
                      gn="train/grad_norm", ep="train/epoch"),
        "megatron": dict(tl="lm loss", vl="lm loss validation", va=None, lr="learning-rate",
                         gn="grad-norm", ep=None),
        "nanogpt": dict(tl="loss", vl="val/loss", va=None, lr="lr", gn=None, ep=None),
        "fairseq": dict(tl="loss", vl=None, va=None, lr="lr", gn="gnorm", ep=None),
        "sb3": dict(tl="train/loss", vl=None, va=None, lr="train/learning_rate", gn=None, ep=None),
        "custom": dict(tl=pick(rng, ["loss", "Loss/train", "loss_total", "Loss/classification_loss",
                                     "train/loss_iter", "objective/train", "xent"]),
                       vl=pick(rng, ["Loss/val", "val/loss", "loss_val", "valid/xent"]),
                       va=pick(rng, ["val/acc", "Accuracy/val", "val/mIoU", "eval/f1", "acc_val"]),
                       lr=pick(rng, ["lr", "LR", "opt/lr", "hparams/learning_rate"]),
                       gn=pick(rng, ["grad_norm", "grad/global_norm", "gradients/total_norm",
                                     "optim/grad_norm"]),
                       ep=pick(rng, [None, "epoch", "train/epoch"])),
    }[style]
    P.update(names)
    P.update(total=total, log=log, ev=ev, every=every, per_epoch=False, subs=("",),
             tf2=False, epoch_steps=int(max(every * 5, total / U(rng, 3, 30))))
    return P


def run_name(rng, style, i):
    frag = {
        "hf": pick(rng, ["runs/Jan09_22-15-49_gpu01", "runs/Mar03_18-07-43_node7",
                         "runs/Oct20_11-18-12_ip-10-0-3-17", "runs/May15_16-24-24_a100x"]),
        "lightning": "lightning_logs/version_%d" % rng.integers(0, 40),
        "keras": "logs/fit/2023%02d%02d-%02d%02d%02d" % (rng.integers(1, 13), rng.integers(1, 29),
                                                         rng.integers(0, 24), rng.integers(0, 60),
                                                         rng.integers(0, 60)),
        "detectron2": "output_%s" % pick(rng, ["frcnn_r50", "retinanet", "mask_rcnn", "coco_ft"]),
        "mmdet": "work_dirs/%s" % pick(rng, ["faster-rcnn_r50_fpn_1x", "yolox_s_8x8",
                                             "rtmdet_tiny", "mask-rcnn_r101"]),
        "yolo": "runs/detect/train%d" % rng.integers(1, 30),
        "timm": "output/train/%s" % pick(rng, ["resnet50", "vit_small", "convnext_t", "effnet_b0"]),
        "fairseq": "checkpoints/%s" % pick(rng, ["transformer_iwslt", "wmt16_big", "lm_wiki103"]),
        "megatron": "tb/%s" % pick(rng, ["gpt-345m", "gpt-1.3b", "llama-7b-cpt"]),
        "nanogpt": "out-%s" % pick(rng, ["shakespeare-char", "owt", "gpt2-124m"]),
        "sb3": "%s_%d" % (pick(rng, ["PPO", "DQN", "SAC", "A2C"]), rng.integers(1, 9)),
        "custom": pick(rng, ["exp", "run", "trial", "job", "sweep"]) + "_%03x" % rng.integers(0, 4096),
    }[style]
    return "r%02d_%s" % (i, frag.replace("/", "_"))


# ----------------------------------------------------------------------------------------------
# generic supervised run: fills train loss, lr, val, acc, grad norm, system metrics


def supervised(rng, P, l0=None, lf=None, K=10, lr_kind=None, milestones=None, extras=True,
               gap=None, sig=None, noise_kind=None):
    """Builds a healthy-ish run on plan P. Returns (run, ctx) where ctx holds the arrays."""
    R = Run(rng, P["style"], tf2=P["tf2"])
    total = P["total"]
    s = np.arange(total)
    p = s / max(total - 1, 1)
    l0 = l0 if l0 is not None else LN(K) * U(rng, 0.95, 1.15)
    lf = lf if lf is not None else l0 * LU(rng, 0.03, 0.35)
    lr_kind = lr_kind or pick(rng, ["cos", "lin", "step", "const_warm", "cos"])
    peak = LU(rng, 1e-5, 3e-3) if P["style"] in ("hf", "megatron", "nanogpt", "fairseq") else LU(rng, 1e-4, 0.4)
    warm = int(total * U(rng, 0.0, 0.08)) if not P["per_epoch"] else int(rng.integers(0, 4))
    if lr_kind == "cos":
        lr = cos_sched(total, peak, warm, end_frac=pick(rng, [0.0, 0.01, 0.1]))
        ms = ()
    elif lr_kind == "lin":
        lr = lin_sched(total, peak, warm)
        ms = ()
    elif lr_kind == "step":
        ms = milestones or sorted(rng.choice([0.3, 0.5, 0.6, 0.75, 0.8, 0.9], size=2, replace=False))
        lr = step_sched(total, peak, [int(m * total) for m in ms], warm=warm)
    else:
        lr = step_sched(total, peak, [], warm=warm)
        ms = ()
    mean, shape = decay_curve(rng, p, l0, lf, milestones=ms if lr_kind == "step" else (),
                              drop=U(rng, 0.15, 0.4))
    sig = sig if sig is not None else (U(rng, 0.01, 0.04) if P["per_epoch"] else
                                       U(rng, 0.02, 0.12) * (1 if P.get("every", 1) > 1 else 2.0))
    ctx = dict(s=s, p=p, mean=mean, lr=lr, l0=l0, lf=lf, K=K, shape=shape, peak=peak, warm=warm,
               lr_kind=lr_kind, ms=ms, sig=sig)
    ctx["train_mean"] = mean
    gap = gap if gap is not None else U(rng, 0.03, 0.25)
    ctx["gap"] = gap
    ctx["val_mean"] = mean * (1 + gap * np.sqrt(p + 0.05)) + lf * gap * 0.5
    ctx["noise_kind"] = noise_kind
    return R, ctx


def emit_standard(rng, R, P, ctx, tvals=None, val=None, val_acc=None, lr=True, gn=None,
                  epoch=True, acc=None):
    """write the standard series of plan P. Means are arrays over the step index (0..total-1).
    tvals: train-loss values at P["log"] (default: ctx["train_mean"] with drawn noise).
    val: val-loss mean array, or False for none. val_acc: metric array over steps, or False."""
    log, ev = P["log"], P["ev"]
    if tvals is None:
        tvals, nk = apply_noise(rng, ctx["train_mean"][log], ctx["sig"], ctx.get("noise_kind"))
        ctx["noise_kind"] = nk
    ctx["tv"] = tvals
    keras = P["style"] == "keras"
    sub_t, sub_v = ("train", "validation") if keras else ("", "")
    R.add(P["tl"], log, tvals, "train_loss", sub=sub_t)
    vm = ctx["val_mean"] if val is None else val
    if val is not False and P.get("vl"):
        vv = vm[ev] * np.exp(rng.normal(0, ctx.get("vsig", ctx["sig"] * 0.4), len(ev)))
        ctx["vv"] = vv
        R.add(P["vl"], ev, vv, "val_loss", sub=sub_v, lag=U(rng, 5, 60))
    if val_acc is not False and P.get("va"):
        if val_acc is None:
            base = vm if val is not False else ctx["train_mean"]
            amax = ctx.get("amax", U(rng, 0.6, 0.95))
            va = acc_from_loss(base[ev], ctx["l0"], ctx["lf"], ctx["K"], amax)
            va = np.clip(va + rng.normal(0, 0.003, len(ev)), 0, 1)
        else:
            va = np.clip(val_acc[ev], 0, 100 if P["style"] == "timm" else 1)
        if P["style"] == "detectron2":
            va = va * 100.0
        ctx["va"] = va
        role = "val_acc" if any(k in P["va"] for k in ("acc", "top1")) else "val_metric"
        R.add(P["va"], ev, va, role, sub=sub_v, lag=U(rng, 5, 60))
    if keras and acc is not False:
        a = acc_from_loss(ctx["train_mean"][log], ctx["l0"], ctx["lf"], ctx["K"], 0.995) \
            if acc is None else acc[log]
        R.add(P["acc"], log, np.clip(a + rng.normal(0, 0.003, len(log)), 0, 1), "train_acc",
              sub="train")
    if lr and P.get("lr"):
        R.add(P["lr"], log, ctx["lr"][log], "lr", sub=sub_t)
        if P["style"] == "yolo":
            R.add("lr/pg1", log, ctx["lr"][log])
            R.add("lr/pg2", log, ctx["lr"][log])
    if gn is not None and P.get("gn"):
        R.add(P["gn"], log, gn[log], "grad_norm", sub=sub_t)
    if epoch and P.get("ep") and not P["per_epoch"]:
        ep = log / P["epoch_steps"]
        R.add(P["ep"], log, ep if P["style"] in ("hf", "mmdet") else np.floor(ep), "epoch")
    return tvals


def grad_norm_healthy(rng, ctx, level=None):
    s, p = ctx["s"], ctx["p"]
    g0 = level or LU(rng, 0.2, 8.0)
    shape = g0 * (0.6 + 1.2 * np.exp(-p / U(rng, 0.01, 0.1)) + 0.3 * p)
    return shape * np.exp(rng.normal(0, U(rng, 0.1, 0.3), len(s)))


def step_time_series(rng, n, base=None, unit="s", compile_spike=False):
    base = base or LU(rng, 0.05, 1.2)
    t = base * np.exp(rng.normal(0, U(rng, 0.02, 0.08), n))
    if compile_spike:
        t[0] = base * U(rng, 20, 200)
    return (t * 1000 if unit == "ms" else t), base


def memory_series(rng, n, unit="MB", leak=0.0, base_gb=None):
    base = base_gb or U(rng, 2, 60)
    ramp = 1 - np.exp(-np.arange(n) / max(n * U(rng, 0.005, 0.03), 1))
    m = base * (0.3 + 0.7 * ramp) + leak * np.arange(n) / max(n - 1, 1) * base
    m = m * (1 + rng.normal(0, 0.002, n))
    conv = {"MB": 1024.0, "GB": 1.0, "bytes": 2 ** 30, "pct": 100.0 / 80.0}[unit]
    return m * conv, base


ALL_RULES = ["non_finite_loss", "loss_divergence", "loss_spikes", "loss_plateau", "loss_constant",
             "loss_at_chance", "loss_oscillation", "overfitting", "val_stall", "val_constant",
             "lr_schedule_misaligned", "epoch_boundary_jumps", "grad_explosion", "grad_vanishing",
             "grad_clip_saturation", "step_time_creep", "memory_growth"]


def base(rng, styles, n_pts=None, every=None, first=None, **kw):
    style = pick(rng, styles)
    P = plan(rng, style, n_pts=n_pts, every=every, first=first)
    R, ctx = supervised(rng, P, **kw)
    if P["per_epoch"]:
        R.sec = U(rng, 20, 900)
    return P, R, ctx


def onset_at(P, frac):
    """the logged step nearest to fraction frac of the run"""
    log = P["log"]
    return int(log[min(len(log) - 1, max(0, int(round(frac * (len(log) - 1)))))])


def add_sys(rng, R, P, kind="time", creep=0.0, leak=0.0, spike=False, tagset=None, base_gb=None):
    """step-time or memory series logged at P['log'] (train steps). Returns (tag, values)."""
    log = P["log"]
    n = len(log)
    if kind == "time":
        tag, unit = tagset or pick(rng, {
            "detectron2": [("time", "s")], "mmdet": [("train/time", "s")],
            "megatron": [("iteration-time", "s")], "nanogpt": [("time_ms", "ms")],
            "fairseq": [("train_wall", "s")],
        }.get(P["style"], [("perf/batch_time", "s"), ("time/iter_ms", "ms"), ("step_time_ms", "ms"),
                           ("timing/step_s", "s"), ("perf/step_time", "s"), ("sys/iter_time", "s")]))
        vals, b = step_time_series(rng, n, unit=unit, compile_spike=spike)
        if creep:
            vals = vals * (1 + creep * np.arange(n) / max(n - 1, 1))
        R.add(tag, log, vals, "step_time")
        return tag, vals, unit
    tag, unit = tagset or pick(rng, {
        "mmdet": [("train/memory", "MB")],
        "megatron": [("mem-allocated-bytes", "bytes"), ("mem-max-allocated-bytes", "bytes")],
    }.get(P["style"], [("system/gpu.0.memoryAllocated", "pct"), ("gpu_mem_gb", "GB"),
                       ("sys/rss_mb", "MB"), ("memory/allocated_gb", "GB"),
                       ("perf/max_memory_allocated_mb", "MB")]))
    base_gb = base_gb or (U(rng, 4, 30) if unit == "pct" else None)
    vals, b = memory_series(rng, n, unit=unit, leak=leak, base_gb=base_gb)
    R.add(tag, log, vals, "memory")
    return tag, vals, unit


# ----------------------------------------------------------------------------------------------
# sick families: each returns (style, run, label)

TRAIN_STYLES = ["hf", "lightning", "custom", "megatron", "nanogpt", "mmdet", "detectron2"]
VAL_STYLES = ["hf", "lightning", "keras", "timm", "custom"]


def fam_nan_midrun(rng):
    P, R, ctx = base(rng, ["hf", "megatron", "nanogpt", "custom", "lightning", "fairseq"])
    n = len(P["log"])
    k = int(n * U(rng, 0.25, 0.8))
    ramp = int(rng.integers(0, 5))
    tv, _ = apply_noise(rng, ctx["train_mean"][P["log"]], ctx["sig"])
    for j in range(ramp):
        if k - ramp + j > 0:
            tv[k - ramp + j] *= 1.5 + j
    kind = pick(rng, ["nan", "inf_then_nan"])
    tv[k:] = np.nan
    if kind == "inf_then_nan":
        tv[k] = np.inf
    gn = grad_norm_healthy(rng, ctx)
    gn[P["log"][k]:] = np.nan
    emit_standard(rng, R, P, ctx, tvals=tv, gn=gn, val=False if rng.random() < 0.5 else None)
    on = int(P["log"][k])
    cause = pick(rng, ["fp16 training without dynamic loss scaling: an overflow in the attention "
                       "logits gives inf, then NaN weights for the rest of the run",
                       "log(0) in a hand-written focal loss once a class probability underflows "
                       "to 0; the NaN reaches the weights and every later loss is NaN",
                       "LR raised by a resume script (10x): activations overflow and the weights "
                       "become NaN"])
    lab = label(P["style"], cause, ["non_finite_loss"], ["loss_plateau", "loss_constant"], on,
                R.tags, "%s: finite (%s) up to step %d, then %s%s to the end (%d of %d points "
                "non-finite)." % (P["tl"], describe(P["log"][:k], tv[:k]), P["log"][k - 1],
                                  "inf at %d then NaN" % on if kind == "inf_then_nan" else "NaN from %d" % on,
                                  "" if not ramp else " after %d rising points" % ramp, n - k, n),
                weak=["loss_divergence", "loss_spikes", "grad_explosion"])
    return P["style"], R, lab


def fam_nan_first(rng):
    P, R, ctx = base(rng, ["lightning", "custom", "keras", "hf"], n_pts=int(rng.integers(10, 300)))
    n = len(P["log"])
    tv = np.full(n, np.nan)
    K = ctx["K"]
    va = np.full(P["total"], pick(rng, [1.0 / K, 0.0, 1.0]))
    emit_standard(rng, R, P, ctx, tvals=tv, val=np.full(P["total"], np.nan), val_acc=va,
                  acc=np.full(P["total"], va[0]))
    lab = label(P["style"], pick(rng, [
        "labels are 1..K instead of 0..K-1 on a GPU build where the out-of-range target gives NaN "
        "from the first batch", "input images contain NaN pixels (corrupt decode in the first "
        "shard and every shard after), the loss is NaN from the first step",
        "log of a softmax computed as log(exp(x)/sum) with fp16 logits: NaN at the first batch"]),
        ["non_finite_loss"], ["loss_plateau", "loss_at_chance", "overfitting"], int(P["log"][0]),
        R.tags, "%s: every one of the %d points is NaN, from the first (step %d); the validation "
        "metric %s is pinned at exactly %s (not evidence of health)." % (
            P["tl"], n, P["log"][0], P.get("va"), fmt(va[0])),
        weak=["val_constant", "loss_constant"])
    return P["style"], R, lab


def fam_nan_sparse(rng):
    P, R, ctx = base(rng, ["custom", "hf", "lightning", "mmdet"], every=pick(rng, [1, 10, 50]))
    n = len(P["log"])
    tv, _ = apply_noise(rng, ctx["train_mean"][P["log"]], ctx["sig"])
    frac = U(rng, 0.01, 0.06)
    k0 = int(n * U(rng, 0.0, 0.4))
    idx = k0 + np.where(rng.random(n - k0) < frac)[0]
    if len(idx) < 3:
        idx = np.unique(np.concatenate([idx, k0 + rng.integers(0, n - k0, 3)]))
    tv[idx] = np.nan
    emit_standard(rng, R, P, ctx, tvals=tv, gn=grad_norm_healthy(rng, ctx))
    lab = label(P["style"], "mask-averaged loss divides by the number of valid pixels/tokens; "
                "batches with an empty mask give 0/0 = NaN (the optimiser step is skipped by the "
                "AMP scaler so training goes on)", ["non_finite_loss"], ["loss_divergence"],
                int(P["log"][idx[0]]), R.tags,
                "%s: %d NaN points scattered from step %d (%.1f%% of %d), the finite rest is "
                "healthy: %s." % (P["tl"], len(idx), P["log"][idx[0]], 100.0 * len(idx) / n, n,
                                  describe(P["log"], tv)), weak=["loss_spikes"])
    return P["style"], R, lab


def fam_div_up(rng):
    P, R, ctx = base(rng, ["hf", "lightning", "custom", "nanogpt", "megatron", "keras", "timm", "mmdet"])
    log, s = P["log"], ctx["s"]
    fo = U(rng, 0.15, 0.5)
    on = int(fo * (P["total"] - 1))
    m = ctx["train_mean"].copy()
    grow = LU(rng, 3, 60)
    kind = pick(rng, ["exp", "lin"])
    x = np.clip((s - on) / max(P["total"] - 1 - on, 1), 0, 1)
    m = m[np.minimum(s, on)] * (np.exp(LN(grow) * x) if kind == "exp" else 1 + (grow - 1) * x)
    ctx["train_mean"] = m
    lr = ctx["lr"]
    val = m * (1 + ctx["gap"])
    tv = emit_standard(rng, R, P, ctx, val=val, gn=grad_norm_healthy(rng, ctx) * (1 + 3 * x))
    on_log = onset_at(P, fo)
    lab = label(P["style"], pick(rng, [
        "peak LR 10x too high for this batch size (warmup hides it): once the LR is at its peak "
        "the loss climbs and never comes back", "Adam with eps=1e-12 and no weight decay on "
        "a post-LN transformer: the updates blow up after the warmup and the loss runs away",
        "BatchNorm statistics frozen by a fine-tuning script while the data distribution drifts; "
        "the loss rises steadily for the rest of the run"]),
        ["loss_divergence"], ["non_finite_loss", "loss_plateau", "loss_at_chance"], on_log, R.tags,
        "%s: stops improving around step %d, then rises %s by ~%.0fx to the end: %s." % (
            P["tl"], on_log, "exponentially" if kind == "exp" else "linearly", grow,
            describe(log, tv)), weak=["overfitting", "loss_spikes", "grad_explosion"])
    return P["style"], R, lab


def fam_div_down(rng):
    style = pick(rng, ["custom", "lightning", "hf"])
    P = plan(rng, style, n_pts=int(LU(rng, 100, 3000)))
    R, ctx = supervised(rng, P, l0=U(rng, 0.5, 3), lf=0.1)
    log = P["log"]
    n = len(log)
    k = int(n * U(rng, 0.05, 0.4))
    variant = pick(rng, ["energy", "nll"])
    x = np.arange(n)
    v = np.empty(n)
    v[:k] = ctx["l0"] * (1 - 0.6 * x[:k] / max(k, 1))
    end = -LU(rng, 1e6, 1e18) if variant == "energy" else -LU(rng, 1e3, 1e7)
    v0 = v[k - 1] if k > 0 else ctx["l0"]
    r = (x[k:] - k) / max(n - 1 - k, 1)
    v[k:] = v0 - (abs(end) ** r - 1) * np.sign(1)
    v = v * np.exp(rng.normal(0, 0.02, n))
    tag = {"energy": pick(rng, ["loss", "loss_total", "train/ebm_loss", "Loss/contrastive"]),
           "nll": pick(rng, ["train/nll", "loss", "gaussian_nll"])}[variant]
    P["tl"] = tag
    emit_standard(rng, R, P, ctx, tvals=v, val=False, val_acc=False)
    cause = ("energy-based model trained by contrastive divergence without an energy "
             "regulariser: the energies of data and negatives both run to -infinity and the loss "
             "dives without bound" if variant == "energy" else
             "heteroscedastic Gaussian NLL with a learned log-variance and no floor: the variance "
             "collapses on a few memorised points and the NLL dives towards -infinity")
    lab = label(style, cause, ["loss_divergence"], ["non_finite_loss", "loss_plateau"],
                int(log[k]), R.tags, "%s: %s. It goes DOWN without bound (a loss that should "
                "have a floor)." % (tag, describe(log, v)), weak=["loss_spikes"])
    return style, R, lab


def fam_div_rl(rng):
    P = plan(rng, "sb3", n_pts=int(rng.integers(100, 500)))
    R, ctx = supervised(rng, P, l0=U(rng, 0.05, 1.0), lf=0.05)
    log = P["log"]
    n = len(log)
    k = int(n * U(rng, 0.1, 0.4))
    x = np.arange(n)
    v = np.empty(n)
    v[:k] = ctx["l0"] * (1 + 0.2 * rng.random(k))
    grow = LU(rng, 1e2, 1e5)
    v[k:] = v[k - 1] * grow ** ((x[k:] - k) / (n - 1 - k))
    v = v * np.exp(noise(rng, n, "heavy", 0.25))
    R.add("train/loss", log, v, "train_loss")
    rew = -200 + 150 * (1 - np.exp(-x / (k + 1))) - 100 * np.clip((x - k) / (n - k), 0, 1)
    R.add("rollout/ep_rew_mean", log, rew + rng.normal(0, 8, n))
    R.add("rollout/ep_len_mean", log, np.clip(200 + rng.normal(0, 10, n), 1, None))
    R.add("train/learning_rate", log, np.full(n, LU(rng, 1e-4, 1e-3)), "lr")
    R.add("train/n_updates", log, (x + 1) * 4, None)
    R.add("time/fps", log, 800 * np.exp(rng.normal(0, 0.05, n)))
    R.add("rollout/exploration_rate", log, np.maximum(0.05, 1 - x / (0.1 * n)))
    lab = label("sb3", "DQN whose target network is never refreshed (target_update_interval "
                "larger than the run): the bootstrapped Q targets feed on themselves and the "
                "TD loss grows by orders of magnitude while the reward collapses",
                ["loss_divergence"], ["non_finite_loss", "loss_plateau"], int(log[k]), R.tags,
                "train/loss: %s (x%.0f from the onset); rollout/ep_rew_mean rises to ~-50 then "
                "falls back towards -150." % (describe(log, v), grow),
                weak=["loss_spikes"])
    return "sb3", R, lab


def fam_spikes_recurring(rng):
    P, R, ctx = base(rng, ["hf", "custom", "megatron", "nanogpt", "lightning", "mmdet", "detectron2", "fairseq"],
                     n_pts=int(LU(rng, 300, 3000)), every=pick(rng, [1, 10, 20]))
    log = P["log"]
    n = len(log)
    tv, nk = apply_noise(rng, ctx["train_mean"][log], min(ctx["sig"], 0.05), "gauss")
    period = int(rng.integers(n // 40, n // 8))
    k0 = int(rng.integers(period // 2, period * 2))
    idx = np.arange(k0, n, period) + rng.integers(-period // 5, period // 5 + 1,
                                                  len(range(k0, n, period)))
    idx = np.clip(idx, 0, n - 1)
    mult = LU(rng, 4, 40)
    for j in idx:
        sm = mult * U(rng, 0.7, 1.4)
        w = int(rng.integers(1, 4))
        for d in range(w):
            if j + d < n:
                tv[j + d] *= 1 + (sm - 1) * (0.35 ** d)
    gn = grad_norm_healthy(rng, ctx)
    gn[log[idx]] *= mult * 2
    emit_standard(rng, R, P, ctx, tvals=tv, gn=gn)
    lab = label(P["style"], pick(rng, [
        "one shard of the training data has labels in another encoding; every pass over it gives "
        "a spike", "a few very long sequences in the data (no length cap): the per-token loss "
        "of those batches jumps, recurring every time they come round",
        "fp16 attention logits overflow on a few outlier batches (no QK-norm); the loss spikes "
        "and recovers, again and again"]),
        ["loss_spikes"], ["non_finite_loss", "loss_divergence", "loss_plateau"],
        int(log[idx[0]]), R.tags,
        "%s: %d spikes of ~%.0fx the running level (first at step %d, every ~%d points), each back "
        "to baseline within 1-3 points; %s." % (P["tl"], len(idx), mult, log[idx[0]], period,
                                               describe(log, tv)),
        weak=["grad_explosion", "loss_oscillation"])
    return P["style"], R, lab


def fam_spikes_norecover(rng):
    P, R, ctx = base(rng, ["hf", "custom", "megatron", "nanogpt", "lightning"],
                     n_pts=int(LU(rng, 300, 4000)))
    log = P["log"]
    n = len(log)
    tv, _ = apply_noise(rng, ctx["train_mean"][log], min(ctx["sig"], 0.05), "gauss")
    k = int(n * U(rng, 0.3, 0.7))
    jump = U(rng, 8, 30)
    after = U(rng, 2.0, 4.0)
    lvl = tv[k - 10:k].mean()
    tv[k] = lvl * jump
    tv[k + 1:k + 4] = lvl * np.linspace(jump / 2, after, 3)
    tv[k + 4:] = lvl * after * np.exp(rng.normal(0, 0.03, n - k - 4))
    emit_standard(rng, R, P, ctx, tvals=tv, gn=grad_norm_healthy(rng, ctx))
    lab = label(P["style"], "a single huge-gradient batch (bad sample) knocks the model into a "
                "worse region: a spike that never recovers; the loss stays ~%.1fx higher than "
                "before it" % after, ["loss_spikes"], ["non_finite_loss", "loss_plateau"],
                int(log[k]), R.tags,
                "%s: %.3g before step %d, spike to %.3g (%.0fx) at %d, then stays at ~%.3g "
                "(%.1fx the pre-spike level) to the end: %s." % (
                    P["tl"], lvl, log[k], lvl * jump, jump, log[k], lvl * after, after,
                    describe(log, tv)), weak=["loss_divergence", "grad_explosion"])
    return P["style"], R, lab


def fam_spikes_val(rng):
    P, R, ctx = base(rng, ["yolo", "lightning", "hf", "keras", "timm"])
    ev = P["ev"]
    ne = len(ev)
    val = ctx["val_mean"].copy()
    nsp = int(rng.integers(2, max(3, ne // 8) + 1))
    js = rng.choice(np.arange(2, ne), size=min(nsp, ne - 2), replace=False)
    mult = LU(rng, 3, 20)
    for j in js:
        val[ev[j]] *= mult * U(rng, 0.7, 1.3)
    ctx["vsig"] = 0.02
    emit_standard(rng, R, P, ctx, val=val)
    vv = ctx["vv"]
    js = np.sort(js)
    lab = label(P["style"], pick(rng, [
        "validation with model.train() left on for some epochs (BatchNorm updated by the val "
        "batches after a new augmentation policy): the val loss jumps on those epochs",
        "mixed-precision eval without autocast fix: a few evaluations overflow in the softmax and "
        "the val loss jumps", "EMA weights swapped in for some evaluations but not others (a "
        "callback bug): on those, the val loss is much worse"]),
        ["loss_spikes"], ["non_finite_loss", "loss_divergence", "overfitting"], int(ev[js[0]]),
        R.tags, "%s (validation): %d spikes of %.0fx-ish at steps %s while the train loss "
        "falls smoothly; %s." % (P["vl"], len(js), mult, ",".join(str(int(ev[j])) for j in js),
                                 describe(ev, vv)), weak=["val_stall", "loss_oscillation"])
    return P["style"], R, lab


def fam_spikes_short(rng):
    style = pick(rng, ["custom", "keras", "lightning", "timm"])
    P = plan(rng, style, n_pts=int(rng.integers(20, 60)))
    R, ctx = supervised(rng, P)
    log = P["log"]
    n = len(log)
    tv, _ = apply_noise(rng, ctx["train_mean"][log], 0.03, "gauss")
    period = int(rng.integers(5, 10))
    idx = np.arange(int(rng.integers(3, period + 1)), n, period)
    mult = LU(rng, 10, 100)
    for j in idx:
        tv[j] *= mult * U(rng, 0.5, 1.5)
    emit_standard(rng, R, P, ctx, tvals=tv)
    lab = label(style, "every few %s one comes from a shard whose features were never "
                "standardised (raw scale): %.0fx loss spikes, back to normal right after" % (
                    "epochs" if P["per_epoch"] else "logged steps", mult),
                ["loss_spikes"], ["non_finite_loss", "loss_divergence", "loss_plateau"],
                int(log[idx[0]]), R.tags, "%d points only. %s: spikes at steps %s (%.0fx the "
                "baseline), each back to baseline the next point; %s." % (
                    n, P["tl"], ",".join(str(int(log[j])) for j in idx), mult,
                    describe(log, tv)), weak=["loss_oscillation"])
    return style, R, lab


def fam_plateau(rng):
    P, R, ctx = base(rng, ["hf", "lightning", "custom", "keras", "timm", "megatron"], K=pick(rng, [10, 100, 1000]))
    s, p = ctx["s"], ctx["p"]
    fo = U(rng, 0.05, 0.2)
    lvl = ctx["l0"] * U(rng, 0.45, 0.8)
    m = lvl + (ctx["l0"] - lvl) * np.exp(-p / (fo / 3))
    ctx["train_mean"] = m
    ctx["lf"] = lvl * 0.2
    ctx["sig"] = min(ctx["sig"], 0.03)
    val = m * 1.03
    tv = emit_standard(rng, R, P, ctx, val=val)
    on = onset_at(P, fo)
    cause = pick(rng, [
        "most ReLUs die after a too-large first update (no BN, lr high for 2 steps): the "
        "network keeps a few live units and stops improving early, far above what it can reach",
        "the backbone is frozen by a callback bug after the warm-up epoch (only the head trains "
        "from then on): the loss flattens at a high level", "weight decay 0.5 (meant 5e-4): the "
        "weights are held near zero and the loss stalls far above the achievable level"])
    lab = label(P["style"], cause, ["loss_plateau"],
                ["non_finite_loss", "loss_divergence", "loss_constant", "loss_at_chance"], on,
                R.tags, "%s: drops from %.3g to ~%.3g by step ~%d (%.0f%% of the run) then flat "
                "(noise only) to the end: %s. Ends at %.0f%% of the start (ln K = %.3g), accuracy "
                "flat too." % (P["tl"], ctx["l0"], lvl, on, 100 * fo, describe(P["log"], tv),
                               100 * lvl / ctx["l0"], LN(ctx["K"])),
                weak=["val_stall"])
    return P["style"], R, lab


def fam_constant(rng):
    variant = pick(rng, ["stale", "frozen_keras", "frozen_fullbatch"])
    if variant == "frozen_keras":
        P = plan(rng, "keras")
        R, ctx = supervised(rng, P)
        R.sec = U(rng, 5, 60)
        c = U(rng, 0.8, 3.5)
        cv = c * U(rng, 1.0, 1.2)
        a = U(rng, 0.15, 0.5)
        emit_standard(rng, R, P, ctx, tvals=np.full(len(P["log"]), c),
                      val=np.full(P["total"], cv), acc=np.full(P["total"], a),
                      val_acc=np.full(P["total"], a * 0.97))
        # emit_standard adds noise to val: overwrite with exact constants
        R.subs["validation"] = [(w, o, t, st, (cv if t == P["vl"] else a * 0.97))
                                for (w, o, t, st, v) in R.subs["validation"]]
        R.subs["train"] = [(w, o, t, st, (a if t == P["acc"] else v))
                           for (w, o, t, st, v) in R.subs["train"]]
        lab = label("keras", "model.trainable = False set on the whole model instead of the "
                    "backbone (nothing trains); same data, same weights, no dropout: every epoch's "
                    "mean loss is identical", ["loss_constant"],
                    ["non_finite_loss", "loss_divergence", "loss_spikes", "overfitting"],
                    0, R.tags, "epoch_loss = %.7g at all %d epochs (exactly), validation "
                    "epoch_loss = %.7g at every epoch, accuracies constant." % (
                        np.float32(c), len(P["log"]), np.float32(cv)),
                    weak=["val_constant", "loss_plateau", "val_stall"])
        return "keras", R, lab
    P, R, ctx = base(rng, ["hf", "custom", "lightning", "detectron2", "mmdet"])
    n = len(P["log"])
    c = LU(rng, 0.05, 8.0)
    if variant == "stale":
        tv = np.full(n, c)
        cause = ("the logging hook reads a loss tensor captured at the first batch (a closure "
                 "bug), so the logged loss never changes although training runs")
        notes = "%s = %.7g at every one of %d points (exactly)." % (P["tl"], np.float32(c), n)
        val = None
    else:
        tv = c * (1 + rng.normal(0, 2e-6, n))
        cause = ("the optimiser was built from a parameter list copied before the model was "
                 "moved/wrapped, so it updates tensors the model no longer uses; full-batch "
                 "deterministic loss only jitters in the 6th digit")
        notes = "%s = %.6g +- %.1g (relative 2e-6) at all %d points: %s." % (
            P["tl"], c, c * 2e-6, n, describe(P["log"], tv))
        val = np.full(P["total"], c * 1.05)
    emit_standard(rng, R, P, ctx, tvals=tv, val=val)
    lab = label(P["style"], cause, ["loss_constant"],
                ["non_finite_loss", "loss_divergence", "loss_spikes", "loss_oscillation"],
                int(P["log"][0]), R.tags, notes,
                weak=["loss_plateau", "val_constant", "loss_at_chance"])
    return P["style"], R, lab


def fam_at_chance(rng, K=None):
    K = K or pick(rng, [2, 10, 100, 1000, "vocab"])
    if K == "vocab":
        V = pick(rng, [32000, 50257, 50304, 128256])
        style = pick(rng, ["megatron", "nanogpt", "hf"])
        P = plan(rng, style)
        R, ctx = supervised(rng, P, K=V)
        c = LN(V)
        n = len(P["log"])
        tv = c * (1 + rng.normal(0, U(rng, 0.001, 0.004), n)) + U(rng, 0.0, 0.01)
        ctx["train_mean"] = np.full(P["total"], c)
        emit_standard(rng, R, P, ctx, tvals=tv, val=np.full(P["total"], c * 1.001))
        lab = label(style, "LM head weight tied to an embedding that is zeroed by a bad "
                    "init call: logits are all equal, the loss sits at ln(vocab=%d)=%.3f for the "
                    "whole run" % (V, c), ["loss_at_chance"],
                    ["non_finite_loss", "loss_divergence", "loss_spikes"], int(P["log"][0]),
                    R.tags, "%s: %s; ln(%d) = %.3f. No accuracy tag: K must come from the "
                    "vocabulary size." % (P["tl"], describe(P["log"], tv), V, c),
                    weak=["loss_constant", "loss_plateau", "val_constant", "val_stall"])
        return style, R, lab
    style = pick(rng, ["keras", "lightning", "hf", "timm", "custom"] if K <= 100 else
                 ["timm", "lightning", "hf"])
    P = plan(rng, style)
    R, ctx = supervised(rng, P, K=K)
    c = LN(K)
    n = len(P["log"])
    drift = U(rng, 0.0, 0.01)
    tv = c * (1 + drift + rng.normal(0, U(rng, 0.002, 0.012) if not P["per_epoch"] else 0.001, n))
    ctx["train_mean"] = np.full(P["total"], c)
    ctx["lf"] = c * 0.1
    va = np.full(P["total"], 1.0 / K) + rng.normal(0, 0.15 / K, P["total"])
    if P.get("va") and ("f1" in P["va"] or "mIoU" in P["va"]):
        P["va"] = P["va"].replace("f1", "accuracy").replace("mIoU", "acc")
    if style == "timm":
        va = va * 100
    emit_standard(rng, R, P, ctx, tvals=tv, val=np.full(P["total"], c * 1.0005), val_acc=va,
                  acc=np.full(P["total"], 1.0 / K))
    cause = pick(rng, ["labels shuffled independently of the inputs by a dataset join on the "
                       "wrong key", "images normalised with a std of 255 twice: inputs are ~0 and "
                       "the model only learns the class prior (classes balanced)",
                       "the loss is computed on detached logits (a .detach() left in): nothing "
                       "trains"])
    lab = label(style, cause + "; %d balanced classes" % K, ["loss_at_chance"],
                ["non_finite_loss", "loss_divergence", "loss_spikes", "overfitting"],
                int(P["log"][0]), R.tags,
                "%s: %s; ln(%d) = %.4f from the first point; validation accuracy ~1/K = %.4g%s." % (
                    P["tl"], describe(P["log"], tv), K, c, 1.0 / K,
                    " (timm top1 in percent)" if style == "timm" else ""),
                weak=["loss_plateau", "loss_constant", "val_constant", "val_stall"])
    return style, R, lab


def fam_oscillation(rng):
    variant = pick(rng, ["clr", "underdamped", "short"])
    style = pick(rng, ["custom", "lightning", "hf", "timm", "keras"] if variant == "short"
                 else ["custom", "lightning", "hf"])
    n_pts = int(rng.integers(40, 100)) if variant == "short" else int(LU(rng, 150, 2000))
    P = plan(rng, style, n_pts=n_pts)
    R, ctx = supervised(rng, P)
    log = P["log"]
    n = len(log)
    period = int(rng.integers(4, 17))
    amp = U(rng, 0.25, 0.6)
    phase = np.arange(n) * 2 * np.pi / period
    trend = ctx["train_mean"][log]
    trend = trend[0] * 0.6 + 0.4 * trend  # slow overall progress
    wave = np.sin(phase) if variant != "clr" else 2 * np.abs((np.arange(n) / period) % 1 - 0.5) * 2 - 1
    tv = trend * (1 + amp * wave) * np.exp(rng.normal(0, 0.02, n))
    lr = ctx["lr"].copy()
    if variant == "clr":
        cyc = np.interp(np.arange(P["total"]), log, 0.5 + 0.5 * wave)
        lr = ctx["peak"] * (0.1 + 0.9 * cyc)
        ctx["lr"] = lr
    emit_standard(rng, R, P, ctx, tvals=tv)
    cause = {"clr": "cyclical LR (triangular) with a step size of a few logging intervals and a "
                    "max_lr 10x too high: the loss swings up and down with every LR cycle",
             "underdamped": "SGD momentum 0.99 with a large LR on an ill-conditioned problem: "
                            "the iterate overshoots back and forth across a ravine; the loss "
                            "oscillates with a steady period",
             "short": "LR too high for the batch size: the loss bounces between two regions "
                      "with a regular period instead of converging"}[variant]
    lab = label(style, cause, ["loss_oscillation"],
                ["non_finite_loss", "loss_divergence", "loss_constant"], int(log[0]), R.tags,
                "%s: periodic swings of +-%.0f%% around a level that falls early then stays, period "
                "%d logged points (%d steps); %s." % (P["tl"], 100 * amp, period,
                                                      period * (log[1] - log[0]),
                                                      describe(log, tv)),
                weak=["loss_spikes", "loss_plateau", "epoch_boundary_jumps"])
    return style, R, lab


def fam_overfit(rng):
    variant = pick(rng, ["loss", "acc", "metric", "yolo"])
    styles = {"loss": ["hf", "lightning", "keras", "timm", "custom"],
              "acc": ["keras", "lightning", "timm"], "metric": ["custom", "hf"],
              "yolo": ["yolo"]}[variant]
    P, R, ctx = base(rng, styles, lf=None)
    s, p = ctx["s"], ctx["p"]
    po = U(rng, 0.15, 0.45)
    lf = ctx["lf"]
    ctx["train_mean"] = lf * 0.05 + (ctx["l0"] - lf * 0.05) * np.exp(-p / U(rng, 0.06, 0.15))
    vmin = max(lf, ctx["train_mean"][int(po * len(s))]) * U(rng, 1.1, 1.6)
    rise = U(rng, 0.3, 2.5)
    val = np.where(p < po, vmin + (ctx["l0"] - vmin) * np.exp(-p / (po / 4)),
                   vmin * (1 + rise * np.clip((p - po) / (1 - po), 0, 1) ** U(rng, 0.8, 1.5)))
    amax = U(rng, 0.6, 0.92)
    drop = U(rng, 0.05, 0.15)
    metric = np.where(p < po, amax * (1 - np.exp(-p / (po / 4))), amax * (1 - drop * (p - po) / (1 - po)))
    ctx["vsig"] = 0.03
    if variant == "metric" and P["style"] == "custom":
        P["va"] = pick(rng, ["val/mIoU", "eval/f1", "val/mAP", "val/dice"])
    if variant == "metric":
        P["vl"] = None
    if P["style"] == "timm":
        metric = metric * 100
    emit_standard(rng, R, P, ctx, val=val, val_acc=metric + rng.normal(0, 0.004, len(s)))
    on = onset_at(P, po) if not P["per_epoch"] else int(P["ev"][int(po * (len(P["ev"]) - 1))])
    parts = ["%s: %s" % (P["tl"], describe(P["log"], ctx["tv"]))]
    if P.get("vl") and "vv" in ctx:
        parts.append("%s: %s" % (P["vl"], describe(P["ev"], ctx["vv"])))
    if P.get("va"):
        parts.append("%s (higher is better): %s" % (P["va"], describe(P["ev"], ctx["va"], hib=True)))
    lab = label(P["style"], pick(rng, [
        "small training set (2k images) with a large model, no augmentation and no weight decay: "
        "the model memorises the training set", "fine-tuning for 10x the recommended epochs with "
        "no early stopping", "train/val leakage removed from val but not train (duplicates in "
        "train only): the model fits the duplicates and val gets worse"]),
        ["overfitting"], ["non_finite_loss", "loss_divergence", "loss_plateau"], on, R.tags,
        "; ".join(parts) + ". Validation best around step %d, worse after while train keeps "
        "falling." % on, weak=["val_stall"])
    return P["style"], R, lab


def fam_val_stall(rng):
    variant = pick(rng, ["acc", "metric", "loss"])
    P, R, ctx = base(rng, {"acc": ["lightning", "keras", "timm", "hf"], "metric": ["custom", "hf", "yolo", "detectron2"],
                           "loss": ["hf", "lightning", "custom", "megatron", "nanogpt"]}[variant])
    s, p = ctx["s"], ctx["p"]
    po = U(rng, 0.12, 0.35)
    amax = U(rng, 0.35, 0.7)
    t0 = LU(rng, 0.01, 0.05)
    ctx["train_mean"] = ctx["l0"] * (1 + p / t0) ** -U(rng, 0.5, 0.9)
    ctx["sig"] = min(ctx["sig"], 0.05)
    metric = np.where(p < po, amax * (1 - np.exp(-p / (po / 4))), amax * (1 - np.exp(-4)))
    metric = metric + rng.normal(0, 0.0015, len(s))
    vlev = ctx["train_mean"][int(po * len(s))] * 1.2
    val = np.where(p < po, ctx["train_mean"] * 1.2, vlev) * np.exp(rng.normal(0, 0.003, len(s)))
    ctx["vsig"] = 0.004
    if variant == "metric" and P["style"] == "custom":
        P["va"] = pick(rng, ["val/mIoU", "eval/f1", "val/mAP@0.5", "metrics/f1_macro"])
    if variant == "metric":
        P["vl"] = None
    if variant == "loss":
        P["va"] = None
    if P["style"] == "timm":
        metric = metric * 100
    emit_standard(rng, R, P, ctx, val=val, val_acc=metric)
    on = int(P["ev"][max(1, int(po * (len(P["ev"]) - 1)))])
    parts = ["%s: %s" % (P["tl"], describe(P["log"], ctx["tv"]))]
    if P.get("vl") and "vv" in ctx:
        parts.append("%s: %s" % (P["vl"], describe(P["ev"], ctx["vv"])))
    if P.get("va") and "va" in ctx:
        parts.append("%s (higher is better): %s" % (P["va"], describe(P["ev"], ctx["va"], hib=True)))
    lab = label(P["style"], pick(rng, [
        "label noise in the validation split caps what can be measured, training goes on "
        "improving the train loss with no validation gain for 70% of the run",
        "the model has learnt everything the features allow (a leaky input was removed from val "
        "only); val stops improving early while training continues",
        "train augmentation far stronger than val distribution shift allows; val flat"]),
        ["val_stall"], ["non_finite_loss", "loss_divergence", "val_constant"], on, R.tags,
        "; ".join(parts) + ". The validation signal stops improving near step %d (%.0f%% of "
        "the run) and stays flat to the end while the train loss keeps falling." % (on, 100 * po),
        weak=["overfitting", "loss_plateau"])
    return P["style"], R, lab


def fam_val_constant(rng):
    variant = pick(rng, ["acc", "loss", "map0"])
    P, R, ctx = base(rng, {"acc": ["keras", "lightning", "hf", "timm"], "loss": ["hf", "lightning", "custom"],
                           "map0": ["detectron2", "yolo", "custom", "mmdet"]}[variant])
    T = P["total"]
    if variant == "acc":
        c = pick(rng, [0.1135, 0.098, 0.5, 0.25, 0.0])
        metric = np.full(T, c * (100 if P["style"] == "timm" else 1))
        val = None
        cause = ("eval runs the model in train() mode with a batch of 1 and BatchNorm: every "
                 "prediction is the same class; the val accuracy never moves (%.4g = that "
                 "class's share)" % c)
    elif variant == "loss":
        cv = U(rng, 0.5, 4)
        val = np.full(T, cv)
        metric = None
        cause = ("the evaluation loop reloads the initial checkpoint path (a stale variable) "
                 "every time: the val loss is the same number at every evaluation")
    else:
        metric = np.zeros(T)
        val = None
        if P["style"] == "custom":
            P["va"] = pick(rng, ["val/mAP", "eval/bbox_mAP"])
        cause = ("category ids in the val annotation file are 1-based while the model predicts "
                 "0-based ids: every detection is matched to the wrong class and mAP is 0 at "
                 "every evaluation")
    if variant == "loss" and not P.get("vl"):
        P["vl"] = "val_loss"
    emit_standard(rng, R, P, ctx, val=val if val is not None else None,
                  val_acc=metric if metric is not None else (False if variant == "loss" else None))
    # exact constants: strip the noise the emitter put on val
    tagc = P["vl"] if variant == "loss" else P["va"]
    cval = float(val[0]) if variant == "loss" else float(metric[0]) * (100 if P["style"] == "detectron2" else 1)
    for sub, pts in R.subs.items():
        if sub in ("", "validation"):
            R.subs[sub] = [(w, o, t, st, cval if t == tagc and (sub == "validation" or P["style"] != "keras") else v)
                           for (w, o, t, st, v) in pts]
    lab = label(P["style"], cause, ["val_constant"],
                ["non_finite_loss", "loss_divergence", "loss_constant"], int(P["ev"][0]), R.tags,
                "%s = %.6g at all %d evaluations (exactly) while %s falls: %s." % (
                    tagc, np.float32(cval), len(P["ev"]), P["tl"], describe(P["log"], ctx["tv"])),
                weak=["val_stall", "overfitting"])
    return P["style"], R, lab


def fam_lr_misaligned(rng):
    variant = pick(rng, ["decay_early", "warmup_long", "never_decays", "cycles"])
    P, R, ctx = base(rng, ["hf", "detectron2", "mmdet", "custom", "lightning", "nanogpt", "megatron",
                           "yolo", "timm"])
    T = P["total"]
    peak = ctx["peak"]
    s, p = ctx["s"], ctx["p"]
    if variant == "decay_early":
        fe = U(rng, 0.15, 0.45)
        lr = cos_sched(T, peak, ctx["warm"], total=int(fe * T)) if rng.random() < 0.5 else \
            lin_sched(T, peak, ctx["warm"], total=int(fe * T))
        lr = np.maximum(lr, 0.0)
        m = ctx["train_mean"].copy()
        fi = int(fe * T)
        m[fi:] = m[fi]
        ctx["train_mean"] = m
        cause = ("num_training_steps computed from the dataset size of a smaller debug split: "
                 "the schedule reaches 0 at %.0f%% of the run and the rest trains at LR 0" % (100 * fe))
        notes_sh = "LR peaks at %.3g and reaches ~0 at step %d (%.0f%% of the run), then stays 0" % (
            peak, fi, 100 * fe)
        on = fi
    elif variant == "warmup_long":
        W = int(T * U(rng, 1.05, 5))
        lr = peak * (s + 1) / W
        cause = ("warmup set in steps but meant as epochs (warmup=%d steps in a %d-step run): the "
                 "LR is still rising when the run ends" % (W, T))
        notes_sh = "LR rises linearly the whole run, ending at %.0f%% of its peak %.3g" % (
            100 * T / W, peak)
        on = int(P["log"][0])
    elif variant == "never_decays":
        warm = ctx["warm"]
        Tm = int(T * U(rng, 8, 40))
        lr = cos_sched(T, peak, warm, total=Tm)
        cause = ("cosine T_max given in iterations of the full 300-epoch recipe while the run is "
                 "a %d-step fine-tune: the schedule never really decays" % T)
        notes_sh = "LR ends at %.1f%% of its peak (%.3g -> %.3g): it never decays" % (
            100 * lr[-1] / peak, peak, lr[-1])
        on = int(warm)
    else:
        cyc = int(T / U(rng, 4, 12))
        lr = peak * 0.5 * (1 + np.cos(np.pi * s / cyc))
        cause = ("CosineAnnealingLR(T_max=epochs) stepped every iteration instead of every "
                 "epoch: the LR goes up and down %.0f times in the run" % (T / cyc / 2))
        notes_sh = "LR follows a cosine of period %d steps (LR back at peak every %d steps)" % (
            2 * cyc, 2 * cyc)
        on = int(cyc)
    ctx["lr"] = lr
    emit_standard(rng, R, P, ctx)
    lab = label(P["style"], cause, ["lr_schedule_misaligned"],
                ["non_finite_loss", "loss_divergence"], on, R.tags,
                "%s (%s): %s. %s: %s." % (P["lr"], describe(P["log"], lr[P["log"]]), notes_sh, P["tl"],
                                          describe(P["log"], ctx["tv"])),
                weak=["loss_plateau", "loss_oscillation", "val_stall"])
    return P["style"], R, lab


def fam_epoch_sawtooth(rng):
    style = pick(rng, ["hf", "lightning", "custom", "mmdet"])
    every = pick(rng, [1, 5, 10, 20])
    spe_pts = int(rng.integers(12, 60))
    n_ep = int(rng.integers(5, 25))
    P = plan(rng, style, n_pts=spe_pts * n_ep, every=every)
    P["epoch_steps"] = spe_pts * every
    R, ctx = supervised(rng, P)
    log = P["log"]
    n = len(log)
    pos = (np.arange(n) % spe_pts) / spe_pts
    amp = U(rng, 0.3, 1.0)
    variant = pick(rng, ["sorted_difficulty", "concat_sources"])
    if variant == "sorted_difficulty":
        saw = 1 + amp * pos
    else:
        saw = np.where(pos < U(rng, 0.5, 0.75), 1.0, 1 + amp)
    tv = ctx["train_mean"][log] * saw * np.exp(rng.normal(0, 0.02, n))
    emit_standard(rng, R, P, ctx, tvals=tv)
    cause = {"sorted_difficulty": "dataset sorted by sequence length / difficulty and the loader "
                                  "built with shuffle=False: each epoch runs easy to hard, so the "
                                  "loss climbs through the epoch and drops at the boundary",
             "concat_sources": "ConcatDataset(clean set, noisy web set) iterated without "
                               "shuffling: every epoch ends on the noisy part, the loss jumps up "
                               "there and falls back at the epoch boundary"}[variant]
    lab = label(style, cause, ["epoch_boundary_jumps"],
                ["non_finite_loss", "loss_divergence", "loss_spikes"], int(log[spe_pts]),
                R.tags, "%s: a sawtooth with one tooth per epoch (%d logged points = %d steps per "
                "epoch, %d epochs), +%.0f%% from the start to the end of each epoch, dropping "
                "at every boundary; %s." % (P["tl"], spe_pts, spe_pts * every, n_ep, 100 * amp,
                                            describe(log, tv)),
                weak=["loss_oscillation"])
    return style, R, lab


def fam_grad_explosion(rng):
    variant = pick(rng, ["growth", "spikes"])
    P, R, ctx = base(rng, ["hf", "megatron", "lightning", "custom", "mmdet", "fairseq"])
    log = P["log"]
    n = len(log)
    gn = grad_norm_healthy(rng, ctx)
    med = float(np.median(gn))
    tv, _ = apply_noise(rng, ctx["train_mean"][log], ctx["sig"])
    if variant == "growth":
        k = int(n * U(rng, 0.4, 0.75))
        ks = int(log[k])
        grow = LU(rng, 1e2, 1e5)
        x = np.clip((ctx["s"] - ks) / max(P["total"] - 1 - ks, 1), 0, 1)
        gn = gn * grow ** x
        tv[k:] *= 1 + np.linspace(0, U(rng, 0.3, 2.0), n - k)
        notes = "grad norm ~%.3g (median) until step %d, then grows exponentially to %.3g (%.0fx)" % (
            med, ks, gn[log[-1]], grow)
        cause = ("no gradient clipping on an LSTM language model with a growing LR: the "
                 "gradients explode in the last part of the run and the loss starts to rise")
        on = ks
    else:
        k = int(n * U(rng, 0.1, 0.4))
        idx = k + np.where(rng.random(n - k) < U(rng, 0.03, 0.1))[0]
        if len(idx) < 3:  # a short run can draw no burst at all: give it three
            idx = np.sort(k + rng.choice(n - k, size=min(3, n - k), replace=False))
        mult = LU(rng, 30, 1000)
        gl = gn[log].copy()
        gl[idx] *= mult * np.exp(rng.normal(0, 0.5, len(idx)))
        gn = gn.copy()
        gn[log] = gl
        tv[idx] *= U(rng, 1.2, 2.5)
        notes = "grad norm median %.3g; %d points from step %d are %.0fx-ish the median (max %.3g)" % (
            med, len(idx), log[idx[0]], mult, gl.max())
        cause = ("RNN without clipping and with a saturating attention: recurring gradient "
                 "bursts of 2-3 orders of magnitude")
        on = int(log[idx[0]])
    emit_standard(rng, R, P, ctx, tvals=tv, gn=gn)
    lab = label(P["style"], cause, ["grad_explosion"], ["non_finite_loss", "grad_vanishing",
                                                        "grad_clip_saturation"], on, R.tags,
                "%s: %s (%s). %s: %s." % (P["gn"], notes, describe(log, gn[log]), P["tl"],
                                          describe(log, tv)),
                weak=["loss_divergence", "loss_spikes"])
    return P["style"], R, lab


def fam_grad_vanishing(rng):
    variant = pick(rng, ["decay", "zero"])
    P, R, ctx = base(rng, ["hf", "lightning", "custom", "megatron", "mmdet"])
    log = P["log"]
    n = len(log)
    p = ctx["p"]
    if variant == "decay":
        lo = LU(rng, 1e-9, 1e-6)
        g0 = LU(rng, 0.05, 2)
        gn = g0 * (lo / g0) ** np.clip(p / U(rng, 0.2, 0.5), 0, 1) * np.exp(rng.normal(0, 0.15, len(p)))
        lvl = ctx["l0"] * U(rng, 0.7, 0.95)
        ctx["train_mean"] = lvl + (ctx["l0"] - lvl) * np.exp(-p / 0.05)
        cause = ("20-layer MLP with sigmoid activations and default init: the gradient shrinks "
                 "by orders of magnitude through the layers and training stops")
        on = onset_at(P, 0.2)
    else:
        gn = np.zeros(len(p))
        ctx["train_mean"] = np.full(len(p), ctx["l0"])
        cause = ("all weights initialised to zero (a custom init that zeroes every Linear): "
                 "every hidden unit is identical and every gradient is exactly 0")
        on = int(log[0])
    ctx["sig"] = min(ctx["sig"], 0.02)
    emit_standard(rng, R, P, ctx, gn=gn, val=ctx["train_mean"] * 1.02)
    lab = label(P["style"], cause, ["grad_vanishing"], ["non_finite_loss", "grad_explosion",
                                                        "loss_divergence"], on, R.tags,
                "%s: %s. %s: %s." % (P["gn"], describe(log, gn[log]), P["tl"],
                                     describe(log, ctx["tv"])),
                weak=["loss_plateau", "loss_constant", "loss_at_chance", "val_stall",
                      "val_constant"])
    return P["style"], R, lab


def fam_clip_sat(rng):
    variant = pick(rng, ["fairseq", "hf_threshold", "post_clip"])
    style = {"fairseq": "fairseq", "hf_threshold": "hf", "post_clip": pick(rng, ["custom", "lightning"])}[variant]
    P = plan(rng, style)
    R, ctx = supervised(rng, P)
    log = P["log"]
    n = len(log)
    thr = pick(rng, [0.01, 0.05, 0.1, 0.25])
    gn = thr * LU(rng, 8, 60) * np.exp(rng.normal(0, 0.2, P["total"]))
    ctx["train_mean"] = ctx["l0"] - (ctx["l0"] - ctx["lf"]) * 0.3 * ctx["p"]
    emit_standard(rng, R, P, ctx, gn=gn)
    if variant == "fairseq":
        R.add("clip", log, np.full(n, 100.0), "clip_fraction")
        R.add("nll_loss", log, ctx["tv"] / LN(2) * 0.98)
        R.add("ppl", log, 2 ** (ctx["tv"] / LN(2)))
        R.add("wps", log, 2.4e4 * np.exp(rng.normal(0, 0.04, n)))
        R.add("wpb", log, np.full(n, 4096.0) + rng.normal(0, 30, n))
        R.add("loss_scale", log, np.full(n, 128.0))
        ev = "clip = 100 (percent of updates clipped) at all %d points; gnorm %s vs --clip-norm %.3g" % (
            n, describe(log, gn[log]), thr)
    elif variant == "hf_threshold":
        R.add("train/max_grad_norm", log, np.full(n, thr), "clip_threshold")
        ev = "train/grad_norm (pre-clip) %s vs max_grad_norm %.3g logged as a constant: every step clipped" % (
            describe(log, gn[log]), thr)
    else:
        tag = pick(rng, ["grad_norm_clipped", "grad/clipped_norm", "optim/grad_norm_after_clip"])
        R.add(tag, log, np.full(n, thr), "grad_norm_post_clip")
        ev = "%s (pre-clip) %s; %s (post-clip) = %.3g exactly at every point" % (
            P["gn"], describe(log, gn[log]), tag, thr)
    lab = label(style, "clip norm %.3g (meant %.3g): every update is rescaled, training crawls" % (
        thr, thr * 100), ["grad_clip_saturation"], ["non_finite_loss", "loss_divergence",
                                                    "grad_explosion"], int(log[0]), R.tags,
        ev + ". %s falls slowly: %s." % (P["tl"], describe(log, ctx["tv"])),
        weak=["loss_plateau"])
    return style, R, lab


def fam_step_time_creep(rng):
    P, R, ctx = base(rng, ["detectron2", "mmdet", "nanogpt", "custom", "lightning", "megatron"])
    emit_standard(rng, R, P, ctx)
    creep = U(rng, 1.5, 8)
    tag, vals, unit = add_sys(rng, R, P, "time", creep=creep)
    log = P["log"]
    secs = np.interp(np.arange(P["total"]), log, vals / (1000 if unit == "ms" else 1))
    R.set_step_seconds(secs)
    # walls were computed before: recompute all walls with the new clock
    for sub, pts in R.subs.items():
        R.subs[sub] = [(float(R.t0 + R.cum[min(st, len(R.cum) - 1)]) + (w - R.t0 - st * R.sec),
                        o, t, st, v) for (w, o, t, st, v) in pts]
    lab = label(P["style"], pick(rng, [
        "the training loop appends every batch's loss tensor (with its graph) to a list that is "
        "summed for logging: each step walks a longer list", "a dataloader worker re-reads an "
        "index file that grows with every sample seen (a caching bug): data time grows linearly",
        "a Python-side dedup check does a linear scan over all seen ids"]),
        ["step_time_creep"], ["non_finite_loss", "memory_growth"], int(log[len(log) // 10]),
        R.tags, "%s (%s): grows from ~%.3g to ~%.3g (%.1fx) over the run: %s. Loss healthy." % (
            tag, unit, np.median(vals[:max(3, len(vals) // 10)]),
            np.median(vals[-max(3, len(vals) // 10):]), 1 + creep, describe(log, vals)),
        weak=["memory_growth"])
    return P["style"], R, lab


def fam_memory_growth(rng):
    P, R, ctx = base(rng, ["mmdet", "megatron", "custom", "lightning", "hf", "nanogpt"])
    emit_standard(rng, R, P, ctx)
    tag, unit = pick(rng, {
        "mmdet": [("train/memory", "MB")],
        "megatron": [("mem-allocated-bytes", "bytes"), ("mem-max-allocated-bytes", "bytes")],
    }.get(P["style"], [("system/gpu.0.memoryAllocated", "pct"), ("gpu_mem_gb", "GB"),
                       ("sys/rss_mb", "MB"), ("memory/allocated_gb", "GB"),
                       ("perf/max_memory_allocated_mb", "MB")]))
    base_gb = U(rng, 3, 20)
    leak = U(rng, 0.5, min(3.0, 70.0 / base_gb - 1))
    tag, vals, unit = add_sys(rng, R, P, "memory", leak=leak, tagset=(tag, unit), base_gb=base_gb)
    log = P["log"]
    oom = rng.random() < 0.3
    lab = label(P["style"], pick(rng, [
        "validation outputs appended to a list on the GPU with their graphs kept (loss instead "
        "of loss.item()): memory grows every step", "a dataloader worker holds a Python list of "
        "sample dicts (copy-on-write refcount touching): RSS grows steadily",
        "a metrics object accumulates predictions and is never reset"]),
        ["memory_growth"], ["non_finite_loss", "step_time_creep"], int(log[len(log) // 10]),
        R.tags, "%s (%s): ramps up in the first few %% of the run then keeps growing linearly by "
        "+%.0f%% to the end: %s.%s" % (tag, unit, 100 * leak, describe(log, vals),
                                      " The run stops there (OOM)." if oom else ""),
        weak=["step_time_creep"])
    return P["style"], R, lab


def fam_grokking(rng):
    style = pick(rng, ["custom", "lightning", "hf"])
    P = plan(rng, style, n_pts=int(LU(rng, 500, 5000)))
    R, ctx = supervised(rng, P, K=97, lr_kind="const_warm")
    p = ctx["p"]
    c = LN(97)
    tr = 1e-3 + (c - 1e-3) * np.exp(-p / 0.02)
    pg = U(rng, 0.4, 0.75)
    sg = 1 / (1 + np.exp(-(p - pg) / 0.02))
    val = (c + 2.0 * np.clip(p / 0.05, 0, 1)) * (1 - sg) + 0.01 * sg
    acc = 1 / 97 + (0.999 - 1 / 97) * sg
    ctx["train_mean"] = tr
    P["va"] = "val/acc" if style == "custom" else P["va"].replace("f1", "accuracy")
    ctx["vsig"] = 0.01
    emit_standard(rng, R, P, ctx, val=val, val_acc=acc + rng.normal(0, 0.004, len(p)))
    lab = label(style, "modular addition (p=97) transformer with weight decay 1.0: the train set "
                "is memorised within a few %% of the run; validation accuracy sits at chance for "
                "a long time then jumps to ~1 (grokking)", ["grokking"],
                ["non_finite_loss", "loss_divergence", "loss_spikes"], onset_at(P, pg), R.tags,
                "%s: %s; %s: %s; %s: %s." % (P["tl"], describe(P["log"], ctx["tv"]), P["vl"],
                                            describe(P["ev"], ctx["vv"]), P["va"],
                                            describe(P["ev"], ctx["va"], hib=True)),
                weak=["overfitting", "val_stall", "loss_constant"])
    return style, R, lab


# ----------------------------------------------------------------------------------------------
# healthy families (each built around a trap)

QUIET = ["non_finite_loss", "loss_divergence", "loss_spikes", "loss_plateau", "loss_constant",
         "loss_at_chance", "loss_oscillation", "overfitting", "val_stall", "val_constant",
         "lr_schedule_misaligned", "epoch_boundary_jumps", "grad_explosion", "grad_vanishing",
         "grad_clip_saturation", "step_time_creep", "memory_growth"]


def healthy_label(P, R, ctx, cause, trap, traps, extra=""):
    parts = ["%s: %s" % (P["tl"], describe(P["log"], ctx["tv"]))]
    if "vv" in ctx and P.get("vl"):
        parts.append("%s: %s" % (P["vl"], describe(P["ev"], ctx["vv"])))
    if "va" in ctx and P.get("va"):
        parts.append("%s: %s" % (P["va"], describe(P["ev"], ctx["va"], hib=True)))
    return label(P["style"], cause, [], traps, None, R.tags,
                 "TRAP: " + trap + ". " + "; ".join(parts) + "." + (" " + extra if extra else ""))


def h_warmup_decay(rng):
    P, R, ctx = base(rng, ["hf", "nanogpt", "megatron", "fairseq", "lightning"],
                     lr_kind=pick(rng, ["cos", "lin"]))
    warm = int(P["total"] * U(rng, 0.02, 0.1))
    ctx["lr"] = (cos_sched if ctx["lr_kind"] == "cos" else lin_sched)(P["total"], ctx["peak"], warm)
    m = ctx["train_mean"].copy()
    wl = int(warm)
    m[:wl] = m[:wl] + (ctx["l0"] * 0.1) * np.sin(np.linspace(0, np.pi, wl)) if wl > 2 else m[:wl]
    ctx["train_mean"] = m
    emit_standard(rng, R, P, ctx, gn=grad_norm_healthy(rng, ctx))
    return P["style"], R, healthy_label(
        P, R, ctx, "standard recipe: linear warmup over %d steps then %s decay" % (
            warm, ctx["lr_kind"]), "LR rises for the first %d steps and the loss wobbles up during "
        "warmup before falling" % warm, ["lr_schedule_misaligned", "loss_divergence", "loss_spikes",
                                         "grad_explosion"])


def h_converged_floor(rng):
    P, R, ctx = base(rng, ["custom", "hf", "lightning", "timm", "keras"], n_pts=int(LU(rng, 200, 5000)) if rng.random() < 0.7 else None)
    p = ctx["p"]
    lf = LU(rng, 1e-3, 0.3)
    ctx["lf"] = lf
    ctx["train_mean"] = lf + (ctx["l0"] - lf) * np.exp(-p / U(rng, 0.03, 0.08))
    ctx["val_mean"] = ctx["train_mean"] * 1.05 + lf * 0.3
    ctx["sig"] = U(rng, 0.005, 0.02)
    emit_standard(rng, R, P, ctx)
    return P["style"], R, healthy_label(
        P, R, ctx, "a small, easy problem (PDE surrogate / tabular regression) trained well past "
        "convergence", "the last 60-80% of the run is a flat converged floor; val tracks it",
        ["loss_plateau", "val_stall", "loss_constant", "overfitting", "val_constant"])


def h_scurve(rng):
    P, R, ctx = base(rng, ["custom", "lightning", "hf"], K=2, lr_kind="const_warm")
    p = ctx["p"]
    pc = U(rng, 0.15, 0.4)
    c = LN(2)
    ctx["train_mean"] = 0.02 + (c - 0.02) / (1 + np.exp((p - pc) / 0.02))
    ctx["val_mean"] = ctx["train_mean"] * 1.05
    ctx["sig"] = 0.01
    ctx["amax"] = 0.99
    emit_standard(rng, R, P, ctx)
    return P["style"], R, healthy_label(
        P, R, ctx, "sparse parity (n=40, k=3) with an MLP: a long flat phase at ln 2 while the "
        "network finds the features, then a sharp drop", "the loss sits at ln 2 = 0.693 for "
        "the first %.0f%% of the run (looks like chance / a plateau), then drops" % (100 * pc),
        ["loss_at_chance", "loss_plateau", "loss_constant", "non_finite_loss", "val_stall",
         "val_constant"])


def h_noisy_small_batch(rng):
    P, R, ctx = base(rng, ["hf", "custom", "lightning"], every=1, n_pts=int(LU(rng, 800, 3000)))
    ctx["sig"] = U(rng, 0.2, 0.35)
    ctx["noise_kind"] = pick(rng, ["heavy", "mixed"])
    emit_standard(rng, R, P, ctx, gn=grad_norm_healthy(rng, ctx) * np.exp(rng.normal(0, 0.3, P["total"])))
    return P["style"], R, healthy_label(
        P, R, ctx, "batch size 2-4 fine-tuning with the per-step loss logged (no smoothing)",
        "heavy-tailed per-step noise: single points 3-5x the median appear and vanish",
        ["loss_spikes", "loss_oscillation", "loss_divergence", "grad_explosion", "non_finite_loss"])


def h_elbo(rng):
    style = pick(rng, ["custom", "lightning"])
    P = plan(rng, style)
    R, ctx = supervised(rng, P)
    log = P["log"]
    n = len(log)
    x = np.arange(n) / (n - 1)
    a, b = -LU(rng, 1e3, 6e5), LU(rng, 1e3, 4e6)
    elbo = a + (b - a) * (1 - np.exp(-x / U(rng, 0.05, 0.2)))
    elbo = elbo + rng.normal(0, 0.01, n) * abs(b)
    tag = pick(rng, ["train_elbo", "elbo", "train/elbo", "objective/elbo"])
    R.add(tag, log, elbo, "objective_maximised")
    rec = pick(rng, ["recon_loss", "train/recon_loss"])
    rl = 300 * (0.3 + 0.7 * np.exp(-x / 0.1)) * np.exp(rng.normal(0, 0.03, n))
    R.add(rec, log, rl, "train_loss")
    kl = 5 + 40 * (1 - np.exp(-x / 0.2)) + rng.normal(0, 1, n)
    R.add(pick(rng, ["kl", "train/kl_div"]), log, kl)
    ctx["tv"] = rl
    P["tl"] = rec
    return style, R, label(style, "beta-TCVAE on dSprites; the ELBO is maximised, the "
                           "reconstruction loss minimised, the KL term grows as the latents "
                           "get used", [], ["loss_divergence", "non_finite_loss", "loss_spikes"],
                           None, R.tags,
                           "TRAP: %s is maximised and rises through zero: %s. %s falls: %s; "
                           "the KL rises from ~5 to ~45 (expected)." % (
                               tag, describe(log, elbo, hib=True), rec, describe(log, rl)))


def h_detectron_nan_ap(rng):
    P = plan(rng, "detectron2", n_pts=int(LU(rng, 100, 3000)))
    R, ctx = supervised(rng, P, l0=U(rng, 1.8, 3.0), lf=U(rng, 0.2, 0.5), lr_kind="step",
                        milestones=[0.67, 0.89])
    ctx["lr"] = step_sched(P["total"], 0.02, [int(0.67 * P["total"]), int(0.89 * P["total"])],
                           warm=min(1000, P["total"] // 10))
    emit_standard(rng, R, P, ctx, val=False)
    log, ev = P["log"], P["ev"]
    tm = ctx["train_mean"][log]
    frac = np.array([0.25, 0.35, 0.1, 0.2, 0.1])
    for t, f in zip(["loss_cls", "loss_box_reg", "loss_rpn_cls", "loss_rpn_loc", "loss_mask"], frac):
        R.add(t, log, tm * f * np.exp(rng.normal(0, 0.08, len(log))))
    R.add("fast_rcnn/cls_accuracy", log, np.clip(0.8 + 0.17 * (1 - tm / tm[0]), 0, 1))
    R.add("data_time", log, 0.004 * np.exp(rng.normal(0, 0.4, len(log))))
    add_sys(rng, R, P, "time", tagset=("time", "s"))
    R.add("eta_seconds", log, (P["total"] - log) * R.sec)
    for t in ["bbox/APs", "bbox/APm", "bbox/APl", "bbox/AP-%s" % pick(rng, ["bus", "giraffe", "crack"])]:
        R.add(t, ev, np.full(len(ev), np.nan) if t in ("bbox/APl", "bbox/AP-bus", "bbox/AP-giraffe",
                                                      "bbox/AP-crack") else
              np.clip(ctx["va"] * U(rng, 0.5, 1.2), 0, 100))
    R.add("bbox/AP50", ev, np.clip(ctx["va"] * 1.6, 0, 100))
    return "detectron2", R, healthy_label(
        P, R, ctx, "Faster R-CNN fine-tune on a small dataset with no large objects and one "
        "class absent from val", "bbox/APl and one per-class AP are NaN at every evaluation "
        "(empty buckets), the losses are finite; total_loss = sum of the components",
        ["non_finite_loss", "val_constant", "loss_divergence", "lr_schedule_misaligned"])


def h_counters(rng):
    P, R, ctx = base(rng, ["custom", "megatron", "nanogpt", "hf", "fairseq"])
    emit_standard(rng, R, P, ctx)
    log = P["log"]
    bs = int(pick(rng, [32, 256, 512, 1024]))
    cnt = pick(rng, [("train/samples_seen", log * bs), ("tokens_seen", log * bs * 1024.0),
                     ("consumed-samples", log * bs), ("num_updates", log.astype(float))])
    R.add(cnt[0], log, cnt[1])
    R.add(pick(rng, ["total_time_s", "train/time_ms", "train_wall", "time/elapsed_hours"]), log,
          R.wall(log) - R.t0)
    R.add(pick(rng, ["train/step_avg_ms", "perf/avg_iter_ms"]), log,
          1000 * R.sec * (1 + 30 / (np.arange(len(log)) + 1)))
    return P["style"], R, healthy_label(
        P, R, ctx, "a healthy run that also logs monotonic counters and a cumulative average",
        "%s and a total-time tag only grow (counters), the step_avg tag is a cumulative mean that "
        "falls from a compile-inflated start" % cnt[0],
        ["loss_divergence", "step_time_creep", "memory_growth", "loss_constant"])


def h_yolo(rng):
    P = plan(rng, "yolo")
    R, ctx = supervised(rng, P, l0=U(rng, 1.5, 2.5), lf=U(rng, 0.5, 1.0), lr_kind="lin")
    E = P["total"]
    s = np.arange(E)
    lr = np.where(s < 3, 0.1 - (0.1 - 0.01) * s / 3, 0.01 * (1 - s / E) + 1e-4)
    ctx["lr"] = lr
    m = ctx["train_mean"].copy()
    m[:4] *= np.array([1.0, 1.15, 1.2, 1.05])[:min(4, E)]
    ctx["train_mean"] = m
    ctx["val_mean"] = m * 0.9
    ctx["amax"] = U(rng, 0.4, 0.9)
    emit_standard(rng, R, P, ctx)
    log = P["log"]
    for t, f in [("train/cls_loss", U(rng, 0.6, 1.5)), ("train/dfl_loss", U(rng, 0.9, 1.3))]:
        R.add(t, log, ctx["tv"] * f * np.exp(rng.normal(0, 0.02, len(log))))
        R.add(t.replace("train", "val"), log, ctx["vv"] * f * np.exp(rng.normal(0, 0.04, len(log))))
    R.add("metrics/precision(B)", log, np.clip(ctx["va"] * 1.3, 0, 1))
    R.add("metrics/recall(B)", log, np.clip(ctx["va"] * 1.2, 0, 1))
    return "yolo", R, healthy_label(
        P, R, ctx, "Ultralytics YOLOv8 default recipe (3 warmup epochs, bias LR from 0.1)",
        "lr/pg0 starts at 0.1 and falls during warmup while the box loss rises for 2-3 epochs",
        ["lr_schedule_misaligned", "loss_divergence", "loss_spikes", "overfitting", "val_stall"])


def h_noisy_val(rng):
    P, R, ctx = base(rng, ["lightning", "hf", "keras", "timm", "custom"])
    ctx["vsig"] = U(rng, 0.06, 0.12)
    emit_standard(rng, R, P, ctx)
    return P["style"], R, healthy_label(
        P, R, ctx, "validation set of 64 examples: every evaluation is noisy",
        "val loss jumps +-10-25% between evaluations around a falling trend",
        ["loss_spikes", "overfitting", "loss_oscillation", "val_stall"])


def h_components(rng):
    style = pick(rng, ["mmdet", "custom", "detectron2"])
    P = plan(rng, style)
    R, ctx = supervised(rng, P)
    emit_standard(rng, R, P, ctx, val=False, val_acc=False)
    log = P["log"]
    tv = ctx["tv"]
    w = rng.dirichlet([2, 2, 2])
    names = {"mmdet": ["train/loss_cls", "train/loss_bbox", "train/loss_iou"],
             "detectron2": ["loss_cls", "loss_box_reg", "loss_rpn_loc"],
             "custom": ["Loss/classification_loss", "Loss/localization_loss",
                        "Loss/regularization_loss"]}[style]
    for nme, wi in zip(names, w):
        R.add(nme, log, tv * wi)
    return style, R, healthy_label(P, R, ctx, "detector with three loss terms logged next to "
                                   "their sum", "components sum to the total; the regulariser "
                                   "share is nearly flat", ["loss_constant", "loss_plateau",
                                                            "loss_divergence"])


def h_cosine_zero(rng):
    P, R, ctx = base(rng, ["hf", "timm", "lightning", "nanogpt", "custom"], lr_kind="cos")
    ctx["lr"] = cos_sched(P["total"], ctx["peak"], ctx["warm"], end_frac=0.0)
    emit_standard(rng, R, P, ctx)
    return P["style"], R, healthy_label(
        P, R, ctx, "cosine schedule to exactly 0 at the last step", "LR ends at 0 together with "
        "the run; the loss flattens in the last 10% (low LR)",
        ["lr_schedule_misaligned", "loss_plateau", "loss_constant"])


def h_compile_spike(rng):
    P, R, ctx = base(rng, ["nanogpt", "custom", "megatron", "detectron2", "mmdet"])
    emit_standard(rng, R, P, ctx)
    tag, vals, unit = add_sys(rng, R, P, "time", spike=True)
    return P["style"], R, healthy_label(
        P, R, ctx, "torch.compile: the first logged step time includes compilation",
        "%s is 20-200x higher at the first point only, flat afterwards (%s)" % (
            tag, describe(P["log"], vals)), ["step_time_creep", "loss_spikes"])


def h_memory_plateau(rng):
    P, R, ctx = base(rng, ["mmdet", "megatron", "custom", "hf", "lightning"])
    emit_standard(rng, R, P, ctx)
    tag, vals, unit = add_sys(rng, R, P, "memory", leak=0.0)
    return P["style"], R, healthy_label(
        P, R, ctx, "caching allocator warm-up then steady state", "%s (%s) rises in the first "
        "1-3%% of the run then stays flat (%s)" % (tag, unit, describe(P["log"], vals)),
        ["memory_growth", "step_time_creep"])


def h_epoch_small_drops(rng):
    style = pick(rng, ["hf", "lightning", "custom"])
    spe_pts = int(rng.integers(15, 60))
    n_ep = int(rng.integers(3, 12))
    every = pick(rng, [5, 10, 20])
    P = plan(rng, style, n_pts=spe_pts * n_ep, every=every)
    P["epoch_steps"] = spe_pts * every
    R, ctx = supervised(rng, P)
    log = P["log"]
    n = len(log)
    ep = np.arange(n) // spe_pts
    d = U(rng, 0.03, 0.08)
    tv = ctx["train_mean"][log] * (1 - d) ** ep * np.exp(rng.normal(0, 0.04, n))
    emit_standard(rng, R, P, ctx, tvals=tv)
    return style, R, healthy_label(
        P, R, ctx, "multi-epoch fine-tune with shuffling: the model has seen each example once "
        "more at every epoch", "a small (%.0f%%) step down at each epoch start, no tooth within "
        "epochs" % (100 * d), ["epoch_boundary_jumps", "loss_oscillation", "overfitting"])


def h_resume(rng):
    P, R, ctx = base(rng, ["custom", "hf", "detectron2", "megatron"], n_pts=int(LU(rng, 300, 3000)))
    log = P["log"]
    n = len(log)
    k = int(n * U(rng, 0.3, 0.7))
    back = int(rng.integers(3, max(4, k // 5)))
    tv, _ = apply_noise(rng, ctx["train_mean"][log], ctx["sig"])
    # first segment: up to k; second: resumes from the checkpoint at k-back and re-logs
    st2 = log[k - back:]
    tv2, _ = apply_noise(rng, ctx["train_mean"][st2], ctx["sig"])
    walls1 = R.wall(log[:k])
    gap = U(rng, 600, 20000)
    walls2 = walls1[-1] + gap + (st2 - st2[0]) * R.sec
    R.add(P["tl"], log[:k], tv[:k], "train_loss", walls=walls1)
    R.add(P["tl"], st2, tv2, walls=walls2)
    R.add(P["lr"], log[:k], ctx["lr"][log[:k]], "lr", walls=walls1)
    R.add(P["lr"], st2, ctx["lr"][st2], walls=walls2)
    P2 = dict(P)
    ctx["tv"] = np.concatenate([tv[:k], tv2])
    P2["log"] = np.concatenate([log[:k], st2])
    return P["style"], R, healthy_label(
        P2, R, ctx, "preempted job resumed from the last checkpoint (%d logged points before "
        "the preemption) " % back, "the step goes back from %d to %d at the resume (wall-time "
        "gap %.0f s) and the loss points are logged twice for that range" % (
            log[k - 1], st2[0], gap), ["loss_spikes", "loss_divergence", "non_finite_loss",
                                       "lr_schedule_misaligned", "epoch_boundary_jumps"])


def h_keras(rng):
    P = plan(rng, "keras", n_pts=int(rng.integers(10, 50)))
    R, ctx = supervised(rng, P)
    R.sec = U(rng, 10, 300)
    ctx["gap"] = U(rng, 0.0, 0.1)
    emit_standard(rng, R, P, ctx)
    return "keras", R, healthy_label(
        P, R, ctx, "Keras CNN, TensorBoard callback, per-epoch scalars only", "only %d points "
        "(one per epoch), val slightly above train" % len(P["log"]),
        ["overfitting", "val_stall", "loss_plateau", "lr_schedule_misaligned", "loss_constant"])


def h_rl(rng):
    P = plan(rng, "sb3", n_pts=int(rng.integers(80, 400)))
    R, ctx = supervised(rng, P)
    log = P["log"]
    n = len(log)
    x = np.arange(n) / (n - 1)
    rew = -150 + U(rng, 200, 500) / (1 + np.exp(-(x - U(rng, 0.2, 0.5)) / 0.08))
    R.add("rollout/ep_rew_mean", log, rew + rng.normal(0, 10, n))
    R.add("rollout/ep_len_mean", log, 200 + 300 * x + rng.normal(0, 10, n))
    vl = 50 * np.exp(noise(rng, n, "heavy", 0.5)) * (1 + 3 * x)
    R.add("train/value_loss", log, vl)
    loss = vl * 0.25 - 0.01 + rng.normal(0, 1, n)
    R.add("train/loss", log, loss, "train_loss")
    R.add("train/policy_gradient_loss", log, -0.01 + rng.normal(0, 0.004, n))
    R.add("train/entropy_loss", log, -1.4 + 0.8 * x + rng.normal(0, 0.02, n))
    R.add("train/approx_kl", log, np.abs(0.01 + rng.normal(0, 0.004, n)))
    R.add("train/clip_fraction", log, np.clip(0.12 + rng.normal(0, 0.03, n), 0, 1))
    R.add("train/clip_range", log, np.full(n, 0.2))
    R.add("train/learning_rate", log, np.full(n, 3e-4), "lr")
    R.add("train/explained_variance", log, np.clip(0.2 + 0.7 * x + rng.normal(0, 0.05, n), -1, 1))
    R.add("time/fps", log, 1500 * np.exp(rng.normal(0, 0.03, n)))
    return "sb3", R, label("sb3", "PPO on a continuous-control task learning normally", [],
                           ["loss_divergence", "non_finite_loss", "lr_schedule_misaligned",
                            "loss_spikes", "loss_plateau"], None, R.tags,
                           "TRAP: train/loss is not a supervised loss: it grows with the returns "
                           "(value loss scale rises 4x as rewards grow) and is noisy; constant LR "
                           "3e-4 is the PPO default. train/loss: %s; rollout/ep_rew_mean rises "
                           "-150 -> %.0f." % (describe(log, loss), rew[-1]))


def h_gan(rng):
    style = pick(rng, ["custom", "lightning"])
    P = plan(rng, style)
    R, ctx = supervised(rng, P)
    log = P["log"]
    n = len(log)
    x = np.arange(n) / (n - 1)
    d = 0.3 + (2 * LN(2) - 0.35) * (1 - np.exp(-x / 0.3))
    d = d * np.exp(rng.normal(0, 0.08, n))
    g = 3.0 - 1.8 * (1 - np.exp(-x / 0.2))
    g = g * np.exp(rng.normal(0, 0.1, n))
    td, tg = pick(rng, [("loss_D", "loss_G"), ("D Loss", "G Loss"), ("disc/loss", "gen/loss")])
    R.add(td, log, d, "train_loss")
    R.add(tg, log, g)
    R.add(pick(rng, ["lr_G", "lr"]), log, np.full(n, 2e-4), "lr")
    return style, R, label(style, "DCGAN, Adam 2e-4 constant (the standard recipe)", [],
                           ["loss_divergence", "lr_schedule_misaligned", "non_finite_loss",
                            "loss_spikes"], None, R.tags,
                           "TRAP: the discriminator loss rises towards the 2 ln 2 = 1.386 "
                           "equilibrium (%s) while the generator loss falls (%s): a GAN "
                           "converging, not divergence; the LR is constant by design." % (
                               describe(log, d), describe(log, g)))


def h_step_decay(rng):
    P, R, ctx = base(rng, ["timm", "custom", "detectron2", "lightning", "keras"], lr_kind="step",
                     milestones=[0.33, 0.66, 0.9])
    emit_standard(rng, R, P, ctx)
    return P["style"], R, healthy_label(
        P, R, ctx, "ResNet on ImageNet-style schedule: LR x0.1 at 1/3, 2/3 and 90% of the run",
        "the loss drops in steps at each LR decay and flattens between them",
        ["loss_plateau", "lr_schedule_misaligned", "epoch_boundary_jumps", "val_stall",
         "loss_spikes"])


def h_fairseq(rng):
    P = plan(rng, "fairseq")
    R, ctx = supervised(rng, P, l0=U(rng, 10, 14), lf=U(rng, 3, 5))
    T = P["total"]
    warm = int(min(4000, T * 0.1))
    s = np.arange(T)
    ctx["lr"] = np.where(s < warm, ctx["peak"] * (s + 1) / warm,
                         ctx["peak"] * np.sqrt(warm / np.maximum(s, 1)))
    gn = grad_norm_healthy(rng, ctx, level=U(rng, 0.5, 3))
    emit_standard(rng, R, P, ctx, gn=gn)
    log = P["log"]
    n = len(log)
    R.add("nll_loss", log, ctx["tv"] * 0.9)
    R.add("ppl", log, 2 ** (ctx["tv"] * 0.9))
    R.add("wps", log, 3e4 * np.exp(rng.normal(0, 0.05, n)))
    R.add("ups", log, 7 * np.exp(rng.normal(0, 0.05, n)))
    R.add("wpb", log, 4000 + rng.normal(0, 50, n))
    R.add("clip", log, np.where(gn[log] > 1.0, 100.0, 0.0) * (rng.random(n) < 0.3), "clip_fraction")
    R.add("loss_scale", log, 2.0 ** rng.integers(3, 8, n))
    R.add("train_wall", log, R.wall(log) - R.t0)
    return "fairseq", R, healthy_label(
        P, R, ctx, "fairseq transformer, inverse-sqrt schedule, loss in base 2",
        "loss in bits starts at ~%.0f, ppl = 2^nll spans orders of magnitude, clip is a percentage "
        "that is 0 on most points, train_wall is a clock" % ctx["l0"],
        ["loss_divergence", "grad_clip_saturation", "lr_schedule_misaligned", "step_time_creep"])


def h_init_artefact(rng):
    P, R, ctx = base(rng, ["custom", "megatron", "nanogpt", "hf"])
    log = P["log"]
    tv, _ = apply_noise(rng, ctx["train_mean"][log], ctx["sig"])
    tv[0] = tv[0] * LU(rng, 50, 500)
    emit_standard(rng, R, P, ctx, tvals=tv)
    return P["style"], R, healthy_label(
        P, R, ctx, "unscaled output layer at init (muP-style zero-init missing): the very first "
        "loss is huge, normal from the second logged point on", "first point %.3g is %.0fx the "
        "second" % (tv[0], tv[0] / tv[1]), ["loss_spikes", "loss_divergence", "non_finite_loss"])


def h_short(rng):
    style = pick(rng, ["keras", "timm", "lightning", "custom", "yolo"])
    P = plan(rng, style, n_pts=int(rng.integers(20, 30)))
    R, ctx = supervised(rng, P)
    emit_standard(rng, R, P, ctx)
    return style, R, healthy_label(P, R, ctx, "a short run: %d points" % len(P["log"]),
                                   "only %d points; everything improves" % len(P["log"]),
                                   ["loss_plateau", "overfitting", "val_stall",
                                    "lr_schedule_misaligned"])


def h_irregular(rng):
    P, R, ctx = base(rng, ["custom", "hf"], every=1, n_pts=int(LU(rng, 2000, 10000)))
    log = P["log"]
    keep = np.sort(rng.choice(len(log), size=int(len(log) * U(rng, 0.03, 0.15)), replace=False))
    P["log"] = log[keep]
    ev = P["ev"]
    emit_standard(rng, R, P, ctx)
    return P["style"], R, healthy_label(
        P, R, ctx, "logging on a wall-clock timer (every ~30 s), so steps are irregular",
        "irregular step gaps between logged points", ["loss_spikes", "stale_run", "loss_plateau"])


def h_offset(rng):
    first = pick(rng, [1000, 5000, 120000])
    style = pick(rng, ["custom", "megatron", "hf"])
    P = plan(rng, style, first=first)
    R, ctx = supervised(rng, P, l0=U(rng, 2.5, 3.5), lf=U(rng, 1.8, 2.4))
    T = P["total"]
    lf, l0 = ctx["lf"], ctx["l0"]
    s = np.arange(T)
    ctx["train_mean"] = lf + (l0 - lf) * (1 + np.maximum(s - first, 0) / ((T - first) * 0.2)) ** -0.8
    ctx["val_mean"] = ctx["train_mean"] * 1.02
    ctx["lr"] = cos_sched(T, ctx["peak"], 0, end_frac=0.1)
    P["va"] = None
    emit_standard(rng, R, P, ctx, gn=grad_norm_healthy(rng, ctx))
    return style, R, healthy_label(
        P, R, ctx, "continued pre-training from a checkpoint at step %d" % first,
        "the first logged step is %d, loss already low and slowly improving" % first,
        ["loss_plateau", "loss_constant", "lr_schedule_misaligned", "val_stall"])


def h_clip_some(rng):
    P, R, ctx = base(rng, ["hf", "megatron", "custom", "lightning"])
    gn = grad_norm_healthy(rng, ctx, level=U(rng, 0.3, 0.8))
    emit_standard(rng, R, P, ctx, gn=gn)
    frac = float(np.mean(gn[P["log"]] > 1.0))
    return P["style"], R, healthy_label(
        P, R, ctx, "max_grad_norm 1.0 with a typical grad norm below it",
        "%.0f%% of the points have grad norm above the usual 1.0 clip (early steps mostly); "
        "grad norm falls 2-3x from its start: normal" % (100 * frac),
        ["grad_clip_saturation", "grad_vanishing", "grad_explosion"],
        extra="%s: %s." % (P["gn"], describe(P["log"], gn[P["log"]])))


def h_mmdet_full(rng):
    P = plan(rng, "mmdet")
    R, ctx = supervised(rng, P, l0=U(rng, 1.5, 3), lf=U(rng, 0.3, 0.8), lr_kind="step",
                        milestones=[0.67, 0.92])
    emit_standard(rng, R, P, ctx, val=False, gn=grad_norm_healthy(rng, ctx, level=U(rng, 5, 40)))
    add_sys(rng, R, P, "time", tagset=("train/time", "s"))
    add_sys(rng, R, P, "memory", tagset=("train/memory", "MB"))
    R.add("train/data_time", P["log"], 0.01 * np.exp(rng.normal(0, 0.5, len(P["log"]))))
    R.add("train/iter", P["log"], P["log"].astype(float))
    return "mmdet", R, healthy_label(
        P, R, ctx, "mmdetection 1x schedule (LR x0.1 at epochs 8 and 11)",
        "grad norm 5-40 is normal for detectors (no clip in the 1x config); train/iter is a "
        "counter; train/memory flat in MB", ["grad_explosion", "memory_growth", "loss_plateau",
                                             "step_time_creep"])


def h_megatron(rng):
    P = plan(rng, "megatron", n_pts=int(LU(rng, 2000, 20000)), every=pick(rng, [1, 10]))
    R, ctx = supervised(rng, P, l0=U(rng, 10.5, 11.2), lf=U(rng, 2.2, 3.2), lr_kind="cos")
    T = P["total"]
    ctx["lr"] = cos_sched(T, ctx["peak"], int(T * 0.01), end_frac=0.1)
    ctx["sig"] = U(rng, 0.01, 0.03)
    gn = grad_norm_healthy(rng, ctx, level=U(rng, 0.2, 1.0))
    emit_standard(rng, R, P, ctx, lr=False)
    R.add("learning-rate", P["log"][::10], ctx["lr"][P["log"][::10]], "lr")
    R.add("grad-norm", P["log"][::10], gn[P["log"][::10]], "grad_norm")
    # the side tags on a 10x coarser grid (Megatron's log interval for them)
    log = P["log"][::10]
    n = len(log)
    R.add("loss-scale", log, 2.0 ** np.minimum(16, 10 + np.arange(n) // max(1, n // 8)))
    R.add("batch-size", log, np.full(n, 512.0))
    R.add("lm loss vs samples", log * 512, ctx["tv"][::10])
    R.add("num-zeros", log, np.abs(rng.normal(0, 2, n)).round())
    P10 = dict(P, log=log)
    add_sys(rng, R, P10, "time", tagset=("iteration-time", "s"))
    return "megatron", R, healthy_label(
        P, R, ctx, "GPT pre-training with Megatron-LM, cosine to 10%%, %d logged iterations" % n,
        "a long run; 'lm loss vs samples' has the same values on a samples axis; loss-scale "
        "doubles in steps", ["loss_plateau", "loss_spikes", "lr_schedule_misaligned",
                             "loss_at_chance"])


def h_contrastive(rng):
    style = pick(rng, ["custom", "lightning"])
    P = plan(rng, style)
    B = pick(rng, [256, 1024, 4096])
    R, ctx = supervised(rng, P, l0=LN(B) * 1.0, lf=LN(B) * U(rng, 0.25, 0.5))
    P["tl"] = pick(rng, ["loss/infonce", "train/contrastive_loss", "nt_xent"])
    P["va"] = pick(rng, ["knn_acc", "val/linear_probe_acc"])
    P["vl"] = None
    ctx["K"] = 100
    emit_standard(rng, R, P, ctx)
    return style, R, healthy_label(
        P, R, ctx, "SimCLR-style pre-training with batch %d: InfoNCE starts at ln(batch)=%.2f "
        "and settles well above 0" % (B, LN(B)), "first loss = ln(batch) looks like chance "
        "level; the floor is ~%.2f, not 0" % ctx["lf"],
        ["loss_at_chance", "loss_plateau", "loss_divergence"])


SICK = [  # (family, how many per seed: low, high) -> about 60 sick runs
    (fam_nan_midrun, 2, 2), (fam_nan_first, 1, 1), (fam_nan_sparse, 1, 1),
    (fam_div_up, 2, 3), (fam_div_down, 2, 2), (fam_div_rl, 1, 1),
    (fam_spikes_recurring, 1, 2), (fam_spikes_norecover, 1, 1), (fam_spikes_val, 1, 1),
    (fam_spikes_short, 1, 2),
    (fam_plateau, 3, 3), (fam_constant, 3, 3), (fam_at_chance, 5, 5), (fam_oscillation, 3, 4),
    (fam_overfit, 4, 5), (fam_val_stall, 3, 4), (fam_val_constant, 3, 3),
    (fam_lr_misaligned, 4, 4), (fam_epoch_sawtooth, 3, 4), (fam_grad_explosion, 3, 3),
    (fam_grad_vanishing, 3, 3), (fam_clip_sat, 3, 3), (fam_step_time_creep, 3, 3),
    (fam_memory_growth, 3, 3), (fam_grokking, 1, 1),
]
HEALTHY = [  # -> about 30 healthy runs, each with a trap
    (h_warmup_decay, 2, 2), (h_converged_floor, 1, 2), (h_scurve, 1, 1), (h_noisy_small_batch, 1, 2),
    (h_elbo, 1, 1), (h_detectron_nan_ap, 1, 1), (h_counters, 1, 1), (h_yolo, 1, 1),
    (h_noisy_val, 1, 1), (h_components, 1, 1), (h_cosine_zero, 1, 1), (h_compile_spike, 1, 1),
    (h_memory_plateau, 1, 1), (h_epoch_small_drops, 1, 1), (h_resume, 1, 1), (h_keras, 1, 1),
    (h_rl, 1, 1), (h_gan, 1, 1), (h_step_decay, 1, 1), (h_fairseq, 1, 1), (h_init_artefact, 1, 1),
    (h_short, 1, 2), (h_irregular, 1, 1), (h_offset, 1, 1), (h_clip_some, 1, 1),
    (h_mmdet_full, 1, 1), (h_megatron, 1, 1), (h_contrastive, 1, 1),
]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--converter", required=True)
    a = ap.parse_args()
    rng = np.random.default_rng(a.seed)
    jobs = []
    at_chance_K = list(rng.permutation([2, 10, 100, 1000, "vocab"]))
    for fam, lo, hi in SICK:
        for _ in range(int(rng.integers(lo, hi + 1))):
            jobs.append(fam)
    for fam, lo, hi in HEALTHY:
        for _ in range(int(rng.integers(lo, hi + 1))):
            jobs.append(fam)
    order = rng.permutation(len(jobs))
    if os.path.exists(a.out):
        shutil.rmtree(a.out)
    os.makedirs(a.out)
    labels = {}
    tmp = tempfile.mkdtemp(prefix="blindgen")
    try:
        for i, j in enumerate(order):
            fam = jobs[j]
            sub = np.random.default_rng([a.seed, i, 7])
            for attempt in range(20):
                try:
                    if fam is fam_at_chance:
                        K = at_chance_K.pop() if at_chance_K else None
                        K = K if K == "vocab" or K is None else int(K)
                        style, R, lab = fam(sub, K)
                    else:
                        style, R, lab = fam(sub)
                    check(R, lab)
                    break
                except Redraw:
                    continue
            name = run_name(sub, style, i)
            key = name + ("/train" if style == "keras" else "/train_inner" if style == "fairseq" else "")
            if style == "fairseq":
                R.subs = {"train_inner": R.subs.pop("")}
            R.write(a.out, name, a.converter, tmp, pid=int(sub.integers(1000, 99999)))
            labels[key] = lab
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    with open(os.path.join(a.out, "labels.json"), "w") as f:
        json.dump(labels, f, indent=1, sort_keys=True)
    nsick = sum(1 for v in labels.values() if v["expect"])
    print("%d runs (%d sick, %d healthy) in %s" % (len(labels), nsick, len(labels) - nsick, a.out))


class Redraw(Exception):
    pass


def check(R, lab):
    """reject draws whose label the curve would not support"""
    if lab["onset_step"] is not None:
        steps = [st for pts in R.subs.values() for (_, _, _, st, _) in pts]
        if not (min(steps) <= lab["onset_step"] <= max(steps)):
            raise Redraw()
    if R.n_points < 10:
        raise Redraw()


if __name__ == "__main__":
    main()
