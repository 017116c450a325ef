// The diagnosis thread: owns the diagnosis engine (a read-only connection) and the finding
// tracker (a read-write connection that writes only the findings tables). The writer hands it
// the ids of the runs it committed (RunsCommitted), which wakes it; it also wakes a few times a
// second for its timers. It examines the runs handed to it (every run with data, after a start
// or a reload of the rules) in slices of about half a second each, whose findings are stored (and their
// notifications queued) before the next slice starts. Live runs (a file read from the writer's
// live lane) go first, at most every `rules_interval_ms`; the history (a backfill of old runs)
// goes newest first, its slices at least 5x their own cost apart while the writer is still
// reading, so it takes a bounded share of the machine, and back to back once the writer is idle.
// So a NaN in a live run is not held back by the diagnosis of a thousand old runs.
// The scope-all rules (stale runs) run every `rules_all_interval_ms`. Quiet runs cost nothing.
// Transitions are logged, and their notifications queued in the outbox in the same transaction.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "app/config.h"
#include "diagnose/engine.h"
#include "diagnose/findings.h"
#include "diagnose/lifecycle.h"

namespace tw::app {

class DiagnoseWorker {
 public:
  explicit DiagnoseWorker(std::string db_path);
  ~DiagnoseWorker();

  // Loads the rules; a config error in [rules] is returned (the daemon refuses to start),
  // a broken rule file is logged and skipped. Before Start() or from the owner on reload.
  Status Configure(const Config& config);
  // Called on the diagnosis thread after a cycle queued notifications (to wake the delivery
  // thread). Before Start().
  void SetOnQueued(std::function<void()> f) { on_queued_ = std::move(f); }
  // Thread-safe (the writer calls it after each commit): run `run` changed, from a file of the
  // live lane when `live`; it is examined at the next turn, before the history when live.
  void RunsCommitted(int64_t run, bool live);
  // Called on the diagnosis thread: whether the writer has nothing queued (thread-safe on its
  // side), so "caught up" is said when the history is both read and examined. Before Start().
  void SetIngestIdle(std::function<bool()> f) { ingest_idle_ = std::move(f); }
  // Called on the diagnosis thread with the [[alert]]s that have watched no series for
  // `alert_unmatched_seconds` (one line each, "" when none), whenever that list changes; the
  // daemon keeps it for `trainwatch status`. Before Start().
  void SetOnAlertsUnmatched(std::function<void(const std::string&)> f) { on_unmatched_ = std::move(f); }
  // Thread-safe (the writer calls it): live run `run` committed a non-finite value. The first
  // time for a run, a history slice being examined is interrupted (its runs stay to be
  // examined) and the next one waits, so the live run's critical pass comes first: one large
  // old run's evaluation can take seconds. Only the first time: a run that goes on logging NaN
  // would otherwise starve the history.
  void PreemptHistory(int64_t run);
  void Start();
  void Stop();  // joins the thread

 private:
  void Loop();
  void LowerPriority();  // this thread's CPU priority, below ingest's
  void Trouble(const std::string& what);  // a slice failed: log once per condition, back off
  // Counts the series each [[alert]] watches; logs and reports (SetOnAlertsUnmatched) those
  // that have watched none for config_.alert_unmatched_seconds, and those that watch some again.
  void CheckAlertsWatch();
  // The next runs to examine: live ones first when their turn is due (`live_due`), else the
  // newest of the history; at most `slice_runs_`.
  std::vector<int64_t> NextSlice(bool live_due) const;
  // Examines `runs` (and the scope-all rules when `scope_all`; only the critical rules when
  // `critical_only`); stores the findings; false if the engine failed.
  bool Examine(const std::vector<int64_t>& runs, bool scope_all, bool critical_only = false);
  // The run events of `runs` (after their examination), or of every run that may still end
  // (`open_runs`, every [lifecycle] check_seconds), judged, stored and queued; false (trouble
  // said) if that failed.
  bool RunEvents(const std::vector<int64_t>& runs, bool open_runs);
  // PreemptHistory's alarm (under engine_mu_): raised by the writer, answered by a live slice.
  bool LiveAlarm();
  void SetLiveAlarm(bool on);
  // Around a history slice: false (and nothing begun) when a live run's alarm is waiting.
  bool BeginHistorySlice();
  void EndHistorySlice();

  // Waits up to the thread's tick for RunsCommitted() or Stop(), then moves what the writer
  // handed over into todo_ and live_.
  void TakeCommitted();
  bool InboxEmpty();  // nothing handed over since TakeCommitted()

  std::string db_path_;
  std::function<void()> on_queued_;
  std::function<bool()> ingest_idle_;
  // The writer's hand-over, guarded by inbox_mu_: runs committed since the diagnosis thread
  // last took them, and those among them read from the live lane; inbox_cv_ wakes that thread.
  std::mutex inbox_mu_;
  std::condition_variable inbox_cv_;
  std::set<int64_t> committed_, committed_live_;
  // Diagnosis thread only: runs changed and not examined since, the runs ever read live, and
  // how many runs a slice takes (adapted so a slice costs about kSliceSeconds).
  std::set<int64_t> todo_, live_;
  bool examine_all_ = false;  // new rules: every run with data is to be examined
  size_t slice_runs_ = 8;
  int64_t history_examined_ = 0;
  // Why the last slice failed (the engine, or storing its findings), while that lasts, and when
  // to try again.
  std::string trouble_;
  double retry_seconds_ = 0;
  std::chrono::steady_clock::time_point retry_at_{};  // history runs examined since the last "caught up"
  int queued_ = 0;  // messages queued by the current cycle (diagnosis thread)
  std::thread thread_;
  std::atomic<bool> stop_{false};

  // A configuration accepted by Configure() with the engine it validated the rules with (none
  // when rules are off), handed to the diagnosis thread. Guarded by mu_.
  struct Pending {
    Config config;
    std::unique_ptr<diagnose::Engine> engine;
  };
  std::mutex mu_;
  std::optional<Pending> pending_;

  // Owned by the diagnosis thread once started; engine_ is also read (to Cancel or Interrupt
  // it) by Stop() and PreemptHistory(), under engine_mu_, which the diagnosis thread holds while
  // it replaces the engine and while it begins or ends a history slice.
  Config config_;
  std::mutex engine_mu_;
  std::unique_ptr<diagnose::Engine> engine_;
  bool history_running_ = false;  // under engine_mu_: a history slice is being examined
  bool live_alarm_ = false;       // under engine_mu_: PreemptHistory() was called since
  std::set<int64_t> preempted_for_;  // under engine_mu_: the runs that have pre-empted once
  std::unique_ptr<diagnose::FindingTracker> tracker_;
  std::unique_ptr<diagnose::LifecycleTracker> lifecycle_;  // null: run events off
  std::set<std::string> reported_;  // rule problems logged since the rules loaded: "ID\nLIMIT"
  // Diagnosis thread only: per [[alert]] watching nothing, since when (unix seconds, from when
  // the rules loaded at the earliest); those reported; when the watch was last counted.
  std::function<void(const std::string&)> on_unmatched_;
  std::map<std::string, double> unmatched_since_;
  std::set<std::string> unmatched_reported_;
  std::chrono::steady_clock::time_point watch_checked_{};
};

}  // namespace tw::app
