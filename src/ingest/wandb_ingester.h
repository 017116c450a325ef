// W&B runs into the store: the records of a `.wandb` transaction log and the lines of the
// JSON-lines files SDKs before 0.10 wrote, as the same series, points, restarts and run events
// as tfevents, so every rule reads both.
//   - A history row's items become points at the row's _step (its _step item, else the
//     record's step, else one past the last row); nested dicts are series named by their
//     dotted path; histograms are histograms; media, tables and strings are counted only.
//   - System metrics (stats records, wandb-events.jsonl) become "system/<key>" at the latest
//     history step.
//   - A key logged again at a lower step, later, re-logs it from there (a resumed run): its
//     later points are superseded and a restart event says so.
//   - Config goes to run_config and its scalars to hparams; summary to run_summary_values
//     (each key's last value of a batch); define_metric sets series' step metrics.
//   - The run record, exit, preemption, alerts and TensorBoard sync are run events; a gap in
//     the records' numbers is reported with the range lost.
// The history's position is per run (RunState::wandb(): a run's files share it) and is
// committed with each file's offset. The writer thread only.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "ingest/point_sink.h"
#include "wandb/record.h"

namespace tw::ingest {

class WandbIngester {
 public:
  // One record of a `.wandb` log.
  Status Record(PointSink& sink, std::string_view record, int64_t offset);
  // One line of wandb-history.jsonl or wandb-events.jsonl.
  Status Line(PointSink& sink, std::string_view line, int64_t offset);
  // A legacy run's config.yaml and wandb-summary.json, which are rewritten whole: read at the
  // end of each read of its history, in that read's transaction.
  Status LegacySideFiles(PointSink& sink);

 private:
  Status History(PointSink& sink, int64_t offset);
  Status Stats(PointSink& sink, int64_t offset);
  Status RunValues(PointSink& sink, store::RunValues table);
  Status DefineMetric(PointSink& sink, int64_t offset);
  Status RunRecord(PointSink& sink, int64_t offset);
  // One logged value (a number, a histogram, media counted, a nested dict flattened into
  // dotted names) of series `name`: parsed from `json` unless `node` is given.
  Status Value(PointSink& sink, const std::string& name, const decode::JsonNode* node,
               std::string_view json, int64_t step, double wall, int vidx, int64_t offset);
  Status Point(PointSink& sink, const std::string& name, decode::Kind kind, double value,
               const decode::Histogram* h, int64_t step, double wall, int vidx, int64_t offset);

  wandb::Record record_;            // reused across records
  std::string name_;                // scratch for item names
  std::vector<std::string> names_;  // a history row's item names
  std::vector<std::string_view> views_;  // and views of them
};

}  // namespace tw::ingest
