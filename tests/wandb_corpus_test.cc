// Ingests the real W&B run directories of ../shared/corpus (SDK 0.10 to 0.21, Python and Go
// writers, W&B's own fixtures) and checks what trainwatch stored against what MANIFEST.md says
// each .wandb file holds: records, history rows and their _step range, keys, non-finite
// values, exit code and SDK version.
#include <gtest/gtest.h>

#include <fstream>
#include <regex>

#include "ingest/ingest.h"
#include "store/store.h"
#include "support/test_env.h"

namespace tw {
namespace {

using testing::CorpusDir;
using testing::TempDir;

struct WandbEntry {
  std::string path;
  int64_t records = -1, rows = -1, step_lo = -1, step_hi = -1, non_finite = 0;
  std::optional<int64_t> exit_code;  // nullopt: "no exit record"
  std::string sdk;                   // "core 0.21.2" or "cli 0.17.2" -> the version
  std::vector<std::string> keys;     // the keys the manifest names (it cuts long lists)
  bool damaged = false;
};

std::vector<WandbEntry> ReadWandbManifest(const std::string& corpus) {
  std::ifstream in(corpus + "/MANIFEST.md");
  std::vector<WandbEntry> out;
  std::string line;
  std::smatch m;
  while (std::getline(in, line)) {
    if (!line.starts_with("| `")) continue;
    WandbEntry e;
    e.path = line.substr(3, line.find('`', 3) - 3);
    if (!e.path.ends_with(".wandb")) continue;
    // The contents column: from the cell that says "N records" on.
    const size_t rec = line.find(" records");
    if (rec == std::string::npos) continue;
    const std::string c = line.substr(line.rfind("| ", rec));
    if (std::regex_search(c, m, std::regex(R"((\d+) records)"))) e.records = std::stoll(m[1]);
    if (std::regex_search(c, m, std::regex(R"((\d+) history rows(?: \(_step (\d+)\.\.(\d+)\))?)"))) {
      e.rows = std::stoll(m[1]);
      if (m[2].matched) e.step_lo = std::stoll(m[2]), e.step_hi = std::stoll(m[3]);
    }
    if (std::regex_search(c, m, std::regex(R"(exit_code (\d+))"))) e.exit_code = std::stoll(m[1]);
    if (std::regex_search(c, m, std::regex(R"((?:core|cli) ([0-9][0-9a-z.]*[0-9a-z]))"))) e.sdk = m[1];
    if (std::regex_search(c, m, std::regex(R"((\d+) non-finite)"))) e.non_finite = std::stoll(m[1]);
    if (std::regex_search(c, m, std::regex(R"(\d+ keys: (.*?)(?:, \d+ non-finite|; PROBLEMS| \.\.\.\.|\. NOTES))"))) {
      std::string list = m[1];
      for (size_t at = 0; at < list.size();) {
        size_t comma = list.find(", ", at);
        if (comma == std::string::npos) comma = list.size();
        e.keys.push_back(list.substr(at, comma - at));
        at = comma + 2;
      }
    }
    e.damaged = c.find("PROBLEMS: crc mismatch") != std::string::npos;
    out.push_back(std::move(e));
  }
  return out;
}

class WandbCorpus : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    corpus_ = new std::string(CorpusDir());
    if (corpus_->empty()) return;
    dir_ = new TempDir();
    auto s = store::Store::Open(*dir_ / "wandb.db");
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    store_ = s->release();
    std::vector<std::string> roots;
    for (const char* d : {"wandb-0.10-0.12-python", "wandb-0.17-python-hf-trainer", "wandb-core-0.21",
                          "wandb-upstream-fixtures", "wandb-legacy-0.8"})
      roots.push_back(*corpus_ + "/" + d);
    ASSERT_TRUE(ingest::IngestPaths(*store_, roots, {}, &summary_).ok());
  }
  static void TearDownTestSuite() {
    delete store_;
    delete dir_;
    delete corpus_;
  }
  void SetUp() override {
    if (corpus_->empty()) GTEST_SKIP() << "../shared/corpus not found";
  }
  static std::optional<int64_t> Int(const std::string& sql, const std::string& bind) {
    auto st = store_->db().Prepare(sql);
    EXPECT_TRUE(st.ok()) << st.status().ToString();
    st->Bind(1, bind);
    auto row = st->Step();
    EXPECT_TRUE(row.ok() && *row) << sql;
    if (st->IsNull(0)) return std::nullopt;
    return st->Int(0);
  }
  static std::string Text(const std::string& sql, const std::string& bind) {
    auto st = store_->db().Prepare(sql);
    EXPECT_TRUE(st.ok()) << st.status().ToString();
    st->Bind(1, bind);
    auto row = st->Step();
    EXPECT_TRUE(row.ok() && *row) << sql;
    return st->Text(0);
  }

