// MLflow's SQLite tracking store (mlflow.db, its default backend now), read-only, into the
// store: each MLflow run a trainwatch run named "<the database's path>/<experiment>/<run name>"
// (relative to the root, as every run is), its metrics (is_nan rows as NaN) as points at their
// step with their timestamp as wall time, its params as hyperparameters, its tags as config
// values, its status and end time as summary values.
//
// Incremental and exactly once: the metrics rows are read in rowid order past the highest
// rowid read, which is committed as the source's offset with the points (a run MLflow deletes
// keeps its points here). A database MLflow writes in place is the same source: its identity is
// the file's device and inode, not its bytes.
//
// The schema is checked before a row is read: MLflow's alembic_version, and the tables and
// columns read here, each a real table (a hostile file's view could run anything); SQLite's
// trusted_schema is off. A database that lacks them is refused, naming its revision and what is
// missing (docs/sources.md).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "store/db.h"

namespace tw::ingest {

// The tables and columns read, as (table, "col,col,...").
extern const std::vector<std::pair<std::string, std::string>> kMlflowTables;

// Opens `path` read-only and checks it is an MLflow tracking store trainwatch can read.
// kInvalidArgument (the message says what is wrong, with the revision) when it is not.
Result<std::unique_ptr<store::Db>> OpenMlflowDb(const std::string& path);

// One metric row of mlflow.db, with what names its run.
struct MlflowRow {
  int64_t rowid = 0;
  std::string run_uuid, experiment, run_name, key;
  double value = 0, wall = 0;
  int64_t step = 0;
};

// Up to `limit` metric rows past `after` (rowid), in rowid order.
Result<std::vector<MlflowRow>> MlflowRowsAfter(store::Db& db, int64_t after, int64_t limit);

// A run's facts: params, tags, status, start and end time.
struct MlflowRunFacts {
  std::string run_uuid, run_name, experiment, status;
  std::optional<double> start_time, end_time;
  std::vector<std::pair<std::string, std::string>> params, tags;
};
Result<MlflowRunFacts> MlflowFacts(store::Db& db, const std::string& run_uuid);

}  // namespace tw::ingest
