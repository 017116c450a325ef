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

// Sets a file's modification time to a fixed instant: the sources whose points take their
// file's mtime as wall time (console logs, HF trainer states, CSV tables) then read the same
// however often the file is rewritten, so a store can be compared with one read's.
void PinMtime(const std::string& path);
// The first column of the first row of `sql` as an integer (-1 on an error).
int64_t CountRows(store::Db& db, const std::string& sql);

}  // namespace tw::testing
