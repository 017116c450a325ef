#include "cli/commands.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <iostream>
#include <optional>

#include "base/log.h"
#include "cli/flags.h"
#include "cli/format.h"
#include "diagnose/roles.h"
#include "diagnose/sql_functions.h"
#include "ingest/ingest.h"
#include "store/store.h"

namespace tw::cli {
namespace {

constexpr const char* kIngestHelp = R"(usage: trainwatch ingest --db FILE [options] PATH...

Reads every TensorBoard event file under each PATH (a logdir, or one event file) into the
SQLite store FILE, created if missing, and exits. Runs are directories that directly hold
event files, named relative to PATH. Files resume from what an earlier ingest committed, so
running it again reads only what is new.

options:
  --db FILE         the store (required)
  --batch N         commit at least every N points (default 20000)
  --quiet           no progress bar and no summary
  --follow-symlinks-outside
                    also read event files whose real path is outside the PATH they were
                    found under (a symlink out of it); by default they are refused
  --help            this text

The store is created 0600. A FIFO, device or directory named like an event file is not read.

exit status: 0 when anything could be read (problems inside files are reported, not fatal),
1 when nothing could be read or the store failed, 2 on a usage error.
)";

constexpr const char* kQueryHelp = R"(usage: trainwatch query --db FILE [--format table|csv|json] SQL

Runs SQL on a read-only connection (safe beside a running ingest or daemon) and prints the
rows. The documented views are scalar_points, scalar_points_all, histogram_points,
text_points, run_hparams and run_summary (see docs/schema.md); the diagnosis functions
(tw_trend, tw_spikes, tw_median, ..., see docs/diagnosis.md) are available too.

options:
  --db FILE         the store (required)
  --format F        table (default), csv, or json (one object per line)
  --roles           also map every run's tags to roles (the built-in patterns) first, so the
                    SQL can read role_points and run_roles as the rules do: a rule's query
                    runs here with :run_id and its parameters written in
  --help            this text
)";

constexpr const char* kRunsHelp = R"(usage: trainwatch runs --db FILE [--format table|csv|json]

Lists runs with their format (tensorboard, wandb), tags (W&B system metrics counted, not
listed), scalar point counts, last step, last wall time and exit code (W&B runs).
)";

bool IsTty() { return ::isatty(STDERR_FILENO) == 1; }

void DrawProgress(const ingest::Progress& p, double seconds) {
  const double frac = p.bytes_total ? static_cast<double>(p.bytes_done) / p.bytes_total : 1.0;
  const int width = 24;
  const int filled = static_cast<int>(frac * width);
  std::string bar(filled, '#');
  bar += std::string(width - filled, '.');
  const double mib = p.bytes_done / 1048576.0;
  std::fprintf(stderr, "\r[%s] %3.0f%%  files %lld/%lld  %.1f/%.1f MiB  points %s  %.1f MiB/s ",
               bar.c_str(), frac * 100, static_cast<long long>(p.files_done),
               static_cast<long long>(p.files_total), mib, p.bytes_total / 1048576.0,
               HumanCount(p.points).c_str(), seconds > 0 ? mib / seconds : 0.0);
  std::fflush(stderr);
}

