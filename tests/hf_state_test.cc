// HF Trainer's trainer_state.json: real files of real CPU trainings (tests/data/sources/hf, made
// by tools/source_runs): the checkpoints of a run are one run, each point once, equal to what
// the training logged; a file cut at every byte and completed, rewritten whole in place, or
// broken, reads as it should.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <set>

#include "ingest/ingest.h"
#include "store/store.h"
#include "support/expected_points.h"
#include "support/store_dump.h"
#include "support/test_env.h"

namespace tw {
namespace {

using namespace tw::testing;
namespace fs = std::filesystem;

const std::string kHf = std::string(TW_SOURCES_DIR) + "/hf/";



// What the training logged, over every file of the run: each (metric, step) once.
MetricPoints ExpectedRun(const std::string& run) {
  MetricPoints out;
  for (const auto& [file, metrics] : ExpectedSourcePoints()) {
    if (!file.starts_with("hf/" + run + "/")) continue;
    for (const auto& [name, points] : metrics)
      for (const auto& p : points)
        if (std::find(out[name].begin(), out[name].end(), p) == out[name].end())
          out[name].push_back(p);
  }
  for (auto& [name, points] : out) std::sort(points.begin(), points.end());
  return out;
}

TEST(HfTrainerState, TheCheckpointsOfARunAreOneRunWithEachPointOnce) {
  for (const std::string run : {"hf_lr_nan", "hf_healthy_eval"}) {
    SCOPED_TRACE(run);
    auto st = store::Store::Open(":memory:");
    ASSERT_TRUE(st.ok());
    ingest::Summary s;
    ASSERT_TRUE(ingest::IngestPaths(**st, {kHf + run}, {}, &s).ok());
    EXPECT_EQ(s.totals.errors, 0);
    EXPECT_EQ(s.runs, 1);
    EXPECT_EQ(s.files, 4);  // three checkpoints and the output directory's own
    const MetricPoints want = ExpectedRun(run);
    ASSERT_FALSE(want.empty());
    MetricPoints got = StoredPoints((*st)->db(), ".");
    for (auto& [name, points] : got) std::sort(points.begin(), points.end());
    EXPECT_EQ(got, want);
    // Not one point stored twice, superseded or not.
    EXPECT_EQ(CountRows((*st)->db(), "SELECT count(*) FROM scalars"),
              CountRows((*st)->db(), "SELECT count(DISTINCT series_id || ':' || step) FROM scalars"));
  }
}

TEST(HfTrainerState, BestMetricAndCheckpointAreTheRunsFacts) {
  auto st = store::Store::Open(":memory:");
  ASSERT_TRUE(st.ok());
  ingest::Summary s;
  ASSERT_TRUE(ingest::IngestPaths(**st, {std::string(TW_SOURCES_DIR) + "/hf"}, {}, &s).ok());
  auto q = (*st)->db().Prepare(
      "SELECT r.name, r.format, v.key, v.value_json FROM run_summary_values v JOIN runs r "
      "USING (run_id) WHERE v.key LIKE 'best%' ORDER BY r.name, v.key");
  ASSERT_TRUE(q.ok());
  std::vector<std::string> rows;
  for (;;) {
    Result<bool> row = q->Step();
    if (!row.ok() || !*row) break;
    rows.push_back(q->Text(0) + " " + q->Text(1) + " " + q->Text(2) + "=" + q->Text(3));
  }
  EXPECT_THAT(rows, ::testing::Contains("hf_healthy_eval hf_trainer best_metric=0.9375"));
  EXPECT_THAT(rows, ::testing::Contains(
                        "hf_healthy_eval hf_trainer best_model_checkpoint=\"hf/hf_healthy_eval/checkpoint-60\""));
}

TEST(HfTrainerState, EveryCutOfACheckpointThenCompletedEqualsOneRead) {
  const std::string bytes = ReadFile(kHf + "hf_healthy_eval/checkpoint-20/trainer_state.json");
  TempDir dir;
  const std::string path = dir / "out/checkpoint-20/trainer_state.json";
  fs::create_directories(fs::path(path).parent_path());
  WriteFile(path, bytes);
  PinMtime(path);
  auto ref = store::Store::Open(dir / "ref.db");
  ASSERT_TRUE(ref.ok());
  ingest::Summary s;
  ASSERT_TRUE(ingest::IngestPaths(**ref, {dir / "out"}, {}, &s).ok());
  ASSERT_GT(s.totals.scalars, 10);
  const auto want = DumpStore((*ref)->db());
  for (size_t cut = 0; cut <= bytes.size(); ++cut) {
    SCOPED_TRACE("cut at " + std::to_string(cut) + " of " + std::to_string(bytes.size()));
    WriteFile(path, bytes.substr(0, cut));  // the Trainer truncates, then writes
    PinMtime(path);
    auto st = store::Store::Open(":memory:");
    ASSERT_TRUE(st.ok());
    ingest::Summary first, second;
    ASSERT_TRUE(ingest::IngestPaths(**st, {dir / "out"}, {}, &first).ok());
    // Half a document is being written, not broken: nothing stored, nothing reported.
    ASSERT_EQ(first.totals.errors, 0);
    const bool whole = cut > bytes.find_last_of('}');  // only the newline after it missing
    ASSERT_EQ(first.totals.scalars, whole ? s.totals.scalars : 0);
    AppendFile(path, bytes.substr(cut));
    PinMtime(path);
    ASSERT_TRUE(ingest::IngestPaths(**st, {dir / "out"}, {}, &second).ok());
    ASSERT_EQ(DumpStore((*st)->db()), want);
  }
}

TEST(HfTrainerState, AFileRewrittenWholeInPlaceAddsOnlyWhatIsNew) {
  TempDir dir;
  const std::string path = dir / "out/trainer_state.json";
  fs::create_directories(dir / "out");
  auto st = store::Store::Open(dir / "s.db");
  ASSERT_TRUE(st.ok());
  for (const char* ckpt : {"checkpoint-20", "checkpoint-40", "checkpoint-60"}) {
    WriteFile(path, ReadFile(kHf + "hf_lr_nan/" + ckpt + "/trainer_state.json"));
    ingest::Summary s;
    ASSERT_TRUE(ingest::IngestPaths(**st, {dir / "out"}, {}, &s).ok());
    EXPECT_EQ(s.totals.errors, 0);
  }
  // Steps 1-60 of loss once each, nothing superseded.
  EXPECT_EQ(CountRows((*st)->db(), "SELECT count(*) FROM scalars p JOIN series s USING (series_id) "
                               "WHERE s.tag = 'loss'"), 60);
  EXPECT_EQ(CountRows((*st)->db(), "SELECT count(*) FROM scalars WHERE superseded = 1"), 0);
  EXPECT_EQ(CountRows((*st)->db(), "SELECT count(*) FROM sources"), 3);  // three generations
}

TEST(HfTrainerState, ABrokenDocumentIsReportedOnceWithItsOffsetAndReadWhenItChanges) {
  TempDir dir;
  const std::string path = dir / "out/trainer_state.json";
  fs::create_directories(dir / "out");
  WriteFile(path, "{\"log_history\": [{\"loss\": 1.0, \"step\": 1}, oops]}\n");
  auto st = store::Store::Open(dir / "s.db");
  ASSERT_TRUE(st.ok());
  for (int i = 0; i < 2; ++i) {
    ingest::Summary s;
    ASSERT_TRUE(ingest::IngestPaths(**st, {dir / "out"}, {}, &s).ok());
  }
  auto q = (*st)->db().Prepare("SELECT path, offset, kind, detail FROM ingest_errors");
  ASSERT_TRUE(q.ok());
  ASSERT_TRUE(*q->Step());
  EXPECT_EQ(q->Text(0), path);
  EXPECT_EQ(q->Int(1), 43);  // the 'o' of oops
  EXPECT_EQ(q->Text(2), "bad_json");
  EXPECT_FALSE(*q->Step()) << "reported twice";
  // Not an HF state at all, or entries without a step: said so.
  WriteFile(path, "{\"log_history\": [{\"loss\": 1.0}, {\"loss\": 0.5, \"step\": 2}], \"best_metric\": null}\n");
  ingest::Summary s;
  ASSERT_TRUE(ingest::IngestPaths(**st, {dir / "out"}, {}, &s).ok());
  EXPECT_EQ(s.totals.scalars, 1);
  EXPECT_EQ(CountRows((*st)->db(), "SELECT count(*) FROM ingest_errors WHERE kind = 'bad_entry'"), 1);
  WriteFile(path, "[1, 2, 3]\n");
  ASSERT_TRUE(ingest::IngestPaths(**st, {dir / "out"}, {}, &s).ok());
  EXPECT_EQ(CountRows((*st)->db(), "SELECT count(*) FROM ingest_errors WHERE kind = 'bad_document'"), 1);
}

}  // namespace
}  // namespace tw
