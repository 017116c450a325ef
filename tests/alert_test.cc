// [[alert]] tables (docs/alerts.md): their config errors at file:line, and each condition
// firing and resolving on a real store filled by real ingestion of event files, through the
// same finding lifecycle as the SQL rules; new_best once per new best, and not while a silence
// covers it; `trainwatch rules` lists them with their file:line.
#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "app/config.h"
#include "diagnose/findings.h"
#include "notify/outbox.h"
#include "support/diagnose_fixture.h"
#include "support/store_dump.h"

namespace tw {
namespace {

using diagnose::Alert;
using testing::EventFileWriter;

// --- Config errors -------------------------------------------------------------------------

struct BadAlert {
  std::string toml;      // after a first line "# alerts" (so [[alert]] is on line 2)
  std::string expected;  // in the error, after "tw.toml:"
};

Result<app::Config> Parse(const std::string& body) {
  return app::ParseConfig("# alerts\n" + body, "/etc/tw/tw.toml");
}

TEST(AlertConfig, MistakesAreRefusedWithFileAndLine) {
  const std::vector<BadAlert> cases = {
      {"[[alert]]\nname = \"a\"\ntag = \"loss\"\nabove = 1\ntresh = 2\n", "6: unknown key 'tresh' in [[alert]]"},
      {"[[alert]]\nname = \"a\"\ntag = \"loss\"\n", "2: [[alert]] 'a': needs one condition"},
      {"[[alert]]\nname = \"a\"\ntag = \"loss\"\nabove = 1\nbelow = 0\n",
       "6: [[alert]] 'a': has two conditions, above and below: an alert has exactly one (write two alerts for a band"},
      {"[[alert]]\nname = \"a\"\ntag = \"loss\"\nnew_best = \"min\"\nabsent_for = \"1h\"\n",
       "6: [[alert]] 'a': has two conditions, new_best and absent_for"},
      {"[[alert]]\ntag = \"loss\"\nabove = 1\n", "2: [[alert]] needs a name"},
      {"[[alert]]\nname = \"a b\"\ntag = \"loss\"\nabove = 1\n", "3: [[alert]] name 'a b' must be letters"},
      {"[[alert]]\nname = \"a\"\ntag = \"x\"\nabove = 1\n[[alert]]\nname = \"a\"\ntag = \"y\"\nabove = 2\n",
       "7: [[alert]] two alerts are named 'a'"},
      {"[[alert]]\nname = \"a\"\nabove = 1\n", "2: [[alert]] 'a': needs a tag (a glob over tags) or a role"},
      {"[[alert]]\nname = \"a\"\ntag = \"x\"\nrole = \"val_loss\"\nabove = 1\n", "5: [[alert]] 'a': give a tag or a role, not both"},
      {"[[alert]]\nname = \"a\"\nrole = \"val_los\"\nabove = 1\n", "4: [[alert]] 'a': no role is called 'val_los'"},
      {"[[alert]]\nname = \"a\"\ntag = \"x\"\nabove = \"high\"\n", "5: [[alert]] above must be a number, got a string"},
      {"[[alert]]\nname = \"a\"\ntag = \"x\"\nabove = nan\n", "5: [[alert]] above must be a finite number"},
      {"[[alert]]\nname = \"a\"\ntag = \"x\"\nnew_best = \"highest\"\n", "5: [[alert]] 'a': new_best must be \"min\""},
      {"[[alert]]\nname = \"a\"\nrole = \"val_loss\"\nnew_best = \"max\"\n",
       "5: [[alert]] 'a': new_best = \"max\" contradicts role val_loss, which is better lower"},
      {"[[alert]]\nname = \"a\"\ntag = \"x\"\nchange_pct = -20\n", "2: [[alert]] 'a': change_pct needs a window"},
      {"[[alert]]\nname = \"a\"\ntag = \"x\"\nchange_pct = 0\nwindow = 10\n", "5: [[alert]] 'a': change_pct must not be 0"},
      {"[[alert]]\nname = \"a\"\ntag = \"x\"\nchange_pct = -150\nwindow = 10\n",
       "5: [[alert]] 'a': change_pct -150: a fall of 100% or more crosses zero"},
      {"[[alert]]\nname = \"a\"\ntag = \"x\"\nchange_pct = 20\nwindow = 1.5\n",
       "6: [[alert]] 'a': window must be a whole number of steps"},
      {"[[alert]]\nname = \"a\"\ntag = \"x\"\nchange_pct = 20\nwindow = \"30 minutes\"\n",
       "6: [[alert]] 'a': window must be a whole number of steps"},
      {"[[alert]]\nname = \"a\"\ntag = \"x\"\nabove = 1\nwindow = 10\n", "6: [[alert]] 'a': window goes with change_pct only"},
      {"[[alert]]\nname = \"a\"\ntag = \"x\"\nabsent_for = \"2h\"\nfor = \"3h\"\n",
       "6: [[alert]] 'a': for does not go with absent_for, which is already how long the series must be silent "
       "(and for is longer than it)"},
      {"[[alert]]\nname = \"a\"\ntag = \"x\"\nabsent_for = \"soon\"\n", "5: [[alert]] 'a': absent_for must be a duration"},
      {"[[alert]]\nname = \"a\"\ntag = \"x\"\nabsent_for = 0\n", "5: [[alert]] 'a': absent_for must be longer than 0"},
      {"[[alert]]\nname = \"a\"\ntag = \"x\"\nabove = 1\nfor = -5\n", "6: [[alert]] 'a': for must be a duration"},
      {"[[alert]]\nname = \"a\"\ntag = \"x\"\nabove = 1\nseverity = \"high\"\n",
       "6: [[alert]] 'a': severity must be info, warning or critical"},
      {"[[alert]]\nname = \"a\"\ntag = \"\"\nabove = 1\n", "4: [[alert]] 'a': tag must not be empty"},
      {"[[alert]]\nname = \"a\"\ntag = \"x\"\nrun = \"\"\nabove = 1\n", "5: [[alert]] 'a': run must be a glob"},
      {"[alert]\nname = \"a\"\n", "2: 'alert' must be an array of tables"},
  };
  for (const BadAlert& c : cases) {
    Result<app::Config> r = Parse(c.toml);
    if (r.ok()) {
      ADD_FAILURE() << "accepted:\n" << c.toml;
      continue;
    }
    EXPECT_NE(r.status().message().find("/etc/tw/tw.toml:" + c.expected), std::string::npos)
        << r.status().message() << "\n  expected: " << c.expected << "\n  from:\n" << c.toml;
  }
}

TEST(AlertConfig, AGoodAlertParsesWithItsLine) {
  Result<app::Config> r = Parse(
      "[[alert]]\nname = \"acc_best\"\nrun = \"exp*\"\nrole = \"val_acc\"\nnew_best = \"max\"\nfor = \"10m\"\n"
      "severity = \"info\"\nmessage = \"a checkpoint to keep\"\n"
      "[[alert]]\nname = \"throughput_drop\"\ntag = \"perf/*\"\nchange_pct = -30\nwindow = \"15m\"\n");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->rules.alerts.size(), 2u);
  const Alert& a = r->rules.alerts[0];
  EXPECT_EQ(a.line, 2);
  EXPECT_EQ(a.run_glob, "exp*");
  EXPECT_EQ(a.role, "val_acc");
  EXPECT_EQ(a.condition, Alert::Condition::kNewBest);
  EXPECT_EQ(a.best, 1);
  EXPECT_EQ(a.for_seconds, 600);
  EXPECT_EQ(a.severity, diagnose::Severity::kInfo);
  const Alert& b = r->rules.alerts[1];
  EXPECT_EQ(b.line, 10);
  EXPECT_EQ(b.run_glob, "*");
  EXPECT_TRUE(b.window_seconds);
  EXPECT_EQ(b.window, 900);
  EXPECT_EQ(diagnose::DescribeCondition(b), "change of -30% over 15m");
}

// The example config's [[alert]]s, commented out there, parse once uncommented, and say what
// docs/alerts.md says they do.
TEST(AlertConfig, TheExampleConfigsAlertsParse) {
  const std::string path = std::string(TW_DOCS_DIR) + "/trainwatch.example.toml";
  std::ifstream in(path);
  ASSERT_TRUE(in) << path;
  std::string line, alerts;
  bool on = false;
  while (std::getline(in, line)) {
    if (line == "# [[alert]]") on = true;
    if (line == "[notify]") break;
    if (on && line.starts_with("# ")) alerts += line.substr(2) + "\n";
    else if (on && line == "#") alerts += "\n";
  }
  Result<app::Config> r = Parse(alerts);
  ASSERT_TRUE(r.ok()) << r.status().message() << "\n" << alerts;
  ASSERT_EQ(r->rules.alerts.size(), 4u) << alerts;
  std::vector<std::string> said;
  for (const Alert& a : r->rules.alerts) said.push_back(diagnose::DescribeTarget(a) + ": " + diagnose::DescribeCondition(a));
  EXPECT_EQ(said, (std::vector<std::string>{"tag 'val/acc' in runs 'exp/*': new best (max)",
                                            "role train_loss in runs '*': above 5",
                                            "tag 'perf/samples_per_sec' in runs '*': change of -30% over 15m",
                                            "role val_loss in runs '*': absent for 2h"}));
}

// The rule header key an alert's new_best uses is a rule file's too; a wrong value is refused
// with its line.
TEST(AlertConfig, TheFiresHeaderKey) {
  Result<diagnose::Rule> ok = diagnose::ParseRule("-- id: r\n-- fires: once_per_onset\nSELECT 'x' AS message", "r.sql");
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_TRUE(ok->once_per_onset);
  Result<diagnose::Rule> bad = diagnose::ParseRule("-- id: r\n-- fires: sometimes\nSELECT 'x' AS message", "r.sql");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "r.sql:2: fires must be per_condition (the default) or once_per_onset");
}

