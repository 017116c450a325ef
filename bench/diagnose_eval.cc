// Evaluation harness for the diagnosis rules: generates LABELED runs (each pathology the rules
// cover, in several variants, plus healthy runs and traps that must stay quiet), ingests them
// once, evaluates every rule once, and scores recall, onset error and false alarms against the
// targets of the issue. A plain program (not Google Benchmark).
//
//   diagnose_eval [--seed N] [--keep DIR] [--verbose] [--only RULE|TRAP] [--real | --real-only] [--shared DIR]
//
// --real also scores the rules on labelled REAL runs, in a section of its own (RealMain below);
// --real-only does only that and exits 0 iff the real-run targets are met.
//
// Each case is one run (Keras: a train/validation pair) written in one writer's style:
//   pytorch    Loss/train, Loss/val, lr, grad_norm, epoch, memory, step_time (simple_value);
//              hparams in a child run, as SummaryWriter.add_hparams writes them
//   hf         train/loss, eval/loss, train/learning_rate, train/grad_norm, train/epoch
//              (fractional, as the Trainer logs it), every 10 steps; hparams in a child run
//   lightning  train_loss, val_loss, lr-AdamW, grad_2.0_norm_total, epoch (integer), gpu_memory,
//              time/step; hparams in the run's own file
//   tf2        loss, val/loss, learning_rate, grad_norm, epoch, memory, step_time as TF2 tensor
//              scalars (metadata with each tag's first value); hp.hparams-style placeholder
//   keras      sibling runs X/train and X/validation with epoch_loss (and epoch_learning_rate),
//              one point per epoch, TF2 tensor scalars
// with multiplicative log-normal noise of 1, 5 or 15 % on the training loss, lengths of 300,
// 2000 or 10000 steps and logging intervals of 1, 10 or 50 steps (sampled, not crossed; a
// combination that leaves too few points for the pathology to be visible is not drawn).
// Every case knows its expected rule (or none) and the true onset step.
//
// Scoring (see README.md): recall per rule (the expected rule fired, unmuted, not pending, with
// at least the rule's declared severity), |onset error| as a fraction of the run's length,
// warnings-or-worse on healthy and trap runs, and "wrong rule" findings on pathology runs
// (informative). Targets: recall >= 0.95 per rule, false alarms <= 2 %, onset within 5 % (a
// rule's mean error; the share within 5 % and the worst are printed too).
// The logdir lives in a fresh directory under $TMPDIR, removed at the end; --keep DIR keeps it.
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "diagnose/engine.h"
#include "ingest/ingest.h"
#include "store/store.h"
#include "support/event_writer.h"
#include "support/real_labels.h"
#include "work_dir.h"

namespace {

namespace fs = std::filesystem;
using namespace tw;
using diagnose::Severity;
using Clock = std::chrono::steady_clock;

constexpr double kNow = 1.75e9;  // the evaluation's `now`; runs are placed relative to it
const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

[[noreturn]] void Die(const std::string& what) { throw std::runtime_error(what); }
double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// Ingests `dir` into a fresh store at `db` and opens the engine on it; rules that do not load
// are printed.
std::unique_ptr<diagnose::Engine> IngestThenOpen(const std::string& db, const std::string& dir,
                                                 ingest::Summary* summary, const std::string& rules_dir) {
  {
    Result<std::unique_ptr<store::Store>> store = store::Store::Open(db);
    if (!store.ok()) Die("store: " + store.status().ToString());
    Status s = ingest::IngestPaths(**store, {dir}, {}, summary);
    if (!s.ok()) Die("ingest " + dir + ": " + s.ToString());
  }
  diagnose::EngineOptions options;
  options.rules_dir = rules_dir;
  Result<std::unique_ptr<diagnose::Engine>> engine = diagnose::Engine::Open(db, options);
  if (!engine.ok()) Die("engine: " + engine.status().ToString());
  for (const auto& e : (*engine)->load_errors()) std::printf("rule load error: %s\n", e.c_str());
  return std::move(*engine);
}

// ---------------------------------------------------------------------------------------------
// Generated data.

struct Pts {
  std::vector<int64_t> step;
  std::vector<double> v;
  void Add(int64_t s, double x) {
    step.push_back(s);
    v.push_back(x);
  }
  bool empty() const { return step.empty(); }
};

// One run's series by role, before they get a writer's tag names.
struct Roles {
  Pts train, val, lr, grad, epoch, mem, stime;
  Pts wnorm, uratio;                               // weight norm, update-to-weight ratio
  Pts acc;                                         // training accuracy (0-1)
  Pts scale;                                       // mixed precision's dynamic loss scale
  Pts skipped;                                     // steps skipped for float16 overflow (a form per style)
  std::vector<std::pair<std::string, Pts>> layers;  // per-layer gradient norms, by layer name
  // Activation statistics and QAT losses, by their full tag (each kind names them in its
  // writer's style), and histograms of ternary weights: (tag, step, samples).
  std::vector<std::pair<std::string, Pts>> tagged;
  std::vector<std::tuple<std::string, int64_t, std::vector<double>>> hists;
};

struct Case {
  std::string name;    // the run's directory (Keras: the parent of train/ and validation/)
  std::string label;   // expected rule id; empty for healthy runs and traps
  std::string kind;    // variant (pathologies) or trap type
  std::string style;   // pytorch, hf, lightning, tf2, keras
  double noise = 0;
  int64_t length = 0;  // steps (Keras: epochs)
  int interval = 1;
  int64_t onset = -1;  // true onset step (pathologies)
  double dt = 0.5;     // seconds per step
  double silence = 10; // seconds between the last point and `now`
  double clip = 0;     // max_grad_norm hparam (0: none)
  int classes = 0;     // a class-count hparam (0: none)
  bool info_enough = false;  // the rule reports this case as information by design (it recovered)
  bool clean_stop = false;
  std::string extra;   // free-form parameters for the report
  Roles roles;
  std::string subject;  // run name the engine reports (Keras: name/train)
};

struct Rng {
  std::mt19937_64 g;
  double U(double a, double b) { return std::uniform_real_distribution<double>(a, b)(g); }
  double N(double sd) { return sd > 0 ? std::normal_distribution<double>(0, sd)(g) : 0.0; }
  int I(int a, int b) { return std::uniform_int_distribution<int>(a, b)(g); }
  template <typename T>
  const T& Pick(const std::vector<T>& v) { return v[static_cast<size_t>(I(0, static_cast<int>(v.size()) - 1))]; }
};

// A healthy power-law decay E + A (1 + t/tau)^-alpha.
struct PowerLaw {
  double e, a, alpha, tau;
  double operator()(double t) const { return e + a * std::pow(1 + t / tau, -alpha); }
};

// Warmup then cosine from peak to floor over [warm, end], floor after.
double WarmupCosine(double t, double peak, double floor, double warm, double end) {
  if (t < warm) return peak * (t + 1) / (warm + 1);
  if (t >= end) return floor;
  const double p = (t - warm) / std::max(1.0, end - warm);
  return floor + (peak - floor) * 0.5 * (1 + std::cos(M_PI * p));
}

double Sigmoid(double x) { return 1 / (1 + std::exp(-x)); }

// The parameters a generator draws from; each kind fills `c.roles` and `c.onset`.
struct Gen {
  Case& c;
  Rng& r;
  std::vector<int64_t> steps;  // logged steps of the per-step tags
  std::vector<int64_t> evals;  // validation steps
  PowerLaw pl{};
  double peak = 0, floor = 0, warm = 0;
  int64_t L = 0;

  Gen(Case& cs, Rng& rng) : c(cs), r(rng) {
    L = c.length;
    for (int64_t s = 0; s < L; s += c.interval) steps.push_back(s);
    if (c.style == "keras") {
      for (int64_t s = 0; s < L; ++s) evals.push_back(s);
    } else {
      const int64_t every = std::max<int64_t>(1, L / 20 / c.interval) * c.interval;
      for (int64_t s = every; s < L; s += every) evals.push_back(s);
      if (evals.empty() || evals.back() != L - 1) evals.push_back(L - 1);  // a final evaluation
    }
    pl = {r.U(0.2, 1.0), r.U(1.5, 3.0), r.U(0.5, 1.0), L * r.U(0.02, 0.08)};
    peak = r.U(1e-4, 3e-3);
    floor = peak * r.U(0.0, 0.1);
    warm = L * r.U(0.01, 0.05);
  }
  double Noise(double sd) { return std::exp(r.N(sd)); }
  // The first logged step at or after s.
  int64_t AtOrAfter(int64_t s, const std::vector<int64_t>& at) const {
    for (int64_t x : at)
      if (x >= s) return x;
    return at.back();
  }
  // Step drawn in [a, b) of the run, aligned to the logging interval.
  int64_t StepAt(double frac) const {
    int64_t s = static_cast<int64_t>(frac * static_cast<double>(L));
    return std::min<int64_t>(L - 1, (s / c.interval) * c.interval);
  }
  void Train(const std::function<double(double)>& clean, double sd) {
    for (int64_t s : steps) c.roles.train.Add(s, clean(static_cast<double>(s)) * Noise(sd));
  }
  void Val(const std::function<double(double)>& clean, double sd) {
    for (int64_t s : evals) c.roles.val.Add(s, clean(static_cast<double>(s)) * Noise(sd));
  }
  void Lr(const std::function<double(double)>& f) {
    for (int64_t s : steps) c.roles.lr.Add(s, f(static_cast<double>(s)));
  }
  void DefaultLr() {
    Lr([this](double t) { return WarmupCosine(t, peak, floor, warm, static_cast<double>(L - 1)); });
  }
  void Grad(const std::function<double(double)>& clean, double sd) {
    if (c.style == "keras") return;
    for (int64_t s : steps) c.roles.grad.Add(s, clean(static_cast<double>(s)) * Noise(sd));
  }
  void DefaultGrad() {
    const double g0 = r.U(0.3, 0.7);
    Grad([g0, this](double t) { return g0 * (1 + 1.5 * std::exp(-t / pl.tau)); }, 0.15);
  }
  void Epoch(int64_t per_epoch) {
    if (c.style == "keras" || c.style == "pytorch") return;  // PyTorch examples rarely log it
    for (int64_t s : steps) {
      const double e = static_cast<double>(s) / static_cast<double>(per_epoch);
      c.roles.epoch.Add(s, c.style == "hf" ? std::round(e * 100) / 100 : std::floor(e));
    }
  }
  // The usual companions of a healthy run: val following train, the LR schedule, grad norm,
  // sometimes flat memory and step time.
  void Base(bool with_val = true) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "clean loss -%.1f%% over the last 30%%",
                  100 * (1 - pl(static_cast<double>(L - 1)) / pl(0.7 * static_cast<double>(L))));
    c.extra = buf;
    Train(pl, c.noise);
    if (with_val) Val([this](double t) { return 1.05 * pl(t) + 0.05; }, c.noise * 0.2);
    DefaultLr();
    DefaultGrad();
    Epoch(std::max<int64_t>(1, L / r.I(5, 20)));
    Extras();
  }
  void Extras() {
    if (c.style == "keras") return;
    if (r.U(0, 1) < 0.3) {
      const double m = r.U(2e9, 3e10);
      for (int64_t s : steps) c.roles.mem.Add(s, m * (1 + 0.002 * r.N(1)));
    }
    if (r.U(0, 1) < 0.3) {
      const double st = r.U(0.05, 1.0);
      for (int64_t s : steps) c.roles.stime.Add(s, st * Noise(0.05));
    }
  }
};

int64_t MinPoints(const std::string& kind) {
  if (kind == "plateau_stuck") return 400;
  if (kind == "spikes_recurring" || kind == "spikes_levelshift" || kind == "epoch_jumps") return 300;
  return 100;
}

