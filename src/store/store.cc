#include "store/store.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <cmath>
#include <thread>

#include "base/clock.h"
#include "store/migrations.h"

namespace tw::store {
ValueClass ClassOf(double v) {
  if (std::isnan(v)) return kNaN;
  if (std::isinf(v)) return v > 0 ? kPosInf : kNegInf;
  return kFinite;
}

struct Store::Statements {
  Stmt insert_scalar, insert_histogram, insert_text;
  Stmt find_run, insert_run, find_series, insert_series, update_source, insert_error;
  Stmt insert_event, add_counters;
  Stmt set_config, del_config, set_summary, del_summary, upsert_hparam;
};

namespace {

// Switching a new file to WAL takes an exclusive lock that SQLite does not wait for (its busy
// handler is not called there): of processes opening one new store at once, all but one got
// "database is locked". Wait for it as the busy timeout (5 s) waits for other locks.
Status SetWal(Db& d) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  for (;;) {
    Status st = d.Exec("PRAGMA journal_mode=WAL");
    if (st.ok() || (sqlite3_errcode(d.raw()) & 0xff) != SQLITE_BUSY || std::chrono::steady_clock::now() > deadline)
      return st;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

}  // namespace

Result<std::unique_ptr<Store>> Store::Open(const std::string& path, mode_t create_mode) {
  // A new store is created here with `create_mode` before SQLite would create it 0644 (less
  // the umask): it holds the paths, tags and error reports of every watched logdir. SQLite
  // gives the -wal and -shm files the database file's mode. A store that exists keeps its own.
  // (Not for SQLite's special names: an in-memory or temporary store has no file.)
  const bool special = path.empty() || path == ":memory:" || path.starts_with("file:");
  if (!special) {
    const int fd =
        ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, create_mode);
    if (fd >= 0) {
      // The umask may have taken the group bit of 0640 away: the mode asked for is the mode.
      const int rc = ::fchmod(fd, create_mode);
      const int err = errno;
      ::close(fd);
      if (rc != 0) return IoError(path + ": cannot set the store's mode: " + std::strerror(err));
    } else if (errno != EEXIST) {
      return IoError(path + ": cannot create the store: " + std::strerror(errno));
    }
  }
  Result<std::unique_ptr<Db>> db = Db::Open(path, Db::Mode::kReadWrite);
  if (!db.ok()) return db.status();
  Db& d = **db;
  // SQLite falls back to reading a file it may not write; every write would fail later.
  if (sqlite3_db_readonly(d.raw(), "main") == 1)
    return Status(Code::kReadOnly, path + ": the store is read-only (the file, or its file system, cannot be "
                                          "written)");
  // WAL lets sqlite3/pandas/Grafana read while we write; NORMAL is durable at each
  // checkpoint and crash-safe (a power loss can drop only the last commits, never corrupt).
  Status st = SetWal(d);
  if (st.ok()) st = d.Exec("PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=OFF;");
  if (!st.ok()) {
    if (st.code() == Code::kNotOurs)
      return Status(Code::kNotOurs, path + ": not a trainwatch database (not SQLite)");
    if (st.code() == Code::kCorrupt) return Status(Code::kCorrupt, path + ": the store is corrupt (" + st.message() + ")");
    return st;
  }
  TW_RETURN_IF_ERROR(Migrate(d));
  std::unique_ptr<Store> s(new Store(std::move(*db)));
  TW_RETURN_IF_ERROR(s->PrepareAll());
  return s;
}

Store::Store(std::unique_ptr<Db> db) : db_(std::move(db)) {}
Store::~Store() = default;

Status Store::PrepareAll() {
  st_ = std::make_unique<Statements>();
  struct {
    Stmt* stmt;
    const char* sql;
  } all[] = {
      {&st_->insert_scalar,
       "INSERT OR IGNORE INTO scalars(series_id, step, source_id, offset, vidx, wall_time, value, "
       "value_class) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)"},
      {&st_->insert_histogram,
       "INSERT OR IGNORE INTO histograms(series_id, step, source_id, offset, vidx, wall_time, "
       "count, sum, min, max, buckets) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)"},
      {&st_->insert_text,
       "INSERT OR IGNORE INTO texts(series_id, step, source_id, offset, vidx, wall_time, text) "
       "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)"},
      {&st_->find_run, "SELECT run_id FROM runs WHERE root = ?1 AND name = ?2"},
      {&st_->insert_run, "INSERT INTO runs(root, name, first_seen) VALUES (?1, ?2, ?3)"},
      {&st_->find_series,
       "SELECT series_id FROM series WHERE run_id = ?1 AND tag = ?2 AND kind = ?3"},
      {&st_->insert_series,
       "INSERT INTO series(run_id, tag, kind, plugin, data_class) VALUES (?1, ?2, ?3, ?4, ?5)"},
      {&st_->update_source,
       "UPDATE sources SET size_seen = ?2, committed_offset = ?3, resyncing = ?4, "
       "resync_from = ?5, status = ?6, records = ?7, error_count = ?8, last_read = ?9, "
       "head = ?10, last_record_num = ?11, tail_crc = ?12, wandb_step = ?13, wandb_wall = ?14, "
       "resume_state = ?15 WHERE source_id = ?1"},
      {&st_->insert_error,
       "INSERT INTO ingest_errors(source_id, path, offset, length, kind, detail, time) "
       "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)"},
      {&st_->insert_event,
       "INSERT OR IGNORE INTO run_events(run_id, source_id, offset, kind, step, wall_time, detail) "
       "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)"},
      {&st_->add_counters,
       "UPDATE runs SET images = images + ?2, audio = audio + ?3, graphs = graphs + ?4, "
       "run_metadata = run_metadata + ?5, other_tensors = other_tensors + ?6 WHERE run_id = ?1"},
      {&st_->set_config,
       "INSERT INTO run_config(run_id, key, value_json) VALUES (?1, ?2, ?3) "
       "ON CONFLICT(run_id, key) DO UPDATE SET value_json = excluded.value_json"},
      {&st_->del_config, "DELETE FROM run_config WHERE run_id = ?1 AND key = ?2"},
      {&st_->set_summary,
       "INSERT INTO run_summary_values(run_id, key, value_json) VALUES (?1, ?2, ?3) "
       "ON CONFLICT(run_id, key) DO UPDATE SET value_json = excluded.value_json"},
      {&st_->del_summary, "DELETE FROM run_summary_values WHERE run_id = ?1 AND key = ?2"},
      {&st_->upsert_hparam,
       "INSERT OR REPLACE INTO hparams(run_id, key, value_type, value_num, value_text) "
       "VALUES (?1, ?2, ?3, ?4, ?5)"},
  };
  for (auto& a : all) {
    Result<Stmt> s = db_->Prepare(a.sql);
    if (!s.ok()) return s.status();
    *a.stmt = std::move(*s);
  }
  return Status::Ok();
}

Status Store::Begin() { return db_->Exec("BEGIN IMMEDIATE"); }
Status Store::Commit() { return db_->Exec("COMMIT"); }
void Store::Rollback() { (void)db_->Exec("ROLLBACK"); }

Result<int64_t> Store::EnsureRun(std::string_view root, std::string_view name) {
  Result<std::optional<int64_t>> found = FindRun(root, name);
  if (!found.ok()) return found.status();
  if (*found) return **found;
  TW_RETURN_IF_ERROR(st_->insert_run.Bind(1, root).Bind(2, name).Bind(3, UnixNow()).Run());
  return db_->LastInsertId();
}

Result<std::vector<SeriesRow>> Store::LoadSeries(int64_t run_id) {
  Result<Stmt> s = db_->Prepare(
      "SELECT series_id, tag, kind, plugin, data_class FROM series WHERE run_id = ?1");
  if (!s.ok()) return s.status();
  s->Bind(1, run_id);
  std::vector<SeriesRow> out;
  for (;;) {
    Result<bool> row = s->Step();
    if (!row.ok()) return row.status();
    if (!*row) break;
    SeriesRow r;
    r.series_id = s->Int(0);
    r.tag = s->Text(1);
    r.kind = s->Text(2);
    r.plugin = s->Text(3);
    r.data_class = static_cast<int32_t>(s->Int(4));
    out.push_back(std::move(r));
  }
  // The highest live step of each series, from whichever point table its kind lives in.
  for (SeriesRow& r : out) {
    const char* table = r.kind == "scalar" ? "scalars" : r.kind == "histogram" ? "histograms" : "texts";
    Result<Stmt> m = db_->Prepare(std::string("SELECT step, wall_time FROM ") + table +
                                  " WHERE series_id = ?1 AND superseded = 0 "
                                  "ORDER BY step DESC, wall_time DESC LIMIT 1");
    if (!m.ok()) return m.status();
    m->Bind(1, r.series_id);
    Result<bool> row = m->Step();
    if (!row.ok()) return row.status();
    if (*row) {
      r.max_step = m->Int(0);
      r.max_step_wall = m->Real(1);
    }
  }
  return out;
}

Result<int64_t> Store::EnsureSeries(int64_t run_id, std::string_view tag, std::string_view kind,
                                    std::string_view plugin, int32_t data_class) {
  Stmt& f = st_->find_series;
  f.Bind(1, run_id).Bind(2, tag).Bind(3, kind);
  Result<bool> row = f.Step();
  if (!row.ok()) return row.status();
  if (*row) {
    int64_t id = f.Int(0);
    f.Reset();
    return id;
  }
  f.Reset();
  TW_RETURN_IF_ERROR(st_->insert_series.Bind(1, run_id)
                         .Bind(2, tag)
                         .Bind(3, kind)
                         .Bind(4, plugin)
                         .Bind(5, int64_t{data_class})
                         .Run());
  return db_->LastInsertId();
}

Result<int64_t> Store::CountStarts(int64_t run_id) {
  Result<Stmt> s =
      db_->Prepare("SELECT count(*) FROM run_events e WHERE e.run_id = ?1 AND e.kind = 'start' "
                   "AND NOT EXISTS (SELECT 1 FROM sources s WHERE s.source_id = e.source_id "
                   "AND s.status = 'replaced')");
  if (!s.ok()) return s.status();
  s->Bind(1, run_id);
  Result<bool> row = s->Step();
  if (!row.ok()) return row.status();
  return s->Int(0);
}

namespace {
constexpr const char* kSourceColumns =
    "SELECT source_id, run_id, path, generation, dev, ino, size_seen, committed_offset, "
    "resyncing, resync_from, status, records, error_count, head, last_record_num, "
    "tail_crc, wandb_step, wandb_wall, resume_state FROM sources ";

Result<std::optional<SourceRow>> ReadOneSource(Stmt& s) {
  Result<bool> row = s.Step();
  if (!row.ok()) return row.status();
  if (!*row) return std::optional<SourceRow>();
  SourceRow r;
  r.source_id = s.Int(0);
  r.run_id = s.Int(1);
  r.path = s.Text(2);
  r.generation = s.Int(3);
  r.dev = s.Int(4);
  r.ino = s.Int(5);
  r.size_seen = s.Int(6);
  r.committed_offset = s.Int(7);
  r.resyncing = s.Int(8) != 0;
  r.resync_from = s.Int(9);
  r.status = s.Text(10);
  r.records = s.Int(11);
  r.error_count = s.Int(12);
  r.head = s.Text(13);
  r.last_record_num = s.Int(14);
  if (!s.IsNull(15)) r.tail_crc = s.Int(15);
  if (!s.IsNull(16)) {
    r.wandb_step = s.Int(16);
    r.wandb_wall = s.Real(17);
  }
  if (!s.IsNull(18)) r.resume_state = s.Text(18);
  return std::optional<SourceRow>(std::move(r));
}
}  // namespace

Result<std::optional<SourceRow>> Store::FindSource(std::string_view path) {
  Result<Stmt> s = db_->Prepare(std::string(kSourceColumns) +
                                "WHERE path = ?1 ORDER BY generation DESC LIMIT 1");
  if (!s.ok()) return s.status();
  s->Bind(1, path);
  return ReadOneSource(*s);
}

Result<std::optional<SourceRow>> Store::FindSourceByInode(int64_t dev, int64_t ino) {
  Result<Stmt> s = db_->Prepare(std::string(kSourceColumns) +
                                "WHERE dev = ?1 AND ino = ?2 AND status IN ('active', 'gone') "
                                "ORDER BY status = 'active' DESC, source_id DESC LIMIT 1");
  if (!s.ok()) return s.status();
  s->Bind(1, dev).Bind(2, ino);
  return ReadOneSource(*s);
}

Result<std::vector<std::string>> Store::ActiveSourcePaths() {
  Result<Stmt> s = db_->Prepare("SELECT path FROM sources WHERE status = 'active'");
  if (!s.ok()) return s.status();
  std::vector<std::string> out;
  for (;;) {
    Result<bool> row = s->Step();
    if (!row.ok()) return row.status();
    if (!*row) return out;
    out.push_back(s->Text(0));
  }
}

Status Store::MoveSource(int64_t source_id, std::string_view path, int64_t run_id) {
  Result<Stmt> s = db_->Prepare("UPDATE sources SET path = ?2, run_id = ?3 WHERE source_id = ?1");
  if (!s.ok()) return s.status();
  return s->Bind(1, source_id).Bind(2, path).Bind(3, run_id).Run();
}

Result<std::optional<int64_t>> Store::FindRun(std::string_view root, std::string_view name) {
  Stmt& f = st_->find_run;
  f.Bind(1, root).Bind(2, name);
  Result<bool> row = f.Step();
  if (!row.ok()) return row.status();
  std::optional<int64_t> id;
  if (*row) id = f.Int(0);
  f.Reset();
  return id;
}

Status Store::RenameRun(int64_t run_id, std::string_view name) {
  Result<Stmt> s = db_->Prepare("UPDATE runs SET name = ?2 WHERE run_id = ?1");
  if (!s.ok()) return s.status();
  return s->Bind(1, run_id).Bind(2, name).Run();
}

Status Store::SetDaemonState(std::string_view key, std::string_view value) {
  Result<Stmt> s = db_->Prepare(
      "INSERT INTO daemon_state(key, value, updated) VALUES (?1, ?2, ?3) "
      "ON CONFLICT(key) DO UPDATE SET value = excluded.value, updated = excluded.updated");
  if (!s.ok()) return s.status();
  return s->Bind(1, key).Bind(2, value).Bind(3, UnixNow()).Run();
}

Result<int64_t> Store::AddSource(const SourceRow& r) {
  Result<Stmt> s = db_->Prepare(
      "INSERT INTO sources(run_id, path, generation, dev, ino, first_seen, head) "
      "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)");
  if (!s.ok()) return s.status();
  TW_RETURN_IF_ERROR(s->Bind(1, r.run_id)
                         .Bind(2, r.path)
                         .Bind(3, r.generation)
                         .Bind(4, r.dev)
                         .Bind(5, r.ino)
                         .Bind(6, UnixNow())
                         .BindBlob(7, r.head.data(), r.head.size())
                         .Run());
  return db_->LastInsertId();
}

Status Store::UpdateSource(const SourceRow& r) {
  st_->update_source.Bind(1, r.source_id)
      .Bind(2, r.size_seen)
      .Bind(3, r.committed_offset)
      .Bind(4, int64_t{r.resyncing})
      .Bind(5, r.resync_from)
      .Bind(6, r.status)
      .Bind(7, r.records)
      .Bind(8, r.error_count)
      .Bind(9, UnixNow())
      .BindBlob(10, r.head.data(), r.head.size())
      .Bind(11, r.last_record_num);
  if (r.tail_crc)
    st_->update_source.Bind(12, *r.tail_crc);
  else
    st_->update_source.BindNull(12);
  if (r.wandb_step)
    st_->update_source.Bind(13, *r.wandb_step).Bind(14, r.wandb_wall);
  else
    st_->update_source.BindNull(13).BindNull(14);
  if (r.resume_state)
    st_->update_source.Bind(15, *r.resume_state);
  else
    st_->update_source.BindNull(15);
  return st_->update_source.Run();
}

Status Store::InsertScalar(int64_t series_id, int64_t step, int64_t source_id, int64_t offset,
                           int vidx, double wall_time, double value) {
  Stmt& s = st_->insert_scalar;
  const ValueClass vc = ClassOf(value);
  s.Bind(1, series_id).Bind(2, step).Bind(3, source_id).Bind(4, offset).Bind(5, int64_t{vidx});
  s.Bind(6, wall_time);
  if (vc == kNaN) {
    s.BindNull(7);
  } else {
    s.Bind(7, value);
  }
  s.Bind(8, int64_t{vc});
  return s.Run();
}

Status Store::InsertHistogram(int64_t series_id, int64_t step, int64_t source_id, int64_t offset,
                              int vidx, double wall_time, const model::Histogram& h) {
  Stmt& s = st_->insert_histogram;
  s.Bind(1, series_id).Bind(2, step).Bind(3, source_id).Bind(4, offset).Bind(5, int64_t{vidx});
  s.Bind(6, wall_time).Bind(7, h.count).Bind(8, h.sum).Bind(9, h.min).Bind(10, h.max);
  s.BindBlob(11, h.buckets.data(), h.buckets.size() * sizeof(h.buckets[0]));
  return s.Run();
}

Status Store::InsertText(int64_t series_id, int64_t step, int64_t source_id, int64_t offset,
                         int vidx, double wall_time, std::string_view text) {
  Stmt& s = st_->insert_text;
  s.Bind(1, series_id).Bind(2, step).Bind(3, source_id).Bind(4, offset).Bind(5, int64_t{vidx});
  return s.Bind(6, wall_time).Bind(7, text).Run();
}

Status Store::ReplaceHParams(int64_t run_id, const std::vector<model::HParam>& hparams) {
  Result<Stmt> del = db_->Prepare("DELETE FROM hparams WHERE run_id = ?1");
  if (!del.ok()) return del.status();
  TW_RETURN_IF_ERROR(del->Bind(1, run_id).Run());
  Result<Stmt> ins = db_->Prepare(
      "INSERT OR REPLACE INTO hparams(run_id, key, value_type, value_num, value_text) "
      "VALUES (?1, ?2, ?3, ?4, ?5)");
  if (!ins.ok()) return ins.status();
  for (const auto& p : hparams) {
    using T = model::HParam::Type;
    ins->Bind(1, run_id).Bind(2, p.key);
    switch (p.type) {
      case T::kNumber: ins->Bind(3, "number").Bind(4, p.number).BindNull(5); break;
      case T::kBool: ins->Bind(3, "bool").Bind(4, p.number).BindNull(5); break;
      case T::kString: ins->Bind(3, "string").BindNull(4).Bind(5, p.text); break;
      case T::kNull: ins->Bind(3, "null").BindNull(4).BindNull(5); break;
    }
    TW_RETURN_IF_ERROR(ins->Run());
  }
  return Status::Ok();
}

Status Store::InsertRunEvent(int64_t run_id, int64_t source_id, int64_t offset,
                             std::string_view kind, std::optional<int64_t> step, double wall_time,
                             std::string_view detail) {
  Stmt& s = st_->insert_event;
  s.Bind(1, run_id).Bind(2, source_id).Bind(3, offset).Bind(4, kind);
  if (step) {
    s.Bind(5, *step);
  } else {
    s.BindNull(5);
  }
  return s.Bind(6, wall_time).Bind(7, detail).Run();
}

Status Store::InsertError(std::optional<int64_t> source_id, std::string_view path, int64_t offset,
                          int64_t length, std::string_view kind, std::string_view detail) {
  Stmt& s = st_->insert_error;
  if (source_id) {
    s.Bind(1, *source_id);
  } else {
    s.BindNull(1);
  }
  return s.Bind(2, path).Bind(3, offset).Bind(4, length).Bind(5, kind).Bind(6, detail)
      .Bind(7, UnixNow())
      .Run();
}

Result<int64_t> Store::MarkSuperseded(int64_t run_id, int64_t from_step, double before_wall,
                                      const std::vector<int64_t>* series_ids) {
  int64_t marked = 0;
  for (const char* table : {"scalars", "histograms", "texts"}) {
    const std::string update = std::string("UPDATE ") + table +
                               " SET superseded = 1 WHERE superseded = 0 AND step >= ?2 AND "
                               "wall_time < ?3 AND ";
    if (series_ids) {
      Result<Stmt> s = db_->Prepare(update + "series_id = ?1");
      if (!s.ok()) return s.status();
      for (int64_t id : *series_ids) {
        TW_RETURN_IF_ERROR(s->Bind(1, id).Bind(2, from_step).Bind(3, before_wall).Run());
        marked += db_->Changes();
      }
      continue;
    }
    Result<Stmt> s = db_->Prepare(
        update + "series_id IN (SELECT series_id FROM series WHERE run_id = ?1)");
    if (!s.ok()) return s.status();
    TW_RETURN_IF_ERROR(s->Bind(1, run_id).Bind(2, from_step).Bind(3, before_wall).Run());
    marked += db_->Changes();
  }
  if (marked == 0) return marked;
  // Logged for the fleet shipper (sql/016_fleet_shipping.sql): points it shipped before are
  // marked superseded in PostgreSQL too.
  std::string ids;
  if (series_ids)
    for (int64_t id : *series_ids) ids += (ids.empty() ? "" : ",") + std::to_string(id);
  Result<Stmt> log = db_->Prepare(
      "INSERT INTO supersede_log(run_id, from_step, before_wall, series_ids) VALUES (?1, ?2, ?3, ?4)");
  if (!log.ok()) return log.status();
  log->Bind(1, run_id).Bind(2, from_step).Bind(3, before_wall);
  if (series_ids) log->Bind(4, ids);
  else log->BindNull(4);
  TW_RETURN_IF_ERROR(log->Run());
  return marked;
}

Status Store::MarkSourceSuperseded(int64_t source_id) {
  for (const char* table : {"scalars", "histograms", "texts"}) {
    Result<Stmt> s = db_->Prepare(std::string("UPDATE ") + table +
                                  " SET superseded = 1 WHERE source_id = ?1 AND superseded = 0");
    if (!s.ok()) return s.status();
    TW_RETURN_IF_ERROR(s->Bind(1, source_id).Run());
  }
  // Logged for the fleet shipper, as MarkSuperseded is.
  Result<Stmt> log = db_->Prepare(
      "INSERT INTO supersede_log(run_id, source_id) SELECT run_id, source_id FROM sources WHERE source_id = ?1");
  if (!log.ok()) return log.status();
  return log->Bind(1, source_id).Run();
}

Status Store::AddRunCounters(int64_t run_id, const RunCounters& c) {
  return st_->add_counters.Bind(1, run_id)
      .Bind(2, c.images)
      .Bind(3, c.audio)
      .Bind(4, c.graphs)
      .Bind(5, c.run_metadata)
      .Bind(6, c.other_tensors)
      .Run();
}

namespace {
template <typename T>
void BindOptional(Stmt& s, int i, const std::optional<T>& v) {
  if (v) s.Bind(i, *v);
  else s.BindNull(i);
}
}  // namespace

Status Store::UpdateRunInfo(int64_t run_id, const RunInfo& i) {
  Result<Stmt> s = db_->Prepare(
      "UPDATE runs SET format = COALESCE(?2, format), external_id = COALESCE(?3, external_id), "
      "project = COALESCE(?4, project), entity = COALESCE(?5, entity), "
      "display_name = COALESCE(?6, display_name), sdk_version = COALESCE(?7, sdk_version), "
      "start_time = COALESCE(?8, start_time), exit_code = COALESCE(?9, exit_code) "
      "WHERE run_id = ?1");
  if (!s.ok()) return s.status();
  s->Bind(1, run_id);
  BindOptional(*s, 2, i.format);
  BindOptional(*s, 3, i.external_id);
  BindOptional(*s, 4, i.project);
  BindOptional(*s, 5, i.entity);
  BindOptional(*s, 6, i.display_name);
  BindOptional(*s, 7, i.sdk_version);
  BindOptional(*s, 8, i.start_time);
  BindOptional(*s, 9, i.exit_code);
  return s->Run();
}

Result<std::optional<int64_t>> Store::LinkContinuedRun(int64_t run_id) {
  Result<Stmt> s = db_->Prepare(
      "SELECT o.run_id FROM runs r JOIN runs o ON o.external_id = r.external_id "
      "AND o.run_id != r.run_id AND o.format = r.format "
      "WHERE r.run_id = ?1 AND (o.start_time < r.start_time OR (o.start_time = r.start_time "
      "AND o.name < r.name) OR (r.start_time IS NULL AND o.name < r.name)) "
      "ORDER BY o.start_time DESC, o.name DESC LIMIT 1");
  if (!s.ok()) return s.status();
  s->Bind(1, run_id);
  Result<bool> row = s->Step();
  if (!row.ok()) return row.status();
  if (!*row) return std::optional<int64_t>();
  const int64_t prev = s->Int(0);
  Result<Stmt> u = db_->Prepare("UPDATE runs SET continues_run_id = ?2 WHERE run_id = ?1");
  if (!u.ok()) return u.status();
  TW_RETURN_IF_ERROR(u->Bind(1, run_id).Bind(2, prev).Run());
  return std::optional<int64_t>(prev);
}

Status Store::SetRunValue(RunValues table, int64_t run_id, std::string_view key,
                          std::optional<std::string_view> value_json) {
  const bool config = table == RunValues::kConfig;
  if (!value_json) return (config ? st_->del_config : st_->del_summary).Bind(1, run_id).Bind(2, key).Run();
  return (config ? st_->set_config : st_->set_summary).Bind(1, run_id).Bind(2, key).Bind(3, *value_json).Run();
}

Status Store::UpsertHParam(int64_t run_id, const model::HParam& p) {
  using T = model::HParam::Type;
  Stmt& ins = st_->upsert_hparam;
  ins.Bind(1, run_id).Bind(2, p.key);
  switch (p.type) {
    case T::kNumber: ins.Bind(3, "number").Bind(4, p.number).BindNull(5); break;
    case T::kBool: ins.Bind(3, "bool").Bind(4, p.number).BindNull(5); break;
    case T::kString: ins.Bind(3, "string").BindNull(4).Bind(5, p.text); break;
    case T::kNull: ins.Bind(3, "null").BindNull(4).BindNull(5); break;
  }
  return ins.Run();
}

Status Store::RemoveHParam(int64_t run_id, std::string_view key) {
  Result<Stmt> s = db_->Prepare(
      "DELETE FROM hparams WHERE run_id = ?1 AND (key = ?2 OR substr(key, 1, length(?2) + 1) = ?2 || '.')");
  if (!s.ok()) return s.status();
  return s->Bind(1, run_id).Bind(2, key).Run();
}

Status Store::SetSeriesStepMetric(int64_t series_id, std::string_view step_metric) {
  Result<Stmt> s = db_->Prepare("UPDATE series SET step_metric = ?2 WHERE series_id = ?1");
  if (!s.ok()) return s.status();
  return s->Bind(1, series_id).Bind(2, step_metric).Run();
}

Result<std::unique_ptr<Db>> OpenReadOnly(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return NotFound(path + ": no such database");
  Result<std::unique_ptr<Db>> db = Db::Open(path, Db::Mode::kReadOnly);
  if (!db.ok()) return db.status();
  Status ours = CheckOurs(**db);
  if (ours.ok()) return db;
  const int rc = sqlite3_extended_errcode((*db)->raw());
  if ((rc & 0xff) != SQLITE_CANTOPEN && (rc & 0xff) != SQLITE_READONLY) return ours;
  // A WAL store on read-only media (a read-only mount, directory or file): a reader needs its
  // -shm file, which cannot be made there. Nothing can be writing it, so read it as immutable.
  const Status unreadable(Code::kReadOnly, path + ": cannot read the store where it is: SQLite needs to create " +
                                               path + "-shm beside it, and its directory or mount is read-only (" +
                                               sqlite3_errstr(rc) + ")");
  Result<std::unique_ptr<Db>> frozen = Db::Open(path, Db::Mode::kImmutable);
  if (!frozen.ok()) return unreadable;
  if (Status again = CheckOurs(**frozen); !again.ok()) return again;
  return frozen;
}

}  // namespace tw::store
