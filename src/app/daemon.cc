#include "app/daemon.h"

#include <unistd.h>

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <set>
#include <thread>

#include "base/clock.h"
#include "app/diagnose_worker.h"
#include "app/instance_lock.h"
#include "app/notify_worker.h"
#include "app/ingest_worker.h"
#include "app/object_roots.h"
#include "app/sd_notify.h"
#include "app/work_queue.h"
#include "base/log.h"
#include "fleet/fleet.h"
#include "store/store.h"
#include "web/access.h"
#include "web/server.h"
#include "watch/inotify_watcher.h"
#include "watch/snapshot.h"

namespace tw::app {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

Result<Config> BuildConfig(const DaemonArgs& args) {
  Config c;
  if (!args.config_path.empty()) {
    Result<Config> loaded = LoadConfigFile(args.config_path);
    if (!loaded.ok()) return loaded.status();
    c = std::move(*loaded);
  } else {
    c.origin = "command line";
    c.db_path = DefaultDbPath();
  }
  for (const auto& d : args.logdirs)
    c.roots.push_back(objstore::IsS3Url(d) ? d : fs::absolute(d).lexically_normal().native());
  if (!args.db_path.empty()) c.db_path = fs::absolute(args.db_path).native();
  if (args.rescan_seconds) {
    if (*args.rescan_seconds < 0.05 || *args.rescan_seconds > 86400)
      return InvalidArgument("--rescan-interval must be between 0.05 and 86400 seconds");
    c.rescan_interval_ms = static_cast<int64_t>(*args.rescan_seconds * 1000);
  }
  TW_RETURN_IF_ERROR(AddCommandLineChannels(
      {args.slack_webhooks, args.slack_webhook_files, args.webhooks, args.webhook_files}, &c));
  if (args.no_inotify) c.inotify = false;
  if (args.verbose) c.verbose = true;
  if (args.web_listen) {
    std::string address;
    uint16_t port = 0;
    if (!web::ParseListen(*args.web_listen, &address, &port))
      return InvalidArgument("--web must be ADDRESS:PORT (127.0.0.1:8421, [::1]:8421)");
    TW_RETURN_IF_ERROR(web::CheckListen(address, c.web_token));
    c.web_listen = *args.web_listen;
  }
  if (args.postgres) {
    if (Status st = fleet::CheckConninfo(*args.postgres); !st.ok()) return InvalidArgument("--postgres: " + st.message());
    c.fleet.conninfo = *args.postgres;
  }
  std::sort(c.roots.begin(), c.roots.end());
  c.roots.erase(std::unique(c.roots.begin(), c.roots.end()), c.roots.end());
  TW_RETURN_IF_ERROR(Validate(&c));
  if (!c.fleet.conninfo.empty() && c.fleet.host.empty()) c.fleet.host = fleet::LocalHostName();
  for (auto& r : c.fleet.shared_roots) {  // as Validate made the roots: canonical
    std::error_code ec;
    r = fs::canonical(r, ec).native();
  }
  c.fleet.roots = c.roots;
  return c;
}

namespace {

// What an operator does about a store the daemon cannot use.
std::string StoreAdvice(const Status& st) {
  switch (st.code()) {
    case Code::kCorrupt:
      return ". The store is damaged: restore it from a backup (or try `sqlite3 FILE .recover`), or move it "
             "away and start again (the event files are read again from the start). Not restarting.";
    case Code::kReadOnly:
      return ". The daemon must write the store (and its -wal, -shm and .lock files beside it): make the file, "
             "its directory and the mount writable by the daemon's user. `trainwatch status` and `query` "
             "still read it. Not restarting.";
    default:
      return "";
  }
}

std::string Join(const std::vector<std::string>& v, const char* sep) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : sep) + s;
  return out;
}