// Activation statistics, QAT losses and ternary weight histograms (issue 18 part 3), on top of a
// healthy loss curve. Each kind names its tags as a writer of its style might. False when `k`
// is none of them.
bool GenerateActivations(Gen& g, const std::string& k) {
  Case& c = g.c;
  Rng& r = g.r;
  const std::string& st = c.style;
  char buf[160];
  auto clamp01 = [](double x) { return std::clamp(x, 0.0, 1.0); };
  // A share that sits at `from` and moves to `to` around `at` (a logistic `width` steps wide).
  auto share = [&](double from, double to, double at, double width, double sd) {
    Pts p;
    for (int64_t s : g.steps) {
      const double f = 1 / (1 + std::exp(-(static_cast<double>(s) - at) / std::max(1.0, width)));
      p.Add(s, clamp01(from + (to - from) * f + r.N(sd)));
    }
    return p;
  };
  auto layer_tag = [&](const std::string& what, int i) {
    if (st == "pytorch") std::snprintf(buf, sizeof buf, "act/%s/layer%d", what.c_str(), i);
    else if (st == "hf") std::snprintf(buf, sizeof buf, "train/%s/fc%d", what.c_str(), i);
    else if (st == "lightning") std::snprintf(buf, sizeof buf, "%s/block_%d", what.c_str(), i);
    else std::snprintf(buf, sizeof buf, "activations/layer_%d/%s", i, what.c_str());
    return std::string(buf);
  };
  const int layers = r.I(2, 4);
  const double L = static_cast<double>(g.L);
  if (k == "dead_relu" || k == "relu_sparse_ok") {
    // Dead-unit shares (pytorch, hf, lightning) or zero-output shares (tf2: fraction_of_zero_values).
    g.Base();
    const bool zero = st == "tf2";
    const int sick = k == "dead_relu" ? r.I(0, layers - 1) : -1;
    const bool from_start = r.U(0, 1) < 0.3;
    const double at = from_start ? -L : L * r.U(0.05, 0.4);
    for (int i = 0; i < layers; ++i) {
      const std::string tag = zero ? "dnn/hiddenlayer_" + std::to_string(i) + "/fraction_of_zero_values"
                                   : layer_tag(st == "hf" ? "dead_neurons" : "relu_dead_frac", i + 1);
      const double base = zero ? r.U(0.35, 0.7) : r.U(0.0, 0.2);
      if (i == sick) {
        c.roles.tagged.push_back({tag, share(base, zero ? r.U(0.93, 1.0) : r.U(0.55, 1.0), at, L * 0.02, 0.02)});
      } else if (k == "relu_sparse_ok" && i == 0) {
        // A transient: most units off for a while after an LR spike, then back.
        Pts p = share(base, zero ? 0.95 : 0.7, L * 0.3, L * 0.01, 0.02);
        for (size_t j = 0; j < p.v.size(); ++j)
          if (p.step[j] > L * 0.5) p.v[j] = clamp01(base + r.N(0.02));
        c.roles.tagged.push_back({tag, p});
      } else {
        c.roles.tagged.push_back({tag, share(base, base + r.U(-0.1, 0.1), L * 0.5, L * 0.2, 0.02)});
      }
    }
    if (sick >= 0) c.onset = g.AtOrAfter(std::max<int64_t>(0, static_cast<int64_t>(at)), g.steps);
    std::snprintf(buf, sizeof buf, ", %d layers, %s", layers, sick >= 0 ? (from_start ? "dead from start" : "dies") : "alive");
    c.extra += buf;
  } else if (k == "saturation" || k == "saturation_ok") {
    g.Base();
    const int sick = k == "saturation" ? r.I(0, layers - 1) : -1;
    const double at = r.U(0, 1) < 0.4 ? -L : L * r.U(0.05, 0.5);
    for (int i = 0; i < layers; ++i) {
      const std::string tag = layer_tag(st == "lightning" ? "saturation" : "tanh_sat_frac", i + 1);
      const double base = r.U(0.0, 0.1);
      c.roles.tagged.push_back({tag, i == sick ? share(base, r.U(0.55, 0.95), at, L * 0.02, 0.02)
                                               : share(base, base + r.U(0.0, 0.3), L * r.U(0.3, 0.9), L * 0.1, 0.02)});
    }
    if (sick >= 0) c.onset = g.AtOrAfter(std::max<int64_t>(0, static_cast<int64_t>(at)), g.steps);
    c.extra += sick >= 0 ? ", saturates" : ", some saturation late";
  } else if (k == "attn_collapse" || k == "attn_sharpens") {
    // Per-head entropies from ln(keys) at initialization. attn_collapse: most heads fall to a
    // few percent of it early; attn_sharpens (trap): gradual sharpening, one induction-like head
    // sharp.
    g.Base();
    const int heads = r.Pick(std::vector<int>{1, 4, 8, 12});
    const double h0 = std::log(r.Pick(std::vector<double>{16, 64, 128, 512}));
    const double at = L * r.U(0.03, 0.25);
    const int collapsing = k == "attn_collapse" ? std::max(1, static_cast<int>(std::ceil(heads * r.U(0.6, 1.0)))) : 0;
    int64_t first = g.L;
    for (int h = 0; h < heads; ++h) {
      std::snprintf(buf, sizeof buf, st == "pytorch" ? "attn_entropy/head_%d" : st == "hf" ? "train/attention_entropy/head_%d"
                                     : st == "lightning" ? "attention/entropy/h%d" : "attn/layer0/entropy_head%d", h);
      const bool down = h < collapsing;
      const bool sharp_head = k == "attn_sharpens" && heads >= 4 && h == 0;
      const double end = down || sharp_head ? r.U(0.01, 0.12) : r.U(0.35, 0.9);
      const double when = down ? at : L * r.U(0.2, 0.7);
      Pts p;
      for (int64_t s : g.steps) {
        const double f = 1 - std::exp(-static_cast<double>(s) / std::max(1.0, when / 3));
        p.Add(s, std::max(0.0, h0 * (1 - (1 - end) * f) * g.Noise(0.03)));
      }
      if (down) {
        for (size_t j = 0; j < p.v.size(); ++j)
          if (p.v[j] <= 0.2 * h0) {
            first = std::min(first, p.step[j]);
            break;
          }
      }
      c.roles.tagged.push_back({buf, p});
    }
    if (collapsing) c.onset = first;
    std::snprintf(buf, sizeof buf, ", %d heads, %d collapse", heads, collapsing);
    c.extra += buf;
  } else if (k == "qat_gap" || k == "qat_constant") {
    // The quantized and the float model's losses at the evaluations. qat_gap: the gap holds at a
    // few percent, then widens from 30-60 % of the run; qat_constant (trap): a gap of 5-40 %
    // of the float loss from early on, held.
    g.Base();
    const double rel = k == "qat_gap" ? r.U(0.01, 0.05) : r.U(0.05, 0.4);
    const double from = L * r.U(0.3, 0.6), grow = r.U(0.5, 2.0);
    const std::string qtag = st == "pytorch" ? "qat/loss" : st == "hf" ? "eval/quantized_loss" : st == "lightning" ? "val_loss_int8" : "loss/quant";
    const std::string ftag = st == "pytorch" ? "fp32/loss" : st == "hf" ? "eval/fp32_loss" : st == "lightning" ? "val_loss_fp32" : "loss/float";
    Pts q, f;
    for (int64_t s : g.evals) {
      const double t = static_cast<double>(s), fl = 1.05 * g.pl(t) + 0.05;
      const double widen = k == "qat_gap" && t > from ? grow * (t - from) / (L - from) : 0;
      const double early = 1 - std::exp(-t / (0.05 * L));  // both start as the untrained model
      f.Add(s, fl * g.Noise(0.01));
      q.Add(s, fl * (1 + early * rel + widen) * g.Noise(0.01));
    }
    c.roles.tagged.push_back({qtag, q});
    c.roles.tagged.push_back({ftag, f});
    if (k == "qat_gap") c.onset = g.AtOrAfter(static_cast<int64_t>(from), g.evals);
    std::snprintf(buf, sizeof buf, ", gap %.2f%s", rel, k == "qat_gap" ? " then widening" : " held");
    c.extra += buf;
  } else if (k == "ternary_collapse" || k == "ternary_ok") {
    // Histograms of two ternary layers' weights {-a, 0, +a} every ~20th of the run.
    g.Base();
    const int sick = k == "ternary_collapse" ? r.I(0, 1) : -1;
    const double at = L * r.U(0.1, 0.5), a = r.U(0.01, 0.5);
    const int64_t every = std::max<int64_t>(c.interval, (g.L / 20 / c.interval) * c.interval);
    for (int i = 0; i < 2; ++i) {
      const double z0 = r.U(0.3, 0.5), z1 = i == sick ? r.U(0.92, 1.0) : r.U(0.3, 0.75);
      for (int64_t s = 0; s < g.L; s += every) {
        const double f = 1 / (1 + std::exp(-(static_cast<double>(s) - at) / (0.03 * L)));
        const double z = clamp01(z0 + (z1 - z0) * (i == sick || k == "ternary_ok" ? f : 0));
        const int n = 512, zeros = static_cast<int>(std::lround(z * n));
        // The collapse's onset: the first histogram with 90 % of the layer at 0.
        if (i == sick && z >= 0.9 && c.onset < 0) c.onset = s;
        std::vector<double> w;
        for (int j = 0; j < n; ++j) w.push_back(j < zeros ? 0.0 : (j % 2 ? a : -a));
        std::snprintf(buf, sizeof buf, st == "pytorch" ? "weights/ternary/layer%d" : st == "hf" ? "ternary_weights/fc%d"
                                       : st == "lightning" ? "model.layer%d.ternary_weight" : "ternary/dense_%d", i + 1);
        c.roles.hists.push_back({buf, s, std::move(w)});
      }
    }
    c.extra += sick >= 0 ? ", a layer collapses to 0" : ", zero share drifts";
  } else {
    return false;
  }
  return true;
}

