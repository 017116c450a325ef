// The shipper: local store -> PostgreSQL, exactly once (docs/fleet.md, "Shipping").
//
// A pass reads one snapshot of the local store (a read transaction) and ships, in this order:
//   1. each source whose committed_offset or records moved since its mark (fleet_shipped):
//      its run, the run's series and hparams, the source row, and its points at offsets >= the
//      mark. Sources go in batches of about batch_rows points: a batch is COPYed into staging
//      tables and inserted ON CONFLICT DO NOTHING (runs, series, sources: DO UPDATE, they
//      change), PostgreSQL commits, and only then do the batch's marks advance locally. A crash
//      or an outage between the two ships the batch again, and the conflicts absorb it.
//   2. once every source of the snapshot is shipped: finding transitions and the findings they
//      changed, run_lifecycle events, then the supersede_log (points marked superseded after
//      they were stored: the same points are marked in PostgreSQL; they were shipped in 1).
// The points of one source are appended in offset order by every ingester (a byte offset, a
// line, an MLflow row id, a trainer_state.json history index), so "offset >= mark" finds what
// is new; the index that finds it (fleet_*_by_source) is created when the fleet is configured.
#include <sqlite3.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <optional>
#include <set>

#include "base/clock.h"
#include "base/log.h"
#include "fleet/fleet.h"
#include "fleet/pg.h"
#include "fleet/schema.h"
#include "store/db.h"
#include "store/store.h"

namespace tw::fleet {

using store::Db;
using store::Stmt;

struct Shipper::Conns {
  std::unique_ptr<Db> reader;  // a pass's snapshot
  std::unique_ptr<Db> writer;  // fleet_shipped, fleet_marks, daemon_state 'fleet'
  std::unique_ptr<Pg> pg;
};

namespace {

constexpr const char* kPointTables[] = {"scalars", "histograms", "texts"};

// Every staging table: the real table's columns, emptied at each commit.
constexpr const char* kStaged[] = {"runs",     "series",   "sources",             "scalars",       "histograms",
                                   "texts",    "findings", "finding_transitions", "run_lifecycle", "hparams"};

// One row of a SQLite statement as a COPY text line, `host` first: each value by its type.
void AppendRow(const std::string& host, const Stmt& s, std::string* out) {
  CopyText(host, out);
  for (int c = 0; c < s.ColumnCount(); ++c) {
    out->push_back('\t');
    switch (s.ColumnType(c)) {
      case SQLITE_NULL: out->append("\\N"); break;
      case SQLITE_INTEGER: out->append(std::to_string(s.Int(c))); break;
      case SQLITE_FLOAT: CopyDouble(s.Real(c), out); break;
      case SQLITE_BLOB: {
        const void* p = sqlite3_column_blob(s.raw(), c);
        CopyBytea(p, static_cast<size_t>(sqlite3_column_bytes(s.raw(), c)), out);
        break;
      }
      default: CopyText(s.Text(c), out);
    }
  }
  out->push_back('\n');
}

// COPYs every row `s` gives into `table`'s staging table (columns: host, then the statement's
// column names). `max_col` >= 0: the largest value of that column is kept in *max_seen.
Result<int64_t> CopyStatement(Pg& pg, const std::string& host, const std::string& table, Stmt& s,
                              const std::function<bool()>& stopping, int max_col = -1,
                              int64_t* max_seen = nullptr) {
  std::string cols = "host";
  for (int c = 0; c < s.ColumnCount(); ++c) cols += std::string(",\"") + s.ColumnName(c) + "\"";
  return pg.CopyIn("COPY stage_" + table + " (" + cols + ") FROM STDIN", [&](std::string* buf) -> Result<bool> {
    for (int n = 0; n < 4096; ++n) {
      Result<bool> row = s.Step();
      if (!row.ok()) return row.status();
      if (!*row) return false;
      if (max_col >= 0) *max_seen = std::max(*max_seen, s.Int(max_col));
      AppendRow(host, s, buf);
    }
    if (stopping()) return Status(Internal("stopping"));
    return true;
  });
}

struct SourceToShip {
  int64_t source_id, run_id, committed_offset, records, mark;  // mark: ship offsets >= it
  int64_t max_offset;  // after shipping: the mark to keep
  bool partial = false;  // a chunk: more points of it wait (its committed_offset not reached)
};

constexpr int64_t kNoLimit = INT64_MAX;

}  // namespace

// One pass over one snapshot.
class Shipper::Pass {
 public:
  Pass(Conns& c, const FleetOptions& o, std::function<bool()> stopping)
      : c_(c), o_(o), stopping_(std::move(stopping)) {}

