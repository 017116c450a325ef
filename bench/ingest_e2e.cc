// End-to-end ingest benchmark: how close does `trainwatch ingest` come to the fastest way of
// putting the same rows into the same schema? A plain program (not Google Benchmark).
//
//   ingest_e2e [--mib N] [--tf2] [--reps K] [--keep DIR] [--pragma SQL] [--pipeline]
//              [--rss-sweep | --e2e-only]
//
// Writes a generated PyTorch-style (or, with --tf2, TF2-style) logdir of at least N MiB
// (default 100): 8 runs of 3 files each (a resumed run: steps carry on across its files),
// 10-20 tags per run, one event per value. Then, in this one process, with the files in the
// page cache (nothing is dropped; dirty pages are written back with sync() before each timed
// part so one part's writeback does not land in the next):
//   1. end-to-end: ingest::IngestPaths into a fresh store (timed), then DB bytes per point
//      after PRAGMA wal_checkpoint(TRUNCATE), and peak RSS (getrusage ru_maxrss, with the
//      kernel's peak mark reset just before through /proc/self/clear_refs);
//   2. decode only: FileReader + DecodeEvent over the same files (best of 3);
//   3. baseline: the same rows, decoded beforehand (untimed), bulk-inserted through one
//      prepared INSERT into a fresh store made by store::Store::Open (same schema and
//      pragmas), 20000 rows per transaction (the ingester's default batch), series, runs and
//      sources created upfront; and, for information, the same with INSERT OR IGNORE, the
//      ingester's own statement;
//   4. the ratio end-to-end points/s / bare insert rows/s, on wall and on CPU time.
// Each timed part reports wall and CPU (user+sys) seconds: on a shared 2-vCPU machine the CPU
// figure is the steadier one.
// --reps K runs 1 and 3 K times each, on a fresh DB each time, interleaved (e2e, bare, ...),
// and keeps the best wall and the best CPU time.
// --pipeline adds informational rows: read+decode+classify alone, and a minimal
// read+decode+classify+insert loop (the ingester's statement and transactions, none of its
// bookkeeping) that inserts each row as it is decoded or a whole 20000-row batch after
// decoding it (see RunPipeline): together they split the end-to-end time into its parts.
// --pragma SQL runs SQL (e.g. "PRAGMA cache_size=-65536") on every store right after
// Store::Open, to try a setting on the ingester and the baselines alike.
// --e2e-only stops after step 1 (for profiling the ingester alone under perf).
// --rss-sweep instead runs only the end-to-end ingest, in a forked child per size, for N/4
// and N MiB, and prints each child's peak RSS: it should not grow with the logdir.
// The work dir is a fresh directory under $TMPDIR (default /tmp), removed at the end; with
// --keep DIR the work happens in DIR, which is kept.
#include <sqlite3.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "decode/classify.h"
#include "decode/event.h"
#include "gen.h"
#include "ingest/discover.h"
#include "ingest/ingest.h"
#include "store/store.h"
#include "support/event_writer.h"
#include "tfrecord/reader.h"

namespace {

namespace fs = std::filesystem;
using namespace tw;
using Clock = std::chrono::steady_clock;

constexpr int kRuns = 8;
constexpr int kFilesPerRun = 3;
constexpr int64_t kBatch = 20000;  // ingest::IngestOptions{}.batch_points
constexpr double kMiB = 1024.0 * 1024.0;

// Failures throw; main() reports them and still removes the work dir.
[[noreturn]] void Die(const std::string& what) { throw std::runtime_error(what); }
void Check(const Status& s, const char* what) {
  if (!s.ok()) Die(std::string(what) + ": " + s.ToString());
}
double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}
// User + system CPU time of this process so far. Unlike wall time it leaves out waiting (fsync
// at WAL checkpoints, other tenants of the machine): the steadier figure on a shared box.
double CpuSeconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  auto sec = [](const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec * 1e-6; };
  return sec(ru.ru_utime) + sec(ru.ru_stime);
}

struct Options {
  double mib = 100;
  bool tf2 = false;
  int reps = 1;
  std::string keep;
  bool rss_sweep = false;
  bool e2e_only = false;  // for profiling: generate, ingest end to end, print, stop
  std::string pragma;     // extra SQL run on every store after Store::Open (experiments)
  bool pipeline = false;  // also time the minimal read+decode+insert loops (RunPipeline)
};

// Set by main(): the --pragma SQL, applied to the end-to-end and the baseline store alike.
std::string g_pragma;

