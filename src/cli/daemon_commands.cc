// `trainwatch daemon` and `trainwatch status`.
#include <sys/stat.h>

#include <chrono>
#include <cmath>
#include <functional>
#include <map>
#include <iostream>
#include <sstream>

#include "app/daemon.h"
#include "app/instance_lock.h"
#include "base/clock.h"
#include "base/json.h"
#include "notify/outbox.h"
#include "cli/commands.h"
#include "cli/flags.h"
#include "objstore/s3_client.h"
#include "cli/format.h"
#include "store/store.h"

namespace tw::cli {
namespace {

constexpr const char* kDaemonHelp = R"(usage: trainwatch daemon [--config FILE] [--logdir DIR]... [options]

Watches logdirs and ingests every new point into the store as it is written: inotify for
speed, a periodic rescan as the truth (network filesystems, missed events). Files resume from
their committed offsets after a restart. Stops on SIGTERM/SIGINT; SIGHUP reloads the config.
Runs under systemd as Type=notify (see systemd/trainwatch.service).

With no --config, it runs on defaults: the store is $STATE_DIRECTORY/trainwatch.db or
./trainwatch.db, logs go to stderr, findings are announced on stdout (the console channel)
unless a channel is configured or given here. Undelivered messages survive a restart.

options:
  --config FILE           TOML config (docs/trainwatch.example.toml documents every key)
  --logdir DIR            a root to watch; repeatable; added to the config's roots
  --db FILE               the store (overrides the config)
  --rescan-interval SECS  how often to rescan (default 30)
  --no-inotify            rescan only (NFS, CIFS, sshfs)
  --slack-webhook URL     also notify this Slack incoming webhook (repeatable). The URL is a
                          secret and argv shows it to every local user: prefer
                          --slack-webhook-file or $TRAINWATCH_SLACK_WEBHOOK
  --slack-webhook-file F  the same, the URL read from file F (mode 600; re-read on SIGHUP)
  --webhook URL           also POST findings as JSON (payload version 1) to this URL (repeatable)
  --webhook-file F        the same, the URL read from file F (mode 600; re-read on SIGHUP)
  --web ADDRESS:PORT      serve the read-only web view (docs/web.md) there, e.g. 127.0.0.1:8421;
                          beyond loopback only with [web] token in the config
  --postgres CONNINFO     ship the store to this PostgreSQL (docs/fleet.md; overrides [fleet]
                          postgres): postgresql://USER@HOST:PORT/DB?sslmode=verify-full. The
                          password goes in [fleet] password_file/password_env or $PGPASSWORD
  --verbose               debug logging
  --help                  this text

environment:
  TRAINWATCH_SLACK_WEBHOOK, TRAINWATCH_WEBHOOK
                          a URL each, added like --slack-webhook and --webhook (kept out of argv)

exit status (none but 1 is helped by a restart; the unit does not restart them):
  0   a clean stop (SIGTERM, SIGINT)
  65  the store is corrupt
  73  the store cannot be written (a read-only file, directory or mount)
  75  another daemon is using the store (it holds FILE.lock)
  78  a configuration error, or a store that is not trainwatch's
  1   anything else
)";

constexpr const char* kStatusHelp = R"(usage: trainwatch status --db FILE [--json]

What the daemon writing FILE is doing: its roots and console-log globs, runs, event files by
state, ingest lag (bytes written to event files but not yet in the store), errors in the last
hour, and when it last rescanned; [[alert]]s that have watched no series for a day (a typo in
a tag?); whether a daemon holds the store now, and what it waits on (a store another
process keeps locked, say). Reads the store read-only (as immutable on read-only media); works
whether or not the daemon runs.

exit status: 0, 65 the store is corrupt, 73 it cannot be read where it is, 1 otherwise.
)";

struct StatusReport {
  std::map<std::string, std::string> state;
  int64_t runs = 0, series = 0, points = 0;
  std::map<std::string, int64_t> sources_by_status;
  int64_t lag_bytes = 0, lag_files = 0;
  int64_t errors_last_hour = 0;
};