  Result<PassStats> Run() {
    TW_RETURN_IF_ERROR(c_.reader->Exec("BEGIN"));
    Result<PassStats> r = Ship();
    (void)c_.reader->Exec("COMMIT");  // ends the read snapshot
    if (!r.ok()) (void)c_.pg->Exec("ROLLBACK");
    return r;
  }

 private:
  Result<PassStats> Ship() {
    PassStats stats;
    Result<std::vector<SourceToShip>> sources = AdvancedSources();
    if (!sources.ok()) return sources.status();
    std::vector<SourceToShip> batch;
    int64_t batch_rows = 0;
    for (SourceToShip& s : *sources) {
      for (bool more = true; more;) {
        if (batch.empty()) TW_RETURN_IF_ERROR(c_.pg->Exec("BEGIN"));
        Result<int64_t> rows = ShipSource(s);
        if (!rows.ok()) return rows.status();
        batch.push_back(s);
        batch_rows += *rows;
        stats.rows += *rows;
        more = s.partial;
        if (batch_rows >= o_.batch_rows || more) {
          TW_RETURN_IF_ERROR(CommitBatch(batch));
          batch_rows = 0;
        }
        s.mark = s.max_offset;
      }
      ++stats.sources;
    }
    if (!batch.empty()) TW_RETURN_IF_ERROR(CommitBatch(batch));
    // Everything the snapshot holds of the points is in PostgreSQL: what refers to them now.
    Result<int64_t> rest = ShipFindingsAndEvents(&stats.superseded);
    if (!rest.ok()) return rest.status();
    stats.rows += *rest;
    stats.complete = true;
    return stats;
  }

  Result<std::vector<SourceToShip>> AdvancedSources() {
    Result<Stmt> s = c_.reader->Prepare(
        "SELECT s.source_id, s.run_id, s.committed_offset, s.records, COALESCE(f.max_offset, -1) "
        "FROM sources s LEFT JOIN fleet_shipped f USING (source_id) "
        "WHERE f.source_id IS NULL OR f.committed_offset <> s.committed_offset OR f.records <> s.records "
        "ORDER BY s.source_id");
    if (!s.ok()) return s.status();
    std::vector<SourceToShip> out;
    TW_RETURN_IF_ERROR(s->EachRow([&] {
      out.push_back({s->Int(0), s->Int(1), s->Int(2), s->Int(3), s->Int(4), s->Int(4)});
    }));
    return out;
  }

  // Where this chunk of a source's new points ends (exclusive): the offset of its
  // batch_rows-th scalar past the mark, so a huge file ships (and its mark advances) in
  // batch_rows steps; kNoLimit when the rest fits. A chunk always takes whole offsets (every
  // value of one record), and at least one.
  Result<int64_t> ChunkEnd(const SourceToShip& src) {
    Result<Stmt> s = c_.reader->Prepare(
        "SELECT offset FROM scalars INDEXED BY fleet_scalars_by_source WHERE source_id = ?1 AND offset >= ?2 "
        "ORDER BY offset LIMIT 1 OFFSET ?3");
    if (!s.ok()) return s.status();
    s->Bind(1, src.source_id).Bind(2, src.mark).Bind(3, o_.batch_rows);
    Result<bool> row = s->Step();
    if (!row.ok()) return row.status();
    if (!*row) return kNoLimit;
    const int64_t end = s->Int(0);
    if (end > src.mark) return end;
    // More than batch_rows values at the mark's one offset: that offset whole, then the next.
    Result<Stmt> next = c_.reader->Prepare(
        "SELECT min(offset) FROM scalars INDEXED BY fleet_scalars_by_source WHERE source_id = ?1 AND offset > ?2");
    if (!next.ok()) return next.status();
    next->Bind(1, src.source_id).Bind(2, src.mark);
    Result<bool> got = next->Step();
    if (!got.ok()) return got.status();
    return next->IsNull(0) ? kNoLimit : next->Int(0);
  }

