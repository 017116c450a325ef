#include "diagnose/lifecycle_facts.h"

#include <cmath>
#include <cstdio>

#include "diagnose/roles.h"

namespace tw::diagnose {

namespace {

// Hyperparameter and W&B config keys that plan a run's length in epochs (its step keys are kPlannedStepKeys,
// roles.h; W&B keeps its config apart from hparams, in run_config).
constexpr const char* kEpochKeys = "('num_train_epochs', 'epochs', 'max_epochs', 'num_epochs', 'n_epochs')";

// One row of `sql` with ?1 bound to `run_id`: calls `row` if there is one.
template <typename F>
Status OneRow(store::Db& db, const std::string& sql, int64_t run_id, F&& row) {
  Result<store::Stmt> q = db.Prepare(sql);
  if (!q.ok()) return q.status();
  q->Bind(1, run_id);
  Result<bool> r = q->Step();
  if (!r.ok()) return r.status();
  if (*r) row(*q);
  return Status::Ok();
}

template <typename F>
Status EachRow(store::Db& db, const std::string& sql, int64_t run_id, F&& row) {
  Result<store::Stmt> q = db.Prepare(sql);
  if (!q.ok()) return q.status();
  q->Bind(1, run_id);
  return q->EachRow([&] { row(*q); });
}

std::optional<double> OptReal(const store::Stmt& q, int col) {
  if (q.IsNull(col)) return std::nullopt;
  return q.Real(col);
}

}  // namespace

Result<std::optional<RunFacts>> ReadRunFacts(store::Db& db, int64_t run_id, const LifecycleOptions& options) {
  RunFacts f;
  f.run_id = run_id;
  TW_RETURN_IF_ERROR(OneRow(db,
                            "SELECT series_id, tag FROM temp.run_roles WHERE run_id = ?1 AND role = 'train_loss' "
                            "ORDER BY confidence DESC, series_id LIMIT 1",
                            run_id, [&](const store::Stmt& q) {
                              f.loss_series = q.Int(0);
                              f.loss_tag = q.Text(1);
                            }));
  if (f.loss_series == 0) return std::optional<RunFacts>();
  TW_RETURN_IF_ERROR(OneRow(db, "SELECT name, exit_code, continues_run_id FROM runs WHERE run_id = ?1", run_id,
                            [&](const store::Stmt& q) {
                              f.run = q.Text(0);
                              if (!q.IsNull(1)) f.exit_code = q.Int(1);
                              f.continues = !q.IsNull(2);
                            }));
  // Each scalar series' first and last points by step (the index's order: cheap on long runs).
  bool any = false;
  TW_RETURN_IF_ERROR(EachRow(
      db,
      "SELECT s.series_id, s.tag, "
      "  (SELECT step FROM scalars p WHERE p.series_id = s.series_id AND p.superseded = 0 ORDER BY step DESC LIMIT 1), "
      "  (SELECT wall_time FROM scalars p WHERE p.series_id = s.series_id AND p.superseded = 0 ORDER BY step DESC LIMIT 1), "
      "  (SELECT value FROM scalars p WHERE p.series_id = s.series_id AND p.superseded = 0 ORDER BY step DESC LIMIT 1), "
      "  (SELECT value_class FROM scalars p WHERE p.series_id = s.series_id AND p.superseded = 0 ORDER BY step DESC LIMIT 1), "
      "  (SELECT wall_time FROM scalars p WHERE p.series_id = s.series_id AND p.superseded = 0 ORDER BY step LIMIT 1), "
      "  (SELECT step FROM scalars p WHERE p.series_id = s.series_id AND p.superseded = 0 ORDER BY step LIMIT 1) "
      "FROM series s WHERE s.run_id = ?1 AND s.kind = 'scalar'",
      run_id, [&](const store::Stmt& q) {
        if (q.IsNull(2)) return;  // no live points
        const int64_t step = q.Int(2), first_step = q.Int(7);
        const double wall = q.Real(3), first_wall = q.Real(6);
        if (q.Int(0) == f.loss_series) {
          f.loss_last_class = static_cast<int>(q.Int(5));
          f.loss_last_value = q.Real(4);
        }
        if (!any || first_wall < f.first_wall) f.first_wall = first_wall;
        if (!f.first_step || first_step < *f.first_step) f.first_step = first_step;
        if (!f.last_step || step > *f.last_step) f.last_step = step;
        if (!any || wall > f.last_wall || (wall == f.last_wall && step > f.last_tag_step)) {
          f.last_wall = wall;
          f.last_tag = q.Text(1);
          f.last_tag_step = step;
          f.last_value = q.Real(4);
          f.last_class = static_cast<int>(q.Int(5));
        }
        any = true;
      }));
  if (!any) return std::optional<RunFacts>();
  TW_RETURN_IF_ERROR(OneRow(db, "SELECT max(wall_time) FROM run_events WHERE run_id = ?1 AND kind = 'stop'", run_id,
                            [&](const store::Stmt& q) { f.stop_wall = OptReal(q, 0); }));
  TW_RETURN_IF_ERROR(OneRow(db,
                            "SELECT max(p.wall_time) FROM series s JOIN scalars p USING (series_id) "
                            "WHERE s.run_id = ?1 AND (s.tag = 'train_runtime' OR s.tag LIKE '%/train_runtime') "
                            "AND p.superseded = 0",
                            run_id, [&](const store::Stmt& q) { f.runtime_wall = OptReal(q, 0); }));
  const std::string config_max = "SELECT max(CAST(value_json AS REAL)) FROM main.run_config WHERE run_id = ?1 "
                                 "AND CAST(value_json AS REAL) > 0 AND lower(key) IN ";
  TW_RETURN_IF_ERROR(OneRow(
      db,
      "SELECT max(COALESCE((SELECT steps FROM run_planned_steps WHERE run_id = ?1), 0), "
      "           COALESCE((" + config_max + kPlannedStepKeys + "), 0)), "
      "       max(COALESCE((SELECT max(h.value_num) FROM run_family f JOIN main.hparams h ON h.run_id = f.member "
      "                     WHERE f.run_id = ?1 AND h.value_type = 'number' AND h.value_num > 0 "
      "                     AND lower(h.key) IN " + kEpochKeys + "), 0), "
      "           COALESCE((" + config_max + kEpochKeys + "), 0)), "
      "       (SELECT max(p.value) FROM series s JOIN scalars p USING (series_id) WHERE s.run_id = ?1 "
      "        AND (lower(s.tag) = 'epoch' OR lower(s.tag) LIKE '%/epoch') AND p.superseded = 0 AND p.value_class = 0)",
      run_id, [&](const store::Stmt& q) {
        if (q.Real(0) > 0) f.planned_steps = q.Real(0);
        if (q.Real(1) > 0) f.planned_epochs = q.Real(1);
        f.last_epoch = OptReal(q, 2);
      }));
  if (options.writer_pids && options.probe) {
    TW_RETURN_IF_ERROR(EachRow(db, "SELECT path FROM sources WHERE run_id = ?1 AND status = 'active'", run_id,
                               [&](const store::Stmt& q) {
                                 const std::optional<WriterId> w = ParseWriterId(q.Text(0));
                                 if (w && (!f.writer || w->created > f.writer->created)) f.writer = w;
                               }));
    if (f.writer) f.writer_state = options.probe(*f.writer);
  }
  TW_RETURN_IF_ERROR(EachRow(db, "SELECT kind, cause_key, time, last_wall FROM run_lifecycle WHERE run_id = ?1",
                             run_id, [&](const store::Stmt& q) {
                               const std::string kind = q.Text(0);
                               f.causes.push_back(q.Text(1));
                               if (kind == "finished" || kind == "crashed") {
                                 f.ends++;
                                 if (!f.end_time || q.Real(2) > *f.end_time) {
                                   f.end_time = q.Real(2);
                                   f.end_wall = q.Real(3);
                                 }
                               }
                             }));
  TW_RETURN_IF_ERROR(EachRow(db,
                             "SELECT source_id, offset, COALESCE(step, 0), COALESCE(wall_time, 0), COALESCE(detail, '') "
                             "FROM run_events WHERE run_id = ?1 AND kind = 'restart' ORDER BY source_id, offset",
                             run_id, [&](const store::Stmt& q) {
                               f.restarts.push_back({q.Int(0), q.Int(1), q.Int(2), q.Real(3), q.Text(4)});
                             }));
  if (f.end_time) {
    // Written again since the end, by a new file (a new writer: the job was started again) or
    // after a restart: the run can end once more. New points in the old file alone (an
    // evaluation after training) do not undo its end.
    bool new_writer = false;
    TW_RETURN_IF_ERROR(OneRow(db, "SELECT count(*) FROM sources WHERE run_id = ?1 AND first_seen > " +
                                      std::to_string(*f.end_time),
                              run_id, [&](const store::Stmt& q) { new_writer = q.Int(0) > 0; }));
    bool restarted = false;
    for (const auto& r : f.restarts) restarted |= r.wall > *f.end_wall;
    f.rearmed = f.last_wall > *f.end_wall && (new_writer || restarted);
  }
  return std::optional<RunFacts>(std::move(f));
}

std::optional<RunEnd> JudgeEnd(const RunFacts& f, double now, const LifecycleOptions& o) {
  // An end marker counts when it belongs to the run's current stretch (after its last end).
  const double since = f.end_wall.value_or(-1e300);
  const bool quiet = now - f.last_wall >= o.quiet_seconds;
  const bool gone = f.writer_state == WriterState::kGone;
  const std::string pid = f.writer ? std::to_string(f.writer->pid) : "";
  const int64_t last_step = f.last_step.value_or(0);
  if (f.exit_code && f.ends == 0) {
    if (*f.exit_code == 0) return RunEnd{"finished", "W&B exit record, code 0"};
    return RunEnd{"crashed", "W&B exit record, code " + std::to_string(*f.exit_code)};
  }
  if (f.stop_wall && *f.stop_wall > since) return RunEnd{"finished", "TensorBoard SessionLog STOP"};
  if (f.runtime_wall && *f.runtime_wall > since)
    return RunEnd{"finished", "the HF Trainer's end-of-training summary (train_runtime)"};
  if (f.loss_last_class != 0 && (quiet || gone)) {
    const char* what = f.loss_last_class == 1 ? "NaN" : f.loss_last_class == 2 ? "+Inf" : "-Inf";
    return RunEnd{"crashed", std::string("its last training loss (") + f.loss_tag + ") was " + what + ", then " +
                                 (gone ? "its writer (pid " + pid + ") exited" : "nothing more was written")};
  }
  // The plan: steps, or epochs where only those are planned.
  std::string plan;
  bool reached = false, planned = false;
  if (f.planned_steps) {
    planned = true;
    reached = static_cast<double>(last_step) >= o.planned_frac * *f.planned_steps;
    plan = "step " + std::to_string(last_step) + " of a planned " + Number(*f.planned_steps);
  } else if (f.planned_epochs && f.last_epoch) {
    planned = true;
    reached = *f.last_epoch >= o.planned_frac * *f.planned_epochs;
    plan = "epoch " + Number(*f.last_epoch) + " of a planned " + Number(*f.planned_epochs);
  }
  if (gone) {
    const std::string exited = "its writer (pid " + pid + ", on this host) exited without logging an end";
    if (!planned) return RunEnd{"finished", exited + " (no planned end to compare with)"};
    if (reached) return RunEnd{"finished", "it reached its planned end (" + plan + ") and " + exited};
    return RunEnd{"crashed", exited + ", at " + plan};
  }
  if (reached && quiet && f.writer_state != WriterState::kAlive)
    return RunEnd{"finished", "it reached its planned end (" + plan + "), then wrote nothing for " +
                                  DurationWords(now - f.last_wall)};
  return std::nullopt;
}

std::string DurationWords(double s) {
  if (!(s >= 0)) s = 0;
  const auto whole = static_cast<int64_t>(std::llround(s));
  char buf[64];
  if (whole < 60) std::snprintf(buf, sizeof buf, "%lld s", static_cast<long long>(whole));
  else if (whole < 3600) std::snprintf(buf, sizeof buf, "%lld min", static_cast<long long>(whole / 60));
  else if (whole < 86400)
    std::snprintf(buf, sizeof buf, "%lld h %lld min", static_cast<long long>(whole / 3600),
                  static_cast<long long>(whole % 3600 / 60));
  else
    std::snprintf(buf, sizeof buf, "%lld d %lld h", static_cast<long long>(whole / 86400),
                  static_cast<long long>(whole % 86400 / 3600));
  return buf;
}

std::string Number(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

}  // namespace tw::diagnose
