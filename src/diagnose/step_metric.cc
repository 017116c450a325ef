#include "diagnose/step_metric.h"

#include "base/json.h"

namespace tw::diagnose {

Result<StepMetrics> StepMetrics::Prepare(store::Db& db) {
  StepMetrics m;
  Result<store::Stmt> version = db.Prepare("PRAGMA user_version");
  if (!version.ok()) return version.status();
  Result<bool> row = version->Step();
  if (!row.ok()) return row.status();
  if (!*row || version->Int(0) < 8) return m;
  // The series' step metric and the metric's own scalar series in the same run.
  Result<store::Stmt> metric = db.Prepare(
      "SELECT s.step_metric, m.series_id FROM series s JOIN series m ON m.run_id = s.run_id "
      "AND m.tag = s.step_metric AND m.kind = 'scalar' WHERE s.series_id = ?1 AND s.step_metric != ''");
  if (!metric.ok()) return metric.status();
  // Its value at a step: the last live, finite point at or before it (it may be logged less often).
  Result<store::Stmt> value = db.Prepare(
      "SELECT value FROM scalars WHERE series_id = ?1 AND step <= ?2 AND superseded = 0 "
      "AND value_class = 0 ORDER BY step DESC LIMIT 1");
  if (!value.ok()) return value.status();
  // The fields go into the evidence by SQLite's JSON merge, not by editing its text.
  Result<store::Stmt> patch = db.Prepare("SELECT json_patch(?1, ?2)");
  if (!patch.ok()) return patch.status();
  m.metric_ = std::move(*metric);
  m.value_ = std::move(*value);
  m.patch_ = std::move(*patch);
  return m;
}

Status StepMetrics::Annotate(Observation* o) {
  if (!metric_.raw() || o->series_id == 0) return Status::Ok();
  metric_.Reset();
  metric_.Bind(1, o->series_id);
  Result<bool> row = metric_.Step();
  if (!row.ok()) return row.status();
  if (!*row) return Status::Ok();
  const std::string name = metric_.Text(0);
  const int64_t series = metric_.Int(1);
  metric_.Reset();

  Json fields;
  fields.Str("step_metric", name);
  std::string clause;
  struct {
    const char* key;
    const std::optional<int64_t>& step;
    const char* where;
  } const at[] = {{"step_metric_onset", o->onset_step, "the onset"},
                  {"step_metric_first", o->first_step, "the first step"},
                  {"step_metric_last", o->last_step, "the last step"}};
  bool any = false;
  for (const auto& a : at) {
    if (!a.step) continue;
    value_.Reset();
    value_.Bind(1, series).Bind(2, *a.step);
    Result<bool> v = value_.Step();
    if (!v.ok()) return v.status();
    if (*v) {
      const double x = value_.Real(0);
      fields.Num(a.key, x);
      any = true;
      // One clause is enough for a reader: the onset where there is one, else the first found.
      if (clause.empty()) clause = " (" + name + " " + JsonNumber(x) + " at " + a.where + ")";
    }
    value_.Reset();
  }
  if (!any) return Status::Ok();  // the metric has no point yet at these steps
  patch_.Reset();
  patch_.Bind(1, o->evidence).Bind(2, fields.str());
  Result<bool> merged = patch_.Step();  // fails on evidence that is no JSON: left as it is
  if (merged.ok() && *merged && !patch_.IsNull(0)) o->evidence = patch_.Text(0);
  patch_.Reset();
  o->message += clause;
  return Status::Ok();
}

}  // namespace tw::diagnose
