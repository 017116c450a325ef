// run_verdict: the engine's per-run verdict as a finding. Generated runs in PyTorch's style go
// through a real store, the engine and the finding tracker: a sick run gets a stored verdict
// (info, naming what decided it), a healthy one none, the verdict resolves once a resume clears
// the pathology, it can be disabled, and `diagnose --format json` carries it.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "diagnose/engine.h"
#include "diagnose/findings.h"
#include "diagnose/report.h"
#include "diagnose/verdict.h"
#include "ingest/ingest.h"
#include "store/store.h"
#include "support/event_writer.h"
#include "support/test_env.h"

namespace tw::diagnose {
namespace {

using testing::EventFileWriter;
using testing::SimpleScalarEvent;

constexpr double kT0 = 1.7e9;

class RunVerdictTest : public ::testing::Test {
 protected:
  testing::TempDir dir_;
  std::mt19937 rng_{7};

  std::string Db() const { return dir_ / "tw.db"; }

  // A power-law loss decaying to 0.3 with 3% noise over [from, to), NaN from `nan_from`, one
  // step a second from `t0`; `pid` tells one writer (file) of the run from the next.
  void Write(const std::string& run, int pid, int64_t from, int64_t to, int64_t nan_from = -1,
             double t0 = kT0) {
    EventFileWriter w(dir_ / "logs/" + run + "/" + testing::EventFileName(1700000000 + pid, "h", pid, 0));
    w.Add(testing::FileVersionEvent(t0 + from));
    std::normal_distribution<double> noise(0, 0.03);
    for (int64_t s = from; s < to; ++s) {
      const double v = nan_from >= 0 && s >= nan_from
                           ? NAN
                           : (0.3 + 2.0 * std::pow(1 + s / 200.0, -0.7)) * std::exp(noise(rng_));
      w.Add(SimpleScalarEvent("Loss/train", s, t0 + s, static_cast<float>(v)));
    }
    w.Flush();
  }

  void Ingest() {
    Result<std::unique_ptr<store::Store>> store = store::Store::Open(Db());
    ASSERT_TRUE(store.ok()) << store.status().message();
    ingest::Summary summary;
    ASSERT_TRUE(ingest::IngestPaths(**store, {dir_ / "logs"}, {}, &summary).ok());
  }

  std::unique_ptr<Engine> Open(EngineOptions options = {}) {
    Result<std::unique_ptr<Engine>> engine = Engine::Open(Db(), std::move(options));
    EXPECT_TRUE(engine.ok()) << engine.status().message();
    if (!engine.ok()) return nullptr;
    EXPECT_TRUE((*engine)->load_errors().empty()) << (*engine)->load_errors().front();
    return std::move(*engine);
  }

  static Evaluation Run(Engine& e) {
    Result<Evaluation> ev = e.Evaluate(nullptr, kT0 + 1e6);
    EXPECT_TRUE(ev.ok()) << ev.status().message();
    for (const auto& err : ev->errors) ADD_FAILURE() << err;
    return ev.ok() ? std::move(*ev) : Evaluation{};
  }

  static std::vector<const Observation*> Verdicts(const Evaluation& ev, const std::string& run) {
    std::vector<const Observation*> out;
    for (const auto& o : ev.observations)
      if (o.rule == kRunVerdictId && o.run == run) out.push_back(&o);
    return out;
  }