Options ParseArgs(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) Die(a + " needs a value");
      return argv[++i];
    };
    if (a == "--mib") {
      o.mib = std::atof(value().c_str());
      if (!(o.mib > 0)) Die("--mib must be positive");
    } else if (a == "--tf2") {
      o.tf2 = true;
    } else if (a == "--reps") {
      o.reps = std::max(1, std::atoi(value().c_str()));
    } else if (a == "--keep") {
      o.keep = value();
    } else if (a == "--rss-sweep") {
      o.rss_sweep = true;
    } else if (a == "--e2e-only") {
      o.e2e_only = true;
    } else if (a == "--pipeline") {
      o.pipeline = true;
    } else if (a == "--pragma") {
      o.pragma = value();
    } else if (a == "-h" || a == "--help") {
      std::printf(
          "usage: ingest_e2e [--mib N] [--tf2] [--reps K] [--keep DIR] [--pragma SQL] "
          "[--pipeline] [--rss-sweep | --e2e-only]\n");
      std::exit(0);
    } else {
      Die("unknown argument " + a + " (try --help)");
    }
  }
  return o;
}

// ---------------------------------------------------------------------------------------------
// The logdir.

struct Logdir {
  int64_t bytes = 0, files = 0, runs = 0, values = 0;
};

Logdir GenerateLogdir(const fs::path& dir, double mib, bool tf2) {
  fs::remove_all(dir);
  fs::create_directories(dir);
  Logdir out;
  const auto per_file =
      static_cast<int64_t>(std::ceil(mib * kMiB / (kRuns * kFilesPerRun)));
  for (int r = 0; r < kRuns; ++r) {
    const int ntags = 10 + (r * 7) % 11;  // 10..20
    const fs::path run_dir =
        dir / ("exp_" + std::to_string(r / 4)) / ("version_" + std::to_string(r % 4));
    int64_t step = 0;
    for (int f = 0; f < kFilesPerRun; ++f) {
      // A resumed run: a new file per restart, steps carrying on where the last file ended.
      std::string name = testing::EventFileName(1700000000 + r * 100000 + f * 3600,
                                                "bench-host", 4242 + f, 0);
      if (tf2) name += ".v2";
      testing::EventFileWriter w((run_dir / name).string());
      int64_t file_bytes = 0;
      auto add = [&](const std::string& ev) {
        w.Add(ev);
        file_bytes += static_cast<int64_t>(ev.size() + 16);
        if (w.buffered() >= (256u << 10)) w.Flush();  // keeps the generator's RSS small
      };
      add(testing::FileVersionEvent(bench::WallFor(step, 0) - 1,
                                    tf2 ? "" : testing::kTorchSourceWriter));
      std::vector<bool> first_seen(20, false);
      while (file_bytes < per_file) {
        bench::AddStep(step, ntags, tf2, static_cast<uint64_t>(r) + 1, &first_seen,
                       [&](const std::string& ev) {
                         add(ev);
                         out.values++;
                       });
        ++step;
      }
      w.Flush();
      out.bytes += file_bytes;
      out.files++;
    }
    out.runs++;
  }
  return out;
}

std::vector<ingest::DiscoveredRun> Discover(const fs::path& dir) {
  std::vector<std::string> warnings;
  Result<std::vector<ingest::DiscoveredRun>> runs =
      ingest::DiscoverRuns(fs::canonical(dir).string(), &warnings);
  if (!runs.ok()) Die("discover: " + runs.status().ToString());
  for (const auto& w : warnings) std::fprintf(stderr, "warning: %s\n", w.c_str());
  return std::move(runs).value();
}

// ---------------------------------------------------------------------------------------------
// Measurements.

long StatusKiB(const char* field) {  // "VmRSS:", "VmHWM:" from /proc/self/status
  std::ifstream in("/proc/self/status");
  std::string line;
  const size_t n = std::strlen(field);
  while (std::getline(in, line))
    if (line.compare(0, n, field) == 0) return std::atol(line.c_str() + n);
  return 0;
}
long CurrentRssKiB() { return StatusKiB("VmRSS:"); }
// Resets the peak-RSS mark (VmHWM, which ru_maxrss reports) to the current RSS, so a peak
// read afterwards belongs to what ran since. Linux >= 4.0; harmless where unsupported.
void ResetPeakRss() {
  std::ofstream out("/proc/self/clear_refs");
  out << "5";
}
long MaxRssKiB() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_maxrss;  // KiB on Linux
}

void RemoveDb(const fs::path& db) {
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) fs::remove(db.string() + suffix);
}

