#include "app/diagnose_worker.h"

#include <malloc.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "base/clock.h"
#include "base/log.h"
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

DiagnoseWorker::DiagnoseWorker(std::string db_path, std::function<int64_t()> points)
    : db_path_(std::move(db_path)), points_(std::move(points)) {}

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

void DiagnoseWorker::Stop() {
  stop_ = true;
  {
    std::lock_guard lock(engine_mu_);
    if (engine_) engine_->Cancel();  // a long cycle must not hold up a shutdown
  }
  if (thread_.joinable()) thread_.join();
}

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
  Clock::time_point last_cycle{}, last_all{};
  Clock::duration last_cost{};
  int64_t seen_points = -1;
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
      seen_points = -1;  // re-examine everything under the new rules
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
          std::lock_guard lock(engine_mu_);
          engine_ = std::move(next->engine);
          tracker_ = std::move(*t);
          log::Info("diagnosis: " + std::to_string(engine_->rules().size()) + " rules loaded");
        } else {
          log::Error("diagnosis disabled: " + t.status().message());
        }
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    if (!engine_) continue;
    const auto now = Clock::now();
    const int64_t points = points_();
    // While data keeps arriving (a backfill), cycles are at least 5x their own cost apart, so
    // diagnosis takes a bounded share of the machine however large the runs are.
    const auto gap = std::max<Clock::duration>(std::chrono::milliseconds(config_.rules_interval_ms),
                                               5 * last_cost);
    const bool data = points != seen_points && now - last_cycle >= gap;
    const bool all = now - last_all >= std::chrono::milliseconds(config_.rules_all_interval_ms);
    if (!data && !all) continue;
    seen_points = points;
    last_cycle = now;
    if (all) last_all = now;
    Cycle(all);
    last_cost = Clock::now() - now;
  }
}

void DiagnoseWorker::Cycle(bool scope_all) {
  Result<std::vector<int64_t>> changed = engine_->ChangedRuns();
  if (!changed.ok()) {
    log::Warning("diagnosis: " + changed.status().message());
    return;
  }
  if (changed->empty() && !scope_all) return;
  Result<diagnose::Evaluation> ev = engine_->Evaluate(&*changed, UnixNow(), scope_all);
  if (!ev.ok()) {
    if (!stop_) log::Warning("diagnosis: " + ev.status().message());
    return;
  }
  // Once per rule and problem, not once per cycle: a rule that loops goes over its limit in
  // every cycle that runs it.
  for (const auto& e : ev->errors)
    if (reported_.insert(e.rule + "\n" + e.limit).second)
      log::Warning((e.limit.empty() ? "diagnosis rule failed: " : "diagnosis rule skipped: ") + e.message +
                   "; said once until the rules are reloaded, tried again each cycle");
  queued_ = 0;
  Result<std::vector<diagnose::Transition>> tr = tracker_->Apply(*ev, UnixNow());
  if (!tr.ok()) {
    log::Warning("diagnosis: cannot store findings: " + tr.status().message());
    return;
  }
  if (queued_ > 0 && on_queued_) on_queued_();
  cycles_++;
  // A cycle over many runs (the first one, a backfill) leaves its high-water mark in this
  // thread's malloc arena; give it back so RSS does not keep it.
  if (ev->examined.size() > 64) ::malloc_trim(0);
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
}

}  // namespace tw::app
