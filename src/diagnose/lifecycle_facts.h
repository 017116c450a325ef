// What the store says about one training run's progress and end, for the lifecycle judgement
// (lifecycle.h) and its summary (run_summary.h). Internal to diagnose.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "base/writer_process.h"
#include "diagnose/lifecycle.h"
#include "store/db.h"

namespace tw::diagnose {

struct RunFacts {
  int64_t run_id = 0;
  std::string run;
  int64_t loss_series = 0;  // the train_loss role's series
  std::string loss_tag;
  std::optional<int64_t> exit_code;  // W&B's exit record
  bool continues = false;            // a W&B run resuming another
  // The run's scalar points: the first and the newest wall time, the last step, and the newest
  // point itself (the last thing written).
  double first_wall = 0, last_wall = 0;
  std::optional<int64_t> first_step, last_step;
  std::string last_tag;
  int64_t last_tag_step = 0;
  double last_value = 0;
  int last_class = 0;      // value_class of that point
  int loss_last_class = 0; // value_class of the training loss's last point
  double loss_last_value = 0;
  std::optional<double> stop_wall;     // the newest SessionLog STOP's wall time
  std::optional<double> runtime_wall;  // the HF end summary's (train_runtime) newest point
  std::optional<double> planned_steps, planned_epochs, last_epoch;
  std::optional<WriterId> writer;  // the newest event file's writer
  WriterState writer_state = WriterState::kUnknown;
  // What is recorded already: the causes (a start's is "start"), and the last end (its time and
  // last wall).
  std::vector<std::string> causes;
  int ends = 0;
  std::optional<double> end_time, end_wall;
  bool rearmed = false;  // written again after the last end, by a new writer or a restart
  struct Restart {
    int64_t source_id = 0, offset = 0, step = 0;
    double wall = 0;
    std::string detail;
  };
  std::vector<Restart> restarts;
};

// The facts of `run_id`, or nothing when it is no training run (no train_loss role, or no
// scalar points yet). Read on the engine's connection.
Result<std::optional<RunFacts>> ReadRunFacts(store::Db& db, int64_t run_id, const LifecycleOptions& options);

// The end the facts show, if any: kind (finished or crashed) and the evidence in words.
struct RunEnd {
  std::string kind, how;
};
std::optional<RunEnd> JudgeEnd(const RunFacts& f, double now, const LifecycleOptions& options);

// Fills the event's title, message, advice, summary JSON and sparkline: the ten-second summary.
Status Summarize(store::Db& db, const RunFacts& f, RunEvent* e, double now);

// "1 h 23 min", "45 s", "2 d 3 h".
std::string DurationWords(double seconds);
// A number with 4 significant digits ("0.2313", "1.2e+04"); NaN and infinities as such.
std::string Number(double v);

}  // namespace tw::diagnose
