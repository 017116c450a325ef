"""Runs for the seeds' checks that came last (issue 18 part 3): validation far worse than
training from the first evaluation, a loss that falls while its accuracy stays put, and a
gradient clip that never acts.

Registered by make_cpu_runs.py (`register_all(module)`) beside runs_more.py. Each run trains
for real with the cause its name says; its notes give what it measured. Two kinds of cause per
check, in different writers' styles, so a rule tuned on one is judged on the other.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

h = None  # make_cpu_runs, set by register_all

VAL_GAP = ["val_worse_from_start"]
LOSS_ACC = ["loss_acc_disagree"]


def raw_pixels(x):
    """The template images as a camera would store them: 0-255 around a grey of 120."""
    return (x * 50.0 + 120.0).clamp(0, 255)


def val_unnormalised_inputs():
    """PyTorch style: training images are standardised ((raw - 120) / 50), the validation
    loader only divides by 255 (a ToTensor() without the Normalize that training has)."""
    r = h.Run("val_unnormalised_inputs", "pytorch",
              "SmallCNN on 4096 synthetic images, Adam 1e-3, 8 epochs; the training transform "
              "standardises the raw pixels ((x - 120) / 50) but the validation transform only "
              "divides by 255 (Normalize missing from the validation pipeline)")
    torch.manual_seed(0)
    xtr, ytr = h.image_data(4096, seed=1)
    xva, yva = h.image_data(1024, seed=2)
    xtr = (raw_pixels(xtr) - 120.0) / 50.0
    xva = raw_pixels(xva) / 255.0
    m = h.SmallCNN()
    opt = torch.optim.Adam(m.parameters(), lr=1e-3)
    rec = h.Rec(r, "pytorch", every=1)
    h.train_classifier(r, rec, m, opt, xtr, ytr, xva, yva, epochs=8, bs=64, seed=3)
    r.tags = {k: rec.t[k] for k in ("train_loss", "val_loss", "val_acc", "lr", "grad_norm")}
    return r


def keras_val_unscaled():
    """Keras style: the backbone's preprocess_input (x / 127.5 - 1) is mapped over the training
    dataset only, not made part of the model, so validation images reach it as raw 0-255
    pixels."""
    r = h.Run("keras_val_unscaled", "keras",
              "MLP on 3072 flattened synthetic images, Adam 1e-3, 12 epochs, Keras-style logs; the "
              "training dataset is mapped through preprocess_input (x / 127.5 - 1) but the "
              "validation dataset is not, so the model sees raw 0-255 pixels at evaluation")
    torch.manual_seed(0)
    xtr, ytr = h.image_data(3072, seed=1)
    xva, yva = h.image_data(768, seed=2)
    xtr = (raw_pixels(xtr) / 127.5 - 1.0).flatten(1)
    xva = raw_pixels(xva).flatten(1)
    m = h.mlp(144, 128, 10)
    opt = torch.optim.Adam(m.parameters(), lr=1e-3)
    h.keras_fit(r, m, opt, xtr, ytr, xva, yva, epochs=12, bs=64, seed=3)
    r.tags = dict(h.KERAS_TAGS)
    return r


def healthy_dropout_hf():
    """HF style, healthy: heavy dropout makes the training loss (dropout on) higher than the
    evaluation loss (dropout off); the evaluation is done right."""
    r = h.Run("healthy_dropout_hf", "hf",
              "healthy: MLP 32-256-256-10 with dropout 0.5 on a teacher task, AdamW 1e-3, 1500 "
              "steps, eval every 100 with model.eval()")
    torch.manual_seed(0)
    xtr, ytr = h.teacher_data(8192, seed=1)
    xva, yva = h.teacher_data(2048, seed=2)
    m = nn.Sequential(nn.Linear(32, 256), nn.ReLU(), nn.Dropout(0.5), nn.Linear(256, 256), nn.ReLU(),
                      nn.Dropout(0.5), nn.Linear(256, 10))
    opt = torch.optim.AdamW(m.parameters(), lr=1e-3)
    rec = h.Rec(r, "hf", every=10)
    gen = torch.Generator().manual_seed(3)
    for step in range(1, 1501):
        idx = torch.randint(0, len(xtr), (64,), generator=gen)
        loss = F.cross_entropy(m(xtr[idx]), ytr[idx])
        opt.zero_grad()
        loss.backward()
        gn = h.grad_norm(m)
        opt.step()
        rec.step(step, float(loss), lr=1e-3, gn=gn, epoch=step * 64 / len(xtr))
        if step % 100 == 0:
            vl, va = h.evaluate(m, xva, yva)
            rec.epoch_end(step, step // 100, vl, va)
    r.tags = {k: rec.t[k] for k in ("train_loss", "val_loss", "val_acc", "lr", "grad_norm", "epoch")}
    return r


class ScaledHead(nn.Module):
    """A cosine classifier with a learned temperature (CLIP-style logit scale)."""

    def __init__(self, backbone, d, k=10):
        super().__init__()
        self.backbone = backbone
        self.w = nn.Parameter(torch.randn(k, d) / d ** 0.5)
        self.logit_scale = nn.Parameter(torch.tensor(0.0))  # exp(0) = 1: underconfident at start

    def forward(self, x):
        f = F.normalize(self.backbone(x), dim=-1)
        return self.logit_scale.exp() * f @ F.normalize(self.w, dim=-1).t()


def pretrained_cosine_model(seed, xtr, ytr, steps=150):
    """A cosine classifier trained for a short while (a checkpoint that is about 60-70 %
    accurate), with its temperature reset, as a fine-tuning script loads it."""
    torch.manual_seed(seed)
    m = ScaledHead(h.mlp(32, 64, 32, depth=1), 32)
    opt = torch.optim.Adam(m.parameters(), lr=3e-3)
    gen = torch.Generator().manual_seed(seed + 1)
    for _ in range(steps):
        idx = torch.randint(0, len(xtr), (64,), generator=gen)
        loss = F.cross_entropy(m(xtr[idx]), ytr[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
    with torch.no_grad():
        m.logit_scale.zero_()
    return m


def only_temperature_trains():
    """PyTorch style: fine-tuning where the optimizer was given only the parameters whose name
    matched a no-weight-decay filter (`logit_scale`), the other group built from an empty list.
    A positive temperature cannot change any argmax: the loss falls as the model grows more
    confident, the accuracy does not move."""
    r = h.Run("only_temperature_trains", "pytorch",
              "fine-tuning a cosine classifier from a checkpoint, Adam 1e-2, 800 steps; the "
              "optimizer holds only logit_scale (the weight-decay group was built from an "
              "empty list), so only the temperature learns: loss falls, argmax never changes")
    xtr, ytr = h.teacher_data(8192, seed=1)
    xva, yva = h.teacher_data(2048, seed=2)
    m = pretrained_cosine_model(0, xtr, ytr)
    decay = [p for n, p in m.named_parameters() if "scale" not in n and False]  # the bug
    opt = torch.optim.Adam([{"params": decay, "weight_decay": 0.01},
                            {"params": [m.logit_scale], "weight_decay": 0.0}], lr=1e-2)
    rec = h.Rec(r, "pytorch", every=5)
    gen = torch.Generator().manual_seed(3)
    for step in range(1, 801):
        idx = torch.randint(0, len(xtr), (64,), generator=gen)
        out = m(xtr[idx])
        loss = F.cross_entropy(out, ytr[idx])
        opt.zero_grad()
        loss.backward()
        gn = h.grad_norm(m)
        opt.step()
        rec.step(step, float(loss), lr=1e-2, gn=gn, extra={"Accuracy/train": h.accuracy(out, ytr[idx])}
                 if step % 5 == 0 else None)
        if step % 50 == 0:
            vl, va = h.evaluate(m, xva, yva)
            rec.epoch_end(step, step // 50, vl, va)
    r.tags = {k: rec.t[k] for k in ("train_loss", "train_acc", "val_loss", "val_acc", "lr", "grad_norm")}
    return r


def keras_frozen_all_but_temperature():
    """Keras style: transfer learning with `trainable = False` set on every layer, the new
    head's included, so only the temperature variable (created outside the layers) trains."""
    r = h.Run("keras_frozen_all_but_temperature", "keras",
              "Keras-style fine-tuning of a checkpoint (cosine classifier, ~65 % accurate) with "
              "every layer frozen, the new head's too (a loop over model.layers instead of "
              "base_model.layers); only the temperature variable trains, Adam 1e-2, 15 epochs")
    xtr, ytr = h.teacher_data(6144, seed=4)
    xva, yva = h.teacher_data(1536, seed=5)
    m = pretrained_cosine_model(7, xtr, ytr)
    for p in m.parameters():
        p.requires_grad_(False)
    m.logit_scale.requires_grad_(True)
    opt = torch.optim.Adam([m.logit_scale], lr=1e-2)
    h.keras_fit(r, m, opt, xtr, ytr, xva, yva, epochs=15, bs=64, seed=3)
    r.tags = dict(h.KERAS_TAGS)
    return r


