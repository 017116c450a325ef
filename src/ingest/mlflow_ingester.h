// MLflow's file store into the store (mlruns/<experiment id>/<run id>/, as MLflow's FileStore
// writes it): one run per run directory. Each metric is a file of its own under metrics/ (a
// key's '/' as folders), appended one line per logged value: "<timestamp ms> <value> <step>"
// (two fields, step 0, from MLflow before 1.0). Its points take the key as the metric, the
// line's step, and the line's time as their wall time. The run's side files are read with each
// metric file, in its transaction: meta.yaml (run name, status, start and end time), params/
// (the hyperparameters), tags/ (the run's config values; mlflow.runName names the run), and
// the experiment's meta.yaml (its name).
// The writer thread only.
#pragma once

#include <string>
#include <string_view>

#include "base/status.h"
#include "ingest/point_sink.h"

namespace tw::ingest {

// An MLflow param (text, as MLflow keeps every param) as a hyperparameter: a number where it
// reads as one, else text.
model::HParam MlflowParam(const std::string& key, const std::string& text);

class MlflowIngester {
 public:
  // One line of the metric file `key`.
  Status Line(PointSink& sink, std::string_view key, std::string_view line, int64_t offset);
  // The side files of the run in `run_dir` (absolute), into the run's facts.
  Status RunFiles(PointSink& sink, const std::string& run_dir);
};

}  // namespace tw::ingest