  static inline std::string* corpus_ = nullptr;
  static inline TempDir* dir_ = nullptr;
  static inline store::Store* store_ = nullptr;
  static inline ingest::Summary summary_;
};

// Points of one source's history (not system metrics), as (offset = one history row).
constexpr const char* kHistoryPoints =
    "SELECT p.step, p.offset, p.value_class, s.tag FROM scalars p JOIN series s USING (series_id) "
    "JOIN sources o USING (source_id) WHERE o.path = ?1 AND s.tag NOT LIKE 'system/%'";

TEST_F(WandbCorpus, EveryFileHoldsWhatTheManifestSays) {
  const auto entries = ReadWandbManifest(*corpus_);
  ASSERT_GE(entries.size(), 12u);
  for (const auto& e : entries) {
    SCOPED_TRACE(e.path);
    const std::string path = *corpus_ + "/" + e.path;
    // One record fails its CRC in the damaged fixture; every other record is read.
    EXPECT_EQ(Int("SELECT records FROM sources WHERE path = ?1", path), e.records - (e.damaged ? 1 : 0));
    if (e.rows > 0) {
      const std::string q = std::string("SELECT count(DISTINCT offset) FROM (") + kHistoryPoints + ")";
      int64_t rows = *Int(q, path);
      // yolov5's last row holds only media (counted, not charted); the damaged fixture loses one.
      if (e.path.find("2chc5x75") != std::string::npos) ++rows;
      EXPECT_EQ(rows, e.rows - (e.damaged ? 1 : 0));
      EXPECT_EQ(Int(std::string("SELECT min(step) FROM (") + kHistoryPoints + ")", path), e.step_lo);
      if (e.path.find("2chc5x75") == std::string::npos) {
        EXPECT_EQ(Int(std::string("SELECT max(step) FROM (") + kHistoryPoints + ")", path), e.step_hi);
      }
    }
    EXPECT_EQ(Int(std::string("SELECT count(*) FROM (") + kHistoryPoints + ") WHERE value_class != 0", path),
              e.non_finite);
    // W&B's wire fixtures are two logs of two runs in one directory, which is one run here.
    if (e.path.find("/wire/") == std::string::npos) {
      EXPECT_EQ(Int("SELECT r.exit_code FROM runs r JOIN sources o USING (run_id) WHERE o.path = ?1", path),
                e.exit_code);
    }
    if (!e.sdk.empty()) {
      EXPECT_EQ(Text("SELECT r.sdk_version FROM runs r JOIN sources o USING (run_id) WHERE o.path = ?1", path),
                e.sdk);
    }
    for (const auto& key : e.keys)
      EXPECT_EQ(Int(std::string("SELECT count(*) > 0 FROM (") + kHistoryPoints + ") WHERE tag = '" + key + "'", path),
                1) << key;
    EXPECT_EQ(Text("SELECT r.format FROM runs r JOIN sources o USING (run_id) WHERE o.path = ?1", path), "wandb");
  }
}