  // The run (with its series and hparams) once per batch, the source row, and a chunk of its
  // new points (src.partial when more wait).
  Result<int64_t> ShipSource(SourceToShip& src) {
    int64_t rows = 0;
    if (runs_in_batch_.insert(src.run_id).second) {
      Result<int64_t> n = ShipRun(src.run_id);
      if (!n.ok()) return n;
      rows += *n;
    }
    Result<int64_t> n = CopyLocal("sources",
                                  "SELECT source_id, run_id, path, generation, status, committed_offset, records "
                                  "FROM sources WHERE source_id = ?1",
                                  src.source_id);
    if (!n.ok()) return n;
    rows += *n;
    Result<int64_t> end = ChunkEnd(src);
    if (!end.ok()) return end;
    for (const char* table : kPointTables) {
      const std::string extra = table == std::string("scalars")      ? "value, value_class"
                                : table == std::string("histograms") ? "count, sum, min, max, buckets"
                                                                     : "text";
      Result<Stmt> s = c_.reader->Prepare(std::string("SELECT series_id, step, source_id, offset, vidx, wall_time, ") +
                                          extra + ", superseded FROM " + table +
                                          " INDEXED BY fleet_" + table + "_by_source"
                                          " WHERE source_id = ?1 AND offset >= ?2 AND offset < ?3");
      if (!s.ok()) return s.status();
      s->Bind(1, src.source_id).Bind(2, src.mark).Bind(3, *end);
      Result<int64_t> copied = CopyStatement(*c_.pg, o_.host, table, *s, stopping_, 3, &src.max_offset);
      if (!copied.ok()) return copied;
      rows += *copied;
    }
    src.partial = *end != kNoLimit;
    if (src.partial) src.max_offset = *end;  // the next chunk starts there
    return rows;
  }

  Result<int64_t> ShipRun(int64_t run_id) {
    int64_t rows = 0;
    Result<int64_t> n = CopyLocal("runs",
                                  "SELECT run_id, root, name, format, first_seen, external_id, project, entity, "
                                  "display_name, start_time, exit_code FROM runs WHERE run_id = ?1",
                                  run_id);
    if (!n.ok()) return n;
    rows += *n;
    n = CopyLocal("series",
                  "SELECT series_id, run_id, tag, kind, plugin, data_class, step_metric FROM series "
                  "WHERE run_id = ?1",
                  run_id);
    if (!n.ok()) return n;
    rows += *n;
    // hparams are replaced whole locally (a later session_start_info wins): likewise here.
    Result<PgRows> del = c_.pg->Query("DELETE FROM hparams WHERE host = $1 AND run_id = $2",
                                      {o_.host, std::to_string(run_id)});
    if (!del.ok()) return del.status();
    n = CopyLocal("hparams", "SELECT run_id, key, value_type, value_num, value_text FROM hparams WHERE run_id = ?1",
                  run_id);
    if (!n.ok()) return n;
    return rows + *n;
  }

  Result<int64_t> CopyLocal(const std::string& table, const std::string& sql, int64_t id) {
    Result<Stmt> s = c_.reader->Prepare(sql);
    if (!s.ok()) return s.status();
    s->Bind(1, id);
    return CopyStatement(*c_.pg, o_.host, table, *s, stopping_);
  }

