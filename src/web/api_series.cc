// GET /api/series/{id}: a scalar series' points, downsampled by M4 to the pixel width.
#include <algorithm>
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

  // ?4 = 1 takes superseded points too. One pass over the points: the buckets' edges come from
  // the range's first and last steps (index lookups), the count from the pass itself, and the
  // raw points are kept only while they would fit unsampled.
  const char* where = "FROM scalars WHERE series_id = ?1 AND step BETWEEN ?2 AND ?3 AND (?4 OR superseded = 0)";
  Result<StepRange> range = Range(db, series_id, *from, *to);
  if (!range.ok()) return StoreError(range.status());
  Result<store::Stmt> rows = db.Prepare(std::string("SELECT step, wall_time, value, value_class, superseded ") +
                                        where + " ORDER BY step, source_id, offset, vidx");
  if (!rows.ok()) return StoreError(rows.status());
  rows->Bind(1, series_id).Bind(2, *from).Bind(3, *to).Bind(4, *superseded);
  const size_t room = static_cast<size_t>(4 * *width);
  M4 m4(range->lo, range->hi, *width);
  std::vector<Point> all;
  int64_t total = 0;
  const Status st = rows->EachRow([&] {
    Point p{rows->Int(0), rows->Real(1), rows->Real(2), static_cast<int>(rows->Int(3)), rows->Int(4) != 0};
    m4.Add(p);
    if (++total <= static_cast<int64_t>(room)) all.push_back(p);
  });
  if (!st.ok()) return StoreError(st);
  const bool downsample = total > static_cast<int64_t>(room);
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

// A sparkline is read at every refresh of the runs page, for every run: past this many steps
// it samples instead of scanning.
constexpr int64_t kSparklineScanSteps = 100000;

Result<json::array> Sparkline(store::Db& db, int64_t series_id, int64_t width) {
  Result<StepRange> range = Range(db, series_id, INT64_MIN, INT64_MAX);
  if (!range.ok()) return range.status();
  M4 m4(range->lo, range->hi, width);
  if (range->hi - range->lo <= kSparklineScanSteps) {
    Result<store::Stmt> rows = db.Prepare(
        "SELECT step, value, value_class FROM scalars WHERE series_id = ?1 AND superseded = 0 "
        "ORDER BY step, source_id, offset, vidx");
    if (!rows.ok()) return rows.status();
    rows->Bind(1, series_id);
    TW_RETURN_IF_ERROR(rows->EachRow([&] {
      m4.Add(Point{rows->Int(0), 0, rows->Real(1), static_cast<int>(rows->Int(2)), false});
    }));
  } else {
    // A long series: the first point at each of 8 steps per bucket (index seeks, not a scan),
    // so the trend is there; its first non-finite point (the partial index) joins them so a
    // NaN still shows. A spike between samples is left to the run's page, which scans.
    Seeker at(db, series_id, /*finite_only=*/false);
    std::vector<Point> samples;
    const int64_t n = 8 * width;
    for (int64_t k = 0; k <= n; ++k) {
      Result<std::optional<Point>> p =
          at.At(range->lo + static_cast<int64_t>((range->hi - range->lo) * (static_cast<double>(k) / n)));
      if (!p.ok()) return p.status();
      if (*p && (samples.empty() || (*p)->step > samples.back().step)) samples.push_back(**p);
    }
    Result<std::optional<Point>> nan = FirstNonFinite(db, series_id);
    if (!nan.ok()) return nan.status();
    if (*nan) {
      auto it = std::lower_bound(samples.begin(), samples.end(), (*nan)->step,
                                 [](const Point& a, int64_t s) { return a.step < s; });
      if (it != samples.end() && it->step == (*nan)->step) *it = **nan;
      else samples.insert(it, **nan);
    }
    for (const Point& p : samples) m4.Add(p);
  }
  json::array out;
  for (const Point& p : m4.Finish()) out.push_back(json::array{p.step, ClassedValue(p.value_class, p.value)});
  return out;
}

}  // namespace tw::web
