// W&B run directories read while they grow: the JSON lines of pre-0.10 runs and real .wandb
// logs, cut anywhere and completed later, give exactly what one read of the whole gives.
#include <gtest/gtest.h>

#include <filesystem>

#include "ingest/ingest.h"
#include "store/store.h"
#include "support/store_dump.h"
#include "support/test_env.h"
#include "wandb/legacy_files.h"

namespace tw {
namespace {

using namespace tw::testing;
namespace fs = std::filesystem;

// Ingests `bytes` written at `rel` under a logdir once; then for each cut, ingests the prefix
// into a fresh store, completes the file, ingests again: both stores must hold the same rows.
void ExpectCutsEqualOneRead(const std::string& rel, const std::string& bytes,
                            const std::vector<size_t>& cuts) {
  TempDir dir;
  const std::string logs = dir / "logs";
  const std::string path = logs + "/" + rel;
  fs::create_directories(fs::path(path).parent_path());
  WriteFile(path, bytes);
  auto ref = store::Store::Open(dir / "ref.db");
  ASSERT_TRUE(ref.ok());
  ingest::Summary s;
  ASSERT_TRUE(ingest::IngestPaths(**ref, {logs}, {}, &s).ok());
  ASSERT_EQ(s.totals.errors, 0);
  const auto want = DumpStore((*ref)->db());
  ASSERT_GT(want.size(), 10u);
  for (size_t cut : cuts) {
    SCOPED_TRACE("cut at " + std::to_string(cut) + " of " + std::to_string(bytes.size()));
    WriteFile(path, bytes.substr(0, cut));
    auto st = store::Store::Open(":memory:");
    ASSERT_TRUE(st.ok());
    ingest::Summary first, second;
    ASSERT_TRUE(ingest::IngestPaths(**st, {logs}, {}, &first).ok());
    AppendFile(path, bytes.substr(cut));
    ASSERT_TRUE(ingest::IngestPaths(**st, {logs}, {}, &second).ok());
    EXPECT_EQ(first.totals.errors + second.totals.errors, 0);
    ASSERT_EQ(DumpStore((*st)->db()), want);
  }
}

std::string HistoryLines(int rows) {
  std::string out;
  for (int i = 0; i < rows; ++i) {
    out += "{\"loss\": " + std::to_string(2.0 / (i + 1)) + ", \"acc\": " + std::to_string(i * 0.01) +
           ", \"_step\": " + std::to_string(i) + ", \"_runtime\": " + std::to_string(i * 1.5) +
           ", \"_timestamp\": " + std::to_string(1585000000 + i) + "}\n";
  }
  out += "{\"loss\": NaN, \"nested\": {\"a.b\": Infinity}, \"_step\": " + std::to_string(rows) +
         ", \"_timestamp\": " + std::to_string(1585000000 + rows) + "}\n";
  return out;
}

TEST(WandbTail, EveryPrefixOfAHistoryJsonlThenCompletedEqualsOneRead) {
  const std::string bytes = HistoryLines(6);
  std::vector<size_t> cuts;
  for (size_t i = 0; i <= bytes.size(); ++i) cuts.push_back(i);
  ExpectCutsEqualOneRead("wandb/run-20200101_000000-abcd1234/files/wandb-history.jsonl", bytes, cuts);
}

// A history that jumps ahead (_step 100) and then goes on at lower steps logged under older
// wall times (no restart: re-logged rows), then rows without _step, which follow the latest
// row. A read that resumes between them must take up that row's step, not the highest step
// (nor the highest since a restart): the resume state is committed with the offset. (Found by
// fuzz_ingest: one read put a row at _step 13, two reads at 34.)
TEST(WandbTail, RowsWithoutAStepFollowTheLatestRowAcrossAResume) {
  auto row = [](const std::string& step, int ts) {
    return "{\"loss\": 1.5" + (step.empty() ? std::string() : ", \"_step\": " + step) +
           ", \"_timestamp\": " + std::to_string(1585000000 + ts) + "}\n";
  };
  std::string bytes;
  for (int i = 0; i < 4; ++i) bytes += row(std::to_string(i), 10 + i);
  bytes += row("100", 50);
  for (int i = 4; i < 7; ++i) bytes += row(std::to_string(i), i);  // older wall times
  const size_t before_stepless = bytes.size();
  for (int i = 0; i < 3; ++i) bytes += row("", 60 + i);
  bytes += row("7", 70);
  std::vector<size_t> cuts;
  for (size_t i = before_stepless - 40; i < bytes.size(); i += 7) cuts.push_back(i);
  ExpectCutsEqualOneRead("wandb/run-20200101_000000-abcd1234/files/wandb-history.jsonl", bytes, cuts);
}

TEST(WandbTail, AJsonlTailedLineByLineInHalvesEndsWithEveryRow) {
  TempDir dir;
  const std::string run = dir / "logs/wandb/run-20200101_000000-abcd1234";
  fs::create_directories(run);
  const std::string path = run + "/wandb-history.jsonl";
  auto st = store::Store::Open(dir / "t.db");
  ASSERT_TRUE(st.ok());
  const std::string bytes = HistoryLines(40);
  WriteFile(path, "");
  int64_t partial_tails = 0;
  for (size_t at = 0; at < bytes.size();) {
    const size_t nl = bytes.find('\n', at);
    const size_t half = at + (nl - at) / 2;
    for (size_t end : {half, nl + 1}) {  // half a line (the writer mid-write), then the rest
      AppendFile(path, bytes.substr(at, end - at));
      at = end;
      ingest::Summary s;
      ASSERT_TRUE(ingest::IngestPaths(**st, {dir / "logs"}, {}, &s).ok());
      ASSERT_EQ(s.totals.errors, 0);
      partial_tails += s.totals.partial_tails;
    }
  }
  EXPECT_EQ(partial_tails, 41);  // each half line waited, none was an error
  EXPECT_EQ(QueryInt(dir / "t.db", "SELECT count(*) FROM scalar_points WHERE tag = 'loss'"), 41);
  EXPECT_EQ(QueryInt(dir / "t.db", "SELECT count(*) FROM scalar_points WHERE tag = 'loss' "
                                   "AND value_class = 'nan'"),
            1);
  EXPECT_EQ(QueryInt(dir / "t.db", "SELECT count(*) FROM scalar_points WHERE tag = 'nested.a.b' "
                                   "AND value_class = '+inf'"),
            1);
}

TEST(WandbTail, ABadLineIsReportedWithItsOffsetAndTheOthersKept) {
  TempDir dir;
  const std::string run = dir / "logs/run";
  fs::create_directories(run);
  const std::string good = HistoryLines(3);
  const std::string bad = "{\"loss\": 1.0, \"_step\": 9\n";  // cut off by a crash, then appended to
  WriteFile(run + "/wandb-history.jsonl", good + bad + HistoryLines(2));
  auto st = store::Store::Open(dir / "t.db");
  ASSERT_TRUE(st.ok());
  ingest::Summary s;
  ASSERT_TRUE(ingest::IngestPaths(**st, {dir / "logs"}, {}, &s).ok());
  EXPECT_EQ(s.totals.errors, 1);
  EXPECT_EQ(QueryInt(dir / "t.db", "SELECT offset FROM ingest_errors WHERE kind = 'bad_line'"),
            static_cast<int64_t>(good.size()));
  // Every point of the other lines: 3 rows of loss and acc, a row of loss and nested.a.b,
  // and the same again for 2 rows.
  EXPECT_EQ(QueryInt(dir / "t.db", "SELECT count(*) FROM scalars"), (3 * 2 + 2) + (2 * 2 + 2));
}

TEST(WandbTail, CutsOfARealCoreLogThenCompletedEqualOneRead) {
  const std::string corpus = CorpusDir();
  if (corpus.empty()) GTEST_SKIP() << "../shared/corpus not found";
  const std::string rel = "wandb/run-20260120_015454-xinacahi/run-xinacahi.wandb";
  const std::string bytes =
      ReadFile(corpus + "/wandb-core-0.21/0Chris5R__StanfordCS336-Own-Transformer/" + rel);
  ASSERT_GT(bytes.size(), 1000000u);
  // Around every block boundary (32 KiB), and at odd offsets in between.
  std::vector<size_t> cuts = {0, 3, 7, 8};
  for (size_t b = 32768; b < bytes.size(); b += 32768 * 11)
    for (size_t d : {b - 7, b - 1, b, b + 1, b + 7, b + 4099}) cuts.push_back(d);
  ExpectCutsEqualOneRead(rel, bytes, cuts);
}

TEST(WandbTail, CutsOfARealPythonLogThenCompletedEqualOneRead) {
  const std::string corpus = CorpusDir();
  if (corpus.empty()) GTEST_SKIP() << "../shared/corpus not found";
  const std::string rel = "wandb/run-20240621_122906-qnolswhj/run-qnolswhj.wandb";
  const std::string bytes =
      ReadFile(corpus + "/wandb-0.17-python-hf-trainer/541Jack__LLaMA-Factory/" + rel);
  std::vector<size_t> cuts;
  for (size_t c = 0; c < bytes.size(); c += 29989) cuts.push_back(c);
  for (size_t b = 32768; b < bytes.size(); b += 65536) cuts.push_back(b - 3);
  ExpectCutsEqualOneRead(rel, bytes, cuts);
}

TEST(WandbTail, TensorBoardFilesLinkedIntoARunsFilesAreReadOnce) {
  // wandb.init(sync_tensorboard=True) links the event files into the run's files/ folder.
  const std::string corpus = CorpusDir();
  if (corpus.empty()) GTEST_SKIP() << "../shared/corpus not found";
  TempDir dir;
  const std::string real = dir / "logs/tb/version_0/events.out.tfevents.1.host.1.0";
  const std::string link = dir / "logs/wandb/run-20240101_000000-abc/files/version_0/events.out.tfevents.1.host.1.0";
  fs::create_directories(fs::path(real).parent_path());
  fs::create_directories(fs::path(link).parent_path());
  WriteFile(real, ReadFile(corpus + "/torch-summarywriter/" +
                           "ZeroToMax-ZYZ__study_tensorboard/runs/my_first_experiment/"
                           "events.out.tfevents.1771596596.zyzkings.7880.0"));
  fs::create_symlink(real, link);
  auto st = store::Store::Open(dir / "t.db");
  ASSERT_TRUE(st.ok());
  ingest::Summary s;
  // A whole-tree ingest picks the real path; ingesting the link itself then adds nothing, as
  // a daemon that sees the link later (or first the link, then the real file) must.
  ASSERT_TRUE(ingest::IngestPaths(**st, {dir / "logs"}, {}, &s).ok());
  const int64_t points = QueryInt(dir / "t.db", "SELECT count(*) FROM scalars");
  EXPECT_GT(points, 0);
  ASSERT_TRUE(ingest::IngestPaths(**st, {link}, {}, &s).ok());
  EXPECT_EQ(QueryInt(dir / "t.db", "SELECT count(*) FROM scalars"), points);
  EXPECT_EQ(QueryInt(dir / "t.db", "SELECT count(*) FROM sources"), 1);
}

TEST(WandbLegacyFiles, ConfigYamlInBothLayoutsAndTheSummary) {
  // SDK 0.8: every key wrapped in desc/value, two-space indents; wandb-core: value alone, four.
  const std::string old_style =
      "wandb_version: 1\n\n_wandb:\n  desc: null\n  value:\n    cli_version: 0.8.31\n"
      "lr:\n  desc: null\n  value: 0.0005\nenv:\n  desc: Gym id\n  value: MountainCar-v0\n"
      "amp:\n  desc: null\n  value: false\nname:\n  desc: null\n  value: 'a: b'\n";
  EXPECT_EQ(wandb::ParseConfigYaml(old_style),
            (wandb::KeyValues{{"lr", "0.0005"}, {"env", "\"MountainCar-v0\""}, {"amp", "false"},
                              {"name", "\"a: b\""}}));
  const std::string core_style =
      "_wandb:\n    value:\n        cli_version: 0.21.2\nbatch_size:\n    value: 256\n"
      "betas:\n    value:\n        - 0.9\n        - 0.95\nwarmup:\n    value: null\n";
  EXPECT_EQ(wandb::ParseConfigYaml(core_style),
            (wandb::KeyValues{{"batch_size", "256"}, {"warmup", "null"}}));  // lists left out

  auto summary = wandb::ParseSummaryJson(R"({"loss": NaN, "best": {"x": [1, Infinity]}, "s": "t"})");
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  EXPECT_EQ(*summary, (wandb::KeyValues{{"loss", "NaN"}, {"best", "{\"x\": [1, Infinity]}"}, {"s", "\"t\""}}));
  EXPECT_FALSE(wandb::ParseSummaryJson("[1, 2]").ok());
  EXPECT_FALSE(wandb::ParseSummaryJson("{\"a\": ").ok());
}

}  // namespace
}  // namespace tw
