#include "diagnose/roles.h"

#include <fnmatch.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <tuple>

#include "diagnose/role_inference.h"

namespace tw::diagnose {

namespace {

// Priority order matters: validation patterns come before the generic `loss` ones, and each
// writer's exact tag before looser globs.
const std::vector<RolePattern> kDefaults = {
    // Keras: sibling runs X/train and X/validation, both logging epoch_* tags.
    {"val_loss", "epoch_loss", "*validation", "Keras validation run"},
    {"val_loss", "evaluation_loss_vs_iterations", "*validation", "Keras validation run"},
    {"val_acc", "epoch_accuracy", "*validation", "Keras validation run"},
    {"val_acc", "epoch_acc", "*validation", "Keras validation run"},
    {"train_loss", "epoch_loss", "*train", "Keras train run"},
    {"train_acc", "epoch_accuracy", "*train", "Keras train run"},
    {"lr", "epoch_learning_rate", "*train", "Keras LR logging"},
    {"lr", "epoch_lr", "*train", "Keras LR logging"},
    // Hugging Face Trainer.
    {"train_loss", "train/loss", "", "HF Trainer / common"},
    {"val_loss", "eval/loss", "", "HF Trainer"},
    {"lr", "train/learning_rate", "", "HF Trainer"},
    {"grad_norm", "train/grad_norm", "", "HF Trainer"},
    {"epoch", "train/epoch", "", "HF Trainer"},
    {"val_acc", "eval/accuracy", "", "HF Trainer"},
    // Lightning (self.log names, LearningRateMonitor, grad_norm utility).
    {"train_loss", "train_loss_step", "", "Lightning on_step=True"},
    {"train_loss", "train_loss", "", "Lightning / common"},
    {"val_loss", "val_loss", "", "Lightning / common"},
    {"val_loss", "val_loss_epoch", "", "Lightning"},
    {"train_loss", "train_loss_epoch", "", "Lightning on_epoch"},
    {"ignore", "lr-*momentum*", "", "Lightning LearningRateMonitor(log_momentum=True): a momentum"},
    {"lr", "lr-*", "", "Lightning LearningRateMonitor"},
    {"grad_norm", "grad_2.0_norm_total", "", "Lightning grad_norm()"},
    {"grad_norm_layer", "grad_2.0_norm/*", "", "Lightning grad_norm()"},
    // PyTorch examples and common names.
    {"train_loss", "Loss/train", "", "PyTorch examples"},
    {"val_loss", "Loss/val", "", "PyTorch examples"},
    {"val_loss", "Loss/validation", "", "PyTorch examples"},
    {"val_loss", "Loss/valid*", "", "PyTorch examples"},
    {"val_loss", "Loss/test", "", "PyTorch examples (test set as validation)"},
    {"val_loss", "val/loss", "", "common"},
    {"val_loss", "valid/loss", "", "common"},
    {"val_loss", "validation/loss", "", "common"},
    {"val_loss", "validation_loss", "", "common"},
    {"val_loss", "test/loss", "", "common"},
    {"val_loss", "test_loss", "", "common"},
    {"train_loss", "loss/train", "", "common"},
    {"train_loss", "training/loss", "", "common"},
    {"train_loss", "train/total_loss", "", "common"},
    {"train_loss", "train/loss_step", "", "common"},
    {"train_loss", "loss", "", "TF Estimator / PyTorch / common"},
    {"train_loss", "total_loss", "", "common"},
    {"train_loss", "losses/total_loss", "", "TF Object Detection"},
    {"lr", "lr", "", "common"},
    {"lr", "learning_rate", "", "TF Estimator / common"},
    {"lr", "train/lr", "", "common"},
    {"lr", "lr/*", "", "common (per param group)"},
    {"lr", "*/lr", "", "common"},
    {"lr", "*/learning_rate", "", "common"},
    {"grad_norm", "grad_norm", "", "common"},
    {"grad_norm", "gradient_norm", "", "common"},
    {"grad_norm", "grad_norm/total", "", "common"},
    {"grad_norm", "grad/norm", "", "common"},
    {"grad_norm", "global_norm", "", "TF"},
    {"grad_norm", "gradients/global_norm", "", "TF"},
    {"grad_norm", "*/grad_norm", "", "common"},
    {"grad_norm_layer", "grad_norm/*", "", "per-layer gradient norms"},
    {"grad_norm_layer", "gradients/*", "", "per-layer gradient norms"},
    {"weight_norm", "weight_norm", "", "common"},
    {"weight_norm", "param_norm", "", "common"},
    {"weight_norm", "*/weight_norm", "", "common"},
    {"weight_norm", "*/param_norm", "", "common"},
    {"update_ratio", "update_ratio", "", "common"},
    {"update_ratio", "*/update_ratio", "", "common"},
    {"update_ratio", "update_to_weight*", "", "common"},
    {"clip_threshold", "clip_threshold", "", "common"},
    {"clip_threshold", "max_grad_norm", "", "common"},
    {"clip_threshold", "*/max_grad_norm", "", "HF TrainingArguments name under a prefix"},
    {"clip_threshold", "*/clip_threshold", "", "common"},
    // fairseq's `clip`: the percentage of updates whose gradient norm was clipped.
    {"clip_fraction", "clip", "", "fairseq"},
    {"clip_fraction", "*/clip", "", "fairseq"},
    {"clip_fraction", "clip_fraction", "", "common"},
    {"clip_fraction", "*/clip_fraction", "", "common"},
    // Mixed precision: the dynamic loss scale (torch.cuda.amp.GradScaler.get_scale(), DeepSpeed's
    // loss_scale, Lightning/HF users' grad_scale), halved at every step whose gradients overflow.
    {"loss_scale", "loss_scale", "", "DeepSpeed / common"},
    {"loss_scale", "*/loss_scale", "", "DeepSpeed monitor / common"},
    {"loss_scale", "grad_scale", "", "GradScaler / common"},
    {"loss_scale", "*/grad_scale", "", "GradScaler / common"},
    {"loss_scale", "*/amp_scale", "", "common"},
    {"loss_scale", "loss-scale", "", "Megatron-LM"},
    {"loss_scale", "loss-scale vs samples", "", "Megatron-LM"},
    {"loss_scale", "train_loss_scale", "", "fairseq json log"},
    // GPU utilization in percent, one series per GPU (W&B system metrics; the `process` copies
    // of the same GPUs are left out).
    // Steps skipped for float16 overflow: a running count, a count per logging interval, or a
    // 0/1 flag (fp16_overflow_steps tells which from the values).
    {"overflow_steps", "skipped_steps", "", "common"},
    {"overflow_steps", "*/skipped_steps", "", "common"},
    {"overflow_steps", "num_skipped_steps", "", "common"},
    {"overflow_steps", "*/num_skipped_steps", "", "common"},
    {"overflow_steps", "skipped_iterations", "", "common"},
    {"overflow_steps", "*/skipped_iterations", "", "common"},
    {"overflow_steps", "skipped-iterations", "", "Megatron-LM style"},
    {"overflow_steps", "overflow_steps", "", "common"},
    {"overflow_steps", "*/overflow_steps", "", "common"},
    {"overflow_steps", "overflow_count", "", "common"},
    {"overflow_steps", "*/overflow_count", "", "common"},
    {"overflow_steps", "grad_overflow", "", "common"},
    {"overflow_steps", "*/grad_overflow", "", "common"},
    {"gpu_util", "system/gpu.?.gpu", "", "W&B system metrics"},
    {"gpu_util", "system/gpu.??.gpu", "", "W&B system metrics"},
    {"gpu_util", "system.gpu.?.gpu", "", "W&B public API key form"},
    {"gpu_util", "system.gpu.??.gpu", "", "W&B public API key form"},
    {"gpu_util", "gpu_util", "", "common"},
    {"gpu_util", "*/gpu_util", "", "common"},
    {"gpu_util", "gpu_utilization", "", "common"},
    {"gpu_util", "*/gpu_utilization", "", "common"},
    {"epoch", "epoch", "", "Lightning / common"},
    {"epoch", "trainer/epoch", "", "W&B / Lightning"},
    {"epoch", "*/epoch", "", "common"},
    {"step_time", "step_time", "", "common"},
    {"step_time", "*/step_time", "", "common"},
    {"step_time", "time/step", "", "common"},
    {"step_time", "iter_time", "", "common"},
    {"step_time", "batch_time", "", "common"},
    {"step_time", "time_per_step", "", "common"},
    {"steps_per_sec", "global_step/sec", "", "TF Estimator"},
    {"steps_per_sec", "*steps_per_second", "", "common"},
    {"memory", "memory", "", "common"},
    {"memory", "gpu_memory*", "", "common"},
    {"memory", "memory/*allocated*", "", "common"},
    {"memory", "*/memory_allocated*", "", "common"},
    {"memory", "cuda_memory*", "", "common"},
    {"memory", "mem*", "", "common"},
    {"memory", "system/gpu.0.memoryAllocatedBytes", "", "W&B system metrics"},
    {"memory", "system/gpu.0.memoryAllocated", "", "W&B system metrics"},
    {"train_acc", "train/acc*", "", "common"},
    {"train_acc", "train_acc*", "", "common"},
    {"train_acc", "Accuracy/train", "", "PyTorch examples"},
    {"val_acc", "val/acc*", "", "common"},
    {"val_acc", "val_acc*", "", "common"},
    {"val_acc", "Accuracy/val*", "", "PyTorch examples"},
    {"val_acc", "Accuracy/test", "", "PyTorch examples"},
    // A validation score where higher is better (segmentation, detection, retrieval, F1).
    {"val_metric", "val*/miou", "", "common"},
    {"val_metric", "metrics/mAP*", "", "YOLO"},
    {"val_metric", "eval/f1", "", "HF Trainer"},
    // An RL run's return: its losses (value, TD) scale with it, which the loss rules must know.
    {"reward", "rollout/ep_rew_mean", "", "Stable-Baselines3"},
    {"reward", "eval/mean_reward", "", "Stable-Baselines3 EvalCallback"},
    {"reward", "*/ep_rew_mean", "", "Stable-Baselines3"},
    {"reward", "charts/episodic_return", "", "CleanRL"},
    {"reward", "*episode_reward_mean", "", "RLlib / Tune"},
    // Activations, one series per layer or head (tags role inference reads by their words as
    // well: act/relu_dead_frac/layer2, activations/fc1/zero_fraction, attn_entropy/head_3).
    {"act_zero_frac", "*/fraction_of_zero_values", "", "TF Estimator DNN (tf.math.zero_fraction)"},
    {"act_zero_frac", "*/zero_fraction", "", "tf.math.zero_fraction"},
    {"attn_entropy", "attn_entropy*", "", "common"},
    {"attn_entropy", "*/attn_entropy*", "", "common"},
    {"attn_entropy", "attention_entropy*", "", "EOLE / common"},
    {"attn_entropy", "*/attention_entropy*", "", "EOLE / common"},
    // Histograms of a ternary layer's quantized weights (TTQ, TWN, BitNet b1.58 runs).
    {"ternary_weights", "*ternary*", "", "ternary weight histograms"},
};

// Roles played by histogram series (every other role by scalars).
const std::set<std::string> kHistogramRoles = {"ternary_weights"};

struct RunInfo {
  int64_t id = 0;
  std::string root, name;
};

std::string Parent(const std::string& name) {
  const size_t slash = name.rfind('/');
  return slash == std::string::npos ? "" : name.substr(0, slash);
}
std::string Base(const std::string& name) {
  const size_t slash = name.rfind('/');
  return slash == std::string::npos ? name : name.substr(slash + 1);
}

}  // namespace

const std::vector<RolePattern>& DefaultRolePatterns() { return kDefaults; }

// Roles several series of a run may hold at once (gan_loss: a GAN's players, which only
// inference assigns, so no default pattern names it).
const std::set<std::string> kMultiRoles = {"grad_norm_layer", "gan_loss", "gpu_util", "dead_units",
                                           "act_zero_frac", "act_saturation", "attn_entropy",
                                           "ternary_weights"};

bool IsMultiRole(const std::string& role) { return kMultiRoles.count(role) > 0; }
bool IsHistogramRole(const std::string& role) { return kHistogramRoles.count(role) > 0; }

std::vector<std::string> KnownRoles() {
  std::set<std::string> roles = kMultiRoles;
  for (const auto& p : kDefaults) roles.insert(p.role);  // "ignore" among them
  roles.insert({"qat_loss", "fp_loss"});  // only inference names them (a tag keeps its loss role too)
  return {roles.begin(), roles.end()};
}

std::vector<RolePattern> EffectiveRolePatterns(const std::vector<RolePattern>& user) {
  std::vector<RolePattern> all = user;
  all.insert(all.end(), kDefaults.begin(), kDefaults.end());
  return all;
}

bool GlobMatch(const std::string& glob, const std::string& text) {
  return ::fnmatch(glob.c_str(), text.c_str(), FNM_CASEFOLD) == 0;
}

namespace {

// The base names of a validation sibling of a `train` run.
bool IsValidationSibling(const std::string& base) {
  static const std::set<std::string> kNames = {"validation", "val", "valid", "eval", "evaluation", "test"};
  return kNames.count(base) > 0;
}

// A validation sibling's series are about validation: a pattern written for any run that names a
// training role there names its validation twin; other roles stay with the train run.
std::string RoleFromSibling(const std::string& role) {
  if (role == "train_loss") return "val_loss";
  if (role == "train_acc") return "val_acc";
  if (role == "val_loss" || role == "val_acc" || role == "val_metric") return role;
  return "";
}

// Up to this many of a series' first points decide whether its values fit a guessed role.
constexpr int kShapePoints = 4096;

// One way a series could play a role. Patterns rank first, in their order; inferred guesses
// after them, the most confident first, then in tag order.
struct Candidate {
  bool inferred = false;  // by role inference (its confidence is a.confidence), else a pattern
  size_t pattern = 0;
  size_t order = 0;
  RoleAssignment a;
  // Fewer than two live points: no curve (HF's end-of-training summary 'train_loss', beside
  // its per-step 'loss'). Such a series takes a role only where no curve does.
  bool single = false;
  bool Beats(const Candidate& o) const {
    if (single != o.single) return !single;
    if (inferred != o.inferred) return !inferred;
    if (!inferred) return pattern < o.pattern;
    if (a.confidence != o.a.confidence) return a.confidence > o.a.confidence;
    return order < o.order;
  }
};

std::string Percent(double confidence) {
  return std::to_string(static_cast<int>(std::lround(100 * confidence))) + "%";
}

}  // namespace

Result<RoleMap> AssignRoles(store::Db& db, const std::vector<RolePattern>& patterns,
                            const std::vector<int64_t>* runs) {
  // Every run's name (cheap: one row per run) to find train/validation siblings.
  Result<store::Stmt> all = db.Prepare("SELECT run_id, root, name FROM runs");
  if (!all.ok()) return all.status();
  std::map<int64_t, RunInfo> info;
  std::map<std::tuple<std::string, std::string, std::string>, int64_t> by_place;
  for (;;) {
    Result<bool> row = all->Step();
    if (!row.ok()) return row.status();
    if (!*row) break;
    RunInfo r{all->Int(0), all->Text(1), all->Text(2)};
    by_place[{r.root, Parent(r.name), Base(r.name)}] = r.id;
    info[r.id] = std::move(r);
  }
  std::map<int64_t, int64_t> subject;  // run -> the run it is diagnosed as
  for (const auto& [id, r] : info) {
    subject[id] = id;
    if (!IsValidationSibling(Base(r.name))) continue;
    auto train = by_place.find({r.root, Parent(r.name), "train"});
    if (train != by_place.end()) subject[id] = train->second;
  }

  // The runs to map: those asked for, through their subjects, with every run of the subject.
  std::set<int64_t> wanted_subjects;
  if (runs) {
    for (int64_t id : *runs)
      if (auto s = subject.find(id); s != subject.end()) wanted_subjects.insert(s->second);
  } else {
    for (const auto& [id, s] : subject) wanted_subjects.insert(s);
  }

  RoleMap map;
  Result<store::Stmt> series =
      db.Prepare("SELECT series_id, tag, kind = 'histogram' FROM series WHERE run_id = ? "
                 "AND kind IN ('scalar', 'histogram') ORDER BY tag");
  if (!series.ok()) return series.status();
  Result<store::Stmt> values = db.Prepare(
      "SELECT CASE value_class WHEN 0 THEN value WHEN 2 THEN 9e999 WHEN 3 THEN -9e999 END "
      "FROM scalars WHERE series_id = ? AND superseded = 0 ORDER BY step LIMIT " +
      std::to_string(kShapePoints));
  if (!values.ok()) return values.status();
  Result<store::Stmt> two = db.Prepare(
      "SELECT count(*) FROM (SELECT 1 FROM scalars WHERE series_id = ? AND superseded = 0 LIMIT 2)");
  if (!two.ok()) return two.status();
  auto single = [&](int64_t series_id) -> Result<bool> {
    two->Reset();
    two->Bind(1, series_id);
    Result<bool> r = two->Step();
    if (!r.ok()) return r.status();
    return two->Int(0) < 2;
  };
  for (const auto& [id, s] : subject) {
    if (!wanted_subjects.count(s)) continue;
    map.subject_of.emplace_back(id, s);
    if (id == s) map.subjects.push_back(id);
  }
  for (int64_t subj : map.subjects) {
    std::map<std::string, Candidate> best;  // single roles
    std::vector<Candidate> multi;
    size_t order = 0;
    auto offer = [&](Candidate c) {
      if (IsMultiRole(c.a.role)) {
        multi.push_back(std::move(c));
        return;
      }
      auto it = best.find(c.a.role);
      if (it == best.end() || c.Beats(it->second)) best[c.a.role] = std::move(c);
    };
    for (const auto& [member, s] : map.subject_of) {
      if (s != subj) continue;
      const RunInfo& run = info[member];
      const bool sibling = member != subj;
      series->Reset();
      series->Bind(1, member);
      for (;;) {
        Result<bool> row = series->Step();
        if (!row.ok()) return row.status();
        if (!*row) break;
        const int64_t series_id = series->Int(0);
        const std::string tag = series->Text(1);
        // A histogram plays only histogram roles, a scalar only the others.
        const bool histogram = series->Int(2) != 0;
        RoleAssignment base;
        base.run_id = subj;
        base.run = info[subj].name;
        base.series_id = series_id;
        base.tag = tag;
        base.source_run_id = member;
        if (sibling) base.label = Base(run.name) + "/" + tag;
        ++order;
        bool named = false;
        for (size_t i = 0; i < patterns.size(); ++i) {
          const RolePattern& p = patterns[i];
          if (!p.run_glob.empty() && !GlobMatch(p.run_glob, run.name)) continue;
          if (p.role != "ignore" && IsHistogramRole(p.role) != histogram) continue;
          if (!GlobMatch(p.tag_glob, tag)) continue;
          named = true;  // a tag takes the first pattern that matches it
          const std::string role = sibling && p.run_glob.empty() ? RoleFromSibling(p.role) : p.role;
          if (role.empty() || role == "ignore") break;
          Candidate c{false, i, order, base};
          if (!histogram) {
            Result<bool> one = single(series_id);
            if (!one.ok()) return one.status();
            c.single = *one;
          }
          c.a.role = role;
          c.a.direction = RoleDirection(role);
          c.a.why = "'" + p.tag_glob + "'" + (p.run_glob.empty() ? "" : " in runs '" + p.run_glob + "'") +
                    " (" + p.why + ")" + (role != p.role ? ", in the validation sibling" : "");
          offer(std::move(c));
          break;
        }
        if (named) continue;
        if (histogram) {
          for (RoleGuess& g : GuessHistogramRoles(tag)) {
            Candidate c{true, 0, order, base};
            c.a.role = g.role;
            c.a.confidence = g.confidence;
            c.a.why = "inferred from the name: " + g.why + "; a histogram; confidence " + Percent(g.confidence);
            offer(std::move(c));
          }
          continue;
        }
        std::vector<RoleGuess> guesses = GuessRoles(tag, sibling);
        if (guesses.empty()) continue;
        std::vector<double> v;
        values->Reset();
        values->Bind(1, series_id);
        for (;;) {
          Result<bool> r = values->Step();
          if (!r.ok()) return r.status();
          if (!*r) break;
          v.push_back(values->IsNull(0) ? std::nan("") : values->Real(0));
        }
        const SeriesShape shape = MeasureShape(v);
        for (RoleGuess& g : guesses) {
          if (!ShapeObjection(g.role, shape).empty()) continue;
          Candidate c{true, 0, order, base};
          c.single = v.size() < 2;
          c.a.role = g.role;
          c.a.confidence = g.confidence;
          c.a.direction = RoleDirection(g.role);
          c.a.why = "inferred from the name: " + g.why + "; its values fit (" +
                    std::to_string(shape.finite) + " finite of " + std::to_string(shape.points) +
                    " points read); confidence " + Percent(g.confidence);
          offer(std::move(c));
        }
      }
    }
    for (auto& [role, c] : best) map.assignments.push_back(std::move(c.a));
    for (auto& c : multi) map.assignments.push_back(std::move(c.a));
  }
  return map;
}

const std::vector<RunFactView>& RunFactViews() {
  static const std::vector<RunFactView> views = {
      {"run_classes", "a class count or vocabulary size in its hyperparameters (num_classes, num_labels, "
                      "n_classes, vocab_size, ...)"},
      {"run_planned_steps", "a planned step count in its hyperparameters (max_steps, total_steps, train_iters, ...)"},
  };
  return views;
}

Status WriteRoleTable(store::Db& db, const RoleMap& map) {
  TW_RETURN_IF_ERROR(db.Exec(
      "CREATE TEMP TABLE IF NOT EXISTS run_roles(run_id INTEGER NOT NULL, role TEXT NOT NULL, "
      "series_id INTEGER NOT NULL, tag TEXT NOT NULL, source_run_id INTEGER NOT NULL, "
      "why TEXT NOT NULL, confidence REAL NOT NULL DEFAULT 1, direction INTEGER NOT NULL DEFAULT 0, "
      "label TEXT NOT NULL DEFAULT '', PRIMARY KEY (run_id, role, series_id));"
      "CREATE TEMP VIEW IF NOT EXISTS role_points AS "
      "SELECT r.run_id, r.role, r.series_id, CASE r.label WHEN '' THEN r.tag ELSE r.label END AS tag, "
      "p.step, p.wall_time, p.value, p.value_class, "
      "r.direction "
      "FROM temp.run_roles r JOIN main.scalars p ON p.series_id = r.series_id "
      "WHERE p.superseded = 0;"
      // One evaluation per step of each validation series: a callback registered twice
      // (Ultralytics) writes each value several times at a step, which is neither several
      // evaluations nor evidence of no noise. Grouped by run first, so that a rule's run_id
      // filter reaches inside.
      // The live points of histogram roles (ternary_weights), as role_points is for scalars.
      "CREATE TEMP VIEW IF NOT EXISTS role_histograms AS "
      "SELECT r.run_id, r.role, r.series_id, CASE r.label WHEN '' THEN r.tag ELSE r.label END AS tag, "
      "h.step, h.wall_time, h.count, h.min, h.max, h.buckets "
      "FROM temp.run_roles r JOIN main.histograms h ON h.series_id = r.series_id "
      "WHERE h.superseded = 0;"
      "CREATE TEMP VIEW IF NOT EXISTS val_evals AS "
      "SELECT run_id, role, series_id, tag, direction, step, max(value) AS value FROM role_points "
      "WHERE role IN ('val_loss', 'val_acc', 'val_metric') AND value_class = 0 "
      "GROUP BY run_id, series_id, step;"
      // The runs whose hyperparameters are a run's: itself, its child runs (PyTorch's
      // add_hparams writes into a subdirectory; child names lie between 'NAME/' and 'NAME0', a
      // range of the (root, name) index), and the runs its roles' series come from (a Keras
      // validation sibling). UNION ALL, so that a rule's run_id filter reaches every arm.
      "CREATE TEMP VIEW IF NOT EXISTS run_family AS "
      "SELECT run_id, run_id AS member FROM main.runs "
      "UNION ALL SELECT r.run_id, m.run_id FROM main.runs r JOIN main.runs m ON m.root = r.root "
      "  AND m.name >= CASE r.name WHEN '.' THEN '' ELSE r.name || '/' END "
      "  AND m.name < CASE r.name WHEN '.' THEN char(127) ELSE r.name || '0' END AND m.run_id != r.run_id "
      "UNION ALL SELECT run_id, source_run_id FROM temp.run_roles WHERE source_run_id != run_id;"
      // The number of steps a run's hyperparameters plan (HF max_steps, Megatron train_iters, ...).
      "CREATE TEMP VIEW IF NOT EXISTS run_planned_steps AS "
      "SELECT f.run_id, max(h.value_num) AS steps FROM run_family f JOIN main.hparams h ON h.run_id = f.member "
      "WHERE h.value_type = 'number' AND h.value_num > 0 AND lower(h.key) IN " + std::string(kPlannedStepKeys) +
      " GROUP BY f.run_id;"
      // The class counts (or vocabulary sizes) a run's hyperparameters name: K for a
      // classifier's chance level ln K. Integers of 2 or more under the usual keys, bare or as
      // the last part of a nested W&B/HF config key.
      "CREATE TEMP VIEW IF NOT EXISTS run_classes AS "
      "SELECT DISTINCT f.run_id, CAST(h.value_num AS INTEGER) AS k, lower(h.key) AS key "
      "FROM run_family f JOIN main.hparams h ON h.run_id = f.member "
      "WHERE h.value_type = 'number' AND h.value_num >= 2 AND h.value_num = CAST(h.value_num AS INTEGER) "
      "  AND (lower(h.key) IN ('num_labels', 'num_classes', 'n_classes', 'nclasses', 'nb_classes', 'num_class', "
      "       'n_class', 'class_num', 'classes', 'n_labels', 'vocab_size', 'n_vocab', 'tgt_vocab_size', "
      "       'output_classes') "
      "    OR lower(h.key) LIKE '%.num_labels' OR lower(h.key) LIKE '%.num_classes' "
      "    OR lower(h.key) LIKE '%.n_classes' OR lower(h.key) LIKE '%.vocab_size');"
      // The RL runs whose episode return is still climbing at the end (its last tenth above its
      // first, and in its best quarter): their value and TD losses grow with the returns they
      // predict, which the loss rules must not call divergence or unrecovered spikes.
      "CREATE TEMP VIEW IF NOT EXISTS run_returns_rising AS "
      "SELECT DISTINCT run_id FROM (SELECT run_id, count(*) AS pts, tw_ends(step, value) AS ends, "
      "  tw_quantile(value, 0.75) AS q75 "
      "  FROM role_points WHERE role = 'reward' AND value_class = 0 GROUP BY series_id) "
      "WHERE pts >= 10 AND json_extract(ends, '$.end') > json_extract(ends, '$.start') "
      "  AND json_extract(ends, '$.end') >= q75;"));
  TW_RETURN_IF_ERROR(db.Exec("BEGIN"));
  Result<store::Stmt> del = db.Prepare("DELETE FROM temp.run_roles WHERE run_id = ?");
  Result<store::Stmt> ins = db.Prepare("INSERT OR REPLACE INTO temp.run_roles VALUES (?,?,?,?,?,?,?,?,?)");
  Status st = !del.ok() ? del.status() : ins.status();
  for (size_t i = 0; st.ok() && i < map.subjects.size(); ++i)
    st = del->Bind(1, map.subjects[i]).Run();
  for (size_t i = 0; st.ok() && i < map.assignments.size(); ++i) {
    const RoleAssignment& a = map.assignments[i];
    st = ins->Bind(1, a.run_id).Bind(2, a.role).Bind(3, a.series_id).Bind(4, a.tag)
             .Bind(5, a.source_run_id).Bind(6, a.why).Bind(7, a.confidence).Bind(8, static_cast<int64_t>(a.direction))
             .Bind(9, a.label).Run();
  }
  if (!st.ok()) {
    (void)db.Exec("ROLLBACK");
    return st;
  }
  return db.Exec("COMMIT");
}

}  // namespace tw::diagnose