  // Staged rows into the real tables, PostgreSQL's commit, then the local marks.
  Status CommitBatch(std::vector<SourceToShip>& batch) {
    TW_RETURN_IF_ERROR(c_.pg->Exec(
        "INSERT INTO runs SELECT * FROM stage_runs ON CONFLICT (host, run_id) DO UPDATE SET "
        "root = EXCLUDED.root, name = EXCLUDED.name, format = EXCLUDED.format, external_id = EXCLUDED.external_id, "
        "project = EXCLUDED.project, entity = EXCLUDED.entity, display_name = EXCLUDED.display_name, "
        "start_time = EXCLUDED.start_time, exit_code = EXCLUDED.exit_code;"
        "INSERT INTO series SELECT * FROM stage_series ON CONFLICT (host, series_id) DO UPDATE SET "
        "tag = EXCLUDED.tag, plugin = EXCLUDED.plugin, data_class = EXCLUDED.data_class, "
        "step_metric = EXCLUDED.step_metric;"
        "INSERT INTO sources SELECT * FROM stage_sources ON CONFLICT (host, source_id) DO UPDATE SET "
        "run_id = EXCLUDED.run_id, path = EXCLUDED.path, status = EXCLUDED.status, "
        "committed_offset = EXCLUDED.committed_offset, records = EXCLUDED.records;"
        "INSERT INTO hparams SELECT * FROM stage_hparams ON CONFLICT DO NOTHING;"
        "INSERT INTO scalars SELECT * FROM stage_scalars ON CONFLICT DO NOTHING;"
        "INSERT INTO histograms SELECT * FROM stage_histograms ON CONFLICT DO NOTHING;"
        "INSERT INTO texts SELECT * FROM stage_texts ON CONFLICT DO NOTHING"));
    TW_RETURN_IF_ERROR(c_.pg->Exec("COMMIT"));
    // PostgreSQL holds the batch: its marks may advance. (A crash here ships it again.)
    TW_RETURN_IF_ERROR(c_.writer->Exec("BEGIN IMMEDIATE"));
    Result<Stmt> s = c_.writer->Prepare(
        "INSERT INTO fleet_shipped(source_id, committed_offset, records, max_offset) VALUES (?1, ?2, ?3, ?4) "
        "ON CONFLICT (source_id) DO UPDATE SET committed_offset = excluded.committed_offset, "
        "records = excluded.records, max_offset = max(max_offset, excluded.max_offset)");
    if (!s.ok()) {
      (void)c_.writer->Exec("ROLLBACK");
      return s.status();
    }
    for (const SourceToShip& b : batch) {
      // A chunk: its committed_offset is not marked reached, so an interrupted pass goes on
      // from the chunk's end.
      if (Status st = s->Bind(1, b.source_id)
                          .Bind(2, b.partial ? int64_t{-1} : b.committed_offset)
                          .Bind(3, b.partial ? int64_t{-1} : b.records)
                          .Bind(4, b.max_offset)
                          .Run();
          !st.ok()) {
        (void)c_.writer->Exec("ROLLBACK");
        return st;
      }
    }
    batch.clear();
    runs_in_batch_.clear();
    return CommitWriter();
  }

  Status CommitWriter() {
    if (Status st = c_.writer->Exec("COMMIT"); !st.ok()) {
      (void)c_.writer->Exec("ROLLBACK");
      return st;
    }
    return Status::Ok();
  }

  Result<int64_t> Mark(const char* name) {
    Result<Stmt> s = c_.reader->Prepare("SELECT value FROM fleet_marks WHERE name = ?1");
    if (!s.ok()) return s.status();
    s->Bind(1, std::string_view(name));
    Result<bool> row = s->Step();
    if (!row.ok()) return row.status();
    return *row ? s->Int(0) : 0;
  }

