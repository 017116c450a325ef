#include "ingest/point_sink.h"

#include <limits>

namespace tw::ingest {

Status PointSink::Scalar(std::string_view name, int64_t step, double wall, double value,
                         int64_t offset, int vidx) {
  auto it = run_.tags_.find(name);
  if (it == run_.tags_.end()) it = run_.tags_.emplace(std::string(name), RunState::Tag{}).first;
  RunState::Tag& tag = it->second;
  Result<int64_t> series = in_.SeriesFor(run_, tag, name, decode::Kind::kScalar);
  if (!series.ok()) return series.status();
  TW_RETURN_IF_ERROR(
      in_.store_.InsertScalar(*series, step, b_.source.source_id, offset, vidx, wall, value));
  b_.totals.CountScalar(value);
  tag.NoteStep(step, wall);
  b_.points_since_commit++;
  return Status::Ok();
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

Status PointSink::ConfigValue(std::string_view key, std::string_view json) {
  return in_.store_.SetRunValue(store::RunValues::kConfig, run_.run_id(), key, json);
}

Status PointSink::HParam(const model::HParam& p) { return in_.store_.UpsertHParam(run_.run_id(), p); }

}  // namespace tw::ingest
