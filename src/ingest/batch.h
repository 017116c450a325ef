// FileIngester's bookkeeping for the file it is reading, shared by the ingesters of every
// format through PointSink. Internal to src/ingest.
#pragma once

#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "ingest/file_ingester.h"

namespace tw::ingest {

// The open transaction's bookkeeping for one file.
class FileIngester::Batch {
 public:
  store::SourceRow source;
  Totals totals;
  store::RunCounters counters;
  int64_t points_since_commit = 0;
  // The bytes being read (owned by IngestFile's caller or IngestFile): each commit
  // fingerprints the bytes before its offset from them (SourceRow::tail_crc).
  read::ByteSource* bytes = nullptr;
  // W&B's core writes a summary record after every history row: only each key's last value
  // of a batch is written, at the commit (nullopt: removed).
  std::unordered_map<std::string, std::optional<std::string>> summary;
};

// A config value as hparams (wandb_ingester.cc): scalars and strings, nested dicts flattened
// into dotted keys, old W&B SDKs' {"desc", "value"} wrappers unwrapped. Used for every
// source's hyperparameters (W&B config, Lightning's hparams.yaml).
void ConfigHParams(const std::string& key, const decode::JsonNode& n, int depth,
                   std::vector<decode::HParam>* out);

}  // namespace tw::ingest
