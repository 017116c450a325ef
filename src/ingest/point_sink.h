// What a format's ingester writes into: the open transaction of one file of one run. A format
// decodes its records and hands over points, run values and problems; the sink keeps the
// series, the highest step of each and the counts, so every format stores alike. Internal to
// src/ingest; the writer thread only (it holds the store's transaction).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "ingest/batch.h"
#include "ingest/file_ingester.h"

namespace tw::ingest {

class PointSink {
 public:
  PointSink(FileIngester& ingester, RunState& run, FileIngester::Batch& b)
      : in_(ingester), run_(run), b_(b) {}

  // One scalar of metric `name` at `step`, logged at `wall`, from the record at `offset`
  // (`vidx`: its place among the record's values).
  Status Scalar(std::string_view name, int64_t step, double wall, double value, int64_t offset,
                int vidx);
  // One histogram, likewise.
  Status Histogram(std::string_view name, int64_t step, double wall, const decode::Histogram& h,
                   int64_t offset, int vidx);
  // Whether the run has a series of `name` of that kind yet.
  bool HasSeries(std::string_view name, decode::Kind kind) const;
  // The metric's highest live step, if it has points.
  std::optional<int64_t> MaxStep(std::string_view name) const;
  // The names of the run's metrics so far.
  std::vector<std::string> Metrics() const;
  // The x axis of every series of `name` is the metric `step_metric` (W&B's define_metric).
  Status StepMetric(std::string_view name, std::string_view step_metric);
  // The file re-logs `names` from `step` on (a training restarted into the same log): their
  // later points are superseded, and a restart event says why.
  Status Rewind(const std::vector<std::string>& names, int64_t step, double wall, int64_t offset,
                std::string detail);
  // Those of `names` whose highest step is above `step` and was logged before `wall` are
  // re-logged from `step` (a run resumed from a checkpoint): their later points are
  // superseded, and a restart event names the first such one ("tag 'x' went back from step
  // 9 to 5: " and `why`; `noun` and `step_word` name them as the format does).
  Status RewindIfBack(const std::vector<std::string_view>& names, int64_t step, double wall,
                      int64_t offset, std::string_view noun, std::string_view step_word,
                      std::string_view why);
  // The whole run re-opens at `step` (a SessionLog START): every point logged before it at
  // that step or later is superseded, and a restart event says why when anything was, or
  // `always`.
  Status RestartRun(int64_t step, double wall, int64_t offset, std::string detail, bool always);
  // Counts a start of the run's writer; returns how many there were.
  int64_t NoteStart();
  // The run's hyperparameters, replaced whole (tfevents' hparams session start), counted.
  Status ReplaceHParams(const std::vector<model::HParam>& ps);
  // Something the run did or said (its start, exit, an alert), at `step` if it has one.
  Status Event(std::string_view kind, std::optional<int64_t> step, double wall, int64_t offset,
               const std::string& detail);
  // Links the run to the one it continues (same external id), if any: that run's id.
  Result<std::optional<int64_t>> LinkContinuedRun();
  // One text, likewise.
  Status Text(std::string_view name, int64_t step, double wall, std::string_view text,
              int64_t offset, int vidx);
  // What a tag holds, as its first summary metadata declared it (tfevents); null: not known.
  const decode::TagPlugin* Plugin(std::string_view name);
  void SetPlugin(std::string_view name, decode::TagPlugin plugin);
  // Media and other values counted, not charted.
  enum class Blob { kImage, kAudio, kGraph, kRunMetadata, kOther };
  void CountBlob(Blob kind);
  // Damage or a record that does not decode: recorded with the file and offset, and counted.
  Status Problem(int64_t offset, int64_t length, std::string_view kind, std::string detail);
  Status Info(const store::RunInfo& info);
  // One key of the run's summary (store::RunValues::kSummary), as JSON.
  Status RunValue(std::string_view key, std::string_view json);
  // A summary written after every row (W&B's): only each key's last value of a batch is
  // written, at its commit. nullopt: the key is removed.
  void LatestRunValue(std::string_view key, std::optional<std::string> json);
  // One key of the run's config (store::RunValues::kConfig), as JSON.
  Status ConfigValue(std::string_view key, std::string_view json);
  // A key removed from the config, and from the hyperparameters.
  Status RemoveConfigValue(std::string_view key);
  Status HParam(const model::HParam& p);
  // Hyperparameters, counted.
  Status HParams(const std::vector<model::HParam>& ps);
  // Damage in a file beside the source (a run's side file), reported under that file's path.
  Status SideFileProblem(const std::string& path, std::string_view kind, std::string detail);
  // The number of the file's last record, where its format numbers them (0: none yet).
  int64_t& last_record_num() { return b_.source.last_record_num; }
  // The run's W&B history position (the W&B ingester's alone).
  WandbCursor& wandb() { return run_.wandb(); }
  // The format's own state beside the offset, committed with it.
  std::optional<std::string>& resume_state() { return b_.source.resume_state; }
  const std::string& path() const { return b_.source.path; }

 private:
  // The run's tag of `name` (null: none yet), and the same, made when new. The last one found
  // is kept: a value's plugin, series and step are looked up once, not three times.
  RunState::Tag* FindTag(std::string_view name);
  RunState::Tag& TagOf(std::string_view name);
  template <typename Insert>
  Status Point(std::string_view name, decode::Kind kind, int64_t step, double wall, Insert insert);
  // A restart reloads the run's tags (RunState::Load): nothing found before is valid after.
  void ForgetTags() { last_tag_ = nullptr; }

  FileIngester& in_;
  RunState& run_;
  FileIngester::Batch& b_;
  std::string_view last_name_;  // the key of last_tag_ in the run's map
  RunState::Tag* last_tag_ = nullptr;
};

}  // namespace tw::ingest