bool Generate(Case& c, Rng& r) {
  Gen g(c, r);
  const std::string& k = c.kind;
  const int64_t L = c.length;
  char buf[256];
  if (k == "nf_nan" || k == "nf_inf") {
    const int64_t at = g.StepAt(r.U(0.4, 0.8));
    const double bad = k == "nf_nan" ? kNaN : kInf;
    g.Train([&](double t) { return t >= at ? bad : g.pl(t); }, c.noise);
    g.Val([&](double t) { return t >= at ? bad : 1.05 * g.pl(t); }, c.noise * 0.2);
    g.DefaultLr();
    const double g0 = r.U(0.3, 0.7);
    g.Grad([&](double t) { return t >= at ? (k == "nf_nan" ? kNaN : g0 * 300) : g0; }, 0.15);
    c.onset = at;
  } else if (k == "nf_masked") {
    const int64_t at = g.StepAt(r.U(0.4, 0.8));
    g.Train(g.pl, c.noise);  // the Trainer's window average stays finite
    g.Val([&](double t) { return 1.05 * g.pl(t); }, c.noise * 0.2);
    g.DefaultLr();
    g.Grad([&](double t) { return t >= at ? kNaN : 0.5; }, 0.15);
    g.Epoch(L / 10);
    c.onset = at;
  } else if (k == "div_exp" || k == "div_lin") {
    const int64_t at = g.StepAt(r.U(0.4, 0.7));
    const double f = k == "div_exp" ? r.U(5, 30) : r.U(2.5, 4);
    const double span = static_cast<double>(L - at);
    auto mult = [&](double t) {
      if (t <= at) return 1.0;
      return k == "div_exp" ? std::exp(std::log(f) * (t - at) / span) : 1 + (f - 1) * (t - at) / span;
    };
    g.Train([&](double t) { return g.pl(t) * mult(t); }, c.noise);
    g.Val([&](double t) { return 1.05 * g.pl(t) * mult(t); }, c.noise * 0.2);
    g.DefaultLr();
    g.Grad([&](double t) { return 0.5 * std::sqrt(mult(t)); }, 0.15);
    c.onset = at;
    std::snprintf(buf, sizeof buf, "rise x%.1f at the end", f);
    c.extra = buf;
  } else if (k == "spikes_recurring") {
    const int64_t n = static_cast<int64_t>(g.steps.size());
    const int64_t first = std::max<int64_t>(110, static_cast<int64_t>(n * r.U(0.35, 0.5)));
    const int count = r.I(5, 8);
    const int64_t period = std::max<int64_t>(8, (n - first - 5) / count);
    const double mag = r.U(3, 10);
    const int width = c.interval == 1 ? r.I(1, 3) : 1;
    std::set<int64_t> spike;
    for (int64_t i = first; i < n - 2; i += period)
      for (int w = 0; w < width; ++w) spike.insert(g.steps[static_cast<size_t>(i + w)]);
    g.Train([&](double t) { return g.pl(t) * (spike.count(static_cast<int64_t>(t)) ? mag : 1.0); }, c.noise);
    g.Val([&](double t) { return 1.05 * g.pl(t); }, c.noise * 0.2);
    g.DefaultLr();
    g.DefaultGrad();
    c.onset = g.steps[static_cast<size_t>(first)];
    std::snprintf(buf, sizeof buf, "%zu spike steps, x%.1f, every %lld points", spike.size(), mag,
                  static_cast<long long>(period));
    c.extra = buf;
  } else if (k == "spikes_levelshift") {
    const int64_t n = static_cast<int64_t>(g.steps.size());
    const int64_t i0 = std::max<int64_t>(110, static_cast<int64_t>(n * r.U(0.4, 0.6)));
    const int64_t at = g.steps[static_cast<size_t>(i0)];
    const double mag = r.U(5, 8), level = r.U(1.6, 1.9);
    const int64_t width = (c.interval == 1 ? r.I(1, 3) : 1) * c.interval;
    g.Train([&](double t) {
      if (t >= at && t < at + width) return g.pl(t) * mag;
      return g.pl(t) * (t >= at ? level : 1.0);
    }, c.noise);
    g.Val([&](double t) { return 1.05 * g.pl(t) * (t >= at ? level : 1.0); }, c.noise * 0.2);
    g.DefaultLr();
    g.DefaultGrad();
    c.onset = at;
    std::snprintf(buf, sizeof buf, "spike x%.1f, level after x%.2f", mag, level);
    c.extra = buf;
  } else if (k == "plateau_drop") {
    const int64_t at = g.StepAt(r.U(0.25, 0.45));
    const double lo = r.U(0.3, 1.0), ratio = r.U(2, 5);
    auto clean = [&](double t) { return t < at ? lo * std::pow(ratio, 1 - t / at) : lo; };
    g.Train(clean, c.noise);
    g.Val([&](double t) { return 1.05 * clean(t); }, c.noise * 0.2);
    const double lr = g.peak;
    g.Lr([&](double) { return lr; });
    g.DefaultGrad();
    c.onset = at;
    std::snprintf(buf, sizeof buf, "drop x%.1f then flat, constant LR", ratio);
    c.extra = buf;
  } else if (k == "plateau_stuck") {
    const double lvl = std::log(r.Pick(std::vector<double>{10, 100, 1000}));
    g.Train([&](double) { return lvl; }, c.noise);
    g.Val([&](double) { return lvl * 1.01; }, c.noise * 0.2);
    const double lr = g.peak;
    g.Lr([&](double) { return lr; });
    g.DefaultGrad();
    c.onset = 0;
    std::snprintf(buf, sizeof buf, "flat at %.3g from the start, constant LR", lvl);
    c.extra = buf;
  } else if (k == "loss_constant") {
    const int64_t at = g.StepAt(r.U(0.3, 0.7));
    // Two thirds: the last value repeated (a stale logged value); a third: a jump to log(classes)
    // (a detached loss at chance level).
    const bool jump = r.U(0, 1) < 1.0 / 3;
    float value = static_cast<float>(r.Pick(std::vector<double>{2.302585, 0.693147, 6.9077}));
    for (int64_t s : g.steps) {
      if (s < at) c.roles.train.Add(s, g.pl(static_cast<double>(s)) * g.Noise(c.noise));
      else c.roles.train.Add(s, jump || c.roles.train.v.empty() ? value : (value = static_cast<float>(c.roles.train.v.back())));
    }
    c.extra = jump ? "jumps to a constant" : "freezes at its last value";
    g.DefaultLr();
    g.DefaultGrad();
    c.onset = at;
  } else if (k == "overfit") {
    const int64_t at = g.AtOrAfter(g.StepAt(r.U(0.3, 0.6)), g.evals);
    const double rise = r.U(0.1, 0.4);
    g.Train(g.pl, c.noise);
    auto val = [&](double t) {
      const double base = 1.05 * g.pl(std::min<double>(t, at)) + 0.05;
      return t <= at ? 1.05 * g.pl(t) + 0.05 : base * (1 + rise * (t - at) / static_cast<double>(L - at));
    };
    g.Val(val, c.noise * 0.2);
    g.DefaultLr();
    g.DefaultGrad();
    g.Epoch(std::max<int64_t>(1, L / 10));
    // The true onset: the best (lowest) clean validation point.
    double best = 1e300;
    for (int64_t s : g.evals)
      if (val(static_cast<double>(s)) < best) best = val(static_cast<double>(s)), c.onset = s;
    std::snprintf(buf, sizeof buf, "val +%.0f%% by the end, %zu evals", rise * 100, g.evals.size());
    c.extra = buf;
  } else if (k == "val_constant_all" || k == "val_constant_late") {
    const bool late = k == "val_constant_late";
    const int64_t at = late ? g.AtOrAfter(g.StepAt(r.U(0.3, 0.6)), g.evals) : g.evals.front();
    g.Train(g.pl, c.noise);
    const float frozen = static_cast<float>(late ? 1.05 * g.pl(static_cast<double>(at)) + 0.05 : 2.302585);
    for (int64_t s : g.evals)
      c.roles.val.Add(s, s >= at ? frozen : (1.05 * g.pl(static_cast<double>(s)) + 0.05) * g.Noise(c.noise * 0.2));
    g.DefaultLr();
    g.DefaultGrad();
    c.onset = at;
  } else if (k == "val_stall") {
    const int64_t at = g.AtOrAfter(g.StepAt(r.U(0.3, 0.5)), g.evals);
    // Validation noise by the case's noise level: 0.05 %, 0.2 %, 0.5 % of the level.
    const double sd = c.noise < 0.03 ? 0.0005 : c.noise < 0.1 ? 0.002 : 0.005;
    g.Train(g.pl, c.noise);
    g.Val([&](double t) { return 1.05 * g.pl(std::min<double>(t, at)) + 0.05; }, sd);
    g.DefaultLr();
    g.DefaultGrad();
    // The run's own time after the stall must exceed patience_seconds (600 s) comfortably.
    c.dt = std::max(c.dt, 900.0 / static_cast<double>(L - at));
    c.onset = at;
    std::snprintf(buf, sizeof buf, "val flat (sd %.2f%%) from step %lld", sd * 100, static_cast<long long>(at));
    c.extra = buf;
  } else if (k == "lr_misaligned") {
    const double end = L * r.U(0.2, 0.4);
    const double fl = g.peak * r.Pick(std::vector<double>{0.0, 0.01, 0.1});
    g.Lr([&](double t) { return WarmupCosine(t, g.peak, fl, g.warm, end); });
    g.Train([&](double t) { return g.pl(t < end ? t : end + 0.1 * (t - end)); }, c.noise);
    g.Val([&](double t) { return 1.05 * g.pl(t < end ? t : end + 0.1 * (t - end)) + 0.05; }, c.noise * 0.2);
    g.DefaultGrad();
    c.onset = g.AtOrAfter(static_cast<int64_t>(std::ceil(end)), g.steps);
    std::snprintf(buf, sizeof buf, "cosine ends at %.0f%% of the run, floor %.2g x peak", 100 * end / L, fl / g.peak);
    c.extra = buf;
  } else if (k == "epoch_jumps") {
    const int64_t n = static_cast<int64_t>(g.steps.size());
    const int64_t epochs = std::min<int64_t>(r.I(8, 15), n / 30);
    const int64_t per = L / epochs;
    const double a = r.U(0.15, 0.4);
    auto saw = [&](double t) {
      const double ph = std::fmod(t, static_cast<double>(per)) / static_cast<double>(per);
      return g.pl(t) * (1 + a * (1 - ph));
    };
    g.Train(saw, c.noise);
    g.Val([&](double t) { return 1.05 * g.pl(t) + 0.05; }, c.noise * 0.2);
    g.DefaultLr();
    g.DefaultGrad();
    c.roles.epoch = {};
    const std::string st = c.style;  // the rule needs the epoch tag: written in every style here
    for (int64_t s : g.steps) {
      const double e = static_cast<double>(s) / static_cast<double>(per);
      c.roles.epoch.Add(s, st == "hf" ? std::round(e * 100) / 100 : std::floor(e));
    }
    c.onset = per;
    std::snprintf(buf, sizeof buf, "%lld epochs of %lld steps, sawtooth +%.0f%%", static_cast<long long>(epochs),
                  static_cast<long long>(per), a * 100);
    c.extra = buf;
  } else if (k == "clip_sat") {
    const int64_t at = g.StepAt(r.U(0.0, 0.4));
    c.clip = r.Pick(std::vector<double>{0.5, 1.0, 5.0});
    const double over = r.U(2, 5), under = r.U(0.3, 0.6);
    g.Train(g.pl, c.noise);
    g.Val([&](double t) { return 1.05 * g.pl(t) + 0.05; }, c.noise * 0.2);
    g.DefaultLr();
    g.Grad([&](double t) { return c.clip * (t >= at ? over : under); }, 0.15);
    c.onset = at;
    std::snprintf(buf, sizeof buf, "clip %.2g, grad %.1fx above it from step %lld", c.clip, over,
                  static_cast<long long>(at));
    c.extra = buf;
  } else if (k == "memory_growth") {
    const int64_t at = g.StepAt(r.U(0.0, 0.4));
    const double grow = r.U(0.3, 2.0), m0 = r.U(2e9, 3e10);
    g.Base();
    c.roles.mem = {};
    for (int64_t s : g.steps)
      c.roles.mem.Add(s, m0 * (1 + grow * std::max<double>(0, static_cast<double>(s - at)) / static_cast<double>(L - at)) *
                             (1 + 0.005 * r.N(1)));
    c.onset = at;
    std::snprintf(buf, sizeof buf, "memory +%.0f%% from step %lld", grow * 100, static_cast<long long>(at));
    c.extra = buf;  // (replaces Base's note)
  } else if (k == "step_time_creep") {
    const int64_t at = g.StepAt(r.U(0.2, 0.5));
    const double grow = r.U(0.6, 2.0), t0 = r.U(0.05, 1.0);
    g.Base();
    c.roles.stime = {};
    for (int64_t s : g.steps)
      c.roles.stime.Add(s, t0 * (1 + grow * std::max<double>(0, static_cast<double>(s - at)) / static_cast<double>(L - at)) *
                               g.Noise(0.05));
    c.onset = at;
    std::snprintf(buf, sizeof buf, "step time +%.0f%% from step %lld", grow * 100, static_cast<long long>(at));
    c.extra = buf;
  } else if (k == "stale") {
    // Died mid-run: its warmup-cosine schedule was sized for a longer run, so the LR was still
    // decaying, well above its floor, when the writes stopped (silence alone is not evidence).
    g.Base();
    const double planned = static_cast<double>(L) / r.U(0.4, 0.8);
    c.roles.lr = {};
    g.Lr([&](double t) { return WarmupCosine(t, g.peak, g.floor, g.warm, planned); });
    c.silence = r.U(3600, 86400);
    c.onset = c.roles.train.step.back();
    std::snprintf(buf, sizeof buf, "silent %.1f h, died at %.0f%% of its schedule", c.silence / 3600,
                  100 * static_cast<double>(L) / planned);
    c.extra = buf;
  } else if (k == "stale_finished") {
    // Finished (its schedule ran to its end) and silent since, with no end logged, as a PyTorch
    // SummaryWriter leaves it: nothing says it died.
    g.Base();
    c.silence = r.U(3600, 86400);
  } else if (k == "grad_explosion") {
    const int64_t at = g.StepAt(r.U(0.3, 0.6));
    const double f = std::pow(10.0, r.U(1, 3)), g0 = r.U(0.3, 1.0);
    g.Train(g.pl, c.noise);
    g.Val([&](double t) { return 1.05 * g.pl(t) + 0.05; }, c.noise * 0.2);
    g.DefaultLr();
    g.Grad([&](double t) {
      return g0 * (t <= at ? 1.0 : std::exp(std::log(f) * (t - at) / static_cast<double>(L - at)));
    }, 0.15);
    c.onset = at;
    std::snprintf(buf, sizeof buf, "grad norm x%.0f by the end", f);
    c.extra = buf;
  }
  // ---- healthy runs and traps ----
  else if (k == "healthy" || k == "very_noisy" || k == "short") {
    g.Base();
    if (k == "healthy" && c.style != "keras" && r.U(0, 1) < 0.5) {
      // A clip threshold that catches only outliers.
      c.clip = 1.0;
      c.extra += ", clip 1 above every grad norm";
      c.roles.grad = {};
      g.Grad([&](double) { return 0.4; }, 0.25);
    }
  } else if (k == "s_curve") {
    const double mid = L * r.U(0.6, 0.8), w = L * 0.03, hi = std::log(10.0), lo = r.U(0.3, 0.8);
    auto clean = [&](double t) { return lo + (hi - lo) * Sigmoid(-(t - mid) / w) - 0.05 * lo * std::max(0.0, (t - mid) / L); };
    g.Train(clean, c.noise);
    g.Val([&](double t) { return 1.05 * clean(t); }, c.noise * 0.2);
    g.DefaultLr();
    g.DefaultGrad();
    std::snprintf(buf, sizeof buf, "flat then drop at %.0f%%", 100 * mid / L);
    c.extra = buf;
  } else if (k == "isolated_spikes") {
    std::set<int64_t> at;
    const int count = r.I(1, 3);
    for (int i = 0; i < count; ++i) at.insert(g.StepAt(r.U(0.1, 0.9)));
    const double mag = r.U(2, 3);
    g.Train([&](double t) { return g.pl(t) * (at.count(static_cast<int64_t>(t)) ? mag : 1.0); }, c.noise);
    g.Val([&](double t) { return 1.05 * g.pl(t) + 0.05; }, c.noise * 0.2);
    g.DefaultLr();
    g.DefaultGrad();
    std::snprintf(buf, sizeof buf, "%d spikes x%.1f", count, mag);
    c.extra = buf;
  } else if (k == "lr_floor_ok") {
    const double end = L * r.U(0.9, 0.97);
    g.Lr([&](double t) { return WarmupCosine(t, g.peak, g.floor, g.warm, end); });
    g.Train([&](double t) { return g.pl(t < end ? t : end + 0.1 * (t - end)); }, c.noise);
    g.Val([&](double t) { return 1.05 * g.pl(t < end ? t : end + 0.1 * (t - end)) + 0.05; }, c.noise * 0.2);
    g.DefaultGrad();
    std::snprintf(buf, sizeof buf, "cosine ends at %.0f%%", 100 * end / L);
    c.extra = buf;
  } else if (k == "oscillation") {
    // After an initial drop, the loss swings 2.5-4x around a flat level with a period of
    // 20-60 logged points (an LR too high for the valley), plus noise.
    const int64_t at = g.StepAt(r.U(0.2, 0.4));
    const double level = g.pl(static_cast<double>(at)), amp = std::log(r.U(2.5, 4.0)) / 2;
    const double period = r.U(20, 60) * c.interval;
    g.Train([&](double t) {
      return t < at ? g.pl(t) : level * std::exp(amp * std::sin(2 * M_PI * (t - at) / period));
    }, c.noise);
    g.Val([&](double t) { return 1.05 * g.pl(std::min<double>(t, at)) + 0.05; }, c.noise * 0.2);
    g.DefaultLr();
    g.DefaultGrad();
    c.onset = at;
    std::snprintf(buf, sizeof buf, "swings x%.1f, period %.0f steps, from step %lld", std::exp(2 * amp), period,
                  static_cast<long long>(at));
    c.extra = buf;
  } else if (k == "grok_found") {
    // The grokking trap's curves, labeled: the rule says so, as information.
    const double mid = L * r.U(0.45, 0.65), w = L * 0.03;
    PowerLaw fast{0.01, 2.0, 1.0, L * 0.01};
    g.Train(fast, c.noise);
    g.Val([&](double t) { return 0.3 + 2.0 * Sigmoid(-(t - mid) / w); }, c.noise * 0.2);
    g.DefaultLr();
    g.DefaultGrad();
    c.onset = g.AtOrAfter(static_cast<int64_t>(mid - 2 * w), g.evals);
    std::snprintf(buf, sizeof buf, "val flat then drop at %.0f%%", 100 * mid / L);
    c.extra = buf;
  } else if (k == "flat_layer" || k == "layers_full_batch") {
    // flat_layer: from a step on, layer 2 gets only an L2 term's gradient (its ReLUs died):
    // 2 lambda ||W||, shrinking by the same factor each step, while the others move with their
    // batches (noise 0.2). Trap: full-batch training, every layer smooth (0.3 % per point).
    g.Base();
    const int64_t at = k == "flat_layer" ? g.StepAt(r.U(0.2, 0.6)) : 0;
    const double shrink = r.U(1e-5, 1e-4), smooth = 0.003;
    for (int i = 0; i < 6; ++i) {
      Pts p;
      const double scale = r.U(0.1, 1.0);
      for (int64_t s : g.steps) {
        const double t = static_cast<double>(s);
        if (k == "flat_layer" && i == 2 && s >= at) p.Add(s, 0.01 * scale * std::exp(-shrink * (t - at)));
        else if (k == "flat_layer") p.Add(s, scale * g.Noise(0.2));
        else p.Add(s, scale * std::exp(-t / static_cast<double>(L)) * (1 + smooth * std::sin(t / 7.0 + i)));
      }
      c.roles.layers.emplace_back("layers." + std::to_string(i) + ".weight", std::move(p));
    }
    c.onset = k == "flat_layer" ? at : -1;
    c.extra = k == "flat_layer" ? "layer 2 data-independent (L2 only)" : "full batch: every layer smooth";
  } else if (k == "grad_vanishing" || k == "dead_layer" || k == "layers_ok") {
    // Per-layer gradient norms, 6 layers. Vanishing: the first layers 1e-5 or less of the last;
    // dead: one layer exactly 0 from a step on; ok: layers within 30x of each other.
    g.Base();
    const int64_t at = k == "dead_layer" ? g.StepAt(r.U(0.2, 0.6)) : 0;
    for (int i = 0; i < 6; ++i) {
      Pts p;
      const double top = r.U(0.1, 1.0);
      const double scale = k == "grad_vanishing" ? top * std::pow(10.0, -6.0 * (5 - i) / 5.0) : top * r.U(0.03, 1.0);
      for (int64_t s : g.steps)
        p.Add(s, (k == "dead_layer" && i == 2 && s >= at) ? 0.0 : scale * g.Noise(0.2));
      c.roles.layers.emplace_back("layers." + std::to_string(i) + ".weight", std::move(p));
    }
    c.onset = k == "layers_ok" ? -1 : at;
    c.extra = k == "grad_vanishing" ? "first layers 1e-6 of the last" : k == "dead_layer" ? "layer 2 exactly 0" : "layers within 30x";
  } else if (k == "weight_runaway" || k == "update_off" || k == "weights_ok") {
    g.Base();
    const int64_t at = g.StepAt(r.U(0.1, 0.4));
    const double w0 = r.U(10, 100), grow = r.U(4, 20);
    for (int64_t s : g.steps) {
      const double t = static_cast<double>(s);
      const double w = k == "weight_runaway" && s >= at
                           ? w0 * std::exp(std::log(grow) * (t - at) / static_cast<double>(L - at))
                           : w0 * (1 + 0.1 * t / static_cast<double>(L));
      c.roles.wnorm.Add(s, w * g.Noise(0.01));
      c.roles.uratio.Add(s, (k == "update_off" ? r.U(0.05, 0.3) : 1e-3) * g.Noise(0.3));
    }
    c.onset = k == "weight_runaway" ? at : k == "update_off" ? 0 : -1;
    if (k == "weight_runaway") {
      std::snprintf(buf, sizeof buf, "weight norm x%.0f from step %lld", grow, static_cast<long long>(at));
      c.extra = buf;
    } else {
      c.extra = k == "update_off" ? "update ratio 0.05-0.3" : "weights and updates healthy";
    }
  } else if (k == "grokking") {
    const double mid = L * r.U(0.45, 0.65), w = L * 0.03;
    PowerLaw fast{0.01, 2.0, 1.0, L * 0.01};
    g.Train(fast, c.noise);
    g.Val([&](double t) { return 0.3 + 2.0 * Sigmoid(-(t - mid) / w); }, c.noise * 0.2);
    g.DefaultLr();
    g.DefaultGrad();
    std::snprintf(buf, sizeof buf, "val flat then drop at %.0f%%", 100 * mid / L);
    c.extra = buf;
  } else if (k == "step_lr") {
    auto drops = [&](double t) {
      return 1 - 0.2 * Sigmoid((t - 0.5 * L) / (0.005 * L)) - 0.15 * Sigmoid((t - 0.75 * L) / (0.005 * L));
    };
    g.Train([&](double t) { return g.pl(t) * drops(t); }, c.noise);
    g.Val([&](double t) { return 1.05 * g.pl(t) * drops(t) + 0.05; }, c.noise * 0.2);
    g.Lr([&](double t) { return g.peak * (t < 0.5 * L ? 1 : t < 0.75 * L ? 0.1 : 0.01); });
    g.DefaultGrad();
  } else if (k == "amp_inf") {
    g.Base();
    const int count = r.I(1, 2);
    for (int i = 0; i < count && c.roles.grad.v.size() > 3; ++i)
      c.roles.grad.v[static_cast<size_t>(r.I(1, static_cast<int>(c.roles.grad.v.size()) - 2))] = kInf;
    std::snprintf(buf, sizeof buf, ", %d Inf grad_norm", count);
    c.extra += buf;
  } else if (k == "stale_clean_stop") {
    g.Base();
    c.silence = r.U(3600, 86400);
    c.clean_stop = true;
  } else if (k == "stale_ancient") {
    g.Base();
    c.silence = r.U(4, 30) * 86400;
  } else if (k == "stale_slow_rhythm") {
    g.Base();
    c.dt = 60;  // one step a minute: a slow logger
    c.silence = c.interval * c.dt * r.U(1.5, 4);
  } else if (k == "val_gap" || k == "val_catches_up" || k == "val_below_train") {
    // val_gap: validation several times the training loss from its first evaluation on, as
    // an evaluation-mode or preprocessing bug leaves it: tracking training at a constant
    // factor (even cases) or stuck near the untrained loss (odd). Traps: a gap at the first
    // evaluation that closes by mid-run (the model caught up on held-out data), and
    // validation below training (dropout on in training only).
    g.Train(g.pl, c.noise);
    const double factor = r.U(2.5, 6.0);
    const bool stuck = (c.noise > 0.03) == (c.length % 2 == 0);
    const double tau = 0.1 * static_cast<double>(L);
    if (k == "val_gap" && stuck)
      g.Val([&](double) { return factor * 0.5 * g.pl(0); }, 0.02);
    else if (k == "val_gap")
      g.Val([&](double t) { return factor * (1.05 * g.pl(t) + 0.05); }, c.noise * 0.2);
    else if (k == "val_catches_up")
      g.Val([&](double t) { return (1.05 * g.pl(t) + 0.05) * (1 + (factor - 1) * std::exp(-t / tau)); }, c.noise * 0.2);
    else
      g.Val([&](double t) { return 0.7 * g.pl(t); }, c.noise * 0.2);
    g.DefaultLr();
    g.DefaultGrad();
    g.Epoch(std::max<int64_t>(1, L / 10));
    if (k == "val_gap") c.onset = g.evals.front();
    std::snprintf(buf, sizeof buf, "val %.1fx %s", k == "val_below_train" ? 0.7 : factor,
                  k == "val_gap" ? (stuck ? "the untrained level / 2" : "training") : "training, closing");
    c.extra = buf;
  } else if (k == "loss_acc" || k == "acc_tracks" || k == "acc_saturated") {
    // loss_acc: the loss falls while the accuracy holds at its start (a temperature that
    // learns, the class prior). Traps: an accuracy that rises as the loss falls, fast and
    // then into a plateau (a healthy tail: loss still falling, accuracy barely), and one
    // saturated near 1 from early on.
    g.Base();
    const double a0 = r.U(0.3, 0.8), top = r.U(0.85, 0.97), sd = r.U(0.005, 0.03);
    const double lo = g.pl(static_cast<double>(L)), hi = g.pl(0);
    for (int64_t s : g.steps) {
      const double learned = (hi - g.pl(static_cast<double>(s))) / (hi - lo);  // 0 -> 1
      double a = k == "loss_acc" ? a0 : k == "acc_tracks" ? a0 + (top - a0) * std::min(1.0, 1.3 * learned)
                                                           : 0.995 - 0.2 * std::exp(-static_cast<double>(s) / (0.01 * L));
      c.roles.acc.Add(s, std::clamp(a + r.N(sd), 0.0, 1.0));
    }
    if (k == "loss_acc") c.onset = g.steps.front();
    std::snprintf(buf, sizeof buf, ", acc %s", k == "loss_acc" ? "flat" : k == "acc_tracks" ? "tracks" : "saturated");
    c.extra += buf;
  } else if (k == "init_high" || k == "init_scaled" || k == "init_ok" || k == "init_pretrained") {
    // A classifier's K in the hyperparameters, with the healthy curve starting near ln K.
    // init_high: logits far too large at init (unnormalized inputs, an output layer's init),
    // 3-30x ln K at the first point, undone within the first 0.5-3 % of the run; init_scaled:
    // the whole loss multiplied (summed over a batch or the tokens), 4-64x. Traps: a start
    // 0.95-1.4x ln K (a default init), and a pretrained model whose K is a vocabulary of 30522.
    const double f = k == "init_ok" ? r.U(0.95, 1.4) : 1.0;
    c.classes = k == "init_pretrained" ? 30522 : std::max(2, static_cast<int>(std::lround(std::exp(g.pl(0) / f))));
    const double lnk = std::log(static_cast<double>(c.classes));
    const double factor = r.U(3, 30), times = r.U(4, 64), tau = L * r.U(0.005, 0.03);
    if (k == "init_high")
      g.Train([&](double t) { return g.pl(t) + (factor - 1) * lnk * std::exp(-t / tau); }, c.noise);
    else if (k == "init_scaled")
      g.Train([&](double t) { return times * g.pl(t); }, c.noise);
    else
      g.Train(g.pl, c.noise);
    g.Val([&](double t) { return 1.05 * g.pl(t) + 0.05; }, c.noise * 0.2);
    g.DefaultLr();
    g.DefaultGrad();
    if (k == "init_high" || k == "init_scaled") c.onset = g.steps.front();
    // Information by design once the loss is below 2 ln K: the run undid its init.
    c.info_enough = k == "init_high" || (k == "init_scaled" && times * g.pl(static_cast<double>(L)) < 2.2 * lnk);
    std::snprintf(buf, sizeof buf, "K %d, first %.3gx ln K", c.classes,
                  k == "init_high" ? (g.pl(0) + (factor - 1) * lnk) / lnk : k == "init_scaled" ? times * g.pl(0) / lnk : g.pl(0) / lnk);
    c.extra = buf;
  } else if (k == "overflow_steady" || k == "overflow_calibration") {
    // Steps skipped for float16 overflow. overflow_steady: from a step on, a share p (3-40 %) of
    // the steps overflow whatever the scale (a NaN made in float16 by the forward pass);
    // overflow_calibration (trap): skips only while the scale calibrates (its first 2 %), then
    // one every 2000-5000 steps. Logged as a running count (pytorch, hf, tf2 styles) or as a
    // count per logging interval (lightning: Megatron-LM's form).
    g.Base();
    const int64_t at = k == "overflow_steady" ? g.StepAt(r.U(0.2, 0.6)) : L;
    const double p = r.U(0.03, 0.4), rare = 1.0 / r.U(2000, 5000);
    const bool per_interval = c.style == "lightning";
    int64_t total = 0, since_log = 0;
    for (int64_t s = 0; s < L; ++s) {
      const bool skip = s < L / 50 ? r.U(0, 1) < 0.3 : s >= at ? r.U(0, 1) < p : r.U(0, 1) < rare;
      if (skip) {
        ++total, ++since_log;
        if (s >= at && c.onset < 0) c.onset = s;
      }
      if (s % c.interval == 0) {
        c.roles.skipped.Add(s, static_cast<double>(per_interval ? since_log : total));
        since_log = 0;
      }
    }
    std::snprintf(buf, sizeof buf, ", skips %s from %lld (%lld in all)", k == "overflow_steady" ? "steady" : "calibration only",
                  static_cast<long long>(at), static_cast<long long>(total));
    c.extra += buf;
  } else if (k == "scale_halving" || k == "scale_below_one" || k == "scale_ok") {
    // A dynamic loss scale as GradScaler keeps it: from 2^16 it halves at each overflow step
    // and doubles after `growth` clean steps in a row. Every run calibrates first (a few
    // halvings within its first 2 %). scale_halving: overflow on a share p of the steps that
    // leaves no clean streak long enough to grow back (a NaN gradient every few batches);
    // scale_below_one: gradients beyond float16's range even unscaled, so the level the
    // scale settles at is 2^-2..2^-10; scale_ok (trap): rare overflows, the scale holds its
    // level, halving now and then and growing back.
    g.Base();
    const int64_t growth = r.Pick(std::vector<int64_t>{200, 500, 2000});
    const double p = k == "scale_halving" ? r.U(0.05, 0.3) : k == "scale_ok" ? 0.5 / static_cast<double>(growth) : 0.0;
    const int settle = k == "scale_below_one" ? 16 + r.I(2, 10) : r.I(0, 6);  // halvings to the level
    const int64_t calibrate = std::max<int64_t>(L / 50, settle + 1);
    double scale = 65536;
    int64_t clean = 0;
    int halved = 0;
    for (int64_t s = 0; s < L; ++s) {
      bool overflow = s < calibrate ? halved < settle : r.U(0, 1) < p;
      if (k == "scale_below_one" && s >= calibrate) overflow = scale * 2 > std::ldexp(1.0, 16 - settle) && clean + 1 >= growth;
      if (overflow) scale *= 0.5, clean = 0, ++halved;
      else if (++clean == growth) scale *= 2, clean = 0;
      if (s % c.interval == 0) c.roles.scale.Add(s, scale);
    }
    if (k != "scale_ok") {  // the collapse begins where the scale last stood at its peak
      const auto& v = c.roles.scale.v;
      const double peak = *std::max_element(v.begin(), v.end());
      for (size_t i = 0; i < v.size(); ++i)
        if (v[i] >= peak) c.onset = c.roles.scale.step[i];
    }
    std::snprintf(buf, sizeof buf, ", scale: growth %lld, overflow p %.3f, settle %d", static_cast<long long>(growth), p, settle);
    c.extra += buf;
  } else if (GenerateActivations(g, k)) {
  } else {
    Die("unknown kind " + k);
  }
  return true;
}

