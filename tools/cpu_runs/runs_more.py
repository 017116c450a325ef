"""More runs for make_cpu_runs.py: spikes, oscillations, dead gradients, schedules, an RL
value loss and fairseq's clipping, each from a real cause.

Kept apart from make_cpu_runs.py (which holds the logging, data, models and the first 49 runs)
so that file stays readable; make_cpu_runs.py registers these with `register_all(module)`.
Each run takes the helpers from that module as `h`, trains for real, and labels itself only
from what it measured (the notes give the numbers).
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

h = None  # make_cpu_runs, set by register_all


def regression_data(n, seed=1):
    """A teacher regression task: x ~ N(0, 1) in 16 dimensions, y = tanh(x.w / 4) + 5% noise.
    Returns (x, y, w, generator): the generator, seeded with `seed`, drew x, w and the noise in
    that order, and the caller may go on drawing from it (a validation set from the same w)."""
    gd = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 16, generator=gd)
    w = torch.randn(16, 1, generator=gd)
    y = torch.tanh(x @ w / 4) + 0.05 * torch.randn(n, 1, generator=gd)
    return x, y, w, gd


def unit_mixup_regression_spikes():
    """HF-style long run: 1% of the training targets were recorded in grams, the rest in
    kilograms (x1000). Every batch that holds one gives an MSE hundreds of times the level."""
    r = h.Run("unit_mixup_regression_spikes", "hf",
              "MLP regression (house-weight style), MSE; 1% of the 8192 training targets were "
              "recorded in grams instead of kilograms (x1000): each batch that draws one has a "
              "loss hundreds of times the clean level, and the update it makes sets the model "
              "back")
    torch.manual_seed(0)
    n = 8192
    x, y, w, gd = regression_data(n)
    bad = torch.rand(n, generator=gd) < 0.01
    y_logged = torch.where(bad.unsqueeze(1), y * 1000.0, y)
    xva = torch.randn(1024, 16, generator=gd)
    yva = torch.tanh(xva @ w / 4)
    m = h.mlp(16, 64, 1)
    opt = torch.optim.AdamW(m.parameters(), lr=1e-3)
    rec = h.Rec(r, "hf", every=1)
    steps, bs = 600, 16
    for step in range(1, steps + 1):
        idx = torch.randint(0, n, (bs,), generator=gd)
        loss = F.mse_loss(m(x[idx]), y_logged[idx])
        opt.zero_grad()
        loss.backward()
        gn = h.grad_norm(m)
        opt.step()
        rec.step(step, float(loss), lr=1e-3, gn=gn, epoch=step * bs / n)
        if step % 100 == 0:
            with torch.no_grad():
                rec.epoch_end(step, step // 100, float(F.mse_loss(m(xva), yva)))
    r.tags = {k: rec.t[k] for k in ("train_loss", "val_loss", "lr", "grad_norm", "epoch")}
    return r


def bn_stats_val_spikes_keras(name="bn_stats_val_spikes_keras", epochs=30, bad_epochs=(6, 14, 22)):
    """Keras-style per-epoch run: a BatchNorm CNN whose loader, in some epochs, ends on a batch
    from a shard that was never normalised (x30). Training barely notices one batch, but it is
    the last one BatchNorm's running statistics see before evaluation, so the validation loss
    of those epochs jumps and comes back the epoch after."""
    r = h.Run(name, "keras",
              f"small BatchNorm CNN, Adam 1e-3, {epochs} epochs; in epochs "
              f"{', '.join(map(str, bad_epochs))} the last "
              "training batch comes from an unnormalised shard (pixels x30): BatchNorm's running "
              "mean and variance (momentum 0.1) are dragged off just before evaluation, so the "
              "validation loss of those epochs spikes while the training loss barely moves")
    torch.manual_seed(0)
    xtr, ytr = h.image_data(2048, seed=1)
    xva, yva = h.image_data(512, seed=2)
    m = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
                      nn.Conv2d(8, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
                      nn.MaxPool2d(2), nn.Flatten(), nn.Linear(16 * 3 * 3, h.K))
    opt = torch.optim.Adam(m.parameters(), lr=1e-3)
    gen = torch.Generator().manual_seed(3)
    for ep in range(epochs):
        losses, accs = [], []
        chunks = list(h.batches(len(xtr), 64, gen))
        for i, idx in enumerate(chunks):
            xb = xtr[idx]
            if ep in bad_epochs and i >= len(chunks) - 2:
                xb = xb * 30.0
            out = m(xb)
            loss = F.cross_entropy(out, ytr[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(float(loss))
            accs.append(h.accuracy(out, ytr[idx]))
        r.log("epoch_loss", ep, sum(losses) / len(losses), "train")
        r.log("epoch_accuracy", ep, sum(accs) / len(accs), "train")
        r.log("epoch_learning_rate", ep, 1e-3, "train")
        vl, va = h.evaluate(m, xva, yva)
        r.log("epoch_loss", ep, vl, "validation")
        r.log("epoch_accuracy", ep, va, "validation")
    r.tags = dict(h.KERAS_TAGS)
    return r


def bn_stats_val_spikes_frequent():
    """The same BatchNorm cause on a short run: 3 of 12 evaluations spike, too many for a
    median-based noise estimate to see them as spikes."""
    return bn_stats_val_spikes_keras("bn_stats_val_spikes_frequent", 12, (2, 5, 8))


def padded_shard_tail_spikes():
    """Invented names: each data shard of 1000 examples is served in batches of 64; the last
    40 records of every shard were written before standardisation (raw sensor values, mean 50,
    sd 30), so the short last batch of each shard has a loss far above the level."""
    r = h.Run("padded_shard_tail_spikes", "custom",
              "MLP classifier, Adam 2e-3; the last 40 records of every 1000-example shard were "
              "written before standardisation (raw values, mean 50, sd 30): every 16 steps the "
              "shard's short last batch is all raw records and its loss jumps far above the "
              "level, then the next shard's clean batches bring it back")
    torch.manual_seed(0)
    xtr, ytr = h.teacher_data(8000, seed=1)
    m = h.mlp(32, 64, h.K)
    opt = torch.optim.Adam(m.parameters(), lr=2e-3)
    gen = torch.Generator().manual_seed(3)
    step = 0
    for ep in range(3):
        perm = torch.randperm(len(xtr), generator=gen)
        for shard in range(0, len(xtr), 1000):
            ids = perm[shard:shard + 1000]
            for i in range(0, len(ids), 64):
                idx = ids[i:i + 64]
                xb, yb = xtr[idx], ytr[idx]
                if len(idx) < 64:  # the shard's tail: never standardised
                    xb = xb * 30.0 + 50.0
                t0 = h.time.time()
                loss = F.cross_entropy(m(xb), yb)
                opt.zero_grad()
                loss.backward()
                opt.step()
                step += 1
                r.log("Train/Loss_total", step, float(loss))
                r.log("time/iter_ms", step, 1000 * (h.time.time() - t0))
    r.tags = {"train_loss": "Train/Loss_total", "step_time": "time/iter_ms"}
    return r


def unmixed_sources_oscillation():
    """Two datasets (different labelling functions of the same inputs) served in alternating
    blocks of 40 steps instead of interleaved: each block undoes part of the last, so the
    loss climbs at every switch and falls within the block, a period of 16 logged points."""
    r = h.Run("unmixed_sources_oscillation", "lightning",
              "MLP on two sources (two teachers over the same inputs) concatenated in blocks of "
              "40 steps each instead of interleaved, Adam 3e-3, logged every 5 steps: the loss "
              "jumps at every switch and falls within the block (period 80 steps = 16 points), "
              "and the model never settles on either source")
    torch.manual_seed(0)
    xa, ya = h.teacher_data(4096, seed=1, teacher_seed=0)
    xb, yb = h.teacher_data(4096, seed=2, teacher_seed=5)
    m = h.mlp(32, 64, h.K)
    opt = torch.optim.Adam(m.parameters(), lr=3e-3)
    gen = torch.Generator().manual_seed(3)
    for step in range(1, 481):
        x, y = (xa, ya) if (step - 1) // 40 % 2 == 0 else (xb, yb)
        idx = torch.randint(0, 4096, (64,), generator=gen)
        loss = F.cross_entropy(m(x[idx]), y[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 5 == 0:
            r.log("train_loss_step", step, float(loss))
            r.log("lr-Adam", step, 3e-3)
            r.log("epoch", step, step * 64 // 8192)
    r.tags = {"train_loss": "train_loss_step", "lr": "lr-Adam", "epoch": "epoch"}
    return r


def healthy_keras_cyclic_lr():
    """Keras-style per-epoch run with a triangular cyclic LR that stays inside the stable range
    (a trap for the schedule and oscillation rules: the LR goes up and down by design)."""
    r = h.Run("healthy_keras_cyclic_lr", "keras",
              "small CNN, SGD momentum 0.9 with a triangular cyclic LR between 0.01 and 0.1, "
              "cycle 8 epochs, 48 epochs: it converges within ~10 epochs and holds, on each of "
              "five seeds tried (with a peak of 0.2 the net died at chance on two of three)")
    torch.manual_seed(0)
    xtr, ytr = h.image_data(1024, seed=1)
    xva, yva = h.image_data(512, seed=2)
    m = h.SmallCNN()
    opt = torch.optim.SGD(m.parameters(), lr=0.01, momentum=0.9)

    def tri(ep):
        c = ep % 8
        return 0.01 + (0.1 - 0.01) * (c / 4 if c <= 4 else (8 - c) / 4)
    h.keras_fit(r, m, opt, xtr, ytr, xva, yva, 48, 64, 3, lr_fn=tri)
    r.tags = dict(h.KERAS_TAGS)
    return r


def zero_grad_after_backward():
    """HF-style names: optimizer.zero_grad() moved between backward() and step() in a
    refactor, so every step applies a zero gradient: nothing learns, and the gradient norm,
    measured just before the step as the clipping code does, reads 0 every time."""
    r = h.Run("zero_grad_after_backward", "hf",
              "MLP classifier, SGD momentum 0.9 lr 0.05; a refactor moved optimizer.zero_grad() "
              "between loss.backward() and optimizer.step(), so every update is zero: the loss "
              "stays at its initial level and the gradient norm read before the step is 0")
    torch.manual_seed(0)
    xtr, ytr = h.teacher_data(4096, seed=1)
    xva, yva = h.teacher_data(1024, seed=2)
    m = h.mlp(32, 64, h.K)
    opt = torch.optim.SGD(m.parameters(), lr=0.05, momentum=0.9)
    rec = h.Rec(r, "hf", every=4)
    gen = torch.Generator().manual_seed(3)
    step = 0
    for ep in range(3):
        for idx in h.batches(len(xtr), 32, gen):
            step += 1
            loss = F.cross_entropy(m(xtr[idx]), ytr[idx])
            loss.backward()
            opt.zero_grad()  # the bug: the gradient just computed is thrown away
            gn = h.grad_norm(m)
            opt.step()
            rec.step(step, float(loss), lr=0.05, gn=gn, epoch=step * 32 / len(xtr))
        vl, va = h.evaluate(m, xva, yva)
        rec.epoch_end(step, ep, vl, va)
    r.tags = {k: rec.t[k] for k in ("train_loss", "val_loss", "val_acc", "lr", "grad_norm", "epoch")}
    return r


def healthy_warmup_multistep():
    """Lightning-style: the CIFAR recipe with a warmup, linear over the first 5% of the steps,
    then x0.1 at 50% and 75%: the last quarter at 1% of the peak is by design (a trap for the
    schedule rule: the warmup's ramp has many LR values, the decay only three)."""
    r = h.Run("healthy_warmup_multistep", "lightning",
              "healthy: SmallCNN on 4096 synthetic images, SGD momentum 0.9 peak lr 0.05, linear "
              "warmup over the first 5% of the steps, then MultiStepLR x0.1 at 50% and 75% of "
              "the run (the CIFAR recipe), 8 epochs")
    torch.manual_seed(0)
    xtr, ytr = h.image_data(4096, seed=1)
    xva, yva = h.image_data(1024, seed=2)
    m = h.SmallCNN()
    opt = torch.optim.SGD(m.parameters(), lr=0.05, momentum=0.9)
    total = 8 * (4096 // 64)

    def lr_at(step):
        if step <= 0.05 * total:
            return 0.05 * step / (0.05 * total)
        return 0.05 * (0.1 if step > 0.5 * total else 1) * (0.1 if step > 0.75 * total else 1)
    rec = h.Rec(r, "lightning", every=2, lr="lr-SGD")
    h.train_classifier(r, rec, m, opt, xtr, ytr, xva, yva, epochs=8, bs=64, seed=3, lr_fn=lr_at)
    r.tags = {k: rec.t[k] for k in ("train_loss", "train_loss_epoch", "val_loss", "val_acc", "lr", "epoch")}
    return r


def full_batch_lr_scaled_twice():
    """Invented names: a full-batch Adam fit whose LR was scaled by a warmup factor twice
    (1e-3 x 1e-6 = 1e-9): every step moves each weight by ~1e-9, so the loss, with no
    minibatch noise to move it, creeps in its seventh digit."""
    r = h.Run("full_batch_lr_scaled_twice", "custom",
              "MLP regression on 2048 samples, full-batch Adam; the LR went through the warmup "
              "scaling twice (1e-3 x 1e-6 = 1e-9): the weights barely move and the full-batch "
              "loss changes only in its seventh digit")
    torch.manual_seed(0)
    x, y, _, _ = regression_data(2048)
    m = h.mlp(16, 64, 1)
    opt = torch.optim.Adam(m.parameters(), lr=1e-9)
    for step in range(1, 301):
        loss = F.mse_loss(m(x), y)
        opt.zero_grad()
        loss.backward()
        gn = h.grad_norm(m)
        opt.step()
        r.log("loss_total", step, float(loss))
        r.log("optim/lr", step, 1e-9)
        r.log("grads/global_norm", step, gn)
    r.tags = {"train_loss": "loss_total", "lr": "optim/lr", "grad_norm": "grads/global_norm"}
    return r


def corrupt_quarter_short_spikes():
    """Invented names, 40 logged steps of a 64-sample batch each: one shard in four was written
    without standardisation (x100), and the loader visits the shards in turn, so every fourth
    step's loss is tens of times the level; a quarter of the points are spikes, too many for a
    median-based noise estimate to ignore."""
    r = h.Run("corrupt_quarter_short_spikes", "custom",
              "MLP regression, 40 logged steps, Adam 1e-3; the data is four shards read in turn "
              "and one of them was never standardised (raw scale x100): every fourth step's "
              "batch comes from it and its loss jumps by 10-100x")
    torch.manual_seed(0)
    x, y, _, gd = regression_data(4096)
    m = h.mlp(16, 64, 1)
    opt = torch.optim.Adam(m.parameters(), lr=1e-3)
    for step in range(1, 41):
        idx = torch.randint(0, 4096, (64,), generator=gd)
        xb = x[idx] * (100.0 if step % 4 == 0 else 1.0)
        loss = F.mse_loss(m(xb), y[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        r.log("train/mse_loss", step, float(loss))
    r.tags = {"train_loss": "train/mse_loss"}
    return r


def healthy_a2c_value_loss_grows():
    """SB3-style names: an advantage actor-critic learning a walk-to-the-goal task. As the policy
    improves the returns grow from ~3 to ~25, and the value loss (MSE against returns, not
    normalized, as SB3's default) grows with them: a rising loss that is learning."""
    r = h.Run("healthy_a2c_value_loss_grows", "custom",
              "healthy: A2C (16 parallel episodes of 30 steps, Adam 3e-3, vf_coef 0.5, entropy "
              "0.01) on a line walk where every step at position >= 3 pays 1: the return climbs "
              "from ~3 to ~25 and the unnormalized value loss rises with it")
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(3)
    pol = nn.Sequential(nn.Linear(2, 32), nn.Tanh(), nn.Linear(32, 2))
    val = nn.Sequential(nn.Linear(2, 32), nn.Tanh(), nn.Linear(32, 1))
    opt = torch.optim.Adam(list(pol.parameters()) + list(val.parameters()), lr=3e-4)
    envs, horizon, gamma = 16, 30, 0.99
    timesteps = 0
    for update in range(1, 301):
        pos = torch.full((envs,), -4.0)
        obs, acts, rews = [], [], []
        for t in range(horizon):
            o = torch.stack([pos / 5, torch.full((envs,), t / horizon)], 1)
            logits = pol(o)
            a = torch.multinomial(torch.softmax(logits, 1), 1, generator=gen).squeeze(1)
            pos = (pos + (a * 2 - 1)).clamp(-5, 5)
            obs.append(o)
            acts.append(a)
            rews.append((pos >= 3).float())
        ret, g = [], torch.zeros(envs)
        for rw in reversed(rews):
            g = rw + gamma * g
            ret.append(g)
        ret = torch.stack(ret[::-1])
        o = torch.stack(obs)
        v = val(o).squeeze(-1)
        logp = torch.log_softmax(pol(o), -1)
        chosen = logp.gather(-1, torch.stack(acts).unsqueeze(-1)).squeeze(-1)
        adv = (ret - v).detach()
        pg = -(chosen * adv).mean()
        vloss = F.mse_loss(v, ret)
        ent = -(logp.exp() * logp).sum(-1).mean()
        loss = pg + 0.5 * vloss - 0.01 * ent
        opt.zero_grad()
        loss.backward()
        opt.step()
        timesteps += envs * horizon
        if update % 2 == 0:
            r.log("rollout/ep_rew_mean", timesteps, float(torch.stack(rews).sum(0).mean()))
            r.log("train/loss", timesteps, float(loss))
            r.log("train/value_loss", timesteps, float(vloss))
            r.log("train/learning_rate", timesteps, 3e-4)
    r.tags = {"train_loss": "train/loss", "lr": "train/learning_rate", "reward": "rollout/ep_rew_mean"}
    return r


def fairseq_clip_norm_tiny():
    """fairseq-style names in a train_inner sub-run: --clip-norm 0.01 where 1.0 was meant. fairseq
    logs `clip`, the percentage of the interval's updates whose gradient norm was clipped; here
    it is 100 at every interval."""
    r = h.Run("fairseq_clip_norm_tiny", "custom",
              "tiny transformer LM, SGD lr 0.1 momentum 0.9, --clip-norm 0.01 (meant 1.0), fairseq-style "
              "logging every 10 updates (loss in base 2, gnorm the pre-clip norm, clip the share of "
              "updates clipped in percent): every update is clipped and training crawls")
    torch.manual_seed(0)
    data = h.markov_tokens(4096, 17, seed=1)
    m = h.TinyLM()
    opt = torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
    gen = torch.Generator().manual_seed(3)
    losses, norms, clipped = [], [], []
    for step in range(1, 401):
        idx = torch.randint(0, len(data), (16,), generator=gen)
        xb = data[idx]
        logits = m(xb[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, 16), xb[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        gn = float(torch.nn.utils.clip_grad_norm_(m.parameters(), 0.01))
        opt.step()
        losses.append(float(loss) / math.log(2))
        norms.append(gn)
        clipped.append(100.0 if gn > 0.01 else 0.0)
        if step % 10 == 0:
            r.log("loss", step, sum(losses) / len(losses), "train_inner")
            r.log("gnorm", step, sum(norms) / len(norms), "train_inner")
            r.log("clip", step, sum(clipped) / len(clipped), "train_inner")
            r.log("lr", step, 0.1, "train_inner")
            losses, norms, clipped = [], [], []
    r.tags = {"train_loss": "loss", "grad_norm": "gnorm", "clip_fraction": "clip", "lr": "lr"}
    return r


ALL = [unit_mixup_regression_spikes, bn_stats_val_spikes_keras, bn_stats_val_spikes_frequent, padded_shard_tail_spikes,
       unmixed_sources_oscillation, healthy_keras_cyclic_lr,
       zero_grad_after_backward, healthy_warmup_multistep, full_batch_lr_scaled_twice,
       corrupt_quarter_short_spikes, healthy_a2c_value_loss_grows,
       fairseq_clip_norm_tiny]


def register_all(module):
    global h
    h = module
    for fn in ALL:
        module.register(fn)
