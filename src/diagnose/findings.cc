#include "diagnose/findings.h"

#include <map>
#include <optional>
#include <set>
#include <tuple>

#include "diagnose/sql_functions.h"
#include "store/migrations.h"

namespace tw::diagnose {

namespace {

using Key = std::tuple<std::string, int64_t, int64_t>;  // rule, run, series

struct Row {
  int64_t id = 0;
  std::string state, severity;
  int64_t misses = 0;
  std::optional<int64_t> onset_step;
};

}  // namespace

Result<std::unique_ptr<FindingTracker>> FindingTracker::Open(const std::string& db_path,
                                                             int resolve_after) {
  Result<std::unique_ptr<store::Db>> db = store::Db::Open(db_path, store::Db::Mode::kReadWrite);
  if (!db.ok()) return db.status();
  TW_RETURN_IF_ERROR(store::CheckOurs(**db));
  TW_RETURN_IF_ERROR(RegisterSqlFunctions(**db));  // for transition hooks (sparklines)
  return std::unique_ptr<FindingTracker>(new FindingTracker(std::move(*db), resolve_after));
}

Result<std::vector<Transition>> FindingTracker::Apply(const Evaluation& ev, double now) {
  std::vector<Transition> out;
  store::Db& db = *db_;
  TW_RETURN_IF_ERROR(db.Exec("BEGIN IMMEDIATE"));
  auto fail = [&](Status st) -> Status {
    (void)db.Exec("ROLLBACK");
    return st;
  };

  // Every finding not yet resolved: what an evaluation that no longer sees it may resolve.
  std::map<Key, Row> open;
  std::map<int64_t, std::pair<std::string, std::string>> names;  // finding -> run, series
  {
    Result<store::Stmt> q = db.Prepare(
        "SELECT f.finding_id, f.rule, f.run_id, f.series_id, f.state, f.severity, f.misses, r.name, "
        "COALESCE(s.tag, '') FROM findings f JOIN runs r USING (run_id) "
        "LEFT JOIN series s ON s.series_id = f.series_id WHERE f.state != 'resolved'");
    if (!q.ok()) return fail(q.status());
    for (;;) {
      Result<bool> row = q->Step();
      if (!row.ok()) return fail(row.status());
      if (!*row) break;
      open[{q->Text(1), q->Int(2), q->Int(3)}] = {q->Int(0), q->Text(4), q->Text(5), q->Int(6), std::nullopt};
      names[q->Int(0)] = {q->Text(7), q->Text(8)};
    }
  }
  Result<store::Stmt> find = db.Prepare(
      "SELECT finding_id, state, severity, misses, onset_step FROM findings WHERE rule = ? AND run_id = ? AND series_id = ?");
  Result<store::Stmt> insert = db.Prepare(
      "INSERT INTO findings(rule, run_id, series_id, severity, state, first_seen, last_seen, fired_at, "
      "onset_step, first_step, last_step, message, cause, fix, evidence, title) "
      "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
  Result<store::Stmt> update = db.Prepare(
      "UPDATE findings SET severity = ?2, state = ?3, last_seen = ?4, "
      "fired_at = CASE WHEN ?3 = 'firing' AND state != 'firing' THEN ?4 ELSE fired_at END, "
      "first_seen = CASE WHEN state = 'resolved' THEN ?4 ELSE first_seen END, "
      "resolved_at = NULL, onset_step = ?5, first_step = ?6, last_step = ?7, message = ?8, "
      "cause = ?9, fix = ?10, evidence = ?11, title = ?12, misses = 0 WHERE finding_id = ?1");
  Result<store::Stmt> touch = db.Prepare("UPDATE findings SET last_seen = ?2, misses = 0 WHERE finding_id = ?1");
  Result<store::Stmt> miss = db.Prepare(
      "UPDATE findings SET misses = ?2, state = ?3, "
      "resolved_at = CASE WHEN ?3 = 'resolved' THEN ?4 ELSE resolved_at END WHERE finding_id = ?1");
  Result<store::Stmt> log = db.Prepare(
      "INSERT INTO finding_transitions(finding_id, time, from_state, to_state, severity, message) "
      "VALUES (?,?,?,?,?,?)");
  for (auto* s : {&find, &insert, &update, &touch, &miss, &log})
    if (!s->ok()) return fail(s->status());

  auto record = [&](int64_t id, const std::string& from, const std::string& to, Severity sev,
                    const std::string& msg, const std::string& rule, const std::string& run,
                    const std::string& series) -> Status {
    TW_RETURN_IF_ERROR(log->Bind(1, id).Bind(2, now).Bind(3, from).Bind(4, to)
                           .Bind(5, SeverityName(sev)).Bind(6, msg).Run());
    out.push_back({db.LastInsertId(), id, rule, run, series, from, to, sev, msg});
    return hook_ ? hook_(db, out.back(), now) : Status::Ok();
  };
  auto bind_opt = [](store::Stmt& s, int i, const std::optional<int64_t>& v) {
    if (v) s.Bind(i, *v);
    else s.BindNull(i);
  };

  std::set<Key> seen;
  for (const Observation& o : ev.observations) {
    const Key key{o.rule, o.run_id, o.series_id};
    seen.insert(key);
    find->Reset();
    find->Bind(1, o.rule).Bind(2, o.run_id).Bind(3, o.series_id);
    Result<bool> found = find->Step();
    if (!found.ok()) return fail(found.status());
    std::optional<Row> row;
    if (*found)
      row = Row{find->Int(0), find->Text(1), find->Text(2), find->Int(3),
                find->IsNull(4) ? std::nullopt : std::optional<int64_t>(find->Int(4))};
    find->Reset();
    if (!o.muted_by.empty()) {
      // Muted: neither fires nor resolves; it stays as it was.
      if (row && row->state != "resolved")
        if (Status st = touch->Bind(1, row->id).Bind(2, now).Run(); !st.ok()) return fail(st);
      continue;
    }
    const std::string sev = SeverityName(o.severity);
    if (!row) {
      const std::string state = o.pending ? "pending" : "firing";
      store::Stmt& s = *insert;
      s.Bind(1, o.rule).Bind(2, o.run_id).Bind(3, o.series_id).Bind(4, sev).Bind(5, state)
          .Bind(6, now).Bind(7, now);
      if (o.pending) s.BindNull(8);
      else s.Bind(8, now);
      bind_opt(s, 9, o.onset_step);
      bind_opt(s, 10, o.first_step);
      bind_opt(s, 11, o.last_step);
      s.Bind(12, o.message).Bind(13, o.cause).Bind(14, o.fix).Bind(15, o.evidence).Bind(16, o.title);
      if (Status st = s.Run(); !st.ok()) return fail(st);
      if (Status st = record(db.LastInsertId(), "", state, o.severity, o.message, o.rule, o.run, o.series);
          !st.ok())
        return fail(st);
      continue;
    }
    // A rule that fires once per onset (a new best): a firing finding seen with another onset
    // was superseded, and resolves at once (no damping: it did not flap, it was replaced); the
    // new onset is a firing (or pending) of its own below, announced as any other.
    if (o.once_per_onset && row->state == "firing" && o.onset_step != row->onset_step) {
      if (Status st = miss->Bind(1, row->id).Bind(2, int64_t{0}).Bind(3, "resolved").Bind(4, now).Run(); !st.ok())
        return fail(st);
      Severity before = Severity::kWarning;
      ParseSeverity(row->severity, &before);
      const std::string why = "superseded: a new onset at step " +
                              (o.onset_step ? std::to_string(*o.onset_step) : std::string("?"));
      if (Status st = record(row->id, "firing", "resolved", before, why, o.rule, o.run, o.series); !st.ok())
        return fail(st);
      row->state = "resolved";
    }
    // A pending finding fires once held long enough; a firing one never goes back to pending.
    const std::string state = row->state == "firing" || !o.pending ? "firing" : "pending";
    store::Stmt& u = *update;
    u.Bind(1, row->id).Bind(2, sev).Bind(3, state).Bind(4, now);
    bind_opt(u, 5, o.onset_step);
    bind_opt(u, 6, o.first_step);
    bind_opt(u, 7, o.last_step);
    u.Bind(8, o.message).Bind(9, o.cause).Bind(10, o.fix).Bind(11, o.evidence).Bind(12, o.title);
    if (Status st = u.Run(); !st.ok()) return fail(st);
    if (state != row->state || (state == "firing" && sev != row->severity))
      if (Status st = record(row->id, row->state, state, o.severity, o.message, o.rule, o.run, o.series);
          !st.ok())
        return fail(st);
  }

  // Open findings that this evaluation looked for and did not see.
  const std::set<int64_t> examined(ev.examined.begin(), ev.examined.end());
  for (const auto& [key, row] : open) {
    if (seen.count(key)) continue;
    const auto& [rule, run, series] = key;
    if (!examined.count(run) && !ev.all_scope_rules.count(rule)) continue;
    if (ev.incomplete_rules.count(rule)) continue;  // it did not look: nothing is resolved
    const int64_t misses = row.misses + 1;
    const bool resolve = row.state == "pending" || misses >= resolve_after_;
    const std::string state = resolve ? "resolved" : row.state;
    if (Status st = miss->Bind(1, row.id).Bind(2, misses).Bind(3, state).Bind(4, now).Run(); !st.ok())
      return fail(st);
    if (resolve) {
      Severity sev = Severity::kWarning;
      ParseSeverity(row.severity, &sev);
      const auto& [run_name, series_name] = names[row.id];
      if (Status st = record(row.id, row.state, "resolved", sev, "the condition no longer holds", rule,
                             run_name, series_name);
          !st.ok())
        return fail(st);
    }
  }
  if (Status st = db.Exec("COMMIT"); !st.ok()) return fail(st);
  return out;
}

}  // namespace tw::diagnose
