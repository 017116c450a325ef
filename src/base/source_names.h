// Which files are sources, by their paths alone: the one place that says it, below every stage
// that asks (watch/ decides what to hand on, ingest/ how to read it).
#pragma once

#include <string>
#include <string_view>

namespace tw::sources {

// How a file is read.
enum class SourceKind {
  kNone,        // not a source
  kTfEvents,    // a TensorBoard event file (basename contains "tfevents"; "*.profile-empty"
                // markers are not)
  kWandbLog,    // a W&B transaction log (*.wandb)
  kWandbJsonl,  // the JSON lines of a W&B run from before SDK 0.10 (wandb-history.jsonl,
                // wandb-events.jsonl)
  kConsole,     // a console log: W&B's files/output.log (other console logs are sources
                // because the config or the command line names them, not by their names)
  kHfState,     // an HF Trainer's trainer_state.json (in each checkpoint-N/, and the output
                // directory's own at the end)
  kCsv,         // a metrics table: Lightning's metrics.csv, Ultralytics YOLO's results.csv
  kMlflowMetric,  // one metric of a run in MLflow's file store:
                  // <experiment id>/<32-hex run id>/metrics/<key, '/' as folders>
  kMlflowDb,      // MLflow's SQLite tracking store, mlflow.db: many runs in one file
};
// The run directory (<experiment id>/<run id>) of an MLflow file-store metric, and the metric's
// key ("val/loss"); empty when `path` is none.
std::string_view MlflowRunDir(std::string_view path);
std::string_view MlflowMetricKey(std::string_view path);
SourceKind KindOfPath(std::string_view path);
// Whether `path` is a source by its path alone.
inline bool IsSourcePath(std::string_view path) { return KindOfPath(path) != SourceKind::kNone; }
inline bool IsWandbLog(std::string_view path) { return KindOfPath(path) == SourceKind::kWandbLog; }
inline bool IsWandbJsonl(std::string_view path) {
  return KindOfPath(path) == SourceKind::kWandbJsonl;
}

// The run directory of a source file: its directory, except for the JSON lines that some old
// SDKs wrote into the run's files/ folder, and for console logs, each of which is a run of its
// own named by its path without the extension, mlflow.db, whose runs are named below its own
// path (the path itself here), and for an HF Trainer's checkpoint-N/
// directories, which are one run: the output directory holding them (see docs/sources.md).
std::string RunDirOf(const std::string& path, SourceKind kind);
inline std::string RunDirOf(const std::string& path) { return RunDirOf(path, KindOfPath(path)); }

}  // namespace tw::sources