Result<StatusReport> Collect(store::Db& db) {
  StatusReport r;
  auto each = [&](const char* sql, const std::function<void(store::Stmt&)>& fn) -> Status {
    Result<store::Stmt> s = db.Prepare(sql);
    if (!s.ok()) return s.status();
    for (;;) {
      Result<bool> row = s->Step();
      if (!row.ok()) return row.status();
      if (!*row) return Status::Ok();
      fn(*s);
    }
  };
  TW_RETURN_IF_ERROR(each("SELECT key, value FROM daemon_state",
                          [&](store::Stmt& s) { r.state[s.Text(0)] = s.Text(1); }));
  TW_RETURN_IF_ERROR(each("SELECT (SELECT count(*) FROM runs), (SELECT count(*) FROM series), "
                          "(SELECT count(*) FROM scalars)",
                          [&](store::Stmt& s) {
                            r.runs = s.Int(0);
                            r.series = s.Int(1);
                            r.points = s.Int(2);
                          }));
  TW_RETURN_IF_ERROR(each("SELECT status, count(*) FROM sources GROUP BY status",
                          [&](store::Stmt& s) { r.sources_by_status[s.Text(0)] = s.Int(1); }));
  // Lag: what the files hold now beyond what is committed. One stat per active file; an
  // object of an s3:// root counts the size its last read saw (no request from here).
  TW_RETURN_IF_ERROR(each("SELECT path, committed_offset, size_seen FROM sources WHERE status = 'active'",
                          [&](store::Stmt& s) {
                            const std::string path = s.Text(0);
                            struct stat st;
                            int64_t size = 0;
                            if (objstore::IsS3Url(path)) size = s.Int(2);
                            else if (::stat(path.c_str(), &st) == 0) size = st.st_size;
                            else return;
                            const int64_t behind = size - s.Int(1);
                            if (behind > 0) {
                              r.lag_bytes += behind;
                              r.lag_files++;
                            }
                          }));
  const double hour_ago = UnixNow() - 3600;
  Result<store::Stmt> e = db.Prepare("SELECT count(*) FROM ingest_errors WHERE time >= ?1");
  if (!e.ok()) return e.status();
  e->Bind(1, hour_ago);
  if (Result<bool> row = e->Step(); row.ok() && *row) r.errors_last_hour = e->Int(0);
  return r;
}

std::string Ago(const std::string& unix_seconds) {
  if (unix_seconds.empty()) return "never";
  const double then = std::atof(unix_seconds.c_str());
  const double now = UnixNow();
  std::ostringstream o;
  o << std::llround(now - then) << " s ago";
  return o.str();
}

}  // namespace

int CmdDaemon(const Args& args) {
  Flags f(args, {"config", "logdir", "db", "rescan-interval", "slack-webhook", "webhook",
                 "slack-webhook-file", "webhook-file", "web", "postgres"},
          {"no-inotify", "verbose", "help"});
  if (f.Has("help")) return Usage(kDaemonHelp);
  if (!f.error().empty()) return Usage(kDaemonHelp, f.error());
  if (!f.positionals().empty())
    return Usage(kDaemonHelp, "unexpected argument '" + f.positionals()[0] + "' (use --logdir)");
  app::DaemonArgs a;
  a.config_path = f.Get("config").value_or("");
  a.logdirs = f.GetAll("logdir");
  a.db_path = f.Get("db").value_or("");
  if (auto r = f.Get("rescan-interval")) {
    try {
      a.rescan_seconds = std::stod(*r);
    } catch (...) {
      return Usage(kDaemonHelp, "--rescan-interval needs a number of seconds, got '" + *r + "'");
    }
  }
  a.no_inotify = f.Has("no-inotify");
  a.verbose = f.Has("verbose");
  a.slack_webhooks = f.GetAll("slack-webhook");
  a.webhooks = f.GetAll("webhook");
  a.slack_webhook_files = f.GetAll("slack-webhook-file");
  a.webhook_files = f.GetAll("webhook-file");
  if (auto w = f.Get("web")) a.web_listen = *w;
  if (auto p = f.Get("postgres")) a.postgres = *p;
  return app::RunDaemon(a);
}