// A name a rule already has would make two rules of one id: refused before the store opens.
TEST(AlertConfig, ANameTakenByARuleIsRefused) {
  Result<app::Config> r = Parse("[[alert]]\nname = \"loss_spikes\"\ntag = \"x\"\nabove = 1\n");
  ASSERT_TRUE(r.ok()) << r.status().message();
  const std::vector<std::string> errors = diagnose::ConfigErrors(r->rules);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_NE(errors[0].find("/etc/tw/tw.toml:2: [[alert]] name 'loss_spikes' is the id of the rule from builtin:"),
            std::string::npos)
      << errors[0];
}

// --- Conditions on a real store ------------------------------------------------------------

// Runs written as event files and ingested into a real store; the engine with the alerts of a
// config; a finding tracker whose transitions queue notifications for one webhook channel, as
// the daemon's do.
class AlertTest : public testing::DiagnoseFixture {
 protected:
  void Configure(const std::string& alerts) {
    Result<app::Config> c = Parse(alerts);
    ASSERT_TRUE(c.ok()) << c.status().message();
    ASSERT_TRUE(diagnose::ConfigErrors(c->rules).empty()) << diagnose::ConfigErrors(c->rules)[0];
    options_ = c->rules;
  }
  // Points of `tag` at `steps` (every `every`), value f(step), wall time t0 + step * kRunDt,
  // appended to the run's one event file.
  void Log(const std::string& run, const std::string& tag, int64_t from, int64_t to,
           const std::function<double(int64_t)>& f, int every = 1, double t0 = testing::kRunT0) {
    auto& w = writers_[run];
    if (!w) {
      w = std::make_unique<EventFileWriter>(Root() + "/" + run + "/" + testing::EventFileName(1700000000, "h", 1, 0));
      w->Add(testing::FileVersionEvent(t0));
    }
    for (int64_t s = from; s < to; ++s)
      if (s % every == 0) w->Add(testing::SimpleScalarEvent(tag, s, t0 + s * testing::kRunDt, static_cast<float>(f(s))));
    w->Flush();
  }
  // Ingests what was written, evaluates every rule and alert as of `now`, and folds the
  // evaluation into the findings; the alerts' transitions as "rule:from>to " each.
  std::string Cycle(double now) {
    Ingest();
    if (!engine_) {
      Result<std::unique_ptr<diagnose::Engine>> e = diagnose::Engine::Open(Db(), options_);
      EXPECT_TRUE(e.ok()) << e.status().message();
      engine_ = std::move(*e);
      EXPECT_TRUE(engine_->load_errors().empty()) << engine_->load_errors().front();
      Result<std::unique_ptr<diagnose::FindingTracker>> t = diagnose::FindingTracker::Open(Db());
      EXPECT_TRUE(t.ok()) << t.status().message();
      tracker_ = std::move(*t);
      const std::vector<notify::ChannelConfig> channels = {notify::ChannelConfig::Defaults("hook", "webhook")};
      tracker_->SetTransitionHook([channels](store::Db& db, const diagnose::Transition& t, double at) -> Status {
        Result<int> q = notify::QueueTransition(db, channels, t.transition_id, t.from, t.to, at);
        return q.ok() ? Status::Ok() : q.status();
      });
    }
    Result<diagnose::Evaluation> ev = engine_->Evaluate(nullptr, now);
    EXPECT_TRUE(ev.ok()) << ev.status().message();
    if (!ev.ok()) return "error";
    for (const auto& e : ev->errors) ADD_FAILURE() << e;
    last_ = *ev;
    Result<std::vector<diagnose::Transition>> tr = tracker_->Apply(*ev, now);
    EXPECT_TRUE(tr.ok()) << tr.status().message();
    std::string out;
    for (const auto& t : *tr)
      if (IsAlert(t.rule)) out += t.rule + ":" + t.from + ">" + t.to + " ";
    return out;
  }
  bool IsAlert(const std::string& rule) const {
    for (const auto& a : options_.alerts)
      if (a.name == rule) return true;
    return false;
  }
  // The alert's observations in the last cycle.
  std::vector<diagnose::Observation> Seen(const std::string& rule) const {
    std::vector<diagnose::Observation> out;
    for (const auto& o : last_.observations)
      if (o.rule == rule) out.push_back(o);
    return out;
  }
  int64_t Query(const std::string& sql) { return testing::QueryInt(Db(), sql); }
  // The firing messages queued about `rule`'s findings.
  int64_t Firings(const std::string& rule) {
    return Query("SELECT count(*) FROM outbox o JOIN findings f USING (finding_id) WHERE f.rule = '" + rule +
                 "' AND o.event = 'finding.firing'");
  }
  static double Wall(int64_t step) { return testing::kRunT0 + step * testing::kRunDt; }

