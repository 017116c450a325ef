// Ingests every event file of ../shared/corpus (written by real writers) and checks what
// trainwatch stored against what MANIFEST.md says each file holds.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "ingest/ingest.h"
#include "store/store.h"
#include "support/test_env.h"

namespace tw {
namespace {

namespace fs = std::filesystem;
using testing::CorpusDir;
using testing::TempDir;

struct ManifestEntry {
  std::string path;  // relative to the corpus
  int64_t records = 0;
  std::map<std::string, int64_t> values;  // "simple_value" -> count, ...
};

// Rows look like: | `path` | bytes | sha | repo | commit | path | writer | license | contents |
// where contents starts "N records, brain.Event:2, ..., values {simple_value: 80, ...}, ...".
// Parsed by hand: keys like "tensor[float,r0,content]" hold commas.
std::vector<ManifestEntry> ReadManifest(const std::string& corpus) {
  std::ifstream in(corpus + "/MANIFEST.md");
  std::vector<ManifestEntry> out;
  std::string line;
  while (std::getline(in, line)) {
    if (!line.starts_with("| `")) continue;
    ManifestEntry e;
    e.path = line.substr(3, line.find('`', 3) - 3);
    if (e.path.find("tfevents") == std::string::npos) continue;
    const size_t rec = line.find(" records, ");
    if (rec != std::string::npos) {
      size_t digits = rec;
      while (digits > 0 && std::isdigit(static_cast<unsigned char>(line[digits - 1]))) --digits;
      e.records = std::stoll(line.substr(digits, rec - digits));
    }
    const size_t open = line.find("values {");
    if (open != std::string::npos) {
      const size_t close = line.find('}', open);
      std::istringstream vals(line.substr(open + 8, close - open - 8));
      std::string key;
      int64_t n;
      // "simple_value: 3769, tensor[string,r1]: 2"
      while (vals >> key >> n) {
        key.pop_back();  // the ':'
        e.values[key] = n;
        vals.ignore(1, ',');
      }
    }
    out.push_back(std::move(e));
  }
  return out;
}

int64_t QueryInt(store::Db& db, const std::string& sql, const std::string& bind = "") {
  auto st = db.Prepare(sql);
  EXPECT_TRUE(st.ok()) << st.status().ToString();
  if (!bind.empty()) st->Bind(1, bind);
  auto row = st->Step();
  EXPECT_TRUE(row.ok() && *row) << sql;
  return st->Int(0);
}

class CorpusIngest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    corpus_ = new std::string(CorpusDir());
    if (corpus_->empty()) return;
    dir_ = new TempDir();
    auto s = store::Store::Open(*dir_ / "corpus.db");
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    store_ = s->release();
    ASSERT_TRUE(ingest::IngestPaths(*store_, {*corpus_}, {}, &summary_).ok());
  }
  static void TearDownTestSuite() {
    delete store_;
    delete dir_;
    delete corpus_;
  }
  void SetUp() override {
    if (corpus_->empty()) GTEST_SKIP() << "../shared/corpus not found";
  }
  static int64_t SourceInt(const std::string& sql, const std::string& rel) {
    return QueryInt(store_->db(), sql, *corpus_ + "/" + rel);
  }

  static inline std::string* corpus_ = nullptr;
  static inline TempDir* dir_ = nullptr;
  static inline store::Store* store_ = nullptr;
  static inline ingest::Summary summary_;
};

TEST_F(CorpusIngest, EveryFileMatchesItsManifestCounts) {
  const auto manifest = ReadManifest(*corpus_);
  ASSERT_GE(manifest.size(), 40u);
  for (const auto& e : manifest) {
    SCOPED_TRACE(e.path);
    if (e.path.ends_with(".profile-empty")) {
      EXPECT_EQ(SourceInt("SELECT count(*) FROM sources WHERE path = ?1", e.path), 0);
      continue;
    }
    EXPECT_EQ(SourceInt("SELECT records FROM sources WHERE path = ?1", e.path), e.records);
    auto count = [&](const char* key) { return e.values.count(key) ? e.values.at(key) : 0; };
    const int64_t scalars = count("simple_value") + count("tensor[float,r0,content]");
    EXPECT_EQ(SourceInt("SELECT count(*) FROM scalars WHERE source_id = "
                        "(SELECT source_id FROM sources WHERE path = ?1)",
                        e.path),
              scalars);
    EXPECT_EQ(SourceInt("SELECT count(*) FROM histograms WHERE source_id = "
                        "(SELECT source_id FROM sources WHERE path = ?1)",
                        e.path),
              count("histo"));
  }
}

