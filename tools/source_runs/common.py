"""Shared pieces for the source-run generator: the expected-points record, a
console stream with tqdm-style progress bars, and small format helpers.

Nothing here parses generated files: every expected point is recorded at the
moment the generator writes it (the float of the exact text it wrote, for text
formats), so expected.json is independent of any reader.
"""

import json
import math
import os
import time


# --------------------------------------------------------------------------
# expected.json
# --------------------------------------------------------------------------

def enc(v):
    """A number as expected.json holds it: non-finite as the strings nan/inf/-inf."""
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, int):
        return v
    v = float(v)
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return v


def shown(text):
    """The value a reader gets from the text the generator printed."""
    return float(text)


class Expected:
    def __init__(self):
        self.files = {}

    def add(self, path, key, step, value):
        self.files.setdefault(path, {}).setdefault(key, []).append([step, enc(value)])

    def add_dict(self, path, step, d, skip=()):
        for k, v in d.items():
            if k in skip or isinstance(v, str) or v is None:
                continue
            self.add(path, k, step, v)

    def write(self, out_path):
        with open(out_path, "w", encoding="utf-8") as f:
            json.dump({k: self.files[k] for k in sorted(self.files)}, f, indent=1, sort_keys=False,
                      allow_nan=False)
            f.write("\n")


def write_text(path, text, mode="w"):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, mode, encoding="utf-8", newline="") as f:
        f.write(text)


# --------------------------------------------------------------------------
# A console: stdout and stderr merged into one file (`python -u x.py > log 2>&1`)
# --------------------------------------------------------------------------

class Screen:
    def __init__(self, clock=time.time):
        self.parts = []
        self.bars = []  # live tqdm-style bars writing to this stream, in creation order
        self.clock = clock

    def write(self, s):
        self.parts.append(s)

    def print(self, s=""):
        self.parts.append(s + "\n")

    def text(self):
        return "".join(self.parts)

    def tqdm_write(self, s, end="\n"):
        """tqdm.write(): clear every live bar, print the line, redraw the bars
        (tqdm/std.py external_write_mode)."""
        cleared = []
        for b in list(self.bars):
            b.clear()
            cleared.append(b)
        self.write(s)
        self.write(end)
        for b in cleared:
            b.refresh()


# --------------------------------------------------------------------------
# tqdm, as tqdm/std.py draws a bar to a file that is not a terminal
# (no ncols known, so a 10-cell bar; unicode blocks; mininterval 0.1 s;
# dynamic miniters; EMA rate with smoothing 0.3 unless told otherwise)
# --------------------------------------------------------------------------

UTF = " " + "".join(chr(c) for c in range(0x258F, 0x2587, -1))


def format_interval(t):
    mins, s = divmod(int(t), 60)
    h, m = divmod(mins, 60)
    if h:
        return "{0:d}:{1:02d}:{2:02d}".format(h, m, s)
    return "{0:02d}:{1:02d}".format(m, s)


def tqdm_format_num(n):
    f = "{0:.3g}".format(n).replace("+0", "+").replace("-0", "-")
    n = str(n)
    return f if len(f) < len(n) else n


def lightning_format_num(n):
    """lightning.pytorch.callbacks.progress.tqdm_progress.Tqdm.format_num (_PAD_SIZE 5)."""
    pad = 5
    should_be_padded = isinstance(n, (float, str))
    if not isinstance(n, str):
        n = tqdm_format_num(n)
    if should_be_padded and "e" not in n:
        if "." not in n and len(n) < pad:
            try:
                float(n)
            except ValueError:
                return n
            n += "."
        n += "0" * (pad - len(n))
    return n


def bar_cells(frac, n_bars=10, charset=UTF):
    nsyms = len(charset) - 1
    bar_length, frac_bar_length = divmod(int(frac * n_bars * nsyms), nsyms)
    res = charset[-1] * bar_length
    if bar_length < n_bars:
        res = res + charset[frac_bar_length] + charset[0] * (n_bars - bar_length - 1)
    return res


