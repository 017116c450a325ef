#include "ingest/csv_ingester.h"

#include <cmath>

#include "base/json.h"
#include "base/strings.h"
#include "base/utf8.h"
#include "decode/console_profiles.h"
#include "decode/json_value.h"

namespace tw::ingest {

namespace {

// A step cell: a whole number (Lightning writes "12"; a float "12.0" is taken too).
std::optional<int64_t> StepCell(std::string_view cell) {
  const std::optional<double> v = decode::ParseConsoleNumber(TrimSpace(cell));
  if (!v || !std::isfinite(*v) || *v < 0 || *v > 9e15 || *v != std::floor(*v)) return std::nullopt;
  return static_cast<int64_t>(*v);
}

}  // namespace

void SplitCsv(std::string_view line, std::vector<std::string>* cells) {
  cells->clear();
  std::string cell;
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        cell += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        cell += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      cells->push_back(std::move(cell));
      cell.clear();
    } else {
      cell += c;
    }
  }
  cells->push_back(std::move(cell));
}

namespace {
int64_t Count(const decode::JsonNode& j, std::string_view key) {
  const decode::JsonNode* n = j.Find(key);
  if (!n || n->type != decode::JsonNode::Type::kNumber || !(n->number >= 0) || n->number > 9e15)
    return 0;
  return static_cast<int64_t>(n->number);
}
}  // namespace

std::string CsvIngester::NextGeneration(const std::optional<std::string>& old) {
  decode::JsonNode j;
  if (!old || !decode::ParseJson(*old, &j).ok()) return "{}";
  return "{\"skip\":" + std::to_string(Count(j, "rows")) + "}";
}

void CsvIngester::Resume(const std::optional<std::string>& state) {
  columns_.clear();
  step_ = epoch_ = -1;
  refused_ = false;
  rows_ = skip_ = 0;
  decode::JsonNode j;
  if (!state || !decode::ParseJson(*state, &j).ok()) return;
  rows_ = Count(j, "rows");
  skip_ = Count(j, "skip");
  const decode::JsonNode* cols = j.Find("columns");
  if (!cols || cols->type != decode::JsonNode::Type::kArray) return;
  for (const auto& c : cols->array) {
    if (c.type != decode::JsonNode::Type::kString) {
      columns_.clear();
      return;
    }
    columns_.push_back(c.text);
  }
  for (size_t i = 0; i < columns_.size(); ++i) {
    if (columns_[i] == "step") step_ = static_cast<int>(i);
    if (columns_[i] == "epoch") epoch_ = static_cast<int>(i);
  }
  refused_ = !columns_.empty() && step_ < 0 && epoch_ < 0;
}

std::string CsvIngester::State() const {
  std::string s = "{\"rows\":" + std::to_string(rows_) + ",\"skip\":" + std::to_string(skip_);
  if (columns_.empty()) return s + "}";
  s += ",\"columns\":[";
  for (size_t i = 0; i < columns_.size(); ++i) s += (i ? "," : "") + JsonQuote(columns_[i]);
  return s + "]}";
}

Status CsvIngester::Line(PointSink& sink, std::string_view line, int64_t offset, double wall) {
  if (refused_) return Status::Ok();
  SplitCsv(line, &cells_);
  if (columns_.empty()) {
    for (size_t i = 0; i < cells_.size(); ++i) {
      // Names are kept as valid UTF-8 (invalid bytes as U+FFFD), as the state that carries them
      // across a restart does: a resumed read names its series as one read does.
      columns_.push_back(utf8::MakeValid(TrimSpace(cells_[i])));
      if (columns_.back() == "step") step_ = static_cast<int>(i);
      if (columns_.back() == "epoch") epoch_ = static_cast<int>(i);
    }
    if (step_ < 0 && epoch_ < 0) {
      refused_ = true;
      return sink.Problem(offset, static_cast<int64_t>(line.size()), "no_step_column",
                          "the header names no 'step' or 'epoch' column: not a metrics table; "
                          "its rows are not read");
    }
    return Status::Ok();
  }
  ++rows_;
  if (rows_ <= skip_) return Status::Ok();  // read in the generation before the rewrite
  if (cells_.size() != columns_.size())
    return sink.Problem(offset, static_cast<int64_t>(line.size()), "bad_row",
                        "a row of " + std::to_string(cells_.size()) + " cells under a header of " +
                            std::to_string(columns_.size()) + "; skipped");
  // The step, or the epoch in a row whose step is empty (or a table without one).
  const bool no_step = step_ < 0 || TrimSpace(cells_[step_]).empty();
  std::optional<int64_t> step = no_step ? std::nullopt : StepCell(cells_[step_]);
  if (no_step && epoch_ >= 0) step = StepCell(cells_[epoch_]);
  if (!step)
    return sink.Problem(offset, static_cast<int64_t>(line.size()), "bad_row",
                        "a row without a whole, non-negative step or epoch; skipped");
  for (size_t i = 0; i < cells_.size(); ++i) {
    if (static_cast<int>(i) == step_ || (static_cast<int>(i) == epoch_ && step_ < 0)) continue;
    const std::string_view cell = TrimSpace(cells_[i]);
    if (cell.empty()) continue;  // a metric not logged in this row
    const std::optional<double> v = decode::ParseConsoleNumber(cell);
    if (!v) continue;  // text: not a metric
    TW_RETURN_IF_ERROR(sink.Scalar(columns_[i], *step, wall, *v, offset, static_cast<int>(i)));
  }
  return Status::Ok();
}

}  // namespace tw::ingest