TEST_F(CorpusIngest, GitLfsPointersAreRejectedOnceAndClearly) {
  auto st = store_->db().Prepare(
      "SELECT e.kind, e.offset, e.detail, s.status FROM ingest_errors e JOIN sources s "
      "USING (source_id) WHERE e.path LIKE '%edge-git-lfs-pointer%'");
  ASSERT_TRUE(st.ok());
  int rows = 0;
  while (*st->Step()) {
    ++rows;
    EXPECT_EQ(st->Text(0), "not_tfrecord");
    EXPECT_EQ(st->Int(1), 0);
    EXPECT_NE(st->Text(2).find("Git LFS pointer"), std::string::npos) << st->Text(2);
    EXPECT_EQ(st->Text(3), "rejected");
  }
  EXPECT_EQ(rows, 2);  // two pointer files, one report each
  EXPECT_EQ(summary_.totals.files_rejected, 2);
}

TEST_F(CorpusIngest, OnlyTheDamagedFilesProduceErrors) {
  // The Git LFS pointers, and W&B's fixture with one bad chunk (wandb_corpus_test.cc checks it).
  EXPECT_EQ(QueryInt(store_->db(), "SELECT count(*) FROM ingest_errors "
                                   "WHERE path NOT LIKE '%edge-git-lfs-pointer%' "
                                   "AND path NOT LIKE '%/wire/bad-crc.wandb'"),
            0);
  EXPECT_EQ(QueryInt(store_->db(), "SELECT count(*) FROM ingest_errors "
                                   "WHERE path LIKE '%/wire/bad-crc.wandb'"),
            1);
}

TEST_F(CorpusIngest, TruncatedTailIsAStateNotAnError) {
  const std::string rel =
      "pytorch-lightning-tensorboardx/BioinfoMachineLearning__mintomics/lightning_logs/version_32/"
      "events.out.tfevents.1704692334.multicom.eecs.missouri.edu";
  EXPECT_EQ(SourceInt("SELECT committed_offset FROM sources WHERE path = ?1", rel), 4066);
  EXPECT_EQ(SourceInt("SELECT size_seen FROM sources WHERE path = ?1", rel), 4078);
  EXPECT_EQ(SourceInt("SELECT error_count FROM sources WHERE path = ?1", rel), 0);
  // The other one is W&B's fixture whose last record is cut short at 234.
  const std::string wandb = "wandb-upstream-fixtures/wandb__wandb/leet/fixtures/wire/truncated-tail.wandb";
  EXPECT_EQ(SourceInt("SELECT committed_offset FROM sources WHERE path = ?1", wandb), 234);
  EXPECT_EQ(SourceInt("SELECT error_count FROM sources WHERE path = ?1", wandb), 0);
  EXPECT_EQ(summary_.totals.partial_tails, 2);
}

TEST_F(CorpusIngest, KerasUnderTf1OverfitsAsTheManifestSays) {
  // 20 epochs; val_loss bottoms at about 0.063 and rises back to about 0.112.
  const std::string run = "keras-1.2-tensorboard-callback/keras-team__keras/examples/_mnist";
  EXPECT_EQ(QueryInt(store_->db(),
                     "SELECT count(DISTINCT tag) FROM scalar_points WHERE run = ?1", run),
            4);
  auto st = store_->db().Prepare(
      "SELECT min(value), max(step), (SELECT value FROM scalar_points WHERE run = ?1 AND "
      "tag = 'val_loss' ORDER BY step DESC LIMIT 1) FROM scalar_points WHERE run = ?1 AND "
      "tag = 'val_loss'");
  ASSERT_TRUE(st.ok());
  st->Bind(1, run);
  ASSERT_TRUE(*st->Step());
  EXPECT_NEAR(st->Real(0), 0.063, 0.002);
  EXPECT_EQ(st->Int(1), 19);
  EXPECT_NEAR(st->Real(2), 0.112, 0.002);
}

TEST_F(CorpusIngest, Tf2TensorScalarInTensorContentIsDecoded) {
  // hparam_tuning/run-1: 'accuracy' is a DT_FLOAT rank-0 tensor in tensor_content at step 1.
  const std::string run =
      "keras-tf2-callback/mrdbourke__tensorflow-deep-learning/stevesCode/logs/hparam_tuning/run-1";
  auto st = store_->db().Prepare(
      "SELECT step, value, value_class FROM scalar_points WHERE run = ?1 AND tag = 'accuracy'");
  ASSERT_TRUE(st.ok());
  st->Bind(1, run);
  ASSERT_TRUE(*st->Step());
  EXPECT_EQ(st->Int(0), 1);
  EXPECT_GT(st->Real(1), 0.0);
  EXPECT_LE(st->Real(1), 1.0);
  EXPECT_EQ(st->Text(2), "finite");
  EXPECT_FALSE(*st->Step());
  // Its session_start_info carries the hyperparameters.
  EXPECT_GE(QueryInt(store_->db(), "SELECT count(*) FROM run_hparams WHERE run = ?1", run), 1);
}