class Daemon {
 public:
  Daemon(DaemonArgs args, Config cfg, std::unique_ptr<store::Store> store, InstanceLock& lock)
      : args_(std::move(args)),
        cfg_(std::move(cfg)),
        signals_(io_, SIGTERM, SIGINT, SIGHUP),
        rescan_timer_(io_),
        watchdog_timer_(io_),
        progress_timer_(io_),
        notifier_(Notifier::FromEnvironment()),
        worker_(std::move(store), queue_, IngestOptions(cfg_)),
        diagnoser_(cfg_.db_path),
        notifier_thread_(cfg_.db_path),
        objects_(cfg_.s3, cfg_.s3_poll_ms, queue_,
                 [this](const std::string& k, const std::string& v) { worker_.SetState(k, v); }) {
    worker_.SetObjectRoots(&objects_);
    diagnoser_.SetOnQueued([this] { notifier_thread_.Wake(); });
    worker_.SetOnCommitted([this](int64_t run, bool live) {
      diagnoser_.RunsCommitted(run, live);
      if (shipper_) shipper_->Wake();
    });
    worker_.SetOnLiveNonFinite([this](int64_t run) { diagnoser_.PreemptHistory(run); });
    diagnoser_.SetIngestIdle([this] { return queue_.Drained(); });
    diagnoser_.SetOnAlertsUnmatched([this](const std::string& lines) { worker_.SetState("alerts_unmatched", lines); });
    worker_.SetOnFatal([this](const Status& st) { boost::asio::post(io_, [this, st] { OnFatalStoreError(st); }); });
    // What delivery waits on cannot always go into the store (its write lock may be what it
    // waits for): the lock file beside it says it to `trainwatch status`.
    notifier_thread_.SetConditionSink([&lock](const std::string& text) { lock.SetCondition("notify", text); });
  }

  int Run() {
    if (Status st = diagnoser_.Configure(cfg_); !st.ok()) {
      log::Error("configuration error: " + st.message());
      return kExitConfig;
    }
    if (Status st = notifier_thread_.Configure(cfg_); !st.ok()) {
      log::Error("configuration error: " + st.message());
      return kExitConfig;
    }
    log::Info("trainwatch daemon: watching " + (cfg_.roots.empty() ? "no root" : Join(cfg_.roots, ", ")) +
              (cfg_.console.empty() ? "" : "; console logs " + Join(ConsolePatterns(cfg_), ", ")) +
              "; store " + cfg_.db_path + "; rescan every " + std::to_string(cfg_.rescan_interval_ms) +
              " ms; inotify " + (cfg_.inotify ? "on" : "off"));
    worker_.SetRoots(cfg_.roots);
    worker_.SetConsole(cfg_.console, cfg_.profiles);
    worker_.SetState("pid", std::to_string(::getpid()));
    worker_.SetState("started", std::to_string(UnixNow()));
    worker_.SetState("config", cfg_.origin);
    worker_.SetState("phase", "starting");
    // Files the store knows that the first walk does not find were deleted (or moved) while
    // we were stopped: seeded into the last snapshot, the first diff reports them gone.
    // (Objects: the lister compares them with its first listing of their root.)
    const std::vector<std::string> known = worker_.ActiveSourcePaths();
    for (const auto& p : known)
      if (!objstore::IsS3Url(p)) snapshot_.files.emplace(p, watch::FileStat{-1, 0, 0, 0});
    objects_.SetRoots(cfg_.roots, known);
    writer_ = std::thread([this] { worker_.Run(); });
    diagnoser_.Start();
    notifier_thread_.Start();
    objects_.Start();
    StartWeb();
    StartFleet();

    if (cfg_.inotify) StartInotify();
    Rescan();  // the initial scan: every known file resumes from its committed offset
    signals_.async_wait([this](auto ec, int sig) { OnSignal(ec, sig); });
    ScheduleWatchdog();
    notifier_.Send("READY=1\nSTATUS=" + StatusLine());
    worker_.SetState("phase", "backfill");
    ScheduleProgress(1s);
    io_.run();

    // Stopped: let the writer finish its current commit, then leave. (A message being sent
    // finishes first; one still queued is sent after the restart.)
    web_.Stop();
    objects_.Stop();
    if (leases_) leases_->Stop();
    if (shipper_) shipper_->Stop();
    diagnoser_.Stop();
    notifier_thread_.Stop();
    worker_.RequestStop();
    queue_.Close();
    writer_.join();
    log::Info("trainwatch daemon: stopped; " + std::to_string(worker_.counters().points.load()) +
              " points ingested in this run");
    return exit_code_;
  }

