// Diagnosis on real training runs: tests/data/real_runs holds event files written by real
// PyTorch SummaryWriter, Lightning and HF Trainer runs (tools/real_runs/ made them on a GPU),
// healthy and deliberately sick, each labeled in labels.json with the rules a careful engineer
// would expect to fire, the ones that must stay quiet (at warning or above), and the onset.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

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

// Ingests `root` into a fresh store and evaluates every rule as of an hour after the last point;
// per run, what fired (unmuted, not pending).
std::map<std::string, std::vector<testing::FiredRule>> FiredByRun(const std::string& root, const std::string& db) {
  std::map<std::string, std::vector<testing::FiredRule>> out;
  {
    Result<std::unique_ptr<store::Store>> s = store::Store::Open(db);
    EXPECT_TRUE(s.ok());
    if (!s.ok()) return out;
    ingest::Summary summary;
    EXPECT_TRUE(ingest::IngestPaths(**s, {root}, {}, &summary).ok()) << root;
  }
  Result<std::unique_ptr<Engine>> engine = Engine::Open(db, {});
  EXPECT_TRUE(engine.ok());
  if (!engine.ok()) return out;
  Result<store::Stmt> last = (*engine)->db().Prepare("SELECT max(wall_time) FROM scalars");
  EXPECT_TRUE(last.ok() && *last->Step());
  Result<Evaluation> ev = (*engine)->Evaluate(nullptr, last->Real(0) + 3600);
  EXPECT_TRUE(ev.ok()) << ev.status().message();
  if (!ev.ok()) return out;
  for (const auto& o : ev->observations)
    if (o.muted_by.empty() && !o.pending && o.rule != "run_verdict")
      out[o.run].push_back({o.rule, o.severity >= Severity::kWarning});
  return out;
}

// Every labelled real run (the CPU runs, and the public runs of ../shared/corpus-sick and
// ../shared/corpus that bench/real_labels/corpus_sick.json labels) gets what its label says,
// family by family as diagnose_eval --real scores it, except for the gaps that
// tests/data/real_known_gaps.tsv lists. A behaviour that catches a label is pinned by this test
// on the real file; a gap closed must leave the list (the test says so), so the list only
// shrinks, and what is still wrong is written down in one place.
TEST(DiagnoseRealRuns, EveryLabelledRunMatchesItsLabelOrAKnownGap) {
  std::set<std::string> known;  // "SET\tRUN\tGAP"
  {
    std::ifstream in(TW_KNOWN_GAPS_FILE);
    ASSERT_TRUE(in) << TW_KNOWN_GAPS_FILE;
    for (std::string line; std::getline(in, line);) {
      if (line.empty() || line[0] == '#') continue;
      std::istringstream fields(line);
      std::string set, run, gap;
      ASSERT_TRUE(std::getline(fields, set, '\t') && std::getline(fields, run, '\t') && std::getline(fields, gap, '\t'))
          << "not SET<TAB>RUN<TAB>GAP<TAB>why: " << line;
      known.insert(set + "\t" + run + "\t" + gap);
    }
  }
  struct LabelSet {
    std::string name, labels;
    std::map<std::string, std::string> roots;  // a label's root -> its directory
  };
  std::vector<LabelSet> sets = {{"cpu_runs", std::string(TW_CPU_RUNS_DIR) + "/labels.json", {{"", TW_CPU_RUNS_DIR}}}};
  const std::string sick = testing::CorpusSickDir(), corpus = testing::CorpusDir();
  if (!sick.empty() && !corpus.empty())
    sets.push_back({"corpus_sick", std::string(TW_REAL_LABELS_DIR) + "/corpus_sick.json",
                    {{"corpus-sick", sick}, {"corpus", corpus}}});
  testing::TempDir tmp;
  std::set<std::string> seen;
  std::string unexpected;
  int serial = 0;
  for (const LabelSet& set : sets) {
    Result<std::vector<testing::RealLabel>> labels = testing::ReadRealLabels(set.labels);
    ASSERT_TRUE(labels.ok()) << labels.status().message();
    for (const auto& [root, dir] : set.roots) {
      auto fired = FiredByRun(dir, tmp / ("s" + std::to_string(serial++) + ".db"));
      int labelled = 0;
      for (const testing::RealLabel& label : *labels) {
        if (label.root != root) continue;
        ++labelled;
        for (const std::string& gap : testing::LabelGaps(label, fired[label.run])) {
          const std::string key = set.name + "\t" + label.run + "\t" + gap;
          seen.insert(key);
          if (!known.count(key)) unexpected += key + "\n";
        }
      }
      EXPECT_GT(labelled, 0) << set.name << ": no label has root '" << root << "'";
    }
  }
  EXPECT_TRUE(unexpected.empty()) << "new gaps (a label no longer caught, or a new alarm on a healthy run):\n"
                                  << unexpected;
  std::string closed;
  for (const std::string& key : known) {
    if (sick.empty() && key.rfind("corpus_sick\t", 0) == 0) continue;
    if (!seen.count(key)) closed += key + "\n";
  }
  EXPECT_TRUE(closed.empty()) << "gaps now closed: remove them from " << TW_KNOWN_GAPS_FILE << ":\n" << closed;
}

}  // namespace
}  // namespace tw::diagnose
