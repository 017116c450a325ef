#!/usr/bin/python3
"""Make tests/data/sources: real small CPU training runs written in the file
formats of HF Trainer (trainer_state.json + console), Lightning CSVLogger
(metrics.csv + hparams.yaml + console), MLflow (file store + mlflow.db), and
the console output of Keras, nanoGPT, Megatron-LM, detectron2, mmdet/mmengine,
Ultralytics YOLO (results.csv) and two generic loggers, plus expected.json,
the points each file holds, recorded by this generator as it wrote them.

    /usr/bin/python3 tools/source_runs/make_source_runs.py --out tests/data/sources

Needs only the standard library and torch (Debian python3-torch). One thread,
fixed seeds: every trained value repeats exactly; wall-clock values (times,
timestamps, throughput) are measured and change from run to run.
"""

import argparse
import os
import shutil
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from common import Expected, write_text  # noqa: E402
import run_console  # noqa: E402
import run_hf  # noqa: E402
import run_lightning  # noqa: E402
import run_mlflow  # noqa: E402

OUTPUTS = ("hf", "lightning", "mlflow", "console", "expected.json")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(HERE, "..", "..", "tests", "data", "sources"))
    args = ap.parse_args()
    out = os.path.abspath(args.out)
    os.makedirs(out, exist_ok=True)
    for name in OUTPUTS:  # only what this generator writes
        p = os.path.join(out, name)
        if os.path.isdir(p):
            shutil.rmtree(p)
        elif os.path.exists(p):
            os.remove(p)

    torch.set_num_threads(1)
    exp = Expected()
    t0 = time.time()

    # 1. HF Trainer
    run_hf.run(out, exp, "hf_lr_nan", lr=5.0, naive_loss=True, eval_strategy="no", seed=7,
               warmup_steps=20, logging_steps=1)
    run_hf.run(out, exp, "hf_healthy_eval", lr=3e-2, naive_loss=False, eval_strategy="steps",
               seed=7)
    print(f"hf done {time.time() - t0:.1f}s")

    # 2. Lightning CSVLogger
    run_lightning.run(out, exp, "mlp_healthy", seed=11,
                      hparams=dict(input_dim=20, hidden_dim=64, hidden_layers=1, num_classes=4,
                                   lr=1e-3, batch_size=32),
                      train_n=512, val_n=128, epochs=5, log_every_n_steps=1, label_flip=0.0,
                      noise=2.0, console_name="lightning_mlp_healthy", snapshot=True)
    run_lightning.run(out, exp, "mlp_overfit_noisy_labels", seed=12,
                      hparams=dict(input_dim=20, hidden_dim=256, hidden_layers=2, num_classes=4,
                                   lr=3e-3, batch_size=32),
                      train_n=64, val_n=256, epochs=30, log_every_n_steps=1, label_flip=0.3,
                      noise=2.0)
    print(f"lightning done {time.time() - t0:.1f}s")

    # 3. MLflow file store + mlflow.db
    run_mlflow.run_all(out, exp)
    # the repository's .gitignore has *.db; this re-includes the one data file
    write_text(os.path.join(out, "mlflow", ".gitignore"), "!mlflow.db\n")
    print(f"mlflow done {time.time() - t0:.1f}s")

    # 4. other consoles
    run_console.run_all(out, exp)
    print(f"consoles done {time.time() - t0:.1f}s")

    exp.write(os.path.join(out, "expected.json"))
    total = 0
    for root, _, files in sorted(os.walk(out)):
        for f in sorted(files):
            p = os.path.join(root, f)
            size = os.path.getsize(p)
            total += size
            print(f"{size:8d}  {os.path.relpath(p, out)}")
    print(f"{total:8d}  total, {time.time() - t0:.1f}s")


if __name__ == "__main__":
    main()
