#include "diagnose/role_inference.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <initializer_list>
#include <set>

namespace tw::diagnose {

namespace {

using Tokens = std::set<std::string>;

bool Any(const Tokens& t, std::initializer_list<const char*> words) {
  for (const char* w : words)
    if (t.count(w)) return true;
  return false;
}

std::string Joined(const std::vector<std::string>& words) {
  std::string out;
  for (const auto& w : words) out += (out.empty() ? "" : ", ") + w;
  return out;
}

// The tokens of `t` that decided a guess, for `trainwatch roles`.
std::string Because(const Tokens& t, std::initializer_list<const char*> words) {
  std::vector<std::string> hit;
  for (const char* w : words)
    if (t.count(w)) hit.push_back(w);
  return Joined(hit);
}

// Words that say nothing about what a series is, only how it was grouped or averaged.
bool Generic(const std::string& w) {
  static const Tokens kGeneric = {
      "train", "training", "trn", "batch", "val", "valid", "validation", "eval", "evaluation", "dev",
      "test", "testing", "holdout", "heldout", "total", "overall", "sum", "all", "full", "main",
      "combined", "mean", "avg", "average", "ema", "smooth", "smoothed", "running", "epoch", "step",
      "steps", "iter", "value", "metric", "metrics", "loss", "losses", "lm", "model", "global",
      "per", "sys", "system", "perf", "charts", "stats", "info", "optim", "opt", "optimizer", "m"};
  return kGeneric.count(w) > 0 || std::all_of(w.begin(), w.end(), ::isdigit);
}

enum class Phase { kNone, kTrain, kVal, kTest };

Phase PhaseOf(const Tokens& t, bool validation_run) {
  const bool val = Any(t, {"val", "valid", "validation", "eval", "evaluation", "dev", "holdout", "heldout"});
  const bool test = Any(t, {"test", "testing"});
  const bool train = Any(t, {"train", "training", "trn", "batch"});
  if (val) return Phase::kVal;   // "train/val_loss": the more specific word wins
  if (test) return Phase::kTest;
  if (train) return Phase::kTrain;
  return validation_run ? Phase::kVal : Phase::kNone;
}

// Explicit phases make a guess surer; validation beats a test set.
double PhaseBonus(Phase p, bool validation_run) {
  if (validation_run) return 0.1;
  return p == Phase::kVal ? 0.1 : p == Phase::kTest ? 0.05 : p == Phase::kTrain ? 0.1 : 0;
}

// Among tags of one role, the plainer name: 0.02 per punctuation-delimited segment past two.
double Verbosity(const std::string& tag) {
  int segments = 0;
  bool in = false;
  for (unsigned char c : tag) {
    const bool alnum = std::isalnum(c) != 0;
    if (alnum && !in) ++segments;
    in = alnum;
  }
  return std::min(0.1, 0.02 * std::max(0, segments - 2));
}

// What the punctuation says: the first segment (often a group: "time/batch" is a counter in
// the group time), whether a whole segment is an index ("layers.3"), the word after "per".
struct NameShape {
  std::string group;
  bool indexed = false;
  std::string after_per;
};

NameShape ShapeOfName(const std::string& tag, const std::vector<std::string>& words) {
  NameShape n;
  size_t i = 0;
  int segment = 0;
  while (i < tag.size()) {
    while (i < tag.size() && !std::isalnum(static_cast<unsigned char>(tag[i]))) ++i;
    size_t j = i;
    while (j < tag.size() && std::isalnum(static_cast<unsigned char>(tag[j]))) ++j;
    if (j == i) break;
    std::string seg = tag.substr(i, j - i);
    for (char& c : seg) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (segment++ == 0 && j < tag.size() && tag[j] == '/') n.group = seg;
    if (std::all_of(seg.begin(), seg.end(), ::isdigit)) n.indexed = true;
    i = j;
  }
  for (size_t k = 0; k + 1 < words.size(); ++k)
    if (words[k] == "per") n.after_per = words[k + 1];
  return n;
}

void Add(std::vector<RoleGuess>* out, std::string role, double confidence, std::string why) {
  out->push_back({std::move(role), std::clamp(confidence, 0.05, 0.95), std::move(why)});
}

// Losses and lower-is-better errors. A total beats its components; of the components, the
// classification term (the one tied to learning the labels) beats box/regression terms.
bool GuessLoss(const Tokens& t, Phase phase, bool validation_run, double plain,
               std::vector<RoleGuess>* out) {
  // "losses/" alone is a group (CleanRL logs losses/entropy, losses/approx_kl), not a loss.
  const bool lossy = Any(t, {"loss", "nll", "ce", "xent", "crossentropy", "bce", "mse", "mae", "l1",
                             "l2", "rmse", "huber", "cost"}) ||
                     (t.count("cross") && t.count("entropy"));
  const bool error = Any(t, {"ppl", "perplexity", "wer", "cer", "err", "error"});
  if (!lossy && !error) return false;
  // Not something to minimise: a loss scale or weight, a maximised ELBO, a reward.
  // Not something to minimise: a loss scale or weight, a maximised ELBO, a reward, a norm (an
  // l2_norm is no L2 loss), an entropy bonus or a temperature term, which rise in healthy runs.
  if (Any(t, {"scale", "scaler", "coef", "coeff", "coefficient", "weight", "elbo", "reward",
              "rewards", "return", "returns", "count", "nonzero", "norm", "alpha", "temperature"}) ||
      (t.count("entropy") && !t.count("cross")))
    return true;
  // A GAN's players: the discriminator's loss rises towards its equilibrium (2 ln 2) as the
  // generator improves, so neither is a loss the run drives down.
  if (Any(t, {"d", "g", "disc", "discriminator", "gen", "generator", "adversarial", "adv", "gan"}))
    return true;
  // Error rates and perplexity are measured on held-out data unless the tag says train.
  const bool val = phase == Phase::kVal || phase == Phase::kTest || (!lossy && phase == Phase::kNone);
  const std::string role = val ? "val_loss" : "train_loss";
  if (!lossy) {  // perplexity, error rates: a stand-in when no loss is logged
    Add(out, role, 0.45 + PhaseBonus(phase, validation_run) - plain,
        "an error or perplexity (" + Because(t, {"ppl", "perplexity", "wer", "cer", "err", "error"}) +
            "), lower is better");
    return true;
  }
  bool component = false;
  for (const auto& w : t)
    if (w.size() > 1 && !Generic(w) && !Any({w}, {"nll", "ce", "xent", "crossentropy", "cross", "entropy", "bce",
                                  "mse", "mae", "l1", "l2", "rmse", "huber", "cost"}))
      component = true;
  const bool classification = Any(t, {"cls", "class", "classification", "clf"});
  const bool total = Any(t, {"total", "overall", "sum", "combined", "full"});
  const bool smoothed = Any(t, {"avg", "average", "mean", "ema", "smooth", "smoothed", "running", "epoch"});
  double c = 0.75 + PhaseBonus(phase, validation_run) - plain;
  if (total) c += 0.1;
  else if (component) c -= classification ? 0.1 : 0.15;
  if (smoothed) c -= 0.05;
  std::string why = std::string(val ? "a validation" : "a training") + " loss (" +
                    Because(t, {"loss", "nll", "ce", "xent", "crossentropy", "bce", "mse", "mae",
                                "l1", "l2", "rmse", "huber", "cost"});
  why += phase == Phase::kNone ? "; no phase named, so training" : "";
  why += total ? "; a total" : component ? "; a component" : "";
  Add(out, role, c, why + "), lower is better");
  return true;
}

bool GuessAccuracy(const Tokens& t, Phase phase, bool validation_run, double plain,
                   std::vector<RoleGuess>* out) {
  if (!Any(t, {"acc", "accuracy", "accuracies", "top1", "top5", "aacc", "macc"})) return false;
  const bool val = phase == Phase::kVal || phase == Phase::kTest;
  Add(out, val ? "val_acc" : "train_acc",
      (phase == Phase::kNone ? 0.55 : 0.75) + PhaseBonus(phase, validation_run) - plain,
      std::string(val ? "a validation" : "a training") + " accuracy (" +
          Because(t, {"acc", "accuracy", "top1", "top5", "aacc", "macc"}) +
          (phase == Phase::kNone ? "; no phase named, so training" : "") + "), higher is better");
  return true;
}

// Scores where higher is better. They are computed on held-out data unless the tag says train.
bool GuessScore(const Tokens& t, Phase phase, bool validation_run, double plain,
                std::vector<RoleGuess>* out) {
  const bool primary = Any(t, {"iou", "miou", "map", "ap", "f1", "fscore", "f1score", "auc", "auroc",
                               "bleu", "rouge", "rouge1", "rouge2", "rougel", "dice", "mrr", "ndcg",
                               "psnr", "ssim", "meteor", "em", "kappa", "mcc", "r2", "matthews",
                               "pearson", "spearman", "correlation", "fitness"}) ||
                       (t.count("exact") && t.count("match"));
  const bool bucket = Any(t, {"ap50", "ap75", "aps", "apm", "apl", "map50", "map75"});
  const bool pr = Any(t, {"precision", "recall"});
  if (!primary && !bucket && !pr) return false;
  if (phase == Phase::kTrain) return true;  // a training mAP says nothing about generalization
  double c = (primary ? 0.75 : bucket ? 0.65 : 0.55) + PhaseBonus(phase, validation_run) - plain;
  // A per-class or per-size bucket ("bbox/AP-person", "APl", "mAP50") is not the headline score.
  for (const auto& w : t)
    if (!Generic(w) && !Any({w}, {"iou", "miou", "map", "ap", "f1", "bbox", "segm", "box", "mask"}))
      c -= 0.02;
  Add(out, "val_metric", c,
      "a validation score (" +
          Because(t, {"iou", "miou", "map", "ap", "f1", "fscore", "auc", "auroc", "bleu", "rouge",
                      "rougel", "dice", "mrr", "ndcg", "psnr", "ssim", "em", "ap50", "ap75", "aps",
                      "apm", "apl", "map50", "map75", "precision", "recall"}) +
          "), higher is better");
  return true;
}

bool GuessOptimizer(const Tokens& t, const NameShape& name, double plain, std::vector<RoleGuess>* out) {
  if (t.count("clip") && Any(t, {"threshold", "thresh", "max", "value"})) {
    Add(out, "clip_threshold", 0.7 - plain, "a clip threshold (" + Because(t, {"clip", "threshold", "thresh", "max", "value"}) + ")");
    return true;
  }
  if (t.count("lr") || (t.count("learning") && t.count("rate")) || t.count("learningrate")) {
    Add(out, "lr", 0.8 - plain, "a learning rate (" + Because(t, {"lr", "learning", "rate", "learningrate"}) + ")");
    return true;
  }
  const bool grad = Any(t, {"grad", "grads", "gradient", "gradients"});
  const bool norm = Any(t, {"norm", "norms", "l2norm"});
  if (t.count("gnorm") || (grad && norm)) {
    // A layer's norm (a module name or an index in the tag) stands in for the global one only
    // when the run logs no global norm.
    bool layer = Any(t, {"layer", "layers", "weight", "weights", "bias", "conv", "fc", "linear",
                         "attn", "attention", "mlp", "encoder", "decoder", "embed", "embedding",
                         "embeddings", "head", "block", "blocks", "neuron", "first", "last"});
    if (layer || name.indexed) {
      Add(out, "grad_norm_layer", 0.7 - plain, "a per-layer gradient norm (" + Because(t, {"grad", "grads", "gradient", "gradients", "norm", "layer"}) + ")");
      Add(out, "grad_norm", 0.35 - plain, "a layer's gradient norm, standing in for a global one");
    } else {
      Add(out, "grad_norm", 0.8 + (Any(t, {"total", "global", "all"}) ? 0.05 : 0) - plain,
          "a gradient norm (" + Because(t, {"grad", "grads", "gradient", "gradients", "gnorm", "norm", "global", "total"}) + ")");
    }
    return true;
  }
  if (norm && Any(t, {"weight", "weights", "param", "params", "parameter", "parameters"})) {
    Add(out, "weight_norm", 0.75 - plain, "a weight norm (" + Because(t, {"weight", "weights", "param", "params", "parameter", "parameters", "norm"}) + ")");
    return true;
  }
  if (t.count("update") && (t.count("ratio") || (t.count("to") && t.count("weight")))) {
    Add(out, "update_ratio", 0.75 - plain, "an update-to-weight ratio");
    return true;
  }
  return false;
}

bool GuessSpeed(const Tokens& t, const NameShape& name, Phase phase, double plain,
                std::vector<RoleGuess>* out) {
  const bool per_step_word = Any(Tokens{name.after_per}, {"step", "iter", "iteration", "batch", "update", "it"});
  const bool per_second = (!name.after_per.empty() && !per_step_word &&
                           Any(Tokens{name.after_per}, {"sec", "second", "s"})) ||
                          (name.after_per.empty() &&
                           Any(t, {"samples", "tokens", "images", "img", "imgs", "steps", "it", "iters", "examples"}) &&
                           Any(t, {"s", "sec", "second"}));
  const bool speedy = Any(t, {"fps", "sps", "ups", "wps", "tps", "throughput"}) || per_second;
  const bool timeish = Any(t, {"time", "timing", "duration", "latency"});
  const bool unit = Any(t, {"ms", "msec", "sec", "secs", "seconds", "s"});
  const bool per_step = per_step_word || Any(t, {"step", "iter", "iteration", "it", "batch", "data", "dataloader",
                                                 "forward", "backward", "fwd", "bwd", "update"});
  if (!speedy && !timeish && !(unit && per_step)) return false;
  // An evaluation's speed is not training's; a hardware efficiency (FLOP/s, MFU) is no step rate.
  if (phase == Phase::kVal || phase == Phase::kTest || Any(t, {"flops", "tflops", "mfu"})) return true;
  // "time/batch", "time/iterations": counters filed under a group named time.
  if (!speedy && name.group == "time" && !unit && !Any(t, {"duration", "latency", "timing"}))
    return true;
  if (speedy) {
    Add(out, "steps_per_sec", 0.7 - plain, "a throughput (" + Because(t, {"fps", "sps", "ups", "wps", "tps", "throughput", "per", "sec", "second", "s"}) + ")");
    return true;
  }
  // A clock, an ETA or a whole run's duration is not the time of one step.
  if (Any(t, {"eta", "total", "runtime", "wall", "clock", "elapsed", "cumulative", "since", "start",
              "end", "remaining", "left", "timestamp", "stamp", "date"}))
    return true;
  Add(out, "step_time", (per_step ? 0.8 : 0.65) - plain,
      "a time per step (" + Because(t, {"time", "timing", "duration", "latency", "step", "iter", "iteration", "batch", "data", "ms", "s", "sec"}) + ")");
  return true;
}

bool GuessMemory(const Tokens& t, double plain, std::vector<RoleGuess>* out) {
  if (!Any(t, {"mem", "memory", "rss", "vram", "allocated", "reserved", "maxrss"})) return false;
  // Not memory in use: a bus's load, free or available memory (the complement), a count of
  // allocations or retries.
  if (Any(t, {"util", "utilization", "bandwidth", "clock", "temp", "power", "free", "available",
              "avail", "count", "retries"}))
    return true;
  const bool units = Any(t, {"mb", "gb", "gib", "mib", "kb", "bytes", "allocatedbytes", "percent"});
  // W&B's system/gpu.N.memory is the share of time the memory was busy, not memory in use.
  if (t.count("gpu") && t.count("system") && !units &&
      !Any(t, {"allocated", "reserved", "used", "usage", "rss"}))
    return true;
  Add(out, "memory", (units ? 0.75 : 0.7) - plain,
      "memory in use (" + Because(t, {"mem", "memory", "rss", "vram", "allocated", "reserved", "mb", "gb", "bytes", "percent"}) + ")");
  return true;
}

}  // namespace

int RoleDirection(const std::string& role) {
  if (role == "train_loss" || role == "val_loss") return -1;
  if (role == "train_acc" || role == "val_acc" || role == "val_metric") return 1;
  return 0;
}

std::vector<std::string> TagTokens(const std::string& tag) {
  std::vector<std::string> out;
  auto add = [&out](std::string w) {
    for (char& c : w) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (!w.empty() && std::find(out.begin(), out.end(), w) == out.end()) out.push_back(std::move(w));
  };
  size_t i = 0;
  while (i < tag.size()) {
    while (i < tag.size() && !std::isalnum(static_cast<unsigned char>(tag[i]))) ++i;
    size_t j = i;
    while (j < tag.size() && std::isalnum(static_cast<unsigned char>(tag[j]))) ++j;
    if (j == i) break;
    const std::string seg = tag.substr(i, j - i);
    add(seg);
    // Letter/digit borders only ("mAP50" -> map, 50), then camelCase humps too.
    for (int camel = 0; camel < 2; ++camel) {
      size_t start = 0;
      for (size_t k = 1; k <= seg.size(); ++k) {
        const bool end = k == seg.size();
        bool cut = end;
        if (!end) {
          const unsigned char a = seg[k - 1], b = seg[k];
          cut = (std::isdigit(a) != 0) != (std::isdigit(b) != 0) ||
                (camel && std::islower(a) && std::isupper(b));
        }
        if (cut) {
          if (start > 0 || !end) add(seg.substr(start, k - start));
          start = k;
        }
      }
    }
    i = j;
  }
  return out;
}

std::vector<RoleGuess> GuessRoles(const std::string& tag, bool validation_run) {
  const std::vector<std::string> words = TagTokens(tag);
  const Tokens t(words.begin(), words.end());
  const Phase phase = PhaseOf(t, validation_run);
  const double plain = Verbosity(tag);
  const NameShape name = ShapeOfName(tag, words);
  std::vector<RoleGuess> out;
  // Order matters: "lr_loss_scale" is no loss, "grad_norm_time" no gradient norm; the first
  // family a name belongs to decides, and a name that rules itself out ends the search.
  if (!validation_run && (GuessOptimizer(t, name, plain, &out) || GuessSpeed(t, name, phase, plain, &out) ||
                          GuessMemory(t, plain, &out))) {
  } else if (GuessLoss(t, phase, validation_run, plain, &out) ||
             GuessAccuracy(t, phase, validation_run, plain, &out) ||
             GuessScore(t, phase, validation_run, plain, &out)) {
  } else if (!validation_run && Any(t, {"epoch", "epochs"}) && words.size() <= 3 && name.group != "time") {
    Add(&out, "epoch", 0.7 - plain, "an epoch counter");
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const RoleGuess& a, const RoleGuess& b) { return a.confidence > b.confidence; });
  return out;
}

