#include "wandb/testing/log_writer.h"

#include <zlib.h>

#include <cmath>
#include <cstdio>
#include <stdexcept>

#include "wandb_record.pb.h"

namespace tw::testing {

namespace wp = tw::wandb_proto;

std::string WandbFileHeader(uint8_t version) {
  return std::string(":W&B\xE1\xBE", 6) + static_cast<char>(version);
}

uint32_t WandbChunkCrc(uint8_t type, std::string_view payload) {
  uLong crc = crc32(0L, &type, 1);
  return static_cast<uint32_t>(
      crc32_z(crc, reinterpret_cast<const Bytef*>(payload.data()), payload.size()));
}

std::string WandbChunk(uint8_t type, std::string_view payload) {
  if (payload.size() > 0xFFFF) throw std::invalid_argument("chunk payload over 64 KiB");
  const uint32_t crc = WandbChunkCrc(type, payload);
  std::string out;
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((crc >> (8 * i)) & 0xFF));
  out.push_back(static_cast<char>(payload.size() & 0xFF));
  out.push_back(static_cast<char>((payload.size() >> 8) & 0xFF));
  out.push_back(static_cast<char>(type));
  out.append(payload);
  return out;
}

WandbLogWriter::WandbLogWriter(WandbWriterOptions options) : options_(options) {
  if (options_.origin != 0 && options_.origin != kWandbFileHeader)
    throw std::invalid_argument("block origin must be 0 or 7");
  bytes_ = WandbFileHeader(options_.version);
}

uint64_t WandbLogWriter::BlockEnd(uint64_t pos) const {
  const uint64_t o = options_.origin;
  return o + ((pos - o) / kWandbBlock + 1) * kWandbBlock;
}

uint64_t WandbLogWriter::LeftInBlock() const { return BlockEnd(bytes_.size()) - bytes_.size(); }

size_t WandbLogWriter::Add(std::string_view record) {
  // leveldb::log::Writer::AddRecord, with block_offset_ = (size - origin) % kBlockSize.
  Record rec;
  rec.data = std::string(record);
  rec.first_chunk = chunks_.size();
  size_t left = record.size();
  const char* ptr = record.data();
  bool begin = true;
  do {
    const uint64_t leftover = LeftInBlock();
    if (leftover < kWandbChunkHeader) {
      // Fill the trailer with zeros; the next block starts right after.
      bytes_.append(leftover, '\0');
    }
    const uint64_t avail = LeftInBlock() - kWandbChunkHeader;
    const size_t fragment = left < avail ? left : static_cast<size_t>(avail);
    const bool end = left == fragment;
    const uint8_t type = begin && end ? 1 : begin ? 2 : end ? 4 : 3;  // FULL FIRST LAST MIDDLE
    chunks_.push_back({bytes_.size(), type, fragment});
    bytes_ += WandbChunk(type, std::string_view(ptr, fragment));
    ptr += fragment;
    left -= fragment;
    begin = false;
  } while (left > 0);
  rec.chunk_count = chunks_.size() - rec.first_chunk;
  records_.push_back(std::move(rec));
  return records_.size() - 1;
}

// ---------------------------------------------------------------------------------------

WandbKV Flat(std::string key, std::string value_json) {
  return {{std::move(key)}, std::move(value_json), false};
}
WandbKV Nested(std::vector<std::string> path, std::string value_json) {
  return {std::move(path), std::move(value_json), true};
}

namespace {

template <typename Item>
void SetItem(const WandbKV& kv, Item* item) {
  if (kv.nested) {
    for (const auto& p : kv.path) item->add_nested_key(p);
  } else {
    item->set_key(kv.path.at(0));
  }
  item->set_value_json(kv.value_json);
}

void SetTimestamp(double t, wp::Timestamp* ts) {
  const double secs = std::floor(t);
  ts->set_seconds(static_cast<int64_t>(secs));
  ts->set_nanos(static_cast<int32_t>(std::llround((t - secs) * 1e9)));
}

std::string Serialize(const wp::Record& r) {
  std::string out;
  if (!r.SerializeToString(&out)) throw std::runtime_error("Record does not serialize");
  return out;
}

wp::Record WithNum(int64_t num) {
  wp::Record r;
  if (num) r.set_num(num);
  return r;
}

}  // namespace

std::string WandbHistoryRecord(int64_t num, const std::vector<WandbKV>& items,
                               std::optional<int64_t> step) {
  wp::Record r = WithNum(num);
  wp::HistoryRecord* h = r.mutable_history();
  for (const auto& kv : items) SetItem(kv, h->add_item());
  if (step) h->mutable_step()->set_num(*step);
  return Serialize(r);
}

