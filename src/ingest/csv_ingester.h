// Metrics tables written as CSV into the store: PyTorch Lightning's CSVLogger
// (`metrics.csv`: sorted columns, `epoch` and `step`, sparse cells, one row per log call) and
// Ultralytics YOLO's `results.csv` (one row per epoch, headers padded with spaces). Each cell
// with a number is a point of the metric its column names (trimmed), at the row's `step`, or
// its `epoch` when it has no step. The columns are committed with the offset
// (SourceRow::resume_state), so a read resumed after a restart reads rows as one read would.
//
// Lightning rewrites the whole file in place when a column first appears: the rows read before
// come first again, under the new header. A file rewritten in place (the same inode) is a new
// generation that skips as many rows as the one before had read (NextGeneration), so no row
// is stored twice; a file replaced by another (a new inode) is read anew, as any source is.
//
// A file without a `step` or `epoch` column is not a metrics table: reported once.
// The writer thread only.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "ingest/point_sink.h"

namespace tw::ingest {

class CsvIngester {
 public:
  void Resume(const std::optional<std::string>& state);
  std::string State() const;
  // The state a file rewritten in place starts from: skip the rows `old` (the state of the
  // generation before) had read.
  static std::string NextGeneration(const std::optional<std::string>& old);
  Status Line(PointSink& sink, std::string_view line, int64_t offset, double wall);

 private:
  std::vector<std::string> columns_;  // empty: the next line is the header
  int step_ = -1, epoch_ = -1;        // their columns (-1: none)
  bool refused_ = false;              // no step or epoch column: reported, rows not read
  int64_t rows_ = 0;                  // data rows read (stored, skipped or bad)
  int64_t skip_ = 0;                  // rows a rewrite holds again: not read
  std::vector<std::string> cells_;    // reused
};

// Splits one CSV line (RFC 4180: quoted cells, "" for a quote) into `cells`.
void SplitCsv(std::string_view line, std::vector<std::string>* cells);

}  // namespace tw::ingest
