#include "ingest/mlflow_db_ingester.h"

#include <sys/stat.h>

#include <cmath>

namespace tw::ingest {

const std::vector<std::pair<std::string, std::string>> kMlflowTables = {
    {"experiments", "experiment_id,name"},
    {"runs", "run_uuid,name,status,start_time,end_time,experiment_id"},
    {"metrics", "key,value,timestamp,run_uuid,step,is_nan"},
    {"params", "key,value,run_uuid"},
    {"tags", "key,value,run_uuid"},
};

namespace {

Result<bool> Next(store::Stmt& q) { return q.Step(); }

}  // namespace

Result<std::unique_ptr<store::Db>> OpenMlflowDb(const std::string& path) {
  Result<std::unique_ptr<store::Db>> db = store::Db::Open(path, store::Db::Mode::kReadOnly);
  if (!db.ok()) return db.status();
  // A view or trigger of a crafted file must not run our functions; nothing here writes.
  TW_RETURN_IF_ERROR((*db)->Exec("PRAGMA trusted_schema = OFF; PRAGMA query_only = 1;"));
  auto has_table = [&](const std::string& name) -> Result<bool> {
    Result<store::Stmt> q =
        (*db)->Prepare("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?1");
    if (!q.ok()) return q.status();
    q->Bind(1, name);
    Result<bool> row = Next(*q);
    if (!row.ok()) return row.status();
    return *row && q->Int(0) == 1;
  };
  Result<bool> alembic = has_table("alembic_version");
  if (!alembic.ok()) return InvalidArgument(path + ": not a readable SQLite database: " + alembic.status().message());
  if (!*alembic)
    return InvalidArgument(path + ": not an MLflow tracking database (no alembic_version table)");
  std::string revision = "unknown";
  if (Result<store::Stmt> v = (*db)->Prepare("SELECT version_num FROM alembic_version"); v.ok()) {
    Result<bool> row = Next(*v);
    if (row.ok() && *row) revision = v->Text(0);
  }
  std::string missing;
  for (const auto& [table, columns] : kMlflowTables) {
    Result<bool> t = has_table(table);
    if (!t.ok()) return t.status();
    if (!*t) {
      missing += (missing.empty() ? "" : ", ") + table;
      continue;
    }
    Result<store::Stmt> q = (*db)->Prepare("SELECT count(*) FROM pragma_table_info(?1) WHERE name = ?2");
    if (!q.ok()) return q.status();
    size_t at = 0;
    while (at <= columns.size()) {
      size_t comma = columns.find(',', at);
      if (comma == std::string::npos) comma = columns.size();
      const std::string col = columns.substr(at, comma - at);
      q->Reset();
      q->Bind(1, table).Bind(2, col);
      Result<bool> row = Next(*q);
      if (!row.ok()) return row.status();
      if (!*row || q->Int(0) != 1) missing += (missing.empty() ? "" : ", ") + table + "." + col;
      at = comma + 1;
    }
  }
  if (!missing.empty())
    return InvalidArgument(path + ": an MLflow schema trainwatch cannot read (alembic revision " +
                           revision + "): it has no " + missing +
                           "; MLflow 1.x and later have them (`mlflow db upgrade` brings an older "
                           "store up to date)");
  return db;
}

Result<std::vector<MlflowRow>> MlflowRowsAfter(store::Db& db, int64_t after, int64_t limit) {
  Result<store::Stmt> q = db.Prepare(
      "SELECT m.rowid, m.run_uuid, coalesce(e.name, r.experiment_id, ''), coalesce(r.name, ''), "
      "m.key, m.value, m.is_nan, m.timestamp, m.step "
      "FROM metrics m LEFT JOIN runs r ON r.run_uuid = m.run_uuid "
      "LEFT JOIN experiments e ON e.experiment_id = r.experiment_id "
      "WHERE m.rowid > ?1 ORDER BY m.rowid LIMIT ?2");
  if (!q.ok()) return q.status();
  q->Bind(1, after).Bind(2, limit);
  std::vector<MlflowRow> rows;
  for (;;) {
    Result<bool> row = Next(*q);
    if (!row.ok()) return row.status();
    if (!*row) break;
    MlflowRow r;
    r.rowid = q->Int(0);
    r.run_uuid = q->Text(1);
    r.experiment = q->Text(2);
    r.run_name = q->Text(3);
    r.key = q->Text(4);
    // MLflow stores NaN as 0 with is_nan = 1, and +-Inf as +-DBL_MAX (read back as such).
    r.value = q->Int(6) != 0 ? std::nan("") : q->Real(5);
    r.wall = static_cast<double>(q->Int(7)) / 1000.0;
    r.step = q->Int(8);
    rows.push_back(std::move(r));
  }
  return rows;
}

Result<MlflowRunFacts> MlflowFacts(store::Db& db, const std::string& run_uuid) {
  MlflowRunFacts f;
  f.run_uuid = run_uuid;
  Result<store::Stmt> r = db.Prepare(
      "SELECT coalesce(r.name, ''), coalesce(e.name, r.experiment_id, ''), coalesce(r.status, ''), "
      "r.start_time, r.end_time FROM runs r LEFT JOIN experiments e "
      "ON e.experiment_id = r.experiment_id WHERE r.run_uuid = ?1");
  if (!r.ok()) return r.status();
  r->Bind(1, run_uuid);
  Result<bool> row = Next(*r);
  if (!row.ok()) return row.status();
  if (*row) {
    f.run_name = r->Text(0);
    f.experiment = r->Text(1);
    f.status = r->Text(2);
    if (!r->IsNull(3)) f.start_time = static_cast<double>(r->Int(3)) / 1000.0;
    if (!r->IsNull(4)) f.end_time = static_cast<double>(r->Int(4)) / 1000.0;
  }
  for (const char* table : {"params", "tags"}) {
    Result<store::Stmt> q = db.Prepare(std::string("SELECT key, coalesce(value, '') FROM ") + table +
                                       " WHERE run_uuid = ?1 ORDER BY key LIMIT 4096");
    if (!q.ok()) return q.status();
    q->Bind(1, run_uuid);
    for (;;) {
      Result<bool> next = Next(*q);
      if (!next.ok()) return next.status();
      if (!*next) break;
      (std::string_view(table) == "params" ? f.params : f.tags).emplace_back(q->Text(0), q->Text(1));
    }
  }
  return f;
}

}  // namespace tw::ingest
