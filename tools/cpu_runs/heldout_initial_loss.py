# Held-out runs for initial_loss_high (tests/data/heldout/ho3_*), written apart from its tuning
# runs (initial_loss_runs.py): other models, data, causes, hparam keys and logging cadences.
#   /usr/bin/python3 heldout_initial_loss.py OUT  (then tw-events-from-jsonl --hparams OUT/RUN/hparams.json ...)
import json, math, os, sys
import torch, torch.nn as nn, torch.nn.functional as F
OUT = sys.argv[1]
torch.set_num_threads(1)

def save(name, hp, rows):
    d = os.path.join(OUT, name); os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "log.jsonl"), "w") as f:
        for r in rows: f.write(json.dumps(r) + "\n")
    with open(os.path.join(d, "hparams.json"), "w") as f: json.dump(hp, f)
    first = rows[0]["value"]; k = max(v for kk, v in hp.items() if kk in ("n_classes", "num_labels", "vocab_size"))
    print(f"{name:36s} first {first:9.3f} ({first / math.log(k):5.2f} x ln K) last {rows[-1]['value']:.3f}")

def tabular(n, k, seed, raw_scale=False):
    # Features with real-world units: some in the thousands (a salary), some fractions.
    g = torch.Generator().manual_seed(seed)
    w = torch.randn(12, k, generator=torch.Generator().manual_seed(21))
    z = torch.randn(n, 12, generator=g); y = (z @ w + 0.5 * torch.randn(n, k, generator=g)).argmax(1)
    scale = torch.tensor([3000.0, 12.0, 0.01, 45.0, 1.0, 800.0, 2.0, 0.5, 60.0, 1.0, 250.0, 5.0])
    x = z * scale + scale * 2 if raw_scale else z
    return x, y

def run_hf_style(name, hp, model, x, y, steps=400, lr=3e-4, bs=32, every=25, loss_fn=None, wd=0.0):
    # Logs the mean of the losses since the last log, as the HF Trainer does (first at step `every`).
    g = torch.Generator().manual_seed(8); o = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=wd)
    rows, acc = [], []
    for step in range(1, steps + 1):
        idx = torch.randint(0, len(x), (bs,), generator=g)
        loss = (loss_fn or F.cross_entropy)(model(x[idx]), y[idx])
        o.zero_grad(); loss.backward(); o.step(); acc.append(loss.item())
        if step % every == 0:
            rows.append({"tag": "train/loss", "step": step, "wall_time": 1.82e9 + step, "value": sum(acc) / len(acc)}); acc = []
    save(name, hp, rows)

def run_epochs(name, hp, model, x, y, epochs=10, lr=1e-3, bs=50):
    # Keras style: one point per epoch, the epoch's mean loss.
    o = torch.optim.Adam(model.parameters(), lr=lr); rows = []
    for ep in range(epochs):
        perm = torch.randperm(len(x), generator=torch.Generator().manual_seed(ep)); tot = 0.0; nb = 0
        for i in range(0, len(x), bs):
            idx = perm[i:i + bs]; loss = F.cross_entropy(model(x[idx]), y[idx])
            o.zero_grad(); loss.backward(); o.step(); tot += loss.item(); nb += 1
        rows.append({"tag": "epoch_loss", "step": ep, "wall_time": 1.82e9 + 60 * ep, "value": tot / nb})
    save(name, hp, rows)

class GRUClf(nn.Module):
    def __init__(self, v, k, temp=1.0):
        super().__init__(); self.e = nn.Embedding(v, 32); self.g = nn.GRU(32, 64, batch_first=True); self.o = nn.Linear(64, k); self.temp = temp
    def forward(self, t): return self.o(self.g(self.e(t))[1][-1]) / self.temp

def seqs(n, v, k, seed):
    g = torch.Generator().manual_seed(seed); t = torch.randint(0, v, (n, 20), generator=g)
    y = (t[:, -1] + 2 * t[:, -2]) % k
    return t, y

class CharLM(nn.Module):
    def __init__(self, v): super().__init__(); self.e = nn.Embedding(v, 48); self.r = nn.LSTM(48, 96, batch_first=True); self.o = nn.Linear(96, v)
    def forward(self, t): return self.o(self.r(self.e(t))[0])

def text(n, v, seed, L=33):
    g = torch.Generator().manual_seed(seed); t = torch.zeros(n, L, dtype=torch.long); t[:, 0] = torch.randint(0, v, (n,), generator=g)
    for i in range(1, L): t[:, i] = (t[:, i - 1] * 5 + 3 + torch.randint(0, 3, (n,), generator=g)) % v
    return t

