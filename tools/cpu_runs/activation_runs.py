# Tuning runs for the activation and QAT checks (issue 18, part 3): dead ReLUs, saturated
# tanh/sigmoid units, attention entropy collapse, a widening QAT gap, ternary weights collapsing.
# Each sick run gets its pathology from its real cause; each healthy twin logs the same tags.
#   /usr/bin/python3 tools/cpu_runs/activation_runs.py OUT
# then `tw-events-from-jsonl OUT/RUN/log.jsonl LOGDIR/RUN` per run (histograms included).
# The held-out set (heldout_activations.py) is written apart from this one.
import json, math, os, sys
import torch, torch.nn as nn, torch.nn.functional as F

OUT = sys.argv[1]
ONLY = sys.argv[2:]
T0 = 1.79e9
torch.set_num_threads(1)


class Log:
    def __init__(self, name): self.name, self.rows = name, []
    def __call__(self, tag, step, v):
        self.rows.append({"tag": tag, "step": step, "wall_time": T0 + step * 0.5, "value": float(v)})
    def hist(self, tag, step, t):
        self.rows.append({"tag": tag, "step": step, "wall_time": T0 + step * 0.5,
                          "samples": [round(float(x), 6) for x in t.flatten().tolist()]})
    def save(self):
        d = os.path.join(OUT, self.name); os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "log.jsonl"), "w") as f:
            for r in self.rows: f.write(json.dumps(r) + "\n")


