// The diagnosis thread: owns the diagnosis engine (a read-only connection) and the finding
// tracker (a read-write connection that writes only the findings tables). It wakes a few times
// a second, and runs a cycle when the writer has committed new points (at most every
// `rules_interval_ms`) and the scope-all rules (stale runs) every `rules_all_interval_ms`. A
// cycle re-examines only runs whose files changed, so quiet runs cost nothing. Transitions are
// logged, and their notifications queued in the outbox in the same transaction.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>

#include "app/config.h"
#include "diagnose/engine.h"
#include "diagnose/findings.h"

namespace tw::app {

class DiagnoseWorker {
 public:
  // `points` reads the writer's running count of committed points (thread-safe).
  DiagnoseWorker(std::string db_path, std::function<int64_t()> points);
  ~DiagnoseWorker();

  // Loads the rules; a config error in [rules] is returned (the daemon refuses to start),
  // a broken rule file is logged and skipped. Before Start() or from the owner on reload.
  Status Configure(const Config& config);
  // Called on the diagnosis thread after a cycle queued notifications (to wake the delivery
  // thread). Before Start().
  void SetOnQueued(std::function<void()> f) { on_queued_ = std::move(f); }
  void Start();
  void Stop();  // joins the thread

  // Thread-safe: cycles run so far, for tests and status.
  int64_t cycles() const { return cycles_.load(); }

 private:
  void Loop();
  void LowerPriority();  // this thread's CPU priority, below ingest's
  void Cycle(bool scope_all);

  std::string db_path_;
  std::function<int64_t()> points_;
  std::function<void()> on_queued_;
  int queued_ = 0;  // messages queued by the current cycle (diagnosis thread)
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::atomic<int64_t> cycles_{0};

  // A configuration accepted by Configure() with the engine it validated the rules with (none
  // when rules are off), handed to the diagnosis thread. Guarded by mu_.
  struct Pending {
    Config config;
    std::unique_ptr<diagnose::Engine> engine;
  };
  std::mutex mu_;
  std::optional<Pending> pending_;

  // Owned by the diagnosis thread once started; engine_ is also read (to Cancel it) by Stop(),
  // under engine_mu_, which the diagnosis thread holds while it replaces the engine.
  Config config_;
  std::mutex engine_mu_;
  std::unique_ptr<diagnose::Engine> engine_;
  std::unique_ptr<diagnose::FindingTracker> tracker_;
  std::set<std::string> reported_;  // rule problems logged since the rules loaded: "ID\nLIMIT"
};

}  // namespace tw::app