// ---------------------------------------------------------------------------------------------
// Writing.

struct TagNames {
  std::string train, val, lr, grad, epoch, mem, stime, clip_key;
  std::string wnorm = "weight_norm", uratio = "update_ratio", layer_prefix = "grad_norm/";
  std::string acc = "", scale = "";  // a training accuracy, a loss scale (set per style below)
  std::string skipped = "";          // steps skipped for overflow: a running count, or per interval
};
TagNames NamesFor(const std::string& style) {
  TagNames n;
  if (style == "pytorch") {
    n = {"Loss/train", "Loss/val", "lr", "grad_norm", "epoch", "memory", "step_time", "max_grad_norm"};
    n.acc = "Accuracy/train";
    n.scale = "train/loss_scale";
    n.skipped = "train/skipped_steps";
  } else if (style == "hf") {
    n = {"train/loss", "eval/loss", "train/learning_rate", "train/grad_norm", "train/epoch",
         "gpu/memory_allocated", "train/step_time", "max_grad_norm"};
    n.acc = "train/accuracy";
    n.scale = "loss_scale";
    n.skipped = "num_skipped_steps";
  } else if (style == "lightning") {
    n = {"train_loss", "val_loss", "lr-AdamW", "grad_2.0_norm_total", "epoch", "gpu_memory", "time/step",
         "gradient_clip_val", "weight_norm", "update_ratio", "grad_2.0_norm/"};
    n.acc = "train_acc";
    n.scale = "grad_scale";
    n.skipped = "skipped-iterations";
  } else if (style == "tf2") {
    n = {"loss", "val/loss", "learning_rate", "grad_norm", "epoch", "memory", "step_time", "clip_norm"};
    n.acc = "accuracy";
    n.scale = "amp/loss_scale";
    n.skipped = "amp/overflow_count";
  } else {
    n = {"epoch_loss", "epoch_loss", "epoch_learning_rate", "", "", "", "", ""};
    n.acc = "epoch_accuracy";
  }
  return n;
}