  Result<int64_t> MaxId(const char* table, const char* column) {
    Result<Stmt> s = c_.reader->Prepare(std::string("SELECT COALESCE(max(") + column + "), 0) FROM " + table);
    if (!s.ok()) return s.status();
    Result<bool> row = s->Step();
    if (!row.ok()) return row.status();
    return s->Int(0);
  }

  // Findings (through their transitions), run events and supersede marks past their marks, in
  // one PostgreSQL transaction; the marks advance after it commits.
  Result<int64_t> ShipFindingsAndEvents(int64_t* superseded) {
    Result<int64_t> t_mark = Mark("finding_transitions"), e_mark = Mark("run_lifecycle"),
                    s_mark = Mark("supersede_log");
    if (!t_mark.ok()) return t_mark;
    if (!e_mark.ok()) return e_mark;
    if (!s_mark.ok()) return s_mark;
    Result<int64_t> t_max = MaxId("finding_transitions", "transition_id"),
                    e_max = MaxId("run_lifecycle", "event_id"), s_max = MaxId("supersede_log", "seq");
    if (!t_max.ok()) return t_max;
    if (!e_max.ok()) return e_max;
    if (!s_max.ok()) return s_max;
    if (*t_max <= *t_mark && *e_max <= *e_mark && *s_max <= *s_mark) return 0;
    int64_t rows = 0;
    TW_RETURN_IF_ERROR(c_.pg->Exec("BEGIN"));
    Result<int64_t> n = CopyLocal("findings",
                                  "SELECT finding_id, rule, run_id, series_id, severity, state, first_seen, last_seen, "
                                  "fired_at, resolved_at, onset_step, first_step, last_step, message, cause, fix, "
                                  "evidence FROM findings WHERE finding_id IN "
                                  "(SELECT finding_id FROM finding_transitions WHERE transition_id > ?1)",
                                  *t_mark);
    if (!n.ok()) return n;
    rows += *n;
    n = CopyLocal("finding_transitions",
                  "SELECT transition_id, finding_id, time, from_state, to_state, severity, message "
                  "FROM finding_transitions WHERE transition_id > ?1",
                  *t_mark);
    if (!n.ok()) return n;
    rows += *n;
    n = CopyLocal("run_lifecycle",
                  "SELECT event_id, run_id, kind, cause_key, time, last_wall, last_step, how, title, message, advice "
                  "FROM run_lifecycle WHERE event_id > ?1",
                  *e_mark);
    if (!n.ok()) return n;
    rows += *n;
    TW_RETURN_IF_ERROR(c_.pg->Exec(
        "INSERT INTO findings SELECT * FROM stage_findings ON CONFLICT (host, finding_id) DO UPDATE SET "
        "severity = EXCLUDED.severity, state = EXCLUDED.state, last_seen = EXCLUDED.last_seen, "
        "fired_at = EXCLUDED.fired_at, resolved_at = EXCLUDED.resolved_at, onset_step = EXCLUDED.onset_step, "
        "first_step = EXCLUDED.first_step, last_step = EXCLUDED.last_step, message = EXCLUDED.message, "
        "cause = EXCLUDED.cause, fix = EXCLUDED.fix, evidence = EXCLUDED.evidence;"
        "INSERT INTO finding_transitions SELECT * FROM stage_finding_transitions ON CONFLICT DO NOTHING;"
        "INSERT INTO run_lifecycle SELECT * FROM stage_run_lifecycle ON CONFLICT DO NOTHING"));
    Result<int64_t> marked = ShipSupersedes(*s_mark);
    if (!marked.ok()) return marked;
    *superseded = *marked;
    TW_RETURN_IF_ERROR(c_.pg->Exec("COMMIT"));
    TW_RETURN_IF_ERROR(c_.writer->Exec("BEGIN IMMEDIATE"));
    Result<Stmt> s = c_.writer->Prepare(
        "INSERT INTO fleet_marks(name, value) VALUES (?1, ?2) "
        "ON CONFLICT (name) DO UPDATE SET value = max(value, excluded.value)");
    Status st = s.ok() ? Status::Ok() : s.status();
    for (auto [name, value] : {std::pair{"finding_transitions", *t_max}, std::pair{"run_lifecycle", *e_max},
                               std::pair{"supersede_log", *s_max}})
      if (st.ok()) st = s->Bind(1, std::string_view(name)).Bind(2, value).Run();
    if (!st.ok()) {
      (void)c_.writer->Exec("ROLLBACK");
      return st;
    }
    TW_RETURN_IF_ERROR(CommitWriter());
    return rows;
  }