def format_meter(n, total, elapsed, prefix="", unit="it", rate=None, postfix=None, initial=0):
    if total and n >= (total + 0.5):
        total = None
    elapsed_str = format_interval(elapsed)
    if rate is None and elapsed:
        rate = (n - initial) / elapsed
    inv_rate = 1 / rate if rate else None
    rate_noinv_fmt = ("{0:5.2f}".format(rate) if rate else "?") + unit + "/s"
    rate_inv_fmt = ("{0:5.2f}".format(inv_rate) if inv_rate else "?") + "s/" + unit
    rate_fmt = rate_inv_fmt if inv_rate and inv_rate > 1 else rate_noinv_fmt
    n_fmt = str(n)
    total_fmt = str(total) if total is not None else "?"
    postfix = ", " + postfix if postfix else ""
    remaining = (total - n) / rate if rate and total else 0
    remaining_str = format_interval(remaining) if rate else "?"
    if prefix:
        l_bar = prefix if prefix[-2:] == ": " else prefix + ": "
    else:
        l_bar = ""
    r_bar = "| {0}/{1} [{2}<{3}, {4}{5}]".format(n_fmt, total_fmt, elapsed_str, remaining_str,
                                                rate_fmt, postfix)
    if total:
        frac = n / total
        l_bar += "{0:3.0f}%|".format(frac * 100)
        return l_bar + bar_cells(frac) + r_bar
    return "{0}{1}{2} [{3}, {4}{5}]".format((prefix + ": ") if prefix else "", n_fmt, unit,
                                           elapsed_str, rate_fmt, postfix)


class EMA:
    def __init__(self, smoothing=0.3):
        self.alpha = smoothing
        self.last = 0
        self.calls = 0

    def __call__(self, x=None):
        beta = 1 - self.alpha
        if x is not None:
            self.last = self.alpha * x + beta * self.last
            self.calls += 1
        return self.last / (1 - beta ** self.calls) if self.calls else self.last