TEST_F(WandbCorpus, NanDivergenceIsKeptAsW_BHidesIt) {
  // CS336 run ugaeu18w: train/loss is NaN from the second row (_step 10) to the end.
  const std::string run = "0Chris5R__StanfordCS336-Own-Transformer/wandb/run-20260119_193743-ugaeu18w";
  auto st = store_->db().Prepare(
      "SELECT min(step) FROM scalar_points WHERE run = ?1 AND tag = 'train/loss' AND value_class = 'nan'");
  ASSERT_TRUE(st.ok());
  st->Bind(1, run);
  ASSERT_TRUE(*st->Step());
  EXPECT_EQ(st->Int(0), 10);
}

TEST_F(WandbCorpus, AResumedRunContinuesTheSameLogicalRun) {
  // xinacahi was resumed twice: three directories, each continuing the one before.
  auto st = store_->db().Prepare(
      "SELECT r.name, p.name FROM runs r LEFT JOIN runs p ON p.run_id = r.continues_run_id "
      "WHERE r.external_id = 'xinacahi' ORDER BY r.start_time");
  ASSERT_TRUE(st.ok());
  std::vector<std::pair<std::string, std::string>> chain;
  while (*st->Step()) chain.emplace_back(st->Text(0), st->Text(1));
  ASSERT_EQ(chain.size(), 3u);
  EXPECT_EQ(chain[0].second, "");
  EXPECT_EQ(chain[1].second, chain[0].first);
  EXPECT_EQ(chain[2].second, chain[1].first);
  EXPECT_NE(chain[2].first.find("120504"), std::string::npos);
}

TEST_F(WandbCorpus, HfTrainerStepMetricIsKept) {
  // define_metric("*", step_metric="train/global_step"): every series but the step metric
  // itself is plotted against it.
  const std::string run = "541Jack__LLaMA-Factory/wandb/run-20240621_122906-qnolswhj";
  EXPECT_EQ(Text("SELECT s.step_metric FROM series s JOIN runs r USING (run_id) WHERE r.name = ?1 "
                 "AND s.tag = 'train/loss'", run),
            "train/global_step");
  EXPECT_EQ(Text("SELECT s.step_metric FROM series s JOIN runs r USING (run_id) WHERE r.name = ?1 "
                 "AND s.tag = 'train/global_step'", run),
            "");
  // train/global_step runs 10..156 over _step 0..15.
  EXPECT_EQ(Int("SELECT max(value) FROM scalar_points WHERE run = ?1 AND tag = 'train/global_step'", run), 156);
}

TEST_F(WandbCorpus, SystemMetricsConfigAndSummaryLandInTheirTables) {
  const std::string run = "0Chris5R__StanfordCS336-Own-Transformer/wandb/run-20260119_214939-8atu6kfy";
  // 306 stats records, each a sample of several system metrics.
  EXPECT_EQ(*Int("SELECT count(DISTINCT p.offset) FROM scalars p JOIN series s USING (series_id) "
                 "JOIN runs r USING (run_id) WHERE r.name = ?1 AND s.tag LIKE 'system/%'", run),
            306);
  EXPECT_GT(*Int("SELECT count(*) FROM run_config c JOIN runs r USING (run_id) WHERE r.name = ?1", run), 0);
  EXPECT_EQ(Text("SELECT value_json FROM run_summary_values v JOIN runs r USING (run_id) WHERE r.name = ?1 "
                 "AND key = '_step'", run),
            "19990");
  EXPECT_EQ(*Int("SELECT count(*) FROM run_hparams WHERE run = ?1 AND key = 'batch_size'", run), 1);
}

