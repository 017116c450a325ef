"""Lightning 2.x style runs with CSVLogger, trained for real with torch on CPU.

The fit loop follows lightning.pytorch for one process, automatic
optimization, self.log("train_loss", loss, prog_bar=True) in training_step
(on_step) and self.log("val_loss"/"val_acc", ..., prog_bar=True) in
validation_step (on_epoch, batch-size-weighted mean):

* a train row is logged when (_batches_that_stepped + 1) % log_every_n_steps
  == 0, with step=_batches_that_stepped and "epoch" added (setdefault);
* the validation row is logged at the end of the last batch's validation,
  before _batches_that_stepped is incremented, so it carries the same step as
  that batch's train row;
* _LoggerConnector.log_metrics calls logger.save() after every log_metrics, and
  the CSV writer (lightning.fabric.loggers.csv_logs._ExperimentWriter) appends
  the buffered rows, rewriting the whole file with a new sorted header when a
  key appears that the file does not have yet.

The console is TQDMProgressBar drawn to stdout (captured to a file).
"""

import csv
import io
import os

import torch
import torch.nn as nn

from common import Bar, Screen, lightning_format_num, write_text, yaml_dump_flat


class ExperimentWriter:
    """lightning.fabric.loggers.csv_logs._ExperimentWriter + the pytorch
    ExperimentWriter's log_hparams."""

    def __init__(self, log_dir, snapshot_before_rewrite=None):
        self.metrics = []
        self.metrics_keys = []
        self.log_dir = log_dir
        self.metrics_file_path = os.path.join(log_dir, "metrics.csv")
        self.hparams = {}
        self.snapshot_before_rewrite = snapshot_before_rewrite
        os.makedirs(log_dir, exist_ok=True)

    def log_hparams(self, params):
        self.hparams.update(params)
        write_text(os.path.join(self.log_dir, "hparams.yaml"), yaml_dump_flat(self.hparams))

    def log_metrics(self, metrics_dict, step):
        metrics = {k: (v.item() if isinstance(v, torch.Tensor) else v) for k, v in metrics_dict.items()}
        metrics["step"] = step
        self.metrics.append(metrics)

    def save(self):
        if not self.metrics:
            return
        new_keys = self._record_new_keys()
        file_exists = os.path.isfile(self.metrics_file_path)
        if new_keys and file_exists:
            if self.snapshot_before_rewrite and not os.path.exists(self.snapshot_before_rewrite):
                with open(self.metrics_file_path, "rb") as src, \
                        open(self.snapshot_before_rewrite, "wb") as dst:
                    dst.write(src.read())
            self._rewrite_with_new_header(self.metrics_keys)
        with open(self.metrics_file_path, mode=("a" if file_exists else "w"), newline="") as file:
            writer = csv.DictWriter(file, fieldnames=self.metrics_keys)
            if not file_exists:
                writer.writeheader()
            writer.writerows(self.metrics)
        self.metrics = []

    def _record_new_keys(self):
        current_keys = set().union(*self.metrics)
        new_keys = current_keys - set(self.metrics_keys)
        self.metrics_keys.extend(new_keys)
        self.metrics_keys.sort()
        return new_keys

    def _rewrite_with_new_header(self, fieldnames):
        with open(self.metrics_file_path, "r", newline="") as file:
            metrics = list(csv.DictReader(file))
        with open(self.metrics_file_path, "w", newline="") as file:
            writer = csv.DictWriter(file, fieldnames=fieldnames)
            writer.writeheader()
            writer.writerows(metrics)


def csv_cell(v):
    """The text csv.DictWriter writes for a value (str() of it)."""
    return str(v)


def make_clusters(n, dim, classes, gen, spread=1.0, flip=0.0):
    centers = torch.randn(classes, dim, generator=gen) * 1.2
    y = torch.randint(0, classes, (n,), generator=gen)
    x = centers[y] + spread * torch.randn(n, dim, generator=gen)
    if flip:
        m = torch.rand(n, generator=gen) < flip
        y = torch.where(m, torch.randint(0, classes, (n,), generator=gen), y)
    return x, y, centers


