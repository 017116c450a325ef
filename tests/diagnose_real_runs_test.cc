// Diagnosis on real training runs: tests/data/real_runs holds event files written by real
// PyTorch SummaryWriter, Lightning and HF Trainer runs (tools/real_runs/ made them on a GPU),
// healthy and deliberately sick, each labeled in labels.json with the rules a careful engineer
// would expect to fire, the ones that must stay quiet (at warning or above), and the onset.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>

#include "diagnose/engine.h"
#include "ingest/ingest.h"
#include "store/store.h"
#include "support/test_env.h"

namespace tw::diagnose {
namespace {

struct Label {
  std::set<std::string> expect, expect_not;
  std::string primary;              // the first expected rule: the one the onset is about
  std::optional<int64_t> onset;
};

// labels.json, read with SQLite's JSON functions.
std::map<std::string, Label> ReadLabels(store::Db& db, const std::string& text) {
  std::map<std::string, Label> out;
  Result<store::Stmt> q = db.Prepare(
      "SELECT r.key, 'expect', e.value FROM json_each(?1) r, json_each(r.value, '$.expect') e "
      "UNION ALL SELECT r.key, 'expect_not', e.value FROM json_each(?1) r, json_each(r.value, '$.expect_not') e "
      "UNION ALL SELECT r.key, 'onset', json_extract(r.value, '$.onset_step') FROM json_each(?1) r "
      "UNION ALL SELECT r.key, 'primary', json_extract(r.value, '$.expect[0]') FROM json_each(?1) r");
  EXPECT_TRUE(q.ok()) << q.status().message();
  if (!q.ok()) return out;
  q->Bind(1, text);
  while (*q->Step()) {
    Label& l = out[q->Text(0)];
    const std::string what = q->Text(1);
    if (what == "expect") l.expect.insert(q->Text(2));
    else if (what == "expect_not") l.expect_not.insert(q->Text(2));
    else if (what == "primary") l.primary = q->Text(2);
    else if (!q->IsNull(2)) l.onset = q->Int(2);
  }
  return out;
}

TEST(DiagnoseRealRuns, EveryLabeledRunGetsWhatAnEngineerWouldSay) {
  const std::string dir = TW_REAL_RUNS_DIR;
  testing::TempDir tmp;
  const std::string db = tmp / "tw.db";
  {
    Result<std::unique_ptr<store::Store>> s = store::Store::Open(db);
    ASSERT_TRUE(s.ok());
    ingest::Summary summary;
    ASSERT_TRUE(ingest::IngestPaths(**s, {dir}, {}, &summary).ok());
    ASSERT_EQ(summary.totals.errors, 0);
  }
  Result<std::unique_ptr<Engine>> engine = Engine::Open(db, {});
  ASSERT_TRUE(engine.ok());
  ASSERT_TRUE((*engine)->load_errors().empty());
  // As of an hour after the last point: the runs are finished history by then.
  Result<store::Stmt> last = (*engine)->db().Prepare("SELECT max(wall_time) FROM scalars");
  ASSERT_TRUE(last.ok() && *last->Step());
  Result<Evaluation> ev = (*engine)->Evaluate(nullptr, last->Real(0) + 3600);
  ASSERT_TRUE(ev.ok()) << ev.status().message();
  EXPECT_TRUE(ev->errors.empty()) << ev->errors.front();

  const std::map<std::string, Label> labels = ReadLabels((*engine)->db(), testing::ReadFile(dir + "/labels.json"));
  ASSERT_GE(labels.size(), 18u);
  Result<store::Stmt> span = (*engine)->db().Prepare("SELECT max(step) - min(step) FROM scalar_points WHERE run = ?");
  ASSERT_TRUE(span.ok());
  for (const auto& [run, label] : labels) {
    SCOPED_TRACE(run);
    // Per rule, its finding with the earliest onset (a rule may fire on several series).
    std::map<std::string, const Observation*> fired;
    for (const auto& o : ev->observations) {
      if (o.run != run || !o.muted_by.empty()) continue;
      auto [it, added] = fired.emplace(o.rule, &o);
      if (!added && o.onset_step && (!it->second->onset_step || *o.onset_step < *it->second->onset_step))
        it->second = &o;
    }
    span->Reset();
    span->Bind(1, run);
    ASSERT_TRUE(*span->Step());
    const double length = span->Real(0);
    for (const auto& rule : label.expect) {
      auto f = fired.find(rule);
      EXPECT_NE(f, fired.end()) << rule << " did not fire";
      if (f == fired.end() || rule != label.primary || !label.onset || !f->second->onset_step) continue;
      EXPECT_LE(std::fabs(static_cast<double>(*f->second->onset_step - *label.onset)), 0.1 * length)
          << rule << ": onset " << *f->second->onset_step << ", labeled " << *label.onset;
    }
    for (const auto& [rule, o] : fired) {
      if (label.expect_not.count(rule)) {
        EXPECT_LT(o->severity, Severity::kWarning) << rule << " must stay quiet: " << o->message;
      }
      if (label.expect.empty()) {
        EXPECT_LT(o->severity, Severity::kWarning) << "a healthy run got " << rule << ": " << o->message;
      }
    }
  }
}

}  // namespace
}  // namespace tw::diagnose