TEST_F(CorpusIngest, KerasTf2WritesEpochLossAsSimpleValue) {
  const std::string run = "keras-tf2-callback/mrdbourke__tensorflow-deep-learning/stevesCode/logs/train";
  EXPECT_EQ(QueryInt(store_->db(),
                     "SELECT count(*) FROM scalar_points WHERE run = ?1 AND tag = 'epoch_loss'", run),
            2);
  EXPECT_EQ(QueryInt(store_->db(), "SELECT images FROM runs WHERE name = ?1", run), 12);
  EXPECT_EQ(QueryInt(store_->db(), "SELECT graphs FROM runs WHERE name = ?1", run), 1);
}

TEST_F(CorpusIngest, LightningHparamsAreStoredPerRun) {
  const std::string run = "pytorch-lightning-1.1/AtomScott__FractalDB/lightning_logs/version_0";
  EXPECT_GE(QueryInt(store_->db(), "SELECT count(*) FROM run_hparams WHERE run = ?1", run), 1);
  EXPECT_EQ(QueryInt(store_->db(),
                     "SELECT count(*) FROM series s JOIN runs r USING (run_id) WHERE r.name = ?1 "
                     "AND s.tag LIKE '_hparams_/%'",
                     run),
            0);  // hparams summaries are metadata, not series
}

TEST_F(CorpusIngest, PyTorchChildRunHparamsLayout) {
  // add_hparams writes a child run <run>/<timestamp>/ holding the hparams and metric scalars.
  const std::string run = "torch-summarywriter/ZeroToMax-ZYZ__study_tensorboard/runs/"
                          "hparams_search_exp_1/1771595857.3236299";
  EXPECT_GE(QueryInt(store_->db(), "SELECT count(*) FROM run_hparams WHERE run = ?1", run), 1);
  EXPECT_EQ(QueryInt(store_->db(), "SELECT count(*) FROM scalar_points WHERE run = ?1", run), 2);
}

TEST_F(CorpusIngest, HfTrainerTextSummariesAndSharedDirectory) {
  const std::string run =
      "hf-trainer-tensorboard/RTiberiu__CM4107-Advanced-Artificial-Intelligence-CW/logs";
  // Six writers share one run directory: every file is read, not only the newest.
  EXPECT_EQ(QueryInt(store_->db(),
                     "SELECT count(*) FROM sources s JOIN runs r USING (run_id) WHERE r.name = ?1",
                     run),
            6);
  EXPECT_EQ(QueryInt(store_->db(),
                     "SELECT count(*) FROM scalar_points_all WHERE run = ?1 AND tag = 'train/loss'",
                     run),
            937 + 7 + 6);  // every point of files .0, .2 and .4 kept, superseded or not
  EXPECT_GE(QueryInt(store_->db(),
                     "SELECT count(*) FROM text_points WHERE run = ?1 AND tag = 'args/text_summary'",
                     run),
            1);
}

TEST_F(CorpusIngest, EstimatorSessionLogsBecomeRunEvents) {
  const std::string run = "tf-0.x-estimator/tensorflow__tensorboard/tensorboard/functionaltests/testdata";
  EXPECT_EQ(QueryInt(store_->db(),
                     "SELECT count(*) FROM run_events e JOIN runs r USING (run_id) "
                     "WHERE r.name = ?1 AND e.kind = 'start'",
                     run),
            2);
  EXPECT_EQ(QueryInt(store_->db(),
                     "SELECT count(*) FROM run_events e JOIN runs r USING (run_id) "
                     "WHERE r.name = ?1 AND e.kind = 'checkpoint'",
                     run),
            4);
}

TEST_F(CorpusIngest, SecondIngestAddsNothing) {
  const int64_t before = QueryInt(store_->db(), "SELECT count(*) FROM scalars");
  const int64_t errors_before = QueryInt(store_->db(), "SELECT count(*) FROM ingest_errors");
  ingest::Summary again;
  ASSERT_TRUE(ingest::IngestPaths(*store_, {*corpus_}, {}, &again).ok());
  EXPECT_EQ(again.totals.records, 0);
  EXPECT_EQ(again.totals.points(), 0);
  EXPECT_EQ(QueryInt(store_->db(), "SELECT count(*) FROM scalars"), before);
  EXPECT_EQ(QueryInt(store_->db(), "SELECT count(*) FROM ingest_errors"), errors_before);
}

}  // namespace
}  // namespace tw
