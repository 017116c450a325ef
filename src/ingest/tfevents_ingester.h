// TensorBoard event files into the store. An Event's summary values become points of their
// tag (scalars, histograms, texts, by the tag's plugin as first declared); hparams' session
// start replaces the run's hyperparameters; images, audio, graphs and run metadata are counted.
// Restarts supersede what a resumed writer re-logs:
//   - a SessionLog START re-opens the whole run at its step (the first one of a fresh run
//     supersedes nothing and is no restart);
//   - a tag logged at a step below its highest live step, after that step was logged, loses
//     its later points (only the tags the event re-logs, as TensorBoard's purge does).
// The writer thread only.
#pragma once

#include <string_view>
#include <vector>

#include "base/status.h"
#include "decode/classify.h"
#include "decode/event.h"
#include "ingest/point_sink.h"

namespace tw::ingest {

class TfEventsIngester {
 public:
  // One TFRecord payload: a tensorflow.Event.
  Status Record(PointSink& sink, std::string_view record, int64_t offset);

 private:
  Status Value(PointSink& sink, const decode::SummaryValue& v, int vidx, int64_t offset);

  decode::Event event_;            // reused across records
  decode::Classified classified_;  // reused across values
  std::vector<std::string_view> tags_;  // an event's tags
};

}  // namespace tw::ingest
