"""Console logs of other frameworks, each from one small real training run on
CPU, printed the way that framework prints (see README.md for the sources).
Every printed number is recorded in expected.json as the float of the text
printed, at the step the framework shows (or implies; see README)."""

import datetime
import math
import os
import shutil
import statistics
import tempfile
import time

import torch
import torch.nn as nn

from common import Screen, shown, write_text


# --------------------------------------------------------------------------
# data and models shared by several runs
# --------------------------------------------------------------------------

def clusters(n, dim, classes, gen, spread):
    centers = torch.randn(classes, dim, generator=gen) * 1.2
    y = torch.randint(0, classes, (n,), generator=gen)
    return centers, centers[y] + spread * torch.randn(n, dim, generator=gen), y


def markov_tokens(n, seed, vocab=14):
    """A token stream from a sparse random Markov chain (about 1.2 nats/token
    of entropy against ln(14) = 2.64 for a uniform guess)."""
    g = torch.Generator().manual_seed(seed)
    T = torch.full((vocab, vocab), 0.02)
    for i in range(vocab):
        nxt = torch.randperm(vocab, generator=g)[:3]
        T[i, nxt] += torch.tensor([3.0, 1.5, 0.8])
    T = T / T.sum(1, keepdim=True)
    x = [0]
    for _ in range(n - 1):
        x.append(int(torch.multinomial(T[x[-1]], 1, generator=g)))
    return torch.tensor(x), vocab


class Block(nn.Module):
    def __init__(self, d, h, block):
        super().__init__()
        self.ln_1 = nn.LayerNorm(d)
        self.attn = nn.MultiheadAttention(d, h, batch_first=True)
        self.ln_2 = nn.LayerNorm(d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
        self.register_buffer("mask", torch.triu(torch.ones(block, block, dtype=torch.bool), 1))

    def forward(self, x):
        t = x.size(1)
        a = self.ln_1(x)
        x = x + self.attn(a, a, a, attn_mask=self.mask[:t, :t], need_weights=False)[0]
        return x + self.mlp(self.ln_2(x))


class TinyGPT(nn.Module):
    def __init__(self, vocab, n_embd=32, n_head=2, n_layer=2, block_size=32):
        super().__init__()
        self.n_embd, self.n_head, self.n_layer, self.block_size = n_embd, n_head, n_layer, block_size
        self.wte = nn.Embedding(vocab, n_embd)
        self.wpe = nn.Embedding(block_size, n_embd)
        self.h = nn.ModuleList([Block(n_embd, n_head, block_size) for _ in range(n_layer)])
        self.ln_f = nn.LayerNorm(n_embd)
        self.lm_head = nn.Linear(n_embd, vocab, bias=False)

    def get_num_params(self, non_embedding=True):
        n = sum(p.numel() for p in self.parameters())
        return n - self.wpe.weight.numel() if non_embedding else n

    def forward(self, idx, targets):
        t = idx.size(1)
        x = self.wte(idx) + self.wpe(torch.arange(t))
        for b in self.h:
            x = b(x)
        logits = self.lm_head(self.ln_f(x))
        return logits, nn.functional.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))

    def estimate_mfu(self, fwdbwd_per_iter, dt):
        """nanoGPT model.py: MFU against an A100's 312 TFLOPS bf16 peak."""
        N = self.get_num_params()
        L, H, Q, T = self.n_layer, self.n_head, self.n_embd // self.n_head, self.block_size
        flops_per_token = 6 * N + 12 * L * H * Q * T
        flops_per_iter = flops_per_token * T * fwdbwd_per_iter
        return flops_per_iter * (1.0 / dt) / 312e12


def lm_batch(data, gen, bs, block):
    ix = torch.randint(0, len(data) - block - 1, (bs,), generator=gen)
    x = torch.stack([data[i:i + block] for i in ix])
    y = torch.stack([data[i + 1:i + 1 + block] for i in ix])
    return x, y


