#include "diagnose/lifecycle.h"

#include <algorithm>

#include "diagnose/lifecycle_facts.h"
#include "diagnose/sql_functions.h"
#include "store/migrations.h"

namespace tw::diagnose {

namespace {

bool Has(const RunFacts& f, const std::string& cause) {
  return std::find(f.causes.begin(), f.causes.end(), cause) != f.causes.end();
}

}  // namespace

Result<std::vector<RunEvent>> DetectRunEvents(store::Db& db, const std::vector<int64_t>& runs, double now,
                                              const LifecycleOptions& o) {
  std::vector<RunEvent> out;
  if (!o.enabled) return out;
  const double recent = now - o.announce_within_seconds;
  for (int64_t run_id : runs) {
    Result<std::optional<RunFacts>> read = ReadRunFacts(db, run_id, o);
    if (!read.ok()) return read.status();
    if (!*read) continue;
    const RunFacts& f = **read;
    auto add = [&](const std::string& kind, const std::string& cause, const std::string& how, double when) -> Status {
      RunEvent e;
      e.run_id = run_id;
      e.run = f.run;
      e.kind = kind;
      e.cause_key = cause;
      e.how = how;
      e.last_wall = f.last_wall;
      e.last_step = f.last_step;
      e.announce = when >= recent;
      TW_RETURN_IF_ERROR(Summarize(db, f, &e, now));
      if (kind == "finished" || kind == "crashed") e.sparkline = RecentSparkline(db, f.loss_series);
      out.push_back(std::move(e));
      return Status::Ok();
    };
    if (!Has(f, "start")) {
      if (f.continues) TW_RETURN_IF_ERROR(add("resumed", "start", "a W&B run that continues an earlier one", f.first_wall));
      else TW_RETURN_IF_ERROR(add("started", "start", "a new run", f.first_wall));
    }
    for (const auto& r : f.restarts) {
      const std::string cause = "restart:" + std::to_string(r.source_id) + ":" + std::to_string(r.offset);
      if (Has(f, cause)) continue;
      TW_RETURN_IF_ERROR(add("resumed", cause,
                             "restarted at step " + std::to_string(r.step) + (r.detail.empty() ? "" : " (" + r.detail + ")"),
                             r.wall));
    }
    if (f.ends > 0 && !f.rearmed) continue;  // ended, and not written again by a new stretch since
    if (std::optional<RunEnd> end = JudgeEnd(f, now, o))
      TW_RETURN_IF_ERROR(add(end->kind, "end:" + std::to_string(f.ends), end->how, f.last_wall));
  }
  return out;
}

Result<std::vector<int64_t>> OpenRuns(store::Db& db, double now, const LifecycleOptions& o) {
  std::vector<int64_t> out;
  if (!o.enabled) return out;
  // Training runs whose newest point is within the horizon (each series' last point by step:
  // one index probe per series), without an end recorded since that point. Old history costs
  // nothing here, whenever it was read.
  Result<store::Stmt> q = db.Prepare(
      "WITH t AS (SELECT DISTINCT run_id FROM temp.run_roles WHERE role = 'train_loss'), "
      "w AS (SELECT t.run_id, (SELECT max((SELECT wall_time FROM scalars p WHERE p.series_id = s.series_id "
      "                                    AND p.superseded = 0 ORDER BY step DESC LIMIT 1)) "
      "                        FROM series s WHERE s.run_id = t.run_id AND s.kind = 'scalar') AS last_wall FROM t) "
      "SELECT run_id FROM w WHERE last_wall > ?1 AND NOT EXISTS (SELECT 1 FROM run_lifecycle l "
      "  WHERE l.run_id = w.run_id AND l.kind IN ('finished', 'crashed') AND l.last_wall >= w.last_wall) "
      "ORDER BY run_id");
  if (!q.ok()) return out;  // no role map yet: nothing examined, nothing to look at
  q->Bind(1, now - o.horizon_seconds);
  TW_RETURN_IF_ERROR(q->EachRow([&] { out.push_back(q->Int(0)); }));
  return out;
}

Result<std::unique_ptr<LifecycleTracker>> LifecycleTracker::Open(const std::string& db_path) {
  Result<std::unique_ptr<store::Db>> db = store::Db::Open(db_path, store::Db::Mode::kReadWrite);
  if (!db.ok()) return db.status();
  TW_RETURN_IF_ERROR(store::CheckOurs(**db));
  return std::unique_ptr<LifecycleTracker>(new LifecycleTracker(std::move(*db)));
}

Result<std::vector<RunEvent>> LifecycleTracker::Record(const std::vector<RunEvent>& events, double now) {
  std::vector<RunEvent> out;
  if (events.empty()) return out;
  store::Db& db = *db_;
  TW_RETURN_IF_ERROR(db.Exec("BEGIN IMMEDIATE"));
  auto fail = [&](Status st) -> Status {
    (void)db.Exec("ROLLBACK");
    return st;
  };
  Result<store::Stmt> ins = db.Prepare(
      "INSERT OR IGNORE INTO run_lifecycle(run_id, kind, cause_key, time, last_wall, last_step, how, announced, "
      "title, message, advice, summary, fields, sparkline) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
  if (!ins.ok()) return fail(ins.status());
  for (const RunEvent& e : events) {
    ins->Bind(1, e.run_id).Bind(2, e.kind).Bind(3, e.cause_key).Bind(4, now).Bind(5, e.last_wall);
    if (e.last_step) ins->Bind(6, *e.last_step);
    else ins->BindNull(6);
    ins->Bind(7, e.how).Bind(8, static_cast<int64_t>(e.announce)).Bind(9, e.title).Bind(10, e.message)
        .Bind(11, e.advice).Bind(12, e.summary).Bind(13, e.fields).Bind(14, e.sparkline);
    if (Status st = ins->Run(); !st.ok()) return fail(st);
    if (db.Changes() == 0) continue;  // recorded before: once only
    out.push_back(e);
    out.back().event_id = db.LastInsertId();
    if (hook_)
      if (Status st = hook_(db, out.back(), now); !st.ok()) return fail(st);
  }
  if (Status st = db.Exec("COMMIT"); !st.ok()) return fail(st);
  return out;
}

}  // namespace tw::diagnose