// Called before each timed part: writes back what earlier parts left dirty (the generated
// logdir, the previous DB) so that its block I/O completions do not land inside the next
// measurement. The page cache stays warm: nothing is dropped.
void Settle() { ::sync(); }

// Checkpoints the WAL into the main file and truncates it; returns the main file's size.
int64_t CheckpointedSize(store::Db& db, const fs::path& path) {
  Check(db.Exec("PRAGMA wal_checkpoint(TRUNCATE)"), "checkpoint");
  std::error_code ec;
  int64_t size = static_cast<int64_t>(fs::file_size(path, ec));
  const auto wal = fs::file_size(path.string() + "-wal", ec);
  if (!ec) size += static_cast<int64_t>(wal);  // 0 after TRUNCATE
  return size;
}

struct E2E {
  double seconds = 0, cpu = 0;
  ingest::Totals totals;
  int64_t db_bytes = 0;
  long rss_before_kib = 0;     // VmRSS just before the ingest (after the peak-mark reset)
  long maxrss_before_kib = 0;  // ru_maxrss just before
  long maxrss_after_kib = 0;   // ru_maxrss just after
  long hwm_after_kib = 0;      // VmHWM just after
};

E2E RunE2E(const fs::path& logdir, const fs::path& db_path) {
  RemoveDb(db_path);
  E2E e;
  Result<std::unique_ptr<store::Store>> st = store::Store::Open(db_path.string());
  if (!st.ok()) Die("open store: " + st.status().ToString());
  if (!g_pragma.empty()) Check((*st)->db().Exec(g_pragma), "--pragma");
  ingest::Summary summary;
  Settle();
  ResetPeakRss();
  e.rss_before_kib = CurrentRssKiB();
  e.maxrss_before_kib = MaxRssKiB();
  const double c0 = CpuSeconds();
  const auto t0 = Clock::now();
  Check(ingest::IngestPaths(**st, {logdir.string()}, ingest::IngestOptions{}, &summary),
        "IngestPaths");
  const auto t1 = Clock::now();
  e.maxrss_after_kib = MaxRssKiB();
  e.hwm_after_kib = StatusKiB("VmHWM:");
  e.seconds = Seconds(t0, t1);
  e.cpu = CpuSeconds() - c0;
  e.totals = summary.totals;
  for (const auto& w : summary.warnings) std::fprintf(stderr, "warning: %s\n", w.c_str());
  e.db_bytes = CheckpointedSize((*st)->db(), db_path);
  return e;
}

struct DecodeOnly {
  double seconds = 0, cpu = 0;
  int64_t bytes = 0, records = 0;
};

DecodeOnly RunDecodeOnly(const std::vector<ingest::DiscoveredRun>& runs) {
  DecodeOnly d;
  decode::Event ev;
  Settle();
  const double c0 = CpuSeconds();
  const auto t0 = Clock::now();
  for (const auto& run : runs) {
    for (const auto& file : run.files) {
      tfrecord::FileReader reader(file, 0, {});
      Check(reader.Open(), "open");
      for (;;) {
        const auto step = reader.Next();
        if (step == tfrecord::FileReader::Step::kEnd) break;
        if (step == tfrecord::FileReader::Step::kYield) continue;
        if (step == tfrecord::FileReader::Step::kProblem) Die(file + ": " + reader.problem().detail);
        Check(decode::DecodeEvent(reader.record(), &ev), "decode");
        d.records++;
      }
      Check(reader.status(), "read");
      d.bytes += static_cast<int64_t>(reader.position());
    }
  }
  d.seconds = Seconds(t0, Clock::now());
  d.cpu = CpuSeconds() - c0;
  return d;
}

// The rows the ingester stores, in the order it stores them, with the ids a fresh store gives.
struct Row {
  int64_t series_id, step, source_id, offset;
  double wall_time, value;
  int32_t vidx, value_class;
};
struct Layout {
  struct Series {
    int64_t run_id;
    std::string tag, plugin;
    int32_t data_class;
  };
  std::vector<std::string> run_names;  // run_id = index + 1
  std::vector<Series> series;          // series_id = index + 1
  std::vector<std::pair<int64_t, std::string>> sources;  // (run_id, path); source_id = index + 1
  std::vector<Row> rows;
};

struct SvHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

