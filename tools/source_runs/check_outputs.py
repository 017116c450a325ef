#!/usr/bin/python3
"""Read the generated files back with plain Python readers and compare every
point with expected.json. This only checks the generator against itself (the
expected file is written from the generator's own record, not from here); it
catches a value recorded differently from the text written.

    /usr/bin/python3 tools/source_runs/check_outputs.py tests/data/sources
"""

import ast
import csv
import json
import math
import os
import re
import sqlite3
import sys

try:
    import yaml  # only to prove the YAML files parse; optional
except ImportError:
    yaml = None

NAN = float("nan")


def enc(v):
    v = float(v)
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return v


class Checker:
    def __init__(self, root):
        self.root = root
        self.expected = json.load(open(os.path.join(root, "expected.json")))
        self.errors = 0
        self.checked = 0
        self.seen_files = set()

    def compare(self, rel, got, steps=True):
        """got: {key: [[step, value], ...]} read from the file."""
        self.seen_files.add(rel)
        exp = self.expected.get(rel)
        if exp is None:
            print(f"FAIL {rel}: not in expected.json")
            self.errors += 1
            return
        for key in sorted(set(exp) | set(got)):
            e = exp.get(key, [])
            g = [[s, enc(v)] for s, v in got.get(key, [])]
            if not steps:
                e = [v for _, v in e]
                g = [v for _, v in g]
            if e != g:
                self.errors += 1
                print(f"FAIL {rel} [{key}]: expected {e[:4]}... ({len(e)}) got {g[:4]}... ({len(g)})")
            self.checked += len(g)

    # ---------------------------------------------------------------- HF
    def hf(self):
        for run in sorted(os.listdir(os.path.join(self.root, "hf"))):
            base = os.path.join(self.root, "hf", run)
            files = [os.path.join(d, "trainer_state.json") for d in
                     [base] + [os.path.join(base, c) for c in sorted(os.listdir(base))
                               if c.startswith("checkpoint-")]]
            for path in files:
                state = json.load(open(path))
                got = {}
                for entry in state["log_history"]:
                    for k, v in entry.items():
                        if k != "step" and isinstance(v, (int, float)):
                            got.setdefault(k, []).append([entry["step"], v])
                self.compare(os.path.relpath(path, self.root), got)
                assert set(state) >= {"best_metric", "best_model_checkpoint", "global_step",
                                      "epoch", "log_history", "stateful_callbacks"}
            # the console of the same run
            rel = f"console/{run}.log"
            text = open(os.path.join(self.root, rel), encoding="utf-8").read()
            got = {}
            for line in text.split("\n"):
                seg = line.split("\r")[-1].replace("\x1b[A", "")
                if seg.startswith("{"):
                    d = eval(seg, {"__builtins__": {}}, {"nan": NAN, "inf": float("inf")})
                    for k, v in d.items():
                        got.setdefault(k, []).append([None, v])
            self.compare(rel, got, steps=False)

    # ---------------------------------------------------------------- Lightning
    def lightning(self):
        for run in sorted(os.listdir(os.path.join(self.root, "lightning"))):
            d = os.path.join(self.root, "lightning", run, "version_0")
            for name in sorted(os.listdir(d)):
                if not name.endswith(".csv"):
                    continue
                raw = open(os.path.join(d, name), "rb").read()
                assert b"\r\n" in raw, "csv.DictWriter writes \\r\\n line ends"
                got = {}
                with open(os.path.join(d, name), newline="") as f:
                    reader = csv.DictReader(f)
                    assert reader.fieldnames == sorted(reader.fieldnames), reader.fieldnames
                    for row in reader:
                        for k, v in row.items():
                            if k != "step" and v != "":
                                got.setdefault(k, []).append([int(row["step"]), float(v)])
                self.compare(os.path.relpath(os.path.join(d, name), self.root), got)
            if yaml:
                yaml.safe_load(open(os.path.join(d, "hparams.yaml")))
        rel = "console/lightning_mlp_healthy.log"
        text = open(os.path.join(self.root, rel), encoding="utf-8").read()
        got = {}
        for seg in re.split(r"[\r\n]", text):
            m = re.match(r"Epoch (\d+): .*\| (\d+)/(\d+) \[[^,]*, [^,]*, v_num=0, (.*)\]", seg)
            if not m:
                continue
            ep, n, tot = int(m.group(1)), int(m.group(2)), int(m.group(3))
            if n == 0:  # reset() redraws with the old description and values
                continue
            step = ep * tot + n - 1
            for kv in m.group(4).split(", "):
                k, v = kv.split("=")
                got.setdefault(k, {})[step] = float(v)
        # the last value shown at each step is the point (see README)
        exp = self.expected[rel]
        for k in exp:
            e = {s: v for s, v in exp[k]}
            shown_at = got.get(k, {})
            for s, v in e.items():
                self.checked += 1
                if shown_at.get(s) != v:
                    self.errors += 1
                    print(f"FAIL {rel} [{k}] step {s}: expected {v} shown {shown_at.get(s)}")
        self.seen_files.add(rel)

    # ---------------------------------------------------------------- MLflow
    def mlflow(self):
        root = os.path.join(self.root, "mlflow", "mlruns")
        for exp_id in sorted(os.listdir(root)):
            if exp_id.startswith("."):
                continue
            ed = os.path.join(root, exp_id)
            if yaml:
                meta = yaml.safe_load(open(os.path.join(ed, "meta.yaml")))
                assert meta["experiment_id"] == exp_id
            for run in sorted(os.listdir(ed)):
                rd = os.path.join(ed, run)
                if not os.path.isdir(rd):
                    continue
                if yaml:
                    meta = yaml.safe_load(open(os.path.join(rd, "meta.yaml")))
                    assert meta["run_id"] == run and meta["status"] == 3
                got = {}
                md = os.path.join(rd, "metrics")
                for dirpath, _, files in os.walk(md):
                    for f in files:
                        key = os.path.relpath(os.path.join(dirpath, f), md)
                        for line in open(os.path.join(dirpath, f)):
                            ts, val, step = line.split(" ")
                            got.setdefault(key, []).append([int(step), float(val)])
                self.compare(os.path.relpath(rd, self.root), got)
        db = sqlite3.connect(os.path.join(self.root, "mlflow", "mlflow.db"))
        (rev,) = db.execute("SELECT version_num FROM alembic_version").fetchone()
        for (run,) in db.execute("SELECT run_uuid FROM runs"):
            got = {}
            for key, val, step, is_nan in db.execute(
                    "SELECT key, value, step, is_nan FROM metrics WHERE run_uuid=? ORDER BY rowid",
                    (run,)):
                got.setdefault(key, []).append([step, NAN if is_nan else val])
            self.compare(f"mlflow/mlflow.db#{run}", got)
            for key, val, ts, step, is_nan in db.execute(
                    "SELECT key, value, timestamp, step, is_nan FROM latest_metrics WHERE run_uuid=?",
                    (run,)):
                best = db.execute("SELECT step, timestamp, value FROM metrics WHERE run_uuid=? AND key=?"
                                  " ORDER BY step DESC, timestamp DESC, value DESC LIMIT 1",
                                  (run, key)).fetchone()
                assert best == (step, ts, val), (key, best, (step, ts, val))
        print(f"mlflow.db alembic revision {rev}")

    # ---------------------------------------------------------------- consoles
    def consoles(self):
        # Keras: the finalized line of each epoch
        for rel in ("console/keras_stuck_tiny_lr_tty.log", "console/keras_stuck_tiny_lr_verbose2.log"):
            text = open(os.path.join(self.root, rel), encoding="utf-8").read()
            got, ep = {}, 0
            for line in text.split("\n"):
                if line.startswith("Epoch "):
                    ep = int(line.split()[1].split("/")[0])
                    continue
                seg = line.split("\r")[-1]
                if "val_loss" in seg:
                    for k, v in re.findall(r" - (\w+): ([0-9.e+-]+)", seg):
                        got.setdefault(k, []).append([ep, float(v)])
            self.compare(rel, got)
        text = open(os.path.join(self.root, "console/nanogpt_char_healthy.log")).read()
        got = {}
        for m in re.finditer(r"^step (\d+): train loss ([0-9.]+), val loss ([0-9.]+)$", text, re.M):
            got.setdefault("train loss", []).append([int(m.group(1)), float(m.group(2))])
            got.setdefault("val loss", []).append([int(m.group(1)), float(m.group(3))])
        for m in re.finditer(r"^iter (\d+): loss ([0-9.]+), time ([0-9.]+)ms, mfu (-?[0-9.]+)%$", text, re.M):
            s = int(m.group(1))
            for k, g in (("loss", 2), ("time", 3), ("mfu", 4)):
                got.setdefault(k, []).append([s, float(m.group(g))])
        self.compare("console/nanogpt_char_healthy.log", got)
        # Megatron
        rel = "console/megatron_gpt_lr_too_high.log"
        text = open(os.path.join(self.root, rel)).read()
        got = {}
        for line in text.splitlines():
            m = re.match(r" \[[0-9 :-]+\] iteration +(\d+)/ +\d+ \|(.*)$", line)
            if m:
                for part in m.group(2).split("|"):
                    if part.strip():
                        k, v = part.strip().rsplit(": ", 1)
                        got.setdefault(k, []).append([int(m.group(1)), float(v)])
            m = re.match(r" validation loss at iteration (\d+) \| lm loss value: (\S+) \| lm loss PPL: (\S+) \| $", line)
            if m:
                got.setdefault("lm loss value", []).append([int(m.group(1)), float(m.group(2))])
                got.setdefault("lm loss PPL", []).append([int(m.group(1)), float(m.group(3))])
        self.compare(rel, got)
        # detectron2
        rel = "console/detectron2_box_healthy.log"
        got = {}
        for line in open(os.path.join(self.root, rel)):
            m = re.match(r"\[\d\d/\d\d \d\d:\d\d:\d\d d2\.utils\.events\]:  eta: \S+  iter: (\d+)  (.*)$", line)
            for k, v in re.findall(r"(\w+): ([0-9.e+-]+)", m.group(2)):
                got.setdefault(k, []).append([int(m.group(1)), float(v)])
        self.compare(rel, got)
        # mmdet: global iteration = (epoch - 1) * len + iter
        rel = "console/mmdet_dead_relu_init.log"
        got = {}
        for line in open(os.path.join(self.root, rel)):
            m = re.match(r"\d{4}/\d\d/\d\d \d\d:\d\d:\d\d - mmengine - INFO - Epoch\(train\) +\[(\d+)\]\[ *(\d+)/(\d+)\]  (.*)$", line)
            step = (int(m.group(1)) - 1) * int(m.group(3)) + int(m.group(2))
            for k, v in re.findall(r"(\w+): ([0-9.e+-]+)(?=\s|$)", m.group(4)):
                got.setdefault(k, []).append([step, float(v)])
        self.compare(rel, got)
        # YOLO results.csv
        rel = "console/yolo_cls_healthy/results.csv"
        got = {}
        with open(os.path.join(self.root, rel), newline="") as f:
            rows = list(csv.reader(f))
        header = [h.strip() for h in rows[0]]
        assert all(len(h) == 23 for h in rows[0]), "header cells are padded to 23"
        for r in rows[1:]:
            for k, v in zip(header[1:], r[1:]):
                got.setdefault(k, []).append([int(r[0]), float(v)])
        self.compare(rel, got)
        # generic
        rel = "console/generic_kv_corrupt_shard_spikes.log"
        got = {}
        for line in open(os.path.join(self.root, rel)):
            kv = dict(re.findall(r"(\w+)=(\S+)", line))
            step = int(kv.pop("step"))
            for k, v in kv.items():
                got.setdefault(k, []).append([step, float(v)])
        self.compare(rel, got)
        rel = "console/generic_colon_epoch_regression.log"
        got = {}
        for line in open(os.path.join(self.root, rel)):
            parts = dict(p.split(": ") for p in line.strip().split(" | "))
            ep = int(parts.pop("epoch").split("/")[0])
            for k, v in parts.items():
                got.setdefault(k, []).append([ep, float(v)])
        self.compare(rel, got)


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "tests/data/sources"
    c = Checker(root)
    c.hf()
    c.lightning()
    c.mlflow()
    c.consoles()
    missing = set(c.expected) - c.seen_files
    for m in sorted(missing):
        print(f"FAIL expected.json has {m}, not checked")
        c.errors += 1
    print(f"{c.checked} points compared, {c.errors} mismatches")
    sys.exit(1 if c.errors else 0)


if __name__ == "__main__":
    main()
