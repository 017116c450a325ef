#include "ingest/point_sink.h"

#include <limits>

namespace tw::ingest {

RunState::Tag* PointSink::FindTag(std::string_view name) {
  if (last_tag_ && last_name_ == name) return last_tag_;
  auto it = run_.tags_.find(name);
  if (it == run_.tags_.end()) return nullptr;
  last_name_ = it->first;
  last_tag_ = &it->second;
  return last_tag_;
}

RunState::Tag& PointSink::TagOf(std::string_view name) {
  if (RunState::Tag* tag = FindTag(name)) return *tag;
  auto it = run_.tags_.emplace(std::string(name), RunState::Tag{}).first;
  last_name_ = it->first;
  last_tag_ = &it->second;
  return *last_tag_;
}

// A point of `name`'s series of `kind`: `insert(series_id)` stores it; then its step is noted.
template <typename Insert>
Status PointSink::Point(std::string_view name, decode::Kind kind, int64_t step, double wall,
                        Insert insert) {
  RunState::Tag& tag = TagOf(name);
  Result<int64_t> series = in_.SeriesFor(run_, tag, name, kind);
  if (!series.ok()) return series.status();
  TW_RETURN_IF_ERROR(insert(*series));
  tag.NoteStep(step, wall);
  b_.points_since_commit++;
  return Status::Ok();
}

Status PointSink::Scalar(std::string_view name, int64_t step, double wall, double value,
                         int64_t offset, int vidx) {
  TW_RETURN_IF_ERROR(Point(name, decode::Kind::kScalar, step, wall, [&](int64_t series) {
    return in_.store_.InsertScalar(series, step, b_.source.source_id, offset, vidx, wall, value);
  }));
  b_.totals.CountScalar(value);
  return Status::Ok();
}

Status PointSink::Histogram(std::string_view name, int64_t step, double wall,
                            const decode::Histogram& h, int64_t offset, int vidx) {
  TW_RETURN_IF_ERROR(Point(name, decode::Kind::kHistogram, step, wall, [&](int64_t series) {
    return in_.store_.InsertHistogram(series, step, b_.source.source_id, offset, vidx, wall, h);
  }));
  b_.totals.histograms++;
  return Status::Ok();
}

Status PointSink::Text(std::string_view name, int64_t step, double wall, std::string_view text,
                       int64_t offset, int vidx) {
  TW_RETURN_IF_ERROR(Point(name, decode::Kind::kText, step, wall, [&](int64_t series) {
    return in_.store_.InsertText(series, step, b_.source.source_id, offset, vidx, wall, text);
  }));
  b_.totals.texts++;
  return Status::Ok();
}

bool PointSink::HasSeries(std::string_view name, decode::Kind kind) const {
  auto it = run_.tags_.find(name);
  return it != run_.tags_.end() && it->second.series[RunState::SeriesSlot(kind)] != 0;
}

std::vector<std::string> PointSink::Metrics() const {
  std::vector<std::string> names;
  names.reserve(run_.tags_.size());
  for (const auto& [name, tag] : run_.tags_) names.push_back(name);
  return names;
}

Status PointSink::StepMetric(std::string_view name, std::string_view step_metric) {
  auto it = run_.tags_.find(name);
  if (it == run_.tags_.end()) return Status::Ok();
  for (int64_t id : it->second.series)
    if (id) TW_RETURN_IF_ERROR(in_.store_.SetSeriesStepMetric(id, step_metric));
  return Status::Ok();
}

Status PointSink::RewindIfBack(const std::vector<std::string_view>& names, int64_t step,
                               double wall, int64_t offset, std::string_view noun,
                               std::string_view step_word, std::string_view why) {
  std::vector<int64_t> rewound;
  std::string detail;
  for (std::string_view name : names) {
    auto t = run_.tags_.find(name);
    if (t == run_.tags_.end() || !t->second.has_step || step >= t->second.max_step ||
        wall <= t->second.max_step_wall)
      continue;
    for (int64_t id : t->second.series)
      if (id) rewound.push_back(id);
    if (detail.empty())
      detail = std::string(noun) + " '" + std::string(name) + "' went back from " +
               std::string(step_word) + " " + std::to_string(t->second.max_step) + " to " +
               std::to_string(step);
  }
  if (rewound.empty()) return Status::Ok();
  ForgetTags();
  return in_.Restart(run_, b_, step, wall, offset, detail + ": " + std::string(why), &rewound,
                     true);
}

Status PointSink::RestartRun(int64_t step, double wall, int64_t offset, std::string detail,
                             bool always) {
  ForgetTags();
  return in_.Restart(run_, b_, step, wall, offset, std::move(detail), nullptr, always);
}

int64_t PointSink::NoteStart() { return ++run_.starts_; }

Status PointSink::ReplaceHParams(const std::vector<model::HParam>& ps) {
  b_.totals.hparams += static_cast<int64_t>(ps.size());
  return in_.store_.ReplaceHParams(run_.run_id(), ps);
}

Status PointSink::Event(std::string_view kind, std::optional<int64_t> step, double wall,
                        int64_t offset, const std::string& detail) {
  b_.totals.run_events++;
  return in_.store_.InsertRunEvent(run_.run_id(), b_.source.source_id, offset, kind, step, wall,
                                   detail);
}

Result<std::optional<int64_t>> PointSink::LinkContinuedRun() {
  return in_.store_.LinkContinuedRun(run_.run_id());
}

void PointSink::CountBlob(Blob kind) {
  store::RunCounters& c = b_.counters;
  switch (kind) {
    case Blob::kImage: c.images++; break;
    case Blob::kAudio: c.audio++; break;
    case Blob::kGraph: c.graphs++; break;
    case Blob::kRunMetadata: c.run_metadata++; break;
    case Blob::kOther: c.other_tensors++; break;
  }
  b_.totals.blobs++;
}

const decode::TagPlugin* PointSink::Plugin(std::string_view name) {
  const RunState::Tag* tag = FindTag(name);
  return tag && tag->plugin_known ? &tag->plugin : nullptr;
}

void PointSink::SetPlugin(std::string_view name, decode::TagPlugin plugin) {
  RunState::Tag& tag = TagOf(name);
  tag.plugin = std::move(plugin);
  tag.plugin_known = true;
}

std::optional<int64_t> PointSink::MaxStep(std::string_view name) const {
  auto it = run_.tags_.find(name);
  if (it == run_.tags_.end() || !it->second.has_step) return std::nullopt;
  return it->second.max_step;
}

Status PointSink::Rewind(const std::vector<std::string>& names, int64_t step, double wall,
                         int64_t offset, std::string detail) {
  std::vector<int64_t> series;
  for (const auto& name : names) {
    auto it = run_.tags_.find(name);
    if (it == run_.tags_.end()) continue;
    for (int64_t id : it->second.series)
      if (id) series.push_back(id);
  }
  if (series.empty()) return Status::Ok();
  // Every point of these series so far was logged before this line: supersede by step alone.
  ForgetTags();
  return in_.Restart(run_, b_, step, wall, offset, std::move(detail), &series, true,
                     std::numeric_limits<double>::infinity());
}

Status PointSink::Problem(int64_t offset, int64_t length, std::string_view kind,
                          std::string detail) {
  b_.totals.errors++;
  b_.source.error_count++;
  return in_.store_.InsertError(b_.source.source_id, b_.source.path, offset, length, kind, detail);
}

Status PointSink::Info(const store::RunInfo& info) {
  return in_.store_.UpdateRunInfo(run_.run_id(), info);
}

Status PointSink::RunValue(std::string_view key, std::string_view json) {
  return in_.store_.SetRunValue(store::RunValues::kSummary, run_.run_id(), key, json);
}

void PointSink::LatestRunValue(std::string_view key, std::optional<std::string> json) {
  b_.summary[std::string(key)] = std::move(json);
}

Status PointSink::RemoveConfigValue(std::string_view key) {
  TW_RETURN_IF_ERROR(in_.store_.SetRunValue(store::RunValues::kConfig, run_.run_id(), key, std::nullopt));
  return in_.store_.RemoveHParam(run_.run_id(), key);
}

Status PointSink::SideFileProblem(const std::string& path, std::string_view kind,
                                  std::string detail) {
  return in_.store_.InsertError(std::nullopt, path, 0, 0, kind, detail);
}

Status PointSink::ConfigValue(std::string_view key, std::string_view json) {
  return in_.store_.SetRunValue(store::RunValues::kConfig, run_.run_id(), key, json);
}

Status PointSink::HParam(const model::HParam& p) { return in_.store_.UpsertHParam(run_.run_id(), p); }

Status PointSink::HParams(const std::vector<model::HParam>& ps) {
  for (const auto& p : ps) TW_RETURN_IF_ERROR(HParam(p));
  b_.totals.hparams += static_cast<int64_t>(ps.size());
  return Status::Ok();
}

}  // namespace tw::ingest