struct Ev {
  int64_t step;
  int order;
  std::string bytes;
};

void WriteFile(const std::string& dir, std::vector<Ev> evs, double t0, const std::string& source) {
  std::stable_sort(evs.begin(), evs.end(), [](const Ev& a, const Ev& b) { return a.step < b.step; });
  testing::EventFileWriter w(dir + "/" + testing::EventFileName(static_cast<int64_t>(t0), "host", 4242, 0));
  w.Add(testing::FileVersionEvent(t0, source));
  for (auto& e : evs) w.Add(e.bytes);
  w.Flush();
}

void WriteCase(const std::string& root, const Case& c) {
  const TagNames n = NamesFor(c.style);
  const double t0 = kNow - c.silence - static_cast<double>(c.length - 1) * c.dt;
  auto wall = [&](int64_t s) { return t0 + static_cast<double>(s) * c.dt; };
  const bool tensor = c.style == "tf2" || c.style == "keras";
  auto emit = [&](std::vector<Ev>& out, const std::string& tag, const Pts& p, int order) {
    if (tag.empty()) return;
    for (size_t i = 0; i < p.step.size(); ++i) {
      const double w = wall(p.step[i]) + order * 1e-3;
      const float v = static_cast<float>(p.v[i]);
      out.push_back({p.step[i], order,
                     tensor ? testing::Tf2ScalarEvent(tag, p.step[i], w, v, i == 0)
                            : testing::SimpleScalarEvent(tag, p.step[i], w, v)});
    }
  };
  const Roles& r = c.roles;
  if (c.style == "keras") {
    std::vector<Ev> tr, va;
    emit(tr, n.train, r.train, 0);
    emit(tr, n.lr, r.lr, 1);
    emit(tr, n.acc, r.acc, 2);
    emit(va, n.val, r.val, 0);
    WriteFile(root + "/" + c.name + "/train", std::move(tr), t0, "");
    if (!r.val.empty()) WriteFile(root + "/" + c.name + "/validation", std::move(va), t0, "");
    return;
  }
  std::vector<Ev> evs;
  emit(evs, n.train, r.train, 0);
  emit(evs, n.val, r.val, 1);
  emit(evs, n.lr, r.lr, 2);
  emit(evs, n.grad, r.grad, 3);
  emit(evs, n.epoch, r.epoch, 4);
  emit(evs, n.mem, r.mem, 5);
  emit(evs, n.stime, r.stime, 6);
  emit(evs, n.wnorm, r.wnorm, 7);
  emit(evs, n.uratio, r.uratio, 8);
  for (const auto& [layer, pts] : r.layers) emit(evs, n.layer_prefix + layer, pts, 9);
  emit(evs, n.acc, r.acc, 10);
  emit(evs, n.scale, r.scale, 11);
  emit(evs, n.skipped, r.skipped, 12);
  for (const auto& [tag, pts] : r.tagged) emit(evs, tag, pts, 14);
  for (const auto& [tag, step, samples] : r.hists) {
    // torch's add_histogram (TensorFlow's default limits) or a TF2 histogram tensor of 30 bins.
    const double w = wall(step) + 13e-3;
    if (tensor) {
      const auto [lo, hi] = std::minmax_element(samples.begin(), samples.end());
      const double width = std::max(1e-9, (*hi - *lo) / 30);
      std::vector<std::array<double, 3>> b(30);
      for (int i = 0; i < 30; ++i) b[i] = {*lo + i * width, *lo + (i + 1) * width, 0};
      for (double x : samples) b[std::min<size_t>(29, static_cast<size_t>((x - *lo) / width))][2] += 1;
      evs.push_back({step, 13, testing::Tf2HistogramEvent(tag, step, w, b, step == 0)});
    } else {
      std::vector<double> limits;
      for (double v = 1e-12; v < 1e20; v *= 1.1) limits.push_back(v);
      std::vector<double> all(limits.rbegin(), limits.rend());
      for (double& v : all) v = -v;
      all.push_back(0);
      all.insert(all.end(), limits.begin(), limits.end());
      evs.push_back({step, 13, testing::HistogramEvent(tag, step, w, samples, all)});
    }
  }
  const int64_t last = r.train.step.empty() ? 0 : r.train.step.back();
  if (c.clean_stop) evs.push_back({last, 99, testing::SessionLogEvent(last, wall(last) + 1, 2)});
  if (c.clip > 0 || c.classes > 0) {
    std::vector<std::pair<std::string, testing::HParamValue>> hp = {{"learning_rate", 1e-3}, {"seed", 42.0}};
    if (c.clip > 0) hp.emplace_back(n.clip_key, c.clip);
    if (c.classes > 0)
      hp.emplace_back(c.style == "hf" ? "num_labels" : c.style == "lightning" ? "n_classes" : "num_classes",
                      static_cast<double>(c.classes));
    if (c.style == "lightning" || c.style == "tf2") {
      evs.push_back({-1, -1, testing::HParamsStartEvent(t0, hp, c.style == "tf2")});
    } else {  // SummaryWriter.add_hparams: a child run named by the time
      testing::EventFileWriter w(root + "/" + c.name + "/1700000000.5/" +
                                 testing::EventFileName(static_cast<int64_t>(t0), "host", 4242, 1));
      w.Add(testing::FileVersionEvent(t0, testing::kTorchSourceWriter));
      w.Add(testing::HParamsExperimentEvent(t0));
      w.Add(testing::HParamsStartEvent(t0, hp, false));
      w.Add(testing::HParamsEndEvent(t0));
      w.Flush();
    }
  }
  WriteFile(root + "/" + c.name, std::move(evs), t0, c.style == "pytorch" || c.style == "hf" ? testing::kTorchSourceWriter : "");
}

// ---------------------------------------------------------------------------------------------
// The case list.

struct KindSpec {
  std::string kind, label;  // label: expected rule, "" for healthy/trap
  int count;
  std::vector<std::string> styles;
};

const std::vector<std::string> kAll = {"pytorch", "hf", "lightning", "tf2"};
const std::vector<std::string> kAllK = {"pytorch", "hf", "lightning", "tf2", "keras"};

