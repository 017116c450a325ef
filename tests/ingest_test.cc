// Ingest of files the test writer produces in each real writer's style: what is stored, how
// restarts are marked, and that reading in pieces equals reading in one go.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <limits>

#include "ingest/ingest.h"
#include "store/store.h"
#include "support/event_writer.h"
#include "support/store_dump.h"
#include "support/test_env.h"
#include "tfrecord/writer.h"

namespace tw {
namespace {

using namespace tw::testing;
namespace fs = std::filesystem;

class IngestTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = store::Store::Open(dir_ / "t.db");
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    store_ = std::move(*s);
    logdir_ = dir_ / "logs";
    fs::create_directories(logdir_);
  }
  ingest::Summary Ingest() {
    ingest::Summary summary;
    Status st = ingest::IngestPaths(*store_, {logdir_}, {}, &summary);
    EXPECT_TRUE(st.ok()) << st.ToString();
    return summary;
  }
  std::string File(const std::string& run, int counter = 0) {
    return logdir_ + "/" + run + "/" + EventFileName(1700000000 + counter, "host", 42, counter);
  }
  // Rows of a query as "a|b|c" strings.
  std::vector<std::string> Rows(const std::string& sql) {
    auto st = store_->db().Prepare(sql);
    EXPECT_TRUE(st.ok()) << st.status().ToString();
    std::vector<std::string> out;
    while (*st->Step()) {
      std::string line;
      for (int c = 0; c < st->ColumnCount(); ++c) {
        if (c) line += '|';
        line += st->IsNull(c) ? std::string("NULL") : st->Text(c);
      }
      out.push_back(line);
    }
    return out;
  }
  int64_t Count(const std::string& sql) {
    auto rows = Rows(sql);
    return rows.empty() ? -1 : std::stoll(rows[0]);
  }

  TempDir dir_;
  std::string logdir_;
  std::unique_ptr<store::Store> store_;
};

TEST_F(IngestTest, PyTorchSimpleValues) {
  EventFileWriter w(File("run"));
  w.Add(FileVersionEvent(1.0, kTorchSourceWriter));
  for (int s = 0; s < 100; ++s) w.Add(SimpleScalarEvent("train/loss", s, 10.0 + s, 1.0f / (s + 1)));
  w.Flush();
  auto sum = Ingest();
  EXPECT_EQ(sum.totals.scalars, 100);
  EXPECT_EQ(sum.totals.errors, 0);
  EXPECT_EQ(Rows("SELECT step, value, wall_time FROM scalar_points WHERE step IN (0, 99) ORDER BY step"),
            (std::vector<std::string>{"0|1.0|10.0", "99|0.00999999977648258|109.0"}));
  EXPECT_EQ(Count("SELECT count(*) FROM run_events WHERE kind = 'source_metadata' AND detail = '" +
                  std::string(kTorchSourceWriter) + "'"),
            1);
}

TEST_F(IngestTest, Tf2TensorScalarsRememberMetadataFromTheFirstValue) {
  EventFileWriter w(File("train"));
  w.Add(FileVersionEvent(1.0));
  for (int s = 0; s < 5; ++s) w.Add(Tf2ScalarEvent("epoch_loss", s, 2.0 + s, 0.5f * s, s == 0));
  w.Flush();
  Ingest();
  EXPECT_EQ(Rows("SELECT group_concat(value) FROM (SELECT value FROM scalar_points ORDER BY step)"),
            (std::vector<std::string>{"0.0,0.5,1.0,1.5,2.0"}));
  EXPECT_EQ(Rows("SELECT plugin FROM series"), (std::vector<std::string>{"scalars"}));
  // A later file of the same run (a new writer) sends metadata again; one without it still
  // decodes, because the plugin was remembered (and persisted) for the run and tag.
  EventFileWriter w2(File("train", 1));
  w2.Add(Tf2ScalarEvent("epoch_loss", 5, 9.0, 2.5f, false));
  w2.Flush();
  Ingest();
  EXPECT_EQ(Count("SELECT count(*) FROM scalar_points"), 6);
}

