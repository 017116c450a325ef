#include "app/diagnose_worker.h"

#include <malloc.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>

#include "base/clock.h"
#include "base/log.h"
#include "base/writer_process.h"
#include "notify/outbox.h"

namespace tw::app {

namespace {

// Opens the engine for `config`; "config:" load errors are fatal, rule-file ones are logged.
Result<std::unique_ptr<diagnose::Engine>> OpenEngine(const std::string& db, const Config& config) {
  Result<std::unique_ptr<diagnose::Engine>> engine = diagnose::Engine::Open(db, config.rules);
  if (!engine.ok()) return engine.status();
  for (const auto& e : (*engine)->load_errors()) {
    if (e.starts_with("config:")) return InvalidArgument(config.origin + ": " + e.substr(8));
    log::Error("diagnosis rule skipped: " + e);
  }
  return engine;
}

}  // namespace

DiagnoseWorker::DiagnoseWorker(std::string db_path) : db_path_(std::move(db_path)) {}

DiagnoseWorker::~DiagnoseWorker() { Stop(); }

Status DiagnoseWorker::Configure(const Config& config) {
  // The rules load before the configuration is accepted (a typo is refused, not half-applied);
  // the engine that loaded them is the one the diagnosis thread then uses. (An engine is used
  // by one thread at a time: this one until it is handed over.)
  std::unique_ptr<diagnose::Engine> engine;
  if (config.rules_enabled) {
    Result<std::unique_ptr<diagnose::Engine>> opened = OpenEngine(db_path_, config);
    if (!opened.ok()) return opened.status();
    engine = std::move(*opened);
  }
  std::lock_guard lock(mu_);
  pending_ = Pending{config, std::move(engine)};
  return Status::Ok();
}

void DiagnoseWorker::Start() {
  thread_ = std::thread([this] { Loop(); });
}

void DiagnoseWorker::RunsCommitted(int64_t run, bool live) {
  {
    std::lock_guard lock(inbox_mu_);
    committed_.insert(run);
    if (live) committed_live_.insert(run);
  }
  inbox_cv_.notify_one();
}

void DiagnoseWorker::TakeCommitted() {
  std::set<int64_t> runs, live;
  {
    std::unique_lock lock(inbox_mu_);
    inbox_cv_.wait_for(lock, std::chrono::milliseconds(200), [this] { return stop_ || !committed_.empty(); });
    runs.swap(committed_);
    live.swap(committed_live_);
  }
  live_.insert(live.begin(), live.end());
  // Without an engine (rules off, or not loaded yet) there is nothing to examine them with; a
  // new engine starts from every run anyway.
  if (engine_) todo_.insert(runs.begin(), runs.end());
}

bool DiagnoseWorker::InboxEmpty() {
  std::lock_guard lock(inbox_mu_);
  return committed_.empty();
}

void DiagnoseWorker::Stop() {
  {
    std::lock_guard lock(inbox_mu_);  // so that a wait cannot miss it
    stop_ = true;
  }
  inbox_cv_.notify_one();
  {
    std::lock_guard lock(engine_mu_);
    if (engine_) engine_->Cancel();  // a long cycle must not hold up a shutdown
  }
  if (thread_.joinable()) thread_.join();
}

namespace {
// A slice of runs is sized to cost about this much, so a live run's finding waits at most
// about this long for the slice in progress.
constexpr double kSliceSeconds = 0.5;
constexpr size_t kMaxSliceRuns = 256;
}  // namespace

void DiagnoseWorker::LowerPriority() {
  // Diagnosis yields the CPU to ingest and to the I/O thread: findings can wait a moment, a
  // backfill should not. (Linux: nice applies per thread.) Relative to the daemon's own nice,
  // which a unit's Nice= sets for every thread: an absolute 10 would raise a daemon started at
  // 15. The unit allows setpriority (systemd/trainwatch.service says why); where a filter still
  // refuses it, diagnosis competes with ingest as an equal, and the log says so once.
  const auto tid = static_cast<id_t>(::syscall(SYS_gettid));
  errno = 0;
  const int nice = ::getpriority(PRIO_PROCESS, tid);  // -1 is a valid nice: errno tells
  const int base = errno == 0 ? nice : 0;
  if (::setpriority(PRIO_PROCESS, tid, std::min(19, base + 10)) != 0)
    log::Warning(std::string("diagnosis: cannot lower the diagnosis thread's CPU priority (setpriority: ") +
                 std::strerror(errno) + "); it runs at the daemon's priority, beside ingest");
}

void DiagnoseWorker::Loop() {
  LowerPriority();
  using Clock = std::chrono::steady_clock;
  Clock::time_point last_live{}, last_history{}, last_all{}, last_open{}, burst_start{};
  Clock::duration last_cost{};
  while (!stop_) {
    std::optional<Pending> next;
    {
      std::lock_guard lock(mu_);
      next.swap(pending_);
    }
    if (next) {
      config_ = std::move(next->config);
      {
        std::lock_guard lock(engine_mu_);
        engine_.reset();
      }
      tracker_.reset();
      reported_.clear();  // new rules: their problems are news again
      todo_.clear();
      if (next->engine) {
        Result<std::unique_ptr<diagnose::FindingTracker>> t = diagnose::FindingTracker::Open(db_path_);
        if (t.ok()) {
          (*t)->SetTransitionHook([this, channels = EffectiveChannels(config_)](
                                      store::Db& db, const diagnose::Transition& tr, double now) -> Status {
            Result<int> q = notify::QueueTransition(db, channels, tr.transition_id, tr.from, tr.to, now);
            if (!q.ok()) return q.status();
            queued_ += *q;
            return Status::Ok();
          });
          lifecycle_.reset();
          if (config_.lifecycle.enabled) {
            Result<std::unique_ptr<diagnose::LifecycleTracker>> l = diagnose::LifecycleTracker::Open(db_path_);
            if (l.ok()) {
              (*l)->SetHook([this, channels = EffectiveChannels(config_)](store::Db& db, const diagnose::RunEvent& e,
                                                                          double now) -> Status {
                if (!e.announce) return Status::Ok();
                Result<int> q = notify::QueueRunEvent(db, channels, e.event_id, now);
                if (!q.ok()) return q.status();
                queued_ += *q;
                return Status::Ok();
              });
              lifecycle_ = std::move(*l);
            } else {
              log::Error("run events disabled: " + l.status().message());
            }
          }
          // The host's answer to "does this writer still run?" (kill(2), /proc): diagnosis asks
          // through this function and never calls them itself.
          if (!config_.lifecycle.probe) config_.lifecycle.probe = ProbeThisHost;
          std::lock_guard lock(engine_mu_);
          engine_ = std::move(next->engine);
          tracker_ = std::move(*t);
          log::Info("diagnosis: " + std::to_string(engine_->rules().size()) + " rules loaded");
          examine_all_ = true;
          // New alerts: each has its day to find a series again.
          unmatched_since_.clear();
          if (!unmatched_reported_.empty() && on_unmatched_) on_unmatched_("");
          unmatched_reported_.clear();
        } else {
          log::Error("diagnosis disabled: " + t.status().message());
        }
      }
    }
    // A live run's first NaN (PreemptHistory) makes its turn due at once. Read before the
    // hand-over is taken: the writer hands the run over before it raises the alarm, so an alarm
    // read here has its run in todo_ below, unless a slice has already examined it.
    const bool alarm = LiveAlarm();
    TakeCommitted();
    if (!engine_) continue;
    if (examine_all_) {
      // New rules: every run with data is examined under them (the writer hands over only what
      // changes from now on). The engine's first ChangedRuns() returns them all.
      Result<std::vector<int64_t>> all = engine_->ChangedRuns();
      if (all.ok()) {
        todo_.insert(all->begin(), all->end());
        examine_all_ = false;
      } else {
        log::Warning("diagnosis: cannot list the runs to examine (tried again): " + all.status().message());
      }
    }
    const auto now = Clock::now();
    // What the alerts watch, every tenth of the reporting delay (at most every minute), busy or
    // quiet: cheap counts, on the role map this engine has built so far.
    const auto watch_every = std::chrono::duration_cast<Clock::duration>(
        std::chrono::duration<double>(std::min(60.0, config_.alert_unmatched_seconds / 10)));
    if (!config_.rules.alerts.empty() && now - watch_checked_ >= watch_every) {
      watch_checked_ = now;
      CheckAlertsWatch();
    }
    // The runs that may still end, every check_seconds (a killed run's end is a fact of this
    // host's processes, not of anything written).
    if (lifecycle_ && now - last_open >= std::chrono::duration<double>(config_.lifecycle.check_seconds) &&
        now >= retry_at_) {
      last_open = now;
      queued_ = 0;
      if (RunEvents({}, /*open_runs=*/true) && queued_ > 0 && on_queued_) on_queued_();
    }
    // Live slices are `rules_interval_ms` apart. History slices, while the writer reads (a
    // backfill), at least 5x their own cost apart: a bounded share of the machine. Once it is
    // idle they follow each other (the thread is niced; live slices, when due, still go first).
    const auto interval = std::chrono::milliseconds(config_.rules_interval_ms);
    std::vector<int64_t> slice = NextSlice(alarm || now - last_live >= interval);
    const bool live = !slice.empty() && live_.count(slice.front());  // then due by now
    if (alarm && !live) SetLiveAlarm(false);  // its run was examined already: the alarm is answered
    const bool reading = ingest_idle_ && !ingest_idle_();
    const auto gap = !live && reading ? std::max<Clock::duration>(interval, 5 * last_cost) : Clock::duration::zero();
    const bool due = !slice.empty() && now - (live ? last_live : last_history) >= gap && now >= retry_at_;
    // A live run's NaN waits for no history slice: poll again, to take the live run first.
    const bool history = due && !live;
    if (history && !BeginHistorySlice()) continue;
    const bool all = now - last_all >= std::chrono::milliseconds(config_.rules_all_interval_ms);
    if (!due && !all) continue;
    if (!due) slice.clear();
    if (all) last_all = now;
    if (due) (live ? last_live : last_history) = now;
    // A live run's critical findings (a NaN) are stored and sent first, in a pass of their own:
    // the full pass may meet a slow rule (one that goes over its time limit costs that limit
    // once before it is benched), which must not hold the alarm back.
    // (When that pass fails, the store or the engine is in trouble: the full one waits too.)
    if (live && due) SetLiveAlarm(false);  // this slice answers it
    const bool ok = (!live || Examine(slice, false, /*critical_only=*/true)) && Examine(slice, all);
    if (history) EndHistorySlice();
    if (ok) for (int64_t run : slice) todo_.erase(run);  // else tried again after the gap

    const auto cost = Clock::now() - now;
    if (!live) last_cost = cost;
    if (ok && !slice.empty()) {
      const double per_run = std::chrono::duration<double>(cost).count() / static_cast<double>(slice.size());
      slice_runs_ = std::clamp<size_t>(static_cast<size_t>(kSliceSeconds / std::max(per_run, 1e-4)),
                                       1, kMaxSliceRuns);
    }
    if (!live && !slice.empty()) {
      if (history_examined_ == 0) burst_start = now;
      history_examined_ += static_cast<int64_t>(slice.size());
    }
    // History examined, nothing left to examine nor to read: say so once, and hand the
    // burst's high-water mark in this thread's malloc arena back so RSS does not keep it.
    if (history_examined_ > 0 && todo_.empty() && InboxEmpty() && (!ingest_idle_ || ingest_idle_())) {
      log::Info("diagnosis: caught up; " + std::to_string(history_examined_) + " runs examined in " +
                std::to_string(std::chrono::duration_cast<std::chrono::seconds>(Clock::now() - burst_start).count()) +
                " s");
      if (history_examined_ > 64) ::malloc_trim(0);
      history_examined_ = 0;
    }
  }
}

void DiagnoseWorker::CheckAlertsWatch() {
  Result<std::map<std::string, int64_t>> counts = engine_->AlertMatches();
  if (!counts.ok()) return;  // the store is busy or in trouble: the slices say so
  const double now = UnixNow();
  bool changed = false;
  for (const diagnose::Alert& a : config_.rules.alerts) {
    const std::string where = a.name + " (" + a.file + ":" + std::to_string(a.line) + ")";
    if ((*counts)[a.name] > 0) {
      unmatched_since_.erase(a.name);
      if (unmatched_reported_.erase(a.name)) {
        log::Notice("alert " + where + " watches " + std::to_string((*counts)[a.name]) + " series now");
        changed = true;
      }
      continue;
    }
    const double since = unmatched_since_.emplace(a.name, now).first->second;
    if (now - since >= config_.alert_unmatched_seconds && unmatched_reported_.insert(a.name).second) {
      const double held = now - since;
      log::Warning("alert " + where + " has watched no series for " +
                   (held >= 3600 ? std::to_string(std::llround(held / 3600)) + " h: "
                                 : std::to_string(std::llround(held)) + " s: ") +
                   diagnose::DescribeTarget(a) +
                   " matches nothing (a typo? `trainwatch rules --config FILE --db STORE` shows what each "
                   "alert watches)");
      changed = true;
    }
  }
  if (!changed || !on_unmatched_) return;
  std::string lines;
  for (const diagnose::Alert& a : config_.rules.alerts)
    if (unmatched_reported_.count(a.name))
      lines += (lines.empty() ? "" : "\n") + a.name + " (" + a.file + ":" + std::to_string(a.line) + "): " +
               diagnose::DescribeTarget(a) + " matches nothing";
  on_unmatched_(lines);
}

void DiagnoseWorker::PreemptHistory(int64_t run) {
  std::lock_guard lock(engine_mu_);
  if (!preempted_for_.insert(run).second) return;  // its alarm has been raised, or is on its way
  live_alarm_ = true;
  if (history_running_ && engine_) engine_->Interrupt();
}

bool DiagnoseWorker::LiveAlarm() {
  std::lock_guard lock(engine_mu_);
  return live_alarm_;
}

void DiagnoseWorker::SetLiveAlarm(bool on) {
  std::lock_guard lock(engine_mu_);
  live_alarm_ = on;
}

bool DiagnoseWorker::BeginHistorySlice() {
  std::lock_guard lock(engine_mu_);
  if (live_alarm_) return false;  // raised since the turn began: the next turn takes the live run
  history_running_ = true;
  return true;
}

void DiagnoseWorker::EndHistorySlice() {
  std::lock_guard lock(engine_mu_);
  history_running_ = false;
  if (engine_) engine_->ClearInterrupt();
}

std::vector<int64_t> DiagnoseWorker::NextSlice(bool live_due) const {
  std::vector<int64_t> slice;
  if (live_due) {
    for (int64_t run : todo_)
      if (live_.count(run) && slice.size() < slice_runs_) slice.push_back(run);
    if (!slice.empty()) return slice;
  }
  // The history newest first (a later run id is a run seen later); a live run waits for its
  // own turn, and does not hold the history back until then.
  for (auto it = todo_.rbegin(); it != todo_.rend() && slice.size() < slice_runs_; ++it)
    if (!live_.count(*it)) slice.push_back(*it);
  return slice;
}

void DiagnoseWorker::Trouble(const std::string& what) {
  // Said once per condition: a store locked by another process fails every slice alike. The
  // runs stay to be examined, so no finding is lost to it; slices wait 1 s, doubling to 30 s.
  if (what != trouble_) log::Warning("diagnosis: " + what + "; the runs are examined again later");
  trouble_ = what;
  retry_seconds_ = std::clamp(2 * retry_seconds_, 1.0, 30.0);
  retry_at_ = std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                                     std::chrono::duration<double>(retry_seconds_));
}

