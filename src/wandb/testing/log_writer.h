// A test-only writer of W&B `.wandb` transaction logs: the 7-byte file header, then records
// cut into chunks across 32 KiB blocks exactly as LevelDB's log::Writer::AddRecord does
// (leveldb/db/log_writer.cc), with either block origin; and builders of wandb_internal.Record
// messages through the generated proto (proto/wandb_record.proto). trainwatch itself never
// writes these files.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tw::testing {

// ---------------------------------------------------------------------------------------
// Framing.

inline constexpr uint64_t kWandbBlock = 32768;
inline constexpr uint64_t kWandbChunkHeader = 7;
inline constexpr uint64_t kWandbFileHeader = 7;

// ":W&B" | u16 LE 0xBEE1 | version.
std::string WandbFileHeader(uint8_t version = 0);
// zlib's CRC-32 of the type byte followed by the payload, as the chunk header carries it.
uint32_t WandbChunkCrc(uint8_t type, std::string_view payload);
// One chunk: CRC | u16 LE length | type | payload, with the CRC computed.
std::string WandbChunk(uint8_t type, std::string_view payload);

struct WandbWriterOptions {
  uint64_t origin = 0;  // where blocks are counted from: 0, or 7 (Go core, SDK 0.16-0.17.5)
  uint8_t version = 0;  // the header's version byte
};

class WandbLogWriter {
 public:
  // One chunk as written: where its header starts, its type and its payload's length.
  struct Chunk {
    uint64_t offset = 0;
    uint8_t type = 0;
    uint64_t length = 0;
    uint64_t end() const { return offset + kWandbChunkHeader + length; }
  };
  // One record: its data, and its chunks (indices into chunks()).
  struct Record {
    std::string data;
    size_t first_chunk = 0, chunk_count = 0;
  };

  explicit WandbLogWriter(WandbWriterOptions options = {});

  // Appends one record as LevelDB's AddRecord does: pads a block tail of fewer than 7 bytes
  // with zeros, and cuts the record into FULL, or FIRST, MIDDLE..., LAST (a FIRST may carry
  // 0 bytes when exactly 7 bytes are left). Returns the record's index.
  size_t Add(std::string_view record);

  const std::string& bytes() const { return bytes_; }
  const std::vector<Chunk>& chunks() const { return chunks_; }
  const std::vector<Record>& records() const { return records_; }
  // Offset of a record's first chunk (what the reader reports as its offset), and the end of
  // its last chunk.
  uint64_t RecordOffset(size_t i) const { return chunks_[records_[i].first_chunk].offset; }
  uint64_t RecordEnd(size_t i) const {
    return chunks_[records_[i].first_chunk + records_[i].chunk_count - 1].end();
  }
  // Bytes left in the current block (a multiple of kWandbBlock counted from the origin).
  uint64_t LeftInBlock() const;
  // Where the block holding file offset `pos` ends.
  uint64_t BlockEnd(uint64_t pos) const;
  const WandbWriterOptions& options() const { return options_; }

 private:
  WandbWriterOptions options_;
  std::string bytes_;
  std::vector<Chunk> chunks_;
  std::vector<Record> records_;
};

// ---------------------------------------------------------------------------------------
// Records (serialized wandb_internal.Record). `num` 0 leaves Record.num out, as writers
// before SDK 0.13.8 did.

// A key/value of a history row, stats sample, config or summary: a flat `key` (Python SDK),
// or the path `nested_key` (wandb-core writes every leaf so).
struct WandbKV {
  std::vector<std::string> path;  // one element: the key
  std::string value_json;
  bool nested = false;            // write `nested_key` rather than `key`
};
// Flat key (Python style).
WandbKV Flat(std::string key, std::string value_json);
// nested_key path (core style).
WandbKV Nested(std::vector<std::string> path, std::string value_json);

// A history row. `step` sets HistoryStep (core writes it; Python rows carry "_step" items).
std::string WandbHistoryRecord(int64_t num, const std::vector<WandbKV>& items,
                               std::optional<int64_t> step = std::nullopt);
// A Python-style history row: the items plus "_step", "_runtime" and "_timestamp".
std::string WandbPythonRow(int64_t num, int64_t step, double timestamp,
                           const std::vector<WandbKV>& items);
// A system-metrics sample at `timestamp` (unix seconds, nanoseconds kept).
std::string WandbStatsRecord(int64_t num, double timestamp,
                             const std::vector<std::pair<std::string, std::string>>& items);

struct WandbRunInfo {
  std::string run_id, entity, project, display_name;
  double start_time = 0;
  int64_t starting_step = 0;
  bool resumed = false;
  std::vector<WandbKV> config;  // run.config updates
};
std::string WandbRunRecord(int64_t num, const WandbRunInfo& run);
std::string WandbExitRecord(int64_t num, int32_t exit_code, int32_t runtime);
// define_metric: `name` or `glob` (one of them), against `step_metric`.
std::string WandbMetricRecord(int64_t num, const std::string& name, const std::string& glob,
                              const std::string& step_metric, bool step_sync = false,
                              int32_t goal = 0);
std::string WandbConfigRecord(int64_t num, const std::vector<WandbKV>& updates,
                              const std::vector<WandbKV>& removes = {});
std::string WandbSummaryRecord(int64_t num, const std::vector<WandbKV>& updates,
                               const std::vector<WandbKV>& removes = {});
// HeaderRecord with version_info.producer (SDK >= 0.15).
std::string WandbHeaderRecord(int64_t num, const std::string& producer);
std::string WandbTelemetryRecord(int64_t num, const std::string& cli_version);
std::string WandbAlertRecord(int64_t num, const std::string& title, const std::string& text,
                             const std::string& level);
std::string WandbPreemptingRecord(int64_t num);
std::string WandbFinalRecord(int64_t num);
std::string WandbOutputRecord(int64_t num, double timestamp, const std::string& line);

// Core-style leaves of a histogram logged under `path`: [path..., "_type"], [path...,
// "values"], [path..., "bins"].
std::vector<WandbKV> WandbHistogramLeaves(const std::vector<std::string>& path,
                                          const std::vector<double>& values,
                                          const std::vector<double>& bins);
// {"_type": "histogram", "values": [...], "bins": [...]} as Python writes it.
std::string WandbHistogramJson(const std::vector<double>& values, const std::vector<double>& bins);
// A JSON number as Python's json.dumps writes it (NaN, Infinity, -Infinity bare).
std::string PyJsonNumber(double v);

}  // namespace tw::testing
