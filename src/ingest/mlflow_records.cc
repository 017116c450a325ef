// MLflow into the store: FileIngester's glue for the file store (mlflow_ingester.h) and the
// SQLite tracking store (mlflow_db_ingester.h).
#include <cmath>
#include <map>

#include "base/json.h"
#include "ingest/batch.h"
#include "ingest/mlflow_db_ingester.h"
#include "ingest/mlflow_ingester.h"
#include "ingest/point_sink.h"

namespace tw::ingest {

Status FileIngester::ProcessMlflowLine(RunState& run, Batch& b, std::string_view line,
                                       int64_t offset) {
  PointSink sink(*this, run, b);
  return mlflow_->Line(sink, sources::MlflowMetricKey(b.source.path), line, offset);
}

Status FileIngester::LoadMlflowRunFiles(RunState& run, Batch& b) {
  PointSink sink(*this, run, b);
  return mlflow_->RunFiles(sink, std::string(sources::MlflowRunDir(b.source.path)));
}

// mlflow.db: rows past the committed rowid, in transactions of batch_points rows, each run's
// facts refreshed at the end. The store's transaction is open on entry; on return it is
// committed, or rolled back on failure.
Status FileIngester::ReadMlflowDb(RunState& container, Batch& b, const std::string& path,
                                  Totals* totals, bool* more) {
  auto fail = [&](Status s) {
    store_.Rollback();
    return s;
  };
  b.totals.files_read = 1;
  Result<std::unique_ptr<store::Db>> db = OpenMlflowDb(path);
  if (!db.ok()) {
    // Said once for this file (a rejected source), until another file takes its place.
    b.totals.errors++;
    b.source.error_count++;
    b.source.status = "rejected";
    b.totals.files_rejected++;
    Status s = store_.InsertError(b.source.source_id, path, 0, 0, "bad_mlflow_db", db.status().message());
    if (s.ok()) s = store_.UpdateSource(b.source);
    if (s.ok()) s = store_.Commit();
    if (!s.ok()) return fail(s);
    totals->Add(b.totals);
    return Status::Ok();
  }
  if (b.source.committed_offset == 0) {  // the database's own run holds no points: said so
    store::RunInfo info;
    info.format = "mlflow";
    if (Status s = store_.UpdateRunInfo(container.run_id(), info); !s.ok()) return fail(s);
  }
  // The runs are named below the database's own name: "<db path>/<experiment>/<run name>".
  std::string prefix;
  if (Result<store::Stmt> q = store_.db().Prepare("SELECT name FROM runs WHERE run_id = ?1"); q.ok()) {
    q->Bind(1, container.run_id());
    if (Result<bool> row = q->Step(); row.ok() && *row) prefix = q->Text(0);
  }
  std::map<std::string, std::unique_ptr<RunState>> runs;  // by run_uuid
  auto run_of = [&](const std::string& uuid, const std::string& experiment,
                    const std::string& name) -> Result<RunState*> {
    auto it = runs.find(uuid);
    if (it != runs.end()) return it->second.get();
    Result<int64_t> id = store_.EnsureRun(container.root(), prefix + "/" + (experiment.empty() ? "0" : experiment) +
                                                                "/" + (name.empty() ? uuid : name));
    if (!id.ok()) return id.status();
    auto state = std::make_unique<RunState>(store_, *id, container.root());
    TW_RETURN_IF_ERROR(state->Load());
    RunState* raw = state.get();
    runs.emplace(uuid, std::move(state));
    if (*id != container.run_id()) b.totals.other_runs.push_back(*id);
    return raw;
  };
  const int64_t start = b.source.committed_offset;
  for (;;) {
    Result<std::vector<MlflowRow>> rows = MlflowRowsAfter(**db, b.source.committed_offset, options_.batch_points);
    if (!rows.ok()) {
      b.totals.errors++;
      b.source.error_count++;
      Status s = store_.InsertError(b.source.source_id, path, b.source.committed_offset, 0,
                                    "read_failed", rows.status().message());
      if (!s.ok()) return fail(s);
      break;
    }
    for (const MlflowRow& r : *rows) {
      Result<RunState*> run = run_of(r.run_uuid, r.experiment, r.run_name);
      if (!run.ok()) return fail(run.status());
      PointSink sink(*this, **run, b);
      if (Status s = sink.Scalar(r.key, r.step, r.wall, r.value, r.rowid, 0); !s.ok()) return fail(s);
      b.source.committed_offset = r.rowid;
      b.source.records++;
      b.totals.records++;
    }
    if (static_cast<int64_t>(rows->size()) < options_.batch_points) break;
    const bool stopping = options_.stop && options_.stop->load();
    const bool turn_over = options_.max_bytes_per_call > 0 &&
                           b.source.committed_offset - start >= options_.max_bytes_per_call;
    if (stopping || turn_over) {
      if (more) *more = true;
      break;
    }
    if (Status s = store_.UpdateSource(b.source); !s.ok()) return fail(s);
    if (Status s = store_.Commit(); !s.ok()) return fail(s);
    if (Status s = store_.Begin(); !s.ok()) return s;
  }
  // Every run's facts, each call: a run's status changes when it ends, after its last metric.
  Result<store::Stmt> all = (*db)->Prepare("SELECT run_uuid FROM runs ORDER BY run_uuid LIMIT 10000");
  std::vector<std::string> uuids;
  for (; all.ok();) {
    Result<bool> row = all->Step();
    if (!row.ok() || !*row) break;
    uuids.push_back(all->Text(0));
  }
  for (const auto& uuid : uuids) {
    Result<MlflowRunFacts> f = MlflowFacts(**db, uuid);
    if (!f.ok()) break;
    Result<RunState*> run = run_of(uuid, f->experiment, f->run_name);
    if (!run.ok()) return fail(run.status());
    PointSink sink(*this, **run, b);
    store::RunInfo info;
    info.format = "mlflow";
    info.external_id = uuid;
    if (!f->run_name.empty()) info.display_name = f->run_name;
    if (!f->experiment.empty()) info.project = f->experiment;
    info.start_time = f->start_time;
    Status s = sink.Info(info);
    if (s.ok() && !f->status.empty()) s = sink.RunValue("mlflow.status", JsonQuote(f->status));
    if (s.ok() && f->end_time) s = sink.RunValue("mlflow.end_time", JsonNumber(*f->end_time));
    for (const auto& [key, value] : f->params)
      if (s.ok()) s = sink.HParam(MlflowParam(key, value));
    for (const auto& [key, value] : f->tags)
      if (s.ok()) s = sink.ConfigValue(key, JsonQuote(value));
    if (!s.ok()) return fail(s);
  }
  b.source.size_seen = b.source.committed_offset;
  if (Status s = store_.UpdateSource(b.source); !s.ok()) return fail(s);
  if (Status s = store_.Commit(); !s.ok()) return fail(s);
  totals->Add(b.totals);
  return Status::Ok();
}

}  // namespace tw::ingest
