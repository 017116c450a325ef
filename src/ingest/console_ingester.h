// Console logs into the store: each line's metrics as points, read by the profiles
// (decode/console_profiles.h). A console log is a run of its own (named by its path without
// the extension); a metric is named by its key as the log writes it.
//
// The step of a line's metrics: the step the line gives (nanoGPT's iter, Megatron's
// iteration, ...); else, in a log with a training progress bar (HF Trainer's tqdm with stderr
// sent along), the bar's count where it is next drawn: tqdm draws the bar again right after
// each line written above it, with the count the line was written at, while the bar drawn
// before the line shows an older count (such a line waits for that bar: it is stored one line
// late); else the last step read before it (a Keras "Epoch 3/10"); else the line's place
// among the log's metric lines (0, 1, ...).
// That state is committed with the offset (SourceRow::resume_state), so a read resumed after a
// restart means what one read of the whole file would. A value a progress bar's postfix still
// shows as before (profile `redisplay`) is no new point. A step that goes back re-logs the
// metric from there (a training restarted into the same log): its later points are superseded.
//
// The writer thread only.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "decode/console_profiles.h"
#include "ingest/point_sink.h"

namespace tw::ingest {

class ConsoleIngester {
 public:
  explicit ConsoleIngester(std::shared_ptr<const decode::ProfileSet> profiles)
      : profiles_(std::move(profiles)) {}

  // Takes up the state committed with the offset reading resumes from (none: the start).
  void Resume(const std::optional<std::string>& state);
  std::string State() const;
  // One line (without its newline) at `offset`; `wall` stands for when it was written.
  Status Line(PointSink& sink, std::string_view line, int64_t offset, double wall);
  // The log is whole (`diagnose --log`): lines still waiting for a bar take its last count.
  Status Finish(PointSink& sink, double wall);

 private:
  using Metrics = std::vector<std::pair<std::string, double>>;
  struct Pending {
    int64_t offset;
    Metrics metrics;
  };
  Status Store(PointSink& sink, int64_t step, const Metrics& metrics, int64_t offset, double wall);

  std::shared_ptr<const decode::ProfileSet> profiles_;
  int64_t lines_ = 0;                 // metric lines read so far
  std::optional<int64_t> step_;       // the last step read
  int64_t bar_total_ = 0;             // the largest progress-bar total seen
  std::vector<Pending> pending_;      // metric lines waiting for the bar's next count
  std::map<std::string, double, std::less<>> shown_;  // what a redisplaying bar last showed
  decode::ConsoleValues values_;      // reused
  std::vector<std::string> rewound_;  // reused
};

}  // namespace tw::ingest