// Reads every file (FileReader + DecodeEvent + Classify, remembering each tag's plugin per run
// as the ingester does), fills `l`'s runs, series and sources, and hands each scalar row to
// `on_row` in the ingester's order.
template <typename OnRow>
void WalkRows(const std::vector<ingest::DiscoveredRun>& runs, Layout* l, OnRow&& on_row) {
  decode::Event ev;
  decode::Classified c;
  for (const auto& run : runs) {
    l->run_names.push_back(run.name);
    const auto run_id = static_cast<int64_t>(l->run_names.size());
    struct Tag {
      decode::TagPlugin plugin;
      bool known = false;
      int64_t series_id = 0;
    };
    std::unordered_map<std::string, Tag, SvHash, std::equal_to<>> tags;
    for (const auto& file : run.files) {
      l->sources.emplace_back(run_id, file);
      const auto source_id = static_cast<int64_t>(l->sources.size());
      tfrecord::FileReader reader(file, 0, {});
      Check(reader.Open(), "open");
      while (reader.Next() == tfrecord::FileReader::Step::kRecord) {
        Check(decode::DecodeEvent(reader.record(), &ev), "decode");
        int vidx = 0;
        for (const auto& v : ev.values) {
          auto it = tags.find(v.tag);
          if (it == tags.end()) it = tags.emplace(std::string(v.tag), Tag{}).first;
          Tag& t = it->second;
          if (v.has_metadata) {
            t.plugin = {std::string(v.plugin_name), v.data_class};
            t.known = true;
          }
          Check(decode::Classify(v, ev.strings, t.known ? &t.plugin : nullptr, &c), "classify");
          if (c.kind == decode::Kind::kScalar) {
            if (t.series_id == 0) {
              l->series.push_back({run_id, std::string(v.tag), t.plugin.plugin_name,
                                   t.plugin.data_class});
              t.series_id = static_cast<int64_t>(l->series.size());
            }
            on_row(Row{t.series_id, ev.step, source_id,
                       static_cast<int64_t>(reader.record_offset()), ev.wall_time, c.scalar, vidx,
                       store::ClassOf(c.scalar)});
          }
          ++vidx;
        }
      }
    }
  }
}

Layout DecodeRows(const std::vector<ingest::DiscoveredRun>& runs) {
  Layout l;
  WalkRows(runs, &l, [&](const Row& r) { l.rows.push_back(r); });
  return l;
}

struct Timing {
  double seconds = 0, cpu = 0;
  int64_t db_bytes = 0;
};

void StepDone(sqlite3* db, sqlite3_stmt* s) {
  if (sqlite3_step(s) != SQLITE_DONE) Die(std::string("sqlite: ") + sqlite3_errmsg(db));
  sqlite3_reset(s);
}

// A fresh store (store::Store::Open: the ingester's schema and pragmas) holding the runs,
// series and sources of `l` with the ids its rows carry, and one prepared INSERT of a scalar
// row through the bare SQLite API.
class BareStore {
 public:
  BareStore(const Layout& l, const fs::path& path, bool or_ignore) : path_(path) {
    RemoveDb(path);
    Result<std::unique_ptr<store::Store>> st = store::Store::Open(path.string());
    if (!st.ok()) Die("open store: " + st.status().ToString());
    store_ = std::move(st).value();
    store::Db& db = store_->db();
    if (!g_pragma.empty()) Check(db.Exec(g_pragma), "--pragma");
    raw_ = db.raw();
    Check(db.Exec("BEGIN IMMEDIATE"), "begin");
    {
      Result<store::Stmt> run = db.Prepare(
          "INSERT INTO runs(run_id, root, name, first_seen) VALUES (?1, 'bench', ?2, 0)");
      Result<store::Stmt> series = db.Prepare(
          "INSERT INTO series(series_id, run_id, tag, kind, plugin, data_class) "
          "VALUES (?1, ?2, ?3, 'scalar', ?4, ?5)");
      Result<store::Stmt> source = db.Prepare(
          "INSERT INTO sources(source_id, run_id, path, dev, ino, first_seen) "
          "VALUES (?1, ?2, ?3, 0, ?1, 0)");
      if (!run.ok() || !series.ok() || !source.ok()) Die("prepare setup");
      for (size_t i = 0; i < l.run_names.size(); ++i)
        Check(run->Bind(1, static_cast<int64_t>(i + 1)).Bind(2, l.run_names[i]).Run(), "run");
      for (size_t i = 0; i < l.series.size(); ++i) {
        const auto& s = l.series[i];
        Check(series->Bind(1, static_cast<int64_t>(i + 1))
                  .Bind(2, s.run_id)
                  .Bind(3, s.tag)
                  .Bind(4, s.plugin)
                  .Bind(5, int64_t{s.data_class})
                  .Run(),
              "series");
      }
      for (size_t i = 0; i < l.sources.size(); ++i)
        Check(source->Bind(1, static_cast<int64_t>(i + 1))
                  .Bind(2, l.sources[i].first)
                  .Bind(3, l.sources[i].second)
                  .Run(),
              "source");
    }
    Check(db.Exec("COMMIT"), "commit");
    const std::string sql =
        std::string(or_ignore ? "INSERT OR IGNORE" : "INSERT") +
        " INTO scalars(series_id, step, source_id, offset, vidx, wall_time, value, "
        "value_class) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)";
    if (sqlite3_prepare_v2(raw_, sql.c_str(), -1, &insert_, nullptr) != SQLITE_OK ||
        sqlite3_prepare_v2(raw_, "BEGIN IMMEDIATE", -1, &begin_, nullptr) != SQLITE_OK ||
        sqlite3_prepare_v2(raw_, "COMMIT", -1, &commit_, nullptr) != SQLITE_OK)
      Die(std::string("prepare: ") + sqlite3_errmsg(raw_));
  }
  ~BareStore() {
    sqlite3_finalize(insert_);
    sqlite3_finalize(begin_);
    sqlite3_finalize(commit_);
  }
  BareStore(const BareStore&) = delete;
  BareStore& operator=(const BareStore&) = delete;

