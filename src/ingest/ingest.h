// One-shot ingest of logdirs: discover runs, read every event file of every run in name
// order from its committed offset, and commit as it goes. The CLI's `ingest` command and
// (later) the daemon's backfill both call this.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "base/status.h"
#include "ingest/file_ingester.h"
#include "store/store.h"

namespace tw::ingest {

struct Progress {
  int64_t files_done = 0, files_total = 0;
  int64_t bytes_done = 0, bytes_total = 0;
  int64_t points = 0;
};

struct Summary {
  int64_t runs = 0;
  int64_t files = 0;
  Totals totals;
  std::vector<std::string> warnings;  // paths that could not be used at all
};

// Ingests each path (a logdir, or a single event file whose directory becomes the run "."; a
// single file of no known format is read as a console log, the run named by its name without
// the extension).
// Returns a non-ok Status only when the store fails; problems with inputs land in
// `summary->warnings` and the ingest_errors table.
Status IngestPaths(store::Store& store, const std::vector<std::string>& paths,
                   const IngestOptions& options, Summary* summary,
                   const std::function<void(const Progress&)>& on_progress = {});

}  // namespace tw::ingest
