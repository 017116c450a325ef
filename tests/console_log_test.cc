// Console logs: real training output (tests/data/sources/console, made by tools/source_runs
// with real CPU trainings) read by the profiles, point for point against what the trainings
// logged; cut anywhere and completed, equal to one read; `diagnose --log` and
// `profiles --test` as a user runs them; profiles that are wrong or hostile.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "decode/console_profiles.h"
#include "ingest/ingest.h"
#include "store/store.h"
#include "support/expected_points.h"
#include "support/store_dump.h"
#include "support/test_env.h"

namespace tw {
namespace {

using namespace tw::testing;
namespace fs = std::filesystem;

const std::string kConsole = std::string(TW_SOURCES_DIR) + "/console/";


// Reads `path` as a console log into `store`.
void IngestLog(store::Store& store, const std::string& path, ingest::Summary* summary,
               bool complete = false) {
  ingest::IngestOptions options;
  options.console_globs = {path};
  options.files_complete = complete;
  ASSERT_TRUE(ingest::IngestPaths(store, {path}, options, summary).ok());
}

TEST(ConsoleLog, EveryFrameworksLogGivesThePointsItsTrainingLogged) {
  const auto expected = ExpectedSourcePoints();
  ASSERT_FALSE(expected.empty()) << "tests/data/sources/expected.json did not load";
  int files = 0;
  for (const auto& [file, metrics] : expected) {
    if (!file.starts_with("console/") || !file.ends_with(".log")) continue;
    SCOPED_TRACE(file);
    ++files;
    auto st = store::Store::Open(":memory:");
    ASSERT_TRUE(st.ok());
    ingest::Summary s;
    IngestLog(**st, std::string(TW_SOURCES_DIR) + "/" + file, &s);
    EXPECT_EQ(s.totals.errors, 0);
    const std::string run = fs::path(file).stem().native();
    const MetricPoints got = StoredPoints((*st)->db(), run);
    for (const auto& [name, points] : metrics) {
      SCOPED_TRACE(name);
      auto it = got.find(name);
      ASSERT_NE(it, got.end()) << "metric not read";
      if (file.find("lightning") != std::string::npos && name == "train_loss") {
        // The bar is redrawn at every batch, and what a line of the log keeps is the bar at
        // the epoch's end: one point an epoch, each one the training logged.
        EXPECT_EQ(it->second.size(), 5u);
        for (const auto& p : it->second) EXPECT_THAT(points, ::testing::Contains(p));
        continue;
      }
      EXPECT_EQ(it->second, points);
    }
    for (const auto& [name, points] : got) EXPECT_TRUE(metrics.count(name)) << "extra metric " << name;
  }
  EXPECT_GE(files, 11);
}

// Each cut of the log, read, then the rest appended and read: exactly one read of the whole
// (the progress-bar step, the lines waiting for it and the line count are resumed from the
// store, not from memory: every read here is a fresh ingester).
void ExpectCutsEqualOneRead(const std::string& name, size_t every) {
  const std::string bytes = ReadFile(kConsole + name);
  ASSERT_GT(bytes.size(), 100u);
  TempDir dir;
  const std::string path = dir / name;
  WriteFile(path, bytes);
  PinMtime(path);
  auto ref = store::Store::Open(dir / "ref.db");
  ASSERT_TRUE(ref.ok());
  ingest::Summary s;
  IngestLog(**ref, path, &s);
  const auto want = DumpStore((*ref)->db());
  ASSERT_GT(s.totals.scalars, 10);
  for (size_t cut = 0; cut <= bytes.size(); cut += every) {
    SCOPED_TRACE("cut at " + std::to_string(cut) + " of " + std::to_string(bytes.size()));
    WriteFile(path, bytes.substr(0, cut));
    PinMtime(path);
    auto st = store::Store::Open(":memory:");
    ASSERT_TRUE(st.ok());
    ingest::Summary first, second;
    IngestLog(**st, path, &first);
    AppendFile(path, bytes.substr(cut));
    PinMtime(path);
    IngestLog(**st, path, &second);
    ASSERT_EQ(DumpStore((*st)->db()), want);
  }
}

TEST(ConsoleLog, EveryPrefixOfAKerasLogThenCompletedEqualsOneRead) {
  ExpectCutsEqualOneRead("keras_stuck_tiny_lr_verbose2.log", 1);
}

TEST(ConsoleLog, CutsOfAnHfLogWithItsProgressBarThenCompletedEqualOneRead) {
  // Every 7th byte: 1,650 cuts through bars, carriage returns and the dicts between them.
  ExpectCutsEqualOneRead("hf_lr_nan.log", 7);
}

TEST(ConsoleLog, CutsOfALightningBarLogThenCompletedEqualOneRead) {
  ExpectCutsEqualOneRead("lightning_mlp_healthy.log", 53);
}

TEST(ConsoleLog, HfDictsWithoutTheBarTakeTheirPlaceAsTheStep) {
  // stdout alone (`> train.log`): no bar, so the n-th dict is step n - 1.
  TempDir dir;
  const std::string path = dir / "train.log";
  WriteFile(path, "loading...\n{'loss': 2.5, 'learning_rate': 1e-05, 'epoch': 0.1}\n"
                  "some warning\n{'loss': nan, 'grad_norm': inf, 'epoch': 0.2}\n"
                  "{'eval_loss': 1.5, 'epoch': 0.2}\n");
  auto st = store::Store::Open(":memory:");
  ASSERT_TRUE(st.ok());
  ingest::Summary s;
  IngestLog(**st, path, &s);
  const MetricPoints got = StoredPoints((*st)->db(), "train");
  EXPECT_EQ(got.at("loss"), (PointList{{0, "2.5"}, {1, "nan"}}));
  EXPECT_EQ(got.at("grad_norm"), (PointList{{1, "inf"}}));
  EXPECT_EQ(got.at("eval_loss"), (PointList{{2, "1.5"}}));
  EXPECT_EQ(s.totals.non_finite, 2);
}

TEST(ConsoleLog, ATrainingRestartedIntoTheSameLogSupersedesWhatItRelogs) {
  TempDir dir;
  const std::string path = dir / "nano.log";
  std::string text;
  for (int i = 0; i <= 30; i += 10) text += "iter " + std::to_string(i) + ": loss 2." + std::to_string(i) + ", time 10.0ms, mfu 1.00%\n";
  for (int i = 20; i <= 40; i += 10) text += "iter " + std::to_string(i) + ": loss 1." + std::to_string(i) + ", time 10.0ms, mfu 1.00%\n";
  WriteFile(path, text);
  auto st = store::Store::Open(":memory:");
  ASSERT_TRUE(st.ok());
  ingest::Summary s;
  IngestLog(**st, path, &s);
  EXPECT_EQ(StoredPoints((*st)->db(), "nano").at("loss"),
            (PointList{{0, "2"}, {10, "2.1000000000000001"}, {20, "1.2"}, {30, "1.3"}, {40, "1.3999999999999999"}}));
  EXPECT_EQ(s.totals.restarts, 1);
}

TEST(ConsoleLog, DiagnoseLogOnAnHfLogThatWentNanSaysSoWithCauseAndFix) {
  std::string out;
  const int rc = RunCommand(ShellQuote(TW_CLI_BINARY) + " diagnose --log " +
                                ShellQuote(kConsole + "hf_lr_nan.log"), &out);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_THAT(out, ::testing::HasSubstr("== hf_lr_nan: kill"));
  EXPECT_THAT(out, ::testing::HasSubstr("non_finite_loss on loss"));
  EXPECT_THAT(out, ::testing::HasSubstr("loss is +Inf from step 21"));
  EXPECT_THAT(out, ::testing::HasSubstr("cause: "));
  EXPECT_THAT(out, ::testing::HasSubstr("fix: "));
  // Pasted on standard input, the same.
  std::string piped;
  EXPECT_EQ(RunCommand(ShellQuote(TW_CLI_BINARY) + " diagnose --log - < " +
                           ShellQuote(kConsole + "hf_lr_nan.log"), &piped), 0);
  EXPECT_THAT(piped, ::testing::HasSubstr("loss is +Inf from step 21"));
  EXPECT_THAT(piped, ::testing::HasSubstr("== stdin: kill"));
}

TEST(ConsoleLog, DiagnoseLogOnALogWithoutMetricsSaysWhatItTried) {
  TempDir dir;
  WriteFile(dir / "plain.log", "hello\nworld\n");
  std::string out;
  EXPECT_EQ(RunCommand(ShellQuote(TW_CLI_BINARY) + " diagnose --log " + ShellQuote(dir / "plain.log"), &out), 1);
  EXPECT_THAT(out, ::testing::HasSubstr("no line of it is a metric"));
  EXPECT_THAT(out, ::testing::HasSubstr("hf_trainer"));
  EXPECT_EQ(RunCommand(ShellQuote(TW_CLI_BINARY) + " diagnose --log " + ShellQuote(dir / "none.log"), &out), 1);
  EXPECT_THAT(out, ::testing::HasSubstr("none.log"));
}

TEST(ConsoleProfiles, AUserProfileIsReadFirstAndABrokenOneIsNamedWithItsLine) {
  TempDir dir;
  WriteFile(dir / "mine.toml",
            "name = \"mine\"\n[[line]]\nmatch = '^STEP'\nstep = '^STEP (\\d+)'\n"
            "pairs = '\\b(acc)=({number})'\n");
  std::vector<std::string> errors;
  auto set = decode::ProfileSet::Load(dir.path(), &errors);
  EXPECT_TRUE(errors.empty());
  EXPECT_EQ(set->names().front(), "mine");
  decode::ConsoleValues v;
  ASSERT_TRUE(set->Read("STEP 7 acc=0.5 loss=1", &v));
  EXPECT_EQ(v.profile, "mine");
  EXPECT_EQ(v.step, 7);
  EXPECT_EQ(v.metrics, (std::vector<std::pair<std::string, double>>{{"acc", 0.5}}));

  WriteFile(dir / "z_bad.toml", "name = \"bad\"\n[[line]]\nmatch = '(unclosed'\n");
  WriteFile(dir / "z_nothing.toml", "name = \"nothing\"\n[[line]]\nmatch = 'x'\n");
  WriteFile(dir / "z_syntax.toml", "name = \"s\"\n\n[[line]\n");
  WriteFile(dir / "z_guard.toml", "name = \"g\"\nx = 1\xc3\xa9\n");
  errors.clear();
  set = decode::ProfileSet::Load(dir.path(), &errors);
  ASSERT_EQ(errors.size(), 4u);
  EXPECT_THAT(errors[0], ::testing::HasSubstr("z_bad.toml: [[line]] 1: match is not a regex"));
  EXPECT_THAT(errors[1], ::testing::HasSubstr("z_guard.toml"));
  EXPECT_THAT(errors[2], ::testing::HasSubstr("z_nothing.toml: [[line]] 1: takes nothing"));
  EXPECT_THAT(errors[3], ::testing::HasSubstr("z_syntax.toml:3"));
  EXPECT_EQ(set->names().front(), "mine");  // the others were skipped, not the good one
}

TEST(ConsoleProfiles, APatternThatBacktracksWithoutEndReadsNothingAndReturns) {
  TempDir dir;
  WriteFile(dir / "slow.toml", "name = \"slow\"\n[[line]]\nmatch = '^(a+)+$'\npairs = '(a)=({number})'\n");
  std::vector<std::string> errors;
  auto set = decode::ProfileSet::Load(dir.path(), &errors);
  ASSERT_TRUE(errors.empty());
  decode::ConsoleValues v;
  EXPECT_FALSE(set->Read(std::string(40, 'a') + "!", &v));
  // A segment longer than 16 KiB is not read at all.
  EXPECT_FALSE(set->Read("step=1 loss=2 " + std::string(20000, ' '), &v));
  EXPECT_TRUE(set->Read("step=1 loss=2", &v));
}

TEST(ConsoleProfiles, TerminalColoursAndBackspacesAreNotPartOfTheText) {
  auto set = decode::ProfileSet::Load("", nullptr);
  decode::ConsoleValues v;
  ASSERT_TRUE(set->Read("\x1b[1m8/8\x1b[0m \x1b[32m━━━━\x1b[0m \x1b[1m0s\x1b[0m 3ms/step - loss: 0.25 - accuracy: 0.5", &v));
  EXPECT_EQ(v.profile, "keras");
  EXPECT_EQ(v.metrics, (std::vector<std::pair<std::string, double>>{{"loss", 0.25}, {"accuracy", 0.5}}));
  EXPECT_EQ(decode::Segments("a\rb\b\b\rc").size(), 3u);
}

TEST(ConsoleProfiles, ProfilesTestShowsWhatEachLineMatched) {
  std::string out;
  EXPECT_EQ(RunCommand(ShellQuote(TW_CLI_BINARY) + " profiles --test " +
                           ShellQuote(kConsole + "megatron_gpt_lr_too_high.log"), &out), 0) << out;
  EXPECT_THAT(out, ::testing::HasSubstr("megatron#1 step=10"));
  EXPECT_THAT(out, ::testing::HasSubstr("lm loss="));
  EXPECT_THAT(out, ::testing::HasSubstr("megatron#2 step=50"));
  EXPECT_THAT(out, ::testing::HasSubstr("lines: "));
}

}  // namespace
}  // namespace tw