 private:
  // The read-only web view, when [web] listen or --web asks for it. One that cannot listen
  // (the port taken) is logged and left off: the doctor's own work goes on. Not reloaded.
  void StartWeb() {
    if (cfg_.web_listen.empty()) return;
    web::WebOptions o;
    web::ParseListen(cfg_.web_listen, &o.address, &o.port);  // checked by the config
    o.db_path = cfg_.db_path;
    o.token = cfg_.web_token;
    o.role_patterns = diagnose::EffectiveRolePatterns(cfg_.rules.roles);
    // The runs page asks again at the rescan interval, and at least every 10 s: inotify brings
    // points sooner than the rescan does.
    o.refresh_seconds = std::clamp(cfg_.rescan_interval_ms / 1000.0, 1.0, 10.0);
    const std::string address = o.address;
    if (Status st = web_.Start(std::move(o)); !st.ok()) {
      log::Error("web view: " + st.message() + "; not serving it");
      return;
    }
    const std::string host = address.find(':') != std::string::npos ? "[" + address + "]" : address;
    log::Info("web view: http://" + host + ":" + std::to_string(web_.port()) + "/" +
              (cfg_.web_token.empty() ? "" : " (token required)"));
  }

  // The fleet shipper ([fleet] postgres or --postgres, docs/fleet.md). PostgreSQL out of reach
  // is no reason not to start: the backlog waits in the store. Not reloaded.
  void StartFleet() {
    if (cfg_.fleet.conninfo.empty()) return;
    shipper_ = std::make_unique<fleet::Shipper>(cfg_.db_path, cfg_.fleet);
    shipper_->Start();
    if (cfg_.fleet.shared_roots.empty()) return;
    leases_ = std::make_unique<fleet::LeaseKeeper>(cfg_.db_path, cfg_.fleet);
    leases_->Start([this] { boost::asio::post(io_, [this] { ApplyLeases(); }); });
  }

  // A path under a shared root whose lease another host holds: not read here (docs/fleet.md).
  bool Skipped(const std::string& path) const {
    for (const auto& r : cfg_.fleet.shared_roots)
      if ((path == r || path.starts_with(r + "/")) && !held_.count(r)) return true;
    return false;
  }

  // The leases changed: a root taken is read from where this host's store left it (its files
  // forgotten by the last snapshot, so the next rescan posts them); a root let go is no longer
  // posted. `status` says which.
  void ApplyLeases() {
    const std::vector<std::string> owned = leases_->Owned();
    const std::set<std::string> now(owned.begin(), owned.end());
    for (const auto& r : now)
      if (!held_.count(r)) {
        std::erase_if(snapshot_.files, [&](const auto& f) { return f.first.starts_with(r + "/"); });
        std::erase_if(snapshot_.dirs, [&](const auto& d) { return d == r || d.starts_with(r + "/"); });
      }
    held_ = now;
    worker_.SetState("shared_roots", leases_->Describe());
    rescan_timer_.cancel();
    Rescan();
  }

  static ingest::IngestOptions IngestOptions(const Config& c) {
    ingest::IngestOptions o;
    o.batch_points = c.batch_points;
    o.max_bytes_per_call = c.max_bytes_per_turn;
    o.follow_symlinks_outside_root = c.follow_symlinks_outside_roots;
    o.console_globs = ConsolePatterns(c);
    o.profiles = c.profiles;
    return o;
  }

  static std::vector<std::string> ConsolePatterns(const Config& c) {
    std::vector<std::string> out;
    for (const auto& g : c.console) out.push_back(g.glob);
    return out;
  }