  void Begin() { StepDone(raw_, begin_); }
  void Commit() { StepDone(raw_, commit_); }
  void Insert(const Row& r) {
    sqlite3_stmt* s = insert_;
    sqlite3_bind_int64(s, 1, r.series_id);
    sqlite3_bind_int64(s, 2, r.step);
    sqlite3_bind_int64(s, 3, r.source_id);
    sqlite3_bind_int64(s, 4, r.offset);
    sqlite3_bind_int64(s, 5, r.vidx);
    sqlite3_bind_double(s, 6, r.wall_time);
    if (r.value_class == store::kNaN) {
      sqlite3_bind_null(s, 7);
    } else {
      sqlite3_bind_double(s, 7, r.value);
    }
    sqlite3_bind_int64(s, 8, r.value_class);
    StepDone(raw_, s);
  }
  int64_t CheckpointedBytes() { return CheckpointedSize(store_->db(), path_); }

 private:
  fs::path path_;
  std::unique_ptr<store::Store> store_;
  sqlite3* raw_ = nullptr;
  sqlite3_stmt* insert_ = nullptr;
  sqlite3_stmt* begin_ = nullptr;
  sqlite3_stmt* commit_ = nullptr;
};

// The baseline: the rows, already in memory, through one prepared INSERT, kBatch per
// transaction. `or_ignore`: INSERT OR IGNORE, the ingester's own statement (informational).
Timing RunBareInsert(const Layout& l, const fs::path& db_path, bool or_ignore) {
  BareStore b(l, db_path, or_ignore);
  Settle();
  const double c0 = CpuSeconds();
  const auto t0 = Clock::now();
  b.Begin();
  int64_t in_txn = 0;
  for (const Row& r : l.rows) {
    b.Insert(r);
    if (++in_txn == kBatch) {
      b.Commit();
      b.Begin();
      in_txn = 0;
    }
  }
  b.Commit();
  Timing t;
  t.seconds = Seconds(t0, Clock::now());
  t.cpu = CpuSeconds() - c0;
  t.db_bytes = b.CheckpointedBytes();
  return t;
}

// (--pipeline) A minimal ingest loop with nothing of the ingester's bookkeeping: read, decode,
// classify and insert the same rows with the same statement and transactions as the baseline.
// Interleaved inserts each row as its record is decoded (the ingester's shape); batched
// collects a transaction's kBatch rows first and inserts them in one tight loop. Their
// difference is what interleaving decoding with inserting costs SQLite (caches, branch
// predictors), apart from any work the ingester adds.
Timing RunWalkOnly(const std::vector<ingest::DiscoveredRun>& runs) {
  Layout scratch;
  double sum = 0;
  Settle();
  const double c0 = CpuSeconds();
  const auto t0 = Clock::now();
  WalkRows(runs, &scratch, [&](const Row& r) { sum += r.value; });
  Timing t;
  t.seconds = Seconds(t0, Clock::now());
  t.cpu = CpuSeconds() - c0;
  if (std::isnan(sum)) std::printf(" ");  // keeps the walk from being optimized away
  return t;
}