int CmdStatus(const Args& args) {
  Flags f(args, {"db"}, {"json", "help"});
  if (f.Has("help")) return Usage(kStatusHelp);
  if (!f.error().empty()) return Usage(kStatusHelp, f.error());
  if (!f.Has("db")) return Usage(kStatusHelp, "status needs --db FILE");
  Result<std::unique_ptr<store::Db>> db = store::OpenReadOnly(*f.Get("db"));
  if (!db.ok()) return StoreFailure(db.status());
  Result<StatusReport> r = Collect(**db);
  if (!r.ok()) return StoreFailure(r.status());
  auto state = [&](const char* k) { return r->state.count(k) ? r->state.at(k) : std::string(); };
  // Notifications, per channel: what waits, what went, what was given up (dead letters).
  // (A store no daemon of this version has migrated yet has no outbox: nothing to say.)
  Result<std::vector<notify::OutboxCounts>> outbox = notify::CountOutbox(**db);
  if (!outbox.ok()) outbox = std::vector<notify::OutboxCounts>{};
  Result<std::vector<notify::WaitingGroup>> waiting = notify::ListWaiting(**db);
  if (!waiting.ok()) waiting = std::vector<notify::WaitingGroup>{};
  // Whether a daemon holds the store now, and what it waits on that it cannot write into the
  // store (its write lock held by someone else): from the lock file beside it.
  const app::LiveDaemon daemon = app::ReadLiveDaemon(*f.Get("db"));
  const app::LiveDaemon* live = daemon.state == app::LiveDaemon::State::kRunning ? &daemon : nullptr;
  if (f.Has("json")) {
    std::cout << "{\"phase\":" << JsonQuote(state("phase")) << ",\"pid\":" << JsonQuote(state("pid"))
              << ",\"config\":" << JsonQuote(state("config")) << ",\"roots\":[";
    std::istringstream roots(state("roots"));
    std::string root;
    for (bool first = true; std::getline(roots, root); first = false)
      std::cout << (first ? "" : ",") << JsonQuote(root);
    std::cout << "],\"console\":[";
    std::istringstream console(state("console"));
    std::string glob;
    for (bool first = true; std::getline(console, glob); first = false)
      std::cout << (first ? "" : ",") << JsonQuote(glob);
    std::cout << "],\"unreadable\":[";
    std::istringstream unreadable(state("unreadable"));
    std::string dir;
    for (bool first = true; std::getline(unreadable, dir); first = false)
      std::cout << (first ? "" : ",") << JsonQuote(dir);
    std::cout << "],\"s3_failing\":[";
    std::istringstream s3(state("s3"));
    std::string failing;
    for (bool first = true; std::getline(s3, failing); first = false)
      std::cout << (first ? "" : ",") << JsonQuote(failing);
    std::cout << "],\"alerts_unmatched\":[";
    std::istringstream unmatched(state("alerts_unmatched"));
    std::string alert;
    for (bool first = true; std::getline(unmatched, alert); first = false)
      std::cout << (first ? "" : ",") << JsonQuote(alert);
    std::cout << "],\"shared_roots\":[";
    std::istringstream shared(state("shared_roots"));
    std::string line;
    for (bool first = true; std::getline(shared, line); first = false)
      std::cout << (first ? "" : ",") << JsonQuote(line);
    std::cout << "],\"fleet\":" << JsonQuote(state("fleet")) << ",\"inotify\":" << JsonQuote(state("inotify"))
              << ",\"last_rescan\":" << (state("last_rescan").empty() ? "null" : state("last_rescan"))
              << ",\"runs\":" << r->runs << ",\"series\":" << r->series
              << ",\"scalar_points\":" << r->points << ",\"sources\":{";
    bool first = true;
    for (const auto& [k, v] : r->sources_by_status) {
      std::cout << (first ? "" : ",") << JsonQuote(k) << ":" << v;
      first = false;
    }
    std::cout << "},\"lag_bytes\":" << r->lag_bytes << ",\"lag_files\":" << r->lag_files
              << ",\"errors_last_hour\":" << r->errors_last_hour << ",\"running\":"
              << (live ? "true" : daemon.state == app::LiveDaemon::State::kStopped ? "false" : "null")
              << ",\"waiting\":{";
    if (live) {
      bool first_condition = true;
      for (const auto& [k, c] : live->conditions) {
        std::cout << (first_condition ? "" : ",") << JsonQuote(k) << ":{\"since\":" << std::llround(c.since)
                  << ",\"what\":" << JsonQuote(c.text) << "}";
        first_condition = false;
      }
    }
    std::cout << "},\"notifications\":[";
    for (size_t i = 0; i < outbox->size(); ++i) {
      const notify::OutboxCounts& o = (*outbox)[i];
      std::cout << (i ? "," : "") << "{\"channel\":" << JsonQuote(o.channel) << ",\"pending\":" << o.pending
                << ",\"sent\":" << o.sent << ",\"dead\":" << o.dead << ",\"last_error\":" << JsonQuote(o.last_error)
                << ",\"waiting\":[";
      bool first_group = true;
      for (const notify::WaitingGroup& w : *waiting) {
        if (w.channel != o.channel) continue;
        std::cout << (first_group ? "" : ",") << "{\"group\":" << JsonQuote(w.group)
                  << ",\"messages\":" << w.messages << ",\"oldest\":" << std::llround(w.oldest)
                  << ",\"due\":" << std::llround(w.due) << "}";
        first_group = false;
      }
      std::cout << "]}";
    }
    std::cout << "]}\n";
    return 0;
  }
  std::cout << "daemon:      "
            << (!state("phase").empty() ? state("phase")
                : live                  ? "starting (pid " + live->pid + "; nothing written to the store yet)"
                                        : "never ran on this store")
            << (state("pid").empty() ? "" : " (pid " + state("pid") + ")")
            << (daemon.state == app::LiveDaemon::State::kStopped && !state("phase").empty() &&
                        state("phase") != "stopped"
                    ? "; not running now (no process holds the store's lock: it ended without a clean stop)"
                    : "")
            << "\n";
  if (live)
    for (const auto& [k, c] : live->conditions)
      std::cout << "waiting:     " << k << ": " << c.text << " (for " << std::llround(UnixNow() - c.since)
                << " s)\n";
  if (!state("config").empty()) std::cout << "config:      " << state("config") << "\n";
  std::istringstream roots(state("roots"));
  for (std::string root; std::getline(roots, root);) std::cout << "root:        " << root << "\n";
  std::istringstream console(state("console"));
  for (std::string glob; std::getline(console, glob);) std::cout << "console:     " << glob << "\n";
  std::istringstream unreadable(state("unreadable"));
  for (std::string dir; std::getline(unreadable, dir);)
    std::cout << "unreadable:  " << dir << " (permission denied; the event files below it are not read)\n";
  std::istringstream s3(state("s3"));
  for (std::string failing; std::getline(s3, failing);)
    std::cout << "s3:          " << failing << " (its listing fails; tried again at each poll)\n";
  std::istringstream unmatched(state("alerts_unmatched"));
  for (std::string alert; std::getline(unmatched, alert);)
    std::cout << "alert:       " << alert << " (for a day or more: a typo in its tag or role?)\n";
  if (!state("inotify").empty()) std::cout << "inotify:     " << state("inotify") << "\n";
  if (!state("fleet").empty()) std::cout << "fleet:       " << state("fleet") << "\n";
  std::istringstream shared(state("shared_roots"));
  for (std::string line; std::getline(shared, line);) std::cout << "shared root: " << line << "\n";
  std::cout << "last rescan: " << Ago(state("last_rescan")) << "\n";
  std::cout << "runs:        " << r->runs << " (" << r->series << " series, "
            << HumanCount(r->points) << " scalar points)\n";
  std::cout << "files:      ";
  for (const auto& [k, v] : r->sources_by_status) std::cout << " " << v << " " << k;
  std::cout << "\n";
  std::cout << "lag:         " << HumanBytes(static_cast<double>(r->lag_bytes)) << " in "
            << r->lag_files << " files not yet read\n";
  std::cout << "errors:      " << r->errors_last_hour << " in the last hour\n";
  for (const notify::OutboxCounts& o : *outbox) {
    std::cout << "notify:      " << o.channel << ": " << o.sent << " sent, " << o.pending << " pending, "
              << o.dead << " dead";
    if (o.dead > 0 || o.pending > 0)
      if (!o.last_error.empty()) std::cout << " (last error: " << o.last_error << ")";
    std::cout << "\n";
    // Messages held for their group: how many, which group, and when they go.
    const double now = UnixNow();
    for (const notify::WaitingGroup& w : *waiting)
      if (w.channel == o.channel)
        std::cout << "notify:        " << w.messages << (w.messages == 1 ? " message waits" : " messages wait")
                  << " for group " << w.group << ": goes in "
                  << std::max<int64_t>(0, std::llround(w.due - now)) << " s (queued "
                  << std::llround(now - w.oldest) << " s ago)\n";
  }
  return 0;
}

}  // namespace tw::cli
