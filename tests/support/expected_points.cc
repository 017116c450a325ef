#include "support/expected_points.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <cmath>
#include <cstdio>

#include "decode/json_value.h"
#include "support/test_env.h"

namespace tw::testing {

std::string ValueText(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

std::map<std::string, MetricPoints> ExpectedSourcePoints() {
  decode::JsonNode root;
  const std::string text = ReadFile(std::string(TW_SOURCES_DIR) + "/expected.json");
  std::map<std::string, MetricPoints> out;
  if (!decode::ParseJson(text, &root).ok()) return out;
  for (const auto& [file, metrics] : root.object) {
    MetricPoints& m = out[file];
    for (const auto& [name, points] : metrics.object) {
      PointList& list = m[name];
      for (const auto& p : points.array) {
        if (p.array.size() != 2) continue;
        const auto& v = p.array[1];
        list.emplace_back(static_cast<int64_t>(p.array[0].number),
                          v.type == decode::JsonNode::Type::kString ? v.text : ValueText(v.number));
      }
    }
  }
  return out;
}

MetricPoints StoredPoints(store::Db& db, const std::string& run) {
  MetricPoints out;
  auto q = db.Prepare(
      "SELECT s.tag, p.step, p.value, p.value_class FROM scalars p JOIN series s USING (series_id) "
      "JOIN runs r USING (run_id) WHERE r.name = ?1 AND p.superseded = 0 "
      "ORDER BY s.tag, p.step, p.source_id, p.offset, p.vidx");
  if (!q.ok()) return out;
  q->Bind(1, run);
  for (;;) {
    Result<bool> row = q->Step();
    if (!row.ok() || !*row) break;
    const int vc = static_cast<int>(q->Int(3));
    const double v = vc == 1 ? NAN : vc == 2 ? INFINITY : vc == 3 ? -INFINITY : q->Real(2);
    out[q->Text(0)].emplace_back(q->Int(1), ValueText(v));
  }
  return out;
}

void PinMtime(const std::string& path) {
  const struct timespec t[2] = {{1790000000, 0}, {1790000000, 0}};
  ::utimensat(AT_FDCWD, path.c_str(), t, 0);
}

int64_t CountRows(store::Db& db, const std::string& sql) {
  auto q = db.Prepare(sql);
  if (!q.ok()) return -1;
  Result<bool> row = q->Step();
  return row.ok() && *row ? q->Int(0) : -1;
}

}  // namespace tw::testing