  diagnose::EngineOptions options_;
  std::map<std::string, std::unique_ptr<EventFileWriter>> writers_;
  std::unique_ptr<diagnose::Engine> engine_;
  std::unique_ptr<diagnose::FindingTracker> tracker_;
  diagnose::Evaluation last_;
};

auto Const(double v) {
  return [v](int64_t) { return v; };
}

// above: fires from where the stretch above began, only in runs its glob names, only on tags
// its glob names; resolves after two evaluations without it.
TEST_F(AlertTest, AboveFiresFromItsOnsetAndResolves) {
  Configure("[[alert]]\nname = \"loss_high\"\nrun = \"exp*\"\ntag = \"loss/*\"\nabove = 5\nmessage = \"loss blew up\"\n");
  Log("exp1", "Loss/train", 0, 60, Const(1));
  Log("exp1", "Loss/train", 60, 80, Const(10));
  Log("other", "Loss/train", 0, 80, Const(10));  // a run the glob does not name
  EXPECT_EQ(Cycle(Wall(80)), "loss_high:>firing ");
  const std::vector<diagnose::Observation> seen = Seen("loss_high");
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].run, "exp1");
  EXPECT_EQ(seen[0].series, "Loss/train");
  EXPECT_EQ(seen[0].onset_step, 60);
  EXPECT_EQ(seen[0].message, "loss blew up: Loss/train is 10 at step 79, above 5 since step 60");
  Log("exp1", "Loss/train", 80, 100, Const(1));
  EXPECT_EQ(Cycle(Wall(100)), "") << "one evaluation without it is not enough (flapping)";
  EXPECT_EQ(Cycle(Wall(100)), "loss_high:firing>resolved ");
  EXPECT_EQ(Firings("loss_high"), 1);
}

