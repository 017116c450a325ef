#include "diagnose/engine.h"

#include <sqlite3.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>

#include "base/json.h"
#include "diagnose/sql_functions.h"
#include "diagnose/step_metric.h"
#include "diagnose/verdict.h"
#include "store/store.h"

namespace tw::diagnose {

namespace {

// The columns a rule's rows may carry, by name.
enum Col { kSeriesId, kRunId, kSeverity, kOnset, kFirst, kLast, kMessage, kEvidence, kCause, kFix, kNumCols };
const char* const kColNames[kNumCols] = {"series_id", "run_id", "severity", "onset_step", "first_step",
                                         "last_step", "message", "evidence", "cause", "fix"};

std::optional<int64_t> OptInt(store::Stmt& s, int col) {
  if (col < 0 || s.IsNull(col)) return std::nullopt;
  return static_cast<int64_t>(std::llround(s.Real(col)));
}

// Config that names a rule or parameter that does not exist is a typo worth reporting.
std::vector<std::string> ConfigErrorsFor(const EngineOptions& options, const std::vector<Rule>& all) {
  std::vector<std::string> errors;
  for (const auto& id : options.disabled)
    if (id != kRunVerdictId && std::none_of(all.begin(), all.end(), [&](const Rule& r) { return r.id == id; }))
      errors.push_back("config: [rules] disabled: no rule has the id '" + id + "'");
  for (const auto& [id, params] : options.params) {
    auto found = std::find_if(all.begin(), all.end(), [&](const Rule& r) { return r.id == id; });
    // run_verdict is no SQL rule, but config may name it like one (it has no parameters).
    const Rule* rule = found != all.end() ? &*found : id == kRunVerdictId ? &RunVerdictRule() : nullptr;
    if (!rule) {
      errors.push_back("config: [rules." + id + "]: no rule has this id");
      continue;
    }
    for (const auto& [name, v] : params)
      if (std::none_of(rule->params.begin(), rule->params.end(),
                       [&](const RuleParam& p) { return p.name == name; }))
        errors.push_back("config: [rules." + id + "]: rule " + id + " has no parameter '" + name + "'");
  }
  for (const Alert& a : options.alerts) {
    auto same = std::find_if(all.begin(), all.end(), [&](const Rule& r) { return r.id == a.name; });
    if (same != all.end() && !same->alert)
      errors.push_back("config: " + a.file + ":" + std::to_string(a.line) + ": [[alert]] name '" + a.name +
                       "' is the id of the rule from " + same->origin + ": an alert needs a name of its own");
  }
  return errors;
}

// A rule's failure `st` on `where` ("run 'NAME'", "every run"): a limit it went over (`st`
// says which and how far it got), or an error.
RuleError RuleFailure(const Rule& r, RuleLimits::Hit hit, const Status& st, const std::string& where) {
  if (hit == RuleLimits::Hit::kNone) return {r.id, "", r.origin + ": " + where + ": " + st.message()};
  return {r.id, hit == RuleLimits::Hit::kTime ? "time" : "memory",
          r.Where() + ": rule " + r.id + " went over " + st.message() + " on " + where +
              "; benched (the other rules ran), tried again after a pause that doubles each "
              "time it goes over, from a minute up to an hour"};
}

std::string Fmt(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

}  // namespace

std::vector<Rule> AllRules(const EngineOptions& options, std::vector<std::string>* errors) {
  std::vector<Rule> all = LoadRules(options.rules_dir, errors);
  const size_t rules = all.size();
  for (Rule& r : AlertRules(options.alerts, errors))
    if (std::none_of(all.begin(), all.begin() + rules, [&](const Rule& x) { return x.id == r.id; }) &&
        r.id != kRunVerdictId)
      all.push_back(std::move(r));
  return all;
}

std::vector<std::string> ConfigErrors(const EngineOptions& options) {
  std::vector<std::string> rule_errors;  // broken rule files are not the config's mistake
  const std::vector<Rule> all = AllRules(options, &rule_errors);
  std::vector<std::string> errors = ConfigErrorsFor(options, all);
  // An alert whose generated rule does not parse is: say so (AlertRule names its file:line).
  for (const Alert& a : options.alerts)
    if (Result<Rule> r = AlertRule(a); !r.ok()) errors.push_back("config: " + r.status().message());
  for (const Alert& a : options.alerts)
    if (a.name == kRunVerdictId)
      errors.push_back("config: " + a.file + ":" + std::to_string(a.line) + ": [[alert]] name '" + a.name +
                       "' is reserved (the verdict the engine computes)");
  return errors;
}

struct Engine::Prepared {
  const Rule* rule = nullptr;
  store::Stmt stmt;
  int col[kNumCols];
  // Bind index -> value for declared params; run_id/now indexes (0: not used).
  std::vector<std::pair<int, double>> param_binds;
  int run_id_index = 0, now_index = 0;
  // The limit it went over in the current evaluation, if any. Such a rule is benched: skipped
  // until `benched_until` (steady seconds), a pause that doubles with each `strikes`, so a rule
  // that loops costs its time limit about once an hour, not once per evaluation.
  RuleLimits::Hit over_limit = RuleLimits::Hit::kNone;
  int strikes = 0;
  double benched_until = 0;
  bool Benched(double steady_now) const { return steady_now < benched_until; }
};

Engine::~Engine() = default;

Result<std::unique_ptr<Engine>> Engine::Open(const std::string& db_path, EngineOptions options) {
  Result<std::unique_ptr<store::Db>> db = store::OpenReadOnly(db_path);
  if (!db.ok()) return db.status();
  std::unique_ptr<Engine> e(new Engine());
  e->db_ = std::move(*db);
  e->options_ = std::move(options);
  e->patterns_ = EffectiveRolePatterns(e->options_.roles);
  TW_RETURN_IF_ERROR(RegisterSqlFunctions(*e->db_));
  e->limits_ = std::make_unique<RuleLimits>(e->db_->raw(), e->options_.limits, &e->cancel_);
  TW_RETURN_IF_ERROR(WriteRoleTable(*e->db_, RoleMap{}));  // rules prepare against it
  // run_finished(run_id, last_wall): the runs recorded as finished (lifecycle.h) and their last
  // write then, for rules that must not call a finished run unfinished (stale_run). Empty on a
  // store from before version 15, which a read-only open does not migrate.
  {
    Result<store::Stmt> has = e->db_->Prepare(
        "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'run_lifecycle'");
    if (!has.ok()) return has.status();
    Result<bool> row = has->Step();
    if (!row.ok()) return row.status();
    const bool v15 = *row && has->Int(0) > 0;
    has->Reset();
    TW_RETURN_IF_ERROR(e->db_->Exec(
        v15 ? "CREATE TEMP VIEW IF NOT EXISTS run_finished AS SELECT run_id, last_wall FROM main.run_lifecycle "
              "WHERE kind = 'finished'"
            : "CREATE TEMP VIEW IF NOT EXISTS run_finished AS SELECT 0 AS run_id, 0.0 AS last_wall WHERE 0"));
  }
  struct {
    store::Stmt* stmt;
    const char* sql;
  } const fixed[] = {
      {&e->series_tag_, "SELECT tag FROM series WHERE series_id = ?"},
      {&e->run_name_, "SELECT name FROM runs WHERE run_id = ?"},
      {&e->json_valid_, "SELECT json_valid(?)"},
      // How long a condition has held: the series' last wall time minus that at the onset.
      {&e->held_,
       "SELECT (SELECT max(wall_time) FROM scalars WHERE series_id = ?1 AND superseded = 0) - "
       "(SELECT wall_time FROM scalars WHERE series_id = ?1 AND superseded = 0 AND step >= ?2 "
       " ORDER BY step LIMIT 1)"},
  };
  for (const auto& f : fixed) {
    Result<store::Stmt> st = e->db_->Prepare(f.sql);
    if (!st.ok()) return st.status();
    *f.stmt = std::move(*st);
  }
  // A forecast from L(t) = e + a t^-alpha on the training loss after its first 10%, to the
  // planned end (hparams) or twice the current step. Where the loss has a W&B step metric (HF
  // Trainer: train/global_step), the fit runs in the trainer's steps, the unit a planned
  // max_steps is in; the 8th column names that axis. A store from before series.step_metric
  // (schema 8, read without migrating) gets the fit in its own steps.
  const std::string in_metric =
      "sm AS MATERIALIZED (SELECT m.series_id AS mid, m.tag AS name FROM run_roles r "
      "  JOIN series s ON s.series_id = r.series_id JOIN series m ON m.run_id = s.run_id "
      "  AND m.tag = s.step_metric AND m.kind = 'scalar' WHERE r.run_id = ?1 "
      "  AND r.role = 'train_loss' AND s.step_metric != '' LIMIT 1), "
      "loss AS (SELECT x.value AS step, p.value FROM role_points p JOIN scalars x "
      "  ON x.series_id = (SELECT mid FROM sm) AND x.step = p.step AND x.superseded = 0 "
      "  AND x.value_class = 0 WHERE p.run_id = ?1 AND p.role = 'train_loss' AND p.value_class = 0 "
      "  UNION ALL SELECT step, value FROM role_points WHERE run_id = ?1 AND role = 'train_loss' "
      "  AND value_class = 0 AND NOT EXISTS (SELECT 1 FROM sm)), ";
  const std::string in_steps =
      "sm AS (SELECT NULL AS name), "
      "loss AS (SELECT step, value FROM role_points WHERE run_id = ?1 AND role = 'train_loss' "
      "  AND value_class = 0), ";
  const std::string fit =
      "span AS MATERIALIZED (SELECT min(step) AS lo, max(step) AS hi, count(*) AS n FROM loss), "
      "planned AS MATERIALIZED (SELECT max(steps) AS steps FROM run_planned_steps WHERE run_id = ?1), "
      "fit AS MATERIALIZED (SELECT (SELECT tw_powerlaw(step, value, COALESCE(planned.steps, 2 * span.hi)) "
      "  FROM loss WHERE step >= span.lo + 0.1 * (span.hi - span.lo)) AS j, span.n, planned.steps "
      "  FROM span, planned) "
      "SELECT n, steps, j, json_extract(j, '$.ok'), json_extract(j, '$.r2'), json_extract(j, '$.forecast'), "
      "json_extract(j, '$.target_step'), (SELECT name FROM sm) FROM fit";
  Result<store::Stmt> forecast = e->db_->Prepare("WITH " + in_metric + fit);
  if (!forecast.ok()) forecast = e->db_->Prepare("WITH " + in_steps + fit);
  if (!forecast.ok()) return forecast.status();
  e->forecast_ = std::move(*forecast);
  Result<StepMetrics> step_metrics = StepMetrics::Prepare(*e->db_);
  if (!step_metrics.ok()) return step_metrics.status();
  e->step_metrics_ = std::make_unique<StepMetrics>(std::move(*step_metrics));

  const std::vector<Rule> all = AllRules(e->options_, &e->load_errors_);
  for (const auto& r : all)
    if (!e->options_.disabled.count(r.id)) e->rules_.push_back(r);
  for (auto& err : ConfigErrorsFor(e->options_, all)) e->load_errors_.push_back(std::move(err));

  for (const Rule& r : e->rules_) {
    auto p = std::make_unique<Prepared>();
    p->rule = &r;
    sqlite3_stmt* raw = nullptr;
    const char* tail = nullptr;
    if (sqlite3_prepare_v3(e->db_->raw(), r.sql.c_str(), static_cast<int>(r.sql.size()),
                           SQLITE_PREPARE_PERSISTENT, &raw, &tail) != SQLITE_OK || !raw) {
      e->load_errors_.push_back(r.origin + ": " +
                                (raw ? std::string("no statement") : sqlite3_errmsg(e->db_->raw())));
      continue;
    }
    p->stmt = store::Stmt(e->db_->raw(), raw);
    std::string rest = tail ? tail : "";
    rest.erase(std::remove_if(rest.begin(), rest.end(), [](char c) { return std::isspace(static_cast<unsigned char>(c)) || c == ';'; }),
               rest.end());
    if (!rest.empty() && !rest.starts_with("--")) {
      e->load_errors_.push_back(r.origin + ": a rule holds one SELECT; text follows it");
      continue;
    }
    if (!sqlite3_stmt_readonly(raw)) {
      e->load_errors_.push_back(r.origin + ": a rule must only read (SELECT), not change anything");
      continue;
    }
    for (int c = 0; c < kNumCols; ++c) p->col[c] = -1;
    for (int i = 0; i < p->stmt.ColumnCount(); ++i)
      for (int c = 0; c < kNumCols; ++c)
        if (std::string_view(p->stmt.ColumnName(i)) == kColNames[c]) p->col[c] = i;
    if (p->col[kMessage] < 0) {
      e->load_errors_.push_back(r.origin + ": the SELECT has no 'message' column");
      continue;
    }
    if (r.scope_all && p->col[kRunId] < 0) {
      e->load_errors_.push_back(r.origin + ": a scope-all rule must return a 'run_id' column");
      continue;
    }
    bool ok = true;
    const auto& overrides = e->options_.params[r.id];
    for (int i = 1; i <= sqlite3_bind_parameter_count(raw); ++i) {
      const char* n = sqlite3_bind_parameter_name(raw, i);
      std::string name = n ? std::string(n + 1) : "";
      if (name == "run_id") { p->run_id_index = i; continue; }
      if (name == "now") { p->now_index = i; continue; }
      auto decl = std::find_if(r.params.begin(), r.params.end(), [&](const RuleParam& x) { return x.name == name; });
      if (decl == r.params.end()) {
        e->load_errors_.push_back(r.origin + ": parameter :" + name +
                                  " is neither :run_id, :now nor declared with '-- param'");
        ok = false;
        break;
      }
      auto o = overrides.find(name);
      p->param_binds.emplace_back(i, o != overrides.end() ? o->second : decl->default_value);
    }
    if (ok) e->prepared_.push_back(std::move(p));
  }
  return e;
}

Result<std::vector<int64_t>> Engine::ChangedRuns() {
  Result<store::Stmt> q = db_->Prepare(
      "SELECT run_id, total(committed_offset) + total(size_seen), count(*) FROM sources GROUP BY run_id");
  if (!q.ok()) return q.status();
  std::vector<int64_t> changed;
  for (;;) {
    Result<bool> row = q->Step();
    if (!row.ok()) return row.status();
    if (!*row) break;
    const int64_t run = q->Int(0);
    const std::pair<int64_t, int64_t> mark{static_cast<int64_t>(q->Real(1)), q->Int(2)};
    auto it = last_change_.find(run);
    if (it == last_change_.end() || it->second != mark) {
      changed.push_back(run);
      last_change_[run] = mark;
    }
  }
  return changed;
}

Result<std::map<std::string, int64_t>> Engine::AlertMatches() {
  std::map<std::string, int64_t> out;
  for (const Alert& a : options_.alerts) {
    Result<store::Stmt> q = db_->Prepare(AlertMatchCountSql(a));
    if (!q.ok()) return q.status();
    Result<bool> row = q->Step();
    if (!row.ok()) return row.status();
    out[a.name] = *row ? q->Int(0) : 0;
  }
  return out;
}

Result<RoleMap> Engine::Roles(const std::vector<int64_t>* runs) {
  return AssignRoles(*db_, patterns_, runs);
}

Status Engine::Finish(Observation* o, const Rule& r) {
  if (o->series_id != 0) {
    series_tag_.Reset();
    series_tag_.Bind(1, o->series_id);
    Result<bool> row = series_tag_.Step();
    if (!row.ok()) return row.status();
    if (*row) o->series = series_tag_.Text(0);
    series_tag_.Reset();
    TW_RETURN_IF_ERROR(step_metrics_->Annotate(o));
  }
  if (r.for_seconds > 0 && o->onset_step && o->series_id != 0) {
    held_.Reset();
    held_.Bind(1, o->series_id).Bind(2, *o->onset_step);
    Result<bool> row = held_.Step();
    if (!row.ok()) return row.status();
    o->held_seconds = *row && !held_.IsNull(0) ? held_.Real(0) : 0;
    o->pending = o->held_seconds < r.for_seconds;
    held_.Reset();
  }
  return Status::Ok();
}

std::string Engine::RunName(int64_t run_id) {
  run_name_.Reset();
  run_name_.Bind(1, run_id);
  Result<bool> row = run_name_.Step();
  std::string name = row.ok() && *row ? run_name_.Text(0) : "";
  run_name_.Reset();
  return name;
}

Status Engine::RunRule(Prepared& p, std::optional<int64_t> run_id, double now, Evaluation* ev) {
  // sqlite3_interrupt reaches only a statement already running: one asked between two rules
  // is seen here.
  if (Stopping()) return Stopped();
  const auto t0 = std::chrono::steady_clock::now();
  struct Timer {
    const std::chrono::steady_clock::time_point t0;
    double& total;
    ~Timer() { total += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); }
  } timer{t0, ev->rule_seconds[p.rule->id]};
  store::Stmt& s = p.stmt;
  s.Reset();
  sqlite3_clear_bindings(s.raw());
  if (p.run_id_index) {
    if (run_id) s.Bind(p.run_id_index, *run_id);
    else s.BindNull(p.run_id_index);
  }
  if (p.now_index) s.Bind(p.now_index, now);
  for (const auto& [i, v] : p.param_binds) s.Bind(i, v);
  const Rule& r = *p.rule;
  struct Limited {  // the limits apply while the rule's own statement steps
    RuleLimits& limits;
    explicit Limited(RuleLimits& l) : limits(l) { limits.Begin(); }
    ~Limited() { limits.End(); }
  } limited{*limits_};
  for (;;) {
    Result<bool> row = s.Step();
    if (!row.ok()) {
      if (Stopping()) return Stopped();
      const int rc = sqlite3_errcode(db_->raw());
      const RuleLimits::Hit hit = limits_->HitBy(rc);
      if (hit == RuleLimits::Hit::kNone) return row.status();
      p.over_limit = hit;
      return Internal(limits_->Describe(hit, rc));
    }
    if (!*row) break;
    Observation o;
    o.rule = r.id;
    o.title = r.title;
    o.severity = r.severity;
    o.once_per_onset = r.once_per_onset;
    o.run_id = p.col[kRunId] >= 0 && !s.IsNull(p.col[kRunId]) ? s.Int(p.col[kRunId]) : run_id.value_or(0);
    o.series_id = p.col[kSeriesId] >= 0 && !s.IsNull(p.col[kSeriesId]) ? s.Int(p.col[kSeriesId]) : 0;
    if (p.col[kSeverity] >= 0 && !s.IsNull(p.col[kSeverity])) {
      if (!ParseSeverity(s.Text(p.col[kSeverity]), &o.severity))
        return InvalidArgument("severity '" + s.Text(p.col[kSeverity]) + "' is not info, warning or critical");
    }
    o.onset_step = OptInt(s, p.col[kOnset]);
    o.first_step = OptInt(s, p.col[kFirst]);
    o.last_step = OptInt(s, p.col[kLast]);
    o.message = s.Text(p.col[kMessage]);
    if (p.col[kEvidence] >= 0 && !s.IsNull(p.col[kEvidence])) o.evidence = s.Text(p.col[kEvidence]);
    // Reports and payloads embed the evidence as JSON: a (user) rule's evidence that is no
    // JSON is kept as a string, never spliced in to break them.
    if (!o.evidence.empty()) {
      json_valid_.Reset();
      Result<bool> row = json_valid_.Bind(1, o.evidence).Step();
      if (!row.ok() || !*row || json_valid_.Int(0) != 1) o.evidence = Json().Str("text", o.evidence).str();
      json_valid_.Reset();
    }
    o.cause = p.col[kCause] >= 0 && !s.IsNull(p.col[kCause]) ? s.Text(p.col[kCause]) : r.cause;
    o.fix = p.col[kFix] >= 0 && !s.IsNull(p.col[kFix]) ? s.Text(p.col[kFix]) : r.fix;
    if (o.message.empty()) continue;  // a row that says nothing is no finding
    ev->observations.push_back(std::move(o));
  }
  s.Reset();
  return Status::Ok();
}

Verdict Engine::VerdictFor(int64_t run_id, const std::string& run, int worst) {
  Verdict v;
  v.run_id = run_id;
  v.run = run;
  v.verdict = worst >= static_cast<int>(Severity::kCritical) ? "kill"
              : worst >= static_cast<int>(Severity::kWarning) ? "watch"
                                                             : "healthy";
  if (v.verdict == "kill") return v;
  store::Stmt& q = forecast_;
  q.Reset();
  q.Bind(1, run_id);
  Result<bool> row = q.Step();
  // Enough points, a fit that succeeded with R² >= 0.8, and a positive forecast (a loss that
  // was positive throughout cannot be forecast below zero: such a fit found a curve, not the
  // run's asymptote).
  if (row.ok() && *row && q.Int(0) >= 50 && !q.IsNull(2) && q.Int(3) == 1 && q.Real(4) >= 0.8 &&
      q.Real(5) > 0) {
    v.evidence = q.Text(2);
    v.forecast = "at this trajectory, about " + Fmt(q.Real(5)) + " by " +
                 (q.IsNull(7) ? std::string("step") : q.Text(7)) + " " +
                 std::to_string(static_cast<int64_t>(q.Real(6))) +
                 (q.IsNull(1) ? " (if it runs twice as long)" : " (the planned end)") + "; fit R² " +
                 Fmt(q.Real(4));
  }
  q.Reset();
  return v;
}

void Engine::Cancel() {
  cancel_ = true;
  sqlite3_interrupt(db_->raw());
}

void Engine::Interrupt() {
  interrupt_ = true;
  sqlite3_interrupt(db_->raw());
}

Result<Evaluation> Engine::Evaluate(const std::vector<int64_t>* runs, double now, bool scope_all,
                                    bool critical_only) {
  if (critical_only) scope_all = false;
  if (Stopping()) return Stopped();
  Result<RoleMap> map = AssignRoles(*db_, patterns_, runs);
  if (!map.ok()) return map.status();
  TW_RETURN_IF_ERROR(WriteRoleTable(*db_, *map));
  Evaluation ev;
  std::map<int64_t, std::set<std::string>> roles;
  std::map<int64_t, std::string> names;
  for (const auto& a : map->assignments) {
    roles[a.run_id].insert(a.role);
    names[a.run_id] = a.run;
  }
  const auto steady_now = [] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  };
  for (auto& p : prepared_) p->over_limit = RuleLimits::Hit::kNone;
  auto bench = [&](Prepared& p) {  // it went over a limit: skipped until after a pause
    p.strikes++;
    p.benched_until = steady_now() + std::min(3600.0, 60.0 * std::pow(2.0, std::min(p.strikes - 1, 6)));
  };
  const double start = steady_now();
  // A read transaction: every rule of a cycle sees the same snapshot of the store.
  TW_RETURN_IF_ERROR(db_->Exec("BEGIN"));
  for (int64_t run : map->subjects) {
    if (Stopping()) {
      (void)db_->Exec("ROLLBACK");
      return Stopped();
    }
    ev.examined.push_back(run);
    for (auto& p : prepared_) {
      if (p->rule->scope_all) continue;
      if (critical_only && p->rule->severity != Severity::kCritical) {
        ev.incomplete_rules.insert(p->rule->id);
        continue;
      }
      if (!p->rule->CanRunWith(roles[run])) continue;
      if (p->over_limit != RuleLimits::Hit::kNone || p->Benched(start)) {
        ev.incomplete_rules.insert(p->rule->id);
        continue;
      }
      if (Status st = RunRule(*p, run, now, &ev); !st.ok()) {
        if (Stopping()) {
          (void)db_->Exec("ROLLBACK");
          return st;
        }
        ev.incomplete_rules.insert(p->rule->id);
        if (p->over_limit != RuleLimits::Hit::kNone) bench(*p);
        ev.errors.push_back(RuleFailure(*p->rule, p->over_limit, st,
                                        "run '" + (names.count(run) ? names[run] : RunName(run)) + "'"));
      }
    }
  }
  for (auto& p : prepared_) {
    if (!p->rule->scope_all || !scope_all) continue;
    if (p->Benched(start)) {
      ev.incomplete_rules.insert(p->rule->id);
      continue;
    }
    ev.all_scope_rules.insert(p->rule->id);
    if (Status st = RunRule(*p, std::nullopt, now, &ev); !st.ok()) {
      if (Stopping()) {
        (void)db_->Exec("ROLLBACK");
        return st;
      }
      ev.incomplete_rules.insert(p->rule->id);
      if (p->over_limit != RuleLimits::Hit::kNone) bench(*p);
      ev.errors.push_back(RuleFailure(*p->rule, p->over_limit, st, "every run"));
    }
  }
  std::map<std::string, const Rule*> by_id;
  for (const auto& r : rules_) by_id[r.id] = &r;
  for (auto& o : ev.observations) {
    if (Status st = Finish(&o, *by_id[o.rule]); !st.ok())
      ev.errors.push_back({o.rule, "", by_id[o.rule]->origin + ": " + st.message()});
    if (o.run.empty()) o.run = names.count(o.run_id) ? names[o.run_id] : RunName(o.run_id);
  }
  // Inhibition: a rule listed in another's inhibited_by, firing on the same run, mutes it.
  std::map<int64_t, std::set<std::string>> firing;  // run -> rules firing (not pending) on it
  for (const auto& o : ev.observations)
    if (!o.pending) firing[o.run_id].insert(o.rule);
  std::map<int64_t, int> worst;  // run -> most severe unmuted firing severity
  for (auto& o : ev.observations) {
    for (const auto& by : by_id[o.rule]->inhibited_by)
      if (o.muted_by.empty() && firing[o.run_id].count(by)) o.muted_by = by;
    if (o.muted_by.empty() && !o.pending) {
      auto [it, added] = worst.emplace(o.run_id, static_cast<int>(o.severity));
      if (!added) it->second = std::max(it->second, static_cast<int>(o.severity));
    }
  }
  for (int64_t run : map->subjects)
    ev.verdicts.push_back(VerdictFor(run, names.count(run) ? names[run] : RunName(run),
                                     worst.count(run) ? worst[run] : -1));
  // A run a scope-all rule found something on without examining it (the daemon's stale run,
  // which gets no new data) is judged too, or its verdict would never say so.
  const std::set<int64_t> subjects(map->subjects.begin(), map->subjects.end());
  for (const auto& [run, severity] : worst)
    if (!subjects.count(run)) ev.verdicts.push_back(VerdictFor(run, RunName(run), severity));
  if (critical_only) {  // a verdict weighs every rule's findings: the full evaluation gives it
    ev.verdicts.clear();
    ev.incomplete_rules.insert(kRunVerdictId);
  } else if (!options_.disabled.count(kRunVerdictId)) {
    std::map<int64_t, std::vector<const Observation*>> by_run;
    for (const auto& o : ev.observations) by_run[o.run_id].push_back(&o);
    std::vector<Observation> verdicts;  // appended after: by_run points into ev.observations
    for (const Verdict& v : ev.verdicts)
      if (std::optional<Observation> o = VerdictObservation(v, by_run[v.run_id])) verdicts.push_back(std::move(*o));
    for (auto& o : verdicts) ev.observations.push_back(std::move(o));
  }
  (void)db_->Exec("COMMIT");
  return ev;
}

}  // namespace tw::diagnose