TEST_F(IngestTest, EveryScalarDtypeAndEncoding) {
  struct Case {
    ScalarEncoding enc;
    double in, want;
  };
  const Case cases[] = {
      {ScalarEncoding::kFloatContent, 0.1, static_cast<double>(0.1f)},
      {ScalarEncoding::kFloatVal, -2.5, -2.5},
      {ScalarEncoding::kDoubleContent, 0.1, 0.1},  // double precision kept exactly
      {ScalarEncoding::kDoubleVal, 1e-300, 1e-300},
      {ScalarEncoding::kHalfVal, 0.333251953125, 0.333251953125},
      {ScalarEncoding::kHalfContent, -65504, -65504},
      {ScalarEncoding::kBfloat16Val, 3.140625, 3.140625},
      {ScalarEncoding::kBfloat16Content, -0.5, -0.5},
      {ScalarEncoding::kInt32Val, -7, -7},
      {ScalarEncoding::kInt64Val, 1099511627776.0, 1099511627776.0},
      {ScalarEncoding::kInt64Content, 123456789, 123456789},
      {ScalarEncoding::kBoolVal, 1, 1},
  };
  EventFileWriter w(File("dtypes"));
  int i = 0;
  for (const auto& c : cases) {
    const std::string tag = std::string(1, 't').append(std::to_string(i++));
    w.Add(TensorScalarEvent(tag, 1, 5.0, c.in, c.enc, true));
  }
  w.Flush();
  auto sum = Ingest();
  EXPECT_EQ(sum.totals.errors, 0);
  i = 0;
  for (const auto& c : cases) {
    const std::string tag = std::string(1, 't').append(std::to_string(i++));
    auto st = store_->db().Prepare("SELECT value FROM scalar_points WHERE tag = ?1");
    st->Bind(1, tag);
    ASSERT_TRUE(*st->Step()) << tag;
    EXPECT_EQ(st->Real(0), c.want) << tag;
  }
}

TEST_F(IngestTest, NanAndInfinitiesRoundTrip) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  EventFileWriter w(File("sick"));
  w.Add(SimpleScalarEvent("loss", 0, 1, 2.0f));
  w.Add(SimpleScalarEvent("loss", 1, 2, nan));
  w.Add(SimpleScalarEvent("loss", 2, 3, inf));
  w.Add(SimpleScalarEvent("loss", 3, 4, -inf));
  w.Add(TensorScalarEvent("tf2_loss", 3, 4, std::nan(""), ScalarEncoding::kDoubleContent, true));
  w.Flush();
  Ingest();
  EXPECT_EQ(Rows("SELECT tag, step, value, value_class FROM scalar_points ORDER BY tag, step"),
            (std::vector<std::string>{"loss|0|2.0|finite", "loss|1|NULL|nan", "loss|2|Inf|+inf",
                                      "loss|3|-Inf|-inf", "tf2_loss|3|NULL|nan"}));
}

TEST_F(IngestTest, HistogramsLegacyAndTf2) {
  EventFileWriter w(File("h"));
  w.Add(HistogramEvent("weights", 1, 1.0, {0.5, 1.5, 1.6, 2.5}, {1.0, 2.0, 3.0, 1e12}));
  w.Add(Tf2HistogramEvent("tf2_weights", 1, 1.0, {{0, 1, 2}, {1, 2, 3}}, true));
  w.Add(Tf2HistogramEvent("tf2_weights", 2, 2.0, {{0, 1, 5}}, false));
  w.Flush();
  auto sum = Ingest();
  EXPECT_EQ(sum.totals.histograms, 3);
  EXPECT_EQ(Rows("SELECT tag, step, count, sum, min, max, length(buckets) FROM histogram_points "
                 "ORDER BY tag, step"),
            (std::vector<std::string>{"tf2_weights|1|5.0|5.5|0.0|2.0|48",
                                      "tf2_weights|2|5.0|2.5|0.0|1.0|24",
                                      "weights|1|4.0|6.1|0.5|2.5|72"}));
}

TEST_F(IngestTest, HparamsTextAndCountedBlobs) {
  EventFileWriter w(File("hp"));
  w.Add(HParamsExperimentEvent(1));
  w.Add(HParamsStartEvent(1, {{"lr", 0.001}, {"optimizer", std::string("adam")}, {"amp", true}}, false));
  w.Add(HParamsEndEvent(2));
  w.Add(TextEvent("notes", 0, 1, {"line one", "line two"}));
  w.Add(ImageEvent("samples", 0, 1));
  w.Add(GraphDefEvent(1, 1000));
  w.Flush();
  EventFileWriter w2(File("tf2hp"));
  w2.Add(HParamsStartEvent(1, {{"units", 32.0}}, true));
  w2.Flush();
  Ingest();
  EXPECT_EQ(Rows("SELECT run, key, value_type, value FROM run_hparams ORDER BY run, key"),
            (std::vector<std::string>{"hp|amp|bool|1.0", "hp|lr|number|0.001",
                                      "hp|optimizer|string|adam", "tf2hp|units|number|32.0"}));
  EXPECT_EQ(Rows("SELECT tag, text FROM text_points"),
            (std::vector<std::string>{"notes|line one\nline two"}));
  EXPECT_EQ(Rows("SELECT images, graphs FROM runs WHERE name = 'hp'"),
            (std::vector<std::string>{"1|1"}));
  EXPECT_EQ(Count("SELECT count(*) FROM series WHERE tag LIKE '_hparams_%'"), 0);
}