def spirals(n, seed, k=5, d=16, scale=1.0):
    """A nonlinear k-class task: class by the angle band of a 2-D projection, plus noise dims."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, d, generator=g)
    ang = torch.atan2(x[:, 1], x[:, 0]) + 0.8 * x[:, 2:4].norm(dim=1)
    y = ((ang + math.pi) / (2 * math.pi) * k).long() % k
    return x * scale, y


def want(name): return not ONLY or name in ONLY


# ---------------------------------------------------------------- 1. dead ReLU
class ReluMLP(nn.Module):
    def __init__(self, d=16, h=128, k=5, depth=3):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(d if i == 0 else h, h) for i in range(depth)])
        self.out = nn.Linear(h, k)
    def forward(self, x, acts=None):
        for l in self.layers:
            x = F.relu(l(x))
            if acts is not None: acts.append(x)
        return self.out(x)


def relu_run(name, model, opt, steps=600, bs=128, seed=1):
    log = Log(name); x, y = spirals(12000, seed)
    g = torch.Generator().manual_seed(seed + 7)
    for step in range(1, steps + 1):
        idx = torch.randint(0, len(x), (bs,), generator=g)
        acts = []
        out = model(x[idx], acts); loss = F.cross_entropy(out, y[idx])
        opt.zero_grad(); loss.backward(); opt.step()
        if step % 5 == 0:
            log("train/loss", step, loss.item())
            log("train/acc", step, (out.argmax(1) == y[idx]).float().mean().item())
            for i, a in enumerate(acts):
                # dead: a unit that output 0 for every example of the batch; zero: share of zeros
                log(f"act/relu_dead_frac/layer{i+1}", step, (a.max(0).values <= 0).float().mean().item())
                log(f"act/relu_zero_frac/layer{i+1}", step, (a <= 0).float().mean().item())
    log.save(); print(name, "loss", loss.item(), "dead", [round((a.max(0).values <= 0).float().mean().item(), 2) for a in acts])


if want("dead_relu_high_lr"):
    # SGD at lr 0.6 without momentum damping: the first large updates push most pre-activations
    # below zero for every input, and a unit that never fires gets no gradient back.
    torch.manual_seed(1); m = ReluMLP()
    relu_run("dead_relu_high_lr", m, torch.optim.SGD(m.parameters(), lr=0.6, momentum=0.9))
if want("dead_relu_bias_init"):
    # A custom init that sets the hidden biases to -4 (meant for the output's class prior):
    # with inputs of unit scale the second and third layers never fire.
    torch.manual_seed(2); m = ReluMLP()
    with torch.no_grad():
        for l in m.layers[1:]: l.bias.fill_(-4.0)
    relu_run("dead_relu_bias_init", m, torch.optim.Adam(m.parameters(), lr=1e-3))
if want("healthy_relu_sparse"):
    torch.manual_seed(3); m = ReluMLP()
    relu_run("healthy_relu_sparse", m, torch.optim.Adam(m.parameters(), lr=1e-3))


# ---------------------------------------------------------------- 2. saturation
class SquashMLP(nn.Module):
    def __init__(self, act, d=16, h=96, k=5, depth=3, init_std=None):
        super().__init__()
        self.act = act
        self.layers = nn.ModuleList([nn.Linear(d if i == 0 else h, h) for i in range(depth)])
        self.out = nn.Linear(h, k)
        if init_std is not None:
            with torch.no_grad():
                for l in self.layers: l.weight.normal_(0, init_std)
    def forward(self, x, acts=None):
        for l in self.layers:
            x = self.act(l(x))
            if acts is not None: acts.append(x)
        return self.out(x)


def saturated(a, act):
    if act is torch.tanh: return (a.abs() > 0.99).float().mean().item()
    return ((a < 0.01) | (a > 0.99)).float().mean().item()


def squash_run(name, model, act, opt, scale=1.0, steps=500, bs=128, seed=11, tag="act/tanh_sat_frac"):
    log = Log(name); x, y = spirals(12000, seed, scale=scale)
    g = torch.Generator().manual_seed(seed + 7)
    for step in range(1, steps + 1):
        idx = torch.randint(0, len(x), (bs,), generator=g)
        acts = []
        out = model(x[idx], acts); loss = F.cross_entropy(out, y[idx])
        opt.zero_grad(); loss.backward(); opt.step()
        if step % 5 == 0:
            log("train/loss", step, loss.item())
            for i, a in enumerate(acts): log(f"{tag}/layer{i+1}", step, saturated(a, act))
    log.save(); print(name, "loss", loss.item(), "sat", [round(saturated(a, act), 2) for a in acts])


if want("saturated_tanh_large_init"):
    # Weights drawn with std 1.0 instead of 1/sqrt(fan_in) (~0.1 here): pre-activations of
    # size ~10 pin tanh at +-1, where its derivative is ~0.
    torch.manual_seed(4); m = SquashMLP(torch.tanh, init_std=1.0)
    squash_run("saturated_tanh_large_init", m, torch.tanh, torch.optim.SGD(m.parameters(), lr=0.05, momentum=0.9))
if want("saturated_sigmoid_raw_inputs"):
    # Features fed in raw (x 60: never standardised): the first sigmoid layer sits at 0 or 1.
    torch.manual_seed(5); m = SquashMLP(torch.sigmoid)
    squash_run("saturated_sigmoid_raw_inputs", m, torch.sigmoid, torch.optim.Adam(m.parameters(), lr=1e-3),
               scale=60.0, tag="act/sigmoid_sat_frac")
if want("healthy_tanh"):
    torch.manual_seed(6); m = SquashMLP(torch.tanh)
    squash_run("healthy_tanh", m, torch.tanh, torch.optim.Adam(m.parameters(), lr=2e-3))


# ---------------------------------------------------------------- 3. attention entropy
class Attn(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.h, self.qkv, self.o = heads, nn.Linear(d, 3 * d), nn.Linear(d, d)
    def forward(self, x, ents):
        B, T, D = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.h, D // self.h).permute(2, 0, 3, 1, 4)
        s = (q @ k.transpose(-1, -2)) / math.sqrt(D // self.h)
        s = s.masked_fill(torch.triu(torch.ones(T, T, dtype=torch.bool), 1), float("-inf"))
        p = s.softmax(-1)
        # entropy per head over the later half of the positions (they have many keys to choose from)
        ent = -(p * (p + 1e-12).log()).sum(-1)[:, :, T // 2:].mean((0, 2))
        ents.append(ent.detach())
        return self.o((p @ v).transpose(1, 2).reshape(B, T, D))


class TinyLM(nn.Module):
    def __init__(self, vocab=24, d=48, heads=4, layers=2, T=32):
        super().__init__()
        self.emb, self.pos = nn.Embedding(vocab, d), nn.Parameter(torch.randn(T, d) * 0.02)
        self.attn = nn.ModuleList([Attn(d, heads) for _ in range(layers)])
        self.ff = nn.ModuleList([nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d)) for _ in range(layers)])
        self.n1 = nn.ModuleList([nn.LayerNorm(d) for _ in range(layers)])
        self.n2 = nn.ModuleList([nn.LayerNorm(d) for _ in range(layers)])
        self.head = nn.Linear(d, vocab)
    def forward(self, t, ents):
        x = self.emb(t) + self.pos[: t.shape[1]]
        for a, f, n1, n2 in zip(self.attn, self.ff, self.n1, self.n2):
            x = n1(x + a(x, ents)); x = n2(x + f(x))  # post-LN, as the original transformer
        return self.head(x)


def copy_task(n, T=32, vocab=24, seed=0):
    """Sequences whose second half repeats the first: attention must look back T/2 tokens."""
    g = torch.Generator().manual_seed(seed)
    a = torch.randint(0, vocab, (n, T // 2), generator=g)
    return torch.cat([a, a], 1)


def attn_run(name, lr, warmup, steps=400, bs=32, seed=21):
    torch.manual_seed(seed); m = TinyLM(); log = Log(name)
    data = copy_task(4000, seed=seed)
    opt = torch.optim.Adam(m.parameters(), lr=lr)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / warmup) if warmup else 1.0)
    g = torch.Generator().manual_seed(seed + 1)
    for step in range(1, steps + 1):
        t = data[torch.randint(0, len(data), (bs,), generator=g)]
        ents = []
        out = m(t[:, :-1], ents)
        loss = F.cross_entropy(out.reshape(-1, out.shape[-1]), t[:, 1:].reshape(-1))
        opt.zero_grad(); loss.backward(); opt.step(); sched.step()
        if step % 4 == 0:
            log("train/loss", step, loss.item()); log("train/lr", step, sched.get_last_lr()[0])
            for li, e in enumerate(ents):
                for h, v in enumerate(e.tolist()): log(f"attn_entropy/layer{li}/head_{h}", step, v)
    log.save(); print(name, "loss", loss.item(), "ent", [[round(v, 2) for v in e.tolist()] for e in ents])


if want("attn_collapse_no_warmup"):
    # Adam at 1e-2 from the first step, no warmup, post-LN: the query/key weights grow at once,
    # attention logits blow up and every head locks onto one key.
    attn_run("attn_collapse_no_warmup", 1e-2, 0)
if want("healthy_attn_warmup"):
    attn_run("healthy_attn_warmup", 1e-3, 40)


# ---------------------------------------------------------------- 4. QAT
def fake_quant(w, bits, scale):
    q = 2 ** (bits - 1) - 1
    return w + ((w / scale).round().clamp(-q, q) * scale - w).detach()  # straight-through


class QMLP(nn.Module):
    def __init__(self, d=16, h=128, k=5):
        super().__init__()
        self.l1, self.l2, self.l3 = nn.Linear(d, h), nn.Linear(h, h), nn.Linear(h, k)
        self.fixed = {}
    def forward(self, x, quant, bits=4, fixed_scale=False):
        for l in (self.l1, self.l2):
            w = l.weight
            if quant:
                if fixed_scale:  # the range measured once at the start and never again
                    s = self.fixed.setdefault(id(l), (w.detach().abs().max() / (2 ** (bits - 1) - 1)).item())
                else:
                    s = w.detach().abs().max() / (2 ** (bits - 1) - 1)
                w = fake_quant(w, bits, s)
            x = F.relu(F.linear(x, w, l.bias))
        return self.l3(x)


def qat_run(name, fixed_scale, train_quant=True, steps=800, bs=128, seed=31, lr=3e-3):
    torch.manual_seed(seed); m = QMLP(); log = Log(name)
    x, y = spirals(12000, seed); xv, yv = spirals(3000, seed + 100)
    opt = torch.optim.Adam(m.parameters(), lr=lr)
    g = torch.Generator().manual_seed(seed + 1)
    for step in range(1, steps + 1):
        idx = torch.randint(0, len(x), (bs,), generator=g)
        loss = F.cross_entropy(m(x[idx], train_quant, fixed_scale=fixed_scale), y[idx])
        opt.zero_grad(); loss.backward(); opt.step()
        if step % 10 == 0:
            log("train/loss", step, loss.item())
            with torch.no_grad():
                log("qat/loss", step, F.cross_entropy(m(xv, True, fixed_scale=fixed_scale), yv).item())
                log("fp32/loss", step, F.cross_entropy(m(xv, False), yv).item())
    log.save(); print(name, "qat", log.rows[-2]["value"], "fp32", log.rows[-1]["value"])


if want("qat_gap_fixed_range"):
    # Fake quantization left disabled in the training forward (a disable_fake_quant call meant
    # for calibration), and the quantizer's range frozen after calibrating on the initial
    # weights: the float model trains as it likes, its weights grow past the frozen range and are
    # clipped there, so the 4-bit model falls further and further behind the float one.
    qat_run("qat_gap_fixed_range", True, train_quant=False)
if want("healthy_qat_dynamic_range"):
    qat_run("healthy_qat_dynamic_range", False)


# ---------------------------------------------------------------- 5. ternary weights
def ternary(w, delta):
    t = (w > delta).float() - (w < -delta).float()
    alpha = (w.abs() * t.abs()).sum() / t.abs().sum().clamp(min=1)
    return w + (alpha * t - w).detach()


class TernaryMLP(nn.Module):
    def __init__(self, d=16, h=128, k=5):
        super().__init__()
        self.l1, self.l2, self.l3 = nn.Linear(d, h), nn.Linear(h, h), nn.Linear(h, k)
    def qweights(self, l, fixed_delta):
        delta = fixed_delta if fixed_delta is not None else 0.7 * l.weight.detach().abs().mean()
        return ternary(l.weight, delta)
    def forward(self, x, fixed_delta):
        x = F.relu(F.linear(x, self.qweights(self.l1, fixed_delta), self.l1.bias))
        x = F.relu(F.linear(x, self.qweights(self.l2, fixed_delta), self.l2.bias))
        return self.l3(x)


def ternary_run(name, fixed_delta, wd, steps=800, bs=128, seed=41):
    torch.manual_seed(seed); m = TernaryMLP(); log = Log(name)
    x, y = spirals(12000, seed)
    opt = torch.optim.SGD(m.parameters(), lr=0.05, momentum=0.9, weight_decay=wd)
    g = torch.Generator().manual_seed(seed + 1)
    for step in range(1, steps + 1):
        idx = torch.randint(0, len(x), (bs,), generator=g)
        loss = F.cross_entropy(m(x[idx], fixed_delta), y[idx])
        opt.zero_grad(); loss.backward(); opt.step()
        if step % 10 == 0: log("train/loss", step, loss.item())
        if step % 40 == 0:
            for i, l in enumerate((m.l1, m.l2)):
                with torch.no_grad(): log.hist(f"weights/ternary/layer{i+1}", step, m.qweights(l, fixed_delta))
    zeros = [(m.qweights(l, fixed_delta) == 0).float().mean().item() for l in (m.l1, m.l2)]
    log.save(); print(name, "loss", loss.item(), "zero share", zeros)


if want("ternary_collapse_fixed_threshold"):
    # A fixed ternarization threshold (0.05, tuned for the initial weights' scale) with strong
    # weight decay on the latent weights: they shrink under the threshold, layer by layer every
    # weight becomes 0.
    ternary_run("ternary_collapse_fixed_threshold", 0.05, 2e-2)
if want("healthy_ternary_twn"):
    # Ternary weight networks' threshold, 0.7 x mean |w|, follows the weights' scale.
    ternary_run("healthy_ternary_twn", None, 5e-4)
