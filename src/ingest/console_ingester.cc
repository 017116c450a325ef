#include "ingest/console_ingester.h"

#include <cmath>
#include <cstdio>

#include "base/json.h"
#include "base/utf8.h"
#include "decode/json_value.h"

namespace tw::ingest {

namespace {

// Keeps NaN and the infinities, which JSON numbers cannot.
std::string NumberText(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

}  // namespace

// The state is a small JSON object: {"lines":N,"bar_total":N,"step":N,"pending":[[offset,
// [[key,"value"],...]],...]}. It comes from our own store, but is checked like any input: what
// does not parse is taken as no state.
void ConsoleIngester::Resume(const std::optional<std::string>& state) {
  lines_ = 0;
  step_.reset();
  bar_total_ = 0;
  pending_.clear();
  shown_.clear();
  decode::JsonNode j;
  if (!state || !decode::ParseJson(*state, &j).ok() || j.type != decode::JsonNode::Type::kObject)
    return;
  auto integer = [&](std::string_view key) -> std::optional<int64_t> {
    const decode::JsonNode* n = j.Find(key);
    if (!n || n->type != decode::JsonNode::Type::kNumber || !std::isfinite(n->number) ||
        std::fabs(n->number) > 9e15)
      return std::nullopt;
    return static_cast<int64_t>(n->number);
  };
  lines_ = std::max<int64_t>(0, integer("lines").value_or(0));
  bar_total_ = std::max<int64_t>(0, integer("bar_total").value_or(0));
  step_ = integer("step");
  if (const decode::JsonNode* shown = j.Find("shown")) {
    for (const auto& kv : shown->array) {
      if (kv.array.size() != 2 || kv.array[0].type != decode::JsonNode::Type::kString) continue;
      if (const std::optional<double> v = decode::ParseConsoleNumber(kv.array[1].text))
        shown_[kv.array[0].text] = *v;
    }
  }
  const decode::JsonNode* pending = j.Find("pending");
  if (!pending || pending->type != decode::JsonNode::Type::kArray) return;
  for (const auto& p : pending->array) {
    if (p.array.size() != 2 || p.array[0].type != decode::JsonNode::Type::kNumber) continue;
    Pending line{static_cast<int64_t>(p.array[0].number), {}};
    for (const auto& kv : p.array[1].array) {
      if (kv.array.size() != 2 || kv.array[0].type != decode::JsonNode::Type::kString) continue;
      const std::optional<double> v = decode::ParseConsoleNumber(kv.array[1].text);
      if (v) line.metrics.emplace_back(kv.array[0].text, *v);
    }
    pending_.push_back(std::move(line));
  }
}

std::string ConsoleIngester::State() const {
  std::string s = "{\"lines\":" + std::to_string(lines_) +
                  ",\"bar_total\":" + std::to_string(bar_total_);
  if (step_) s += ",\"step\":" + std::to_string(*step_);
  if (!pending_.empty()) {
    s += ",\"pending\":[";
    for (size_t i = 0; i < pending_.size(); ++i) {
      s += (i ? ",[" : "[") + std::to_string(pending_[i].offset) + ",[";
      for (size_t k = 0; k < pending_[i].metrics.size(); ++k) {
        const auto& [key, value] = pending_[i].metrics[k];
        s += (k ? ",[" : "[") + JsonQuote(key) + ",\"" + NumberText(value) + "\"]";
      }
      s += "]]";
    }
    s += "]";
  }
  if (!shown_.empty()) {
    s += ",\"shown\":[";
    bool first = true;
    for (const auto& [key, value] : shown_) {
      s += (first ? "[" : ",[") + JsonQuote(key) + ",\"" + NumberText(value) + "\"]";
      first = false;
    }
    s += "]";
  }
  return s + "}";
}

Status ConsoleIngester::Store(PointSink& sink, int64_t step, const Metrics& metrics,
                              int64_t offset, double wall) {
  rewound_.clear();
  for (const auto& [name, value] : metrics) {
    const std::optional<int64_t> max = sink.MaxStep(name);
    if (max && step < *max) rewound_.push_back(name);
  }
  if (!rewound_.empty())
    TW_RETURN_IF_ERROR(sink.Rewind(rewound_, step, wall, offset,
                                   "'" + rewound_.front() + "' went back from step " +
                                       std::to_string(*sink.MaxStep(rewound_.front())) + " to " +
                                       std::to_string(step) +
                                       ": the log goes on with a training restarted"));
  int vidx = 0;
  for (const auto& [name, value] : metrics)
    TW_RETURN_IF_ERROR(sink.Scalar(name, step, wall, value, offset, vidx++));
  return Status::Ok();
}

Status ConsoleIngester::Line(PointSink& sink, std::string_view line, int64_t offset,
                             double wall) {
  // Of a line's segments (a progress bar redrawn in place), the steps of all count and the
  // metrics only of the last that has any: what a terminal shows once the line is done.
  std::optional<decode::ConsoleValues> last;
  for (std::string_view seg : decode::Segments(line)) {
    if (!profiles_->Read(seg, &values_)) continue;
    if (values_.progress) {
      const auto [count, total] = *values_.progress;
      if (total >= bar_total_ && count >= 0) {
        bar_total_ = total;
        step_ = count;
        // The bar drawn again after the lines written above it: their step.
        for (const auto& p : pending_) TW_RETURN_IF_ERROR(Store(sink, count, p.metrics, p.offset, wall));
        pending_.clear();
      }
    }
    if (values_.step && values_.metrics.empty()) step_ = values_.step;
    if (!values_.metrics.empty()) last = std::move(values_);
  }
  if (!last) return Status::Ok();
  // Keys are kept as valid UTF-8 (invalid bytes as U+FFFD), as the state that carries waiting
  // lines across a restart does: a resumed read names its series as one read does.
  for (auto& kv : last->metrics)
    if (!utf8::IsValid(kv.first)) kv.first = utf8::MakeValid(kv.first);
  if (last->redisplay) {
    // Only what changed since the bar last showed it is new.
    std::erase_if(last->metrics, [&](const auto& kv) {
      auto [at, fresh] = shown_.try_emplace(kv.first, kv.second);
      const bool same = !fresh && (at->second == kv.second ||
                                   (std::isnan(at->second) && std::isnan(kv.second)));
      at->second = kv.second;
      return same;
    });
    if (last->metrics.empty()) return Status::Ok();
  }
  ++lines_;
  if (last->step) {
    step_ = last->step;
    return Store(sink, *last->step, last->metrics, offset, wall);
  }
  if (bar_total_ > 0) {
    pending_.push_back({offset, std::move(last->metrics)});
    return Status::Ok();
  }
  return Store(sink, step_ ? *step_ : lines_ - 1, last->metrics, offset, wall);
}

Status ConsoleIngester::Finish(PointSink& sink, double wall) {
  for (const auto& p : pending_)
    TW_RETURN_IF_ERROR(Store(sink, step_.value_or(lines_), p.metrics, p.offset, wall));
  pending_.clear();
  return Status::Ok();
}

}  // namespace tw::ingest
