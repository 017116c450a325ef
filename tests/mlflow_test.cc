// MLflow: the file store (mlruns/) and the SQLite tracking store (mlflow.db), real files made by
// tools/source_runs from real CPU trainings in MLflow's published layouts: point for point
// against what the trainings logged, one run per MLflow run, named as docs/sources.md says;
// read on as MLflow writes more; a database of another schema refused with what is missing.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "ingest/ingest.h"
#include "store/db.h"
#include "store/store.h"
#include "support/expected_points.h"
#include "support/store_dump.h"
#include "support/test_env.h"

namespace tw {
namespace {

using namespace tw::testing;
namespace fs = std::filesystem;

const std::string kMlflow = std::string(TW_SOURCES_DIR) + "/mlflow";

std::vector<std::string> Rows(store::Db& db, const std::string& sql) {
  std::vector<std::string> out;
  auto q = db.Prepare(sql);
  if (!q.ok()) return {"error: " + q.status().message()};
  for (;;) {
    Result<bool> row = q->Step();
    if (!row.ok() || !*row) break;
    out.push_back(q->Text(0));
  }
  return out;
}

TEST(MlflowFileStore, EachRunDirectoryIsARunWithThePointsItsTrainingLogged) {
  auto st = store::Store::Open(":memory:");
  ASSERT_TRUE(st.ok());
  ingest::Summary s;
  ASSERT_TRUE(ingest::IngestPaths(**st, {kMlflow + "/mlruns"}, {}, &s).ok());
  EXPECT_EQ(s.totals.errors, 0);
  int runs = 0;
  for (const auto& [file, metrics] : ExpectedSourcePoints()) {
    if (!file.starts_with("mlflow/mlruns/")) continue;
    SCOPED_TRACE(file);
    ++runs;
    EXPECT_EQ(StoredPoints((*st)->db(), file.substr(std::string("mlflow/mlruns/").size())), metrics);
  }
  EXPECT_EQ(runs, 2);
  EXPECT_THAT(Rows((*st)->db(), "SELECT format || ' ' || display_name || ' ' || project FROM runs ORDER BY name"),
              ::testing::ElementsAre("mlflow sgd-unscaled-diverge trainwatch-sources",
                                     "mlflow adam-clusters-healthy trainwatch-sources"));
  EXPECT_THAT(Rows((*st)->db(), "SELECT key || '=' || value_json FROM run_summary_values ORDER BY run_id, key"),
              ::testing::Contains("mlflow.status=\"FINISHED\""));
  EXPECT_THAT(Rows((*st)->db(), "SELECT key || '=' || coalesce(value_num, value_text) FROM hparams ORDER BY run_id, key"),
              ::testing::Contains("optimizer=SGD"));
}

TEST(MlflowFileStore, EveryCutOfAMetricFileThenCompletedEqualsOneRead) {
  TempDir dir;
  fs::copy(kMlflow + "/mlruns", dir / "mlruns", fs::copy_options::recursive);
  const std::string run = dir / "mlruns/658960494612176262/b938451ee3254aa6b3406bc44dc2a627";
  const std::string path = run + "/metrics/loss";
  const std::string bytes = ReadFile(path);
  auto ref = store::Store::Open(dir / "ref.db");
  ASSERT_TRUE(ref.ok());
  ingest::Summary s;
  ASSERT_TRUE(ingest::IngestPaths(**ref, {dir / "mlruns"}, {}, &s).ok());
  const auto want = DumpStore((*ref)->db());
  for (size_t cut = 0; cut <= bytes.size(); cut += 5) {
    SCOPED_TRACE("cut at " + std::to_string(cut) + " of " + std::to_string(bytes.size()));
    WriteFile(path, bytes.substr(0, cut));
    auto st = store::Store::Open(":memory:");
    ASSERT_TRUE(st.ok());
    ingest::Summary a, b;
    ASSERT_TRUE(ingest::IngestPaths(**st, {dir / "mlruns"}, {}, &a).ok());
    AppendFile(path, bytes.substr(cut));
    ASSERT_TRUE(ingest::IngestPaths(**st, {dir / "mlruns"}, {}, &b).ok());
    ASSERT_EQ(a.totals.errors + b.totals.errors, 0);
    ASSERT_EQ(DumpStore((*st)->db()), want);
  }
}

TEST(MlflowDatabase, EachRunIsNamedByTheDatabaseExperimentAndRunWithItsPoints) {
  auto st = store::Store::Open(":memory:");
  ASSERT_TRUE(st.ok());
  ingest::Summary s;
  ASSERT_TRUE(ingest::IngestPaths(**st, {kMlflow}, {}, &s).ok());
  EXPECT_EQ(s.totals.errors, 0);
  const auto expected = ExpectedSourcePoints();
  const std::map<std::string, std::string> names = {
      {"b938451ee3254aa6b3406bc44dc2a627", "mlflow.db/trainwatch-sources/sgd-unscaled-diverge"},
      {"c2354e2bb7744a6381d8fac168fb90d7", "mlflow.db/trainwatch-sources/adam-clusters-healthy"}};
  for (const auto& [uuid, name] : names) {
    SCOPED_TRACE(name);
    const MetricPoints want = expected.at("mlflow/mlflow.db#" + uuid);
    EXPECT_EQ(StoredPoints((*st)->db(), name), want);
  }
  // NaN kept (is_nan = 1), the run's facts there.
  EXPECT_THAT(Rows((*st)->db(), "SELECT count(*) FROM scalars WHERE value_class = 1"),
              ::testing::ElementsAre(::testing::Ne("0")));
  EXPECT_THAT(Rows((*st)->db(), "SELECT r.name || ' ' || v.value_json FROM run_summary_values v JOIN runs r "
                                "USING (run_id) WHERE v.key = 'mlflow.status' AND r.name LIKE 'mlflow.db/%' ORDER BY r.name"),
              ::testing::ElementsAre("mlflow.db/trainwatch-sources/adam-clusters-healthy \"FINISHED\"",
                                     "mlflow.db/trainwatch-sources/sgd-unscaled-diverge \"FINISHED\""));
}

TEST(MlflowDatabase, RowsMlflowAddsLaterAreReadOnceAndADiskFullLosesNothing) {
  TempDir dir;
  const std::string db = dir / "logs/mlflow.db";
  fs::create_directories(dir / "logs");
  fs::copy_file(kMlflow + "/mlflow.db", db);
  auto ref = store::Store::Open(dir / "ref.db");
  ASSERT_TRUE(ref.ok());
  ingest::Summary s;
  ASSERT_TRUE(ingest::IngestPaths(**ref, {dir / "logs"}, {}, &s).ok());
  const int64_t first = s.totals.scalars;
  ASSERT_GT(first, 300);
  // MLflow logs on: more rows, one of them NaN, and a run that ends.
  {
    auto w = store::Db::Open(db, store::Db::Mode::kReadWrite);
    ASSERT_TRUE(w.ok());
    ASSERT_TRUE((*w)->Exec(
        "INSERT INTO metrics(key, value, timestamp, run_uuid, step, is_nan) VALUES "
        "('loss', 0.5, 1795742290000, 'c2354e2bb7744a6381d8fac168fb90d7', 1000, 0), "
        "('loss', 0, 1795742291000, 'c2354e2bb7744a6381d8fac168fb90d7', 1001, 1);"
        "UPDATE runs SET status = 'FAILED' WHERE run_uuid = 'c2354e2bb7744a6381d8fac168fb90d7';").ok());
  }
  ingest::Summary again;
  ASSERT_TRUE(ingest::IngestPaths(**ref, {dir / "logs"}, {}, &again).ok());
  EXPECT_EQ(again.totals.scalars, 2);
  EXPECT_THAT(Rows((*ref)->db(), "SELECT value_json FROM run_summary_values WHERE key = 'mlflow.status' "
                                 "AND run_id = (SELECT run_id FROM runs WHERE name LIKE '%adam%')"),
              ::testing::ElementsAre("\"FAILED\""));
  // The same, into a store that runs out of space again and again: nothing lost or doubled.
  auto full = store::Store::Open(dir / "full.db");
  ASSERT_TRUE(full.ok());
  ingest::IngestOptions small;
  small.batch_points = 50;
  int failures = 0;
  for (int pages = 20;; pages += 2) {
    ASSERT_TRUE((*full)->db().Exec("PRAGMA max_page_count = " + std::to_string(pages)).ok());
    ingest::Summary t;
    if (ingest::IngestPaths(**full, {dir / "logs"}, small, &t).ok()) break;
    ++failures;
    ASSERT_LT(pages, 5000);
  }
  EXPECT_GE(failures, 2);
  EXPECT_EQ(DumpStore((*full)->db()), DumpStore((*ref)->db()));
}

TEST(MlflowDatabase, ADatabaseOfAnotherSchemaIsRefusedOnceSayingWhatIsMissing) {
  TempDir dir;
  fs::create_directories(dir / "a");
  fs::create_directories(dir / "b");
  fs::create_directories(dir / "c");
  auto make = [&](const std::string& path, const std::string& sql) {
    auto w = store::Db::Open(path, store::Db::Mode::kReadWrite);
    ASSERT_TRUE(w.ok());
    ASSERT_TRUE((*w)->Exec(sql).ok());
  };
  // An MLflow store from before metrics had a step and is_nan.
  make(dir / "a/mlflow.db",
       "CREATE TABLE alembic_version(version_num VARCHAR(32));"
       "INSERT INTO alembic_version VALUES ('ff01da956556');"
       "CREATE TABLE experiments(experiment_id INTEGER, name TEXT);"
       "CREATE TABLE runs(run_uuid TEXT, name TEXT, status TEXT, start_time INT, end_time INT, experiment_id INT);"
       "CREATE TABLE metrics(key TEXT, value REAL, timestamp INT, run_uuid TEXT);"
       "CREATE TABLE params(key TEXT, value TEXT, run_uuid TEXT);"
       "CREATE TABLE tags(key TEXT, value TEXT, run_uuid TEXT);");
  // Not MLflow's at all.
  make(dir / "b/mlflow.db", "CREATE TABLE t(x);");
  // Its metrics a view (which could call anything), not a table.
  make(dir / "c/mlflow.db",
       "CREATE TABLE alembic_version(version_num VARCHAR(32));"
       "CREATE TABLE experiments(experiment_id INTEGER, name TEXT);"
       "CREATE TABLE runs(run_uuid TEXT, name TEXT, status TEXT, start_time INT, end_time INT, experiment_id INT);"
       "CREATE VIEW metrics AS SELECT 'k' AS key, 1.0 AS value, 0 AS timestamp, 'r' AS run_uuid, 0 AS step, 0 AS is_nan;"
       "CREATE TABLE params(key TEXT, value TEXT, run_uuid TEXT);"
       "CREATE TABLE tags(key TEXT, value TEXT, run_uuid TEXT);");
  auto st = store::Store::Open(dir / "s.db");
  ASSERT_TRUE(st.ok());
  for (int i = 0; i < 2; ++i) {
    ingest::Summary s;
    ASSERT_TRUE(ingest::IngestPaths(**st, {dir.path()}, {}, &s).ok());
    EXPECT_EQ(s.totals.scalars, 0);
  }
  const auto errors = Rows((*st)->db(), "SELECT kind || ': ' || detail FROM ingest_errors ORDER BY path");
  ASSERT_EQ(errors.size(), 3u) << "each reported once";
  EXPECT_THAT(errors[0], ::testing::HasSubstr("alembic revision ff01da956556"));
  EXPECT_THAT(errors[0], ::testing::HasSubstr("metrics.step, metrics.is_nan"));
  EXPECT_THAT(errors[1], ::testing::HasSubstr("not an MLflow tracking database"));
  EXPECT_THAT(errors[2], ::testing::HasSubstr("metrics"));
  EXPECT_THAT(errors[0], ::testing::StartsWith("bad_mlflow_db: "));
}

}  // namespace
}  // namespace tw