Timing RunPipeline(const std::vector<ingest::DiscoveredRun>& runs, const Layout& l,
                   const fs::path& db_path, bool batched) {
  BareStore b(l, db_path, /*or_ignore=*/true);
  std::vector<Row> buffer;
  buffer.reserve(kBatch);
  Layout scratch;
  Settle();
  const double c0 = CpuSeconds();
  const auto t0 = Clock::now();
  int64_t in_txn = 0;
  if (batched) {
    auto flush = [&] {
      b.Begin();
      for (const Row& r : buffer) b.Insert(r);
      b.Commit();
      buffer.clear();
    };
    WalkRows(runs, &scratch, [&](const Row& r) {
      buffer.push_back(r);
      if (static_cast<int64_t>(buffer.size()) == kBatch) flush();
    });
    if (!buffer.empty()) flush();
  } else {
    b.Begin();
    WalkRows(runs, &scratch, [&](const Row& r) {
      b.Insert(r);
      if (++in_txn == kBatch) {
        b.Commit();
        b.Begin();
        in_txn = 0;
      }
    });
    b.Commit();
  }
  Timing t;
  t.seconds = Seconds(t0, Clock::now());
  t.cpu = CpuSeconds() - c0;
  if (scratch.series.size() != l.series.size()) Die("pipeline: series ids differ");
  t.db_bytes = b.CheckpointedBytes();
  return t;
}

// ---------------------------------------------------------------------------------------------
// Output.

std::string Human(double v) {  // 1234567 -> "1.23 M"
  char buf[32];
  if (v >= 1e6) {
    std::snprintf(buf, sizeof buf, "%.2f M", v / 1e6);
  } else if (v >= 1e3) {
    std::snprintf(buf, sizeof buf, "%.1f k", v / 1e3);
  } else {
    std::snprintf(buf, sizeof buf, "%.0f", v);
  }
  return buf;
}

void Line(const char* what, double seconds, double cpu, int64_t items, const char* unit,
          int64_t bytes, const char* note) {
  std::printf("  %-32s %7.3f s %7.3f s %9" PRId64 " %-7s %9s/s %7.1f MiB/s  %s\n", what,
              seconds, cpu, items, unit, Human(static_cast<double>(items) / seconds).c_str(),
              static_cast<double>(bytes) / kMiB / seconds, note);
}

fs::path MakeWorkDir(const Options& o) {
  if (!o.keep.empty()) {
    fs::create_directories(o.keep);
    return fs::absolute(o.keep);
  }
  const char* tmp = std::getenv("TMPDIR");
  std::string templ = std::string(tmp && *tmp ? tmp : "/tmp") + "/tw-bench-XXXXXX";
  if (!::mkdtemp(templ.data())) Die("mkdtemp " + templ + ": " + std::strerror(errno));
  return templ;
}

const char* Style(bool tf2) { return tf2 ? "TF2-style (tensor scalars)" : "PyTorch-style (simple_value)"; }

