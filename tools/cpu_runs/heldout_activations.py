# Held-out runs for the activation and QAT checks, written apart from their tuning harness
# (activation_runs.py): other data (sums of sines regression, a parity-like token task), other
# models and optimizers, other naming styles, W&B-style 64-bin TF2 histograms.
#   /usr/bin/python3 tools/cpu_runs/heldout_activations.py OUT
# then `tw-events-from-jsonl OUT/RUN/log.jsonl LOGDIR/RUN` per run.
import json, math, os, sys
import torch, torch.nn as nn, torch.nn.functional as F

OUT = sys.argv[1]
ONLY = sys.argv[2:]
T0 = 1.81e9
torch.set_num_threads(1)


def want(name): return not ONLY or name in ONLY


class Log:
    def __init__(self, name): self.name, self.rows = name, []
    def __call__(self, tag, step, v):
        self.rows.append({"tag": tag, "step": step, "wall_time": T0 + step, "value": float(v)})
    def hist(self, tag, step, t, bins=64):
        lo, hi = float(t.min()), float(t.max())
        if hi <= lo: hi = lo + 1e-6
        c = torch.histc(t.float(), bins=bins, min=lo, max=hi).tolist()
        w = (hi - lo) / bins
        self.rows.append({"tag": tag, "step": step, "wall_time": T0 + step,
                          "buckets": [[lo + i * w, lo + (i + 1) * w, n] for i, n in enumerate(c) if n > 0]})
    def save(self):
        d = os.path.join(OUT, self.name); os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "log.jsonl"), "w") as f:
            for r in self.rows: f.write(json.dumps(r) + "\n")


def sines(n, seed, d=8, scale=1.0):
    g = torch.Generator().manual_seed(seed)
    x = torch.rand(n, d, generator=g) * 2 - 1
    y = torch.sin(3 * x[:, 0]) + torch.cos(2 * x[:, 1] * x[:, 2]) + 0.5 * x[:, 3] ** 2
    return x * scale, y.unsqueeze(1)


# ------------------------------------------------ ReLU: a regression CNN-free MLP, RMSprop
def relu_run(name, lr, opt_name="rmsprop", steps=500, seed=101):
    torch.manual_seed(seed)
    fc = nn.ModuleList([nn.Linear(8, 64), nn.Linear(64, 64), nn.Linear(64, 64)]); head = nn.Linear(64, 1)
    params = list(fc.parameters()) + list(head.parameters())
    opt = torch.optim.RMSprop(params, lr=lr) if opt_name == "rmsprop" else torch.optim.Adam(params, lr=lr)
    x, y = sines(8000, seed); log = Log(name); g = torch.Generator().manual_seed(seed)
    for step in range(1, steps + 1):
        idx = torch.randint(0, len(x), (64,), generator=g); h = x[idx]; acts = []
        for l in fc: h = F.relu(l(h)); acts.append(h)
        loss = F.mse_loss(head(h), y[idx]); opt.zero_grad(); loss.backward(); opt.step()
        if step % 10 == 0:
            log("loss", step, loss.item())
            for i, a in enumerate(acts):
                log(f"activations/fc{i+1}/zero_fraction", step, (a <= 0).float().mean().item())
                log(f"dnn/hiddenlayer_{i}/dead_neurons_pct", step, 100 * (a.max(0).values <= 0).float().mean().item())
    log.save(); print(name, loss.item(), [round((a <= 0).float().mean().item(), 2) for a in acts])


if want("ho_dead_relu_rmsprop_lr"):
    # RMSprop at lr 0.05 (its usual 1e-3 x 50): the first steps drive pre-activations negative.
    relu_run("ho_dead_relu_rmsprop_lr", 0.05)
if want("ho_healthy_relu_regression"):
    relu_run("ho_healthy_relu_regression", 1e-3, "adam")


# ------------------------------------------------ saturation: sigmoid/tanh on unscaled data
def squash_run(name, scale, ln, steps=500, seed=111):
    torch.manual_seed(seed)
    l1, l2, head = nn.Linear(8, 48), nn.Linear(48, 48), nn.Linear(48, 1)
    norm = nn.LayerNorm(48) if ln else nn.Identity()
    params = list(l1.parameters()) + list(l2.parameters()) + list(head.parameters()) + list(norm.parameters())
    opt = torch.optim.SGD(params, lr=0.02, momentum=0.9)
    x, y = sines(8000, seed, scale=scale); log = Log(name); g = torch.Generator().manual_seed(seed)
    for step in range(1, steps + 1):
        idx = torch.randint(0, len(x), (64,), generator=g)
        a1 = torch.tanh(l1(x[idx])); a2 = torch.sigmoid(norm(l2(a1)))
        loss = F.mse_loss(head(a2), y[idx]); opt.zero_grad(); loss.backward(); opt.step()
        if step % 10 == 0:
            log("train_mse", step, loss.item())
            log("saturation/tanh_1", step, (a1.abs() > 0.98).float().mean().item())
            log("saturation/sigmoid_2", step, ((a2 < 0.02) | (a2 > 0.98)).float().mean().item())
    log.save(); print(name, loss.item())


