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
  // The metric's highest live step, if it has points.
  std::optional<int64_t> MaxStep(std::string_view name) const;
  // The file re-logs `names` from `step` on (a training restarted into the same log): their
  // later points are superseded, and a restart event says why.
  Status Rewind(const std::vector<std::string>& names, int64_t step, double wall, int64_t offset,
                std::string detail);
  // Damage or a record that does not decode: recorded with the file and offset, and counted.
  Status Problem(int64_t offset, int64_t length, std::string_view kind, std::string detail);
  Status Info(const store::RunInfo& info);
  // One key of the run's summary (store::RunValues::kSummary), as JSON.
  Status RunValue(std::string_view key, std::string_view json);
  // One key of the run's config (store::RunValues::kConfig), as JSON.
  Status ConfigValue(std::string_view key, std::string_view json);
  Status HParam(const model::HParam& p);
  // The format's own state beside the offset, committed with it.
  std::optional<std::string>& resume_state() { return b_.source.resume_state; }
  const std::string& path() const { return b_.source.path; }

 private:
  FileIngester& in_;
  RunState& run_;
  FileIngester::Batch& b_;
};

}  // namespace tw::ingest