std::vector<KindSpec> Kinds() {
  return {
      {"nf_nan", "non_finite_loss", 10, kAll},
      {"nf_inf", "non_finite_loss", 8, kAll},
      {"nf_masked", "non_finite_loss", 8, {"hf"}},
      {"div_exp", "loss_divergence", 14, kAll},
      {"div_lin", "loss_divergence", 12, kAll},
      {"spikes_recurring", "loss_spikes", 14, kAll},
      {"spikes_levelshift", "loss_spikes", 12, kAll},
      {"plateau_drop", "loss_plateau", 14, kAll},
      {"plateau_stuck", "loss_plateau", 12, kAll},
      {"loss_constant", "loss_constant", 20, kAll},
      {"overfit", "overfitting", 24, kAllK},
      {"val_constant_all", "val_constant", 10, kAllK},
      {"val_constant_late", "val_constant", 10, kAllK},
      {"val_stall", "val_stall", 20, kAllK},
      {"lr_misaligned", "lr_schedule_misaligned", 20, kAll},
      {"epoch_jumps", "epoch_boundary_jumps", 20, {"hf", "lightning", "tf2", "pytorch"}},
      {"clip_sat", "grad_clip_saturation", 20, kAll},
      {"memory_growth", "memory_growth", 20, kAll},
      {"step_time_creep", "step_time_creep", 20, kAll},
      {"stale", "stale_run", 16, kAll},
      {"grad_explosion", "grad_explosion", 24, kAll},
      {"oscillation", "loss_oscillation", 16, kAll},
      {"grok_found", "grokking", 12, kAll},
      {"grad_vanishing", "grad_vanishing", 12, {"pytorch", "lightning", "tf2"}},
      {"dead_layer", "layer_grad_imbalance", 12, {"pytorch", "lightning", "tf2"}},
      {"weight_runaway", "weight_norm_runaway", 12, {"pytorch", "lightning", "tf2"}},
      {"update_off", "update_ratio_off", 12, {"pytorch", "lightning", "tf2"}},
      {"val_gap", "val_worse_from_start", 16, kAllK},
      {"loss_acc", "loss_acc_disagree", 16, kAllK},
      {"scale_halving", "loss_scale_collapse", 12, kAll},
      {"scale_below_one", "loss_scale_collapse", 8, kAll},
      {"healthy", "", 48, kAllK},
      {"s_curve", "", 16, kAllK},
      {"isolated_spikes", "", 20, kAllK},
      {"lr_floor_ok", "", 16, kAll},
      {"grokking", "", 16, kAllK},
      {"very_noisy", "", 24, kAllK},
      {"step_lr", "", 20, kAll},
      {"amp_inf", "", 16, kAll},
      {"short", "", 20, kAllK},
      {"stale_clean_stop", "", 4, kAll},
      {"stale_finished", "", 8, kAll},
      {"stale_ancient", "", 4, kAll},
      {"stale_slow_rhythm", "", 4, kAll},
      {"layers_ok", "", 12, {"pytorch", "lightning", "tf2"}},
      {"weights_ok", "", 12, {"pytorch", "lightning", "tf2"}},
      {"val_catches_up", "", 12, kAllK},
      {"val_below_train", "", 8, kAllK},
      {"acc_tracks", "", 12, kAllK},
      {"acc_saturated", "", 8, kAllK},
      {"scale_ok", "", 12, kAll},
      // Last, so that the cases before them draw the same numbers as before they came.
      {"init_high", "initial_loss_high", 12, kAll},
      {"init_scaled", "initial_loss_high", 8, kAll},
      {"init_ok", "", 12, kAll},
      {"init_pretrained", "", 4, kAll},
      {"flat_layer", "layer_grad_imbalance", 12, {"pytorch", "lightning", "tf2"}},
      {"layers_full_batch", "", 8, {"pytorch", "lightning", "tf2"}},
      {"overflow_steady", "fp16_overflow_steps", 12, kAll},
      {"overflow_calibration", "", 8, kAll},
      // Issue 18 part 3, activations and QAT: last, so that every earlier case keeps its serial
      // number and with it its draw.
      {"dead_relu", "dead_relu", 16, kAll},
      {"saturation", "activation_saturation", 12, {"pytorch", "hf", "lightning"}},
      {"attn_collapse", "attention_entropy_collapse", 16, kAll},
      {"qat_gap", "qat_gap_widening", 12, kAll},
      {"ternary_collapse", "ternary_weight_collapse", 12, kAll},
      {"relu_sparse_ok", "", 16, kAll},
      {"saturation_ok", "", 12, {"pytorch", "hf", "lightning"}},
      {"attn_sharpens", "", 16, kAll},
      {"qat_constant", "", 12, kAll},
      {"ternary_ok", "", 12, kAll},
  };
}

// Rules whose warnings on a pathology run are expected alongside the labeled one.
const std::map<std::string, std::set<std::string>>& Companions() {
  static const std::map<std::string, std::set<std::string>> m = {
      {"non_finite_loss", {"grad_explosion", "loss_divergence", "loss_spikes"}},
      {"loss_divergence", {"grad_explosion", "loss_spikes"}},
      {"grad_explosion", {"loss_divergence", "loss_spikes"}},
      {"memory_growth", {"step_time_creep"}},
      {"step_time_creep", {"memory_growth"}},
      {"loss_plateau", {"val_stall", "loss_at_chance"}},  // a plateau from the start at ln K is both
      {"lr_schedule_misaligned", {"loss_plateau"}},
      {"val_constant", {"val_worse_from_start"}},  // a frozen validation far above training is both
  };
  return m;
}

struct Shape {
  int64_t length;
  int interval;
  int weight;
};

std::vector<Case> MakeCases(uint64_t seed, const std::string& only) {
  Rng r{std::mt19937_64(seed)};
  const std::vector<double> noises = {0.01, 0.05, 0.15};
  const std::vector<Shape> shapes = {{300, 1, 3}, {2000, 1, 3}, {2000, 10, 3}, {10000, 1, 1}, {10000, 10, 2}, {10000, 50, 2}};
  std::vector<Case> out;
  int serial = 0;
  for (const KindSpec& k : Kinds()) {
    // --only filters after drawing, so a case has the same name and data with or without it.
    const bool wanted = only.empty() || only == k.label || only == k.kind;
    for (int i = 0; i < k.count; ++i) {
      Case c;
      c.kind = k.kind;
      c.label = k.label;
      c.style = k.styles[static_cast<size_t>(i) % k.styles.size()];
      c.noise = noises[static_cast<size_t>(i / static_cast<int>(k.styles.size())) % noises.size()];
      if (k.kind == "very_noisy") c.noise = r.U(0.15, 0.30);
      if (c.style == "keras") {
        c.length = r.Pick(std::vector<int64_t>{60, 120, 200});
        c.interval = 1;
        c.dt = r.U(20, 90);
      } else if (k.kind == "short") {
        c.interval = c.style == "hf" ? 10 : 1;  // 50-200 points
        c.length = r.I(50, 200) * c.interval;
        c.dt = r.U(0.2, 1.0);
      } else {
        std::vector<Shape> ok;
        int total = 0;
        for (const Shape& s : shapes) {
          if (c.style == "hf" && s.interval != 10) continue;  // the Trainer logs every logging_steps
          if (s.length / s.interval < MinPoints(k.kind)) continue;
          ok.push_back(s);
          total += s.weight;
        }
        int pick = r.I(0, total - 1);
        for (const Shape& s : ok) {
          if (pick < s.weight) {
            c.length = s.length;
            c.interval = s.interval;
            break;
          }
          pick -= s.weight;
        }
        c.dt = r.U(0.2, 1.0);
      }
      c.silence = r.U(1, 30);
      char name[128];
      std::snprintf(name, sizeof name, "%s_%03d_%s", k.kind.c_str(), serial++, c.style.c_str());
      c.name = name;
      c.subject = c.style == "keras" ? c.name + "/train" : c.name;
      if (!wanted) continue;
      Rng cr{std::mt19937_64(seed * 7919 + static_cast<uint64_t>(serial))};
      Generate(c, cr);
      out.push_back(std::move(c));
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Scoring.

struct Options {
  uint64_t seed = 20240601;
  std::string keep, only;
  bool verbose = false;
  bool real = false, real_only = false;  // --real: also the real runs; --real-only: only them
  std::string shared;                    // --shared DIR: the corpora's directory
  std::string rules;                     // --rules DIR: *.sql that replace built-ins of the same id
  std::string repo;                      // --repo DIR: the checkout whose labels and runs to score
};

Options ParseArgs(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) Die(a + " needs a value");
      return argv[++i];
    };
    if (a == "--seed") o.seed = std::strtoull(value().c_str(), nullptr, 10);
    else if (a == "--keep") o.keep = value();
    else if (a == "--only") o.only = value();
    else if (a == "--verbose") o.verbose = true;
    else if (a == "--real") o.real = true;
    else if (a == "--real-only") o.real = o.real_only = true;
    else if (a == "--shared") o.shared = value();
    else if (a == "--rules") o.rules = value();
    else if (a == "--repo") o.repo = value();
    else if (a == "-h" || a == "--help") {
      std::printf("usage: diagnose_eval [--seed N] [--keep DIR] [--verbose] [--only RULE|KIND]\n"
                  "                     [--real | --real-only] [--shared DIR] [--rules DIR] [--repo DIR]\n"
                  "  --real       also score the rules on the labelled real runs (README.md)\n"
                  "  --real-only  only the real runs; exit 0 iff their targets are met\n"
                  "  --shared DIR where corpus-sick/ and corpus/ are (default: ../shared beside the repo)\n"
                  "  --rules DIR  rules (*.sql) that replace the built-ins of the same id: try a rule\n"
                  "               change without rebuilding\n"
                  "  --repo DIR   the checkout whose labels and runs are scored (default: this build's)\n");
      std::exit(0);
    } else Die("unknown argument " + a + " (try --help)");
  }
  return o;
}

std::string Describe(const Case& c) {
  char buf[512];
  std::snprintf(buf, sizeof buf, "%s [%s, noise %.0f%%, %lld steps, every %d, %.2f s/step%s%s]", c.name.c_str(),
                c.style.c_str(), c.noise * 100, static_cast<long long>(c.length), c.interval, c.dt,
                c.extra.empty() ? "" : ", ", c.extra.c_str());
  return buf;
}

std::string Finding(const diagnose::Observation& o) {
  std::string s = o.rule + " (" + diagnose::SeverityName(o.severity);
  if (o.onset_step) s += ", onset " + std::to_string(*o.onset_step);
  if (!o.muted_by.empty()) s += ", muted by " + o.muted_by;
  if (o.pending) s += ", pending";
  return s + "): " + o.message;
}

