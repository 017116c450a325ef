// W&B records into the store: the same series, points, restarts and run events as tfevents,
// so every rule reads both. A history row's items become points at the row's _step; system
// metrics (stats records) become series "system/<key>" at the latest history step; config
// and summary go to run_config and run_summary_values (config's scalars also to hparams).
#include <fnmatch.h>

#include <cmath>
#include <map>

#include "base/source_names.h"
#include "ingest/batch.h"
#include "decode/wandb_legacy_files.h"

namespace tw::ingest {

using decode::JsonNode;
using decode::Kind;
using decode::WandbKind;

namespace {

// "0.21.2+9917e63..." (the core's producer string) -> "0.21.2".
std::string_view PlainVersion(std::string_view v) { return v.substr(0, v.find('+')); }

bool Matches(const std::string& pattern, const std::string& name) {
  return pattern == name || fnmatch(pattern.c_str(), name.c_str(), 0) == 0;
}

// A key of the row as one name, for the internal keys W&B writes flat or as a 1-part path.
std::string_view FlatKey(const decode::WandbRecord& r, const decode::WandbItem& it) {
  if (it.count == 0) return it.key;
  return it.count == 1 ? r.parts[it.first] : std::string_view();
}

}  // namespace

Status FileIngester::WandbProblem(Batch& b, int64_t offset, std::string_view kind,
                                  std::string detail) {
  b.totals.errors++;
  b.source.error_count++;
  return store_.InsertError(b.source.source_id, b.source.path, offset, 0, kind, detail);
}

Status FileIngester::ProcessWandbRecord(RunState& run, Batch& b, std::string_view record,
                                        int64_t offset) {
  decode::WandbRecord& r = wandb_;
  if (Status s = decode::DecodeWandbRecord(record, &r); !s.ok())
    return WandbProblem(b, offset, "bad_record",
                        "record of " + std::to_string(record.size()) +
                            " bytes is not a wandb_internal.Record: " + s.message());
  if (r.num > 0) {
    // W&B numbers records 1..N without gaps: a gap is data lost (damage dropped it, or the
    // writer did).
    const int64_t last = b.source.last_record_num;
    if (last > 0 && r.num > last + 1)
      TW_RETURN_IF_ERROR(WandbProblem(
          b, offset, "records_missing",
          "records " + std::to_string(last + 1) + ".." + std::to_string(r.num - 1) +
              " are missing before record " + std::to_string(r.num) + " (" +
              std::to_string(r.num - last - 1) + " lost)"));
    b.source.last_record_num = r.num;
  }
  auto event = [&](std::string_view kind, std::optional<int64_t> step, double wall,
                   const std::string& detail) {
    b.totals.run_events++;
    return store_.InsertRunEvent(run.run_id(), b.source.source_id, offset, kind, step, wall, detail);
  };
  const std::optional<int64_t> now_step =
      run.wandb_has_step_ ? std::optional<int64_t>(run.wandb_step_) : std::nullopt;
  switch (r.kind) {
    case WandbKind::kHistory: return WandbHistory(run, b, offset);
    case WandbKind::kStats: return WandbStats(run, b, offset);
    case WandbKind::kSummary: return WandbRunValues(run, b, store::RunValues::kSummary);
    case WandbKind::kConfig: return WandbRunValues(run, b, store::RunValues::kConfig);
    case WandbKind::kMetric: return WandbDefineMetric(run, b, offset);
    case WandbKind::kRun: {
      store::RunInfo info;
      info.format = "wandb";
      if (!r.run_id.empty()) info.external_id = std::string(r.run_id);
      if (!r.project.empty()) info.project = std::string(r.project);
      if (!r.entity.empty()) info.entity = std::string(r.entity);
      if (!r.display_name.empty()) info.display_name = std::string(r.display_name);
      if (r.start_time > 0) info.start_time = r.start_time;
      TW_RETURN_IF_ERROR(store_.UpdateRunInfo(run.run_id(), info));
      TW_RETURN_IF_ERROR(WandbRunValues(run, b, store::RunValues::kConfig));  // run.config
      Result<std::optional<int64_t>> prev = store_.LinkContinuedRun(run.run_id());
      if (!prev.ok()) return prev.status();
      std::string detail = "W&B run " + std::string(r.run_id);
      if (!r.project.empty())
        detail += " of " + (r.entity.empty() ? "" : std::string(r.entity) + "/") + std::string(r.project);
      if (r.resumed) detail += ", resumed";
      if (r.starting_step > 0) detail += " from step " + std::to_string(r.starting_step);
      if (*prev) detail += "; continues run #" + std::to_string(**prev);
      return event("wandb_run", std::nullopt, r.start_time, detail);
    }
    case WandbKind::kHeader:
    case WandbKind::kTelemetry: {
      if (r.version.empty()) return Status::Ok();
      store::RunInfo info;
      info.sdk_version = std::string(PlainVersion(r.version));
      return store_.UpdateRunInfo(run.run_id(), info);
    }
    case WandbKind::kExit: {
      store::RunInfo info;
      info.exit_code = r.exit_code;
      TW_RETURN_IF_ERROR(store_.UpdateRunInfo(run.run_id(), info));
      return event("exit", now_step, run.wandb_wall_,
                   "exit code " + std::to_string(r.exit_code) + " after " +
                       std::to_string(r.runtime) + " s");
    }
    case WandbKind::kPreempting:
      return event("preempting", now_step, run.wandb_wall_, "the run said it is being preempted");
    case WandbKind::kAlert:
      return event("alert", now_step, run.wandb_wall_,
                   std::string(r.alert_level) + ": " + std::string(r.alert_title) + ": " +
                       std::string(r.alert_text));
    case WandbKind::kTbRecord:
      return event("tensorboard_sync", std::nullopt, 0,
                   "TensorBoard logs synced by W&B from " + std::string(r.tb_log_dir));
    default:
      return Status::Ok();  // output, files, artifacts, final, footer: nothing to chart
  }
}

Status FileIngester::WandbHistory(RunState& run, Batch& b, int64_t offset) {
  const decode::WandbRecord& r = wandb_;
  // The row's step: its _step item; else HistoryStep; else one past the last row.
  std::optional<int64_t> step;
  double wall = run.wandb_wall_;
  for (const auto& it : r.items) {
    const std::string_view k = FlatKey(r, it);
    double v;
    if (k == "_step" && decode::ParseJsonNumber(it.value_json, &v) && std::isfinite(v))
      step = std::llround(v);
    else if (k == "_timestamp" && decode::ParseJsonNumber(it.value_json, &v) && std::isfinite(v))
      wall = v;
  }
  if (!step) step = r.has_step ? r.step : (run.wandb_has_step_ ? run.wandb_step_ + 1 : 0);

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
  for (size_t n = 0; n < r.items.size(); ++n) decode::WandbItemName(r, r.items[n], &names_[n]);
  TW_RETURN_IF_ERROR(RewindIfBack(run, b, names_, *step, wall, offset));

  int vidx = 0;
  for (size_t n = 0; n < r.items.size(); ++n, ++vidx) {
    const auto& it = r.items[n];
    if (!in_typed.empty() && in_typed[n]) continue;
    const std::string& name = names_[n];
    if (name.empty() || name[0] == '_') continue;  // _step, _runtime, _timestamp, _wandb.*
    double v;
    if (decode::ParseJsonNumber(it.value_json, &v)) {
      TW_RETURN_IF_ERROR(WandbPoint(run, b, name, Kind::kScalar, v, nullptr, *step, wall, vidx, offset));
      continue;
    }
    TW_RETURN_IF_ERROR(WandbValue(run, b, name, nullptr, it.value_json, *step, wall, vidx, offset));
  }
  for (auto& [name, node] : typed)
    TW_RETURN_IF_ERROR(WandbValue(run, b, name, &node, {}, *step, wall, vidx++, offset));

  run.wandb_step_ = *step;
  run.wandb_has_step_ = true;
  run.wandb_wall_ = wall;
  return Status::Ok();
}

// A step below the one a key already reached, logged later, re-logs that key from there: its
// later points are superseded, as for tfevents.
Status FileIngester::RewindIfBack(RunState& run, Batch& b, const std::vector<std::string>& names,
                                  int64_t step, double wall, int64_t offset) {
  std::vector<int64_t> rewound;
  std::string detail;
  for (const auto& name : names) {
    auto t = run.tags_.find(name);
    if (t == run.tags_.end() || !t->second.has_step || step >= t->second.max_step ||
        wall <= t->second.max_step_wall)
      continue;
    for (int64_t id : t->second.series)
      if (id) rewound.push_back(id);
    if (detail.empty())
      detail = "key '" + name + "' went back from _step " + std::to_string(t->second.max_step) +
               " to " + std::to_string(step);
  }
  if (rewound.empty()) return Status::Ok();
  return Restart(run, b, step, wall, offset, detail + ": resumed from a checkpoint or re-logged",
                 &rewound, true);
}

// One line of wandb-history.jsonl or wandb-events.jsonl (SDKs before 0.10): a JSON object,
// the row's keys beside _step, _runtime and _timestamp.
Status FileIngester::ProcessWandbLine(RunState& run, Batch& b, std::string_view line,
                                      int64_t offset) {
  JsonNode row;
  if (Status s = decode::ParseJson(line, &row); !s.ok() || row.type != JsonNode::Type::kObject)
    return WandbProblem(b, offset, "bad_line",
                        "line of " + std::to_string(line.size()) + " bytes is not a JSON object" +
                            (s.ok() ? std::string() : ": " + s.message()));
  const JsonNode* ts = row.Find("_timestamp");
  const double wall = ts && ts->type == JsonNode::Type::kNumber ? ts->number : run.wandb_wall_;
  const bool system = b.source.path.ends_with("wandb-events.jsonl");
  if (system) {
    // System metrics ("system.gpu.0.memory"): at the latest history step, as for .wandb.
    const int64_t step = run.wandb_has_step_ ? run.wandb_step_ : 0;
    int vidx = 0;
    for (const auto& [key, value] : row.object) {
      ++vidx;
      if (key.starts_with("_") || value.type != JsonNode::Type::kNumber) continue;
      const std::string name = "system/" + (key.starts_with("system.") ? key.substr(7) : key);
      TW_RETURN_IF_ERROR(WandbPoint(run, b, name, Kind::kScalar, value.number, nullptr, step, wall,
                                    vidx, offset));
    }
    return Status::Ok();
  }
  const JsonNode* st = row.Find("_step");
  const int64_t step = st && st->type == JsonNode::Type::kNumber && std::isfinite(st->number)
                           ? std::llround(st->number)
                           : (run.wandb_has_step_ ? run.wandb_step_ + 1 : 0);
  names_.clear();
  for (const auto& [key, value] : row.object) names_.push_back(key);
  TW_RETURN_IF_ERROR(RewindIfBack(run, b, names_, step, wall, offset));
  int vidx = 0;
  for (const auto& [key, value] : row.object) {
    ++vidx;
    if (key.empty() || key[0] == '_') continue;
    TW_RETURN_IF_ERROR(WandbValue(run, b, key, &value, {}, step, wall, vidx, offset));
  }
  run.wandb_step_ = step;
  run.wandb_has_step_ = true;
  run.wandb_wall_ = wall;
  return Status::Ok();
}

Status FileIngester::WandbValue(RunState& run, Batch& b, const std::string& name,
                                const JsonNode* node, std::string_view json, int64_t step,
                                double wall, int vidx, int64_t offset) {
  JsonNode parsed;
  if (!node) {
    if (Status s = decode::ParseJson(json, &parsed); !s.ok())
      return WandbProblem(b, offset, "bad_value",
                          "key '" + name + "' at _step " + std::to_string(step) + ": " + s.message());
    node = &parsed;
  }
  if (node->type == JsonNode::Type::kObject && !node->Find("_type")) {
    // A nested dict: each leaf is a series named by its dotted path, as W&B's UI names it.
    for (const auto& [key, child] : node->object)
      TW_RETURN_IF_ERROR(WandbValue(run, b, name + "." + key, &child, {}, step, wall, vidx, offset));
    return Status::Ok();
  }
  switch (decode::ClassifyWandbValue(*node)) {
    case decode::WandbValueKind::kNumber:
      return WandbPoint(run, b, name, Kind::kScalar, node->number, nullptr, step, wall, vidx, offset);
    case decode::WandbValueKind::kHistogram: {
      decode::Histogram h;
      if (Status s = decode::WandbHistogram(*node, &h); !s.ok())
        return WandbProblem(b, offset, "bad_value",
                            "key '" + name + "' at _step " + std::to_string(step) + ": " + s.message());
      return WandbPoint(run, b, name, Kind::kHistogram, 0, &h, step, wall, vidx, offset);
    }
    case decode::WandbValueKind::kImage:
      b.counters.images++;
      b.totals.blobs++;
      return Status::Ok();
    case decode::WandbValueKind::kMedia:
    case decode::WandbValueKind::kString:
    case decode::WandbValueKind::kOther:
      // Tables, videos, strings, arrays: counted, not charted.
      b.counters.other_tensors++;
      b.totals.blobs++;
      return Status::Ok();
    case decode::WandbValueKind::kNull:
      return Status::Ok();
  }
  return Status::Ok();
}

Status FileIngester::WandbPoint(RunState& run, Batch& b, const std::string& name, Kind kind,
                                double value, const decode::Histogram* h, int64_t step,
                                double wall, int vidx, int64_t offset) {
  auto it = run.tags_.find(name);
  if (it == run.tags_.end()) it = run.tags_.emplace(name, RunState::Tag{}).first;
  RunState::Tag& tag = it->second;
  const bool fresh = tag.series[kind == Kind::kScalar ? 0 : 1] == 0;
  Result<int64_t> series = SeriesFor(run, tag, name, kind);
  if (!series.ok()) return series.status();
  if (fresh) {
    // define_metric's x axis, the last definition that matches winning (as in W&B).
    const std::string* step_metric = nullptr;
    for (const auto& [pattern, metric] : run.step_metrics_)
      if (metric != name && Matches(pattern, name)) step_metric = &metric;
    if (step_metric) TW_RETURN_IF_ERROR(store_.SetSeriesStepMetric(*series, *step_metric));
  }
  if (kind == Kind::kScalar) {
    TW_RETURN_IF_ERROR(store_.InsertScalar(*series, step, b.source.source_id, offset, vidx, wall, value));
    b.totals.CountScalar(value);
  } else {
    TW_RETURN_IF_ERROR(store_.InsertHistogram(*series, step, b.source.source_id, offset, vidx, wall, *h));
    b.totals.histograms++;
  }
  tag.NoteStep(step, wall);
  b.points_since_commit++;
  return Status::Ok();
}

Status FileIngester::WandbStats(RunState& run, Batch& b, int64_t offset) {
  const decode::WandbRecord& r = wandb_;
  const int64_t step = run.wandb_has_step_ ? run.wandb_step_ : 0;
  const double wall = r.timestamp > 0 ? r.timestamp : run.wandb_wall_;
  int vidx = 0;
  for (const auto& it : r.items) {
    double v;
    decode::WandbItemName(r, it, &name_);
    if (!decode::ParseJsonNumber(it.value_json, &v)) {
      ++vidx;
      continue;
    }
    const std::string name = "system/" + name_;
    TW_RETURN_IF_ERROR(WandbPoint(run, b, name, Kind::kScalar, v, nullptr, step, wall, vidx++, offset));
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


Status FileIngester::WandbRunValues(RunState& run, Batch& b, store::RunValues table) {
  const decode::WandbRecord& r = wandb_;
  std::vector<decode::HParam> hparams;
  for (const auto& it : r.items) {
    decode::WandbItemName(r, it, &name_);
    if (name_.empty()) continue;
    if (table == store::RunValues::kSummary) {
      b.summary[name_] = it.removed ? std::nullopt : std::optional<std::string>(it.value_json);
      continue;
    }
    if (it.removed) {
      TW_RETURN_IF_ERROR(store_.SetRunValue(table, run.run_id(), name_, std::nullopt));
      TW_RETURN_IF_ERROR(store_.RemoveHParam(run.run_id(), name_));
      continue;
    }
    TW_RETURN_IF_ERROR(store_.SetRunValue(table, run.run_id(), name_, it.value_json));
    if (table != store::RunValues::kConfig || name_.starts_with("_wandb")) continue;
    JsonNode node;
    if (decode::ParseJson(it.value_json, &node).ok()) ConfigHParams(name_, node, 0, &hparams);
  }
  for (const auto& p : hparams) TW_RETURN_IF_ERROR(store_.UpsertHParam(run.run_id(), p));
  b.totals.hparams += static_cast<int64_t>(hparams.size());
  return Status::Ok();
}

Status FileIngester::WandbDefineMetric(RunState& run, Batch& b, int64_t offset) {
  const decode::WandbRecord& r = wandb_;
  const std::string pattern(r.metric_name.empty() ? r.metric_glob : r.metric_name);
  if (pattern.empty() || r.step_metric.empty()) return Status::Ok();
  const std::string metric(r.step_metric);
  b.totals.run_events++;
  TW_RETURN_IF_ERROR(store_.InsertRunEvent(run.run_id(), b.source.source_id, offset,
                                           "define_metric", std::nullopt, 0,
                                           pattern + "\t" + metric));
  run.step_metrics_.emplace_back(pattern, metric);
  for (const auto& [name, tag] : run.tags_) {
    if (name == metric || !Matches(pattern, name)) continue;
    for (int64_t id : tag.series)
      if (id) TW_RETURN_IF_ERROR(store_.SetSeriesStepMetric(id, metric));
  }
  return Status::Ok();
}

}  // namespace tw::ingest

namespace tw::ingest {

// In the history's transaction (RecordHandler::at_end): committed with its offset, so a read
// that fails (disk full) reads them again with the history.
Status FileIngester::LoadLegacySideFiles(RunState& run, Batch& b) {
  const std::string dir = sources::RunDirOf(b.source.path);
  const decode::LegacyFiles files = decode::ReadLegacyFiles(dir);
  if (files.config_yaml.empty() && files.summary_json.empty()) return Status::Ok();
  std::vector<decode::HParam> hparams;
  for (const auto& [key, value] : decode::ParseConfigYaml(files.config_yaml)) {
    TW_RETURN_IF_ERROR(store_.SetRunValue(store::RunValues::kConfig, run.run_id(), key, value));
    JsonNode node;
    if (decode::ParseJson(value, &node).ok()) ConfigHParams(key, node, 0, &hparams);
  }
  for (const auto& p : hparams) TW_RETURN_IF_ERROR(store_.UpsertHParam(run.run_id(), p));
  if (!files.summary_json.empty()) {
    Result<decode::KeyValues> summary = decode::ParseSummaryJson(files.summary_json);
    if (!summary.ok())
      return store_.InsertError(std::nullopt, dir + "/wandb-summary.json", 0, 0, "bad_summary",
                                summary.status().message());
    for (const auto& [key, value] : *summary)
      TW_RETURN_IF_ERROR(store_.SetRunValue(store::RunValues::kSummary, run.run_id(), key, value));
  }
  return Status::Ok();
}

}  // namespace tw::ingest
