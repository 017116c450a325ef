// Diagnosis on real training runs: tests/data/real_runs holds event files written by real
// PyTorch SummaryWriter, Lightning and HF Trainer runs (tools/real_runs/ made them on a GPU),
// healthy and deliberately sick, each labeled in labels.json with the rules a careful engineer
// would expect to fire, the ones that must stay quiet (at warning or above), and the onset.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "diagnose/engine.h"
#include "ingest/ingest.h"
#include "store/store.h"
#include "support/real_labels.h"
#include "support/test_env.h"

namespace tw::diagnose {
namespace {

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

  Result<std::vector<testing::RealLabel>> labels = testing::ReadRealLabels(dir + "/labels.json");
  ASSERT_TRUE(labels.ok()) << labels.status().message();
  ASSERT_GE(labels->size(), 18u);
  Result<store::Stmt> span = (*engine)->db().Prepare("SELECT max(step) - min(step) FROM scalar_points WHERE run = ?");
  ASSERT_TRUE(span.ok());
  for (const testing::RealLabel& label : *labels) {
    const std::string& run = label.run;
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
      const std::optional<int64_t> onset = label.OnsetOf(rule);
      if (f == fired.end() || rule != label.expect.front() || !onset || !f->second->onset_step) continue;
      EXPECT_LE(std::fabs(static_cast<double>(*f->second->onset_step - *onset)), 0.1 * length)
          << rule << ": onset " << *f->second->onset_step << ", labeled " << *onset;
    }
    for (const auto& [rule, o] : fired) {
      if (std::count(label.expect_not.begin(), label.expect_not.end(), rule)) {
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