def clip_never_active():
    """HF style: max_grad_norm=10 copied from a recipe for a larger model; this MLP's pre-clip
    gradient norm never comes near it, so the clip never acts (a reviewer's remark, not an
    alarm: training is stable)."""
    r = h.Run("clip_never_active", "hf",
              "MLP on a teacher task, SGD lr 0.05 momentum 0.9, 2 epochs of 16384 samples, "
              "max_grad_norm=10 (from a recipe for a larger model): the pre-clip gradient norm "
              "stays far below it, so clip_grad_norm_ never rescales an update")
    torch.manual_seed(0)
    xtr, ytr = h.teacher_data(16384, seed=1)
    xva, yva = h.teacher_data(2048, seed=2)
    m = h.mlp(32, 128, h.K)
    opt = torch.optim.SGD(m.parameters(), lr=0.05, momentum=0.9)
    rec = h.Rec(r, "hf", every=5)
    gen = torch.Generator().manual_seed(3)
    step = 0
    for ep in range(2):
        for idx in h.batches(len(xtr), 64, gen):
            step += 1
            loss = F.cross_entropy(m(xtr[idx]), ytr[idx])
            opt.zero_grad()
            loss.backward()
            gn = float(torch.nn.utils.clip_grad_norm_(m.parameters(), 10.0))
            opt.step()
            rec.step(step, float(loss), lr=0.05, gn=gn, epoch=step / 256,
                     extra=({"max_grad_norm": 10.0} if step % 5 == 0 else None))
        vl, va = h.evaluate(m, xva, yva)
        rec.epoch_end(step, ep, vl, va)
    r.tags = {k: rec.t[k] for k in ("train_loss", "val_loss", "val_acc", "lr", "grad_norm", "epoch")}
    r.tags["clip_threshold"] = "max_grad_norm"
    return r