int Main(const Options& opt) {
  const bench::WorkDir dir(opt.keep, "diagnose-eval", {"logs", "tw.db", "tw.db-wal", "tw.db-shm"});
  const std::string& work = dir.path();
  const std::string root = work + "/logs", db = work + "/tw.db";

  auto t0 = Clock::now();
  std::vector<Case> cases = MakeCases(opt.seed, opt.only);
  if (cases.empty()) Die("no case matches --only " + opt.only);
  int64_t points = 0;
  for (const Case& c : cases) {
    WriteCase(root, c);
    const Roles& r = c.roles;
    points += static_cast<int64_t>(r.train.v.size() + r.val.v.size() + r.lr.v.size() + r.grad.v.size() +
                                   r.epoch.v.size() + r.mem.v.size() + r.stime.v.size() + r.wnorm.v.size() +
                                   r.uratio.v.size() + r.acc.v.size() + r.scale.v.size() + r.skipped.v.size());
    for (const auto& l : r.layers) points += static_cast<int64_t>(l.second.v.size());
  }
  auto t1 = Clock::now();
  ingest::Summary summary;
  std::unique_ptr<diagnose::Engine> engine = IngestThenOpen(db, root, &summary, opt.rules);
  for (const auto& w : summary.warnings) std::printf("ingest warning: %s\n", w.c_str());
  auto t2 = Clock::now();
  Result<diagnose::Evaluation> ev = engine->Evaluate(nullptr, kNow, true);
  if (!ev.ok()) Die("evaluate: " + ev.status().ToString());
  auto t3 = Clock::now();
  std::printf("diagnose_eval: seed %llu, %zu runs, %lld points; write %.1f s, ingest %.1f s, evaluate %.1f s\n",
              static_cast<unsigned long long>(opt.seed), cases.size(), static_cast<long long>(points),
              Seconds(t0, t1), Seconds(t1, t2), Seconds(t2, t3));
  for (const auto& e : ev->errors) std::printf("rule error: %s\n", e.message.c_str());

  std::map<std::string, Severity> declared;
  for (const auto& rule : engine->rules()) declared[rule.id] = rule.severity;
  std::map<std::string, std::vector<const diagnose::Observation*>> by_run;
  for (const auto& o : ev->observations) by_run[o.run].push_back(&o);

  struct RuleScore {
    int n = 0, hit = 0, onset_n = 0, onset_within = 0;
    double onset_sum = 0, onset_max = 0;
    std::vector<std::string> misses, late;
  };
  std::map<std::string, RuleScore> rules;
  struct TrapScore {
    int n = 0, alarmed = 0;
  };
  std::map<std::string, TrapScore> traps;
  std::vector<std::string> alarms, wrong;
  int quiet_n = 0, quiet_alarmed = 0;

  for (const Case& c : cases) {
    const auto& obs = by_run[c.subject];
    if (opt.verbose) {
      std::printf("%s%s%s (onset %lld)\n", Describe(c).c_str(), c.label.empty() ? "" : " expects ",
                  c.label.c_str(), static_cast<long long>(c.onset));
      for (const auto* o : obs) std::printf("    %s\n", Finding(*o).c_str());
    }
    auto loud = [](const diagnose::Observation* o) {
      return o->muted_by.empty() && !o->pending && o->severity >= Severity::kWarning;
    };
    if (c.label.empty()) {
      ++quiet_n;
      TrapScore& t = traps[c.kind];
      ++t.n;
      bool any = false;
      for (const auto* o : obs)
        if (loud(o)) {
          any = true;
          alarms.push_back(Describe(c) + "\n      " + Finding(*o));
        }
      if (any) ++quiet_alarmed, ++t.alarmed;
      continue;
    }
    RuleScore& rs = rules[c.label];
    ++rs.n;
    const Severity want = c.info_enough ? Severity::kInfo
                          : declared.count(c.label) ? declared[c.label] : Severity::kWarning;
    const diagnose::Observation* best = nullptr;
    double best_err = 1e300;
    for (const auto* o : obs) {
      if (o->rule != c.label || !o->muted_by.empty() || o->pending || o->severity < want) continue;
      const double err = o->onset_step ? std::fabs(static_cast<double>(*o->onset_step - c.onset)) /
                                             static_cast<double>(c.length)
                                       : 1e300;
      if (!best || err < best_err) best = o, best_err = err;
    }
    if (best) {
      ++rs.hit;
      if (best->onset_step) {
        ++rs.onset_n;
        rs.onset_sum += best_err;
        rs.onset_max = std::max(rs.onset_max, best_err);
        rs.onset_within += best_err <= 0.05;
        if (best_err > 0.05) {
          char buf[128];
          std::snprintf(buf, sizeof buf, " (true onset %lld, reported %lld: %.1f%% of the run)",
                        static_cast<long long>(c.onset), static_cast<long long>(*best->onset_step), 100 * best_err);
          rs.late.push_back(Describe(c) + buf);
        }
      }
    } else {
      std::string why;
      for (const auto* o : obs) why += "\n      got " + Finding(*o);
      if (obs.empty()) why = "\n      (no finding at all)";
      rs.misses.push_back(Describe(c) + " true onset " + std::to_string(c.onset) + why);
    }
    const auto comp = Companions().count(c.label) ? Companions().at(c.label) : std::set<std::string>{};
    for (const auto* o : obs)
      if (loud(o) && o->rule != c.label && !comp.count(o->rule))
        wrong.push_back(Describe(c) + " expects " + c.label + "\n      " + Finding(*o));
  }

  // ---- report ----
  // Onset: error = |reported - true| / run length. The target is read per rule as its mean
  // error <= 5% (where a finding is typically placed); the share of detections within 5% and
  // the worst one are printed beside it, so a rule's outliers stay in view.
  std::printf("\nPer rule (recall target >= 0.95; onset error = |reported - true| / run length, target: mean <= 5%%)\n");
  std::printf("%-24s %5s %5s %7s %6s %11s %10s %10s %6s\n", "rule", "runs", "fired", "recall", "met", "onset mean",
              "within 5%", "onset max", "met");
  bool all_recall = true, all_onset = true;
  int onset_n = 0, onset_within = 0;
  double onset_worst = 0;
  for (const auto& [id, s] : rules) {
    const double recall = s.n ? static_cast<double>(s.hit) / s.n : 0;
    const double mean = s.onset_n ? s.onset_sum / s.onset_n : 0;
    const bool ok_r = recall >= 0.95, ok_o = s.onset_n > 0 && mean <= 0.05;
    all_recall &= ok_r;
    all_onset &= ok_o;
    onset_n += s.onset_n;
    onset_within += s.onset_within;
    onset_worst = std::max(onset_worst, s.onset_max);
    std::printf("%-24s %5d %5d %7.3f %6s %10.1f%% %9.0f%% %9.1f%% %6s\n", id.c_str(), s.n, s.hit, recall,
                ok_r ? "yes" : "NO", 100 * mean, s.onset_n ? 100.0 * s.onset_within / s.onset_n : 0.0,
                100 * s.onset_max, ok_o ? "yes" : "NO");
  }
  const double fa = quiet_n ? static_cast<double>(quiet_alarmed) / quiet_n : 0;
  std::printf("\nFalse alarms (warning or worse on a healthy or trap run; target <= 2%%)\n");
  std::printf("%-24s %5s %8s %7s\n", "trap", "runs", "alarmed", "share");
  for (const auto& [k, t] : traps)
    std::printf("%-24s %5d %8d %6.1f%%\n", k.c_str(), t.n, t.alarmed, t.n ? 100.0 * t.alarmed / t.n : 0);
  std::printf("%-24s %5d %8d %6.1f%%  %s\n", "all healthy + traps", quiet_n, quiet_alarmed, 100 * fa,
              fa <= 0.02 ? "met" : "NOT MET");

  std::printf("\nTargets: recall >= 0.95 for every rule: %s; false alarms <= 2%%: %s; onset within 5%% (mean per rule): %s\n",
              all_recall ? "met" : "NOT MET", fa <= 0.02 ? "met" : "NOT MET", all_onset ? "met" : "NOT MET");
  std::printf("Onsets within 5%% of the run: %d of %d detections (%.1f%%); the worst %.1f%%\n", onset_within, onset_n,
              onset_n ? 100.0 * onset_within / onset_n : 0.0, 100 * onset_worst);

  for (const auto& [id, s] : rules) {
    if (!s.misses.empty()) {
      std::printf("\nMissed %s (%zu):\n", id.c_str(), s.misses.size());
      for (const auto& m : s.misses) std::printf("  %s\n", m.c_str());
    }
  }
  for (const auto& [id, s] : rules) {
    if (!s.late.empty()) {
      std::printf("\nOnset off by more than 5%% for %s (%zu):\n", id.c_str(), s.late.size());
      for (const auto& m : s.late) std::printf("  %s\n", m.c_str());
    }
  }
  if (!alarms.empty()) {
    std::printf("\nFalse alarms (%zu findings):\n", alarms.size());
    for (const auto& a : alarms) std::printf("  %s\n", a.c_str());
  }
  if (!wrong.empty()) {
    std::printf("\nOther rules on pathology runs (informative; %zu findings):\n", wrong.size());
    for (const auto& w : wrong) std::printf("  %s\n", w.c_str());
  }
  std::printf("\nTime per rule (s):");
  for (const auto& [id, s] : ev->rule_seconds) std::printf(" %s %.2f;", id.c_str(), s);
  std::printf("\n");
  if (!opt.keep.empty()) std::printf("kept %s\n", work.c_str());
  return all_recall && all_onset && fa <= 0.02 ? 0 : 1;
}

// ---------------------------------------------------------------------------------------------
// Real runs (--real, --real-only): the rules on labelled runs that real training wrote, scored
// apart from the generated ones. Three label sets, each a JSON object keyed by run name:
//   public  bench/real_labels/corpus_sick.json: public runs of ../shared/corpus-sick and
//           ../shared/corpus, transcribed from corpus-sick/PATHOLOGIES.md (each run's `root`)
//   gpu     tests/data/real_runs/labels.json: runs made on a GPU by tools/real_runs/
//   cpu     tests/data/cpu_runs/labels.json: runs made on a CPU (skipped, said so, when absent)
// Each root is ingested whole into a fresh store and evaluated once as of an hour after its
// last point (as tests/diagnose_real_runs_test.cc does); runs without a label are reported
// apart as "unlabelled". Scoring is per rule FAMILY (Families() below), since several rules
// answer the same question on a real run (a loss stuck at chance is loss_at_chance,
// loss_constant or loss_plateau depending on its noise).

#ifndef TW_SOURCE_DIR
#define TW_SOURCE_DIR "."
#endif

using testing::FamilyOf;
using Family = testing::RuleFamily;
const std::vector<Family>& Families() { return testing::RuleFamilies(); }

using testing::RealLabel;

std::vector<RealLabel> ReadRealLabels(const std::string& path) {
  Result<std::vector<RealLabel>> labels = testing::ReadRealLabels(path);
  if (!labels.ok()) Die(labels.status().message());
  return std::move(*labels);
}

// One label set's figures; Add() pools them for the combined line.
struct RealScore {
  struct Fam {
    int n = 0, caught = 0, warned = 0;
    std::vector<double> onset_err;
  };
  std::map<std::string, Fam> fam;
  int runs = 0, sick = 0, healthy = 0, healthy_alarmed = 0, expect_not_violations = 0, weak_n = 0, weak_fired = 0;
  std::vector<std::string> misses, alarms, violations, weak_missed;
  void Add(const RealScore& o) {
    for (const auto& [k, f] : o.fam) {
      Fam& m = fam[k];
      m.n += f.n, m.caught += f.caught, m.warned += f.warned;
      m.onset_err.insert(m.onset_err.end(), f.onset_err.begin(), f.onset_err.end());
    }
    runs += o.runs, sick += o.sick, healthy += o.healthy, healthy_alarmed += o.healthy_alarmed;
    expect_not_violations += o.expect_not_violations, weak_n += o.weak_n, weak_fired += o.weak_fired;
  }
};

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

struct RealTargets {
  bool recall = true, alarms = true, onset = true;
  bool all() const { return recall && alarms && onset; }
};

// Prints a score's figures and says which targets it meets.
RealTargets PrintRealScore(const std::string& title, const RealScore& s) {
  RealTargets t;
  std::printf("\n%s: %d labelled runs (%d with expected findings, %d healthy or weak-only)\n", title.c_str(), s.runs,
              s.sick, s.healthy);
  std::printf("  %-15s %6s %6s %7s %5s %9s %6s %13s %10s\n", "family", "labels", "caught", "recall", "met", "warn+",
              "onsets", "median onset", "within 5%");
  std::vector<double> all_err;
  for (const Family& f : Families()) {
    auto it = s.fam.find(f.name);
    if (it == s.fam.end()) continue;
    const RealScore::Fam& m = it->second;
    const double recall = m.n ? static_cast<double>(m.caught) / m.n : 0;
    const bool ok = recall >= 0.9;
    t.recall &= ok;
    int within = 0;
    for (double e : m.onset_err) within += e <= 0.05;
    all_err.insert(all_err.end(), m.onset_err.begin(), m.onset_err.end());
    char med[32] = "-", win[32] = "-";
    if (!m.onset_err.empty()) {
      std::snprintf(med, sizeof med, "%.1f%%", 100 * Median(m.onset_err));
      std::snprintf(win, sizeof win, "%d/%zu", within, m.onset_err.size());
    }
    std::printf("  %-15s %6d %6d %7.2f %5s %9d %6zu %13s %10s\n", f.name.c_str(), m.n, m.caught, recall,
                ok ? "yes" : "NO", m.warned, m.onset_err.size(), med, win);
  }
  for (const auto& [name, m] : s.fam) {  // families outside the table (unknown rule ids)
    bool known = false;
    for (const Family& f : Families()) known |= f.name == name;
    if (known) continue;
    const double recall = m.n ? static_cast<double>(m.caught) / m.n : 0;
    t.recall &= recall >= 0.9;
    std::printf("  %-15s %6d %6d %7.2f %5s %9d %6zu (a rule outside the family table)\n", name.c_str(), m.n, m.caught,
                recall, recall >= 0.9 ? "yes" : "NO", m.warned, m.onset_err.size());
  }
  const double fa = s.healthy ? static_cast<double>(s.healthy_alarmed) / s.healthy : 0;
  t.alarms = s.healthy_alarmed * 20 <= s.healthy;  // at most 1 healthy run in 20
  int within = 0;
  for (double e : all_err) within += e <= 0.05;
  const double med = Median(all_err);
  t.onset = med <= 0.05;
  std::printf("  onset error (|reported - labelled| / the run's step span): median %.1f%% over %zu onsets, %d within 5%%\n",
              100 * med, all_err.size(), within);
  std::printf("  weak labels: %d of %d fired (not scored; never false alarms)\n", s.weak_fired, s.weak_n);
  std::printf("  healthy runs with a warning or worse: %d of %d (%.0f%%)\n", s.healthy_alarmed, s.healthy, 100 * fa);
  std::printf("  expect_not violations (a rule the traps rule out, at warning or worse, any run): %d\n",
              s.expect_not_violations);
  std::printf("  targets: recall >= 0.9 per family: %s; at most 1 healthy run in 20 alarmed: %s; median onset error <= 5%%: %s\n",
              t.recall ? "met" : "NOT MET", t.alarms ? "met" : "NOT MET", t.onset ? "met" : "NOT MET");
  return t;
}

struct LabelSet {
  std::string name, file;
  std::vector<std::pair<std::string, std::string>> roots;  // label root -> directory ("": the default)
};

