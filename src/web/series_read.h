// Reading one series of the store without scanning it, for the API's long series (millions of
// points): its step range, the first live point at or after a step, its first non-finite point.
// Each is one or two index lookups. Not thread-safe: one per request's connection.
#pragma once

#include <cstdint>
#include <optional>

#include "base/status.h"
#include "store/db.h"
#include "web/downsample.h"

namespace tw::web {

struct StepRange {
  int64_t lo = 0, hi = 0;
  bool any = false;  // false: no point in the range
};
// The first and last step of a series within [from, to], live points or not.
Result<StepRange> Range(store::Db& db, int64_t series_id, int64_t from, int64_t to);

// The first live (not superseded) point at or after a step: only finite ones, or any.
class Seeker {
 public:
  Seeker(store::Db& db, int64_t series_id, bool finite_only)
      : db_(db), series_id_(series_id), finite_only_(finite_only) {}
  Result<std::optional<Point>> At(int64_t step);

 private:
  store::Db& db_;
  int64_t series_id_;
  bool finite_only_;
  std::optional<store::Stmt> at_;  // prepared at the first seek
};

// The series' first live NaN or infinity: a lookup in the partial index of non-finite points
// (store version 14; SQLite's planner prefers the primary key unless told), or a scan on a store
// from before it (read by `trainwatch web` without migrating).
Result<std::optional<Point>> FirstNonFinite(store::Db& db, int64_t series_id);

}  // namespace tw::web