  // At most this many files of one [[console]] glob are read (a glob that matches a whole file
  // system must not flood the queue and the store); said once while a glob matches more.
  static constexpr size_t kMaxConsoleMatches = 10000;

  void StartInotify() {
    watcher_ = std::make_unique<watch::InotifyWatcher>(
        io_,
        [this](const std::string& path) {  // written now; not a shared root another host holds
          if (!Skipped(path)) queue_.Post(path, Lane::kLive);
        },
        [this] { rescan_soon_ = true; RescanSoon(); });
    if (Status st = watcher_->Start(); !st.ok()) {
      log::Warning("inotify unavailable (" + st.message() + "); relying on rescans");
      watcher_.reset();
      return;
    }
    for (const auto& root : cfg_.roots)
      if (!objstore::IsS3Url(root)) watcher_->AddTree(root);
    log::Info("inotify: watching " + std::to_string(watcher_->watch_count()) + " directories");
  }

  // A file written to within this long is read before the history (the startup backfill).
  static constexpr int64_t kLiveWindowNs = int64_t{600} * 1'000'000'000;

  // The periodic rescan: the truth that inotify only hints at.
  void Rescan() {
    const auto t0 = std::chrono::steady_clock::now();
    watch::Snapshot now = watch::Walk(cfg_.roots);
    // Console logs are found by their globs, at each rescan (no inotify watch: a glob's root,
    // /scratch say, may be too large a tree to watch). New and grown ones are then posted as
    // any changed file is.
    const std::vector<std::string> over = watch::AddGlobMatches(ConsolePatterns(cfg_), kMaxConsoleMatches, &now);
    for (const auto& g : over)
      if (!console_over_.count(g))
        log::Warning("[[console]] glob " + g + " matches more than " + std::to_string(kMaxConsoleMatches) +
                     " files; only the first " + std::to_string(kMaxConsoleMatches) +
                     " in name order are read: make it narrower");
    console_over_ = {over.begin(), over.end()};
    std::vector<std::string> changed = watch::Diff(snapshot_, now);
    std::erase_if(changed, [this](const std::string& p) { return Skipped(p); });
    const int64_t now_ns = static_cast<int64_t>(UnixNow() * 1e9);
    std::vector<std::string> history;
    for (const auto& p : changed) {  // live first: the writer takes the first one at once
      auto f = now.files.find(p);
      if (f != now.files.end() && now_ns - f->second.mtime_ns < kLiveWindowNs) queue_.Post(p, Lane::kLive);
      else history.push_back(p);
    }
    for (const auto& p : history) queue_.Post(p, Lane::kHistory);
    if (watcher_) {
      const size_t added = watcher_->EnsureWatched(now.dirs);
      if (added && !first_rescan_)
        log::Debug("rescan: " + std::to_string(added) + " directories were not watched yet");
    }
    ReportUnreadable(now.unreadable);
    worker_.RetryFailed();
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                        std::chrono::steady_clock::now() - t0)
                        .count();
    if (first_rescan_) {
      log::Info("initial scan: " + std::to_string(now.files.size()) + " event files in " +
                std::to_string(now.dirs.size()) + " directories (" + std::to_string(ms) +
                " ms); reading what is new since the last run");
    } else if (!changed.empty()) {
      log::Debug("rescan: " + std::to_string(changed.size()) + " files changed");
    }
    first_rescan_ = false;
    files_ = now.files.size();
    snapshot_ = std::move(now);
    worker_.SetState("last_rescan", std::to_string(UnixNow()));
    worker_.SetState("roots", Join(cfg_.roots, "\n"));
    worker_.SetState("console", Join(ConsolePatterns(cfg_), "\n"));
    worker_.SetState("inotify", !cfg_.inotify ? "off"
                                : !watcher_   ? "unavailable"
                                : watcher_->degraded() ? "degraded: " + watcher_->degraded_reason()
                                                       : "on");
    notifier_.Send("STATUS=" + StatusLine());
    ScheduleRescan();
  }

  // A directory the walk cannot enter hides every event file below it: said once when it
  // is found (log and `trainwatch status`), once when it can be read again.
  void ReportUnreadable(const std::vector<std::string>& dirs) {
    const std::set<std::string> now(dirs.begin(), dirs.end());
    for (const auto& d : now)
      if (!unreadable_.count(d))
        log::Warning(d + ": permission denied; the event files below it are not watched or read");
    for (const auto& d : unreadable_)
      if (!now.count(d)) log::Info(d + ": readable again");
    if (now != unreadable_ || first_rescan_)
      worker_.SetState("unreadable", Join({now.begin(), now.end()}, "\n"));
    unreadable_ = now;
  }

  void ScheduleRescan() {
    rescan_timer_.expires_after(std::chrono::milliseconds(cfg_.rescan_interval_ms));
    rescan_timer_.async_wait([this](boost::system::error_code ec) {
      if (!ec) Rescan();
    });
  }

  // An inotify overflow (or a directory moved away) asks for a rescan now, once.
  void RescanSoon() {
    if (!rescan_soon_) return;
    boost::asio::post(io_, [this] {
      if (!rescan_soon_) return;
      rescan_soon_ = false;
      rescan_timer_.cancel();
      Rescan();
    });
  }

  void ScheduleWatchdog() {
    const int64_t usec = notifier_.watchdog_usec();
    if (usec <= 0) return;
    watchdog_timer_.expires_after(std::chrono::microseconds(usec / 2));
    watchdog_timer_.async_wait([this, usec](boost::system::error_code ec) {
      if (ec) return;
      // Ping only while the writer thread shows life: a stuck writer must be restarted.
      const int64_t now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                                 std::chrono::steady_clock::now().time_since_epoch())
                                 .count();
      const auto& c = worker_.counters();
      if (c.idle.load() || now_ms - c.heartbeat_ms.load() < usec / 1000) {
        notifier_.Send("WATCHDOG=1");
      } else {
        log::Error("writer thread unresponsive; withholding the watchdog ping");
      }
      ScheduleWatchdog();
    });
  }

  // While a backlog drains (the startup backfill, or a burst), say how it goes every 10 s;
  // say once when it is done. The phase in daemon_state follows: backfill, then live. The
  // first look comes after a second, so a small backfill turns live quickly.
  void ScheduleProgress(std::chrono::milliseconds delay = 10s) {
    progress_timer_.expires_after(delay);
    progress_timer_.async_wait([this](boost::system::error_code ec) {
      if (ec) return;
      const auto& c = worker_.counters();
      const size_t queued = queue_.size();
      const int64_t bytes = c.bytes.load();
      if (queued > 0 || !caught_up_) {
        if (queued > 0) {
          log::Info("ingest: " + std::to_string(queued) + " files queued; " +
                    std::to_string((bytes - last_bytes_) >> 20) + " MiB and " +
                    std::to_string(c.points.load() - last_points_) + " points in the last 10 s");
        } else {
          log::Info("ingest: caught up; " + std::to_string(c.points.load()) +
                    " points ingested since start");
          worker_.SetState("phase", "live");
          caught_up_ = true;
        }
      }
      if (queued > 0) caught_up_ = false;  // a new burst: say again when it is done
      last_bytes_ = bytes;
      last_points_ = c.points.load();
      ScheduleProgress();
    });
  }

  std::string StatusLine() const {
    const auto& c = worker_.counters();
    return std::to_string(cfg_.roots.size()) + " roots, " + std::to_string(files_) +
           " files; " + std::to_string(queue_.size()) + " queued (" + std::to_string(queue_.live_size()) +
           " live); " +
           std::to_string(c.points.load()) + " points ingested";
  }

  void OnSignal(boost::system::error_code ec, int sig) {
    if (ec) return;
    if (sig == SIGHUP) {
      Reload();
      signals_.async_wait([this](auto e, int s) { OnSignal(e, s); });
      return;
    }
    log::Info(std::string("trainwatch daemon: ") + (sig == SIGTERM ? "SIGTERM" : "SIGINT") +
              ", stopping");
    Shutdown();
  }

  // The writer found the store unwritable for good (corrupt, read-only): say what to do, stop,
  // and exit with that case's status (which the unit does not restart).
  void OnFatalStoreError(const Status& st) {
    log::Error("the store cannot be written any more, stopping: " + st.message() + StoreAdvice(st));
    exit_code_ = ExitCodeFor(st);
    Shutdown();
  }

  void Shutdown() {
    notifier_.Send("STOPPING=1");
    worker_.SetState("phase", "stopped");
    worker_.RequestStop();
    rescan_timer_.cancel();
    watchdog_timer_.cancel();
    progress_timer_.cancel();
    watcher_.reset();
    io_.stop();
  }

  void Reload() {
    const auto mono = std::chrono::duration_cast<std::chrono::microseconds>(
                          std::chrono::steady_clock::now().time_since_epoch())
                          .count();
    notifier_.Send("RELOADING=1\nMONOTONIC_USEC=" + std::to_string(mono));
    Result<Config> next = BuildConfig(args_);
    if (!next.ok()) {
      log::Error("reload rejected, keeping the running configuration: " + next.status().message());
      notifier_.Send("READY=1\nSTATUS=reload rejected: " + next.status().message());
      return;
    }
    if (Status st = diagnoser_.Configure(*next); !st.ok()) {
      log::Error("reload rejected, keeping the running configuration: " + st.message());
      notifier_.Send("READY=1\nSTATUS=reload rejected: " + st.message());
      return;
    }
    if (Status st = notifier_thread_.Configure(*next); !st.ok()) {
      log::Error("reload rejected (notifications), keeping the previous channels: " + st.message());
    }
    fleet::FleetOptions next_fleet = next->fleet;
    next_fleet.roots = cfg_.fleet.roots;  // the roots may change on reload; the rest of [fleet] not
    if (next_fleet != cfg_.fleet)
      log::Warning("reload: [fleet] changed; that takes a restart (still shipping as before)");
    if (next->db_path != cfg_.db_path)
      log::Warning("reload: the store path changed to " + next->db_path +
                   "; that takes a restart (still writing " + cfg_.db_path + ")");
    const std::set<std::string> before(cfg_.roots.begin(), cfg_.roots.end());
    const std::set<std::string> after(next->roots.begin(), next->roots.end());
    Config applied = std::move(*next);
    applied.db_path = cfg_.db_path;
    applied.fleet = cfg_.fleet;  // as running (the shipper and the leases keep theirs)
    const bool inotify_was = cfg_.inotify;
    const bool console_changed = cfg_.console != applied.console;
    cfg_ = std::move(applied);
    log::SetVerbose(cfg_.verbose);
    worker_.SetRoots(cfg_.roots);
    objects_.SetRoots(cfg_.roots);
    objects_.Start();  // when the first s3:// root came with this reload ([s3] itself takes a restart)
    worker_.SetConsole(cfg_.console, cfg_.profiles);  // the profiles are read again at each reload
    if (console_changed)
      log::Info("reload: console logs now " +
                (cfg_.console.empty() ? std::string("none") : Join(ConsolePatterns(cfg_), ", ")));
    for (const auto& r : before)
      if (!after.count(r)) {
        log::Info("reload: no longer watching " + r + " (its data stays in the store)");
        if (watcher_ && !objstore::IsS3Url(r)) watcher_->RemoveTree(r);
      }
    if (cfg_.inotify && !inotify_was) StartInotify();
    if (!cfg_.inotify && inotify_was) watcher_.reset();
    for (const auto& r : after)
      if (!before.count(r)) {
        log::Info("reload: now watching " + r);
        if (watcher_ && !objstore::IsS3Url(r)) watcher_->AddTree(r);
      }
    log::Info("reload: configuration from " + cfg_.origin + " applied");
    rescan_timer_.cancel();
    Rescan();  // picks up the new roots' files and the new interval
    notifier_.Send("READY=1\nSTATUS=" + StatusLine());
  }

  DaemonArgs args_;
  Config cfg_;
  boost::asio::io_context io_;
  boost::asio::signal_set signals_;
  boost::asio::steady_timer rescan_timer_, watchdog_timer_, progress_timer_;
  Notifier notifier_;
  WorkQueue queue_;
  IngestWorker worker_;
  DiagnoseWorker diagnoser_;  // its own thread: rules, findings
  NotifyWorker notifier_thread_;  // its own thread: the outbox's deliveries
  web::WebServer web_;            // its own threads: the read-only web view
  ObjectRoots objects_;           // its own thread: s3:// roots' listings
  std::unique_ptr<fleet::Shipper> shipper_;  // its own thread: the store shipped to PostgreSQL
  std::unique_ptr<fleet::LeaseKeeper> leases_;  // its own thread: shared roots' leases
  std::set<std::string> held_;  // the shared roots this host holds (I/O thread's copy)
  std::thread writer_;
  std::unique_ptr<watch::InotifyWatcher> watcher_;
  watch::Snapshot snapshot_;
  std::set<std::string> unreadable_;  // directories the last rescan could not enter
  std::set<std::string> console_over_;  // console globs that matched too many files, said once
  size_t files_ = 0;
  bool first_rescan_ = true;
  bool rescan_soon_ = false;
  bool caught_up_ = false;
  int64_t last_bytes_ = 0, last_points_ = 0;
  int exit_code_ = 0;
};

}  // namespace

