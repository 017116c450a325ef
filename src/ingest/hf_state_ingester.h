// An HF Trainer's trainer_state.json into the store: each log_history entry's numbers as points
// at its "step" (train: loss, grad_norm, learning_rate, epoch; evaluation: eval_*; the summary
// at the end: train_runtime, train_loss, ...), best_metric and best_model_checkpoint as the
// run's summary values. The Trainer writes the file whole at each save, into each
// checkpoint-N/ (and the output directory at the end), each holding the history so far: the
// checkpoints of one run are one run, and a point at or below a metric's highest stored step is
// taken as stored already, so no point is stored twice whichever file is read first.
// The writer thread only.
#pragma once

#include <string_view>

#include "base/status.h"
#include "decode/json_value.h"
#include "ingest/point_sink.h"

namespace tw::ingest {

class HfStateIngester {
 public:
  // `state`: the parsed document; `wall`: when it was written (the file's mtime).
  Status Document(PointSink& sink, const decode::JsonNode& state, double wall);
};

}  // namespace tw::ingest
