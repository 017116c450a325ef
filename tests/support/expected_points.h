// tests/data/sources/expected.json: what the generators of the source fixtures logged, recorded
// as they logged it (tools/source_runs), beside what trainwatch reads from the files.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "store/store.h"

namespace tw::testing {

// (step, value) with NaN and the infinities as written: "nan", "inf", "-inf"; numbers as %.17g.
using PointList = std::vector<std::pair<int64_t, std::string>>;
using MetricPoints = std::map<std::string, PointList>;

// The expected points of each fixture file (its path relative to tests/data/sources).
std::map<std::string, MetricPoints> ExpectedSourcePoints();
// The live points of run `run` in the store, in the same form.
MetricPoints StoredPoints(store::Db& db, const std::string& run);
std::string ValueText(double v);

}  // namespace tw::testing
