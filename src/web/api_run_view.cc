// What a run's page draws beyond its raw series: the roles of its series (as diagnosis infers
// them), the marks on its curves, and its files with their read state and errors.
#include <algorithm>
#include <boost/json.hpp>
#include <cmath>
#include <optional>
#include <set>

#include "diagnose/role_inference.h"
#include "web/api.h"

namespace tw::web {
namespace json = boost::json;

namespace {

// An LR logged at every step moves a little at each (warmup, cosine): that is the schedule, not
// a change worth a mark. A step change (step decay, a restart's new LR) moves it by this much,
// from a value that held still before it.
constexpr double kLrJump = 0.25;
constexpr double kLrStill = 1e-6;
// More jumps than this is a schedule logged sparsely, not a few decisions: no marks.
constexpr size_t kMaxLrMarks = 24;
// Epoch boundaries past this many are thinned evenly (a mark per pixel is no longer a mark).
constexpr size_t kMaxEpochMarks = 200;

json::object Marker(const char* kind, int64_t step, const std::string& label, int64_t series_id = 0) {
  return {{"kind", kind}, {"step", step}, {"label", label}, {"series_id", series_id}};
}

// Where a series changes, found without reading it whole: a 2-million-step LR or epoch counter
// is read at kSamples evenly spaced steps (index seeks), and each change seen between two
// samples is pinned to its exact step by a binary search of seeks. Changes that come and go
// between two samples are not seen; the schedules and counters marked here hold for long.
// A short series is read whole.
class ChangeFinder {
 public:
  static constexpr int64_t kSamples = 1024;

  ChangeFinder(store::Db& db, int64_t series_id) : db_(db), series_id_(series_id), seek_(db, series_id, true) {}

  // The live finite points at up to kSamples steps (every point when the series is short).
  Result<std::vector<Point>> Sample() {
    Result<StepRange> range = Range(db_, series_id_, INT64_MIN, INT64_MAX);
    if (!range.ok()) return range.status();
    std::vector<Point> out;
    if (!range->any) return out;
    const int64_t lo = range->lo, hi = range->hi;
    if (hi - lo <= kSamples) {
      Result<store::Stmt> all = db_.Prepare(
          "SELECT step, value FROM scalars WHERE series_id = ?1 AND superseded = 0 AND value_class = 0 ORDER BY step");
      if (!all.ok()) return all.status();
      all->Bind(1, series_id_);
      TW_RETURN_IF_ERROR(all->EachRow([&] { out.push_back(Point{all->Int(0), 0, all->Real(1)}); }));
      return out;
    }
    for (int64_t k = 0; k <= kSamples; ++k) {
      Result<std::optional<Point>> p = seek_.At(lo + static_cast<int64_t>((hi - lo) * (static_cast<double>(k) / kSamples)));
      if (!p.ok()) return p.status();
      if (*p && (out.empty() || (*p)->step > out.back().step)) out.push_back(**p);
    }
    return out;
  }

  // The first point after `a`, up to `b`, whose value `same` no longer finds equal to a's.
  Result<Point> FirstChange(const Point& a, const Point& b, bool (*same)(double, double)) {
    Point found = b;
    int64_t lo = a.step + 1, hi = b.step - 1;
    while (lo <= hi) {
      const int64_t mid = lo + (hi - lo) / 2;
      Result<std::optional<Point>> p = seek_.At(mid);
      if (!p.ok()) return p.status();
      if (!*p || (*p)->step >= b.step) {
        hi = mid - 1;  // nothing between mid and b: the change is before mid, or at b
      } else if (same((*p)->value, a.value)) {
        lo = (*p)->step + 1;
      } else {
        found = **p;
        hi = mid - 1;
      }
    }
    return found;
  }