TEST_F(WandbCorpus, AnEmptyLogIsAWandbRunWithNothingYet) {
  const std::string path = *corpus_ +
      "/wandb-core-0.21/0Chris5R__StanfordCS336-Own-Transformer/wandb/run-20260118_160117-qnw4jb71/run-qnw4jb71.wandb";
  EXPECT_EQ(Int("SELECT committed_offset FROM sources WHERE path = ?1", path), 0);
  EXPECT_EQ(Int("SELECT error_count FROM sources WHERE path = ?1", path), 0);
  EXPECT_EQ(Text("SELECT status FROM sources WHERE path = ?1", path), "active");
}

TEST_F(WandbCorpus, TheBadChunkIsReportedAndTheRecordsAfterItKept) {
  const std::string path = *corpus_ + "/wandb-upstream-fixtures/wandb__wandb/leet/fixtures/wire/bad-crc.wandb";
  EXPECT_EQ(Text("SELECT kind || '@' || offset FROM ingest_errors WHERE path = ?1", path), "bad_checksum@143");
  // The exit record comes after the damaged chunk.
  EXPECT_EQ(Int("SELECT count(*) FROM run_events e JOIN sources o USING (source_id) WHERE o.path = ?1 "
                "AND e.kind = 'exit'", path),
            1);
}

TEST_F(WandbCorpus, LegacyJsonLinesRunsAreReadWithoutALog) {
  // SDK 0.8: wandb-history.jsonl (401 and 136 rows) and wandb-events.jsonl, no .wandb.
  const std::string a = "AGKhalil__RL_implements/wandb/run-20200325_113035-1egzk2xs";
  const std::string b = "AGKhalil__RL_implements/wandb/run-20200402_182553-z4nv4p4v";
  EXPECT_EQ(Text("SELECT format FROM runs WHERE name = ?1", a), "wandb");
  EXPECT_EQ(Int("SELECT count(DISTINCT step) FROM scalar_points WHERE run = ?1 AND tag NOT LIKE 'system/%'", a), 401);
  EXPECT_EQ(Int("SELECT count(*) FROM scalar_points WHERE run = ?1 AND tag = 'Value Loss'", a), 401);
  EXPECT_EQ(Int("SELECT count(DISTINCT step) FROM scalar_points WHERE run = ?1 AND tag NOT LIKE 'system/%'", b), 136);
  // Intrinsic reward blows up from about 3.8 to about 1379.
  EXPECT_GT(*Int("SELECT max(value) FROM scalar_points WHERE run = ?1 AND tag = 'Intrinsic reward'", b), 1000);
  // wandb.watch gradients: histograms in four rows of the first run.
  EXPECT_EQ(Int("SELECT count(DISTINCT h.step) FROM histograms h JOIN series s USING (series_id) "
                "JOIN runs r USING (run_id) WHERE r.name = ?1", a),
            4);
  // System metrics (every 30 s) are stored, at the latest history step.
  EXPECT_GT(*Int("SELECT count(*) FROM scalar_points WHERE run = ?1 AND tag LIKE 'system/gpu.%'", b), 0);
  EXPECT_EQ(Int("SELECT min(step) FROM scalar_points WHERE run = ?1 AND tag LIKE 'system/%'", b), 135);
  // config.yaml (old desc/value layout) and wandb-summary.json, read whole.
  EXPECT_EQ(Text("SELECT value FROM run_hparams WHERE run = ?1 AND key = 'lr'", b), "0.0005");
  EXPECT_EQ(Int("SELECT count(*) FROM run_hparams WHERE run = ?1 AND key LIKE '%wandb%'", b), 0);
  EXPECT_EQ(Text("SELECT v.value_json FROM run_summary_values v JOIN runs r USING (run_id) "
                 "WHERE r.name = ?1 AND v.key = '_step'", b),
            "135");
  EXPECT_EQ(Text("SELECT json_extract(v.value_json, '$._type') FROM run_summary_values v JOIN runs r "
                 "USING (run_id) WHERE r.name = ?1 AND v.key = 'graph_0'", b),
            "graph-file");
}

}  // namespace
}  // namespace tw