TEST_F(IngestTest, PurgeStepResumeSupersedesTheWholeRunFromTheStartStep) {
  // PyTorch SummaryWriter(purge_step=50) after a crash at step 100: the new file opens with a
  // SessionLog START at step 50 and logs 50.. again.
  EventFileWriter first(File("resume", 0));
  first.Add(SessionLogEvent(0, 1, 1));
  for (int s = 0; s <= 100; ++s) {
    first.Add(SimpleScalarEvent("loss", s, 10 + s, 1.0f));
    if (s % 10 == 0) first.Add(SimpleScalarEvent("val_loss", s, 10 + s, 1.0f));
  }
  first.Flush();
  Ingest();
  EventFileWriter second(File("resume", 1));
  second.Add(SessionLogEvent(50, 200, 1));
  for (int s = 50; s <= 120; ++s) second.Add(SimpleScalarEvent("loss", s, 200 + s, 2.0f));
  second.Flush();
  Ingest();
  // loss: 0..49 from the first file, 50..120 from the second. val_loss: 0..40 only, because
  // the START supersedes every tag of the run, also those the new writer has not re-logged.
  EXPECT_EQ(Rows("SELECT tag, count(*), min(step), max(step), sum(value) FROM scalar_points "
                 "GROUP BY tag ORDER BY tag"),
            (std::vector<std::string>{"loss|121|0|120|192.0", "val_loss|5|0|40|5.0"}));
  EXPECT_EQ(Count("SELECT count(*) FROM scalar_points_all"), 101 + 11 + 71);
  EXPECT_EQ(Rows("SELECT step, detail LIKE 'SessionLog START%' FROM run_events WHERE kind = 'restart'"),
            (std::vector<std::string>{"50|1"}));  // one restart, run-wide
}

TEST_F(IngestTest, PlainStepRewindSupersedesTheRewoundTags) {
  EventFileWriter w(File("rewind"));
  for (int s = 0; s <= 100; ++s) w.Add(MultiScalarEvent(s, s, {{"loss", 1.0f}, {"acc", 0.5f}}));
  for (int s = 60; s <= 80; ++s) w.Add(MultiScalarEvent(s, 1000 + s, {{"loss", 2.0f}, {"acc", 0.7f}}));
  w.Flush();
  auto sum = Ingest();
  EXPECT_EQ(sum.totals.restarts, 1);
  EXPECT_EQ(Rows("SELECT tag, count(*), max(step), round(sum(value), 3) FROM scalar_points "
                 "GROUP BY tag ORDER BY tag"),
            (std::vector<std::string>{"acc|81|80|44.7", "loss|81|80|102.0"}));
  EXPECT_EQ(Count("SELECT count(*) FROM scalar_points_all WHERE superseded = 1"), 2 * 41);
}

TEST_F(IngestTest, RewindInASharedDirectoryLeavesOtherWritersTagsAlone) {
  // HF Trainer style: a training writer, then evaluate() from a new Trainer at step 0.
  EventFileWriter train(File("shared", 0));
  for (int s = 0; s <= 100; s += 10) {
    train.Add(SimpleScalarEvent("train/loss", s, s, 1.0f));
    train.Add(SimpleScalarEvent("eval/loss", s, s, 1.0f));
  }
  train.Flush();
  EventFileWriter eval(File("shared", 1));
  eval.Add(SimpleScalarEvent("eval/loss", 0, 500, 3.0f));
  eval.Flush();
  Ingest();
  EXPECT_EQ(Rows("SELECT tag, count(*) FROM scalar_points GROUP BY tag ORDER BY tag"),
            (std::vector<std::string>{"eval/loss|1", "train/loss|11"}));
}

