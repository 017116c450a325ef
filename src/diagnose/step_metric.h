// Findings in the trainer's own steps. A W&B series is stored at W&B's `_step` (its row
// counter), which users do not recognise; where `define_metric` gave the series another x axis
// (series.step_metric, e.g. the HF Trainer's train/global_step) and that metric is a series of
// the same run, a finding also says the metric's value at its onset, first and last steps.
// Onset/first/last stay in `_step`: the store's step is the contract's unit.
#pragma once

#include "base/status.h"
#include "diagnose/engine.h"
#include "store/db.h"

namespace tw::diagnose {

class StepMetrics {
 public:
  // Prepares its statements once on the engine's connection. A store from before version 8
  // has no series.step_metric: the lookup then finds nothing.
  static Result<StepMetrics> Prepare(store::Db& db);

  // When o's series has a step metric with values, adds to its evidence "step_metric" (the
  // name) and "step_metric_onset" / "_first" / "_last" (the metric's value at the last point
  // at or before each step), and to its message " (NAME VALUE at the onset)".
  Status Annotate(Observation* o);

 private:
  store::Stmt metric_, value_, patch_;  // empty: a store without step metrics
};

}  // namespace tw::diagnose
