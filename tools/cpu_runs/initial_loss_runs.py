# Runs for the "initial loss far from ln K" check (issue 18), each from a real cause, with K in
# the hparams as PyTorch's add_hparams writes it. Tuning set: the rule's factor was set on these.
#   /usr/bin/python3 initial_loss_runs.py OUT   (then tw-events-from-jsonl --hparams OUT/RUN/hparams.json ...)
import json, math, os, sys
import torch, torch.nn as nn, torch.nn.functional as F
OUT = sys.argv[1]
T0 = 1.81e9
torch.set_num_threads(1)

class Log:
    def __init__(self, name, hp): self.name, self.hp, self.rows = name, hp, []
    def __call__(self, tag, step, v): self.rows.append({"tag": tag, "step": step, "wall_time": T0 + step * 0.2, "value": float(v)})
    def save(self):
        d = os.path.join(OUT, self.name); os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "log.jsonl"), "w") as f:
            for r in self.rows: f.write(json.dumps(r) + "\n")
        with open(os.path.join(d, "hparams.json"), "w") as f: json.dump(self.hp, f)

def images(n, k=10, seed=0, scale=1.0):
    # 16x16 template images: each class a fixed random pattern, plus noise; pixels in [0, 1] * scale.
    g = torch.Generator().manual_seed(seed)
    tmpl = torch.rand(k, 1, 16, 16, generator=torch.Generator().manual_seed(7))
    y = torch.randint(0, k, (n,), generator=g)
    x = (0.6 * tmpl[y] + 0.4 * torch.rand(n, 1, 16, 16, generator=g)).clamp(0, 1)
    return x * scale, y

def blobs(n, d=32, k=10, seed=0):
    g = torch.Generator().manual_seed(seed)
    c = torch.randn(k, d, generator=torch.Generator().manual_seed(11)) * 1.5
    y = torch.randint(0, k, (n,), generator=g)
    return c[y] + torch.randn(n, d, generator=g), y

def fit(name, hp, m, x, y, steps=300, lr=1e-3, bs=64, opt="adam", loss_fn=None, every=10, log_first=True):
    log = Log(name, hp); g = torch.Generator().manual_seed(3)
    o = torch.optim.Adam(m.parameters(), lr=lr) if opt == "adam" else torch.optim.SGD(m.parameters(), lr=lr, momentum=0.9)
    for step in range(steps + 1):
        idx = torch.randint(0, len(x), (bs,), generator=g)
        out = m(x[idx]); loss = (loss_fn or F.cross_entropy)(out, y[idx])
        if (step == 0 and log_first) or (step > 0 and step % every == 0):
            log("train/loss", step, loss.item())
            log("train/accuracy", step, (out.argmax(-1) == y[idx]).float().mean().item())
        o.zero_grad(); loss.backward(); o.step()
    log.save(); print(f"{name:40s} first {log.rows[0]['value']:.3f} lnK {math.log(hp.get('num_classes', hp.get('vocab_size', 2))):.3f} last {loss.item():.3f}")

def mlp(d, k, h=128): return nn.Sequential(nn.Linear(d, h), nn.ReLU(), nn.Linear(h, h), nn.ReLU(), nn.Linear(h, k))
def cnn(k): return nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(32 * 16, 64), nn.ReLU(), nn.Linear(64, k))

class TinyLM(nn.Module):
    def __init__(self, v, d=64, init_std=0.02, head_std=None):
        super().__init__()
        self.emb = nn.Embedding(v, d); self.pos = nn.Embedding(32, d)
        layer = nn.TransformerEncoderLayer(d, 4, 4 * d, dropout=0.0, batch_first=True, norm_first=True)
        self.body = nn.TransformerEncoder(layer, 2); self.ln = nn.LayerNorm(d); self.head = nn.Linear(d, v, bias=False)
        nn.init.normal_(self.emb.weight, std=init_std); nn.init.normal_(self.pos.weight, std=init_std)
        nn.init.normal_(self.head.weight, std=head_std if head_std is not None else init_std)
    def forward(self, t):
        n = t.shape[1]; mask = torch.triu(torch.full((n, n), float("-inf")), 1)
        h = self.body(self.emb(t) + self.pos(torch.arange(n)), mask=mask)
        return self.head(self.ln(h))