// below with `for`: pending until it has held that long in the series' own time, then firing.
TEST_F(AlertTest, BelowIsPendingUntilHeldForItsFor) {
  Configure("[[alert]]\nname = \"acc_low\"\ntag = \"val/acc\"\nbelow = 0.5\nfor = \"30s\"\n");
  Log("exp1", "val/acc", 0, 50, Const(0.9));
  Log("exp1", "val/acc", 50, 70, Const(0.1));  // 19 steps of 0.5 s: 9.5 s
  EXPECT_EQ(Cycle(Wall(70)), "acc_low:>pending ");
  EXPECT_NEAR(Seen("acc_low").at(0).held_seconds, 9.5, 1e-6);
  Log("exp1", "val/acc", 70, 130, Const(0.1));  // 79 steps: 39.5 s
  EXPECT_EQ(Cycle(Wall(130)), "acc_low:pending>firing ");
  Log("exp1", "val/acc", 130, 140, Const(0.9));
  EXPECT_EQ(Cycle(Wall(140)), "");
  EXPECT_EQ(Cycle(Wall(140)), "acc_low:firing>resolved ");
}

// change_pct, over steps and over a duration: the latest value against the one a window
// before; resolves once the change is no longer that large.
TEST_F(AlertTest, ChangePctOverStepsAndOverADuration) {
  Configure("[[alert]]\nname = \"drop_steps\"\ntag = \"perf/samples_per_sec\"\nchange_pct = -30\nwindow = 10\n"
            "[[alert]]\nname = \"drop_time\"\ntag = \"perf/samples_per_sec\"\nchange_pct = -30\nwindow = \"5s\"\n"
            "[[alert]]\nname = \"rise\"\ntag = \"perf/samples_per_sec\"\nchange_pct = 30\nwindow = 10\n");
  Log("exp1", "perf/samples_per_sec", 0, 100, Const(100));
  EXPECT_EQ(Cycle(Wall(100)), "");
  Log("exp1", "perf/samples_per_sec", 100, 105, Const(40));
  EXPECT_EQ(Cycle(Wall(105)), "drop_steps:>firing drop_time:>firing ");
  const diagnose::Observation o = Seen("drop_steps").at(0);
  EXPECT_EQ(o.onset_step, 104) << "without a `for`, the change is judged at the latest point only";
  EXPECT_EQ(o.message, "perf/samples_per_sec fell by 60.0% over 10 steps (100 -> 40 at step 104)");
  Log("exp1", "perf/samples_per_sec", 105, 125, Const(40));  // the window now sees 40 -> 40
  EXPECT_EQ(Cycle(Wall(125)), "");
  EXPECT_EQ(Cycle(Wall(125)), "drop_steps:firing>resolved drop_time:firing>resolved ");
  Log("exp1", "perf/samples_per_sec", 125, 127, Const(100));  // +150%
  EXPECT_EQ(Cycle(Wall(127)), "rise:>firing ");
}