bool DiagnoseWorker::Examine(const std::vector<int64_t>& runs, bool scope_all, bool critical_only) {
  Result<diagnose::Evaluation> ev = engine_->Evaluate(&runs, UnixNow(), scope_all, critical_only);
  if (!ev.ok()) {
    // Interrupted for a live run's NaN (PreemptHistory): no trouble; the runs stay to be
    // examined.
    if (!stop_ && !engine_->Interrupted()) Trouble(ev.status().message());
    return false;
  }
  // Once per rule and problem, not once per cycle: a rule that loops goes over its limit in
  // every cycle that runs it.
  for (const auto& e : ev->errors)
    if (reported_.insert(e.rule + "\n" + e.limit).second)
      log::Warning((e.limit.empty() ? "diagnosis rule failed: " : "diagnosis rule skipped: ") + e.message +
                   "; said once until the rules are reloaded");
  queued_ = 0;
  Result<std::vector<diagnose::Transition>> tr = tracker_->Apply(*ev, UnixNow());
  if (!tr.ok()) {
    Trouble("cannot store findings: " + tr.status().message());
    return false;
  }
  if (!trouble_.empty()) {
    log::Notice("diagnosis: works again after " + trouble_);
    trouble_.clear();
    retry_seconds_ = 0;
  }
  if (!critical_only && !RunEvents(runs, false)) return false;
  if (queued_ > 0 && on_queued_) on_queued_();
  for (const auto& t : *tr) {
    if (t.to == "pending") continue;  // said when it fires
    if (t.from == "pending" && t.to == "resolved") continue;  // never fired: nothing to retract
    const std::string where = t.run + (t.series.empty() ? "" : " (" + t.series + ")");
    if (t.to == "resolved") {
      log::Notice("finding resolved: " + t.rule + " on " + where);
    } else {
      const std::string line = std::string("finding ") + (t.from == "firing" ? "changed" : "firing") +
                               ": [" + diagnose::SeverityName(t.severity) + "] " + t.rule + " on " +
                               where + ": " + t.message;
      if (t.severity == diagnose::Severity::kCritical) log::Error(line);
      else if (t.severity == diagnose::Severity::kWarning) log::Warning(line);
      else log::Notice(line);
    }
  }
  return true;
}

