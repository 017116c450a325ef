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


ALL = [val_unnormalised_inputs, keras_val_unscaled, healthy_dropout_hf,
       only_temperature_trains, keras_frozen_all_but_temperature, clip_never_active]


def register_all(module):
    global h
    h = module
    for fn in ALL:
        module.register(fn)
