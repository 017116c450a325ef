#include "diagnose/role_inference.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <set>

namespace tw::diagnose {

namespace {

using Tokens = std::set<std::string>;
using Words = std::vector<const char*>;

// Each family of words is written once: it both decides a guess and explains it.
const Words kValWords = {"val", "valid", "validation", "eval", "evaluation", "dev", "holdout", "heldout"};
const Words kTestWords = {"test", "testing"};
const Words kTrainWords = {"train", "training", "trn", "batch"};
// "losses/" alone is a group (CleanRL logs losses/entropy, losses/approx_kl), not a loss.
const Words kLossWords = {"loss", "nll", "ce", "xent", "crossentropy", "bce", "mse", "mae", "l1",
                          "l2", "rmse", "huber", "cost"};
const Words kErrorWords = {"ppl", "perplexity", "wer", "cer", "err", "error"};
// Not something to minimise: a loss scale or weight, a maximised ELBO, a reward, a norm (an
// l2_norm is no L2 loss), a temperature term, which rises in healthy runs.
const Words kNotLossWords = {"scale", "scaler", "coef", "coeff", "coefficient", "weight", "elbo",
                             "reward", "rewards", "return", "returns", "count", "nonzero", "norm",
                             "alpha", "temperature"};
// A GAN's players: the discriminator's loss rises towards its equilibrium (2 ln 2) as the
// generator improves, so neither is a loss the run drives down.
const Words kAdversarialWords = {"d", "g", "disc", "discriminator", "gen", "generator",
                                 "adversarial", "adv", "gan"};
const Words kClassificationWords = {"cls", "class", "classification", "clf"};
const Words kTotalWords = {"total", "overall", "sum", "combined", "full"};
const Words kSmoothedWords = {"avg", "average", "mean", "ema", "smooth", "smoothed", "running", "epoch"};
const Words kAccuracyWords = {"acc", "accuracy", "accuracies", "top1", "top5", "aacc", "macc"};
const Words kScoreWords = {"iou", "miou", "map", "ap", "f1", "fscore", "f1score", "auc", "auroc",
                           "bleu", "rouge", "rouge1", "rouge2", "rougel", "dice", "mrr", "ndcg",
                           "psnr", "ssim", "meteor", "em", "kappa", "mcc", "r2", "matthews",
                           "pearson", "spearman", "correlation", "fitness"};
const Words kBucketWords = {"ap50", "ap75", "aps", "apm", "apl", "map50", "map75"};
const Words kPrecisionWords = {"precision", "recall"};
const Words kHeadlineWords = {"iou", "miou", "map", "ap", "f1", "bbox", "segm", "box", "mask"};
const Words kClipWords = {"threshold", "thresh", "max", "value"};
const Words kLrWords = {"lr", "learningrate"};
const Words kGradWords = {"grad", "grads", "gradient", "gradients"};
const Words kNormWords = {"norm", "norms", "l2norm"};
const Words kLayerWords = {"layer", "layers", "weight", "weights", "bias", "conv", "fc", "linear",
                           "attn", "attention", "mlp", "encoder", "decoder", "embed", "embedding",
                           "embeddings", "head", "block", "blocks", "neuron", "first", "last"};
const Words kGlobalWords = {"total", "global", "all"};
const Words kParamWords = {"weight", "weights", "param", "params", "parameter", "parameters"};
const Words kPerStepWords = {"step", "iter", "iteration", "batch", "update", "it"};
const Words kSecondWords = {"sec", "second", "s"};
const Words kCountedWords = {"samples", "tokens", "images", "img", "imgs", "steps", "it", "iters", "examples"};
const Words kThroughputWords = {"fps", "sps", "ups", "wps", "tps", "throughput"};
const Words kTimeWords = {"time", "timing", "duration", "latency"};
const Words kTimeUnitWords = {"ms", "msec", "sec", "secs", "seconds", "s"};
const Words kStepPartWords = {"step", "iter", "iteration", "it", "batch", "data", "dataloader",
                              "forward", "backward", "fwd", "bwd", "update"};
const Words kEfficiencyWords = {"flops", "tflops", "mfu"};
// A clock, an ETA or a whole run's duration is not the time of one step.
const Words kClockWords = {"eta", "total", "runtime", "wall", "clock", "elapsed", "cumulative",
                           "since", "start", "end", "remaining", "left", "timestamp", "stamp", "date"};
const Words kMemoryWords = {"mem", "memory", "rss", "vram", "allocated", "reserved", "maxrss"};
// Not memory in use: a bus's load, free or available memory (the complement), a count of
// allocations or retries.
const Words kNotMemoryWords = {"util", "utilization", "bandwidth", "clock", "temp", "power", "free",
                               "available", "avail", "count", "retries"};
const Words kMemoryUnitWords = {"mb", "gb", "gib", "mib", "kb", "bytes", "allocatedbytes", "percent"};
const Words kInUseWords = {"allocated", "reserved", "used", "usage", "rss"};

// The words of `words` among the tokens, in the list's order.
std::vector<std::string> Hits(const Tokens& t, const Words& words) {
  std::vector<std::string> hit;
  for (const char* w : words)
    if (t.count(w)) hit.push_back(w);
  return hit;
}
bool Any(const Tokens& t, const Words& words) {
  return std::any_of(words.begin(), words.end(), [&t](const char* w) { return t.count(w) > 0; });
}
bool In(const std::string& word, const Words& words) {
  return std::any_of(words.begin(), words.end(), [&word](const char* w) { return word == w; });
}
// The tokens that decided a guess, for `trainwatch roles`.
std::string Because(const Tokens& t, const Words& words) {
  std::string out;
  for (const auto& w : Hits(t, words)) out += (out.empty() ? "" : ", ") + w;
  return out;
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

// The runs of letters and digits between punctuation, as written, each with the character
// after it ('\0' at the end).
struct Segment {
  std::string text;
  char next;
};
std::vector<Segment> Segments(const std::string& tag) {
  std::vector<Segment> out;
  for (size_t i = 0; i < tag.size();) {
    while (i < tag.size() && !std::isalnum(static_cast<unsigned char>(tag[i]))) ++i;
    size_t j = i;
    while (j < tag.size() && std::isalnum(static_cast<unsigned char>(tag[j]))) ++j;
    if (j > i) out.push_back({tag.substr(i, j - i), j < tag.size() ? tag[j] : '\0'});
    i = j;
  }
  return out;
}

std::string Lower(std::string w) {
  for (char& c : w) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return w;
}

enum class Phase { kNone, kTrain, kVal, kTest };

Phase PhaseOf(const Tokens& t, bool validation_run) {
  if (Any(t, kValWords)) return Phase::kVal;  // "train/val_loss": the more specific word wins
  if (Any(t, kTestWords)) return Phase::kTest;
  if (Any(t, kTrainWords)) return Phase::kTrain;
  return validation_run ? Phase::kVal : Phase::kNone;
}

// Explicit phases make a guess surer; validation beats a test set.
double PhaseBonus(Phase p, bool validation_run) {
  if (validation_run) return 0.1;
  return p == Phase::kVal ? 0.1 : p == Phase::kTest ? 0.05 : p == Phase::kTrain ? 0.1 : 0;
}

// What the punctuation says: the first segment (often a group: "time/batch" is a counter in
// the group time), whether a whole segment is an index ("layers.3"), the word after "per",
// and how plain the name is (among tags of one role the plainer wins: 0.02 per segment past
// two).
struct NameShape {
  std::string group;
  bool indexed = false;
  std::string after_per;
  double verbosity = 0;
};

NameShape ShapeOfName(const std::string& tag, const std::vector<std::string>& words) {
  NameShape n;
  const std::vector<Segment> segments = Segments(tag);
  if (!segments.empty() && segments[0].next == '/') n.group = Lower(segments[0].text);
  for (const Segment& s : segments)
    n.indexed = n.indexed || std::all_of(s.text.begin(), s.text.end(), ::isdigit);
  for (size_t k = 0; k + 1 < words.size(); ++k)
    if (words[k] == "per") n.after_per = words[k + 1];
  n.verbosity = std::min(0.1, 0.02 * std::max(0, static_cast<int>(segments.size()) - 2));
  return n;
}

void Add(std::vector<RoleGuess>* out, std::string role, double confidence, std::string why) {
  out->push_back({std::move(role), std::clamp(confidence, 0.05, 0.95), std::move(why)});
}

// Losses and lower-is-better errors. A total beats its components; of the components, the
// classification term (the one tied to learning the labels) beats box/regression terms.
bool GuessLoss(const Tokens& t, Phase phase, bool validation_run, double plain,
               std::vector<RoleGuess>* out) {
  const bool lossy = Any(t, kLossWords) || (t.count("cross") && t.count("entropy"));
  if (!lossy && !Any(t, kErrorWords)) return false;
  // An entropy bonus (not a cross-entropy) rises as a policy sharpens.
  if (Any(t, kNotLossWords) || (t.count("entropy") && !t.count("cross"))) return true;
  // A GAN player's loss is no loss the run drives down (the discriminator's rises towards its
  // equilibrium), but a spike in it is the players' balance breaking: a role of its own, read
  // by loss_spikes only.
  if (Any(t, kAdversarialWords)) {
    if (lossy) Add(out, "gan_loss", 0.6 - plain, "a GAN player's loss (" + Because(t, kAdversarialWords) + ")");
    return true;
  }
  // Error rates and perplexity are measured on held-out data unless the tag says train.
  const bool val = phase == Phase::kVal || phase == Phase::kTest || (!lossy && phase == Phase::kNone);
  const std::string role = val ? "val_loss" : "train_loss";
  if (!lossy) {  // perplexity, error rates: a stand-in when no loss is logged
    Add(out, role, 0.45 + PhaseBonus(phase, validation_run) - plain,
        "an error or perplexity (" + Because(t, kErrorWords) + "), lower is better");
    return true;
  }
  bool component = false;
  for (const auto& w : t)
    if (w.size() > 1 && !Generic(w) && !In(w, kLossWords) && w != "cross" && w != "entropy")
      component = true;
  const bool total = Any(t, kTotalWords);
  double c = 0.75 + PhaseBonus(phase, validation_run) - plain;
  if (total) c += 0.1;
  else if (component) c -= Any(t, kClassificationWords) ? 0.1 : 0.15;
  if (Any(t, kSmoothedWords)) c -= 0.05;
  std::string why = std::string(val ? "a validation" : "a training") + " loss (" + Because(t, kLossWords);
  why += phase == Phase::kNone ? "; no phase named, so training" : "";
  why += total ? "; a total" : component ? "; a component" : "";
  Add(out, role, c, why + "), lower is better");
  return true;
}

bool GuessAccuracy(const Tokens& t, Phase phase, bool validation_run, double plain,
                   std::vector<RoleGuess>* out) {
  if (!Any(t, kAccuracyWords)) return false;
  const bool val = phase == Phase::kVal || phase == Phase::kTest;
  Add(out, val ? "val_acc" : "train_acc",
      (phase == Phase::kNone ? 0.55 : 0.75) + PhaseBonus(phase, validation_run) - plain,
      std::string(val ? "a validation" : "a training") + " accuracy (" + Because(t, kAccuracyWords) +
          (phase == Phase::kNone ? "; no phase named, so training" : "") + "), higher is better");
  return true;
}

// Scores where higher is better. They are computed on held-out data unless the tag says train.
bool GuessScore(const Tokens& t, Phase phase, bool validation_run, double plain,
                std::vector<RoleGuess>* out) {
  const bool primary = Any(t, kScoreWords) || (t.count("exact") && t.count("match"));
  const bool bucket = Any(t, kBucketWords);
  if (!primary && !bucket && !Any(t, kPrecisionWords)) return false;
  if (phase == Phase::kTrain) return true;  // a training mAP says nothing about generalization
  double c = (primary ? 0.75 : bucket ? 0.65 : 0.55) + PhaseBonus(phase, validation_run) - plain;
  // A per-class or per-size bucket ("bbox/AP-person", "APl", "mAP50") is not the headline score.
  for (const auto& w : t)
    if (!Generic(w) && !In(w, kHeadlineWords)) c -= 0.02;
  std::string why = Because(t, kScoreWords);
  for (const Words* more : {&kBucketWords, &kPrecisionWords})
    if (const std::string b = Because(t, *more); !b.empty()) why += (why.empty() ? "" : ", ") + b;
  Add(out, "val_metric", c, "a validation score (" + why + "), higher is better");
  return true;
}

bool GuessOptimizer(const Tokens& t, const NameShape& name, std::vector<RoleGuess>* out) {
  const double plain = name.verbosity;
  if (t.count("clip") && Any(t, kClipWords)) {
    Add(out, "clip_threshold", 0.7 - plain, "a clip threshold (clip, " + Because(t, kClipWords) + ")");
    return true;
  }
  if (Any(t, kLrWords) || (t.count("learning") && t.count("rate"))) {
    Add(out, "lr", 0.8 - plain, "a learning rate");
    return true;
  }
  const bool grad = Any(t, kGradWords);
  const bool norm = Any(t, kNormWords);
  if (t.count("gnorm") || (grad && norm)) {
    // A layer's norm (a module name or an index in the tag) is never the global one: a rule
    // that can judge layers alone reads grad_norm_layer where a run has no global norm.
    if (Any(t, kLayerWords) || name.indexed) {
      Add(out, "grad_norm_layer", 0.7 - plain, "a per-layer gradient norm");
    } else {
      Add(out, "grad_norm", 0.8 + (Any(t, kGlobalWords) ? 0.05 : 0) - plain, "a gradient norm");
    }
    return true;
  }
  if (norm && Any(t, kParamWords)) {
    Add(out, "weight_norm", 0.75 - plain, "a weight norm (" + Because(t, kParamWords) + ")");
    return true;
  }
  if (t.count("update") && (t.count("ratio") || (t.count("to") && t.count("weight")))) {
    Add(out, "update_ratio", 0.75 - plain, "an update-to-weight ratio");
    return true;
  }
  return false;
}

bool GuessSpeed(const Tokens& t, const NameShape& name, Phase phase, std::vector<RoleGuess>* out) {
  const double plain = name.verbosity;
  const bool per_step_word = In(name.after_per, kPerStepWords);
  const bool per_second = name.after_per.empty()
                              ? Any(t, kCountedWords) && Any(t, kSecondWords)
                              : !per_step_word && In(name.after_per, kSecondWords);
  const bool speedy = Any(t, kThroughputWords) || per_second;
  const bool timeish = Any(t, kTimeWords);
  const bool unit = Any(t, kTimeUnitWords);
  const bool per_step = per_step_word || Any(t, kStepPartWords);
  if (!speedy && !timeish && !(unit && per_step)) return false;
  // An evaluation's speed is not training's; a hardware efficiency (FLOP/s, MFU) is no step rate.
  if (phase == Phase::kVal || phase == Phase::kTest || Any(t, kEfficiencyWords)) return true;
  // "time/batch", "time/iterations": counters filed under a group named time.
  if (!speedy && name.group == "time" && !unit && !Any(t, {"duration", "latency", "timing"}))
    return true;
  if (speedy) {
    Add(out, "steps_per_sec", 0.7 - plain, "a throughput (" + Because(t, kThroughputWords) +
                                               (per_second ? " per second" : "") + ")");
    return true;
  }
  if (Any(t, kClockWords)) return true;
  Add(out, "step_time", (per_step ? 0.8 : 0.65) - plain,
      "a time per step (" + Because(t, kTimeWords) + (unit ? " in " + Because(t, kTimeUnitWords) : "") + ")");
  return true;
}

bool GuessMemory(const Tokens& t, double plain, std::vector<RoleGuess>* out) {
  if (!Any(t, kMemoryWords)) return false;
  if (Any(t, kNotMemoryWords)) return true;
  const bool units = Any(t, kMemoryUnitWords);
  // W&B's system/gpu.N.memory is the share of time the memory was busy, not memory in use.
  if (t.count("gpu") && t.count("system") && !units && !Any(t, kInUseWords)) return true;
  Add(out, "memory", (units ? 0.75 : 0.7) - plain,
      "memory in use (" + Because(t, kMemoryWords) + (units ? " in " + Because(t, kMemoryUnitWords) : "") + ")");
  return true;
}

// Activation statistics, per layer or head: the share of a layer's units that never fired over a
// batch (dead), the share of its outputs that are exactly zero (a ReLU layer's sparsity, ~50 %
// when healthy), the share pinned at a squashing function's limits, an attention head's entropy.
// Counts ("num_dead", "dead_count") are no shares, and a weight's or gradient's sparsity (pruning
// masks) is no activation's. Ends the search for any tag that names one of these quantities.
const Words kDeadWords = {"dead", "dying", "dormant"};
const Words kShareWords = {"frac", "fraction", "ratio", "share", "pct", "percent", "percentage", "rate", "prop"};
const Words kCountWords = {"count", "num", "number", "n", "total"};
const Words kNotActivationWords = {"weight", "weights", "param", "params", "grad", "grads", "gradient",
                                   "gradients", "mask", "pruning", "pruned", "gpu", "clip", "clipping"};
const Words kSaturationWords = {"saturation", "saturated", "saturate", "sat"};
const Words kAttentionWords = {"attn", "attention", "att", "attentions", "selfattn"};

bool GuessActivation(const Tokens& t, double plain, std::vector<RoleGuess>* out) {
  const bool dead = Any(t, kDeadWords);
  const bool zeros = (t.count("zero") || t.count("zeros")) && (Any(t, kShareWords) || t.count("of"));
  const bool sparsity = t.count("sparsity") > 0;
  // "sat" alone is too short to trust (a SAT solver, Saturday): with a squashing function or a share.
  const bool saturation = Any(t, {"saturation", "saturated", "saturate"}) ||
                          (t.count("sat") && (t.count("tanh") || t.count("sigmoid") || Any(t, kShareWords)));
  const bool entropy = t.count("entropy") && Any(t, kAttentionWords);
  if (!dead && !zeros && !sparsity && !saturation && !entropy) return false;
  if (Any(t, kNotActivationWords) || Any(t, kCountWords)) return true;
  if (entropy) {
    Add(out, "attn_entropy", 0.8 - plain, "an attention entropy (" + Because(t, kAttentionWords) + ", entropy)");
  } else if (dead) {
    Add(out, "dead_units", 0.75 - plain, "a share of dead units (" + Because(t, kDeadWords) + ")");
  } else if (zeros || sparsity) {
    Add(out, "act_zero_frac", 0.7 - plain, std::string("a share of zero activations (") +
                                               (sparsity ? "sparsity" : "zero") + ")");
  } else {
    Add(out, "act_saturation", 0.7 - plain, "a share of saturated units (" + Because(t, kSaturationWords) + ")");
  }
  return true;
}

// A quantization-aware run's two losses: the quantized model's and the full-precision one's.
// Offered beside the loss guess (the tag stays a loss as well), for the QAT rule to pair them.
const Words kQuantWords = {"qat", "quant", "quantized", "quantised", "quantization", "quantisation",
                           "int8", "int4", "int2", "w4a8", "w8a8", "ternary", "lowbit"};
const Words kFullPrecisionWords = {"fp32", "fp", "float", "float32", "full", "fullprecision", "unquantized",
                                   "fp16", "bf16"};

void GuessQuantizedLoss(const Tokens& t, double plain, std::vector<RoleGuess>* out) {
  const bool lossy = Any(t, kLossWords) || (t.count("cross") && t.count("entropy"));
  if (!lossy || Any(t, kNotLossWords)) return;
  const bool quant = Any(t, kQuantWords) && !t.count("unquantized");
  const bool full = Any(t, kFullPrecisionWords) && (!t.count("full") || t.count("precision"));
  if (quant == full) return;  // neither, or both ("fp32_vs_int8_loss": a gap, not a loss)
  if (quant) Add(out, "qat_loss", 0.75 - plain, "the quantized model's loss (" + Because(t, kQuantWords) + ")");
  else Add(out, "fp_loss", 0.75 - plain, "the full-precision model's loss (" + Because(t, kFullPrecisionWords) + ")");
}

}  // namespace

std::vector<std::string> InferredExampleTags(const std::string& role) {
  static const std::vector<std::pair<std::string, std::vector<std::string>>> kExamples = {
      {"dead_units", {"act/relu_dead_frac/layer2", "dnn/hiddenlayer_0/dead_neurons_pct"}},
      {"act_zero_frac", {"dnn/hiddenlayer_0/fraction_of_zero_values", "activations/fc1/zero_fraction"}},
      {"act_saturation", {"act/tanh_sat_frac/layer1", "saturation/sigmoid_2"}},
      {"attn_entropy", {"attn_entropy/head_3", "attention/entropy/block0"}},
      {"qat_loss", {"qat/loss", "eval/quantized_loss"}},
      {"fp_loss", {"fp32/loss", "eval/fp_loss"}},
      {"ternary_weights", {"weights/ternary/layer1", "ternary_weights/fc2"}},
  };
  for (const auto& [r, tags] : kExamples)
    if (r == role) return tags;
  return {};
}

std::vector<RoleGuess> GuessHistogramRoles(const std::string& tag) {
  const std::vector<std::string> words = TagTokens(tag);
  const Tokens t(words.begin(), words.end());
  std::vector<RoleGuess> out;
  if (Any(t, {"ternary", "ternarized", "ternarised", "trit", "trits", "tern"}) && !Any(t, {"grad", "grads", "gradient"}))
    Add(&out, "ternary_weights", 0.75, "a ternary layer's weights");
  return out;
}

int RoleDirection(const std::string& role) {
  if (role == "train_loss" || role == "val_loss") return -1;
  if (role == "train_acc" || role == "val_acc" || role == "val_metric" || role == "reward") return 1;
  return 0;
}

std::vector<std::string> TagTokens(const std::string& tag) {
  std::vector<std::string> out;
  auto add = [&out](const std::string& w) {
    std::string low = Lower(w);
    if (!low.empty() && std::find(out.begin(), out.end(), low) == out.end()) out.push_back(std::move(low));
  };
  for (const Segment& segment : Segments(tag)) {
    const std::string& seg = segment.text;
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
  }
  return out;
}

std::vector<RoleGuess> GuessRoles(const std::string& tag, bool validation_run) {
  const std::vector<std::string> words = TagTokens(tag);
  const Tokens t(words.begin(), words.end());
  const Phase phase = PhaseOf(t, validation_run);
  const NameShape name = ShapeOfName(tag, words);
  std::vector<RoleGuess> out;
  if (GuessActivation(t, name.verbosity, &out)) return out;
  if (!validation_run) GuessQuantizedLoss(t, name.verbosity, &out);
  // Order matters: "lr_loss_scale" is no loss, "grad_norm_time" no gradient norm. The first
  // family a name belongs to decides, and a name that rules itself out ends the search. A
  // validation sibling's series are about validation: no optimizer, speed or memory there.
  const bool decided =
      (!validation_run && (GuessOptimizer(t, name, &out) || GuessSpeed(t, name, phase, &out) ||
                           GuessMemory(t, name.verbosity, &out))) ||
      GuessLoss(t, phase, validation_run, name.verbosity, &out) ||
      GuessAccuracy(t, phase, validation_run, name.verbosity, &out) ||
      GuessScore(t, phase, validation_run, name.verbosity, &out);
  if (!decided && !validation_run && Any(t, {"epoch", "epochs"}) && words.size() <= 3 && name.group != "time")
    Add(&out, "epoch", 0.7 - name.verbosity, "an epoch counter");
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
  const bool loss = role == "train_loss" || role == "val_loss" || role == "gan_loss";
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
  } else if (role == "train_acc" || role == "val_acc" || role == "dead_units" || role == "act_zero_frac" ||
             role == "act_saturation") {
    if (s.max > 100) return "values above 100";  // shares, as fractions or percentages
  }
  return "";
}

}  // namespace tw::diagnose