  // The keys each supersede_log entry marked (superseded = 1 now, so a later point the same
  // condition would match but that was not marked stays live), marked in PostgreSQL too.
  Result<int64_t> ShipSupersedes(int64_t mark) {
    Result<Stmt> log = c_.reader->Prepare(
        "SELECT seq, run_id, source_id, from_step, before_wall, series_ids FROM supersede_log WHERE seq > ?1 "
        "ORDER BY seq");
    if (!log.ok()) return log.status();
    log->Bind(1, mark);
    struct Entry {
      int64_t run_id;
      std::optional<int64_t> source_id;
      int64_t from_step;
      double before_wall;
      std::optional<std::string> series_ids;
    };
    std::vector<Entry> entries;
    TW_RETURN_IF_ERROR(log->EachRow([&] {
      entries.push_back({log->Int(1), log->IsNull(2) ? std::nullopt : std::optional<int64_t>(log->Int(2)),
                         log->Int(3), log->Real(4),
                         log->IsNull(5) ? std::nullopt : std::optional<std::string>(log->Text(5))});
    }));
    if (entries.empty()) return 0;
    for (const char* table : kPointTables) {
      TW_RETURN_IF_ERROR(c_.pg->Exec("TRUNCATE stage_keys"));
      for (const Entry& e : entries) {
        const std::string keys = std::string("SELECT series_id, step, source_id, offset, vidx FROM ") + table;
        if (e.source_id) {
          Result<int64_t> n = CopyLocal("keys", keys + " INDEXED BY fleet_" + table +
                                                    "_by_source WHERE source_id = ?1 AND superseded = 1",
                                        *e.source_id);
          if (!n.ok()) return n;
          continue;
        }
        std::vector<int64_t> series;
        if (e.series_ids) {
          size_t at = 0;
          while (at < e.series_ids->size()) {
            size_t comma = e.series_ids->find(',', at);
            if (comma == std::string::npos) comma = e.series_ids->size();
            series.push_back(std::stoll(e.series_ids->substr(at, comma - at)));
            at = comma + 1;
          }
        } else {
          Result<Stmt> s = c_.reader->Prepare("SELECT series_id FROM series WHERE run_id = ?1");
          if (!s.ok()) return s.status();
          s->Bind(1, e.run_id);
          TW_RETURN_IF_ERROR(s->EachRow([&] { series.push_back(s->Int(0)); }));
        }
        for (int64_t id : series) {
          Result<Stmt> s = c_.reader->Prepare(keys + " WHERE series_id = ?1 AND step >= ?2 AND wall_time < ?3 "
                                                     "AND superseded = 1");
          if (!s.ok()) return s.status();
          s->Bind(1, id).Bind(2, e.from_step).Bind(3, e.before_wall);
          Result<int64_t> n = CopyStatement(*c_.pg, o_.host, "keys", *s, stopping_);
          if (!n.ok()) return n;
        }
      }
      Result<PgRows> upd = c_.pg->Query(
          std::string("UPDATE ") + table + " p SET superseded = 1 FROM stage_keys k WHERE p.host = k.host AND "
          "p.series_id = k.series_id AND p.step = k.step AND p.source_id = k.source_id AND "
          "p.\"offset\" = k.\"offset\" AND p.vidx = k.vidx AND p.superseded = 0");
      if (!upd.ok()) return upd.status();
    }
    return static_cast<int64_t>(entries.size());
  }