TEST_F(IngestTest, TwoConcurrentFilesInOneRunKeepEveryPoint) {
  EventFileWriter a(File("pair", 0)), b(File("pair", 1));
  for (int s = 0; s < 50; ++s) {
    a.Add(SimpleScalarEvent("train/loss", s, s, 1.0f));
    b.Add(SimpleScalarEvent("eval/acc", s, s, 0.5f));
    b.Add(SimpleScalarEvent("shared_step_tag", s, s, 0.1f));
    a.Add(SimpleScalarEvent("shared_step_tag", s, s, 0.2f));  // both log the same step: both kept
    if (s % 7 == 0) {
      a.Flush();
      b.Flush();
      Ingest();
    }
  }
  a.Flush();
  b.Flush();
  auto sum = Ingest();
  EXPECT_EQ(Count("SELECT count(*) FROM scalar_points"), 200);
  EXPECT_EQ(Count("SELECT count(*) FROM run_events WHERE kind = 'restart'"), 0);
  EXPECT_EQ(Count("SELECT count(DISTINCT source_id) FROM scalar_points WHERE tag = 'shared_step_tag'"), 2);
}

TEST_F(IngestTest, IdempotentReingest) {
  EventFileWriter w(File("r"));
  for (int s = 0; s < 30; ++s) w.Add(SimpleScalarEvent("loss", s, s, 1.0f));
  w.Flush();
  Ingest();
  const auto before = DumpStore(store_->db());
  auto again = Ingest();
  EXPECT_EQ(again.totals.records, 0);
  EXPECT_EQ(DumpStore(store_->db()), before);
}

TEST_F(IngestTest, ReplacedFileIsANewGenerationAndOldPointsAreSuperseded) {
  const std::string path = File("gen");
  {
    EventFileWriter w(path);
    for (int s = 0; s < 10; ++s) w.Add(SimpleScalarEvent("loss", s, s, 1.0f));
    w.Flush();
  }
  Ingest();
  {
    EventFileWriter w(path);  // truncates: smaller than what was committed
    for (int s = 0; s < 3; ++s) w.Add(SimpleScalarEvent("loss", s, s, 2.0f));
    w.Flush();
  }
  Ingest();
  EXPECT_EQ(Rows("SELECT count(*), sum(value) FROM scalar_points"), (std::vector<std::string>{"3|6.0"}));
  EXPECT_EQ(Rows("SELECT generation, status FROM sources ORDER BY generation"),
            (std::vector<std::string>{"0|replaced", "1|active"}));
}

TEST_F(IngestTest, PartialRecordWaitsAndCompletes) {
  const std::string path = File("tail");
  EventFileWriter w(path);
  for (int s = 0; s < 3; ++s) w.Add(SimpleScalarEvent("loss", s, s, 1.0f));
  w.Flush();
  w.Add(SimpleScalarEvent("loss", 3, 3, 1.0f));
  w.FlushPartial(7);  // a writer caught mid-flush
  auto first = Ingest();
  EXPECT_EQ(first.totals.scalars, 3);
  EXPECT_EQ(first.totals.partial_tails, 1);
  EXPECT_EQ(first.totals.errors, 0);
  w.Flush();
  auto second = Ingest();
  EXPECT_EQ(second.totals.scalars, 1);
  EXPECT_EQ(second.totals.partial_tails, 0);
  EXPECT_EQ(Count("SELECT count(*) FROM scalar_points"), 4);
}

// Ingests `full` once; then for each prefix length in `cuts`, ingests the prefix into a fresh
// store, completes the file, ingests again, and compares the two stores.
void ExpectPrefixThenCompleteEqualsFull(const std::string& full_bytes, const std::vector<size_t>& cuts,
                                        const std::string& name) {
  TempDir dir;
  const std::string run = dir / "logs/run";
  fs::create_directories(run);
  const std::string path = run + "/" + name;
  WriteFile(path, full_bytes);
  auto ref = store::Store::Open(dir / "ref.db");
  ingest::Summary s;
  ASSERT_TRUE(ingest::IngestPaths(**ref, {dir / "logs"}, {}, &s).ok());
  const auto want = DumpStore((*ref)->db());
  for (size_t cut : cuts) {
    SCOPED_TRACE("prefix of " + std::to_string(cut) + " bytes");
    WriteFile(path, full_bytes.substr(0, cut));
    auto st = store::Store::Open(":memory:");
    ASSERT_TRUE(st.ok());
    ASSERT_TRUE(ingest::IngestPaths(**st, {dir / "logs"}, {}, &s).ok());
    AppendFile(path, full_bytes.substr(cut));
    ASSERT_TRUE(ingest::IngestPaths(**st, {dir / "logs"}, {}, &s).ok());
    ASSERT_EQ(DumpStore((*st)->db()), want);
  }
}