def tokens(n, v, seed=0, L=17):
    # A Markov chain over v tokens with a sparse random transition table.
    g = torch.Generator().manual_seed(seed)
    T = torch.rand(v, v, generator=torch.Generator().manual_seed(5)) ** 8; T = T / T.sum(1, keepdim=True)
    t = torch.zeros(n, L, dtype=torch.long); t[:, 0] = torch.randint(0, v, (n,), generator=g)
    for i in range(1, L): t[:, i] = torch.multinomial(T[t[:, i - 1]], 1, generator=g).squeeze(1)
    return t

def fit_lm(name, hp, m, t, steps=200, lr=1e-3, bs=32, every=10, loss_scale=1.0):
    log = Log(name, hp); g = torch.Generator().manual_seed(4); o = torch.optim.AdamW(m.parameters(), lr=lr)
    v = hp["vocab_size"]
    for step in range(steps + 1):
        b = t[torch.randint(0, len(t), (bs,), generator=g)]
        logits = m(b[:, :-1]); loss = F.cross_entropy(logits.reshape(-1, v), b[:, 1:].reshape(-1)) * loss_scale
        if step % every == 0: log("loss", step, loss.item())
        o.zero_grad(); loss.backward(); torch.nn.utils.clip_grad_norm_(m.parameters(), 1.0); o.step()
    log.save(); print(f"{name:40s} first {log.rows[0]['value']:.3f} lnK {math.log(v):.3f} last {loss.item():.3f}")

torch.manual_seed(0)
xb, yb = blobs(4000)
xi, yi = images(3000)
# Healthy, default inits.
fit("healthy_init_mlp_k10", {"num_classes": 10, "lr": 1e-3}, mlp(32, 10), xb, yb)
xb100, yb100 = blobs(6000, k=100, seed=2)
fit("healthy_init_mlp_k100", {"num_classes": 100, "lr": 1e-3}, mlp(32, 100), xb100, yb100)
fit("healthy_init_cnn_k10", {"num_classes": 10, "lr": 1e-3}, cnn(10), xi, yi)
xb2, yb2 = blobs(3000, k=2, seed=3)
fit("healthy_init_mlp_binary", {"num_classes": 2, "lr": 1e-2}, mlp(32, 2), xb2, yb2, opt="sgd", lr=1e-2)
tk = tokens(2000, 128)
fit_lm("healthy_init_lm_v128", {"vocab_size": 128, "n_layer": 2}, TinyLM(128), tk)
# Sick: pixels left in 0..255 (the ToTensor()/255 step dropped): logits in the hundreds at init.
xr, yr = images(3000, scale=255.0)
fit("init_unnormalised_pixels_cnn", {"num_classes": 10, "lr": 1e-3}, cnn(10), xr, yr)
# Sick: the classifier head initialised with std 1 (nn.init.normal_ without std=0.01).
m = mlp(32, 10); nn.init.normal_(m[4].weight, std=1.0)
fit("init_head_init_std1_mlp", {"num_classes": 10, "lr": 1e-3}, m, xb, yb)
# Sick: loss summed over the batch (reduction='sum') and logged as is: 64 x ln K at init.
fit("init_reduction_sum_mlp", {"num_classes": 10, "lr": 1e-4}, mlp(32, 10), xb, yb, lr=1e-4,
    loss_fn=lambda o, y: F.cross_entropy(o, y, reduction="sum"))
# Sick: an LM whose untied output head starts at std 1 (the embedding's init copied to the head).
fit_lm("init_lm_head_std1", {"vocab_size": 128, "n_layer": 2}, TinyLM(128, head_std=1.0), tk)
