// A hand-written decoder for wandb_internal.Record (W&B's `.wandb` transaction log) that
// reads the fields trainwatch uses and skips the rest. Field numbers are W&B's
// (wandb/proto/wandb_internal.proto); proto/wandb_record.proto restates the subset. Like
// decode::Event the result is a view into the record bytes, meant to be reused.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace tw::wandb {

enum class RecordKind : uint8_t {
  kNone = 0, kHistory, kSummary, kOutput, kConfig, kFiles, kStats, kArtifact, kTbRecord,
  kAlert, kTelemetry, kMetric, kOutputRaw, kRun, kExit, kFinal, kHeader, kFooter,
  kPreempting, kOther,
};
const char* RecordKindName(RecordKind k);

// One key/value of a history row, stats sample, config or summary update. The key is `key`
// (older writers) or the path `nested_key` (core writes every leaf so, even flat ones):
// parts [first, first+count) of Record::parts.
struct Item {
  std::string_view key;
  uint32_t first = 0, count = 0;
  std::string_view value_json;
  bool removed = false;  // config/summary `remove` entries
};

struct Record {
  int64_t num = 0;  // 1..N without gaps from SDK 0.13.8 on; 0 when the writer left it out
  RecordKind kind = RecordKind::kNone;
  std::vector<Item> items;         // history, stats, config, summary (and run.config)
  std::vector<std::string_view> parts;  // nested_key parts of the items
  bool has_step = false;                // history: HistoryStep present
  int64_t step = 0;
  double timestamp = 0;                 // stats, output: google.protobuf.Timestamp
  // run
  std::string_view run_id, entity, project, display_name, run_group, job_type, host;
  double start_time = 0;
  int64_t starting_step = 0;
  bool resumed = false;
  // exit
  int32_t exit_code = 0;
  int32_t runtime = 0;
  // header (version_info.producer) or telemetry (cli_version)
  std::string_view version;
  // metric (define_metric)
  std::string_view metric_name, metric_glob, step_metric;
  bool step_sync = false;
  int32_t goal = 0;  // 1 minimize, 2 maximize
  // alert
  std::string_view alert_title, alert_text, alert_level;
  // tbrecord
  std::string_view tb_log_dir;
  // output / output_raw
  std::string_view line;

  void Clear();
};

// Decodes `bytes` into `*out` (cleared first). A Corrupt status names the message that did
// not parse; the caller adds the file and offset.
Status DecodeRecord(std::string_view bytes, Record* out);

// The item's key as W&B's UI names it: `key`, or the nested parts joined with '.'.
void ItemName(const Record& r, const Item& item, std::string* out);

}  // namespace tw::wandb