def run(out_root, exp, name, seed, hparams, train_n, val_n, epochs, log_every_n_steps,
        label_flip, noise, console_name=None, snapshot=False):
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    dim, classes, bs = hparams["input_dim"], hparams["num_classes"], hparams["batch_size"]
    xtr, ytr, centers = make_clusters(train_n, dim, classes, gen, spread=noise, flip=label_flip)
    # validation drawn around the same centers, clean labels
    yva = torch.randint(0, classes, (val_n,), generator=gen)
    xva = centers[yva] + noise * torch.randn(val_n, dim, generator=gen)

    layers, d = [], dim
    for _ in range(hparams["hidden_layers"]):
        layers += [nn.Linear(d, hparams["hidden_dim"]), nn.ReLU()]
        d = hparams["hidden_dim"]
    layers.append(nn.Linear(d, classes))
    model = nn.Sequential(*layers)
    opt = torch.optim.Adam(model.parameters(), lr=hparams["lr"])

    rel_dir = f"lightning/{name}/version_0"
    log_dir = os.path.join(out_root, rel_dir)
    snap_rel = f"{rel_dir}/metrics.before_new_column.csv" if snapshot else None
    writer = ExperimentWriter(log_dir, os.path.join(out_root, snap_rel) if snap_rel else None)
    csv_rel = f"{rel_dir}/metrics.csv"
    screen = Screen()
    con_rel = f"console/{console_name}.log" if console_name else None

    # Expected points of the CSV (and of the snapshot: rows logged before the rewrite)
    rows_logged = []

    def log_metrics(metrics, step):
        writer.log_metrics(metrics, step)
        rows_logged.append((dict(metrics), step))
        for k, v in metrics.items():
            if k != "epoch":
                exp.add(csv_rel, k, step, float(csv_cell(v)))
            else:
                exp.add(csv_rel, "epoch", step, int(v))
        writer.save()

    # logger.log_hyperparams at fit start
    writer.log_hparams(hparams)

    progress_metrics = {}

    def get_metrics():
        return {"v_num": 0, **progress_metrics}

    def validate(sanity):
        n_batches = (val_n + bs - 1) // bs
        if sanity:
            n_batches = min(2, n_batches)
            vbar = Bar(screen, desc="Sanity Checking", leave=False, position=0)
        else:
            vbar = Bar(screen, desc="Validation", leave=False, position=1)
        model.eval()
        tot_loss = torch.tensor(0.0)
        tot_acc = torch.tensor(0.0)
        tot_n = 0
        for i in range(n_batches):
            if i == 0:
                vbar.reset(n_batches)
                vbar.initial = 0
                vbar.set_description(("Sanity Checking" if sanity else "Validation") + " DataLoader 0")
            x, y = xva[i * bs:(i + 1) * bs], yva[i * bs:(i + 1) * bs]
            with torch.no_grad():
                logits = model(x)
                loss = nn.functional.cross_entropy(logits, y)
                acc = (logits.argmax(-1) == y).float().mean()
            tot_loss = tot_loss + loss * len(x)
            tot_acc = tot_acc + acc * len(x)
            tot_n += len(x)
            vbar.set_n_and_refresh(i + 1)
        model.train()
        return vbar, (tot_loss / tot_n).item(), (tot_acc / tot_n).item()

    # sanity check (nothing is logged)
    vbar, _, _ = validate(sanity=True)
    vbar.close()

    tbar = Bar(screen, desc="Training", leave=True, position=0, smoothing=0,
               format_num=lightning_format_num)
    n_batches = train_n // bs
    batches_that_stepped = 0
    perm_gen = torch.Generator().manual_seed(seed + 1)
    for epoch in range(epochs):
        tbar.reset(n_batches)
        tbar.initial = 0
        tbar.set_description(f"Epoch {epoch}")
        order = torch.randperm(train_n, generator=perm_gen)
        for b in range(n_batches):
            idx = order[b * bs:(b + 1) * bs]
            logits = model(xtr[idx])
            loss = nn.functional.cross_entropy(logits, ytr[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            value = loss.detach().item()
            progress_metrics["train_loss"] = value
            # on_train_batch_end: progress bar
            tbar.set_n_and_refresh(b + 1)
            tbar.set_postfix(get_metrics())
            if con_rel:
                exp.add(con_rel, "train_loss", batches_that_stepped,
                        float(lightning_format_num(value)))
            # update_train_step_metrics
            if (batches_that_stepped + 1) % log_every_n_steps == 0:
                log_metrics({"train_loss": value, "epoch": epoch}, batches_that_stepped)
            # on_advance_end: validation after the last batch of the epoch
            if b == n_batches - 1:
                vbar, vloss, vacc = validate(sanity=False)
                log_metrics({"val_loss": vloss, "val_acc": vacc, "epoch": epoch},
                            batches_that_stepped)
                progress_metrics["val_loss"] = vloss
                progress_metrics["val_acc"] = vacc
                tbar.set_postfix(get_metrics())  # on_validation_end
                if con_rel:
                    exp.add(con_rel, "val_loss", batches_that_stepped, float(lightning_format_num(vloss)))
                    exp.add(con_rel, "val_acc", batches_that_stepped, float(lightning_format_num(vacc)))
                vbar.close()
            batches_that_stepped += 1
        tbar.set_postfix(get_metrics())  # on_train_epoch_end
    tbar.close()
    writer.save()  # finalize

    if snap_rel:
        # the snapshot holds exactly the rows saved before the first new column
        snap_rows = []
        for metrics, step in rows_logged:
            if not set(metrics) <= {"train_loss", "epoch"}:
                break
            snap_rows.append((metrics, step))
        for metrics, step in snap_rows:
            for k, v in metrics.items():
                exp.add(snap_rel, k, step, int(v) if k == "epoch" else float(csv_cell(v)))
    if con_rel:
        write_text(os.path.join(out_root, con_rel), screen.text())