int MainRun(const Options& o, const fs::path& work) {
  const fs::path logdir = work / "logdir";
  auto g0 = Clock::now();
  const Logdir gen = GenerateLogdir(logdir, o.mib, o.tf2);
  std::printf("logdir: %s, %.1f MiB, %" PRId64 " runs, %" PRId64 " files, %" PRId64
              " values (generated in %.1f s)\nwork dir: %s\n%s%s%s\n",
              Style(o.tf2), static_cast<double>(gen.bytes) / kMiB, gen.runs, gen.files,
              gen.values, Seconds(g0, Clock::now()), work.c_str(),
              o.pragma.empty() ? "" : "extra SQL on both stores: ", o.pragma.c_str(),
              o.pragma.empty() ? "" : "\n");
  const auto runs = Discover(logdir);

  // Best of --reps keeps the lowest wall time and, separately, the lowest CPU time.
  auto keep_best = [](int i, auto b, auto* best) {
    const double cpu = i == 0 ? b.cpu : std::min(b.cpu, best->cpu);
    if (i == 0 || b.seconds < best->seconds) *best = b;
    best->cpu = cpu;
  };

  // 1. End-to-end first, so peak RSS is not raised by the baseline's rows in memory; the RSS
  //    figures printed are this first repetition's.
  E2E e2e = RunE2E(logdir, work / "e2e.db");
  const E2E first = e2e;
  const ingest::Totals& t = first.totals;
  if (t.errors != 0 || t.scalars != gen.values)
    Die("ingest stored " + std::to_string(t.scalars) + " of " + std::to_string(gen.values) +
        " points with " + std::to_string(t.errors) + " errors");
  if (o.e2e_only) {
    for (int i = 1; i < o.reps; ++i) keep_best(i, RunE2E(logdir, work / "e2e.db"), &e2e);
    Line("end-to-end IngestPaths", e2e.seconds, e2e.cpu, t.scalars, "points", t.bytes, "");
    return 0;
  }

  // 2. Decode only, best of 3.
  DecodeOnly dec;
  for (int i = 0; i < 3; ++i) keep_best(i, RunDecodeOnly(runs), &dec);

  // 3. Bare insert of the same rows. Later repetitions of the end-to-end ingest interleave
  //    with the baseline's, so a change in the machine's load hits both alike.
  const Layout layout = DecodeRows(runs);
  if (static_cast<int64_t>(layout.rows.size()) != t.scalars) Die("row count mismatch");
  Timing bare, bare_ignore, pipe_walk, pipe_inter, pipe_batch;
  for (int i = 0; i < o.reps; ++i) {
    if (i > 0) keep_best(i, RunE2E(logdir, work / "e2e.db"), &e2e);
    keep_best(i, RunBareInsert(layout, work / "bare.db", false), &bare);
    keep_best(i, RunBareInsert(layout, work / "bare.db", true), &bare_ignore);
    if (o.pipeline) {
      keep_best(i, RunWalkOnly(runs), &pipe_walk);
      keep_best(i, RunPipeline(runs, layout, work / "bare.db", false), &pipe_inter);
      keep_best(i, RunPipeline(runs, layout, work / "bare.db", true), &pipe_batch);
    }
  }
  RemoveDb(work / "bare.db");
  RemoveDb(work / "e2e.db");

  const double e2e_pps = static_cast<double>(t.scalars) / e2e.seconds;
  const double bare_rps = static_cast<double>(layout.rows.size()) / bare.seconds;
  char best[32];
  std::snprintf(best, sizeof best, "best of %d", o.reps);
  std::printf("  %-32s %9s %9s %9s %-7s %11s %13s\n", "measurement", "wall", "cpu", "count", "",
              "rate (wall)", "input (wall)");
  Line("decode only (FileReader+Decode)", dec.seconds, dec.cpu, dec.records, "records", dec.bytes,
       "best of 3");
  Line("end-to-end IngestPaths", e2e.seconds, e2e.cpu, t.scalars, "points", t.bytes,
       o.reps > 1 ? best : "");
  Line("bare INSERT, 20000 rows/txn", bare.seconds, bare.cpu,
       static_cast<int64_t>(layout.rows.size()), "rows", t.bytes, o.reps > 1 ? best : "");
  Line("(info) bare INSERT OR IGNORE", bare_ignore.seconds, bare_ignore.cpu,
       static_cast<int64_t>(layout.rows.size()), "rows", t.bytes, "the ingester's statement");
  if (o.pipeline) {
    Line("(info) read+decode+classify", pipe_walk.seconds, pipe_walk.cpu,
         static_cast<int64_t>(layout.rows.size()), "rows", t.bytes,
         "the minimal loop below without its inserts");
    Line("(info) read+decode+insert, inline", pipe_inter.seconds, pipe_inter.cpu,
         static_cast<int64_t>(layout.rows.size()), "rows", t.bytes,
         "minimal ingest loop, row inserted as decoded");
    Line("(info) read+decode+insert, batch", pipe_batch.seconds, pipe_batch.cpu,
         static_cast<int64_t>(layout.rows.size()), "rows", t.bytes,
         "same, 20000 rows decoded then inserted");
  }
  const double ratio = e2e_pps / bare_rps;
  const double cpu_ratio = (static_cast<double>(t.scalars) / e2e.cpu) /
                           (static_cast<double>(layout.rows.size()) / bare.cpu);
  std::printf("\n  ratio e2e points/s / bare rows/s    %.2f wall  (target >= 0.70: %s); %.2f on CPU "
              "time\n",
              ratio, ratio >= 0.7 ? "met" : "NOT met", cpu_ratio);
  std::printf("  e2e time beyond the bare INSERT     %.3f s of %.3f s (%.0f%%); beyond bare "
              "INSERT OR IGNORE %.3f s (%.0f%%)\n",
              e2e.seconds - bare.seconds, e2e.seconds,
              100.0 * (e2e.seconds - bare.seconds) / e2e.seconds,
              e2e.seconds - bare_ignore.seconds,
              100.0 * (e2e.seconds - bare_ignore.seconds) / e2e.seconds);
  std::printf("  DB bytes/point (after checkpoint)   %.1f  (%.1f MiB; bare-insert DB %.1f)\n",
              static_cast<double>(first.db_bytes) / static_cast<double>(t.scalars),
              static_cast<double>(first.db_bytes) / kMiB,
              static_cast<double>(bare.db_bytes) / static_cast<double>(layout.rows.size()));
  std::printf("  peak RSS around e2e                 ru_maxrss %.1f MiB after (%.1f before), "
              "VmHWM %.1f MiB; VmRSS before %.1f MiB\n",
              static_cast<double>(first.maxrss_after_kib) / 1024.0,
              static_cast<double>(first.maxrss_before_kib) / 1024.0,
              static_cast<double>(first.hwm_after_kib) / 1024.0,
              static_cast<double>(first.rss_before_kib) / 1024.0);
  std::printf("  ingest totals: %" PRId64 " files, %" PRId64 " records, %" PRId64
              " scalars, %" PRId64 " run events, %" PRId64 " errors\n",
              t.files_read, t.records, t.scalars, t.run_events, t.errors);
  return 0;
}