void PrintIngestSummary(store::Store& store, const ingest::Summary& s, double seconds) {
  const auto& t = s.totals;
  std::cout << "ingested " << s.runs << (s.runs == 1 ? " run" : " runs") << ", " << s.files
            << (s.files == 1 ? " file" : " files") << ", " << HumanBytes(t.bytes) << " in "
            << seconds << " s\n";
  std::cout << "  new points: " << HumanCount(t.scalars) << " scalars, " << HumanCount(t.histograms)
            << " histograms, " << HumanCount(t.texts) << " texts, " << t.hparams
            << " hparams; " << HumanCount(t.blobs) << " images/graphs/other counted\n";
  std::cout << "  records: " << HumanCount(t.records) << ", restarts detected: " << t.restarts
            << ", files with a partial record at the tail: " << t.partial_tails << "\n";
  if (auto st = store.db().Prepare(
          "SELECT (SELECT count(*) FROM runs), (SELECT count(*) FROM series), "
          "(SELECT count(*) FROM scalars)");
      st.ok() && st->Step().ok()) {
    std::cout << "  store now: " << st->Int(0) << " runs, " << st->Int(1) << " series, "
              << HumanCount(st->Int(2)) << " scalar points\n";
  }
  std::cout << "  errors: " << t.errors << (t.files_rejected ? " (" + std::to_string(t.files_rejected) + " files are not TFRecord)" : "") << "\n";
  if (t.errors > 0) {
    if (auto st = store.db().Prepare(
            "SELECT path, offset, kind, detail FROM ingest_errors ORDER BY error_id DESC LIMIT ?1");
        st.ok()) {
      st->Bind(1, std::min<int64_t>(t.errors, 10));
      while (true) {
        Result<bool> row = st->Step();
        if (!row.ok() || !*row) break;
        // Paths from the logdir, shown escaped as in log lines: no name reaches the terminal raw.
        std::cout << "    " << log::Escape(st->Text(0)) << " @" << st->Int(1) << ": " << st->Text(2) << ": "
                  << log::Escape(st->Text(3)) << "\n";
      }
      if (t.errors > 10) std::cout << "    ... see the ingest_errors table for all\n";
    }
  }
  for (const auto& w : s.warnings) std::cout << "  warning: " << log::Escape(w) << "\n";
}

}  // namespace

int CmdIngest(const Args& args) {
  Flags f(args, {"db", "batch"}, {"quiet", "follow-symlinks-outside", "help"});
  if (f.Has("help")) return Usage(kIngestHelp);
  if (!f.error().empty()) return Usage(kIngestHelp, f.error());
  if (!f.Has("db")) return Usage(kIngestHelp, "ingest needs --db FILE");
  if (f.positionals().empty()) return Usage(kIngestHelp, "ingest needs at least one PATH");
  ingest::IngestOptions options;
  options.follow_symlinks_outside_root = f.Has("follow-symlinks-outside");
  if (auto b = f.Get("batch")) {
    try {
      options.batch_points = std::stoll(*b);
    } catch (...) {
      return Usage(kIngestHelp, "--batch needs a number, got '" + *b + "'");
    }
    if (options.batch_points < 1) return Usage(kIngestHelp, "--batch must be at least 1");
  }
  Result<std::unique_ptr<store::Store>> store = store::Store::Open(*f.Get("db"));
  if (!store.ok()) {
    std::cerr << "trainwatch: " << store.status().message() << "\n";
    return 1;
  }
  const bool quiet = f.Has("quiet");
  const bool bar = !quiet && IsTty();
  const auto t0 = std::chrono::steady_clock::now();
  auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  auto last_draw = t0;
  ingest::Summary summary;
  Status st = ingest::IngestPaths(**store, f.positionals(), options, &summary,
                                  [&](const ingest::Progress& p) {
                                    if (!bar) return;
                                    auto now = std::chrono::steady_clock::now();
                                    if (now - last_draw < std::chrono::milliseconds(100) &&
                                        p.files_done != p.files_total)
                                      return;
                                    last_draw = now;
                                    DrawProgress(p, elapsed());
                                  });
  if (bar) std::fputs("\n", stderr);
  if (!st.ok()) {
    std::cerr << "trainwatch: ingest stopped: " << st.message() << "\n";
    return 1;
  }
  if (!quiet) PrintIngestSummary(**store, summary, elapsed());
  const auto& t = summary.totals;
  const int64_t usable = summary.files - t.files_rejected - t.files_unreadable;
  if (summary.files == 0 || usable == 0) {
    std::cerr << "trainwatch: nothing could be read from "
              << (f.positionals().size() == 1 ? f.positionals()[0] : "the given paths") << "\n";
    for (const auto& w : summary.warnings) std::cerr << "  " << log::Escape(w) << "\n";
    return 1;
  }
  return 0;
}

