#include "support/real_labels.h"

#include <algorithm>
#include <fstream>
#include <memory>
#include <set>
#include <sstream>

#include "store/db.h"

namespace tw::testing {

std::optional<int64_t> RealLabel::OnsetOf(const std::string& rule) const {
  if (auto it = onsets.find(rule); it != onsets.end()) return it->second;
  if (!expect.empty() && expect.front() == rule) return onset;
  return std::nullopt;
}

Result<std::vector<RealLabel>> ReadRealLabels(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound("cannot read " + path);
  std::stringstream buf;
  buf << in.rdbuf();
  const std::string text = buf.str();
  Result<std::unique_ptr<store::Db>> db = store::Db::Open(":memory:", store::Db::Mode::kReadWrite);
  if (!db.ok()) return db.status();
  // Runs each query over the file's text, calling `row` for each row.
  auto each = [&](const std::string& sql, auto&& row) -> Status {
    Result<store::Stmt> q = (*db)->Prepare(sql);
    if (!q.ok()) return InvalidArgument(path + ": " + q.status().message());
    q->Bind(1, text);
    for (;;) {
      Result<bool> r = q->Step();
      if (!r.ok()) return InvalidArgument(path + ": " + r.status().message());
      if (!*r) return Status::Ok();
      row(*q);
    }
  };
  std::map<std::string, RealLabel> by;
  std::vector<std::string> order;
  TW_RETURN_IF_ERROR(each(
      "SELECT r.key, ifnull(json_extract(r.value, '$.root'), ''), json_extract(r.value, '$.onset_step'), "
      "ifnull(json_extract(r.value, '$.at_chance'), 0), ifnull(json_extract(r.value, '$.notes'), ''), "
      "ifnull(json_extract(r.value, '$.cause'), '') FROM json_each(?1) r WHERE r.type = 'object' ORDER BY r.key",
      [&](store::Stmt& q) {
        RealLabel& l = by[q.Text(0)];
        l.run = q.Text(0);
        l.root = q.Text(1);
        if (!q.IsNull(2)) l.onset = q.Int(2);
        l.at_chance = q.Int(3) != 0;
        l.notes = q.Text(4);
        l.cause = q.Text(5);
        order.push_back(l.run);
      }));
  for (const std::string what : {"expect", "weak", "expect_not"}) {
    TW_RETURN_IF_ERROR(each("SELECT r.key, e.value FROM json_each(?1) r, json_each(r.value, '$." + what +
                                "') e WHERE r.type = 'object' ORDER BY r.key, e.key",
                            [&](store::Stmt& q) {
                              RealLabel& l = by[q.Text(0)];
                              (what == "weak" ? l.weak : what == "expect_not" ? l.expect_not : l.expect)
                                  .push_back(q.Text(1));
                            }));
  }
  TW_RETURN_IF_ERROR(each(
      "SELECT r.key, e.key, e.value FROM json_each(?1) r, json_each(r.value, '$.onsets') e WHERE r.type = 'object'",
      [&](store::Stmt& q) { by[q.Text(0)].onsets[q.Text(1)] = q.Int(2); }));
  std::vector<RealLabel> out;
  for (const std::string& run : order) out.push_back(by[run]);
  return out;
}

const std::vector<RuleFamily>& RuleFamilies() {
  static const std::vector<RuleFamily> f = {
      {"non_finite", {"non_finite_loss"}},
      {"divergence", {"loss_divergence"}},
      {"spikes", {"loss_spikes"}},
      {"stuck", {"loss_at_chance", "loss_constant", "loss_plateau"}},
      {"oscillation", {"loss_oscillation"}},
      {"validation", {"overfitting", "val_stall", "val_constant"}},
      {"lr_schedule", {"lr_schedule_misaligned"}},
      {"epoch_boundary", {"epoch_boundary_jumps"}},
      {"gradients", {"grad_explosion", "grad_vanishing", "grad_clip_saturation", "layer_grad_imbalance"}},
      {"resources", {"step_time_creep", "memory_growth"}},
      {"stale", {"stale_run"}},
      {"val_gap", {"val_worse_from_start"}},  // issue 18 part 3
      {"loss_acc", {"loss_acc_disagree"}},    // issue 18 part 3
      {"mixed_precision", {"loss_scale_collapse", "fp16_overflow_steps"}},  // issue 18 part 3
      {"initial_loss", {"initial_loss_high"}},       // issue 18 part 3
      {"activations", {"dead_relu", "activation_saturation", "attention_entropy_collapse"}},  // issue 18 part 3
      {"quantization", {"qat_gap_widening", "ternary_weight_collapse"}},                      // issue 18 part 3
      {"grokking", {"grokking"}},                               // not in the list
      {"weights", {"weight_norm_runaway", "update_ratio_off"}},  // not in the list
  };
  return f;
}

std::string FamilyOf(const std::string& rule) {
  for (const RuleFamily& f : RuleFamilies())
    if (std::find(f.rules.begin(), f.rules.end(), rule) != f.rules.end()) return f.name;
  return rule;
}

std::vector<std::string> LabelGaps(const RealLabel& label, const std::vector<FiredRule>& fired) {
  std::set<std::string> gaps;
  for (const std::string& rule : label.expect) {
    const std::string family = FamilyOf(rule);
    if (std::none_of(fired.begin(), fired.end(), [&](const FiredRule& f) { return FamilyOf(f.rule) == family; }))
      gaps.insert("miss " + family);
  }
  if (label.expect.empty()) {
    std::set<std::string> weak;
    for (const std::string& rule : label.weak) weak.insert(FamilyOf(rule));
    for (const FiredRule& f : fired)
      if (f.loud && !weak.count(FamilyOf(f.rule))) gaps.insert("alarm " + f.rule);
  }
  return {gaps.begin(), gaps.end()};
}

}  // namespace tw::testing