bool DiagnoseWorker::RunEvents(const std::vector<int64_t>& runs, bool open_runs) {
  if (!lifecycle_) return true;
  const double now = UnixNow();
  // The runs just examined, or every run that may still end: a killed run writes nothing that
  // would bring it here.
  std::set<int64_t> look(runs.begin(), runs.end());
  if (open_runs) {
    Result<std::vector<int64_t>> open = diagnose::OpenRuns(engine_->db(), now, config_.lifecycle);
    if (!open.ok()) {
      Trouble("cannot list the runs that may end: " + open.status().message());
      return false;
    }
    look.insert(open->begin(), open->end());
  }
  Result<std::vector<diagnose::RunEvent>> found =
      diagnose::DetectRunEvents(engine_->db(), {look.begin(), look.end()}, now, config_.lifecycle);
  if (!found.ok()) {
    Trouble("cannot judge the runs' lifecycle: " + found.status().message());
    return false;
  }
  Result<std::vector<diagnose::RunEvent>> recorded = lifecycle_->Record(*found, now);
  if (!recorded.ok()) {
    Trouble("cannot store run events: " + recorded.status().message());
    return false;
  }
  for (const auto& e : *recorded)
    if (e.announce || e.kind == "finished" || e.kind == "crashed")
      (e.kind == "crashed" ? log::Warning : log::Notice)("run " + e.kind + ": " + e.run + " (" + e.how + ")" +
                                                          (e.announce ? "" : "; old history, not announced"));
  return true;
}

}  // namespace tw::app