class Shapes:
    """Synthetic 1x24x24 images holding one object of 3 kinds (filled square,
    hollow square, cross) at a random place and size; target = class + box
    (cx, cy, w, h in [0, 1])."""

    def __init__(self, n, gen, size=24):
        imgs = torch.zeros(n, 1, size, size)
        cls = torch.randint(0, 3, (n,), generator=gen)
        boxes = torch.zeros(n, 4)
        for i in range(n):
            s = int(torch.randint(6, 13, (1,), generator=gen))
            x0 = int(torch.randint(0, size - s, (1,), generator=gen))
            y0 = int(torch.randint(0, size - s, (1,), generator=gen))
            c = int(cls[i])
            if c == 0:
                imgs[i, 0, y0:y0 + s, x0:x0 + s] = 1
            elif c == 1:
                imgs[i, 0, y0:y0 + s, x0:x0 + s] = 1
                imgs[i, 0, y0 + 2:y0 + s - 2, x0 + 2:x0 + s - 2] = 0
            else:
                imgs[i, 0, y0 + s // 2 - 1:y0 + s // 2 + 1, x0:x0 + s] = 1
                imgs[i, 0, y0:y0 + s, x0 + s // 2 - 1:x0 + s // 2 + 1] = 1
            boxes[i] = torch.tensor([(x0 + s / 2) / size, (y0 + s / 2) / size, s / size, s / size])
        self.imgs = imgs + 0.1 * torch.randn(n, 1, size, size, generator=gen)
        self.cls = cls
        self.boxes = boxes


class TinyDetector(nn.Module):
    def __init__(self, hidden_bias=None):
        super().__init__()
        self.backbone = nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                                      nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                                      nn.Flatten())
        self.fc = nn.Linear(32 * 6 * 6, 64)
        self.cls_head = nn.Linear(64, 3)
        self.box_head = nn.Linear(64, 4)
        if hidden_bias is not None:
            for m in (self.backbone[0], self.backbone[3], self.fc):
                nn.init.constant_(m.bias, hidden_bias)

    def forward(self, x):
        h = torch.relu(self.fc(self.backbone(x)))
        return self.cls_head(h), torch.sigmoid(self.box_head(h))


def stamp_d2():
    return datetime.datetime.now().strftime("%m/%d %H:%M:%S")


# --------------------------------------------------------------------------
# Keras 3 model.fit progress (keras/src/utils/progbar.py, callbacks/progbar_logger.py)
# --------------------------------------------------------------------------

class KerasProgbar:
    def __init__(self, screen, target, verbose, width=20, interval=0.05, unit_name="step"):
        self.s, self.target, self.verbose = screen, target, verbose
        self.width, self.interval, self.unit_name = width, interval, unit_name
        self._dynamic_display = True  # 'posix' is in sys.modules on Linux
        self._seen_so_far = 0
        self._values = {}
        self._values_order = []
        self._start = time.time()
        self._last_update = 0
        self._time_after_first_step = None
        self._prev_total_width = 0
        self.last_printed = None  # {key: text} of the last line printed

    @staticmethod
    def _format_time(tpu, unit_name):
        if tpu >= 1 or tpu == 0:
            return f" {tpu:.0f}s/{unit_name}"
        if tpu >= 1e-3:
            return f" {tpu * 1000.0:.0f}ms/{unit_name}"
        return f" {tpu * 1000000.0:.0f}us/{unit_name}"

    def _estimate_step_duration(self, current, now):
        if current:
            if self._time_after_first_step is not None and current > 1:
                tpu = (now - self._time_after_first_step) / (current - 1)
            else:
                tpu = (now - self._start) / current
            if current == 1:
                self._time_after_first_step = now
            return tpu
        return 0

    def update(self, current, values, finalize):
        for k, v in values:
            if k not in self._values_order:
                self._values_order.append(k)
            if finalize:
                self._values[k] = [v, 1]
            else:
                base = max(current - self._seen_so_far, 1)
                if k not in self._values:
                    self._values[k] = [v * base, base]
                else:
                    self._values[k][0] += v * base
                    self._values[k][1] += base
        self._seen_so_far = current
        message = ""
        special_char_len = 0
        now = time.time()
        tpu = self._estimate_step_duration(current, now)
        printed = {}
        if self.verbose == 1:
            if now - self._last_update < self.interval and not finalize:
                return None
            message += "\b" * self._prev_total_width
            message += "\r"
            numdigits = int(math.log10(self.target)) + 1
            bar = (f"%{numdigits}d/%d") % (current, self.target)
            bar = f"\x1b[1m{bar}\x1b[0m "
            special_char_len += 8
            prog_width = int(self.width * float(current) / self.target)
            if prog_width > 0:
                bar += f"\33[32m{'━' * prog_width}\x1b[0m"
                special_char_len += 9
            bar += f"\33[37m{'━' * (self.width - prog_width)}\x1b[0m"
            special_char_len += 9
            message += bar
            if not finalize:
                eta = tpu * (self.target - current)
                if eta > 3600:
                    eta_format = "%d:%02d:%02d" % (eta // 3600, (eta % 3600) // 60, eta % 60)
                elif eta > 60:
                    eta_format = "%d:%02d" % (eta // 60, eta % 60)
                else:
                    eta_format = "%ds" % eta
                info = f" \x1b[1m{eta_format}\x1b[0m"
            else:
                info = f" \x1b[1m{now - self._start:.0f}s\x1b[0m"
            special_char_len += 8
            info += self._format_time(tpu, self.unit_name)
            for k in self._values_order:
                info += f" - {k}:"
                vals, count = self._values[k]
                avg = vals / max(1, count)
                text = f"{avg:.4f}" if abs(avg) > 1e-3 else f"{avg:.4e}"
                info += " " + text
                printed[k] = text
            message += info
            total_width = len(bar) + len(info) - special_char_len
            if self._prev_total_width > total_width:
                message += " " * (self._prev_total_width - total_width)
            if finalize:
                message += "\n"
            self.s.write(message)
            self._prev_total_width = total_width
        elif self.verbose == 2:
            if finalize:
                numdigits = int(math.log10(self.target)) + 1
                count = f"%{numdigits}d/%d" % (current, self.target)
                info = f"{count} - {now - self._start:.0f}s"
                info += f" -{self._format_time(tpu, self.unit_name)}"
                for k in self._values_order:
                    info += f" - {k}:"
                    vals, cnt = self._values[k]
                    avg = vals / max(1, cnt)
                    text = f"{avg:.4f}" if avg > 1e-3 else f"{avg:.4e}"
                    info += " " + text
                    printed[k] = text
                self.s.write(info + "\n")
            else:
                return None
        self._last_update = now
        return printed


def keras_stuck(out_root, exp, verbose, name):
    """An MLP on 4 Gaussian clusters fitted with SGD at learning_rate=1e-5
    (about 1000x too small; 1e-2 trains it in a few epochs): the weights barely
    move, so loss stays near ln(4) = 1.386 and accuracy near chance, creeping
    down by ~2e-4 per epoch."""
    torch.manual_seed(21)
    g = torch.Generator().manual_seed(21)
    centers, x, y = clusters(1024, 20, 4, g, 1.0)
    yv = torch.randint(0, 4, (256,), generator=g)
    xv = centers[yv] + torch.randn(256, 20, generator=g)
    model = nn.Sequential(nn.Linear(20, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU(),
                          nn.Linear(128, 4))
    opt = torch.optim.SGD(model.parameters(), lr=1e-5)
    screen = Screen()
    rel = f"console/{name}.log"
    epochs, bs = 8, 32
    steps = len(x) // bs
    pg = torch.Generator().manual_seed(22)
    for ep in range(epochs):
        bar = KerasProgbar(screen, steps, verbose)
        screen.write(f"Epoch {ep + 1}/{epochs}\n")  # ProgbarLogger.on_epoch_begin
        order = torch.randperm(len(x), generator=pg)
        loss_sum, acc_sum, seen = 0.0, 0.0, 0
        for b in range(steps):
            idx = order[b * bs:(b + 1) * bs]
            logits = model(x[idx])
            loss = nn.functional.cross_entropy(logits, y[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            # Keras 3 running metrics: loss tracker and accuracy are means over samples
            loss_sum += loss.item() * len(idx)
            acc_sum += (logits.argmax(1) == y[idx]).float().sum().item()
            seen += len(idx)
            logs = {"accuracy": acc_sum / seen, "loss": loss_sum / seen}  # sorted keys
            if verbose == 1:
                bar.update(b + 1, list(logs.items()), finalize=False)
        with torch.no_grad():
            lv = model(xv)
            val = {"accuracy": (lv.argmax(1) == yv).float().mean().item(),
                   "loss": nn.functional.cross_entropy(lv, yv).item()}
        epoch_logs = dict(logs)
        epoch_logs.update({"val_" + k: v for k, v in val.items()})
        printed = bar.update(steps, list(epoch_logs.items()), finalize=True)
        for k, text in printed.items():
            exp.add(rel, k, ep + 1, shown(text))
    write_text(os.path.join(out_root, rel), screen.text())


# --------------------------------------------------------------------------
# nanoGPT train.py
# --------------------------------------------------------------------------

def nanogpt_healthy(out_root, exp):
    """A 2-layer character-level GPT on a Markov-chain token stream, nanoGPT's
    loop (AdamW, warmup + cosine decay, grad_clip 1.0, eval every 50 iters):
    loss falls from ln(14) toward the chain's entropy."""
    torch.manual_seed(31)
    data, vocab = markov_tokens(20000, 31)
    n = int(0.9 * len(data))
    train_data, val_data = data[:n], data[n:]
    g = torch.Generator().manual_seed(32)
    block, bs = 32, 12
    learning_rate, min_lr, warmup_iters, lr_decay_iters, max_iters = 1e-3, 1e-4, 20, 200, 200
    eval_interval, eval_iters, log_interval = 50, 10, 10
    model = TinyGPT(vocab, block_size=block)
    decay = [p for p in model.parameters() if p.dim() >= 2]
    nodecay = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                             {"params": nodecay, "weight_decay": 0.0}],
                            lr=learning_rate, betas=(0.9, 0.99))
    screen = Screen()
    rel = "console/nanogpt_char_healthy.log"
    out_dir = tempfile.mkdtemp()

    def get_lr(it):
        if it < warmup_iters:
            return learning_rate * (it + 1) / (warmup_iters + 1)
        if it > lr_decay_iters:
            return min_lr
        ratio = (it - warmup_iters) / (lr_decay_iters - warmup_iters)
        return min_lr + 0.5 * (1.0 + math.cos(math.pi * ratio)) * (learning_rate - min_lr)

    @torch.no_grad()
    def estimate_loss():
        out = {}
        model.eval()
        for split, d in (("train", train_data), ("val", val_data)):
            losses = torch.zeros(eval_iters)
            for k in range(eval_iters):
                X, Y = lm_batch(d, g, bs, block)
                _, loss = model(X, Y)
                losses[k] = loss.item()
            out[split] = losses.mean()
        model.train()
        return out

    iter_num, best_val, running_mfu, local_iter = 0, 1e9, -1.0, 0
    X, Y = lm_batch(train_data, g, bs, block)
    t0 = time.time()
    while True:
        lr = get_lr(iter_num)
        for pgp in opt.param_groups:
            pgp["lr"] = lr
        if iter_num % eval_interval == 0:
            losses = estimate_loss()
            tl, vl = f"{losses['train']:.4f}", f"{losses['val']:.4f}"
            screen.print(f"step {iter_num}: train loss {tl}, val loss {vl}")
            exp.add(rel, "train loss", iter_num, shown(tl))
            exp.add(rel, "val loss", iter_num, shown(vl))
            if losses["val"] < best_val:
                best_val = losses["val"]
                if iter_num > 0:
                    screen.print("saving checkpoint to out")
                    torch.save({"model": model.state_dict(), "iter_num": iter_num,
                                "best_val_loss": best_val}, os.path.join(out_dir, "ckpt.pt"))
        _, loss = model(X, Y)
        X, Y = lm_batch(train_data, g, bs, block)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        t1 = time.time()
        dt = t1 - t0
        t0 = t1
        if iter_num % log_interval == 0:
            lossf = loss.item()
            if local_iter >= 5:
                mfu = model.estimate_mfu(bs, dt)
                running_mfu = mfu if running_mfu == -1.0 else 0.9 * running_mfu + 0.1 * mfu
            lt, tt, mt = f"{lossf:.4f}", f"{dt * 1000:.2f}", f"{running_mfu * 100:.2f}"
            screen.print(f"iter {iter_num}: loss {lt}, time {tt}ms, mfu {mt}%")
            exp.add(rel, "loss", iter_num, shown(lt))
            exp.add(rel, "time", iter_num, shown(tt))
            exp.add(rel, "mfu", iter_num, shown(mt))
        iter_num += 1
        local_iter += 1
        if iter_num > max_iters:
            break
    shutil.rmtree(out_dir)
    write_text(os.path.join(out_root, rel), screen.text())


# --------------------------------------------------------------------------
# Megatron-LM training_log / evaluate_and_print_results
# --------------------------------------------------------------------------

def megatron_lr_too_high(out_root, exp):
    """The same tiny GPT trained Megatron-style (AdamW, clip 1.0, linear warmup
    over 20 iterations, then --lr-decay-style constant) at a learning rate of
    1.0, about 1000x what this model trains well at (nanoGPT's run uses 1e-3):
    the loss climbs above the uniform-guess level ln(14) = 2.64 during warmup
    and never gets clearly below it, with grad-norm spikes."""
    torch.manual_seed(41)
    data, vocab = markov_tokens(20000, 41)
    n = int(0.9 * len(data))
    train_data, val_data = data[:n], data[n:]
    g = torch.Generator().manual_seed(42)
    block, gbs = 32, 16
    train_iters, log_interval, eval_interval, eval_iters = 200, 10, 50, 5
    peak, warmup = 1.0, 20
    model = TinyGPT(vocab, block_size=block)
    opt = torch.optim.AdamW(model.parameters(), lr=0.0, betas=(0.9, 0.95), weight_decay=0.1)
    screen = Screen()
    rel = "console/megatron_gpt_lr_too_high.log"

    def lr_at(num_steps):  # OptimizerParamScheduler.get_lr: linear warmup, then constant
        if num_steps <= warmup:
            return peak * num_steps / warmup
        return peak

    for pgp in opt.param_groups:
        pgp["lr"] = lr_at(0)
    consumed = 0
    total_loss, advanced = 0.0, 0
    t_interval = time.time()
    for iteration in range(1, train_iters + 1):
        x, y = lm_batch(train_data, g, gbs, block)
        _, loss = model(x, y)
        opt.zero_grad()
        loss.backward()
        grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0).item()
        opt.step()
        for pgp in opt.param_groups:  # opt_param_scheduler.step(increment=gbs) after the step
            pgp["lr"] = lr_at(iteration)
        consumed += gbs
        total_loss += loss.item()
        advanced += 1
        if iteration % log_interval == 0:
            elapsed = (time.time() - t_interval) / log_interval
            t_interval = time.time()
            lr = opt.param_groups[0]["lr"]
            f = {"consumed samples": f"{consumed:12d}",
                 "elapsed time per iteration (ms)": f"{elapsed * 1000.0:.1f}",
                 "learning rate": f"{lr:.6E}",
                 "global batch size": f"{gbs:5d}",
                 "lm loss": f"{total_loss / advanced:.6E}",
                 "loss scale": f"{1.0:.1f}",
                 "grad norm": f"{grad_norm:.3f}",
                 "number of skipped iterations": f"{0:3d}",
                 "number of nan iterations": f"{0:3d}"}
            line = f" [{datetime.datetime.now().strftime('%Y-%m-%d %H:%M:%S')}]"
            line += " iteration {:8d}/{:8d} |".format(iteration, train_iters)
            for k, v in f.items():
                line += f" {k}: {v} |"
            screen.print(line)
            for k, v in f.items():
                exp.add(rel, k, iteration, shown(v))
            total_loss, advanced = 0.0, 0
        if iteration % eval_interval == 0:
            model.eval()
            with torch.no_grad():
                vl = sum(model(*lm_batch(val_data, g, gbs, block))[1].item()
                         for _ in range(eval_iters)) / eval_iters
            model.train()
            value, ppl = f"{vl:.6E}", f"{math.exp(min(20, vl)):.6E}"
            string = f" validation loss at iteration {iteration} | "
            string += f"lm loss value: {value} | lm loss PPL: {ppl} | "
            length = len(string) + 1
            screen.print("-" * length)
            screen.print(string)
            screen.print("-" * length)
            exp.add(rel, "lm loss value", iteration, shown(value))
            exp.add(rel, "lm loss PPL", iteration, shown(ppl))
    write_text(os.path.join(out_root, rel), screen.text())


# --------------------------------------------------------------------------
# detectron2 CommonMetricPrinter through the "d2" stdout logger
# --------------------------------------------------------------------------

def detectron2_healthy(out_root, exp):
    """A tiny one-object detector (class head + box head) trained the way
    detectron2's SimpleTrainer does (SGD momentum 0.9, base lr 0.01 with linear
    warmup over 20 iters and x0.1 at iter 150, PeriodicWriter every 20 iters):
    both losses fall steadily."""
    torch.manual_seed(51)
    g = torch.Generator().manual_seed(51)
    ds = Shapes(640, g)
    model = TinyDetector()
    base_lr, max_iter, period, window, bs = 0.01, 200, 20, 20, 16
    opt = torch.optim.SGD(model.parameters(), lr=base_lr, momentum=0.9, weight_decay=1e-4)

    def lr_factor(it):  # WarmupMultiStepLR: linear warmup from 0.001, gamma 0.1 at 150
        f = 0.1 if it >= 150 else 1.0
        if it < 20:
            a = it / 20
            f *= 0.001 * (1 - a) + a
        return f

    screen = Screen()
    rel = "console/detectron2_box_healthy.log"
    hist = {}  # name -> list of values, insertion order = EventStorage histories order
    pg = torch.Generator().manual_seed(52)
    order = torch.randperm(len(ds.cls), generator=pg)
    pos = 0
    for pgp in opt.param_groups:
        pgp["lr"] = base_lr * lr_factor(0)
    for it in range(max_iter):
        t_start = time.perf_counter()
        if pos + bs > len(order):
            order, pos = torch.randperm(len(ds.cls), generator=pg), 0
        idx = order[pos:pos + bs]
        pos += bs
        x, c, b = ds.imgs[idx], ds.cls[idx], ds.boxes[idx]
        data_time = time.perf_counter() - t_start
        logits, pred = model(x)
        loss_dict = {"loss_cls": nn.functional.cross_entropy(logits, c),
                     "loss_box_reg": nn.functional.smooth_l1_loss(pred, b, beta=0.1) * 4}
        losses = sum(loss_dict.values())
        opt.zero_grad()
        losses.backward()
        metrics = {k: v.item() for k, v in loss_dict.items()}
        hist.setdefault("data_time", []).append(data_time)
        hist.setdefault("total_loss", []).append(sum(metrics.values()))
        for k, v in metrics.items():
            hist.setdefault(k, []).append(v)
        opt.step()
        # hooks after_step: IterationTimer (from the 3rd iteration), LRScheduler
        if it + 1 >= 3:
            hist.setdefault("time", []).append(time.perf_counter() - t_start)
        hist.setdefault("lr", []).append(opt.param_groups[0]["lr"])
        for pgp in opt.param_groups:
            pgp["lr"] = base_lr * lr_factor(it + 1)
        if (it + 1) % period == 0 or it == max_iter - 1:
            eta = statistics.median(hist["time"][-1000:]) * (max_iter - it - 1)
            losses_txt = {k: "{:.4g}".format(statistics.median(v[-window:]))
                          for k, v in hist.items() if "loss" in k}
            times = {"time": "{:.4f}".format(sum(hist["time"]) / len(hist["time"])),
                     "last_time": "{:.4f}".format(hist["time"][-1]),
                     "data_time": "{:.4f}".format(sum(hist["data_time"][-20:]) / len(hist["data_time"][-20:])),
                     "last_data_time": "{:.4f}".format(hist["data_time"][-1])}
            lr_txt = "{:.5g}".format(hist["lr"][-1])
            msg = " {eta}iter: {iter}  {losses}  {non_losses}  {avg_time}{last_time}{avg_data_time}{last_data_time} lr: {lr}  {memory}".format(
                eta=f"eta: {datetime.timedelta(seconds=int(eta))}  ",
                iter=it, losses="  ".join(f"{k}: {v}" for k, v in losses_txt.items()),
                non_losses="",
                avg_time=f"time: {times['time']}  ", last_time=f"last_time: {times['last_time']}  ",
                avg_data_time=f"data_time: {times['data_time']}  ",
                last_data_time=f"last_data_time: {times['last_data_time']}  ",
                lr=lr_txt, memory="")  # max_mem only when CUDA is available
            screen.print(f"[{stamp_d2()} d2.utils.events]: " + msg)
            for k, v in {**losses_txt, **times, "lr": lr_txt}.items():
                exp.add(rel, k, it, shown(v))
    write_text(os.path.join(out_root, rel), screen.text())


# --------------------------------------------------------------------------
# mmengine LogProcessor.get_log_after_iter through MMLogger's file handler
# --------------------------------------------------------------------------

def mmdet_dead_relu(out_root, exp):
    """The tiny detector with its hidden layers' biases initialised to -3:
    almost every ReLU starts dead and gets no gradient, so loss_cls stays near
    ln(3), acc near chance and loss_bbox barely moves for all 4 epochs."""
    torch.manual_seed(61)
    g = torch.Generator().manual_seed(61)
    ds = Shapes(800, g)
    model = TinyDetector(hidden_bias=-3.0)
    base_lr, epochs, bs, interval, window = 0.02, 4, 16, 10, 10
    n_iter = len(ds.cls) // bs  # 50 per epoch
    max_iters = epochs * n_iter
    opt = torch.optim.SGD(model.parameters(), lr=base_lr, momentum=0.9, weight_decay=1e-4)
    screen = Screen()
    rel = "console/mmdet_dead_relu_init.log"
    scal = {}  # message hub scalars, insertion order
    pg = torch.Generator().manual_seed(62)
    t_iter = time.time()
    time_tot, it_global = 0.0, 0
    for ep in range(1, epochs + 1):
        order = torch.randperm(len(ds.cls), generator=pg)
        for b in range(n_iter):
            t_data = time.time()
            idx = order[b * bs:(b + 1) * bs]
            x, c, box = ds.imgs[idx], ds.cls[idx], ds.boxes[idx]
            data_time = time.time() - t_data + (t_data - t_iter)
            # LinearLR warmup over the first 20 iters (start_factor 0.001), by iteration
            factor = 0.001 + (1 - 0.001) * min(it_global, 20) / 20
            for pgp in opt.param_groups:
                pgp["lr"] = base_lr * factor
            scal.setdefault("base_lr", []).append(base_lr)
            scal.setdefault("lr", []).append(opt.param_groups[0]["lr"])
            scal.setdefault("data_time", []).append(data_time)
            logits, pred = model(x)
            loss_cls = nn.functional.cross_entropy(logits, c)
            loss_bbox = nn.functional.l1_loss(pred, box)
            loss = loss_cls + loss_bbox
            opt.zero_grad()
            loss.backward()
            opt.step()
            acc = (logits.argmax(1) == c).float().mean().item() * 100
            for k, v in (("loss", loss.item()), ("loss_cls", loss_cls.item()),
                         ("acc", acc), ("loss_bbox", loss_bbox.item())):
                scal.setdefault(k, []).append(v)
            now = time.time()
            scal.setdefault("time", []).append(now - t_iter)
            time_tot += now - t_iter
            t_iter = now
            it_global += 1
            if (b + 1) % interval == 0:
                eta = time_tot / it_global * (max_iters - it_global)
                tag = {}
                for k, v in scal.items():
                    if any(s in k for s in ("loss", "time", "data_time", "grad_norm")):
                        tag[k] = sum(v[-window:]) / len(v[-window:])
                    else:
                        tag[k] = v[-1]
                lr_parts = [f"{k}: {tag[k]:.4e}" for k in ("base_lr", "lr")]
                head = f"Epoch(train){'[' + str(ep) + ']':>{len(str(epochs)) + 3}}" \
                       f"[{str(b + 1).rjust(len(str(n_iter)))}/{n_iter}]  "
                line = head + " ".join(lr_parts) + "  "
                line += f"eta: {datetime.timedelta(seconds=int(eta))}  "
                line += f"time: {tag['time']:.4f}  data_time: {tag['data_time']:.4f}  "
                rest = {k: f"{tag[k]:.4f}" for k in ("loss", "loss_cls", "acc", "loss_bbox")}
                line += "  ".join(f"{k}: {v}" for k, v in rest.items())
                stamp = datetime.datetime.now().strftime("%Y/%m/%d %H:%M:%S")
                screen.print(f"{stamp} - mmengine - INFO - {line}")
                for k, text in [("base_lr", f"{tag['base_lr']:.4e}"), ("lr", f"{tag['lr']:.4e}"),
                                ("time", f"{tag['time']:.4f}"),
                                ("data_time", f"{tag['data_time']:.4f}")] + list(rest.items()):
                    exp.add(rel, k, it_global, shown(text))
    write_text(os.path.join(out_root, rel), screen.text())


# --------------------------------------------------------------------------
# Ultralytics YOLO classify results.csv (BaseTrainer.save_metrics, 8.0-8.2)
# --------------------------------------------------------------------------

def yolo_cls_healthy(out_root, exp):
    """A small CNN classifier on the shapes images with Ultralytics' classify
    recipe: SGD nesterov, three param groups (pg0 biases, pg1 decayed weights,
    pg2 norm weights), 100-iteration warmup (bias lr from 0.1, the others from
    0) into a linear decay (lr0 0.01, lrf 0.01): top-1 climbs to ~1."""
    torch.manual_seed(71)
    g = torch.Generator().manual_seed(71)
    ds = Shapes(512, g)
    vs = Shapes(160, g)
    model = nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.BatchNorm2d(16), nn.SiLU(), nn.MaxPool2d(2),
                          nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.SiLU(),
                          nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, 3))
    biases, decay, norm = [], [], []
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            norm.append(m.weight)
            biases.append(m.bias)
        elif isinstance(m, (nn.Conv2d, nn.Linear)):
            decay.append(m.weight)
            if m.bias is not None:
                biases.append(m.bias)
    lr0, lrf, epochs, bs = 0.01, 0.01, 12, 32
    opt = torch.optim.SGD(biases, lr=lr0, momentum=0.937, nesterov=True)
    opt.add_param_group({"params": decay, "weight_decay": 5e-4})
    opt.add_param_group({"params": norm, "weight_decay": 0.0})
    for pgp in opt.param_groups:
        pgp["initial_lr"] = lr0
    lf = lambda e: (1 - e / epochs) * (1.0 - lrf) + lrf  # noqa: E731
    nb = len(ds.cls) // bs
    nw = max(round(3.0 * nb), 100)
    rel = "console/yolo_cls_healthy/results.csv"
    path = os.path.join(out_root, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if os.path.exists(path):
        os.remove(path)
    pg = torch.Generator().manual_seed(72)
    for epoch in range(epochs):
        model.train()
        order = torch.randperm(len(ds.cls), generator=pg)
        tloss = None
        for i in range(nb):
            ni = i + nb * epoch
            if ni <= nw:
                for j, x in enumerate(opt.param_groups):  # np.interp(ni, [0, nw], [start, end])
                    start, end = (0.1 if j == 0 else 0.0), x["initial_lr"] * lf(epoch)
                    x["lr"] = start + (ni / nw) * (end - start)
                    x["momentum"] = 0.8 + (ni / nw) * (0.937 - 0.8)
            idx = order[i * bs:(i + 1) * bs]
            loss = nn.functional.cross_entropy(model(ds.imgs[idx]), ds.cls[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            item = loss.detach()
            tloss = item if tloss is None else (tloss * i + item) / (i + 1)
        lr = {f"lr/pg{ir}": x["lr"] for ir, x in enumerate(opt.param_groups)}
        for x in opt.param_groups:  # scheduler.step(): LambdaLR with lf
            x["lr"] = x["initial_lr"] * lf(epoch + 1)
        model.eval()
        with torch.no_grad():
            vloss, preds = 0.0, []
            vb = (len(vs.cls) + bs - 1) // bs
            for i in range(vb):
                lo = model(vs.imgs[i * bs:(i + 1) * bs])
                vloss += nn.functional.cross_entropy(lo, vs.cls[i * bs:(i + 1) * bs]).item()
                preds.append(lo.argsort(1, descending=True)[:, :3])
            pred = torch.cat(preds)
            correct = (vs.cls[:, None] == pred).float()
            top1, top5 = correct[:, 0].mean().item(), correct.max(1).values.mean().item()
        metrics = {"train/loss": round(float(tloss), 5),
                   "metrics/accuracy_top1": round(top1, 5), "metrics/accuracy_top5": round(top5, 5),
                   "val/loss": round(vloss / vb, 5), **lr}
        keys, vals = list(metrics.keys()), list(metrics.values())
        ncols = len(metrics) + 1
        s = "" if os.path.exists(path) else (("%23s," * ncols % tuple(["epoch"] + keys)).rstrip(",") + "\n")
        row = ("%23.5g," * ncols % tuple([epoch + 1] + vals)).rstrip(",")
        with open(path, "a") as f:
            f.write(s + row + "\n")
        cells = [c.strip() for c in row.split(",")]
        for k, text in zip(keys, cells[1:]):
            exp.add(rel, k, epoch + 1, shown(text))


# --------------------------------------------------------------------------
# Generic logs: key=value with a step, key: value with an epoch
# --------------------------------------------------------------------------

def generic_kv_corrupt_shard(out_root, exp):
    """An MLP regressor (Adam, lr 3e-3) reading its data as 20 shards in turn,
    one batch per shard; shard 13 has its targets in the wrong unit (x1000, as
    when one export wrote grams instead of kilograms). Every time it comes
    round the loss spikes by orders of magnitude and the next few steps are
    disturbed; between visits the loss keeps falling."""
    torch.manual_seed(81)
    g = torch.Generator().manual_seed(81)
    w = torch.randn(8, generator=g)
    shards = []
    for k in range(20):
        x = torch.randn(32, 8, generator=g)
        y = torch.tanh(x @ w) + 0.05 * torch.randn(32, generator=g)
        shards.append((x, y * 1000.0 if k == 13 else y))
    model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 1))
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    rel = "console/generic_kv_corrupt_shard_spikes.log"
    screen = Screen()
    for step in range(1, 201):
        x, y = shards[(step - 1) % 20]
        loss = ((model(x).squeeze(1) - y) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        gn = torch.nn.utils.clip_grad_norm_(model.parameters(), float("inf")).item()
        opt.step()
        t = {"loss": f"{loss.item():.6g}", "grad_norm": f"{gn:.4g}", "lr": f"{3e-3:.1e}"}
        stamp = datetime.datetime.now().strftime("%Y-%m-%d %H:%M:%S,%f")[:-3]
        screen.print(f"{stamp} INFO train: step={step} " + " ".join(f"{k}={v}" for k, v in t.items()))
        for k, text in t.items():
            exp.add(rel, k, step, shown(text))
    write_text(os.path.join(out_root, rel), screen.text())


def generic_colon_epoch(out_root, exp):
    """Healthy small MLP regression (Adam, step decay), one line per epoch."""
    torch.manual_seed(91)
    g = torch.Generator().manual_seed(91)
    X = torch.randn(600, 6, generator=g)
    y = torch.sin(X[:, 0]) + 0.5 * X[:, 1] * X[:, 2] + 0.1 * torch.randn(600, generator=g)
    Xt, yt, Xv, yv = X[:480], y[:480], X[480:], y[480:]
    model = nn.Sequential(nn.Linear(6, 64), nn.Tanh(), nn.Linear(64, 1))
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    sched = torch.optim.lr_scheduler.StepLR(opt, 10, 0.5)
    rel = "console/generic_colon_epoch_regression.log"
    screen = Screen()
    pg = torch.Generator().manual_seed(92)
    epochs = 30
    for ep in range(1, epochs + 1):
        order = torch.randperm(480, generator=pg)
        tot = 0.0
        for b in range(15):
            idx = order[b * 32:(b + 1) * 32]
            loss = ((model(Xt[idx]).squeeze(1) - yt[idx]) ** 2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            tot += loss.item()
        lr = sched.get_last_lr()[0]
        sched.step()
        with torch.no_grad():
            vl = ((model(Xv).squeeze(1) - yv) ** 2).mean().item()
        t = {"train_loss": f"{tot / 15:.4f}", "val_loss": f"{vl:.4f}", "lr": f"{lr:g}"}
        screen.print(f"epoch: {ep}/{epochs} | " + " | ".join(f"{k}: {v}" for k, v in t.items()))
        for k, text in t.items():
            exp.add(rel, k, ep, shown(text))
    write_text(os.path.join(out_root, rel), screen.text())


def run_all(out_root, exp):
    keras_stuck(out_root, exp, 1, "keras_stuck_tiny_lr_tty")
    keras_stuck(out_root, exp, 2, "keras_stuck_tiny_lr_verbose2")
    nanogpt_healthy(out_root, exp)
    megatron_lr_too_high(out_root, exp)
    detectron2_healthy(out_root, exp)
    mmdet_dead_relu(out_root, exp)
    yolo_cls_healthy(out_root, exp)
    generic_kv_corrupt_shard(out_root, exp)
    generic_colon_epoch(out_root, exp)