std::string PyJsonNumber(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
  if (v == std::floor(v) && std::fabs(v) < 1e15) return std::to_string(static_cast<int64_t>(v));
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

std::string WandbPythonRow(int64_t num, int64_t step, double timestamp,
                           const std::vector<WandbKV>& items) {
  std::vector<WandbKV> all = items;
  all.push_back(Flat("_step", std::to_string(step)));
  all.push_back(Flat("_runtime", PyJsonNumber(timestamp - 1.7e9)));
  all.push_back(Flat("_timestamp", PyJsonNumber(timestamp)));
  return WandbHistoryRecord(num, all);
}

std::string WandbStatsRecord(int64_t num, double timestamp,
                             const std::vector<std::pair<std::string, std::string>>& items) {
  wp::Record r = WithNum(num);
  wp::StatsRecord* s = r.mutable_stats();
  SetTimestamp(timestamp, s->mutable_timestamp());
  for (const auto& [k, v] : items) {
    wp::StatsItem* it = s->add_item();
    it->set_key(k);
    it->set_value_json(v);
  }
  return Serialize(r);
}

std::string WandbRunRecord(int64_t num, const WandbRunInfo& run) {
  wp::Record r = WithNum(num);
  wp::RunRecord* x = r.mutable_run();
  x->set_run_id(run.run_id);
  x->set_entity(run.entity);
  x->set_project(run.project);
  x->set_display_name(run.display_name);
  if (run.start_time > 0) SetTimestamp(run.start_time, x->mutable_start_time());
  x->set_starting_step(run.starting_step);
  x->set_resumed(run.resumed);
  for (const auto& kv : run.config) SetItem(kv, x->mutable_config()->add_update());
  return Serialize(r);
}

std::string WandbExitRecord(int64_t num, int32_t exit_code, int32_t runtime) {
  wp::Record r = WithNum(num);
  r.mutable_exit()->set_exit_code(exit_code);
  r.mutable_exit()->set_runtime(runtime);
  return Serialize(r);
}

std::string WandbMetricRecord(int64_t num, const std::string& name, const std::string& glob,
                              const std::string& step_metric, bool step_sync, int32_t goal) {
  wp::Record r = WithNum(num);
  wp::MetricRecord* m = r.mutable_metric();
  m->set_name(name);
  m->set_glob_name(glob);
  m->set_step_metric(step_metric);
  if (step_sync) m->mutable_options()->set_step_sync(true);
  m->set_goal(goal);
  return Serialize(r);
}

std::string WandbConfigRecord(int64_t num, const std::vector<WandbKV>& updates,
                              const std::vector<WandbKV>& removes) {
  wp::Record r = WithNum(num);
  for (const auto& kv : updates) SetItem(kv, r.mutable_config()->add_update());
  for (const auto& kv : removes) SetItem(kv, r.mutable_config()->add_remove());
  if (updates.empty() && removes.empty()) r.mutable_config();
  return Serialize(r);
}

std::string WandbSummaryRecord(int64_t num, const std::vector<WandbKV>& updates,
                               const std::vector<WandbKV>& removes) {
  wp::Record r = WithNum(num);
  for (const auto& kv : updates) SetItem(kv, r.mutable_summary()->add_update());
  for (const auto& kv : removes) SetItem(kv, r.mutable_summary()->add_remove());
  if (updates.empty() && removes.empty()) r.mutable_summary();
  return Serialize(r);
}

std::string WandbHeaderRecord(int64_t num, const std::string& producer) {
  wp::Record r = WithNum(num);
  r.mutable_header()->mutable_version_info()->set_producer(producer);
  return Serialize(r);
}

std::string WandbTelemetryRecord(int64_t num, const std::string& cli_version) {
  wp::Record r = WithNum(num);
  r.mutable_telemetry()->set_cli_version(cli_version);
  return Serialize(r);
}

std::string WandbAlertRecord(int64_t num, const std::string& title, const std::string& text,
                             const std::string& level) {
  wp::Record r = WithNum(num);
  r.mutable_alert()->set_title(title);
  r.mutable_alert()->set_text(text);
  r.mutable_alert()->set_level(level);
  return Serialize(r);
}

std::string WandbPreemptingRecord(int64_t num) {
  wp::Record r = WithNum(num);
  r.mutable_preempting();
  return Serialize(r);
}

std::string WandbFinalRecord(int64_t num) {
  wp::Record r = WithNum(num);
  r.mutable_final();
  return Serialize(r);
}

std::string WandbOutputRecord(int64_t num, double timestamp, const std::string& line) {
  wp::Record r = WithNum(num);
  SetTimestamp(timestamp, r.mutable_output()->mutable_timestamp());
  r.mutable_output()->set_output_type(1);
  r.mutable_output()->set_line(line);
  return Serialize(r);
}

namespace {
std::string JsonArray(const std::vector<double>& v) {
  std::string out = "[";
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) out += ", ";
    out += PyJsonNumber(v[i]);
  }
  return out + "]";
}
}  // namespace

std::vector<WandbKV> WandbHistogramLeaves(const std::vector<std::string>& path,
                                          const std::vector<double>& values,
                                          const std::vector<double>& bins) {
  auto leaf = [&](const std::string& last, std::string json) {
    std::vector<std::string> p = path;
    p.push_back(last);
    return Nested(std::move(p), std::move(json));
  };
  return {leaf("_type", "\"histogram\""), leaf("values", JsonArray(values)),
          leaf("bins", JsonArray(bins))};
}

std::string WandbHistogramJson(const std::vector<double>& values, const std::vector<double>& bins) {
  return "{\"_type\": \"histogram\", \"values\": " + JsonArray(values) +
         ", \"bins\": " + JsonArray(bins) + "}";
}

}  // namespace tw::testing