  // The first row of `sql` over the store, its columns joined by '|' ("" when no row).
  std::string Query(const std::string& sql) {
    Result<std::unique_ptr<store::Db>> db = store::OpenReadOnly(Db());
    EXPECT_TRUE(db.ok());
    if (!db.ok()) return "?";
    Result<store::Stmt> q = (*db)->Prepare(sql);
    EXPECT_TRUE(q.ok()) << sql << ": " << q.status().message();
    if (!q.ok() || !*q->Step()) return "";
    std::string out;
    for (int c = 0; c < q->ColumnCount(); ++c) out += (c ? "|" : "") + (q->IsNull(c) ? "NULL" : q->Text(c));
    return out;
  }
};

TEST_F(RunVerdictTest, ASickRunGetsAStoredVerdictThatResolvesWhenTheRunIsHealthyAgain) {
  Write("sick", 1, 0, 1000, /*nan_from=*/700);
  Write("fine", 2, 0, 1000);
  Ingest();
  std::unique_ptr<Engine> engine = Open();
  ASSERT_TRUE(engine);
  Result<std::unique_ptr<FindingTracker>> tracker = FindingTracker::Open(Db(), 2);
  ASSERT_TRUE(tracker.ok()) << tracker.status().message();

  Evaluation ev = Run(*engine);
  auto sick = Verdicts(ev, "sick");
  ASSERT_EQ(sick.size(), 1u);
  EXPECT_EQ(sick[0]->severity, Severity::kInfo);
  EXPECT_EQ(sick[0]->series_id, 0);
  EXPECT_EQ(sick[0]->onset_step, 700);
  EXPECT_TRUE(sick[0]->message.starts_with("kill: non_finite_loss (critical) on Loss/train")) << sick[0]->message;
  EXPECT_TRUE(Verdicts(ev, "fine").empty()) << Verdicts(ev, "fine")[0]->message;
  ASSERT_TRUE((*tracker)->Apply(ev, kT0 + 1e6).ok());

  const std::string stored =
      "SELECT state, severity, onset_step, json_extract(evidence, '$.verdict'), "
      "json_extract(evidence, '$.reasons[0].rule'), json_extract(evidence, '$.reasons[0].series'), "
      "json_type(evidence, '$.forecast') FROM findings WHERE rule = 'run_verdict' AND "
      "run_id = (SELECT run_id FROM runs WHERE name = ";
  EXPECT_EQ(Query(stored + "'sick')"), "firing|info|700|kill|non_finite_loss|Loss/train|null");
  EXPECT_EQ(Query(stored + "'fine')"), "");

  // The run resumes from a checkpoint before the NaN, later, in a new file whose steps go back
  // to 600: the NaN points are superseded and the run is healthy. The verdict resolves as other
  // findings do, after the tracker's two evaluations without it.
  Write("sick", 3, 600, 1400, -1, kT0 + 1000);
  Ingest();
  ev = Run(*engine);
  EXPECT_TRUE(Verdicts(ev, "sick").empty()) << Verdicts(ev, "sick")[0]->message;
  ASSERT_TRUE((*tracker)->Apply(ev, kT0 + 1e6 + 10).ok());
  EXPECT_EQ(Query("SELECT state FROM findings WHERE rule = 'run_verdict'"), "firing") << "one miss is not enough";
  Result<std::vector<Transition>> last = (*tracker)->Apply(Run(*engine), kT0 + 1e6 + 20);
  ASSERT_TRUE(last.ok());
  EXPECT_EQ(Query("SELECT state FROM findings WHERE rule = 'run_verdict'"), "resolved");
  EXPECT_EQ(Query("SELECT count(*) FROM finding_transitions JOIN findings USING (finding_id) "
                  "WHERE rule = 'run_verdict'"),
            "2")
      << "fired once, resolved once";
}

TEST_F(RunVerdictTest, DisabledLikeARuleAndNamedInConfigLikeOne) {
  Write("sick", 1, 0, 500, 300);
  Ingest();
  EngineOptions off;
  off.disabled.insert(kRunVerdictId);
  std::unique_ptr<Engine> engine = Open(off);
  ASSERT_TRUE(engine);
  Evaluation ev = Run(*engine);
  EXPECT_TRUE(Verdicts(ev, "sick").empty());
  ASSERT_EQ(ev.verdicts.size(), 1u);
  EXPECT_EQ(ev.verdicts[0].verdict, "kill") << "the report's verdict stays";

  // [rules.run_verdict] names a known id, one without parameters.
  EngineOptions typo;
  typo.params[kRunVerdictId]["z"] = 1;
  Result<std::unique_ptr<Engine>> e = Engine::Open(Db(), typo);
  ASSERT_TRUE(e.ok());
  ASSERT_EQ((*e)->load_errors().size(), 1u);
  EXPECT_EQ((*e)->load_errors()[0], "config: [rules.run_verdict]: rule run_verdict has no parameter 'z'");

  // A user rule cannot take the id.
  testing::WriteFile(dir_ / "rules/mine.sql", "-- id: run_verdict\nSELECT 'x' AS message\n");
  EngineOptions user;
  user.rules_dir = dir_ / "rules";
  e = Engine::Open(Db(), user);
  ASSERT_TRUE(e.ok());
  ASSERT_EQ((*e)->load_errors().size(), 1u);
  EXPECT_NE((*e)->load_errors()[0].find("mine.sql: the id run_verdict is reserved"), std::string::npos)
      << (*e)->load_errors()[0];
}

TEST_F(RunVerdictTest, JsonCarriesTheVerdictAndTheTextReportPrintsItOnce) {
  Write("sick", 1, 0, 500, 300);
  Ingest();
  std::unique_ptr<Engine> engine = Open();
  ASSERT_TRUE(engine);
  Evaluation ev = Run(*engine);
  const std::string json = RenderReport(ev, engine->db(), ReportFormat::kJson);
  Result<store::Stmt> q = engine->db().Prepare(
      "SELECT json_extract(value, '$.severity'), json_extract(value, '$.series'), "
      "json_extract(value, '$.state'), json_extract(value, '$.onset_step'), "
      "json_extract(value, '$.evidence.verdict'), json_extract(value, '$.evidence.reasons[0].severity'), "
      "json_extract(value, '$.message') FROM json_each(?) WHERE json_extract(value, '$.rule') = 'run_verdict'");
  ASSERT_TRUE(q.ok());
  q->Bind(1, json);
  ASSERT_TRUE(*q->Step()) << json;
  EXPECT_EQ(q->Text(0), "info");
  EXPECT_EQ(q->Text(1), "");
  EXPECT_EQ(q->Text(2), "firing");
  EXPECT_EQ(q->Int(3), 300);
  EXPECT_EQ(q->Text(4), "kill");
  EXPECT_EQ(q->Text(5), "critical");
  EXPECT_TRUE(q->Text(6).starts_with("kill: ")) << q->Text(6);
  EXPECT_FALSE(*q->Step()) << "one verdict per run";

  const std::string text = RenderReport(ev, engine->db(), ReportFormat::kText);
  EXPECT_NE(text.find("== sick: kill"), std::string::npos) << text;
  EXPECT_EQ(text.find("run_verdict"), std::string::npos) << "the heading says it already\n" << text;
  EXPECT_EQ(RenderReport(ev, engine->db(), ReportFormat::kMarkdown).find("run_verdict"), std::string::npos);
}

// A warning makes the verdict watch, and a run that is not dying gets the loss forecast, in the
// message and as the fit's numbers.
TEST_F(RunVerdictTest, AWatchedRunCarriesItsForecast) {
  {
    EventFileWriter w(dir_ / "logs/leak/" + testing::EventFileName(1700000000, "h", 1, 0));
    w.Add(testing::FileVersionEvent(kT0));
    std::normal_distribution<double> noise(0, 0.03);
    for (int64_t s = 0; s < 2000; ++s) {
      w.Add(SimpleScalarEvent("loss", s, kT0 + s, static_cast<float>((0.3 + 2.0 * std::pow(1 + s / 200.0, -0.7)) *
                                                                      std::exp(noise(rng_)))));
      if (s % 10 == 0)
        w.Add(SimpleScalarEvent("memory", s, kT0 + s, static_cast<float>(2e9 + 1e6 * s + 5e6 * noise(rng_))));
    }
    w.Flush();
  }
  Ingest();
  std::unique_ptr<Engine> engine = Open();
  ASSERT_TRUE(engine);
  Evaluation ev = Run(*engine);
  auto v = Verdicts(ev, "leak");
  ASSERT_EQ(v.size(), 1u);
  EXPECT_TRUE(v[0]->message.starts_with("watch: memory_growth (warning) on memory; forecast: at this trajectory"))
      << v[0]->message;
  Result<store::Stmt> q = engine->db().Prepare(
      "SELECT json_extract(?1, '$.verdict'), json_extract(?1, '$.forecast.r2') >= 0.8, "
      "json_extract(?1, '$.forecast.forecast') > 0");
  ASSERT_TRUE(q.ok());
  q->Bind(1, v[0]->evidence);
  ASSERT_TRUE(*q->Step());
  EXPECT_EQ(q->Text(0), "watch");
  EXPECT_EQ(q->Int(1), 1) << v[0]->evidence;
  EXPECT_EQ(q->Int(2), 1) << v[0]->evidence;
}

}  // namespace
}  // namespace tw::diagnose