FP16_MAX = 65504.0


class DynamicLossScaler:
    """torch.cuda.amp.GradScaler's rule, on CPU (its own needs CUDA): the loss is multiplied by
    the scale (a float32, as GradScaler keeps it); the gradients are unscaled by its float32
    inverse; a step whose gradients are then not finite, or whose scaled gradients were beyond
    float16's range (what a float16 gradient buffer would hold as inf), is skipped and the
    scale halved; after `growth_interval` clean steps in a row it doubles."""

    def __init__(self, scale=2.0 ** 16, growth_interval=2000):
        self.scale, self.growth_interval, self.good = scale, growth_interval, 0

    @staticmethod
    def f32(v):
        return float(torch.tensor(v, dtype=torch.float32))

    def step(self, model, opt, loss):
        opt.zero_grad()
        (loss * torch.tensor(self.scale, dtype=torch.float32)).backward()
        inv = torch.tensor(1.0, dtype=torch.float32) / torch.tensor(self.scale, dtype=torch.float32)
        found_inf = False
        for p in model.parameters():
            if p.grad is None:
                continue
            found_inf |= bool(p.grad.abs().max() > FP16_MAX)
            p.grad.mul_(inv)
            found_inf |= not bool(torch.isfinite(p.grad).all())
        if found_inf:
            self.scale = self.f32(self.scale * 0.5)
            self.good = 0
            return False
        opt.step()
        self.good += 1
        if self.good == self.growth_interval:
            self.scale = self.f32(self.scale * 2.0)
            self.good = 0
        return True


