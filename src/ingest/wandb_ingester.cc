#include "ingest/wandb_ingester.h"

#include <fnmatch.h>

#include <cmath>
#include <map>

#include "base/source_names.h"
#include "ingest/batch.h"
#include "wandb/legacy_files.h"
#include "wandb/value.h"

namespace tw::ingest {

using decode::JsonNode;
using decode::Kind;
using wandb::RecordKind;

namespace {

// A step below the one a key already reached, logged later, re-logs that key from there: its
// later points are superseded, as for tfevents.
constexpr std::string_view kResumed = "resumed from a checkpoint or re-logged";

// "0.21.2+9917e63..." (the core's producer string) -> "0.21.2".
std::string_view PlainVersion(std::string_view v) { return v.substr(0, v.find('+')); }

bool Matches(const std::string& pattern, const std::string& name) {
  return pattern == name || fnmatch(pattern.c_str(), name.c_str(), 0) == 0;
}

const std::vector<std::string_view>& Views(const std::vector<std::string>& names,
                                           std::vector<std::string_view>* views) {
  views->assign(names.begin(), names.end());
  return *views;
}

// A key of the row as one name, for the internal keys W&B writes flat or as a 1-part path.
std::string_view FlatKey(const wandb::Record& r, const wandb::Item& it) {
  if (it.count == 0) return it.key;
  return it.count == 1 ? r.parts[it.first] : std::string_view();
}

}  // namespace

Status WandbIngester::Record(PointSink& sink, std::string_view record, int64_t offset) {
  wandb::Record& r = record_;
  if (Status s = wandb::DecodeRecord(record, &r); !s.ok())
    return sink.Problem(offset, 0, "bad_record",
                        "record of " + std::to_string(record.size()) +
                            " bytes is not a wandb_internal.Record: " + s.message());
  if (r.num > 0) {
    // W&B numbers records 1..N without gaps: a gap is data lost (damage dropped it, or the
    // writer did).
    const int64_t last = sink.last_record_num();
    if (last > 0 && r.num > last + 1)
      TW_RETURN_IF_ERROR(sink.Problem(
          offset, 0, "records_missing",
          "records " + std::to_string(last + 1) + ".." + std::to_string(r.num - 1) +
              " are missing before record " + std::to_string(r.num) + " (" +
              std::to_string(r.num - last - 1) + " lost)"));
    sink.last_record_num() = r.num;
  }
  WandbCursor& cur = sink.wandb();
  auto event = [&](std::string_view kind, std::optional<int64_t> step, double wall,
                   const std::string& detail) {
    return sink.Event(kind, step, wall, offset, detail);
  };
  const std::optional<int64_t> now_step =
      cur.has_step ? std::optional<int64_t>(cur.step) : std::nullopt;
  switch (r.kind) {
    case RecordKind::kHistory: return History(sink, offset);
    case RecordKind::kStats: return Stats(sink, offset);
    case RecordKind::kSummary: return RunValues(sink, store::RunValues::kSummary);
    case RecordKind::kConfig: return RunValues(sink, store::RunValues::kConfig);
    case RecordKind::kMetric: return DefineMetric(sink, offset);
    case RecordKind::kRun: {
      store::RunInfo info;
      info.format = "wandb";
      if (!r.run_id.empty()) info.external_id = std::string(r.run_id);
      if (!r.project.empty()) info.project = std::string(r.project);
      if (!r.entity.empty()) info.entity = std::string(r.entity);
      if (!r.display_name.empty()) info.display_name = std::string(r.display_name);
      if (r.start_time > 0) info.start_time = r.start_time;
      TW_RETURN_IF_ERROR(sink.Info(info));
      TW_RETURN_IF_ERROR(RunValues(sink, store::RunValues::kConfig));  // run.config
      Result<std::optional<int64_t>> prev = sink.LinkContinuedRun();
      if (!prev.ok()) return prev.status();
      std::string detail = "W&B run " + std::string(r.run_id);
      if (!r.project.empty())
        detail += " of " + (r.entity.empty() ? "" : std::string(r.entity) + "/") + std::string(r.project);
      if (r.resumed) detail += ", resumed";
      if (r.starting_step > 0) detail += " from step " + std::to_string(r.starting_step);
      if (*prev) detail += "; continues run #" + std::to_string(**prev);
      return event("wandb_run", std::nullopt, r.start_time, detail);
    }
    case RecordKind::kHeader:
    case RecordKind::kTelemetry: {
      if (r.version.empty()) return Status::Ok();
      store::RunInfo info;
      info.sdk_version = std::string(PlainVersion(r.version));
      return sink.Info(info);
    }
    case RecordKind::kExit: {
      store::RunInfo info;
      info.exit_code = r.exit_code;
      TW_RETURN_IF_ERROR(sink.Info(info));
      return event("exit", now_step, cur.wall,
                   "exit code " + std::to_string(r.exit_code) + " after " +
                       std::to_string(r.runtime) + " s");
    }
    case RecordKind::kPreempting:
      return event("preempting", now_step, cur.wall, "the run said it is being preempted");
    case RecordKind::kAlert:
      return event("alert", now_step, cur.wall,
                   std::string(r.alert_level) + ": " + std::string(r.alert_title) + ": " +
                       std::string(r.alert_text));
    case RecordKind::kTbRecord:
      return event("tensorboard_sync", std::nullopt, 0,
                   "TensorBoard logs synced by W&B from " + std::string(r.tb_log_dir));
    default:
      return Status::Ok();  // output, files, artifacts, final, footer: nothing to chart
  }
}

Status WandbIngester::History(PointSink& sink, int64_t offset) {
  WandbCursor& cur = sink.wandb();
  const wandb::Record& r = record_;
  // The row's step: its _step item; else HistoryStep; else one past the last row.
  std::optional<int64_t> step;
  double wall = cur.wall;
  for (const auto& it : r.items) {
    const std::string_view k = FlatKey(r, it);
    double v;
    if (k == "_step" && decode::ParseJsonNumber(it.value_json, &v) && std::isfinite(v))
      step = std::llround(v);
    else if (k == "_timestamp" && decode::ParseJsonNumber(it.value_json, &v) && std::isfinite(v))
      wall = v;
  }
  if (!step) step = r.has_step ? r.step : (cur.has_step ? cur.step + 1 : 0);

  // Objects the core wrote as leaves (a histogram's _type, values and bins as three items):
  // gather each back into one object, named by its path.
  std::map<std::string, JsonNode> typed;
  std::vector<bool> in_typed;
  for (const auto& it : r.items)
    if (it.count >= 2 && r.parts[it.first + it.count - 1] == "_type") {
      std::string prefix;
      for (uint32_t i = 0; i + 1 < it.count; ++i) {
        if (i) prefix.push_back('.');
        prefix.append(r.parts[it.first + i]);
      }
      typed[prefix].type = JsonNode::Type::kObject;
    }
  if (!typed.empty()) {
    in_typed.assign(r.items.size(), false);
    for (size_t n = 0; n < r.items.size(); ++n) {
      const auto& it = r.items[n];
      std::string prefix;
      for (uint32_t i = 0; i + 1 < it.count; ++i) {
        if (i) prefix.push_back('.');
        prefix.append(r.parts[it.first + i]);
        auto obj = typed.find(prefix);
        if (obj == typed.end()) continue;
        in_typed[n] = true;
        if (i + 2 == it.count) {  // a direct member of the object
          JsonNode member;
          if (decode::ParseJson(it.value_json, &member).ok())
            obj->second.object.push_back({std::string(r.parts[it.first + it.count - 1]),
                                          std::move(member)});
        }
        break;
      }
    }
  }

  names_.resize(r.items.size());
  for (size_t n = 0; n < r.items.size(); ++n) wandb::ItemName(r, r.items[n], &names_[n]);
  TW_RETURN_IF_ERROR(sink.RewindIfBack(Views(names_, &views_), *step, wall, offset, "key", "_step", kResumed));

  int vidx = 0;
  for (size_t n = 0; n < r.items.size(); ++n, ++vidx) {
    const auto& it = r.items[n];
    if (!in_typed.empty() && in_typed[n]) continue;
    const std::string& name = names_[n];
    if (name.empty() || name[0] == '_') continue;  // _step, _runtime, _timestamp, _wandb.*
    double v;
    if (decode::ParseJsonNumber(it.value_json, &v)) {
      TW_RETURN_IF_ERROR(Point(sink, name, Kind::kScalar, v, nullptr, *step, wall, vidx, offset));
      continue;
    }
    TW_RETURN_IF_ERROR(Value(sink, name, nullptr, it.value_json, *step, wall, vidx, offset));
  }
  for (auto& [name, node] : typed)
    TW_RETURN_IF_ERROR(Value(sink, name, &node, {}, *step, wall, vidx++, offset));

  cur.step = *step;
  cur.has_step = true;
  cur.wall = wall;
  return Status::Ok();
}

// One line of wandb-history.jsonl or wandb-events.jsonl (SDKs before 0.10): a JSON object,
// the row's keys beside _step, _runtime and _timestamp.
Status WandbIngester::Line(PointSink& sink, std::string_view line, int64_t offset) {
  WandbCursor& cur = sink.wandb();
  JsonNode row;
  if (Status s = decode::ParseJson(line, &row); !s.ok() || row.type != JsonNode::Type::kObject)
    return sink.Problem(offset, 0, "bad_line",
                        "line of " + std::to_string(line.size()) + " bytes is not a JSON object" +
                            (s.ok() ? std::string() : ": " + s.message()));
  const JsonNode* ts = row.Find("_timestamp");
  const double wall = ts && ts->type == JsonNode::Type::kNumber ? ts->number : cur.wall;
  const bool system = sink.path().ends_with("wandb-events.jsonl");
  if (system) {
    // System metrics ("system.gpu.0.memory"): at the latest history step, as for .wandb.
    const int64_t step = cur.has_step ? cur.step : 0;
    int vidx = 0;
    for (const auto& [key, value] : row.object) {
      ++vidx;
      if (key.starts_with("_") || value.type != JsonNode::Type::kNumber) continue;
      const std::string name = "system/" + (key.starts_with("system.") ? key.substr(7) : key);
      TW_RETURN_IF_ERROR(Point(sink, name, Kind::kScalar, value.number, nullptr, step, wall,
                                    vidx, offset));
    }
    return Status::Ok();
  }
  const JsonNode* st = row.Find("_step");
  const int64_t step = st && st->type == JsonNode::Type::kNumber && std::isfinite(st->number)
                           ? std::llround(st->number)
                           : (cur.has_step ? cur.step + 1 : 0);
  names_.clear();
  for (const auto& [key, value] : row.object) names_.push_back(key);
  TW_RETURN_IF_ERROR(sink.RewindIfBack(Views(names_, &views_), step, wall, offset, "key", "_step", kResumed));
  int vidx = 0;
  for (const auto& [key, value] : row.object) {
    ++vidx;
    if (key.empty() || key[0] == '_') continue;
    TW_RETURN_IF_ERROR(Value(sink, key, &value, {}, step, wall, vidx, offset));
  }
  cur.step = step;
  cur.has_step = true;
  cur.wall = wall;
  return Status::Ok();
}

Status WandbIngester::Value(PointSink& sink, const std::string& name, const JsonNode* node,
                            std::string_view json, int64_t step, double wall, int vidx,
                            int64_t offset) {
  JsonNode parsed;
  if (!node) {
    if (Status s = decode::ParseJson(json, &parsed); !s.ok())
      return sink.Problem(offset, 0, "bad_value",
                          "key '" + name + "' at _step " + std::to_string(step) + ": " + s.message());
    node = &parsed;
  }
  if (node->type == JsonNode::Type::kObject && !node->Find("_type")) {
    // A nested dict: each leaf is a series named by its dotted path, as W&B's UI names it.
    for (const auto& [key, child] : node->object)
      TW_RETURN_IF_ERROR(Value(sink, name + "." + key, &child, {}, step, wall, vidx, offset));
    return Status::Ok();
  }
  switch (wandb::ClassifyValue(*node)) {
    case wandb::ValueKind::kNumber:
      return Point(sink, name, Kind::kScalar, node->number, nullptr, step, wall, vidx, offset);
    case wandb::ValueKind::kHistogram: {
      decode::Histogram h;
      if (Status s = wandb::ParseHistogram(*node, &h); !s.ok())
        return sink.Problem(offset, 0, "bad_value",
                            "key '" + name + "' at _step " + std::to_string(step) + ": " + s.message());
      return Point(sink, name, Kind::kHistogram, 0, &h, step, wall, vidx, offset);
    }
    case wandb::ValueKind::kImage:
      sink.CountBlob(PointSink::Blob::kImage);
      return Status::Ok();
    case wandb::ValueKind::kMedia:
    case wandb::ValueKind::kString:
    case wandb::ValueKind::kOther:
      // Tables, videos, strings, arrays: counted, not charted.
      sink.CountBlob(PointSink::Blob::kOther);
      return Status::Ok();
    case wandb::ValueKind::kNull:
      return Status::Ok();
  }
  return Status::Ok();
}

Status WandbIngester::Point(PointSink& sink, const std::string& name, Kind kind, double value,
                            const decode::Histogram* h, int64_t step, double wall, int vidx,
                            int64_t offset) {
  const bool fresh = !sink.HasSeries(name, kind);
  TW_RETURN_IF_ERROR(kind == Kind::kScalar ? sink.Scalar(name, step, wall, value, offset, vidx)
                                           : sink.Histogram(name, step, wall, *h, offset, vidx));
  if (!fresh) return Status::Ok();
  // define_metric's x axis, the last definition that matches winning (as in W&B).
  const std::string* step_metric = nullptr;
  for (const auto& [pattern, metric] : sink.wandb().step_metrics)
    if (metric != name && Matches(pattern, name)) step_metric = &metric;
  return step_metric ? sink.StepMetric(name, *step_metric) : Status::Ok();
}

Status WandbIngester::Stats(PointSink& sink, int64_t offset) {
  const WandbCursor& cur = sink.wandb();
  const wandb::Record& r = record_;
  const int64_t step = cur.has_step ? cur.step : 0;
  const double wall = r.timestamp > 0 ? r.timestamp : cur.wall;
  int vidx = 0;
  for (const auto& it : r.items) {
    double v;
    wandb::ItemName(r, it, &name_);
    if (!decode::ParseJsonNumber(it.value_json, &v)) {
      ++vidx;
      continue;
    }
    const std::string name = "system/" + name_;
    TW_RETURN_IF_ERROR(Point(sink, name, Kind::kScalar, v, nullptr, step, wall, vidx++, offset));
  }
  return Status::Ok();
}

void ConfigHParams(const std::string& key, const JsonNode& n, int depth,
                   std::vector<decode::HParam>* out) {
  using T = decode::HParam::Type;
  switch (n.type) {
    case JsonNode::Type::kNumber: out->push_back({key, T::kNumber, n.number, {}}); return;
    case JsonNode::Type::kBool: out->push_back({key, T::kBool, n.number, {}}); return;
    case JsonNode::Type::kString: out->push_back({key, T::kString, 0, n.text}); return;
    case JsonNode::Type::kNull: out->push_back({key, T::kNull, 0, {}}); return;
    case JsonNode::Type::kArray: return;
    case JsonNode::Type::kObject:
      if (depth > 4) return;
      // Old SDKs wrap every value: {"desc": ..., "value": ...}.
      if (const JsonNode* v = n.Find("value"); v && n.object.size() <= 2 &&
                                               (n.object.size() == 1 || n.Find("desc"))) {
        ConfigHParams(key, *v, depth + 1, out);
        return;
      }
      for (const auto& [k, child] : n.object) ConfigHParams(key + "." + k, child, depth + 1, out);
  }
}


Status WandbIngester::RunValues(PointSink& sink, store::RunValues table) {
  const wandb::Record& r = record_;
  std::vector<decode::HParam> hparams;
  for (const auto& it : r.items) {
    wandb::ItemName(r, it, &name_);
    if (name_.empty()) continue;
    if (table == store::RunValues::kSummary) {
      sink.LatestRunValue(name_, it.removed ? std::nullopt : std::optional<std::string>(it.value_json));
      continue;
    }
    if (it.removed) {
      TW_RETURN_IF_ERROR(sink.RemoveConfigValue(name_));
      continue;
    }
    TW_RETURN_IF_ERROR(sink.ConfigValue(name_, it.value_json));
    if (name_.starts_with("_wandb")) continue;
    JsonNode node;
    if (decode::ParseJson(it.value_json, &node).ok()) ConfigHParams(name_, node, 0, &hparams);
  }
  return sink.HParams(hparams);
}

Status WandbIngester::DefineMetric(PointSink& sink, int64_t offset) {
  const wandb::Record& r = record_;
  const std::string pattern(r.metric_name.empty() ? r.metric_glob : r.metric_name);
  if (pattern.empty() || r.step_metric.empty()) return Status::Ok();
  const std::string metric(r.step_metric);
  TW_RETURN_IF_ERROR(
      sink.Event("define_metric", std::nullopt, 0, offset, pattern + "\t" + metric));
  sink.wandb().step_metrics.emplace_back(pattern, metric);
  for (const std::string& name : sink.Metrics())
    if (name != metric && Matches(pattern, name)) TW_RETURN_IF_ERROR(sink.StepMetric(name, metric));
  return Status::Ok();
}

Status WandbIngester::LegacySideFiles(PointSink& sink) {
  const std::string dir = sources::RunDirOf(sink.path());
  const wandb::LegacyFiles files = wandb::ReadLegacyFiles(dir);
  if (files.config_yaml.empty() && files.summary_json.empty()) return Status::Ok();
  std::vector<decode::HParam> hparams;
  for (const auto& [key, value] : wandb::ParseConfigYaml(files.config_yaml)) {
    TW_RETURN_IF_ERROR(sink.ConfigValue(key, value));
    JsonNode node;
    if (decode::ParseJson(value, &node).ok()) ConfigHParams(key, node, 0, &hparams);
  }
  for (const auto& p : hparams) TW_RETURN_IF_ERROR(sink.HParam(p));  // not counted: side files
  if (!files.summary_json.empty()) {
    Result<wandb::KeyValues> summary = wandb::ParseSummaryJson(files.summary_json);
    if (!summary.ok())
      return sink.SideFileProblem(dir + "/wandb-summary.json", "bad_summary",
                                summary.status().message());
    for (const auto& [key, value] : *summary)
      TW_RETURN_IF_ERROR(sink.RunValue(key, value));
  }
  return Status::Ok();
}

}  // namespace tw::ingest
