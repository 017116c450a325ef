// trainwatch-example [--force] OUTDIR: writes the bundled example logdir, a few realistic runs
// in the styles of the writers trainwatch reads, one of them sick:
//   resnet18-baseline/               PyTorch SummaryWriter, healthy; hparams in a child run
//   vit-small-tf2/{train,validation} TF2 Keras callback, overfits after epoch 18
//   bert-finetune-diverged/          HF Trainer through torch, lr too high: spikes, NaN, +inf
//   gpt-resume/                      PyTorch, crashed and resumed from step 800 (purge_step)
//   wandb/run-20231118_093000-t5leak01/  HF Trainer logging to W&B (wandb-core's .wandb log):
//                                    the loss is fine, GPU memory (a system metric) leaks
// The output is deterministic (fixed seed, fixed wall times from 1700000000), well under 2 MiB.
//
// trainwatch-example --live SECONDS OUTDIR: keeps a run live instead, the way a training job
// does: OUTDIR/live-llama/ gets a few steps every quarter second for SECONDS, flushed in
// pieces (sometimes half a record at a time), and starts to diverge two thirds of the way in;
// its file is named for this host and process, so when it exits the daemon says run.crashed.
#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <limits>
#include <numbers>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

#include "support/event_writer.h"
#include "wandb/testing/log_writer.h"

namespace {

namespace fs = std::filesystem;
using tw::testing::EventFileName;
using tw::testing::EventFileWriter;
using tw::testing::FileVersionEvent;
using tw::testing::GraphDefEvent;
using tw::testing::HistogramEvent;
using tw::testing::HParamsEndEvent;
using tw::testing::HParamsExperimentEvent;
using tw::testing::HParamsStartEvent;
using tw::testing::kTorchSourceWriter;
using tw::testing::SessionLogEvent;
using tw::testing::SimpleScalarEvent;
using tw::testing::TextEvent;
using tw::testing::Tf2HistogramEvent;
using tw::testing::Tf2ScalarEvent;

constexpr double kStart = 1700000000;  // wall time of the first run's first event
constexpr char kHost[] = "example-host";
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Random numbers that do not depend on the standard library: mt19937_64's output is fully
// specified, std::normal_distribution's is not.
class Rng {
 public:
  explicit Rng(uint64_t seed) : engine_(seed) {}
  // Uniform on (0, 1), never 0, so that log() below stays finite.
  double Uniform() { return (static_cast<double>(engine_() >> 11) + 0.5) * 0x1p-53; }
  // Standard normal, Box-Muller.
  double Normal() {
    const double radius = std::sqrt(-2 * std::log(Uniform()));
    return radius * std::cos(2 * std::numbers::pi * Uniform());
  }

 private:
  std::mt19937_64 engine_;
};

// A run directory as TensorBoard (and trainwatch) sees it, with counts for the summary line.
struct Run {
  std::string name;  // relative to OUTDIR
  std::string what;
  int files = 0;
  int events = 0;
};

// One event file of a run. Events are buffered and written by Flush(), as a writer does.
class RunFile {
 public:
  RunFile(const fs::path& root, Run* run, const std::string& file_name)
      : run_(run), writer_((root / run->name / file_name).string()) {
    ++run_->files;
  }
  void Add(const std::string& event) {
    writer_.Add(event);
    ++run_->events;
  }
  void Flush() { writer_.Flush(); }