std::vector<size_t> AllCuts(size_t n) {
  std::vector<size_t> v;
  for (size_t i = 0; i <= n; ++i) v.push_back(i);
  return v;
}

TEST(IngestPrefix, EveryPrefixOfAGeneratedFileThenCompletedEqualsOneRead) {
  TempDir dir;
  EventFileWriter w(dir / "f");
  w.Add(FileVersionEvent(1, kTorchSourceWriter));
  w.Add(Tf2ScalarEvent("a", 0, 1, 1.5f, true));
  w.Add(Tf2ScalarEvent("a", 1, 2, 2.5f, false));
  w.Add(HistogramEvent("h", 1, 2, {1, 2, 3}, {1.5, 2.5, 1e9}));
  w.Add(SessionLogEvent(2, 3, 1));
  w.Add(SimpleScalarEvent("b", 2, 3, 0.5f));
  w.Add(SimpleScalarEvent("b", 1, 4, 0.25f));  // a rewind
  w.Add(TextEvent("t", 1, 4, {"x"}));
  w.Flush();
  const std::string bytes = ReadFile(dir / "f");
  ExpectPrefixThenCompleteEqualsFull(bytes, AllCuts(bytes.size()), EventFileName(1, "h", 1, 0));
}

TEST(IngestPrefix, PrefixesOfRealFilesThenCompletedEqualOneRead) {
  const std::string corpus = CorpusDir();
  if (corpus.empty()) GTEST_SKIP() << "../shared/corpus not found";
  for (const char* rel :
       {"keras-1.2-tensorboard-callback/keras-team__keras/examples/_mnist/"
        "events.out.tfevents.1487804655.achal-Inspiron-7559",
        "pytorch-lightning-1.1/AtomScott__FractalDB/lightning_logs/version_0/"
        "events.out.tfevents.1609169139.e8fc262d1b07.21087.0",
        "keras-tf2-callback/mrdbourke__tensorflow-deep-learning/stevesCode/logs/hparam_tuning/"
        "run-0/events.out.tfevents.1625681315.LAPTOP-L8IF378O.24356.59162.v2"}) {
    SCOPED_TRACE(rel);
    const std::string bytes = ReadFile(corpus + "/" + rel);
    // Every byte for small files; for larger ones every byte of the first 600 and then a
    // stride that still lands inside headers, data and CRCs.
    std::vector<size_t> cuts;
    for (size_t i = 0; i <= bytes.size(); i += (i < 600 ? 1 : 37)) cuts.push_back(i);
    ExpectPrefixThenCompleteEqualsFull(bytes, cuts, fs::path(rel).filename());
  }
}

TEST(IngestCorruption, EverySingleByteCorruptionIsReportedAndSparesOtherRecords) {
  TempDir dir;
  const std::string run = dir / "logs/run";
  fs::create_directories(run);
  const std::string path = run + "/" + EventFileName(1, "h", 1, 0);
  std::vector<std::string> events;
  for (int s = 0; s < 5; ++s) events.push_back(SimpleScalarEvent("loss", s, s, 0.5f + s));
  std::string bytes;
  std::vector<std::pair<size_t, size_t>> spans;  // framed record [begin, end)
  for (const auto& e : events) {
    const size_t begin = bytes.size();
    bytes += tfrecord::FrameRecord(e);
    spans.emplace_back(begin, bytes.size());
  }
  for (size_t i = 0; i < bytes.size(); ++i) {
    SCOPED_TRACE("byte " + std::to_string(i));
    std::string bad = bytes;
    bad[i] = static_cast<char>(bad[i] ^ 0x5a);
    WriteFile(path, bad);
    auto st = store::Store::Open(":memory:");
    ingest::Summary s;
    ASSERT_TRUE(ingest::IngestPaths(**st, {dir / "logs"}, {}, &s).ok());
    EXPECT_GE(s.totals.errors, 1);
    for (size_t r = 0; r < spans.size(); ++r) {
      const bool hit = i >= spans[r].first && i < spans[r].second;
      auto q = (*st)->db().Prepare("SELECT count(*) FROM scalars WHERE step = ?1 AND value = ?2");
      q->Bind(1, static_cast<int64_t>(r)).Bind(2, 0.5 + static_cast<double>(r));
      ASSERT_TRUE(*q->Step());
      if (!hit) EXPECT_EQ(q->Int(0), 1) << "record " << r << " lost";
      else EXPECT_EQ(q->Int(0), 0) << "damaged record " << r << " stored";
    }
  }
}

}  // namespace
}  // namespace tw
