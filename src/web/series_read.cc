#include "web/series_read.h"

#include <string>

namespace tw::web {
namespace {

Point PointAt(const store::Stmt& s) {
  return Point{s.Int(0), 0, s.Real(1), static_cast<int>(s.Int(2)), false};
}

}  // namespace

Result<StepRange> Range(store::Db& db, int64_t series_id, int64_t from, int64_t to) {
  StepRange r;
  // Two statements: SQLite answers a lone min() or max() from the index, both at once by a scan.
  for (const char* agg : {"min", "max"}) {
    Result<store::Stmt> s = db.Prepare(std::string("SELECT ") + agg +
                                       "(step) FROM scalars WHERE series_id = ?1 AND step BETWEEN ?2 AND ?3");
    if (!s.ok()) return s.status();
    s->Bind(1, series_id).Bind(2, from).Bind(3, to);
    Result<bool> row = s->Step();
    if (!row.ok()) return row.status();
    if (s->IsNull(0)) return r;
    (agg[1] == 'i' ? r.lo : r.hi) = s->Int(0);
    r.any = true;
  }
  return r;
}

Result<std::optional<Point>> Seeker::At(int64_t step) {
  if (!at_) {
    Result<store::Stmt> s = db_.Prepare(
        std::string("SELECT step, value, value_class FROM scalars WHERE series_id = ?1 AND step >= ?2 "
                    "AND superseded = 0 ") +
        (finite_only_ ? "AND value_class = 0 " : "") + "ORDER BY step LIMIT 1");
    if (!s.ok()) return s.status();
    at_.emplace(std::move(*s));
  }
  at_->Reset();
  at_->Bind(1, series_id_).Bind(2, step);
  Result<bool> row = at_->Step();
  if (!row.ok()) return row.status();
  if (!*row) return std::optional<Point>();
  return std::optional<Point>(PointAt(*at_));
}

Result<std::optional<Point>> FirstNonFinite(store::Db& db, int64_t series_id) {
  const std::string tail = " WHERE series_id = ?1 AND superseded = 0 AND value_class <> 0 ORDER BY step LIMIT 1";
  Result<store::Stmt> s = db.Prepare("SELECT step, value, value_class FROM scalars INDEXED BY scalars_nonfinite" + tail);
  if (!s.ok()) s = db.Prepare("SELECT step, value, value_class FROM scalars" + tail);
  if (!s.ok()) return s.status();
  s->Bind(1, series_id);
  Result<bool> row = s->Step();
  if (!row.ok()) return row.status();
  if (!*row) return std::optional<Point>();
  return std::optional<Point>(PointAt(*s));
}

}  // namespace tw::web
