// Metrics tables as CSV: Lightning's CSVLogger metrics.csv (with hparams.yaml) and Ultralytics
// YOLO's results.csv, real files of real CPU trainings (tests/data/sources, tools/source_runs)
// and the real YOLO runs of ../shared/corpus: point for point against what the trainings
// logged; Lightning's rewrite when a column appears stores nothing twice; cut anywhere and
// completed equals one read.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "ingest/csv_ingester.h"
#include "ingest/ingest.h"
#include "store/store.h"
#include "support/expected_points.h"
#include "support/store_dump.h"
#include "support/test_env.h"

namespace tw {
namespace {

using namespace tw::testing;
namespace fs = std::filesystem;

const std::string kSources = std::string(TW_SOURCES_DIR) + "/";



// Reads one fixture file in a directory of its own (the run "."), returns its points.
MetricPoints ReadOne(const std::string& rel, ingest::Summary* s, store::Db** db_out = nullptr) {
  static std::unique_ptr<store::Store> keep;
  TempDir dir;
  const std::string path = dir / fs::path(rel).filename().native();
  fs::copy_file(kSources + rel, path);
  if (fs::exists(fs::path(kSources + rel).parent_path() / "hparams.yaml"))
    fs::copy_file(fs::path(kSources + rel).parent_path() / "hparams.yaml", dir / "hparams.yaml");
  auto st = store::Store::Open(":memory:");
  EXPECT_TRUE(st.ok());
  EXPECT_TRUE(ingest::IngestPaths(**st, {dir.path()}, {}, s).ok());
  keep = std::move(*st);
  if (db_out) *db_out = &keep->db();
  return StoredPoints(keep->db(), ".");
}

TEST(CsvSource, LightningAndYoloTablesGiveThePointsTheirTrainingsLogged) {
  int files = 0;
  for (const auto& [file, metrics] : ExpectedSourcePoints()) {
    if (!file.ends_with("metrics.csv") && !file.ends_with("results.csv")) continue;
    SCOPED_TRACE(file);
    ++files;
    ingest::Summary s;
    EXPECT_EQ(ReadOne(file, &s), metrics);
    EXPECT_EQ(s.totals.errors, 0);
  }
  EXPECT_EQ(files, 3);
}

TEST(CsvSource, LightningsHparamsYamlAreTheRunsHyperparameters) {
  ingest::Summary s;
  store::Db* db = nullptr;
  ReadOne("lightning/mlp_healthy/version_0/metrics.csv", &s, &db);
  ASSERT_NE(db, nullptr);
  EXPECT_EQ(CountRows(*db, "SELECT count(*) FROM hparams"), 6);
  EXPECT_EQ(CountRows(*db, "SELECT count(*) FROM hparams WHERE key = 'hidden_dim' AND value_num = 64"), 1);
}

TEST(CsvSource, ARewriteWhenAColumnAppearsStoresNothingTwice) {
  // Lightning rewrites metrics.csv whole, header and all, when val_loss is first logged.
  const std::string dir_rel = "lightning/mlp_healthy/version_0/";
  TempDir dir;
  const std::string path = dir / "metrics.csv";
  WriteFile(path, ReadFile(kSources + dir_rel + "metrics.before_new_column.csv"));
  auto st = store::Store::Open(dir / "s.db");
  ASSERT_TRUE(st.ok());
  ingest::Summary first, second;
  ASSERT_TRUE(ingest::IngestPaths(**st, {dir.path()}, {}, &first).ok());
  ASSERT_GT(first.totals.scalars, 10);
  WriteFile(path, ReadFile(kSources + dir_rel + "metrics.csv"));  // in place, as Lightning does
  ASSERT_TRUE(ingest::IngestPaths(**st, {dir.path()}, {}, &second).ok());
  const MetricPoints want = ExpectedSourcePoints().at(dir_rel + "metrics.csv");
  EXPECT_EQ(StoredPoints((*st)->db(), "."), want);
  size_t total = 0;
  for (const auto& [name, points] : want) total += points.size();
  EXPECT_EQ(CountRows((*st)->db(), "SELECT count(*) FROM scalars"), static_cast<int64_t>(total));
  EXPECT_EQ(CountRows((*st)->db(), "SELECT count(*) FROM scalars WHERE superseded = 1"), 0);
}

TEST(CsvSource, EveryCutOfAYoloTableThenCompletedEqualsOneRead) {
  const std::string bytes = ReadFile(kSources + "console/yolo_cls_healthy/results.csv");
  TempDir dir;
  const std::string path = dir / "results.csv";
  WriteFile(path, bytes);
  PinMtime(path);
  auto ref = store::Store::Open(dir / "ref.db");
  ASSERT_TRUE(ref.ok());
  ingest::Summary s;
  ASSERT_TRUE(ingest::IngestPaths(**ref, {dir.path()}, {}, &s).ok());
  ASSERT_GT(s.totals.scalars, 50);
  const auto want = DumpStore((*ref)->db());
  for (size_t cut = 0; cut <= bytes.size(); cut += 3) {
    SCOPED_TRACE("cut at " + std::to_string(cut) + " of " + std::to_string(bytes.size()));
    WriteFile(path, bytes.substr(0, cut));
    PinMtime(path);
    auto st = store::Store::Open(":memory:");
    ASSERT_TRUE(st.ok());
    ingest::Summary a, b;
    ASSERT_TRUE(ingest::IngestPaths(**st, {dir.path()}, {}, &a).ok());
    AppendFile(path, bytes.substr(cut));
    PinMtime(path);
    ASSERT_TRUE(ingest::IngestPaths(**st, {dir.path()}, {}, &b).ok());
    ASSERT_EQ(a.totals.errors + b.totals.errors, 0);
    ASSERT_EQ(DumpStore((*st)->db()), want);
  }
}

TEST(CsvSource, AColumnNamedInInvalidUtf8IsNamedAlikeInOneReadAndInTwo) {
  // Found by fuzz_ingest: the columns go through the committed state as JSON, which holds
  // valid UTF-8 only, so a resumed read named the series otherwise than one read.
  const std::string bytes = "epoch,loss\xff\xfe,acc\n1,0.5,0.1\n2,0.4,0.2\n3,0.3,0.3\n";
  TempDir dir;
  const std::string path = dir / "results.csv";
  WriteFile(path, bytes);
  PinMtime(path);
  auto ref = store::Store::Open(":memory:");
  ASSERT_TRUE(ref.ok());
  ingest::Summary s;
  ASSERT_TRUE(ingest::IngestPaths(**ref, {dir.path()}, {}, &s).ok());
  EXPECT_EQ(StoredPoints((*ref)->db(), ".").count("loss\xEF\xBF\xBD\xEF\xBF\xBD"), 1u);
  const auto want = DumpStore((*ref)->db());
  for (size_t cut = 20; cut < bytes.size(); cut += 4) {
    SCOPED_TRACE("cut at " + std::to_string(cut));
    WriteFile(path, bytes.substr(0, cut));
    PinMtime(path);
    auto st = store::Store::Open(":memory:");
    ASSERT_TRUE(st.ok());
    ASSERT_TRUE(ingest::IngestPaths(**st, {dir.path()}, {}, &s).ok());
    AppendFile(path, bytes.substr(cut));
    PinMtime(path);
    ASSERT_TRUE(ingest::IngestPaths(**st, {dir.path()}, {}, &s).ok());
    ASSERT_EQ(DumpStore((*st)->db()), want);
  }
}

TEST(CsvSource, RealYoloRunsOfTheCorpusMatchAnIndependentRead) {
  const std::string corpus = CorpusDir();
  if (corpus.empty()) GTEST_SKIP() << "../shared/corpus not found";
  int files = 0;
  for (const auto& e : fs::recursive_directory_iterator(corpus)) {
    if (e.path().filename() != "results.csv") continue;
    SCOPED_TRACE(e.path().native());
    ++files;
    // The independent read: split on commas, trim, every number under its column at `epoch`.
    const std::string text = ReadFile(e.path());
    std::vector<std::string> lines;
    for (size_t at = 0; at < text.size();) {
      size_t nl = text.find('\n', at);
      if (nl == std::string::npos) nl = text.size();
      lines.push_back(text.substr(at, nl - at));
      at = nl + 1;
    }
    std::vector<std::string> header;
    ingest::SplitCsv(lines[0], &header);
    for (auto& h : header) h.erase(0, h.find_first_not_of(' ')), h.erase(h.find_last_not_of(" \r") + 1);
    MetricPoints want;
    for (size_t i = 1; i < lines.size(); ++i) {
      if (lines[i].empty()) continue;
      std::vector<std::string> cells;
      ingest::SplitCsv(lines[i], &cells);
      const int64_t epoch = std::stoll(cells[0]);
      for (size_t c = 1; c < cells.size(); ++c)
        want[header[c]].emplace_back(epoch, ValueText(std::stod(cells[c])));
    }
    TempDir dir;
    fs::copy_file(e.path(), dir / "results.csv");
    auto st = store::Store::Open(":memory:");
    ASSERT_TRUE(st.ok());
    ingest::Summary s;
    ASSERT_TRUE(ingest::IngestPaths(**st, {dir.path()}, {}, &s).ok());
    EXPECT_EQ(s.totals.errors, 0);
    EXPECT_EQ(StoredPoints((*st)->db(), "."), want);
  }
  EXPECT_GE(files, 1);
}

TEST(CsvSource, ATableWithoutAStepIsNotAMetricsTableAndBadRowsAreNamed) {
  TempDir dir;
  fs::create_directories(dir / "a");
  WriteFile(dir / "a/results.csv", "name,score\nx,1\n");
  fs::create_directories(dir / "b");
  WriteFile(dir / "b/metrics.csv", "epoch,step,loss\n0,0,1.5\n0,1\n0,x,2\n0,2,\"1,5\"\n0,3,nan\n");
  auto st = store::Store::Open(":memory:");
  ASSERT_TRUE(st.ok());
  ingest::Summary s;
  ASSERT_TRUE(ingest::IngestPaths(**st, {dir.path()}, {}, &s).ok());
  auto q = (*st)->db().Prepare("SELECT path, offset, kind FROM ingest_errors ORDER BY path, offset");
  ASSERT_TRUE(q.ok());
  std::vector<std::string> errors;
  for (;;) {
    Result<bool> row = q->Step();
    if (!row.ok() || !*row) break;
    errors.push_back(fs::path(q->Text(0)).parent_path().filename().native() + ":" +
                     std::to_string(q->Int(1)) + ":" + q->Text(2));
  }
  EXPECT_EQ(errors, (std::vector<std::string>{"a:0:no_step_column", "b:24:bad_row", "b:28:bad_row"}));
  EXPECT_EQ(StoredPoints((*st)->db(), "b").at("loss"), (PointList{{0, "1.5"}, {3, "nan"}}));
}

}  // namespace
}  // namespace tw