SeriesShape MeasureShape(const std::vector<double>& values) {
  SeriesShape s;
  s.points = static_cast<int64_t>(values.size());
  double prev = 0;
  int last_dir = 0;
  int64_t pairs = 0, up = 0, changes = 0, turns = 0;
  for (double v : values) {
    if (!std::isfinite(v)) continue;
    if (s.finite == 0) {
      s.min = s.max = v;
    } else {
      s.min = std::min(s.min, v);
      s.max = std::max(s.max, v);
      ++pairs;
      if (v >= prev) ++up;
      const int dir = v > prev ? 1 : v < prev ? -1 : 0;
      if (dir != 0) {
        if (last_dir != 0) {
          ++changes;
          if (dir != last_dir) ++turns;
        }
        last_dir = dir;
      }
    }
    if (v != std::floor(v)) s.integers = false;
    prev = v;
    ++s.finite;
  }
  s.nondecreasing = pairs ? static_cast<double>(up) / static_cast<double>(pairs) : 1.0;
  s.turns = changes ? static_cast<double>(turns) / static_cast<double>(changes) : 0.0;
  return s;
}

std::string ShapeObjection(const std::string& role, const SeriesShape& s) {
  const bool loss = role == "train_loss" || role == "val_loss";
  if (loss) {
    // A loss may be anything, NaN throughout included; a counter is not one.
    if (s.finite >= 5 && s.integers && s.nondecreasing >= 0.999 && s.max > s.min)
      return "a counter: whole numbers that never go down";
    return "";
  }
  if (s.finite == 0) return "no finite value";
  if (role == "val_metric") {
    if (2 * s.finite < s.points) return "mostly non-finite (an empty bucket?)";
    return "";
  }
  if (s.min < 0) return "negative values";
  if (role == "lr") {
    if (s.max <= 0) return "never positive";
    if (s.max > 10) return "values above 10, too large for a learning rate";
    if (s.finite >= 20 && s.turns > 0.3) return "noisy, not schedule-shaped";
  } else if (role == "step_time") {
    if (s.max <= 0) return "never positive";
    if (s.finite >= 10 && s.nondecreasing >= 0.98 && s.max > 2 * s.min)
      return "a clock or a cumulative average: it rises at nearly every point";
  } else if (role == "steps_per_sec" || role == "memory") {
    if (s.max <= 0) return "never positive";
  } else if (role == "epoch") {
    if (s.nondecreasing < 0.99) return "it goes down";
  } else if (role == "train_acc" || role == "val_acc") {
    if (s.max > 100) return "values above 100";
  }
  return "";
}

}  // namespace tw::diagnose
