// GET /api/series/{id}: a scalar series' points, downsampled by M4 to the pixel width.
#include <boost/json.hpp>

#include "web/api.h"
#include "web/downsample.h"

namespace tw::web {
namespace json = boost::json;

namespace {
constexpr int64_t kMaxWidth = 20000;

json::object PointJson(const Point& p, bool with_superseded) {
  json::object o;
  o["step"] = p.step;
  o["value"] = ClassedValue(p.value_class, p.value);
  o["wall"] = Number(p.wall);
  if (with_superseded) o["superseded"] = p.superseded;
  return o;
}
}  // namespace

Answer AnswerSeries(const Target& t, store::Db& db, int64_t series_id) {
  std::optional<Answer> bad;
  const auto width = IntParam(t, "width", 1, kMaxWidth, 1000, &bad);
  const auto from = IntParam(t, "from", INT64_MIN, INT64_MAX, INT64_MIN, &bad);
  const auto to = IntParam(t, "to", INT64_MIN, INT64_MAX, INT64_MAX, &bad);
  const auto superseded = IntParam(t, "superseded", 0, 1, 0, &bad);
  if (bad) return *bad;
  if (*from > *to) return BadParameter("from", "must not be after 'to'");

  Result<store::Stmt> head = db.Prepare("SELECT run_id, tag, kind FROM series WHERE series_id = ?1");
  if (!head.ok()) return StoreError(head.status());
  Result<bool> found = head->Bind(1, series_id).Step();
  if (!found.ok()) return StoreError(found.status());
  if (!*found) return ErrorAnswer(404, "no series " + std::to_string(series_id));
  if (head->Text(2) != "scalar")
    return BadParameter("id", "series " + std::to_string(series_id) + " is a " + head->Text(2) +
                                  " series; only scalar series have points here");

  // ?4 = 1 takes superseded points too.
  const char* where = "FROM scalars WHERE series_id = ?1 AND step BETWEEN ?2 AND ?3 AND (?4 OR superseded = 0)";
  Result<store::Stmt> range = db.Prepare(std::string("SELECT count(*), min(step), max(step) ") + where);
  if (!range.ok()) return StoreError(range.status());
  range->Bind(1, series_id).Bind(2, *from).Bind(3, *to).Bind(4, *superseded);
  if (Result<bool> r = range->Step(); !r.ok()) return StoreError(r.status());
  const int64_t total = range->Int(0), lo = range->Int(1), hi = range->Int(2);

  Result<store::Stmt> rows = db.Prepare(std::string("SELECT step, wall_time, value, value_class, superseded ") +
                                        where + " ORDER BY step, source_id, offset, vidx");
  if (!rows.ok()) return StoreError(rows.status());
  rows->Bind(1, series_id).Bind(2, *from).Bind(3, *to).Bind(4, *superseded);
  const bool downsample = total > 4 * *width;
  M4 m4(lo, hi, *width);
  std::vector<Point> all;
  const Status st = rows->EachRow([&] {
    Point p{rows->Int(0), rows->Real(1), rows->Real(2), static_cast<int>(rows->Int(3)), rows->Int(4) != 0};
    if (downsample) m4.Add(p);
    else all.push_back(p);
  });
  if (!st.ok()) return StoreError(st);
  const std::vector<Point> points = downsample ? m4.Finish() : std::move(all);

  json::array out;
  out.reserve(points.size());
  for (const Point& p : points) out.push_back(PointJson(p, *superseded != 0));
  json::object o;
  o["series_id"] = series_id;
  o["run_id"] = head->Int(0);
  o["tag"] = head->Text(1);
  o["width"] = *width;
  o["total"] = total;
  o["downsampled"] = downsample;
  o["points"] = std::move(out);
  return {200, std::move(o)};
}

Result<json::array> Sparkline(store::Db& db, int64_t series_id, int64_t width) {
  Result<store::Stmt> range = db.Prepare(
      "SELECT min(step), max(step) FROM scalars WHERE series_id = ?1 AND superseded = 0");
  if (!range.ok()) return range.status();
  range->Bind(1, series_id);
  if (Result<bool> r = range->Step(); !r.ok()) return r.status();
  json::array out;
  if (range->IsNull(0)) return out;
  Result<store::Stmt> rows = db.Prepare(
      "SELECT step, value, value_class FROM scalars WHERE series_id = ?1 AND superseded = 0 "
      "ORDER BY step, source_id, offset, vidx");
  if (!rows.ok()) return rows.status();
  rows->Bind(1, series_id);
  M4 m4(range->Int(0), range->Int(1), width);
  TW_RETURN_IF_ERROR(rows->EachRow([&] {
    m4.Add(Point{rows->Int(0), 0, rows->Real(1), static_cast<int>(rows->Int(2)), false});
  }));
  for (const Point& p : m4.Finish()) out.push_back(json::array{p.step, ClassedValue(p.value_class, p.value)});
  return out;
}

}  // namespace tw::web