 private:
  store::Db& db_;
  int64_t series_id_;
  Seeker seek_;  // live finite points
};

bool SameEpoch(double a, double b) { return std::floor(a) == std::floor(b); }
bool SameValue(double a, double b) { return a == b; }

Status EpochMarks(store::Db& db, const diagnose::RoleAssignment& a, json::array& out) {
  ChangeFinder finder(db, a.series_id);
  Result<std::vector<Point>> pts = finder.Sample();
  if (!pts.ok()) return pts.status();
  std::vector<json::object> marks;
  for (size_t i = 1; i < pts->size(); ++i) {
    if (SameEpoch((*pts)[i].value, (*pts)[i - 1].value)) continue;
    Result<Point> at = finder.FirstChange((*pts)[i - 1], (*pts)[i], SameEpoch);
    if (!at.ok()) return at.status();
    const auto epoch = static_cast<int64_t>(std::floor(at->value));
    marks.push_back(Marker("epoch", at->step, "epoch " + std::to_string(epoch), a.series_id));
  }
  const size_t every = marks.size() > kMaxEpochMarks ? (marks.size() + kMaxEpochMarks - 1) / kMaxEpochMarks : 1;
  for (size_t i = 0; i < marks.size(); i += every) out.push_back(std::move(marks[i]));
  return Status::Ok();
}

Status LrMarks(store::Db& db, const diagnose::RoleAssignment& a, json::array& out) {
  // A jump of kLrJump or more from a value that held still over the two points (samples)
  // before it.
  ChangeFinder finder(db, a.series_id);
  Result<std::vector<Point>> pts = finder.Sample();
  if (!pts.ok()) return pts.status();
  std::vector<json::object> marks;
  for (size_t i = 2; i < pts->size() && marks.size() <= kMaxLrMarks; ++i) {
    const double earlier = (*pts)[i - 2].value, before = (*pts)[i - 1].value, after = (*pts)[i].value;
    const double scale = std::max(std::abs(before), std::abs(after));
    const bool held = std::abs(before - earlier) <= kLrStill * std::max(std::abs(before), std::abs(earlier));
    if (!(scale > 0 && held && std::abs(after - before) >= kLrJump * scale)) continue;
    Result<Point> at = finder.FirstChange((*pts)[i - 1], (*pts)[i], SameValue);
    if (!at.ok()) return at.status();
    char label[96];
    std::snprintf(label, sizeof label, "LR %.3g \u2192 %.3g", before, at->value);
    marks.push_back(Marker("lr_change", at->step, label, a.series_id));
  }
  if (marks.size() <= kMaxLrMarks)
    for (auto& m : marks) out.push_back(std::move(m));
  return Status::Ok();
}

Status BestMark(store::Db& db, const diagnose::RoleAssignment& a, json::array& out) {
  const int direction = diagnose::RoleDirection(a.role);
  if (direction == 0) return Status::Ok();
  Result<store::Stmt> s = db.Prepare(
      std::string("SELECT step, value FROM scalars WHERE series_id = ?1 AND superseded = 0 AND "
                  "value_class = 0 ORDER BY value ") + (direction > 0 ? "DESC" : "ASC") + ", step LIMIT 1");
  if (!s.ok()) return s.status();
  s->Bind(1, a.series_id);
  Result<bool> row = s->Step();
  if (!row.ok()) return row.status();
  if (*row) {
    char label[160];
    std::snprintf(label, sizeof label, "best %s %.4g", a.role.c_str(), s->Real(1));
    out.push_back(Marker("best_val", s->Int(0), label, a.series_id));
  }
  return Status::Ok();
}

}  // namespace

Result<std::vector<diagnose::RoleAssignment>> RunRoles(store::Db& db, int64_t run_id,
                                                       const std::vector<diagnose::RolePattern>& patterns) {
  const std::vector<int64_t> runs{run_id};
  Result<diagnose::RoleMap> map = diagnose::AssignRoles(db, patterns, &runs);
  if (!map.ok()) return map.status();
  std::vector<diagnose::RoleAssignment> out;
  for (auto& a : map->assignments)
    if (a.run_id == run_id) out.push_back(std::move(a));
  return out;
}

json::array RolesJson(const std::vector<diagnose::RoleAssignment>& roles) {
  json::array out;
  for (const auto& a : roles)
    out.push_back(json::object{{"role", a.role},
                               {"series_id", a.series_id},
                               {"tag", a.tag},
                               {"label", a.label.empty() ? a.tag : a.label},
                               {"run_id", a.source_run_id},
                               {"direction", diagnose::RoleDirection(a.role)},
                               {"confidence", a.confidence}});
  return out;
}

Result<json::array> RunMarkers(store::Db& db, int64_t run_id,
                               const std::vector<diagnose::RoleAssignment>& roles,
                               const json::array& findings) {
  json::array out;
  // The first point that is not a number, per scalar series of the run (a NaN loss is the mark
  // most wanted; a NaN anywhere else is worth seeing too): a lookup each (series_read.h).
  Result<store::Stmt> series = db.Prepare("SELECT series_id, tag FROM series WHERE run_id = ?1 AND kind = 'scalar'");
  if (!series.ok()) return series.status();
  series->Bind(1, run_id);
  Status inner = Status::Ok();
  TW_RETURN_IF_ERROR(series->EachRow([&] {
    Result<std::optional<Point>> nf = FirstNonFinite(db, series->Int(0));
    if (!nf.ok()) inner = nf.status();
    else if (*nf) out.push_back(Marker("nonfinite", (*nf)->step, "first non-finite " + series->Text(1), series->Int(0)));
  }));
  TW_RETURN_IF_ERROR(inner);
  // Restarts the ingester inferred (docs/format.md), one mark per step however many tags rewound
  // there: the points they superseded are drawn faded.
  Result<store::Stmt> rs = db.Prepare(
      "SELECT step, min(detail) FROM run_events WHERE run_id = ?1 AND kind = 'restart' AND step IS NOT NULL "
      "GROUP BY step ORDER BY step");
  if (!rs.ok()) return rs.status();
  rs->Bind(1, run_id);
  TW_RETURN_IF_ERROR(rs->EachRow([&] { out.push_back(Marker("restart", rs->Int(0), "restart: " + rs->Text(1))); }));
  for (const auto& a : roles) {
    if (a.role == "epoch") TW_RETURN_IF_ERROR(EpochMarks(db, a, out));
    else if (a.role == "lr") TW_RETURN_IF_ERROR(LrMarks(db, a, out));
    else if (a.role.starts_with("val_")) TW_RETURN_IF_ERROR(BestMark(db, a, out));
  }
  // The verdict's forecast: where the training loss's power-law fit lands (diagnose/verdict.h).
  for (const json::value& f : findings) {
    const json::object& o = f.as_object();
    if (o.at("rule").as_string() != "run_verdict" || o.at("state").as_string() != "firing") continue;
    const json::value* fc = o.at("evidence").is_object() ? o.at("evidence").as_object().if_contains("forecast") : nullptr;
    if (!fc || !fc->is_object()) continue;
    const json::value* step = fc->as_object().if_contains("target_step");
    const json::value* value = fc->as_object().if_contains("forecast");
    if (step && step->is_number() && value && value->is_number()) {
      char label[96];
      std::snprintf(label, sizeof label, "forecast: loss about %.4g", value->to_number<double>());
      json::object m = Marker("forecast", static_cast<int64_t>(step->to_number<double>()), label);
      m["value"] = value->to_number<double>();
      out.push_back(std::move(m));
    }
  }
  return out;
}

Result<json::array> RunFiles(store::Db& db, int64_t run_id) {
  Result<store::Stmt> s = db.Prepare(
      "SELECT source_id, path, generation, status, size_seen, committed_offset, records, error_count, "
      "last_read, resyncing FROM sources WHERE run_id = ?1 ORDER BY path, generation");
  if (!s.ok()) return s.status();
  s->Bind(1, run_id);
  Result<store::Stmt> e = db.Prepare(
      "SELECT offset, kind, detail, time FROM ingest_errors WHERE source_id = ?1 ORDER BY error_id DESC LIMIT 20");
  if (!e.ok()) return e.status();
  json::array out;
  Status inner = Status::Ok();
  TW_RETURN_IF_ERROR(s->EachRow([&] {
    json::object f{{"id", s->Int(0)},          {"path", s->Text(1)},        {"generation", s->Int(2)},
                   {"status", s->Text(3)},     {"size", s->Int(4)},         {"committed_offset", s->Int(5)},
                   {"records", s->Int(6)},     {"errors", s->Int(7)},
                   {"last_read", s->IsNull(8) ? json::value() : Number(s->Real(8))},
                   {"resyncing", s->Int(9) != 0}};
    json::array errors;
    e->Reset();
    e->Bind(1, s->Int(0));
    const Status st = e->EachRow([&] {
      errors.push_back(json::object{{"offset", e->Int(0)}, {"kind", e->Text(1)},
                                    {"detail", e->Text(2)}, {"time", Number(e->Real(3))}});
    });
    if (!st.ok()) inner = st;
    f["recent_errors"] = std::move(errors);
    out.push_back(std::move(f));
  }));
  TW_RETURN_IF_ERROR(inner);
  return out;
}

}  // namespace tw::web