struct ChildReport {
  double seconds;
  int64_t points, bytes, db_bytes;
  long rss_start_kib, maxrss_kib;
};

int RssSweep(const Options& o, const fs::path& work) {
  const double sizes[2] = {o.mib / 4, o.mib};
  std::printf("RSS sweep: end-to-end ingest in a forked child per logdir size (%s)\n\n",
              Style(o.tf2));
  std::printf("  %10s %12s %10s %12s %16s %16s %14s\n", "logdir MiB", "points", "time s",
              "points/s", "child RSS start", "child peak RSS", "DB bytes/pt");
  for (int k = 0; k < 2; ++k) {
    const double mib = sizes[k];
    const fs::path logdir = work / (k == 0 ? "logdir_quarter" : "logdir_full");
    const Logdir gen = GenerateLogdir(logdir, mib, o.tf2);
    int fds[2];
    if (::pipe(fds) != 0) Die("pipe");
    std::fflush(stdout);
    const pid_t pid = ::fork();
    if (pid < 0) Die("fork");
    if (pid == 0) {
      ::close(fds[0]);
      // The child only ingests and reports; it never returns into main() (which would
      // remove the work dir under the parent).
      bool ok = false;
      try {
        ChildReport r{};
        r.rss_start_kib = CurrentRssKiB();
        E2E e = RunE2E(logdir, work / "sweep.db");
        r.seconds = e.seconds;
        r.points = e.totals.scalars;
        r.bytes = e.totals.bytes;
        r.db_bytes = e.db_bytes;
        r.maxrss_kib = e.maxrss_after_kib;
        ok = ::write(fds[1], &r, sizeof r) == static_cast<ssize_t>(sizeof r);
      } catch (const std::exception& ex) {
        std::fprintf(stderr, "ingest_e2e (child): %s\n", ex.what());
      }
      std::fflush(stderr);
      ::_exit(ok ? 0 : 1);
    }
    ::close(fds[1]);
    ChildReport r{};
    const bool got = ::read(fds[0], &r, sizeof r) == static_cast<ssize_t>(sizeof r);
    ::close(fds[0]);
    int status = 0;
    ::waitpid(pid, &status, 0);
    if (!got || !WIFEXITED(status) || WEXITSTATUS(status) != 0) Die("child failed");
    if (r.points != gen.values) Die("child stored the wrong number of points");
    std::printf("  %10.1f %12" PRId64 " %10.3f %12s %12.1f MiB %12.1f MiB %14.1f\n",
                static_cast<double>(gen.bytes) / kMiB, r.points, r.seconds,
                Human(static_cast<double>(r.points) / r.seconds).c_str(),
                static_cast<double>(r.rss_start_kib) / 1024.0,
                static_cast<double>(r.maxrss_kib) / 1024.0,
                static_cast<double>(r.db_bytes) / static_cast<double>(r.points));
    if (o.keep.empty()) fs::remove_all(logdir);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  fs::path work;
  try {
    o = ParseArgs(argc, argv);
    g_pragma = o.pragma;
    work = MakeWorkDir(o);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ingest_e2e: %s\n", e.what());
    return 2;
  }
  int rc = 0;
  try {
    rc = o.rss_sweep ? RssSweep(o, work) : MainRun(o, work);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ingest_e2e: %s\n", e.what());
    rc = 1;
  }
  if (o.keep.empty()) {
    std::error_code ec;
    fs::remove_all(work, ec);
  } else {
    std::printf("\nkept %s\n", work.c_str());
  }
  return rc;
}