int StoreFailure(const Status& st) {
  std::cerr << "trainwatch: " << st.message() << "\n";
  switch (st.code()) {
    case Code::kCorrupt: return 65;   // EX_DATAERR, as the daemon
    case Code::kReadOnly: return 73;  // EX_CANTCREAT, as the daemon
    default: return 1;
  }
}

namespace {
int RunQuery(const std::string& db_path, const std::string& sql, Format format, bool roles = false) {
  Result<std::unique_ptr<store::Db>> db = store::OpenReadOnly(db_path);
  if (!db.ok()) return StoreFailure(db.status());
  // The diagnosis functions (tw_trend, tw_spikes, ...) work in ad hoc queries too.
  if (Status st = diagnose::RegisterSqlFunctions(**db); !st.ok()) {
    std::cerr << "trainwatch: " << st.message() << "\n";
    return 1;
  }
  if (roles) {
    Result<diagnose::RoleMap> map = diagnose::AssignRoles(**db, diagnose::EffectiveRolePatterns({}));
    Status st = map.ok() ? diagnose::WriteRoleTable(**db, *map) : map.status();
    if (!st.ok()) {
      std::cerr << "trainwatch: mapping roles: " << st.message() << "\n";
      return 1;
    }
  }
  Result<store::Stmt> stmt = (*db)->Prepare(sql);
  if (!stmt.ok()) {
    std::cerr << "trainwatch: " << stmt.status().message() << "\n";
    return 1;
  }
  Result<int64_t> rows = PrintRows(*stmt, format, std::cout);
  if (!rows.ok()) {
    // A statement's own failure (a write on this read-only connection, say), or the store's.
    if (rows.status().code() == Code::kCorrupt) return StoreFailure(rows.status());
    std::cerr << "trainwatch: " << rows.status().message() << "\n";
    return 1;
  }
  return 0;
}
}  // namespace

int CmdQuery(const Args& args) {
  Flags f(args, {"db", "format"}, {"help", "roles"});
  if (f.Has("help")) return Usage(kQueryHelp);
  if (!f.error().empty()) return Usage(kQueryHelp, f.error());
  if (!f.Has("db")) return Usage(kQueryHelp, "query needs --db FILE");
  if (f.positionals().size() != 1) return Usage(kQueryHelp, "query needs exactly one SQL argument");
  Format format = Format::kTable;
  if (auto s = f.Get("format"); s && !ParseFormat(*s, &format))
    return Usage(kQueryHelp, "unknown --format '" + *s + "' (table, csv or json)");
  return RunQuery(*f.Get("db"), f.positionals()[0], format, f.Has("roles"));
}

int CmdRuns(const Args& args) {
  Flags f(args, {"db", "format"}, {"help"});
  if (f.Has("help")) return Usage(kRunsHelp);
  if (!f.error().empty()) return Usage(kRunsHelp, f.error());
  if (!f.Has("db")) return Usage(kRunsHelp, "runs needs --db FILE");
  if (!f.positionals().empty()) return Usage(kRunsHelp, "runs takes no positional arguments");
  Format format = Format::kTable;
  if (auto s = f.Get("format"); s && !ParseFormat(*s, &format))
    return Usage(kRunsHelp, "unknown --format '" + *s + "' (table, csv or json)");
  return RunQuery(*f.Get("db"),
                  "SELECT r.run, x.format, "
                  "(SELECT group_concat(tag, ' ') FROM (SELECT DISTINCT tag FROM series s "
                  "WHERE s.run_id = r.run_id AND s.tag NOT LIKE 'system/%' ORDER BY tag)) || "
                  "COALESCE((SELECT ' (+' || count(DISTINCT tag) || ' system/*)' FROM series s "
                  "WHERE s.run_id = r.run_id AND s.tag LIKE 'system/%' HAVING count(*) > 0), '') AS tags, "
                  "r.scalar_points AS points, r.last_step, "
                  "datetime(r.last_wall_time, 'unixepoch') AS last_wall_time, x.exit_code "
                  "FROM run_summary r JOIN runs x USING (run_id) ORDER BY r.root, r.run",
                  format);
}

}  // namespace tw::cli