if want("ho_saturated_unscaled_sensor_data"):
    # Sensor readings in raw units (x 200), no input scaling, no normalization layer.
    squash_run("ho_saturated_unscaled_sensor_data", 200.0, False)
if want("ho_healthy_squash_layernorm"):
    squash_run("ho_healthy_squash_layernorm", 1.0, True)


# ------------------------------------------------ attention: a pre-LN encoder on a sort-ish task
class Block(nn.Module):
    def __init__(self, d=32, h=2, post_ln=False):
        super().__init__()
        self.post_ln = post_ln
        self.h, self.n1, self.n2 = h, nn.LayerNorm(d), nn.LayerNorm(d)
        self.q, self.k, self.v, self.o = (nn.Linear(d, d) for _ in range(4))
        self.ff = nn.Sequential(nn.Linear(d, 64), nn.ReLU(), nn.Linear(64, d))
    def forward(self, x):
        B, T, D = x.shape; y = x if self.post_ln else self.n1(x)
        q, k, v = (f(y).view(B, T, self.h, D // self.h).transpose(1, 2) for f in (self.q, self.k, self.v))
        p = (q @ k.transpose(-1, -2) / math.sqrt(D // self.h)).softmax(-1)
        self.entropy = -(p * (p + 1e-12).log()).sum(-1).mean().item()
        x = x + self.o((p @ v).transpose(1, 2).reshape(B, T, D))
        if self.post_ln:  # the original transformer's order: normalize after each residual add
            x = self.n1(x)
            return self.n2(x + self.ff(x))
        return x + self.ff(self.n2(x))


def attn_run(name, lr, warmup, steps=300, seed=121, T=20, vocab=10, post_ln=False):
    torch.manual_seed(seed)
    emb, pos = nn.Embedding(vocab, 32), nn.Parameter(torch.randn(T, 32) * 0.1)
    blocks = nn.ModuleList([Block(post_ln=post_ln), Block(post_ln=post_ln)]); head = nn.Linear(32, vocab)
    params = list(emb.parameters()) + [pos] + list(blocks.parameters()) + list(head.parameters())
    opt = torch.optim.AdamW(params, lr=lr, weight_decay=0.01)
    g = torch.Generator().manual_seed(seed); log = Log(name)
    for step in range(1, steps + 1):
        for pg in opt.param_groups: pg["lr"] = lr * min(1.0, step / warmup) if warmup else lr
        t = torch.randint(0, vocab, (48, T), generator=g)
        target = t.sort(1).values  # each position's token in sorted order: needs the whole sequence
        h = emb(t) + pos
        for b in blocks: h = b(h)
        loss = F.cross_entropy(head(h).reshape(-1, vocab), target.reshape(-1))
        opt.zero_grad(); loss.backward(); opt.step()
        if step % 5 == 0:
            log("Loss/train", step, loss.item())
            for i, b in enumerate(blocks): log(f"attention/entropy/block{i}", step, b.entropy)
    log.save(); print(name, loss.item(), [round(b.entropy, 2) for b in blocks])


# Meant to collapse, and did not: pre-LN blocks at AdamW 3e-2 and even 0.2 without warmup learn
# the sort (loss 0.09) with entropies near uniform (2.0-2.9 nats of 3.0). Kept as quiet runs.
if want("ho_attn_preln_no_warmup"):
    attn_run("ho_attn_preln_no_warmup", 3e-2, 0)
if want("ho_attn_preln_lr_0_2"):
    # The same encoder at lr 0.2 (a learning-rate sweep's top value), still without warmup.
    attn_run("ho_attn_preln_lr_0_2", 0.2, 0)
if want("ho_attn_collapse_postln_lr_0_05"):
    # Post-LN blocks (no warmup, AdamW at 0.05): the configuration warmup exists for.
    attn_run("ho_attn_collapse_postln_lr_0_05", 0.05, 0, post_ln=True)
if want("ho_healthy_attn_sort"):
    attn_run("ho_healthy_attn_sort", 1e-3, 30)


# ------------------------------------------------ QAT: 3-bit, regression, SGD
def q(w, bits, s):
    m = 2 ** (bits - 1) - 1
    return w + ((w / s).round().clamp(-m, m) * s - w).detach()


def qat_run(name, quant_in_training, steps=600, seed=131):
    torch.manual_seed(seed)
    l1, l2, head = nn.Linear(8, 96), nn.Linear(96, 96), nn.Linear(96, 1)
    params = list(l1.parameters()) + list(l2.parameters()) + list(head.parameters())
    opt = torch.optim.SGD(params, lr=0.05, momentum=0.9)
    x, y = sines(8000, seed); xv, yv = sines(2000, seed + 1); log = Log(name)
    frozen = {id(l): (l.weight.detach().abs().max() / 3).item() for l in (l1, l2)}
    def fwd(xx, quant):
        h = xx
        for l in (l1, l2):
            w = q(l.weight, 3, frozen[id(l)]) if quant else l.weight
            h = F.gelu(F.linear(h, w, l.bias))
        return head(h)
    g = torch.Generator().manual_seed(seed)
    for step in range(1, steps + 1):
        if quant_in_training:  # the observer keeps measuring: the range follows the weights
            for l in (l1, l2): frozen[id(l)] = (l.weight.detach().abs().max() / 3).item()
        idx = torch.randint(0, len(x), (64,), generator=g)
        loss = F.mse_loss(fwd(x[idx], quant_in_training), y[idx]); opt.zero_grad(); loss.backward(); opt.step()
        if step % 10 == 0:
            with torch.no_grad():
                log("eval/quantized_loss", step, F.mse_loss(fwd(xv, True), yv).item())
                log("eval/fp_loss", step, F.mse_loss(fwd(xv, False), yv).item())
            log("train/loss", step, loss.item())
    log.save(); print(name, log.rows[-3]["value"], log.rows[-2]["value"])


if want("ho_qat_gap_float_training"):
    # The model trains in float (fake quantization never switched on after the float warmup) and
    # is evaluated through a 3-bit quantizer whose range was frozen at calibration.
    qat_run("ho_qat_gap_float_training", False)
if want("ho_healthy_qat_3bit"):
    qat_run("ho_healthy_qat_3bit", True)


# ------------------------------------------------ ternary: AdamW decoupled decay, fixed delta
def tern(w, delta):
    t = (w > delta).float() - (w < -delta).float()
    a = (w.abs() * t.abs()).sum() / t.abs().sum().clamp(min=1)
    return w + (a * t - w).detach()


def ternary_run(name, delta_abs, wd, steps=600, seed=141):
    torch.manual_seed(seed)
    l1, l2, head = nn.Linear(8, 64), nn.Linear(64, 64), nn.Linear(64, 1)
    params = list(l1.parameters()) + list(l2.parameters()) + list(head.parameters())
    opt = torch.optim.AdamW(params, lr=2e-3, weight_decay=wd)
    x, y = sines(8000, seed); log = Log(name); g = torch.Generator().manual_seed(seed)
    def d(l): return delta_abs if delta_abs is not None else 0.7 * l.weight.detach().abs().mean()
    for step in range(1, steps + 1):
        idx = torch.randint(0, len(x), (64,), generator=g)
        h = F.relu(F.linear(x[idx], tern(l1.weight, d(l1)), l1.bias))
        h = F.relu(F.linear(h, tern(l2.weight, d(l2)), l2.bias))
        loss = F.mse_loss(head(h), y[idx]); opt.zero_grad(); loss.backward(); opt.step()
        if step % 10 == 0: log("train/loss", step, loss.item())
        if step % 30 == 0:
            with torch.no_grad():
                log.hist("ternary_weights/fc1", step, tern(l1.weight, d(l1)))
                log.hist("ternary_weights/fc2", step, tern(l2.weight, d(l2)))
    zs = [(tern(l.weight, d(l)) == 0).float().mean().item() for l in (l1, l2)]
    log.save(); print(name, loss.item(), zs)


if want("ho_ternary_collapse_adamw_decay"):
    # AdamW's decoupled decay of 5.0 (meant 0.05: a factor typed for SGD's coupled decay) with an
    # absolute threshold of 0.06.
    ternary_run("ho_ternary_collapse_adamw_decay", 0.06, 5.0)
if want("ho_healthy_ternary"):
    ternary_run("ho_healthy_ternary", None, 0.01)