// absent_for: over every run, by the clock against the series' last point; a run that logged
// its end (SessionLog STOP) is not waited for; writing again resolves it.
TEST_F(AlertTest, AbsentForFiresOnASilentSeriesAndResolvesWhenItWritesAgain) {
  Configure("[[alert]]\nname = \"no_eval\"\ntag = \"eval/loss\"\nabsent_for = \"1h\"\n");
  Log("exp1", "eval/loss", 0, 100, Const(1), 10);  // last point: step 90
  Log("done", "eval/loss", 0, 100, Const(1), 10);
  writers_["done"]->Add(testing::SessionLogEvent(99, Wall(99), 2));
  writers_["done"]->Flush();
  EXPECT_EQ(Cycle(Wall(90) + 1800), "");
  EXPECT_EQ(Cycle(Wall(90) + 3700), "no_eval:>firing ");
  ASSERT_EQ(Seen("no_eval").size(), 1u);
  EXPECT_EQ(Seen("no_eval")[0].run, "exp1");
  EXPECT_EQ(Seen("no_eval")[0].message, "eval/loss has logged nothing for 1.0 h (its last point: step 90; absent for 1 h or more)");
  // It writes again, its clock where ours is.
  const double now = Wall(90) + 4000;
  Log("exp1", "eval/loss", 100, 101, Const(1), 10, now - 100 * testing::kRunDt);
  EXPECT_EQ(Cycle(now), "");
  EXPECT_EQ(Cycle(now), "no_eval:firing>resolved ");
}

