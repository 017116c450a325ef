"""Two Hugging Face Trainer-style runs, trained for real with torch on CPU.

The loop follows transformers' Trainer._inner_training_loop step by step
(report_to="none", one process, no gradient accumulation): clip with
max_grad_norm=1.0, AdamW, linear decay schedule, the learning rate logged is
the one used for the step (read before lr_scheduler.step()), loss logged as
round(mean over the logging window, 4), grad_norm the window's last step,
epoch = epoch + (step + 1) / steps_in_epoch, total_flos = 6 * tokens *
non-embedding parameters (PreTrainedModel.floating_point_ops).

Outputs per run (output_dir "hf/<run>" relative to tests/data/sources):
  checkpoint-<N>/trainer_state.json  written at each save, cumulative
  trainer_state.json                 trainer.save_state() after train()
  ../../console/<run>.log            the console (ProgressCallback + tqdm)
"""

import dataclasses
import json
import math
import os
import time

import torch
import torch.nn as nn

from common import Bar, Screen, write_text

VOCAB = 50
SEQ = 16


def make_data(n, gen):
    ids = torch.randint(0, VOCAB, (n, SEQ), generator=gen)
    labels = ((ids < VOCAB // 2).sum(1) > SEQ // 2).long()
    return ids, labels


class TinyTextClassifier(nn.Module):
    """Bag-of-embeddings classifier with an HF-style forward(input_ids, labels)."""
    main_input_name = "input_ids"

    def __init__(self, naive_loss=False):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, 32)
        self.hidden = nn.Linear(32, 32)
        self.head = nn.Linear(32, 2)
        self.naive_loss = naive_loss

    def num_parameters(self, exclude_embeddings=True):
        return sum(p.numel() for n, p in self.named_parameters()
                   if not (exclude_embeddings and n.startswith("embed.")))

    def forward(self, input_ids, labels):
        h = torch.tanh(self.hidden(self.embed(input_ids).mean(1)))
        logits = self.head(h)
        if self.naive_loss:
            # hand-written cross entropy: log of softmax instead of log_softmax
            p = torch.softmax(logits, -1).gather(1, labels[:, None]).squeeze(1)
            loss = -torch.log(p).mean()
        else:
            loss = nn.functional.cross_entropy(logits, labels)
        return loss, logits


@dataclasses.dataclass
class TrainerState:
    # field order as transformers.trainer_callback.TrainerState (sorted on save anyway)
    epoch: float = None
    global_step: int = 0
    max_steps: int = 0
    logging_steps: int = 500
    eval_steps: int = 500
    save_steps: int = 500
    train_batch_size: int = None
    num_train_epochs: int = 0
    num_input_tokens_seen: int = 0
    total_flos: float = 0
    log_history: list = None
    best_metric: float = None
    best_global_step: int = None
    best_model_checkpoint: str = None
    is_local_process_zero: bool = True
    is_world_process_zero: bool = True
    is_hyper_param_search: bool = False
    trial_name: str = None
    trial_params: dict = None
    stateful_callbacks: dict = None

    def save_to_json(self, json_path):
        json_string = json.dumps(dataclasses.asdict(self), indent=2, sort_keys=True) + "\n"
        write_text(json_path, json_string)


class Control:
    def __init__(self):
        self.should_training_stop = False
        self.should_epoch_stop = False
        self.should_save = False
        self.should_evaluate = False
        self.should_log = False

    def state(self):
        return {"args": {"should_training_stop": self.should_training_stop,
                         "should_epoch_stop": self.should_epoch_stop,
                         "should_save": self.should_save,
                         "should_evaluate": self.should_evaluate,
                         "should_log": self.should_log},
                "attributes": {}}


def run(out_root, exp, name, lr, naive_loss, eval_strategy, seed, warmup_steps=0, logging_steps=5):
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    train_ids, train_y = make_data(320, gen)
    eval_ids, eval_y = make_data(128, gen)

    args = dict(output_dir=f"hf/{name}", learning_rate=lr, per_device_train_batch_size=16,
                per_device_eval_batch_size=32, num_train_epochs=3, logging_steps=logging_steps,
                save_steps=20, eval_steps=20 if eval_strategy == "steps" else None,
                eval_strategy=eval_strategy, max_grad_norm=1.0, weight_decay=0.0,
                metric_for_best_model="accuracy" if eval_strategy == "steps" else None,
                greater_is_better=True, logging_nan_inf_filter=False,
                warmup_steps=warmup_steps, lr_scheduler_type="linear")

    model = TinyTextClassifier(naive_loss=naive_loss)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, betas=(0.9, 0.999), eps=1e-8,
                            weight_decay=0.0)
    bs = args["per_device_train_batch_size"]
    steps_in_epoch = len(train_ids) // bs
    max_steps = steps_in_epoch * args["num_train_epochs"]

    def linear_with_warmup(s):  # transformers get_linear_schedule_with_warmup
        if s < warmup_steps:
            return float(s) / float(max(1, warmup_steps))
        return max(0.0, float(max_steps - s) / float(max(1, max_steps - warmup_steps)))

    sched = torch.optim.lr_scheduler.LambdaLR(opt, linear_with_warmup)
    nonemb = model.num_parameters(exclude_embeddings=True)

    state = TrainerState(log_history=[], stateful_callbacks={})
    state.logging_steps = args["logging_steps"]
    state.save_steps = args["save_steps"]
    if args["eval_steps"] is not None:
        state.eval_steps = args["eval_steps"]
    state.train_batch_size = bs
    state.max_steps = max_steps
    state.num_train_epochs = args["num_train_epochs"]
    control = Control()

    screen = Screen()
    console_path = f"console/{name}.log"
    bars = {"train": None, "pred": None}
    current_step = [0]

    def log(logs):
        if state.epoch is not None:
            logs["epoch"] = state.epoch
        output = {**logs, **{"step": state.global_step}}
        state.log_history.append(output)
        control.should_log = False  # CallbackHandler.on_log
        # ProgressCallback.on_log
        shallow = dict(logs)
        shallow.pop("total_flos", None)
        if "epoch" in shallow:
            shallow["epoch"] = round(shallow["epoch"], 2)
        screen.tqdm_write(str(shallow))
        exp.add_dict(console_path, state.global_step, shallow)

    def evaluate():
        start_time = time.time()
        model.eval()
        losses, preds = [], []
        ebs = args["per_device_eval_batch_size"]
        n_batches = math.ceil(len(eval_ids) / ebs)
        for i in range(n_batches):
            x, y = eval_ids[i * ebs:(i + 1) * ebs], eval_y[i * ebs:(i + 1) * ebs]
            with torch.no_grad():
                loss, logits = model(x, y)
            losses.append(loss.detach().repeat(len(x)))
            preds.append(logits.argmax(-1))
            # ProgressCallback.on_prediction_step
            if bars["pred"] is None:
                bars["pred"] = Bar(screen, total=n_batches, leave=bars["train"] is None)
            bars["pred"].update(1)
        model.train()
        acc = float((torch.cat(preds) == eval_y).double().mean().item())
        metrics = {"accuracy": acc}
        metrics["eval_loss"] = torch.cat(losses).mean().item()
        for key in list(metrics.keys()):
            if not key.startswith("eval_"):
                metrics[f"eval_{key}"] = metrics.pop(key)
        runtime = time.time() - start_time
        metrics["eval_runtime"] = round(runtime, 4)
        metrics["eval_samples_per_second"] = round(len(eval_ids) / runtime, 3)
        metrics["eval_steps_per_second"] = round(n_batches / runtime, 3)
        log(metrics)
        # CallbackHandler.on_evaluate, then ProgressCallback.on_evaluate
        control.should_evaluate = False
        if bars["pred"] is not None:
            bars["pred"].close()
        bars["pred"] = None
        return metrics

    def save_checkpoint():
        ckpt_dir = f"{args['output_dir']}/checkpoint-{state.global_step}"
        if state.best_global_step:
            best_dir = f"{args['output_dir']}/checkpoint-{state.best_global_step}"
            if state.best_global_step <= state.global_step:  # that folder exists by now
                state.best_model_checkpoint = best_dir
        state.stateful_callbacks["TrainerControl"] = control.state()
        rel = f"hf/{name}/checkpoint-{state.global_step}/trainer_state.json"
        state.save_to_json(os.path.join(out_root, rel))
        for entry in state.log_history:
            exp.add_dict(rel, entry["step"], entry, skip=("step",))
        control.should_save = False  # CallbackHandler.on_save

    # ---- train()
    start_time = time.time()
    bars["train"] = Bar(screen, total=max_steps)
    tr_loss = torch.tensor(0.0)
    total_loss_scalar = 0.0
    globalstep_last_logged = 0
    current_flos = 0.0
    model.zero_grad()
    perm_gen = torch.Generator().manual_seed(seed + 1)
    state.epoch = 0.0
    for epoch in range(args["num_train_epochs"]):
        order = torch.randperm(len(train_ids), generator=perm_gen)
        for step in range(steps_in_epoch):
            idx = order[step * bs:(step + 1) * bs]
            x, y = train_ids[idx], train_y[idx]
            model.train()
            loss, _ = model(x, y)
            loss.backward()
            tr_loss_step = loss.detach()
            if args["logging_nan_inf_filter"] and (torch.isnan(tr_loss_step) or
                                                   torch.isinf(tr_loss_step)):
                tr_loss = tr_loss + tr_loss / (1 + state.global_step - globalstep_last_logged)
            else:
                tr_loss = tr_loss + tr_loss_step
            current_flos += float(6 * x.numel() * nonemb)
            grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), args["max_grad_norm"])
            opt.step()
            learning_rate = sched.get_last_lr()[0]
            sched.step()
            model.zero_grad()
            state.global_step += 1
            state.epoch = epoch + (step + 1) / steps_in_epoch
            # DefaultFlowCallback.on_step_end
            if state.global_step % state.logging_steps == 0:
                control.should_log = True
            if (args["eval_strategy"] == "steps" and state.global_step % state.eval_steps == 0):
                control.should_evaluate = True
            if state.save_steps > 0 and state.global_step % state.save_steps == 0:
                control.should_save = True
            if state.global_step >= state.max_steps:
                control.should_training_stop = True
                control.should_save = True
            # ProgressCallback.on_step_end
            bars["train"].update(state.global_step - current_step[0])
            current_step[0] = state.global_step
            # _maybe_log_save_evaluate
            if control.should_log and state.global_step > globalstep_last_logged:
                tr_loss_scalar = tr_loss.mean().item()
                tr_loss -= tr_loss
                logs = {}
                logs["loss"] = round(tr_loss_scalar / (state.global_step - globalstep_last_logged), 4)
                logs["grad_norm"] = grad_norm.detach().item()
                logs["learning_rate"] = learning_rate
                total_loss_scalar += tr_loss_scalar
                globalstep_last_logged = state.global_step
                state.total_flos += current_flos
                current_flos = 0.0
                log(logs)
            if control.should_evaluate:
                metrics = evaluate()
                mkey = "eval_" + args["metric_for_best_model"]
                value = metrics[mkey]
                if state.best_metric is None:
                    state.best_metric = float("-inf") if args["greater_is_better"] else float("inf")
                better = value > state.best_metric if args["greater_is_better"] else value < state.best_metric
                if better:
                    state.best_metric = value
                    state.best_global_step = state.global_step
            if control.should_save:
                state.total_flos += current_flos
                current_flos = 0.0
                save_checkpoint()
            control.should_log = control.should_evaluate = control.should_save = False
            if control.should_training_stop:
                break
        if control.should_training_stop:
            break

    # end of train(): summary log, then on_train_end closes the bar
    total_loss_scalar += tr_loss.item()
    train_loss = total_loss_scalar / state.global_step
    runtime = time.time() - start_time
    num_samples = len(train_ids) * args["num_train_epochs"]
    metrics = {"train_runtime": round(runtime, 4),
               "train_samples_per_second": round(num_samples / runtime, 3),
               "train_steps_per_second": round(max_steps / runtime, 3)}
    state.total_flos += current_flos
    metrics["total_flos"] = state.total_flos
    metrics["train_loss"] = train_loss
    log(metrics)
    bars["train"].close()

    # trainer.save_state() as the example scripts call it after training
    rel = f"hf/{name}/trainer_state.json"
    state.save_to_json(os.path.join(out_root, rel))
    for entry in state.log_history:
        exp.add_dict(rel, entry["step"], entry, skip=("step",))

    write_text(os.path.join(out_root, console_path), screen.text())
    return state