def padded_sequences(n, length, seed):
    """Token sequences of `length` vectors; 1 % of them are shorter, padded at the end with 1-8
    all-zero positions (a collate that pads with zeros)."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, length, 16, generator=g)
    lengths = torch.where(torch.rand(n, generator=g) < 0.99, torch.full((n,), length),
                          length - torch.randint(1, 9, (n,), generator=g))
    for i in range(n):
        x[i, int(lengths[i]):] = 0.0
    w = torch.randn(16, generator=g)
    y = ((x @ w).sum(1) > 0).long()
    return x, y


class TokenMean(nn.Module):
    """Per-token projection, an L2 norm regulariser on the token features, mean pooling."""

    def __init__(self, eps):
        super().__init__()
        self.proj = nn.Linear(16, 32, bias=False)
        self.out = nn.Linear(32, 2)
        self.eps = eps

    def forward(self, x):
        f = self.proj(x)
        # The bug (eps = 0): sqrt of an all-zero padding row has an infinite derivative at 0,
        # times its zero gradient: NaN, on every batch that holds a padded sequence.
        norms = (f.pow(2).sum(-1) + self.eps).sqrt()
        return self.out(f.mean(1)), norms.mean()


def amp_scale_run(name, style, eps, cause, steps=1200, log_every=5, tag="train/loss_scale", growth=200):
    r = h.Run(name, style, cause)
    torch.manual_seed(0)
    x, y = padded_sequences(8192, 24, seed=1)
    m = TokenMean(eps)
    opt = torch.optim.Adam(m.parameters(), lr=1e-3)
    scaler = DynamicLossScaler(growth_interval=growth)
    gen = torch.Generator().manual_seed(3)
    rec = h.Rec(r, style, every=log_every)
    skipped = 0
    for step in range(1, steps + 1):
        idx = torch.randint(0, len(x), (32,), generator=gen)
        logits, norm = m(x[idx])
        loss = F.cross_entropy(logits, y[idx]) + 1e-3 * norm
        skipped += not scaler.step(m, opt, loss)
        extra = {tag: scaler.scale, "train/skipped_steps": skipped} if step % log_every == 0 else None
        rec.step(step, float(loss), lr=1e-3, extra=extra)
    r.tags = {"train_loss": rec.t["train_loss"], "lr": rec.t["lr"], "loss_scale": tag}
    r.note(f"{skipped} of {steps} steps skipped for overflow; final scale {scaler.scale:g}")
    return r


def amp_scale_halving_padding_norm():
    """A float16 run (GradScaler) whose feature-norm regulariser takes sqrt of all-zero padding
    rows: a NaN gradient on every batch that holds a padded sequence (about one in four), so
    the scale is halved far more often than it can grow back."""
    return amp_scale_run("amp_scale_halving_padding_norm", "pytorch", 0.0,
                         "token model under float16 autocast with GradScaler (emulated on CPU: same "
                         "halve-and-skip rule, growth every 200 clean steps), Adam 1e-3; a feature-norm "
                         "regulariser sqrt(sum(f^2)) without epsilon meets the all-zero padding rows of "
                         "the 1 % of sequences that are padded: a NaN gradient on about a quarter of "
                         "the batches, so clean streaks never last the 200 steps the scale needs to grow")


def healthy_amp_scale():
    """The same model with an epsilon in the norm: the scale calibrates down in the first steps
    (gradients x 2^16 beyond float16's range) and then holds, growing back now and then."""
    return amp_scale_run("healthy_amp_scale", "pytorch", 1e-6,
                         "healthy: the same float16 token model with sqrt(sum(f^2) + 1e-6): the "
                         "scale calibrates in the first steps, then halves and regrows rarely")


def amp_scale_unnormalised_inputs():
    """Lightning style, held out: raw sensor inputs (x 2000) make the gradients themselves
    exceed float16's range, so the scale falls below 1 and stays there."""
    r = h.Run("amp_scale_unnormalised_inputs", "lightning",
              "MLP regression under float16 with GradScaler (emulated on CPU, growth every 200 "
              "clean steps), Adam 1e-3, on raw sensor readings (inputs ~N(0, 2000^2), never "
              "standardised) summed-not-averaged MSE: the unscaled gradients exceed float16's "
              "range, so the scale is driven below 1")
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(1)
    x = 2000.0 * torch.randn(8192, 16, generator=g)
    y = torch.tanh(x[:, :4].sum(1, keepdim=True) / 4000.0)
    m = h.mlp(16, 64, 1)
    opt = torch.optim.Adam(m.parameters(), lr=1e-3)
    scaler = DynamicLossScaler(growth_interval=200)
    gen = torch.Generator().manual_seed(3)
    rec = h.Rec(r, "lightning", every=5)
    skipped = 0
    for step in range(1, 801):
        idx = torch.randint(0, len(x), (64,), generator=gen)
        loss = F.mse_loss(m(x[idx]), y[idx], reduction="sum")
        skipped += not scaler.step(m, opt, loss)
        rec.step(step, float(loss), lr=1e-3, extra={"grad_scale": scaler.scale} if step % 5 == 0 else None)
        if step % 5 == 0:
            r.log("lr-Adam", step, 1e-3)
    r.tags = {"train_loss": rec.t["train_loss"], "loss_scale": "grad_scale"}
    r.note(f"{skipped} of 800 steps skipped for overflow; final scale {scaler.scale:g}")
    return r


def text_records(path, n, seed):
    """n training records as lines of a text file: 16 features and a label, as a CSV export."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 16, generator=g)
    w = torch.randn(16, 4, generator=g)
    y = (x @ w).argmax(1)
    with open(path, "w") as f:
        for i in range(n):
            f.write(",".join(f"{v:.5f}" for v in x[i].tolist()) + f",{int(y[i])}\n")


def loader_throughput_run(name, cause, scan):
    """Reads each record from a text file: by scanning from the top to its line (`scan`: the
    bug of a Dataset that finds line i by counting lines) or by a byte offset kept per line
    (healthy). Logs the training loss and the loader's samples per second."""
    import os
    import tempfile
    import time
    r = h.Run(name, "custom", cause)
    torch.manual_seed(0)
    n, bs = 6000, 32
    path = os.path.join(tempfile.mkdtemp(prefix="tw_records_"), "train.csv")
    text_records(path, n, seed=1)
    offsets = []
    with open(path, "rb") as f:
        pos = 0
        for line in f:
            offsets.append(pos)
            pos += len(line)

    def record(f, i):
        if scan:
            f.seek(0)
            for j, line in enumerate(f):
                if j == i:
                    break
        else:
            f.seek(offsets[i])
            line = f.readline()
        v = line.decode().split(",")
        return [float(t) for t in v[:16]], int(v[16])

    m = h.mlp(16, 64, 4)
    opt = torch.optim.Adam(m.parameters(), lr=1e-3)
    with open(path, "rb") as f:
        for step in range(1, n // bs + 1):
            t0 = time.perf_counter()
            rows = [record(f, (step - 1) * bs + k) for k in range(bs)]  # in file order, as written
            xb = torch.tensor([a for a, _ in rows])
            yb = torch.tensor([b for _, b in rows])
            load = time.perf_counter() - t0
            loss = F.cross_entropy(m(xb), yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
            r.log("train/loss", step, float(loss))
            r.log("perf/samples_per_sec", step, bs / (time.perf_counter() - t0))
            if step % 25 == 0:
                r.log("opt/lr", step, 1e-3)
    os.remove(path)
    r.tags = {"train_loss": "train/loss", "steps_per_sec": "perf/samples_per_sec", "lr": "opt/lr"}
    return r


def loader_line_scan_throughput():
    """A Dataset that finds record i by reading the file from the top: each batch costs more
    than the one before, and samples per second fall all run long."""
    return loader_throughput_run(
        "loader_line_scan_throughput",
        "MLP on 6000 records of a CSV file read in order; the Dataset's __getitem__ finds line i "
        "by iterating the file from its start (no offset index), so loading a batch costs time "
        "proportional to how far into the file it is: samples/s fall from the first batch on",
        scan=True)


def healthy_indexed_loader_throughput():
    """The same file read through a byte offset per line: the loader's cost is flat."""
    return loader_throughput_run(
        "healthy_indexed_loader_throughput",
        "healthy: the same MLP and CSV file, each record read at its byte offset (an index built "
        "once): samples/s flat apart from the machine's load",
        scan=False)


ALL = [val_unnormalised_inputs, keras_val_unscaled, healthy_dropout_hf,
       only_temperature_trains, keras_frozen_all_but_temperature, clip_never_active,
       amp_scale_halving_padding_norm, healthy_amp_scale, amp_scale_unnormalised_inputs,
       loader_line_scan_throughput, healthy_indexed_loader_throughput]


def register_all(module):
    global h
    h = module
    for fn in ALL:
        module.register(fn)