 private:
  Run* run_;
  EventFileWriter writer_;
};

// Values are computed in double; event files hold float32 simple_values.
std::string Scalar(const std::string& tag, int64_t step, double wall_time, double value) {
  return tw::testing::SimpleScalarEvent(tag, step, wall_time, static_cast<float>(value));
}

// Linear warmup to `peak` over `warmup` steps, then cosine decay to `floor` at `total`.
double WarmupCosine(int64_t step, int64_t warmup, int64_t total, double peak, double floor) {
  if (step < warmup) return peak * static_cast<double>(step + 1) / static_cast<double>(warmup);
  const double progress = static_cast<double>(step - warmup) / static_cast<double>(total - warmup);
  return floor + (peak - floor) * 0.5 * (1 + std::cos(std::numbers::pi * progress));
}

std::vector<double> NormalSamples(Rng& rng, size_t n, double mean, double stddev) {
  std::vector<double> out(n);
  for (double& x : out) x = mean + stddev * rng.Normal();
  return out;
}

// Equal-width buckets over [min, max] as (left, right, count): TF2's histogram layout.
std::vector<std::array<double, 3>> Tf2Buckets(const std::vector<double>& samples, int k) {
  const auto [lo, hi] = std::minmax_element(samples.begin(), samples.end());
  const double width = (*hi - *lo) / k;
  std::vector<std::array<double, 3>> buckets(k);
  for (int i = 0; i < k; ++i) buckets[i] = {*lo + i * width, *lo + (i + 1) * width, 0};
  for (double x : samples) buckets[std::min(static_cast<int>((x - *lo) / width), k - 1)][2] += 1;
  return buckets;
}

// PyTorch SummaryWriter: simple_value scalars, legacy histograms, ~0.11 s a step. Returns the
// final validation accuracy, which add_hparams then reports.
double WriteResnetScalars(const fs::path& root, Run* run, Rng& rng) {
  RunFile f(root, run, EventFileName(static_cast<int64_t>(kStart), kHost, 4242, 0));
  double t = kStart;
  f.Add(FileVersionEvent(t, kTorchSourceWriter));
  std::vector<double> limits;  // equal-width bins, then TF's DBL_MAX as the last limit
  for (int i = 1; i < 48; ++i) limits.push_back(-0.24 + i * 0.01);
  limits.push_back(std::numeric_limits<double>::max());
  double val_acc = 0;
  for (int64_t step = 0; step <= 2000; step += 10) {
    t += 10 * 0.11 * (1 + 0.05 * rng.Uniform());
    const double trend = 0.22 + 2.08 * std::exp(-static_cast<double>(step) / 450);
    f.Add(Scalar("train/loss", step, t, trend * std::exp(0.04 * rng.Normal())));
    f.Add(Scalar("train/lr", step, t + 0.0004, WarmupCosine(step, 100, 2000, 0.1, 0)));
    if (step > 0 && step % 200 == 0) {
      t += 4.2;  // a pass over the validation set
      val_acc = 0.93 - 0.83 * std::exp(-static_cast<double>(step) / 500) + 0.004 * rng.Normal();
      f.Add(Scalar("val/loss", step, t, trend + 0.09 + 0.01 * rng.Normal()));
      f.Add(Scalar("val/acc", step, t + 0.0003, val_acc));
    }
    if (step % 500 == 0) {
      const double stddev = 0.05 * (1 + 0.3 * static_cast<double>(step) / 2000);
      f.Add(HistogramEvent("weights/layer4.1.conv2", step, t + 0.01,
                           NormalSamples(rng, 4000, 0, stddev), limits));
    }
  }
  f.Flush();
  return val_acc;
}

// PyTorch add_hparams: a child run named by the call's time.time(), counter 1 of the process.
void WriteResnetHParams(const fs::path& root, Run* run, double val_acc) {
  RunFile f(root, run, EventFileName(static_cast<int64_t>(kStart), kHost, 4242, 1));
  const double t = kStart + 0.1;
  f.Add(FileVersionEvent(t, kTorchSourceWriter));
  f.Add(HParamsExperimentEvent(t + 0.001));
  f.Add(HParamsStartEvent(t + 0.001,
                          {{"lr", 0.1},
                           {"batch_size", 128.0},
                           {"optimizer", std::string("SGD")},
                           {"momentum", 0.9},
                           {"weight_decay", 5e-4},
                           {"nesterov", true}},
                          false));
  f.Add(HParamsEndEvent(t + 0.001));
  f.Add(Scalar("hparam/val_acc", 0, t + 0.001, val_acc));
  f.Flush();
}

void WriteResnet(const fs::path& root, Rng& rng, std::vector<Run>* runs) {
  Run scalars{"resnet18-baseline", "PyTorch: train/loss, train/lr, val/*, weight histograms"};
  Run hparams{"resnet18-baseline/1700000000.1", "PyTorch add_hparams: 6 hparams, hparam/val_acc"};
  WriteResnetHParams(root, &hparams, WriteResnetScalars(root, &scalars, rng));
  runs->push_back(scalars);
  runs->push_back(hparams);
}

// TF2 Keras TensorBoard callback: one file per split named *.v2, wall time of file_version in
// whole seconds, tensor scalars with metadata on a tag's first value only, a graph, and
// (histogram_freq=10) TF2 histograms.
void WriteVit(const fs::path& root, Rng& rng, std::vector<Run>* runs) {
  const double start = kStart + 100000;
  Run train{"vit-small-tf2/train", "TF2 Keras: epoch_loss, epoch_accuracy, graph, histograms"};
  Run val{"vit-small-tf2/validation", "TF2 Keras: epoch_loss, epoch_accuracy; overfits after 18"};
  // Keras opens the validation writer when the first validation begins, near the end of the
  // first epoch (which ends at start + 95 s or a little later).
  const int64_t val_start = static_cast<int64_t>(start) + 94;
  RunFile train_file(root, &train,
                     EventFileName(static_cast<int64_t>(start), kHost, 5151, 0) + ".v2");
  RunFile val_file(root, &val, EventFileName(val_start, kHost, 5151, 1) + ".v2");
  train_file.Add(FileVersionEvent(std::floor(start)));
  train_file.Add(GraphDefEvent(start + 0.6, 24 * 1024));
  val_file.Add(FileVersionEvent(static_cast<double>(val_start)));
  double t = start;
  for (int64_t epoch = 0; epoch < 30; ++epoch) {
    t += 95 * (1 + 0.02 * rng.Uniform());
    const bool first = epoch == 0;
    const double e = static_cast<double>(epoch);
    const double loss = 0.07 + 2.2 * std::exp(-e / 7) + 0.01 * rng.Normal();
    const double acc = 0.995 - 0.9 * std::exp(-e / 6) + 0.003 * rng.Normal();
    train_file.Add(Tf2ScalarEvent("epoch_loss", epoch, t, static_cast<float>(loss), first));
    train_file.Add(
        Tf2ScalarEvent("epoch_accuracy", epoch, t + 0.0002, static_cast<float>(acc), first));
    if (epoch % 10 == 0) {
      const auto buckets = Tf2Buckets(NormalSamples(rng, 6000, 0, 0.02 * (1 + e / 30)), 30);
      train_file.Add(Tf2HistogramEvent("dense_1/kernel_0", epoch, t + 0.01, buckets, first));
    }
    // Validation loss falls until epoch 18, then the model memorizes and it climbs.
    const double overfit = std::pow(std::max(0.0, e - 18), 1.3);
    const double vloss = 0.55 + 1.75 * std::exp(-e / 5) + 0.012 * overfit + 0.003 * rng.Normal();
    const double vacc = 0.82 - 0.7 * std::exp(-e / 5) - 0.002 * overfit + 0.002 * rng.Normal();
    val_file.Add(Tf2ScalarEvent("epoch_loss", epoch, t + 0.4, static_cast<float>(vloss), first));
    val_file.Add(
        Tf2ScalarEvent("epoch_accuracy", epoch, t + 0.4002, static_cast<float>(vacc), first));
  }
  train_file.Flush();
  val_file.Flush();
  runs->push_back(train);
  runs->push_back(val);
}

// The diverging fine-tune's loss: healthy until 1200, then growing spikes on a rising floor,
// NaN from 1500 and +inf from 1560 (an fp16 overflow that never recovers).
double DivergingLoss(int64_t step, Rng& rng) {
  if (step >= 1560) return kInf;
  if (step >= 1500) return kNaN;
  const double s = static_cast<double>(step);
  double loss = (0.42 + 0.68 * std::exp(-s / 300)) * std::exp(0.05 * rng.Normal());
  if (step < 1200) return loss;
  const double sickness = (s - 1200) / 300;  // 0 at the first spike, 1 at the NaN
  loss *= std::exp(1.5 * sickness * sickness);
  const bool spike = rng.Uniform() < 0.15 + 0.5 * sickness;
  return spike ? loss * std::exp(std::abs(rng.Normal()) * (0.5 + 3 * sickness)) : loss;
}

// Its gradient norm grows from step 1000, before the loss shows anything, and overflows.
double DivergingGradNorm(int64_t step, Rng& rng) {
  if (step >= 1500) return kNaN;
  if (step >= 1490) return kInf;
  const double growth = step > 1000 ? std::exp(static_cast<double>(step - 1000) / 70) : 1;
  return 1.8 * growth * std::exp(0.3 * rng.Normal());
}

// HF Trainer through torch.utils.tensorboard: args as text, then train/* every logging step,
// eval/* every 500. lr 5e-3 constant with no warmup: far too high for fine-tuning BERT.
void WriteBert(const fs::path& root, Rng& rng, std::vector<Run>* runs) {
  const double start = kStart + 200000;
  Run run{"bert-finetune-diverged", "HF Trainer: lr 5e-3, no warmup; grad_norm, loss -> NaN, inf"};
  RunFile f(root, &run, EventFileName(static_cast<int64_t>(start), kHost, 6060, 0));
  double t = start;
  f.Add(FileVersionEvent(t, kTorchSourceWriter));
  f.Add(TextEvent("args/text_summary", 0, t + 0.002,
                  {R"({"model_name_or_path": "bert-base-uncased", "learning_rate": 0.005, )"
                   R"("lr_scheduler_type": "constant", "warmup_steps": 0, "max_grad_norm": 0.0, )"
                   R"("per_device_train_batch_size": 32, "num_train_epochs": 2, "fp16": true})"},
                  true));
  for (int64_t step = 10; step <= 1800; step += 10) {
    t += 10 * 0.35 * (1 + 0.05 * rng.Uniform());
    const double loss = DivergingLoss(step, rng);
    f.Add(Scalar("train/loss", step, t, loss));
    f.Add(Scalar("train/grad_norm", step, t + 0.0002, DivergingGradNorm(step, rng)));
    f.Add(Scalar("train/learning_rate", step, t + 0.0004, 5e-3f));
    f.Add(Scalar("train/epoch", step, t + 0.0006, static_cast<double>(step) / 900));
    if (step % 500 == 0) {
      t += 20;
      const bool broken = !std::isfinite(loss);
      const double eval_loss = broken ? kNaN : 0.58 + 0.05 * static_cast<double>(1000 - step) / 500;
      const double eval_acc = broken ? 0.3182 : 0.74 + 0.02 * static_cast<double>(step) / 500;
      f.Add(Scalar("eval/loss", step, t, eval_loss));
      f.Add(Scalar("eval/accuracy", step, t + 0.0002, eval_acc));
    }
  }
  f.Flush();
  runs->push_back(run);
}

// GPT pretraining, PyTorch style, steps [from, to] every 10 on one file.
void WriteGptSteps(RunFile& f, Rng& rng, int64_t from, int64_t to, double* t) {
  for (int64_t step = from; step <= to; step += 10) {
    *t += 10 * 1.2 * (1 + 0.05 * rng.Uniform());
    const double s = static_cast<double>(step);
    const double loss = 3.3 + 7.5 * std::exp(-s / 180) + 0.6 * std::exp(-s / 1500);
    f.Add(Scalar("train/loss", step, *t, loss * std::exp(0.02 * rng.Normal())));
    f.Add(Scalar("train/lr", step, *t + 0.0004, WarmupCosine(step, 100, 1600, 6e-4, 6e-5)));
  }
}

// Crashed after step 1000, resumed two hours later by a new process from the step-800
// checkpoint. SummaryWriter(purge_step=800) writes a SessionLog START at step 800 first, which
// tells readers to drop the first life's points from step 800 on. (It also writes a second
// file_version event with step 800, which carries nothing a reader uses; left out.)
void WriteGpt(const fs::path& root, Rng& rng, std::vector<Run>* runs) {
  const double start = kStart + 300000;
  Run run{"gpt-resume", "PyTorch: steps 0..1000, crash, resume at 800 (SessionLog START)"};
  RunFile first(root, &run, EventFileName(static_cast<int64_t>(start), kHost, 7001, 0));
  double t = start;
  first.Add(FileVersionEvent(t, kTorchSourceWriter));
  WriteGptSteps(first, rng, 0, 1000, &t);
  first.Flush();

  t += 2 * 3600;
  RunFile second(root, &run, EventFileName(static_cast<int64_t>(t), kHost, 7377, 0));
  second.Add(FileVersionEvent(t, kTorchSourceWriter));
  second.Add(SessionLogEvent(800, t + 0.001, 1));
  WriteGptSteps(second, rng, 800, 1600, &t);
  second.Flush();
  runs->push_back(run);
}

bool IsNonEmptyDir(const fs::path& dir) {
  std::error_code ec;
  return fs::is_directory(dir, ec) && !fs::is_empty(dir, ec);
}

// A live run: appends as a training loop would, for `seconds`. Wall times are real.
void WriteLive(const std::string& outdir, double seconds) {
  using Clock = std::chrono::system_clock;
  auto now = [] { return std::chrono::duration<double>(Clock::now().time_since_epoch()).count(); };
  const double t0 = now();
  // Named for this host and this process, as a real writer's file is: when the run has turned
  // NaN and this process exits, the daemon sees its writer gone and says run.crashed.
  char host[256] = {0};
  ::gethostname(host, sizeof host - 1);
  EventFileWriter w((fs::path(outdir) / "live-llama" /
                     EventFileName(static_cast<int64_t>(t0), host, static_cast<int>(::getpid()), 0))
                        .native());
  w.Add(FileVersionEvent(t0, kTorchSourceWriter));
  w.Flush();
  Rng rng(7);
  const int total_ticks = static_cast<int>(seconds * 4);
  double loss = 3.2;
  int64_t step = 0;
  for (int tick = 0; tick < total_ticks; ++tick) {
    const bool diverging = tick > total_ticks * 2 / 3;
    for (int i = 0; i < 5; ++i, ++step) {
      loss = diverging ? loss * (1.15 + 0.1 * rng.Uniform()) : loss * 0.995 + 0.01 * rng.Normal();
      const double value = loss > 1e4 ? kNaN : loss;
      w.Add(SimpleScalarEvent("train/loss", step, now(), static_cast<float>(value)));
      w.Add(SimpleScalarEvent("train/lr", step, now(), 3e-4f));
    }
    // Flush in two pieces now and then, as a writer caught mid-flush leaves a file.
    if (tick % 3 == 1) {
      w.FlushPartial(w.buffered() / 2);
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    w.Flush();
    if (tick % 20 == 0)
      std::cout << "live-llama: step " << step << ", train/loss " << loss << std::endl;
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
}

int Usage() {
  std::cerr << "usage: trainwatch-example [--force] OUTDIR\n"
               "       trainwatch-example --live SECONDS OUTDIR\n"
               "Writes the example logdir into OUTDIR; --force writes into a non-empty OUTDIR.\n"
               "--live keeps OUTDIR/live-llama/ growing for SECONDS, like a training job.\n";
  return 2;
}

}  // namespace

// HF Trainer reporting to W&B through wandb-core: a `.wandb` log with a run record,
// define_metric("*", step_metric="train/global_step"), a history row every 10 steps, a summary
// record after each, and system metrics every 15 s, whose GPU memory grows steadily: tensors
// kept alive across steps (a loss appended to a list without .item()).
void WriteWandb(const fs::path& root, Rng& rng, std::vector<Run>* runs) {
  namespace tt = tw::testing;
  const double start = kStart + 400000;
  Run run{"wandb/run-20231118_093000-t5leak01", "W&B (core): T5 fine-tune; loss fine, GPU memory leaks"};
  tt::WandbLogWriter log;
  int64_t num = 0;
  auto add = [&](const std::string& record) {
    log.Add(record);
    ++run.events;
  };
  add(tt::WandbHeaderRecord(++num, "0.21.2"));
  tt::WandbRunInfo info{"t5leak01", "acme", "t5-summarization", "t5-base-lr3e-4", start, 0, false,
                       {tt::Nested({"learning_rate"}, "0.0003"), tt::Nested({"per_device_train_batch_size"}, "16"),
                        tt::Nested({"model_name_or_path"}, "\"t5-base\"")}};
  add(tt::WandbRunRecord(++num, info));
  add(tt::WandbMetricRecord(++num, "train/global_step", "", ""));
  add(tt::WandbMetricRecord(++num, "", "*", "train/global_step", true));
  double now = start + 20;
  double next_stats = now;
  double memory = 31.0;  // % of the GPU's memory allocated
  for (int64_t row = 0; row < 200; ++row) {
    const int64_t step = (row + 1) * 10;
    now += 10 * 0.9 * (1 + 0.05 * rng.Uniform());
    const double s = static_cast<double>(step);
    const double loss = 1.2 + 1.9 * std::exp(-s / 300) - 0.3 * s / 2000 + 0.03 * rng.Normal();
    const std::vector<tt::WandbKV> items = {
        tt::Nested({"train/loss"}, tt::PyJsonNumber(loss)),
        tt::Nested({"train/learning_rate"}, tt::PyJsonNumber(WarmupCosine(step, 100, 2000, 3e-4, 0))),
        tt::Nested({"train/grad_norm"}, tt::PyJsonNumber(0.9 * std::exp(0.25 * rng.Normal()))),
        tt::Nested({"train/epoch"}, tt::PyJsonNumber(s / 1000)),
        tt::Nested({"train/global_step"}, std::to_string(step)),
        tt::Nested({"_step"}, std::to_string(row)),
        tt::Nested({"_timestamp"}, tt::PyJsonNumber(now)),
        tt::Nested({"_runtime"}, tt::PyJsonNumber(now - start)),
    };
    add(tt::WandbHistoryRecord(++num, items, row));
    add(tt::WandbSummaryRecord(++num, {items[0], items[4]}));
    while (next_stats <= now) {
      memory += 0.12 + 0.03 * rng.Normal();
      add(tt::WandbStatsRecord(++num, next_stats,
                              {{"gpu.0.memoryAllocated", tt::PyJsonNumber(memory)},
                               {"gpu.0.gpu", tt::PyJsonNumber(88 + 4 * rng.Normal())},
                               {"cpu", tt::PyJsonNumber(12 + 2 * rng.Normal())}}));
      next_stats += 15;
    }
  }
  add(tt::WandbExitRecord(++num, 0, static_cast<int32_t>(now - start)));
  const fs::path path = root / run.name / "run-t5leak01.wandb";
  fs::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary);
  out.write(log.bytes().data(), static_cast<std::streamsize>(log.bytes().size()));
  if (!out) throw std::runtime_error("cannot write " + path.string());
  run.files = 1;
  runs->push_back(run);
}

int main(int argc, char** argv) {
  bool force = false;
  double live_seconds = 0;
  std::string outdir;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--force") {
      force = true;
    } else if (arg == "--live" && i + 1 < argc) {
      live_seconds = std::atof(argv[++i]);
      if (live_seconds <= 0) return Usage();
    } else if (arg.starts_with("-") || !outdir.empty()) {
      return Usage();
    } else {
      outdir = arg;
    }
  }
  if (outdir.empty()) return Usage();
  if (live_seconds > 0) {
    try {
      WriteLive(outdir, live_seconds);
    } catch (const std::exception& e) {
      std::cerr << "trainwatch-example: " << e.what() << "\n";
      return 1;
    }
    return 0;
  }
  if (IsNonEmptyDir(outdir) && !force) {
    std::cerr << "trainwatch-example: " << outdir
              << " exists and is not empty (--force to write)\n";
    return 1;
  }
  try {
    Rng rng(20231114);
    std::vector<Run> runs;
    WriteResnet(outdir, rng, &runs);
    WriteVit(outdir, rng, &runs);
    WriteBert(outdir, rng, &runs);
    WriteGpt(outdir, rng, &runs);
    WriteWandb(outdir, rng, &runs);
    for (const Run& r : runs) {
      std::cout << std::left << std::setw(32) << r.name << std::right << std::setw(2) << r.files
                << (r.files == 1 ? " file " : " files") << std::setw(6) << r.events << " events  "
                << r.what << "\n";
    }
  } catch (const std::exception& e) {
    std::cerr << "trainwatch-example: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