def run_lm(name, hp, m, t, steps=250, every=1, per_seq_sum=False, lr=2e-3):
    g = torch.Generator().manual_seed(9); o = torch.optim.Adam(m.parameters(), lr=lr); rows = []; v = hp["vocab_size"]
    for step in range(steps):
        b = t[torch.randint(0, len(t), (16,), generator=g)]; lg = m(b[:, :-1])
        loss = F.cross_entropy(lg.reshape(-1, v), b[:, 1:].reshape(-1), reduction="sum") / b.shape[0] if per_seq_sum \
            else F.cross_entropy(lg.reshape(-1, v), b[:, 1:].reshape(-1))
        o.zero_grad(); loss.backward(); torch.nn.utils.clip_grad_norm_(m.parameters(), 1.0); o.step()
        if step % every == 0: rows.append({"tag": "lm/train_loss", "step": step, "wall_time": 1.82e9 + step, "value": loss.item()})
    save(name, hp, rows)

torch.manual_seed(1)
ts, ys = seqs(4000, 50, 4, 1)
# Sick: the temperature divides where it should multiply (logits / 0.05): 20x logits at init.
run_hf_style("ho3_gru_temperature_divides", {"num_labels": 4, "temperature": 0.05}, GRUClf(50, 4, temp=0.05), ts, ys)
# Healthy: the same GRU, temperature 1.
run_hf_style("ho3_healthy_gru_clf", {"num_labels": 4, "temperature": 1.0}, GRUClf(50, 4), ts, ys)
# Sick: tabular features fed in their raw units (no StandardScaler): logits in the hundreds.
xt, yt = tabular(5000, 20, 2, raw_scale=True)
run_epochs("ho3_tabular_unscaled_features", {"n_classes": 20, "batch_size": 50},
           nn.Sequential(nn.Linear(12, 64), nn.ReLU(), nn.Linear(64, 20)), xt, yt)
# Healthy: the same net on standardized features.
xs, ys2 = tabular(5000, 20, 2)
run_epochs("ho3_healthy_tabular_scaled", {"n_classes": 20, "batch_size": 50},
           nn.Sequential(nn.Linear(12, 64), nn.ReLU(), nn.Linear(64, 20)), xs, ys2)
# Sick: the char LM sums its token losses per sequence (32 positions) instead of averaging.
tx = text(3000, 96, 3)
run_lm("ho3_charlm_loss_summed_per_sequence", {"vocab_size": 96, "seq_len": 32}, CharLM(96), tx, per_seq_sum=True, lr=2e-4)
# Healthy: the same char LM with the mean.
run_lm("ho3_healthy_charlm", {"vocab_size": 96, "seq_len": 32}, CharLM(96), tx)
# Healthy (trap): two heads, each a 5-way CE, logged as their sum: 2 ln K at init by design.
class TwoHead(nn.Module):
    def __init__(self): super().__init__(); self.b = nn.Sequential(nn.Linear(12, 64), nn.ReLU()); self.h1 = nn.Linear(64, 5); self.h2 = nn.Linear(64, 5)
    def forward(self, x): h = self.b(x); return torch.stack([self.h1(h), self.h2(h)], 1)
x5, y5 = tabular(4000, 5, 4); y5b = (y5 + (x5[:, 0] > 0).long()) % 5
yy = torch.stack([y5, y5b], 1)
run_hf_style("ho3_healthy_two_heads_summed", {"num_labels": 5}, TwoHead(), x5, yy,
             loss_fn=lambda o, y: F.cross_entropy(o[:, 0], y[:, 0]) + F.cross_entropy(o[:, 1], y[:, 1]), every=10)
# Healthy: a pretrained encoder fine-tuned with a fresh 3-way head: starts well below ln(vocab).
enc = nn.Sequential(nn.Linear(12, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU())
xp, yp = tabular(4000, 8, 5); pre = nn.Sequential(enc, nn.Linear(64, 8)); op = torch.optim.Adam(pre.parameters(), 1e-3)
for i in range(300):
    idx = torch.randint(0, 4000, (64,)); l = F.cross_entropy(pre(xp[idx]), yp[idx]); op.zero_grad(); l.backward(); op.step()
x3, y3 = tabular(3000, 3, 6)
run_hf_style("ho3_healthy_finetune_new_head", {"num_labels": 3, "vocab_size": 30522}, nn.Sequential(enc, nn.Linear(64, 3)), x3, y3, lr=1e-4)
