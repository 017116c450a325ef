// The summary of a run event: what a person wants to know in ten seconds when a run ends
// (duration, steps, training loss, the checkpoint to keep, the verdict, its findings, how it
// ended), as text for every channel and as numbers for webhooks.
#include <algorithm>
#include <set>

#include "base/json.h"
#include "diagnose/lifecycle_facts.h"

namespace tw::diagnose {

namespace {

// Firing findings that are about the process rather than what it learned: a run that finished
// is not stale (stale_run skips runs with a recorded finish, so it resolves). Every other
// finding describes the curves the run left, which its end does not change: it stays.
const std::set<std::string>& EndsWithTheRun() {
  static const std::set<std::string> rules = {"stale_run"};
  return rules;
}

struct Best {
  double value = 0;
  int64_t step = 0;
};

// The best finite value of a series (lowest when `lower`), earliest on ties.
Result<std::optional<Best>> BestOf(store::Db& db, int64_t series, bool lower) {
  Result<store::Stmt> q = db.Prepare(std::string("SELECT value, step FROM scalars WHERE series_id = ? AND superseded = 0 "
                                                 "AND value_class = 0 ORDER BY value ") +
                                     (lower ? "ASC" : "DESC") + ", step LIMIT 1");
  if (!q.ok()) return q.status();
  q->Bind(1, series);
  Result<bool> r = q->Step();
  if (!r.ok()) return r.status();
  if (!*r) return std::optional<Best>();
  return std::optional<Best>(Best{q->Real(0), q->Int(1)});
}

std::string Steps(int64_t s) {
  // 12000 -> "12,000"
  std::string digits = std::to_string(s < 0 ? -s : s), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return (s < 0 ? "-" : "") + out;
}

const char* ClassWord(int c) { return c == 1 ? "NaN" : c == 2 ? "+Inf" : c == 3 ? "-Inf" : ""; }

}  // namespace

Status Summarize(store::Db& db, const RunFacts& f, RunEvent* e, double now) {
  const bool end = e->kind == "finished" || e->kind == "crashed";
  Json summary, fields;
  const int64_t first_step = f.first_step.value_or(0), last_step = f.last_step.value_or(0);
  const double duration = f.last_wall - f.first_wall;
  summary.Str("how", e->how).Num("first_wall", f.first_wall).Num("last_wall", f.last_wall)
      .Num("duration_seconds", duration).Num("first_step", static_cast<double>(first_step))
      .Num("last_step", static_cast<double>(last_step));
  if (f.planned_steps) summary.Num("planned_steps", *f.planned_steps);

  if (e->kind == "started") {
    e->title = "Run started";
    e->message = f.run + " started: first point at step " + Steps(first_step) + ", " +
                 DurationWords(now - f.first_wall) + " ago; its training loss is " + f.loss_tag + ".";
    fields.Str("first step", Steps(first_step)).Str("training loss", f.loss_tag);
    e->summary = summary.str();
    e->fields = fields.str();
    return Status::Ok();
  }
  if (e->kind == "resumed") {
    e->title = "Run resumed";
    e->message = f.run + " resumed: " + e->how + ". It has reached step " + Steps(last_step) + " since.";
    fields.Str("resumed", e->how).Str("last step", Steps(last_step));
    e->summary = summary.str();
    e->fields = fields.str();
    return Status::Ok();
  }
  if (!end) return InvalidArgument("unknown run event " + e->kind);

  // The training loss: where it ended and its best.
  Result<std::optional<Best>> best_loss = BestOf(db, f.loss_series, true);
  if (!best_loss.ok()) return best_loss.status();
  // Its last point, as the facts read it.
  const double final_loss = f.loss_last_value;
  const int final_class = f.loss_last_class;
  const std::string final_text = final_class ? ClassWord(final_class) : Number(final_loss);
  Json loss;
  loss.Str("tag", f.loss_tag);
  if (final_class) loss.Str("final", ClassWord(final_class));
  else loss.Num("final", final_loss);
  if (*best_loss) loss.Num("best", (*best_loss)->value).Num("best_step", static_cast<double>((*best_loss)->step));
  summary.Nested("train_loss", loss);

  // The best validation value, and so the checkpoint to keep: a validation loss first, else a
  // validation metric or accuracy, each the way its role says is better.
  std::string val_tag, val_role;
  std::optional<Best> best_val;
  {
    Result<store::Stmt> q = db.Prepare(
        "SELECT role, tag, direction, series_id FROM temp.run_roles WHERE run_id = ? "
        "AND role IN ('val_loss', 'val_metric', 'val_acc') "
        "ORDER BY CASE role WHEN 'val_loss' THEN 0 WHEN 'val_metric' THEN 1 ELSE 2 END, confidence DESC LIMIT 1");
    if (!q.ok()) return q.status();
    q->Bind(1, f.run_id);
    Result<bool> r = q->Step();
    if (!r.ok()) return r.status();
    if (*r) {
      val_role = q->Text(0);
      val_tag = q->Text(1);
      const bool lower = val_role == "val_loss" || q->Int(2) < 0;
      const int64_t series = q->Int(3);
      q->Reset();
      Result<std::optional<Best>> b = BestOf(db, series, lower);
      if (!b.ok()) return b.status();
      best_val = *b;
    }
  }
  if (best_val) {
    Json v;
    v.Str("role", val_role).Str("tag", val_tag).Num("value", best_val->value).Num("step", static_cast<double>(best_val->step));
    summary.Nested("best_val", v);
  }

  // The verdict (run_verdict's finding while it fires, else healthy) and the findings it had.
  std::string verdict = "healthy", verdict_why;
  Json findings = Json::Array();
  std::string stays, resolves, earlier;
  {
    Result<store::Stmt> q = db.Prepare(
        "SELECT rule, severity, state, message, json_extract(CASE WHEN json_valid(evidence) THEN evidence END, '$.verdict') "
        "FROM findings WHERE run_id = ? AND state IN ('firing', 'resolved') "
        "ORDER BY state = 'resolved', CASE severity WHEN 'critical' THEN 0 WHEN 'warning' THEN 1 ELSE 2 END, rule");
    if (!q.ok()) return q.status();
    q->Bind(1, f.run_id);
    TW_RETURN_IF_ERROR(q->EachRow([&] {
      const std::string rule = q->Text(0), sev = q->Text(1), state = q->Text(2);
      if (rule == "run_verdict") {
        if (state == "firing" && !q->IsNull(4)) {
          verdict = q->Text(4);
          verdict_why = q->Text(3);
        }
        return;
      }
      Json one;
      one.Str("rule", rule).Str("severity", sev).Str("state", state);
      const std::string name = rule + " (" + sev + ")";
      if (state == "resolved") {
        one.Str("at_end", "resolved before the end");
        earlier += (earlier.empty() ? "" : ", ") + name;
      } else if (e->kind == "finished" && EndsWithTheRun().count(rule)) {
        one.Str("at_end", "resolves: the run finished");
        resolves += (resolves.empty() ? "" : ", ") + name;
      } else {
        one.Str("at_end", "stays firing: it describes the curves the run left");
        stays += (stays.empty() ? "" : ", ") + name;
      }
      findings.Push(one);
    }));
  }
  summary.Str("verdict", verdict).Nested("findings", findings);
  if (f.exit_code) summary.Num("exit_code", static_cast<double>(*f.exit_code));
  Json last;
  last.Str("tag", f.last_tag).Num("step", static_cast<double>(f.last_tag_step)).Num("wall_time", f.last_wall);
  if (f.last_class) last.Str("value", ClassWord(f.last_class));
  else last.Num("value", f.last_value);
  summary.Nested("last_written", last);

  // The words.
  const bool crashed = e->kind == "crashed";
  e->title = crashed ? "Run crashed" : "Run finished";
  std::string m = f.run + (crashed ? " crashed at step " + Steps(last_step) + " after " : " finished after ") +
                  DurationWords(duration) + (crashed ? "" : ", steps " + Steps(first_step) + "–" + Steps(last_step)) +
                  ". Training loss " + final_text + " at the end";
  if (*best_loss) m += ", best " + Number((*best_loss)->value) + " at step " + Steps((*best_loss)->step);
  m += ".";
  if (best_val) m += " Best " + val_tag + ": " + Number(best_val->value) + " at step " + Steps(best_val->step) + ".";
  m += " Verdict: " + verdict + (verdict_why.empty() || verdict == "healthy" ? "" : " (" + verdict_why + ")") + ".";
  e->message = m;
  std::string advice;
  if (best_val)
    advice = "Keep the checkpoint of step " + Steps(best_val->step) + " (best " + val_tag + ", " +
             Number(best_val->value) + ").";
  else
    advice = "No validation series: the last checkpoint is the one to keep.";
  if (crashed) advice += " Resume from the last checkpoint before step " + Steps(last_step) + " once the cause is fixed.";
  if (!stays.empty()) advice += " Still firing, and staying so (they describe the curves the run left): " + stays + ".";
  if (!resolves.empty()) advice += " Resolving, the run having finished: " + resolves + ".";
  if (!earlier.empty()) advice += " Resolved before the end: " + earlier + ".";
  e->advice = advice;

  fields.Str("duration", DurationWords(duration)).Str("steps", Steps(first_step) + "–" + Steps(last_step));
  fields.Str("training loss", final_text + " final" +
                                  (*best_loss ? ", " + Number((*best_loss)->value) + " best (step " +
                                                    Steps((*best_loss)->step) + ")"
                                              : ""));
  if (best_val) fields.Str("checkpoint to keep", "step " + Steps(best_val->step) + " (" + val_tag + " " + Number(best_val->value) + ")");
  fields.Str("verdict", verdict);
  if (f.exit_code) fields.Str("exit code", std::to_string(*f.exit_code));
  fields.Str("last written", f.last_tag + " = " + (f.last_class ? ClassWord(f.last_class) : Number(f.last_value)) +
                                 " at step " + Steps(f.last_tag_step) + ", " + DurationWords(now - f.last_wall) + " ago");
  fields.Str("how it ended", e->how);
  e->summary = summary.str();
  e->fields = fields.str();
  return Status::Ok();
}

}  // namespace tw::diagnose