int RunDaemon(const DaemonArgs& args) {
  log::SetVerbose(args.verbose);
  // A file size limit (ulimit -f, systemd's LimitFSIZE=) reached by the store must be a
  // failed write, reported and retried like a full disk, not a signal that kills the daemon.
  std::signal(SIGXFSZ, SIG_IGN);
  Result<Config> cfg = BuildConfig(args);
  if (!cfg.ok()) {
    if (cfg.status().code() == Code::kReadOnly) {
      log::Error("cannot start: " + cfg.status().message() + StoreAdvice(cfg.status()));
      return kExitReadOnly;
    }
    log::Error("configuration error: " + cfg.status().message());
    return kExitConfig;
  }
  log::SetVerbose(cfg->verbose);
  if (!args.slack_webhooks.empty() || !args.webhooks.empty())
    log::Warning("--slack-webhook/--webhook: the URL (a secret) is in this process's argv, which every local "
                 "user can read; use --slack-webhook-file/--webhook-file or $TRAINWATCH_SLACK_WEBHOOK/"
                 "$TRAINWATCH_WEBHOOK");
  if (args.postgres && fleet::ConninfoHasPassword(*args.postgres))
    log::Warning("--postgres: the connection string holds a password, which argv shows to every local user; "
                 "use [fleet] password_file or password_env, or $PGPASSWORD");
  // Before the store is touched: a second daemon must not even migrate it.
  Result<std::unique_ptr<InstanceLock>> lock = InstanceLock::Acquire(cfg->db_path);
  if (!lock.ok()) {
    log::Error("cannot start: " + lock.status().message());
    return ExitCodeFor(lock.status());
  }
  Result<std::unique_ptr<store::Store>> store = store::Store::Open(cfg->db_path, cfg->store_group_readable ? 0640 : 0600);
  if (!store.ok()) {
    log::Error("cannot open the store: " + store.status().message() + StoreAdvice(store.status()));
    return ExitCodeFor(store.status());
  }
  Daemon daemon(args, std::move(*cfg), std::move(*store), **lock);
  return daemon.Run();
}

int ExitCodeFor(const Status& st) {
  switch (st.code()) {
    case Code::kNotOurs: return kExitConfig;
    case Code::kCorrupt: return kExitCorrupt;
    case Code::kReadOnly: return kExitReadOnly;
    case Code::kBusy: return kExitBusy;
    default: return 1;
  }
}

}  // namespace tw::app
