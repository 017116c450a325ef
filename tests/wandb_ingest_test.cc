// W&B logs through the ingester into a real store: what each kind of record becomes (values,
// nested keys, histograms, media, system metrics, config, summary, define_metric, exit),
// restarts, lost records, damage, and that a log read as it grows ends as one read whole.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <cstring>
#include <filesystem>
#include <limits>
#include <random>

#include "ingest/ingest.h"
#include "store/store.h"
#include "support/store_dump.h"
#include "support/test_env.h"
#include "wandb/testing/log_writer.h"

namespace tw {
namespace {

using namespace tw::testing;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
namespace fs = std::filesystem;

// Builds a log record by record, numbering them 1..N as SDK >= 0.13.8 does.
struct Log {
  explicit Log(WandbWriterOptions o = {}) : w(o) {}
  template <typename F>
  size_t Add(F make) {
    return w.Add(make(++num));
  }
  WandbLogWriter w;
  int64_t num = 0;
};

class WandbIngest : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = Open(dir_ / "t.db");
    logdir_ = dir_ / "logs";
    fs::create_directories(logdir_);
  }
  static std::unique_ptr<store::Store> Open(const std::string& path) {
    auto s = store::Store::Open(path);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return std::move(*s);
  }
  // logs/wandb/run-<id>/run-<id>.wandb, as the SDK lays it out.
  std::string RunFile(const std::string& id) {
    return logdir_ + "/wandb/run-20240101_000000-" + id + "/run-" + id + ".wandb";
  }
  ingest::Summary Ingest(store::Store* store = nullptr) {
    ingest::Summary summary;
    Status st = ingest::IngestPaths(store ? *store : *store_, {logdir_}, {}, &summary);
    EXPECT_TRUE(st.ok()) << st.ToString();
    return summary;
  }
  std::vector<std::string> Rows(const std::string& sql, store::Store* store = nullptr) {
    auto st = (store ? *store : *store_).db().Prepare(sql);
    EXPECT_TRUE(st.ok()) << sql << ": " << st.status().ToString();
    std::vector<std::string> out;
    if (!st.ok()) return out;
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

constexpr double kT0 = 1700000000;

// Little-endian f64 triples, as the histograms table stores its buckets, in hex.
std::string BucketsHex(const std::vector<std::array<double, 3>>& buckets) {
  static const char* digits = "0123456789ABCDEF";
  std::string out;
  for (const auto& b : buckets)
    for (double d : b) {
      unsigned char raw[8];
      std::memcpy(raw, &d, 8);
      for (unsigned char c : raw) {
        out.push_back(digits[c >> 4]);
        out.push_back(digits[c & 15]);
      }
    }
  return out;
}

TEST_F(WandbIngest, ValueJsonCornerCases) {
  Log log;
  log.Add([](int64_t n) {
    return WandbPythonRow(n, 0, kT0, {Flat("nan", "NaN"), Flat("pinf", "Infinity"),
                                      Flat("ninf", "-Infinity"), Flat("big", "12345678901234567890"),
                                      Flat("yes", "true"), Flat("no", "false"), Flat("neg", "-2.5e-3"),
                                      Flat("text", "\"hello\""), Flat("none", "null"),
                                      Flat("list", "[1, 2, 3]")});
  });
  WriteFile(RunFile("vals"), log.w.bytes());
  const auto sum = Ingest();
  EXPECT_EQ(sum.totals.errors, 0);
  // value_class: 0 finite, 1 NaN (value NULL), 2 +Inf, 3 -Inf.
  EXPECT_THAT(Rows("SELECT s.tag, p.value_class, p.value IS NULL FROM scalars p "
                   "JOIN series s USING (series_id) ORDER BY s.tag"),
              ElementsAre("big|0|0", "nan|1|1", "neg|0|0", "ninf|3|0", "no|0|0", "pinf|2|0", "yes|0|0"));
  // The values themselves, compared as doubles in SQL (12345678901234567890 rounds to the
  // nearest double, 12345678901234567168).
  EXPECT_EQ(Count("SELECT count(*) FROM scalars p JOIN series s USING (series_id) WHERE "
                  "(s.tag = 'big' AND p.value = 12345678901234567890.0) OR (s.tag = 'neg' AND p.value = -0.0025) "
                  "OR (s.tag = 'pinf' AND p.value = 9e999) OR (s.tag = 'ninf' AND p.value = -9e999) "
                  "OR (s.tag = 'yes' AND p.value = 1) OR (s.tag = 'no' AND p.value = 0)"),
            6);
  EXPECT_THAT(Rows("SELECT tag, value_class FROM scalar_points WHERE tag IN ('nan', 'pinf', 'ninf') ORDER BY tag"),
              ElementsAre("nan|nan", "ninf|-inf", "pinf|+inf"));
  // Strings and arrays are counted, not stored; null is neither.
  EXPECT_THAT(Rows("SELECT images, other_tensors, format FROM runs"), ElementsAre("0|2|wandb"));
  EXPECT_EQ(Count("SELECT count(*) FROM series WHERE tag IN ('text', 'none', 'list')"), 0);
  EXPECT_EQ(Count("SELECT count(*) FROM series WHERE tag LIKE '\\_%' ESCAPE '\\'"), 0);  // _step, _runtime, ...
  EXPECT_EQ(Count("SELECT count(DISTINCT step) FROM scalars"), 1);
}

TEST_F(WandbIngest, NestedDictsWithDotsInKeysNameOneSeriesEitherWay) {
  Log log;
  // Python: the dict as one value_json.
  log.Add([](int64_t n) {
    return WandbPythonRow(n, 0, kT0, {Flat("a.b", R"({"c/d": 1, "e": {"f": 2}})")});
  });
  // Core: every leaf a nested_key path, _step and _timestamp too, and HistoryStep.
  log.Add([](int64_t n) {
    return WandbHistoryRecord(n, {Nested({"a.b", "c/d"}, "3"), Nested({"a.b", "e", "f"}, "4"),
                                  Nested({"_step"}, "1"), Nested({"_timestamp"}, "1700000001.5")},
                              1);
  });
  WriteFile(RunFile("nest"), log.w.bytes());
  EXPECT_EQ(Ingest().totals.errors, 0);
  EXPECT_THAT(Rows("SELECT tag, step, value, wall_time FROM scalar_points ORDER BY tag, step"),
              ElementsAre("a.b.c/d|0|1.0|1700000000.0", "a.b.c/d|1|3.0|1700000001.5",
                          "a.b.e.f|0|2.0|1700000000.0", "a.b.e.f|1|4.0|1700000001.5"));
  EXPECT_EQ(Count("SELECT count(*) FROM series"), 2);
}

TEST_F(WandbIngest, HistogramsAsPythonDictsAndAsCoreLeavesAndMediaCounted) {
  Log log;
  log.Add([](int64_t n) {
    return WandbPythonRow(
        n, 0, kT0,
        {Flat("h", WandbHistogramJson({0, 2, 0, 3}, {0, 1, 2, 3, 4})),
         Flat("p", R"({"_type": "histogram", "values": [1, 2], "packedBins": {"min": -1, "size": 0.5, "count": 2}})"),
         Flat("img", R"({"_type": "image-file", "path": "media/images/img_0_ab.png", "sha256": "ab", "size": 10, "width": 2, "height": 2, "format": "png"})"),
         Flat("tbl", R"({"_type": "table-file", "path": "media/table/t.json", "ncols": 2, "nrows": 1})")});
  });
  log.Add([](int64_t n) {
    std::vector<WandbKV> items = WandbHistogramLeaves({"h"}, {1, 0, 1, 0}, {0, 1, 2, 3, 4});
    for (auto& kv : WandbHistogramLeaves({"grads", "layer.0/w"}, {5}, {-1, 1})) items.push_back(kv);
    items.push_back(Nested({"img", "_type"}, "\"image-file\""));
    items.push_back(Nested({"img", "path"}, "\"media/images/img_1_cd.png\""));
    items.push_back(Nested({"_step"}, "1"));
    items.push_back(Nested({"_timestamp"}, "1700000001"));
    return WandbHistoryRecord(n, items, 1);
  });
  WriteFile(RunFile("hist"), log.w.bytes());
  const auto sum = Ingest();
  EXPECT_EQ(sum.totals.errors, 0);
  EXPECT_EQ(sum.totals.histograms, 4);
  EXPECT_THAT(Rows("SELECT tag, step, count, min, max, sum, hex(buckets) FROM histogram_points ORDER BY tag, step"),
              ElementsAre("grads.layer.0/w|1|5.0|-1.0|1.0|0.0|" + BucketsHex({{-1, 1, 5}}),
                          "h|0|5.0|1.0|4.0|13.5|" + BucketsHex({{1, 2, 2}, {3, 4, 3}}),
                          "h|1|2.0|0.0|3.0|3.0|" + BucketsHex({{0, 1, 1}, {2, 3, 1}}),
                          "p|0|3.0|-1.0|0.0|-1.25|" + BucketsHex({{-1, -0.5, 1}, {-0.5, 0, 2}})));
  // The leaves of an object are not series of their own.
  EXPECT_EQ(Count("SELECT count(*) FROM series WHERE kind = 'scalar'"), 0);
  EXPECT_THAT(Rows("SELECT images, other_tensors FROM runs"), ElementsAre("2|1"));
}

TEST_F(WandbIngest, SystemMetricsLandAtTheLatestHistoryStep) {
  Log log;
  log.Add([](int64_t n) { return WandbStatsRecord(n, kT0 - 5, {{"cpu", "3.5"}}); });  // before any row
  for (int s = 0; s < 3; ++s) {
    log.Add([&](int64_t n) { return WandbPythonRow(n, s * 10, kT0 + s * 10, {Flat("loss", std::to_string(s))}); });
    log.Add([&](int64_t n) {
      return WandbStatsRecord(n, kT0 + s * 10 + 5.25,
                              {{"gpu.0.temp", std::to_string(50 + s)}, {"cpu", "12.5"}, {"disk", "\"n/a\""}});
    });
  }
  WriteFile(RunFile("sys"), log.w.bytes());
  EXPECT_EQ(Ingest().totals.errors, 0);
  EXPECT_THAT(Rows("SELECT tag, step, value, wall_time FROM scalar_points WHERE tag LIKE 'system/%' "
                   "ORDER BY tag, wall_time"),
              ElementsAre("system/cpu|0|3.5|1699999995.0", "system/cpu|0|12.5|1700000005.25",
                          "system/cpu|10|12.5|1700000015.25", "system/cpu|20|12.5|1700000025.25",
                          "system/gpu.0.temp|0|50.0|1700000005.25", "system/gpu.0.temp|10|51.0|1700000015.25",
                          "system/gpu.0.temp|20|52.0|1700000025.25"));
}

TEST_F(WandbIngest, AStepGoingBackSupersedesThatKeysLaterPoints) {
  Log log;
  for (int s = 0; s < 10; ++s)
    log.Add([&](int64_t n) {
      return WandbPythonRow(n, s, kT0 + s, {Flat("loss", std::to_string(s)), Flat("acc", std::to_string(s))});
    });
  // Resumed from the checkpoint at step 5: loss is logged again from there, acc is not.
  const size_t back = log.Add([](int64_t n) { return WandbPythonRow(n, 5, kT0 + 100, {Flat("loss", "-5")}); });
  for (int s = 6; s < 8; ++s)
    log.Add([&](int64_t n) { return WandbPythonRow(n, s, kT0 + 100 + s, {Flat("loss", std::to_string(-s))}); });
  WriteFile(RunFile("rewind"), log.w.bytes());
  const auto sum = Ingest();
  EXPECT_EQ(sum.totals.restarts, 1);
  EXPECT_EQ(Rows("SELECT group_concat(step || ':' || CAST(value AS INTEGER), ' ') FROM "
                 "(SELECT step, value FROM scalar_points WHERE tag = 'loss' ORDER BY step)")[0],
            "0:0 1:1 2:2 3:3 4:4 5:-5 6:-6 7:-7");
  EXPECT_EQ(Count("SELECT count(*) FROM scalar_points WHERE tag = 'acc'"), 10);
  EXPECT_THAT(Rows("SELECT s.tag, p.step FROM scalars p JOIN series s USING (series_id) WHERE p.superseded = 1 "
                   "ORDER BY p.step"),
              ElementsAre("loss|5", "loss|6", "loss|7", "loss|8", "loss|9"));
  EXPECT_THAT(Rows("SELECT offset, step, detail FROM run_events WHERE kind = 'restart'"),
              ElementsAre(std::to_string(log.w.RecordOffset(back)) +
                          "|5|key 'loss' went back from _step 9 to 5: resumed from a checkpoint or re-logged "
                          "(5 earlier points superseded)"));
}

TEST_F(WandbIngest, ARecordNumberGapIsReportedAsLostRecords) {
  Log log;
  for (int s = 0; s < 3; ++s)
    log.Add([&](int64_t n) { return WandbPythonRow(n, s, kT0 + s, {Flat("x", "1")}); });
  WriteFile(RunFile("gap"), log.w.bytes());
  Ingest();
  EXPECT_EQ(Count("SELECT count(*) FROM ingest_errors"), 0);
  // The writer lost records 4..6; then, in a later read, record 8 (7 is lost too).
  log.num = 6;
  const size_t seventh = log.Add([](int64_t n) { return WandbPythonRow(n, 3, kT0 + 3, {Flat("x", "1")}); });
  WriteFile(RunFile("gap"), log.w.bytes());
  Ingest();
  log.num = 8;
  const size_t ninth = log.Add([](int64_t n) { return WandbPythonRow(n, 4, kT0 + 4, {Flat("x", "1")}); });
  // A record without a number (SDK < 0.13.8) says nothing either way.
  log.w.Add(WandbPythonRow(0, 5, kT0 + 5, {Flat("x", "1")}));
  WriteFile(RunFile("gap"), log.w.bytes());
  Ingest();
  EXPECT_THAT(Rows("SELECT path, offset, kind, detail FROM ingest_errors ORDER BY offset"),
              ElementsAre(RunFile("gap") + "|" + std::to_string(log.w.RecordOffset(seventh)) +
                              "|records_missing|records 4..6 are missing before record 7 (3 lost)",
                          RunFile("gap") + "|" + std::to_string(log.w.RecordOffset(ninth)) +
                              "|records_missing|records 8..8 are missing before record 9 (1 lost)"));
  EXPECT_EQ(Count("SELECT count(*) FROM scalar_points"), 6);
}

TEST_F(WandbIngest, RunConfigSummaryExitAndVersion) {
  Log log;
  log.Add([](int64_t n) { return WandbHeaderRecord(n, "0.21.2+9917e63a1b"); });
  log.Add([](int64_t n) {
    WandbRunInfo run;
    run.run_id = "abc123";
    run.entity = "team";
    run.project = "proj";
    run.display_name = "bright-sun-1";
    run.start_time = kT0 + 0.5;
    run.config = {Flat("lr", R"({"desc": null, "value": 0.001})"),
                  Flat("opt", R"({"name": "adam", "betas": [0.9, 0.99], "eps": 1e-08})"),
                  Flat("_wandb", R"({"cli_version": "0.21.2"})")};
    return WandbRunRecord(n, run);
  });
  log.Add([](int64_t n) {
    return WandbConfigRecord(n, {Flat("batch", "32"), Nested({"model", "depth"}, "12"), Flat("use_amp", "true")});
  });
  log.Add([](int64_t n) { return WandbConfigRecord(n, {}, {Flat("use_amp", "")}); });
  log.Add([](int64_t n) { return WandbPythonRow(n, 0, kT0 + 1, {Flat("loss", "0.5")}); });
  log.Add([](int64_t n) { return WandbSummaryRecord(n, {Flat("loss", "0.5"), Flat("best", R"({"x": NaN})")}); });
  log.Add([](int64_t n) { return WandbSummaryRecord(n, {}, {Flat("best", "")}); });
  log.Add([](int64_t n) { return WandbExitRecord(n, 3, 42); });
  WriteFile(RunFile("abc123"), log.w.bytes());
  const auto sum = Ingest();
  EXPECT_EQ(sum.totals.errors, 0);
  EXPECT_THAT(Rows("SELECT wandb_id, project, entity, display_name, start_time, exit_code, sdk_version FROM wandb_runs"),
              ElementsAre("abc123|proj|team|bright-sun-1|1700000000.5|3|0.21.2"));
  EXPECT_THAT(Rows("SELECT key, value_json FROM run_config ORDER BY key"),
              ElementsAre("_wandb|{\"cli_version\": \"0.21.2\"}", "batch|32",
                          "lr|{\"desc\": null, \"value\": 0.001}",
                          "model.depth|12", "opt|{\"name\": \"adam\", \"betas\": [0.9, 0.99], \"eps\": 1e-08}"));
  EXPECT_THAT(Rows("SELECT key, value_type, value FROM run_hparams ORDER BY key"),
              ElementsAre("batch|number|32.0", "lr|number|0.001", "model.depth|number|12.0",
                          "opt.eps|number|1.0e-08", "opt.name|string|adam"));  // use_amp was removed
  EXPECT_THAT(Rows("SELECT key, value_json FROM run_summary_values"), ElementsAre("loss|0.5"));
  EXPECT_THAT(Rows("SELECT kind, step, detail FROM run_events ORDER BY offset"),
              ElementsAre("wandb_run|NULL|W&B run abc123 of team/proj", "exit|0|exit code 3 after 42 s"));
}

TEST_F(WandbIngest, DefineMetricGlobSetsTheStepMetric) {
  Log log;
  log.Add([](int64_t n) { return WandbMetricRecord(n, "", "train/*", "train/global_step"); });
  log.Add([](int64_t n) {
    return WandbPythonRow(n, 0, kT0, {Flat("train/loss", "1"), Flat("train/global_step", "10"), Flat("eval/acc", "0.5")});
  });
  // Defined after its series exists: applies to it too.
  log.Add([](int64_t n) { return WandbMetricRecord(n, "eval/acc", "", "epoch", true, 2); });
  log.Add([](int64_t n) { return WandbMetricRecord(n, "epoch", "", ""); });  // no step metric: nothing
  log.Add([](int64_t n) { return WandbPythonRow(n, 1, kT0 + 1, {Flat("train/lr", "1e-4")}); });
  WriteFile(RunFile("dm"), log.w.bytes());
  EXPECT_EQ(Ingest().totals.errors, 0);
  EXPECT_THAT(Rows("SELECT tag, step_metric FROM series ORDER BY tag"),
              ElementsAre("eval/acc|epoch", "train/global_step|", "train/loss|train/global_step",
                          "train/lr|train/global_step"));
  EXPECT_EQ(Count("SELECT count(*) FROM run_events WHERE kind = 'define_metric'"), 2);
}

TEST_F(WandbIngest, AForeignFileIsRejectedOnce) {
  WriteFile(RunFile("lfs"), "version https://git-lfs.github.com/spec/v1\noid sha256:0123\nsize 4096\n");
  Ingest();
  Ingest();
  EXPECT_THAT(Rows("SELECT kind, offset FROM ingest_errors"), ElementsAre("not_wandb|0"));
  EXPECT_THAT(Rows("SELECT detail FROM ingest_errors")[0], HasSubstr("Git LFS pointer"));
  EXPECT_THAT(Rows("SELECT status, generation FROM sources"), ElementsAre("rejected|0"));
}

TEST_F(WandbIngest, ACorruptedChunkCostsOnlyItsRecord) {
  Log log;
  std::vector<size_t> rows;
  for (int s = 0; s < 40; ++s)
    rows.push_back(log.Add([&](int64_t n) {
      return WandbPythonRow(n, s, kT0 + s, {Flat("loss", std::to_string(s)), Flat("pad", std::string(30, '1'))});
    }));
  std::string bytes = log.w.bytes();
  const uint64_t at = log.w.RecordOffset(rows[20]);
  bytes[at + 30] ^= 0x20;
  WriteFile(RunFile("bad"), bytes);
  const auto sum = Ingest();
  EXPECT_EQ(sum.totals.records, 39);
  EXPECT_THAT(Rows("SELECT path, offset, kind FROM ingest_errors ORDER BY error_id"),
              ElementsAre(RunFile("bad") + "|" + std::to_string(at) + "|bad_checksum",
                          RunFile("bad") + "|" + std::to_string(log.w.RecordOffset(rows[21])) + "|records_missing"));
  EXPECT_THAT(Rows("SELECT detail FROM ingest_errors ORDER BY error_id")[0], HasSubstr("fails its CRC-32"));
  EXPECT_EQ(Count("SELECT count(*) FROM scalar_points WHERE tag = 'loss'"), 39);
  EXPECT_EQ(Count("SELECT count(*) FROM scalar_points WHERE tag = 'loss' AND step = 20"), 0);
  EXPECT_THAT(Rows("SELECT committed_offset, status, resyncing FROM sources"),
              ElementsAre(std::to_string(bytes.size()) + "|active|0"));
}

// A log whose last record ends a few bytes before a block's end: the writer pads only when it
// writes the next record, so the file stays that size until then.
TEST_F(WandbIngest, ALogEndingJustShortOfABlockIsNotReadAgain) {
  for (uint64_t origin : {0, 7}) {
    SCOPED_TRACE(origin);
    TempDir dir;
    auto store = Open(dir / "p.db");
    logdir_ = dir / "logs";
    Log log({.origin = origin});
    int s = 0;
    while (log.w.LeftInBlock() > 400)
      log.Add([&](int64_t n) { return WandbPythonRow(n, s, kT0 + s, {Flat("loss", std::to_string(s))}); }), ++s;
    // An output record sized to leave 3 bytes.
    const uint64_t want = log.w.LeftInBlock() - 7 - 3;
    std::string out;
    for (size_t len = want; len-- > 0;)
      if ((out = WandbOutputRecord(log.num + 1, kT0, std::string(len, 'o'))).size() == want) break;
    ASSERT_EQ(out.size(), want);
    ++log.num;
    log.w.Add(out);
    ASSERT_EQ(log.w.LeftInBlock(), 3u);
    WriteFile(RunFile("pad"), log.w.bytes());
    Ingest(store.get());
    Ingest(store.get());
    log.Add([&](int64_t n) { return WandbPythonRow(n, s, kT0 + s, {Flat("loss", "-1")}); });
    WriteFile(RunFile("pad"), log.w.bytes());
    Ingest(store.get());
    EXPECT_THAT(Rows("SELECT generation, status, committed_offset, error_count FROM sources", store.get()),
                ElementsAre("0|active|" + std::to_string(log.w.bytes().size()) + "|0"));
    EXPECT_EQ(Rows("SELECT count(*) FROM run_events WHERE kind = 'file_replaced'", store.get())[0], "0");
    EXPECT_EQ(Rows("SELECT count(*) FROM scalars WHERE superseded = 1", store.get())[0], "0");
    EXPECT_EQ(Rows("SELECT count(*) FROM scalar_points", store.get())[0], std::to_string(s + 1));
  }
}

// A varied log: header, run, config, define_metric, rows with nested keys, histograms both
// ways, media, system metrics, a resume that goes back, summary, alert, exit.
WandbLogWriter RichLog(uint64_t origin, unsigned seed) {
  std::mt19937 rng(seed);
  Log log({.origin = origin});
  log.Add([](int64_t n) { return WandbHeaderRecord(n, "0.17.2"); });
  log.Add([](int64_t n) {
    WandbRunInfo run;
    run.run_id = "grow";
    run.project = "p";
    run.start_time = kT0;
    run.config = {Flat("lr", "0.1"), Flat("arch", R"({"depth": 4, "act": "gelu"})")};
    return WandbRunRecord(n, run);
  });
  log.Add([](int64_t n) { return WandbTelemetryRecord(n, "0.17.2"); });
  log.Add([](int64_t n) { return WandbMetricRecord(n, "", "val/*", "epoch"); });
  double t = kT0;
  int64_t step = 0;
  for (int i = 0; i < 300; ++i) {
    t += 1.5;
    if (i == 180) step -= 30;  // resumed from a checkpoint
    std::vector<WandbKV> items = {Flat("loss", PyJsonNumber(1.0 / (i + 1))),
                                  Flat("lr", PyJsonNumber(0.1 * (300 - i) / 300)),
                                  Flat("opt", R"({"m": 0.9, "v.x": )" + std::to_string(i) + "}")};
    if (i % 7 == 0) items.push_back(Flat("val/acc", PyJsonNumber(i / 300.0)));
    if (i % 7 == 0) items.push_back(Flat("epoch", std::to_string(i / 7)));
    if (i % 13 == 0) items.push_back(Flat("weird", i % 2 ? "NaN" : "-Infinity"));
    if (i % 20 == 0) items.push_back(Flat("h", WandbHistogramJson({1, static_cast<double>(i), 0, 2}, {0, 1, 2, 3, 4})));
    if (i % 50 == 0) items.push_back(Flat("img", R"({"_type": "image-file", "path": "x.png"})"));
    if (i % 9 == 0) items.push_back(Flat("note", "\"" + std::string(rng() % 400, 'n') + "\""));
    if (i % 30 == 0) {
      // A core-style row.
      for (auto& kv : WandbHistogramLeaves({"g", "w"}, {3, 1}, {-1, 0, 1})) items.push_back(kv);
      items.push_back(Nested({"deep", "a.b", "c"}, std::to_string(i)));
    }
    log.Add([&](int64_t n) { return WandbPythonRow(n, step, t, items); });
    ++step;
    if (i % 10 == 5)
      log.Add([&](int64_t n) {
        return WandbStatsRecord(n, t + 0.25, {{"gpu.0.gpu", std::to_string(i % 100)}, {"memory", "41.5"}});
      });
    if (i % 40 == 0) log.Add([&](int64_t n) { return WandbOutputRecord(n, t, std::string(rng() % 3000, 'l')); });
  }
  log.Add([](int64_t n) { return WandbSummaryRecord(n, {Flat("loss", "0.004"), Nested({"best", "acc"}, "0.8")}); });
  log.Add([](int64_t n) { return WandbAlertRecord(n, "diverged", "loss is NaN", "WARN"); });
  log.Add([](int64_t n) { return WandbExitRecord(n, 0, 400); });
  log.Add([](int64_t n) { return WandbFinalRecord(n); });
  return log.w;
}

std::vector<std::string> Everything(store::Store& s) {
  std::vector<std::string> all = DumpStore(s.db());
  auto add = [&](const std::string& prefix, const std::string& sql) {
    auto st = s.db().Prepare(sql);
    EXPECT_TRUE(st.ok()) << sql;
    while (*st->Step()) {
      std::string line = prefix;
      for (int c = 0; c < st->ColumnCount(); ++c) line += "|" + (st->IsNull(c) ? std::string("NULL") : st->Text(c));
      all.push_back(line);
    }
  };
  add("config", "SELECT key, value_json FROM run_config ORDER BY key");
  add("summary", "SELECT key, value_json FROM run_summary_values ORDER BY key");
  add("run", "SELECT name, format, external_id, project, start_time, exit_code, sdk_version, images, other_tensors FROM runs");
  add("source", "SELECT path, generation, committed_offset, records, error_count, last_record_num, status, resyncing FROM sources");
  add("error", "SELECT path, offset, kind, detail FROM ingest_errors ORDER BY offset, kind");
  add("step_metric", "SELECT tag, kind, step_metric FROM series ORDER BY tag, kind");
  std::sort(all.begin(), all.end());
  return all;
}

TEST_F(WandbIngest, ALogReadAsItGrowsEndsAsOneReadWhole) {
  for (uint64_t origin : {0, 7}) {
    SCOPED_TRACE("origin " + std::to_string(origin));
    const WandbLogWriter w = RichLog(origin, static_cast<unsigned>(3 + origin));
    const std::string& bytes = w.bytes();
    ASSERT_GT(bytes.size(), 2 * kWandbBlock + 1000);
    TempDir dir;
    logdir_ = dir / "logs";
    const std::string path = RunFile("grow");

    // Appends of a few hundred bytes, each read at once (tail -f); some cuts fall inside a
    // block's trailer padding, in chunk headers, at block boundaries.
    auto grown = Open(dir / "grown.db");
    std::mt19937 rng(9);
    std::vector<uint64_t> cuts;
    for (uint64_t n = 0; n < bytes.size(); n += 1 + rng() % 600) cuts.push_back(n);
    for (const auto& c : w.chunks()) {
      cuts.push_back(c.offset + 3);
      if (w.BlockEnd(c.end()) - c.end() < 7) cuts.push_back(c.end() + 1);  // inside the padding
    }
    for (uint64_t b = origin + kWandbBlock; b < bytes.size(); b += kWandbBlock) cuts.push_back(b);
    cuts.push_back(bytes.size());
    std::sort(cuts.begin(), cuts.end());
    cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
    WriteFile(path, "");
    uint64_t have = 0;
    for (uint64_t n : cuts) {
      if (n > bytes.size()) break;
      AppendFile(path, bytes.substr(have, n - have));
      have = n;
      Ingest(grown.get());
    }

    TempDir dir2;
    auto whole = Open(dir2 / "whole.db");
    Ingest(whole.get());

    const auto a = Everything(*grown), b = Everything(*whole);
    std::vector<std::string> only_grown, only_whole;
    std::set_difference(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(only_grown));
    std::set_difference(b.begin(), b.end(), a.begin(), a.end(), std::back_inserter(only_whole));
    EXPECT_THAT(only_grown, ElementsAre());
    EXPECT_THAT(only_whole, ElementsAre());
    EXPECT_GT(a.size(), 1000u);
    // And the whole read holds what was written.
    EXPECT_EQ(Rows("SELECT count(*) FROM ingest_errors", whole.get())[0], "0");
    EXPECT_EQ(Rows("SELECT records FROM sources", whole.get())[0], std::to_string(w.records().size()));
    // loss, lr, opt.* and the core keys at the resume; val/acc, epoch and weird when next logged.
    EXPECT_EQ(Rows("SELECT count(*) FROM run_events WHERE kind = 'restart'", whole.get())[0], "2");
    EXPECT_EQ(Rows("SELECT exit_code || '|' || sdk_version FROM runs", whole.get())[0], "0|0.17.2");
  }
}

}  // namespace
}  // namespace tw