class Bar:
    """One tqdm instance on a Screen."""

    def __init__(self, screen, total=None, desc=None, leave=True, position=None,
                 mininterval=0.1, maxinterval=10.0, smoothing=0.3, format_num=tqdm_format_num):
        self.screen = screen
        self.clock = screen.clock
        self.total = total
        self.desc = desc or ""
        self.leave = leave
        self.mininterval = mininterval
        self.maxinterval = maxinterval
        self.miniters = 0
        self.dynamic_miniters = True
        self.smoothing = smoothing
        self._ema_dn = EMA(smoothing)
        self._ema_dt = EMA(smoothing)
        self._ema_miniters = EMA(smoothing)
        self.format_num = format_num
        self.postfix = None
        self.initial = 0
        self.n = 0
        self.last_print_n = 0
        self.disable = False
        self.last_len = 0
        if position is None:
            used = {abs(b.pos) for b in screen.bars}
            self.pos = min(set(range(len(used) + 1)).difference(used))
        else:
            self.pos = -position
        screen.bars.append(self)
        self.refresh()
        self.last_print_t = self.clock()
        self.start_t = self.last_print_t

    # -- drawing
    def _sp(self, s):
        self.screen.write("\r" + s + (" " * max(self.last_len - len(s), 0)))
        self.last_len = len(s)

    def _moveto(self, n):
        self.screen.write("\n" * n + "\x1b[A" * -n)

    def __str__(self):
        elapsed = self.clock() - self.start_t if hasattr(self, "start_t") else 0
        ema_dt = self._ema_dt()
        rate = self._ema_dn() / ema_dt if ema_dt else None
        return format_meter(self.n, self.total, elapsed, prefix=self.desc, rate=rate,
                            postfix=self.postfix, initial=self.initial)

    def display(self, msg=None, pos=None):
        if pos is None:
            pos = abs(self.pos)
        if pos:
            self._moveto(pos)
        self._sp(str(self) if msg is None else msg)
        if pos:
            self._moveto(-pos)
        return True

    def refresh(self):
        if self.disable:
            return
        self.display()

    def clear(self):
        if self.disable:
            return
        pos = abs(self.pos)
        self._moveto(pos)
        self._sp("")
        self.screen.write("\r")
        self._moveto(-pos)

    # -- progress
    def update(self, n=1):
        return self.update_to(self.n + n)

    def update_to(self, n):
        if self.disable:
            return
        self.n = n
        if abs(self.n - self.last_print_n) >= self.miniters:
            cur_t = self.clock()
            dt = cur_t - self.last_print_t
            if dt >= self.mininterval and cur_t >= self.start_t:
                cur_t = self.clock()
                dn = self.n - self.last_print_n
                if self.smoothing and dt and dn:
                    self._ema_dn(dn)
                    self._ema_dt(dt)
                self.refresh()
                if self.dynamic_miniters:
                    if self.maxinterval and dt >= self.maxinterval:
                        self.miniters = dn * (self.mininterval or self.maxinterval) / dt
                    elif self.smoothing:
                        self.miniters = self._ema_miniters(
                            dn * (self.mininterval / dt if self.mininterval and dt else 1))
                    else:
                        self.miniters = max(self.miniters, dn)
                self.last_print_n = self.n
                self.last_print_t = cur_t
                return True

    def set_n_and_refresh(self, n):
        """Lightning's _update_n: bar.n = value; bar.refresh()."""
        if not self.disable:
            self.n = n
            self.refresh()

    def reset(self, total=None):
        self.n = 0
        if total is not None:
            self.total = total
        if self.disable:
            return
        self.last_print_n = 0
        self.last_print_t = self.start_t = self.clock()
        self._ema_dn = EMA(self.smoothing)
        self._ema_dt = EMA(self.smoothing)
        self._ema_miniters = EMA(self.smoothing)
        self.refresh()

    def set_description(self, desc=None):
        self.desc = desc + ": " if desc else ""
        self.refresh()

    def set_postfix(self, ordered):
        parts = []
        for k, v in ordered.items():
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                s = self.format_num(v)
            else:
                s = str(v)
            parts.append(k + "=" + s.strip())
        self.postfix = ", ".join(parts)
        self.refresh()

    def close(self):
        if self.disable:
            return
        self.disable = True
        pos = abs(self.pos)
        self.screen.bars.remove(self)
        leave = pos == 0 if self.leave is None else self.leave
        if leave:
            self._ema_dt = lambda x=None: None
            self.display(pos=0)
            self.screen.write("\n")
        else:
            if self.display(msg="", pos=pos) and not pos:
                self.screen.write("\r")


# --------------------------------------------------------------------------
# YAML for flat dicts of scalars, as PyYAML's yaml.dump writes them
# (block style, keys sorted, floats via repr with PyYAML's tweaks)
# --------------------------------------------------------------------------

def yaml_scalar(v):
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if math.isnan(v):
            return ".nan"
        if math.isinf(v):
            return ".inf" if v > 0 else "-.inf"
        r = repr(v).lower()
        if "." not in r and "e" in r:  # PyYAML: 1e-05 -> 1.0e-05
            r = r.replace("e", ".0e", 1)
        return r
    s = str(v)
    plain_ok = (s and s.strip() == s and s[0] not in "-?:,[]{}#&*!|>'\"%@`"
                and ": " not in s and " #" not in s and not s.endswith(":")
                and s.lower() not in ("null", "true", "false", "yes", "no", "on", "off", "~")
                and not _looks_numeric(s))
    return s if plain_ok else "'" + s.replace("'", "''") + "'"


def _looks_numeric(s):
    try:
        float(s)
        return True
    except ValueError:
        return False


def yaml_dump_flat(d):
    return "".join(f"{k}: {yaml_scalar(d[k])}\n" for k in sorted(d))