// new_best: one firing per new best (each a new onset: the best's step), none while nothing
// improves, and none announced while a silence (trainwatch silence add) covers the alert.
TEST_F(AlertTest, NewBestFiresOncePerNewBestAndNotUnderASilence) {
  Configure("[[alert]]\nname = \"acc_best\"\nrun = \"exp*\"\ntag = \"val/acc\"\nnew_best = \"max\"\nseverity = \"critical\"\n");
  const std::map<int64_t, double> acc = {{0, 0.5}, {10, 0.6}, {20, 0.55}, {30, 0.58}, {40, 0.6},
                                         {50, 0.7}, {60, 0.8}, {70, 0.9}};
  auto log = [&](int64_t from, int64_t to) { Log("exp1", "val/acc", from, to, [&](int64_t s) { return acc.at(s); }, 10); };
  log(0, 1);
  EXPECT_EQ(Cycle(Wall(0)), "") << "a first point is no new best";
  log(1, 30);
  EXPECT_EQ(Cycle(Wall(30)), "acc_best:>firing ");
  EXPECT_EQ(Seen("acc_best").at(0).onset_step, 10);
  EXPECT_EQ(Seen("acc_best").at(0).message, "val/acc reached a new best (max) of 0.6 at step 10 (the best before: 0.5)");
  EXPECT_EQ(Cycle(Wall(30)), "") << "the same best again";
  log(30, 50);  // 0.58, then 0.6 equals the best: no new best
  EXPECT_EQ(Cycle(Wall(50)), "");
  log(50, 60);
  EXPECT_EQ(Cycle(Wall(60)), "acc_best:firing>resolved acc_best:resolved>firing ");
  EXPECT_EQ(Seen("acc_best").at(0).onset_step, 50);
  EXPECT_EQ(Firings("acc_best"), 2);
  // A silence on the alert, made as a user makes one.
  std::string out;
  ASSERT_EQ(testing::RunCommand(std::string(TW_CLI_BINARY) + " silence add --db " + Db() +
                                    " --run 'exp*' --rule acc_best --for 1h 2>&1",
                                &out),
            0)
      << out;
  log(60, 80);
  EXPECT_EQ(Cycle(Wall(80)), "acc_best:firing>resolved acc_best:resolved>firing ");
  EXPECT_EQ(Query("SELECT onset_step FROM findings WHERE rule = 'acc_best'"), 70) << "tracked, not announced";
  EXPECT_EQ(Firings("acc_best"), 2) << "announced under a silence";
  EXPECT_EQ(Query("SELECT count(*) FROM finding_transitions JOIN findings USING (finding_id) "
                  "WHERE rule = 'acc_best' AND to_state = 'firing'"), 3);
}

// new_best on a role: the lowest validation loss, read from the role map (here a pattern's
// tag, Loss/val).
TEST_F(AlertTest, NewBestOnARole) {
  Configure("[[alert]]\nname = \"val_best\"\nrole = \"val_loss\"\nnew_best = \"min\"\n");
  Log("exp1", "Loss/val", 0, 30, [](int64_t s) { return 2.0 - s / 100.0; }, 10);
  EXPECT_EQ(Cycle(Wall(30)), "val_best:>firing ");
  EXPECT_EQ(Seen("val_best").at(0).onset_step, 20);
  EXPECT_EQ(Seen("val_best").at(0).series, "Loss/val");
}

// `trainwatch rules` lists each alert with its target, condition and file:line, and with
// --db what it watches in that store.
TEST_F(AlertTest, RulesListsAlertsWithTheirOrigin) {
  const std::string config = dir_ / "tw.toml";
  testing::WriteFile(config, "# alerts\n\n[[alert]]\nname = \"acc_best\"\ntag = \"val/acc\"\nnew_best = \"max\"\n"
                             "[[alert]]\nname = \"typo\"\ntag = \"val/acx\"\nabove = 1\n");
  Log("exp1", "val/acc", 0, 10, Const(0.5));
  Ingest();
  std::string out;
  ASSERT_EQ(testing::RunCommand(std::string(TW_CLI_BINARY) + " rules --config " + config + " --db " + Db() + " 2>&1",
                                &out),
            0)
      << out;
  EXPECT_NE(out.find("acc_best  [warning]  alert acc_best: tag 'val/acc' in runs '*': new best (max)\n"
                     "    alert: tag 'val/acc' in runs '*': new best (max); from " + config + ":3\n"
                     "    watches 1 series in this store now\n"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("    alert: tag 'val/acx' in runs '*': above 1; from " + config + ":7\n"
                     "    watches no series in this store now"),
            std::string::npos)
      << out;
}

}  // namespace
}  // namespace tw