// Ingests `dir` into a fresh store under `work`, evaluates every rule once, and scores the
// labels of `labels` whose root is `root` into `score`. Prints the per-run table.
void ScoreRoot(const std::string& work, const std::string& dir, const std::vector<const RealLabel*>& labels,
               RealScore* score, const Options& opt) {
  static int serial = 0;
  const std::string db = work + "/real-" + std::to_string(serial++) + ".db";
  auto t0 = Clock::now();
  ingest::Summary summary;
  std::unique_ptr<diagnose::Engine> engine = IngestThenOpen(db, dir, &summary, opt.rules);
  store::Db& d = engine->db();
  Result<store::Stmt> last = d.Prepare("SELECT max(wall_time) FROM scalars");
  if (!last.ok() || !*last->Step()) Die("no points in " + dir);
  const double now = last->Real(0) + 3600;
  auto t1 = Clock::now();
  Result<diagnose::Evaluation> ev = engine->Evaluate(nullptr, now);
  if (!ev.ok()) Die("evaluate: " + ev.status().ToString());
  auto t2 = Clock::now();
  std::printf("  %s: %lld runs, %lld files, %lld ingest errors; ingest %.1f s, evaluate %.1f s (now = last point + 1 h)\n",
              dir.c_str(), static_cast<long long>(summary.runs), static_cast<long long>(summary.files),
              static_cast<long long>(summary.totals.errors), Seconds(t0, t1), Seconds(t1, t2));
  for (const auto& e : ev->errors) std::printf("  rule error: %s\n", e.message.c_str());

  std::map<std::string, std::vector<const diagnose::Observation*>> by_run;
  for (const auto& o : ev->observations)
    if (o.muted_by.empty() && !o.pending && o.rule != "run_verdict") by_run[o.run].push_back(&o);
  Result<store::Stmt> span = d.Prepare("SELECT min(step), max(step), count(*) FROM scalar_points WHERE run = ?");
  if (!span.ok()) Die("span: " + span.status().ToString());
  auto loud = [](const diagnose::Observation* o) { return o->severity >= Severity::kWarning; };
  auto fired_text = [&](const std::vector<const diagnose::Observation*>& obs) {
    // rule@severity(onset), one per rule: its most severe, then earliest finding.
    std::map<std::string, const diagnose::Observation*> best;
    for (const auto* o : obs) {
      auto [it, added] = best.emplace(o->rule, o);
      if (added) continue;
      const auto* b = it->second;
      if (o->severity > b->severity ||
          (o->severity == b->severity && o->onset_step && (!b->onset_step || *o->onset_step < *b->onset_step)))
        it->second = o;
    }
    std::string s;
    for (const auto& [rule, o] : best) {
      if (!s.empty()) s += ", ";
      s += rule + "@" + diagnose::SeverityName(o->severity);
      if (o->onset_step) s += "(" + std::to_string(*o->onset_step) + ")";
    }
    return s.empty() ? std::string("-") : s;
  };
  auto join = [](const std::vector<std::string>& v) {
    std::string s;
    for (const auto& x : v) s += (s.empty() ? "" : ",") + x;
    return s.empty() ? std::string("[]") : s;
  };

  std::set<std::string> labelled;
  for (const RealLabel* l : labels) {
    labelled.insert(l->run);
    ++score->runs;
    const auto& obs = by_run[l->run];
    span->Reset();
    span->Bind(1, l->run);
    int64_t lo = 0, hi = 0, points = 0;
    if (*span->Step() && !span->IsNull(0)) lo = span->Int(0), hi = span->Int(1), points = span->Int(2);
    std::vector<std::string> miss, notes;
    bool alarm = false;
    if (points == 0) notes.push_back("NOT IN THE STORE");
    // Expected labels, one per family and run.
    std::set<std::string> done;
    for (const std::string& rule : l->expect) {
      const std::string fam = FamilyOf(rule);
      if (!done.insert(fam).second) continue;
      RealScore::Fam& f = score->fam[fam];
      ++f.n;
      const diagnose::Observation* hit = nullptr;
      bool warned = false;
      double err = 1e300;
      const std::optional<int64_t> want = l->OnsetOf(rule);
      for (const auto* o : obs) {
        if (FamilyOf(o->rule) != fam) continue;
        warned |= loud(o);
        double e = 1e300;
        if (want && o->onset_step && hi > lo)
          e = std::fabs(static_cast<double>(*o->onset_step - *want)) / static_cast<double>(hi - lo);
        if (!hit || e < err) hit = o, err = e;
      }
      if (!hit) {
        miss.push_back(fam + "(" + rule + ")");
        score->misses.push_back(l->run + ": " + rule);
        continue;
      }
      ++f.caught;
      f.warned += warned;
      if (err < 1e299) {
        f.onset_err.push_back(err);
        if (err > 0.05) {
          char buf[96];
          std::snprintf(buf, sizeof buf, "%s onset %lld vs %lld (%.0f%%)", rule.c_str(),
                        static_cast<long long>(*hit->onset_step), static_cast<long long>(*want), 100 * err);
          notes.push_back(buf);
        }
      }
    }
    for (const std::string& rule : l->weak) {
      const std::string fam = FamilyOf(rule);
      ++score->weak_n;
      bool fired = false;
      for (const auto* o : obs) fired |= FamilyOf(o->rule) == fam;
      score->weak_fired += fired;
      if (!fired) score->weak_missed.push_back(l->run + ": " + rule);
    }
    if (l->expect.empty()) {
      // Alarms as the real-runs test judges them (testing::LabelGaps: a loud rule outside the
      // label's weak families), each listed with its finding.
      std::vector<testing::FiredRule> fired;
      for (const auto* o : obs) fired.push_back({o->rule, loud(o)});
      const std::vector<std::string> gaps = testing::LabelGaps(*l, fired);
      ++score->healthy;
      for (const auto* o : obs)
        if (loud(o) && std::count(gaps.begin(), gaps.end(), "alarm " + o->rule)) {
          alarm = true;
          score->alarms.push_back(l->run + ": " + Finding(*o));
        }
      score->healthy_alarmed += alarm;
    } else {
      ++score->sick;
    }
    std::set<std::string> violated;
    for (const auto* o : obs)
      if (loud(o) && std::find(l->expect_not.begin(), l->expect_not.end(), o->rule) != l->expect_not.end() &&
          violated.insert(o->rule).second) {
        ++score->expect_not_violations;
        score->violations.push_back(l->run + ": " + Finding(*o));
        notes.push_back("expect_not " + o->rule);
      }
    std::string verdict = miss.empty() ? "" : "MISS";
    if (alarm || !violated.empty()) verdict += verdict.empty() ? "FALSE-ALARM" : "+FALSE-ALARM";
    if (verdict.empty()) verdict = "OK";
    std::string expect = join(l->expect);
    if (l->at_chance) expect += " (at chance)";
    if (!l->weak.empty()) expect += " weak:" + join(l->weak);
    if (l->onset) expect += " @" + std::to_string(*l->onset);
    std::printf("  %-17s %s\n      expected %s | steps %lld-%lld\n      fired    %s\n", verdict.c_str(), l->run.c_str(),
                expect.c_str(), static_cast<long long>(lo), static_cast<long long>(hi), fired_text(obs).c_str());
    if (!miss.empty()) std::printf("      missed   %s\n", join(miss).c_str());
    for (const auto& n : notes) std::printf("      note     %s\n", n.c_str());
    if (opt.verbose) {
      if (!l->cause.empty()) std::printf("      cause    %s\n", l->cause.c_str());
      if (!l->notes.empty()) std::printf("      label    %s\n", l->notes.c_str());
      for (const auto* o : obs) std::printf("      finding  %s\n", Finding(*o).c_str());
    }
  }
  // Runs the labels do not cover: their warnings, for information only.
  int unlabelled = 0, unlabelled_loud = 0;
  std::vector<std::string> lines;
  Result<store::Stmt> runs = d.Prepare("SELECT DISTINCT run FROM scalar_points ORDER BY run");
  if (!runs.ok()) Die("runs: " + runs.status().ToString());
  while (*runs->Step()) {
    const std::string run = runs->Text(0);
    if (labelled.count(run)) continue;
    ++unlabelled;
    std::vector<const diagnose::Observation*> l;
    for (const auto* o : by_run[run])
      if (loud(o)) l.push_back(o);
    if (l.empty()) continue;
    ++unlabelled_loud;
    lines.push_back(run + ": " + fired_text(l));
  }
  if (unlabelled) {
    std::printf("  unlabelled runs in this root (not scored): %d, %d with a warning or worse\n", unlabelled,
                unlabelled_loud);
    for (const auto& s : lines) std::printf("      %s\n", s.c_str());
  }
}

int RealMain(const Options& opt) {
  namespace fs = std::filesystem;
  const std::string repo = opt.repo.empty() ? std::string(TW_SOURCE_DIR) : opt.repo;
  std::string shared = opt.shared;
  if (shared.empty()) {
    // As the tests find TW_CORPUS_DIR: ../shared beside the checkout; a worktree one level
    // further down (wt/NAME) finds it one more level up.
    for (const char* up : {"/../shared", "/../../shared"})
      if (fs::is_directory(repo + up)) {
        shared = fs::weakly_canonical(repo + up).string();
        break;
      }
  }
  const bench::WorkDir dir("", "diagnose-eval-real", {});  // fresh stores, always
  std::printf("\n==== diagnose_eval: REAL runs (labelled; scored apart from the synthetic runs) ====\n");
  std::printf("repo %s, shared %s\n", repo.c_str(), shared.empty() ? "(not found; use --shared DIR)" : shared.c_str());
  std::printf("\nRule families (a label counts as caught when any rule of its family fired, unmuted, not pending):\n");
  for (const Family& f : Families()) {
    std::string rules;
    for (const auto& r : f.rules) rules += (rules.empty() ? "" : ", ") + r;
    std::printf("  %-15s %s\n", f.name.c_str(), rules.c_str());
  }

  const std::vector<LabelSet> sets = {
      {"public corpus (../shared/corpus-sick PATHOLOGIES.md)", repo + "/bench/real_labels/corpus_sick.json",
       {{"corpus-sick", shared.empty() ? "" : shared + "/corpus-sick"}, {"corpus", shared.empty() ? "" : shared + "/corpus"}}},
      {"GPU real_runs (tests/data/real_runs)", repo + "/tests/data/real_runs/labels.json",
       {{"", repo + "/tests/data/real_runs"}}},
      {"CPU runs (tests/data/cpu_runs)", repo + "/tests/data/cpu_runs/labels.json", {{"", repo + "/tests/data/cpu_runs"}}},
  };
  RealScore combined;
  std::vector<std::pair<std::string, RealScore>> scored;
  std::vector<std::string> skipped;  // what was not scored, for the last line
  for (const LabelSet& set : sets) {
    std::printf("\n---- %s ----\n", set.name.c_str());
    if (!fs::exists(set.file)) {
      std::printf("  %s is absent: label set skipped\n", set.file.c_str());
      skipped.push_back(set.name);
      continue;
    }
    const std::vector<RealLabel> labels = ReadRealLabels(set.file);
    std::printf("  labels: %s (%zu runs)\n", set.file.c_str(), labels.size());
    RealScore score;
    for (const auto& [root, path] : set.roots) {
      std::vector<const RealLabel*> mine;
      for (const RealLabel& l : labels)
        if (l.root == root || (set.roots.size() == 1 && l.root.empty())) mine.push_back(&l);
      if (mine.empty()) continue;
      if (path.empty() || !fs::is_directory(path)) {
        std::printf("  root %s: %s is absent: %zu labelled runs skipped\n", root.c_str(),
                    path.empty() ? "(no shared dir)" : path.c_str(), mine.size());
        skipped.push_back("root " + root + " of " + set.name);
        continue;
      }
      ScoreRoot(dir.path(), path, mine, &score, opt);
    }
    for (const RealLabel& l : labels) {
      bool known = set.roots.size() == 1 && l.root.empty();
      for (const auto& r : set.roots) known |= r.first == l.root;
      if (!known)
        std::printf("  %s: root \"%s\" is not one of this set's roots: skipped\n", l.run.c_str(), l.root.c_str());
    }
    if (score.runs == 0) continue;
    PrintRealScore(set.name, score);
    auto print_list = [](const char* what, const std::vector<std::string>& v) {
      if (v.empty()) return;
      std::printf("  %s (%zu):\n", what, v.size());
      for (const auto& x : v) std::printf("    %s\n", x.c_str());
    };
    print_list("misses", score.misses);
    print_list("false alarms on healthy runs", score.alarms);
    print_list("expect_not violations", score.violations);
    print_list("weak labels that did not fire", score.weak_missed);
    combined.Add(score);
    scored.emplace_back(set.name, score);
  }
  std::printf("\n---- combined ----\n");
  for (const auto& [name, s] : scored) {
    int n = 0, caught = 0;
    for (const auto& [k, f] : s.fam) n += f.n, caught += f.caught;
    std::printf("  %-55s labels %3d caught %3d (%.2f); healthy alarmed %d/%d; expect_not violations %d\n",
                name.c_str(), n, caught, n ? static_cast<double>(caught) / n : 0.0, s.healthy_alarmed, s.healthy,
                s.expect_not_violations);
  }
  const RealTargets t = PrintRealScore("all real label sets together", combined);
  std::printf("\nReal-run targets (all sets together): %s\n", t.all() ? "met" : "NOT MET");
  for (const auto& s : skipped) std::printf("  NOT SCORED (absent): %s\n", s.c_str());
  return t.all() ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const Options opt = ParseArgs(argc, argv);
    if (opt.real_only) return RealMain(opt);
    const int synthetic = Main(opt);
    if (!opt.real) return synthetic;
    const int real = RealMain(opt);
    return synthetic == 0 && real == 0 ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "diagnose_eval: %s\n", e.what());
    return 2;
  }
}