  Conns& c_;
  const FleetOptions& o_;
  std::function<bool()> stopping_;
  std::set<int64_t> runs_in_batch_;
};

namespace {
Result<Lag> LagOf(Db& db) {
  Result<Stmt> s = db.Prepare(
      "SELECT count(*), COALESCE(sum(max(s.committed_offset - COALESCE(f.committed_offset, 0), 0)), 0) "
      "FROM sources s LEFT JOIN fleet_shipped f USING (source_id) "
      "WHERE f.source_id IS NULL OR f.committed_offset <> s.committed_offset OR f.records <> s.records");
  if (!s.ok()) return s.status();
  Result<bool> row = s->Step();
  if (!row.ok()) return row.status();
  return Lag{s->Int(0), s->Int(1)};
}
}  // namespace

Result<Lag> ReadLag(const std::string& db_path) {
  Result<std::unique_ptr<Db>> db = store::OpenReadOnly(db_path);
  if (!db.ok()) return db.status();
  return LagOf(**db);
}

Shipper::Shipper(std::string db_path, FleetOptions options)
    : db_path_(std::move(db_path)), options_(std::move(options)), conns_(std::make_unique<Conns>()) {}

Shipper::~Shipper() { Stop(); }

void Shipper::Start() {
  started_ = UnixNow();
  log::Info("fleet: shipping to PostgreSQL (" + DescribeConninfo(options_.conninfo) + ") as host '" + options_.host +
            "'");
  thread_ = std::thread([this] { Loop(); });
}

void Shipper::Stop() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Shipper::Wake() {
  {
    std::lock_guard<std::mutex> l(mu_);
    woken_ = true;
  }
  cv_.notify_all();
}

Status Shipper::EnsureOpen() {
  Conns& c = *conns_;
  if (!c.reader) {
    Result<std::unique_ptr<Db>> r = store::OpenReadOnly(db_path_);
    if (!r.ok()) return r.status();
    Result<std::unique_ptr<Db>> w = Db::Open(db_path_, Db::Mode::kReadWrite);
    if (!w.ok()) return w.status();
    // The points of a source by offset: what "new since the mark" needs. Only fleet hosts pay
    // for these indexes (built once, here, when [fleet] is first configured).
    for (const char* t : kPointTables)
      TW_RETURN_IF_ERROR((*w)->Exec(std::string("CREATE INDEX IF NOT EXISTS fleet_") + t + "_by_source ON " + t +
                                    "(source_id, offset)"));
    c.reader = std::move(*r);
    c.writer = std::move(*w);
  }
  if (c.pg && !c.pg->ok()) c.pg.reset();
  if (!c.pg) {
    Result<std::unique_ptr<Pg>> pg = Pg::Connect(options_.conninfo, options_.password, "trainwatch " + options_.host);
    if (!pg.ok()) return pg.status();
    TW_RETURN_IF_ERROR(Migrate(**pg));
    std::string stage;
    for (const char* t : kStaged)
      stage += std::string("CREATE TEMP TABLE stage_") + t + " (LIKE " + t + ") ON COMMIT DELETE ROWS;";
    // The keys of points to mark superseded (ShipSupersedes).
    stage += "CREATE TEMP TABLE stage_keys (host TEXT, series_id BIGINT, step BIGINT, source_id BIGINT, "
             "\"offset\" BIGINT, vidx INTEGER) ON COMMIT DELETE ROWS";
    TW_RETURN_IF_ERROR((*pg)->Exec(stage));
    c.pg = std::move(*pg);
  }
  return Status::Ok();
}

Result<PassStats> Shipper::ShipOnce() {
  Result<PassStats> r = PassStats{};
  if (Status open = EnsureOpen(); !open.ok()) {
    r = open;
  } else {
    Pass pass(*conns_, options_, [this] {
      std::lock_guard<std::mutex> l(mu_);
      return stop_;
    });
    r = pass.Run();
    if (!r.ok() && conns_->pg && !conns_->pg->ok()) conns_->pg.reset();
  }
  if (!conns_->reader || !conns_->writer) return r;  // the store itself could not be opened
  // The heartbeat and the lag, in PostgreSQL (`fleet status`) and locally (`status`).
  Result<Lag> lag = LagOf(*conns_->reader);
  const Lag l = lag.ok() ? *lag : Lag{};
  const double now = UnixNow();
  if (conns_->pg) {
    std::string roots;
    for (const auto& root : options_.roots) roots += (roots.empty() ? "" : "\n") + root;
    Result<PgRows> hb = conns_->pg->Query(
        "INSERT INTO hosts(host, started, last_heartbeat, last_shipped, lag_sources, lag_bytes, roots, version) "
        "VALUES ($1, $2, $3, $4, $5, $6, $7, '0.1.0') ON CONFLICT (host) DO UPDATE SET started = EXCLUDED.started, "
        "last_heartbeat = EXCLUDED.last_heartbeat, "
        "last_shipped = COALESCE(EXCLUDED.last_shipped, hosts.last_shipped), lag_sources = EXCLUDED.lag_sources, "
        "lag_bytes = EXCLUDED.lag_bytes, roots = EXCLUDED.roots, version = EXCLUDED.version",
        {options_.host, std::to_string(started_), std::to_string(now),
         r.ok() && r->rows > 0 ? std::optional<std::string>(std::to_string(now)) : std::nullopt,
         std::to_string(l.sources), std::to_string(l.bytes), roots});
    if (!hb.ok() && r.ok()) r = hb.status();
  }
  const std::string line = (r.ok() ? std::string("shipping") : "waiting: " + r.status().message()) + " to " +
                           DescribeConninfo(options_.conninfo) + " as " + options_.host + "; " +
                           std::to_string(l.sources) + " files (" + std::to_string(l.bytes) +
                           " bytes) not shipped yet";
  if (line == state_line_) return r;  // said already
  state_line_ = line;
  if (Result<Stmt> s = conns_->writer->Prepare(
          "INSERT INTO daemon_state(key, value, updated) VALUES ('fleet', ?1, ?2) "
          "ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated = excluded.updated");
      s.ok())
    (void)s->Bind(1, line).Bind(2, now).Run();
  return r;
}

void Shipper::Report(const Status& st) {
  const std::string now_condition = st.ok() ? "" : st.message();
  if (now_condition != condition_) {
    if (!now_condition.empty())
      log::Warning("fleet: " + now_condition + "; the backlog stays in the local store and is shipped when "
                   "PostgreSQL can be reached (retrying)");
    else
      log::Info("fleet: shipping again after " + std::to_string(static_cast<int64_t>(UnixNow() - condition_since_)) +
                " s");
    condition_ = now_condition;
    condition_since_ = UnixNow();
  }
  failures_ = st.ok() ? 0 : failures_ + 1;
}

void Shipper::Loop() {
  for (;;) {
    {
      std::lock_guard<std::mutex> l(mu_);
      if (stop_) return;
      woken_ = false;
    }
    Result<PassStats> r = ShipOnce();
    const Status st = r.ok() ? Status::Ok() : r.status();
    if (r.ok() && r->rows > 0)
      log::Debug("fleet: shipped " + std::to_string(r->rows) + " rows of " + std::to_string(r->sources) + " files");
    {
      std::lock_guard<std::mutex> l(mu_);
      if (stop_) return;  // a pass cut short by Stop() is no failure to report
    }
    Report(st);
    // After a failure: 1 s doubling to 30 s; else the interval, or sooner when woken.
    const int64_t wait_ms =
        failures_ > 0 ? std::min<int64_t>(30000, int64_t{1000} << std::min(failures_ - 1, 5)) : options_.interval_ms;
    std::unique_lock<std::mutex> l(mu_);
    cv_.wait_for(l, std::chrono::milliseconds(wait_ms), [&] { return stop_ || (woken_ && failures_ == 0); });
  }
}

}  // namespace tw::fleet
