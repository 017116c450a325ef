// Run lifecycle: whether a training run started, resumed, finished or crashed, judged from what
// its files say, and the summary a person reads in ten seconds when it ends.
//
//   finished: a W&B exit record with code 0; a TensorBoard SessionLog STOP; the HF Trainer's
//     end-of-training summary (a train_runtime series); its planned end (max_steps or
//     num_train_epochs in its hyperparameters or W&B config) reached and then quiet, or reached
//     and its writer gone; a writer gone with no plan to compare (PyTorch logs no end: an exit
//     is how most runs end; the message says there was no end marker).
//   crashed: a W&B exit code other than 0; its writer process gone (the pid in an event file's
//     name, on this host: base/writer_process.h) before its planned end; a last training-loss
//     value that is not finite, then quiet or the writer gone.
//   started: a training run seen for the first time; resumed: a restart found on ingest (steps
//     went back: run_events 'restart'), or a W&B run that continues another.
//
// Only training runs (a series with the train_loss role) have a lifecycle: a Keras validation
// sibling, an hparams child run or a metrics-only side run would otherwise announce itself.
// Detection reads the engine's connection (its role map and views); the host question (is the
// writer's pid alive?) comes in as a WriterProbe, so diagnosis never calls kill(2) itself and a
// test can be any host. The tracker stores each event once (run_lifecycle, UNIQUE by run and
// cause) on a read-write connection of its own, calling a hook in the same transaction (the
// daemon's queues the outbox messages), as FindingTracker does for findings.
// Both belong to the daemon's diagnosis thread.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "base/writer_process.h"
#include "store/db.h"

namespace tw::diagnose {

struct LifecycleOptions {
  bool enabled = true;
  // A run whose plan is reached (or whose last loss is not finite) has ended once it has
  // written nothing for this long.
  double quiet_seconds = 600;
  // The planned end is reached at this fraction of it (the last logged step of a run planned
  // for 1,000 steps, logged every 10, is 990); stale_run's planned_frac says the same.
  double planned_frac = 0.95;
  // Events whose moment (a run's first point, its restart, its last write) is older than this
  // are recorded, not announced: a first start over a logdir of old runs sends nothing about them.
  double announce_within_seconds = 24 * 3600;
  // Runs silent for longer are history: the periodic pass no longer looks at them.
  double horizon_seconds = 3 * 86400;
  // How often the daemon looks at the runs that may still end (a killed run writes nothing
  // that would bring it to the diagnosis thread); the runs it reads are looked at as they come.
  double check_seconds = 30;
  // Judge writers by the pid in their file names (off where runs write from containers that
  // share this host's name but not its process ids).
  bool writer_pids = true;
  WriterProbe probe;  // null: every writer unknown
  bool operator==(const LifecycleOptions& o) const {
    return enabled == o.enabled && quiet_seconds == o.quiet_seconds && planned_frac == o.planned_frac &&
           announce_within_seconds == o.announce_within_seconds && horizon_seconds == o.horizon_seconds &&
           check_seconds == o.check_seconds && writer_pids == o.writer_pids;
  }
};

struct RunEvent {
  int64_t event_id = 0;  // its run_lifecycle row, once recorded
  int64_t run_id = 0;
  std::string run;
  std::string kind;       // started, resumed, finished, crashed
  std::string cause_key;  // see sql/015_run_lifecycle.sql
  double last_wall = 0;
  std::optional<int64_t> last_step;
  std::string how;        // the evidence, in words
  bool announce = false;  // recent enough to queue messages for
  std::string title, message, advice;
  std::string summary = "{}";  // JSON: the numbers (the webhook payload's run.summary)
  std::string fields = "{}";   // JSON object: label -> text, in reading order (chat fields)
  std::string sparkline;       // the training loss, recent
};

// The events `runs` show now that are not recorded yet, read on `db` (the engine's connection,
// after an evaluation mapped the runs' roles). Runs without a train_loss role are skipped.
Result<std::vector<RunEvent>> DetectRunEvents(store::Db& db, const std::vector<int64_t>& runs, double now,
                                              const LifecycleOptions& options);

// The training runs that may still end: written within the horizon, with no end recorded since
// their last resumption. The periodic pass looks at these (a killed run writes nothing that
// would bring it to the diagnosis thread).
Result<std::vector<int64_t>> OpenRuns(store::Db& db, double now, const LifecycleOptions& options);

class LifecycleTracker {
 public:
  // Its own read-write connection to an existing, migrated store.
  static Result<std::unique_ptr<LifecycleTracker>> Open(const std::string& db_path);

  // Called for each newly recorded event inside Record's transaction, on the tracker's
  // connection: what it writes commits with the event or not at all. An error rolls back.
  using Hook = std::function<Status(store::Db& db, const RunEvent& e, double now)>;
  void SetHook(Hook hook) { hook_ = std::move(hook); }

  // Records the events not recorded yet (a cause already there is skipped), one transaction;
  // returns those recorded, with their event_id.
  Result<std::vector<RunEvent>> Record(const std::vector<RunEvent>& events, double now);

 private:
  explicit LifecycleTracker(std::unique_ptr<store::Db> db) : db_(std::move(db)) {}
  std::unique_ptr<store::Db> db_;
  Hook hook_;
};

}  // namespace tw::diagnose
