// Run lifecycle detection (diagnose/lifecycle.h) on real files: end markers (SessionLog STOP,
// the HF end summary, W&B exit records of the corpus), a planned end reached then quiet, a last
// loss that is NaN, and a writer process gone, judged with the real host (child processes
// started and killed here) as well as a fake one. And each false "crash" we could think of: a
// run on another host, a writer alive but quiet, a pid reused by a later process, a run that
// simply finished its plan.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <map>

#include "base/clock.h"
#include "base/writer_process.h"
#include "diagnose/findings.h"
#include "diagnose/lifecycle.h"
#include "support/daemon_process.h"
#include "support/diagnose_fixture.h"

namespace tw {
namespace {

using diagnose::LifecycleOptions;
using diagnose::RunEvent;
using testing::ChildProcess;
using testing::EventFileName;
using testing::EventFileWriter;
using testing::SimpleScalarEvent;

double Loss(int64_t s) { return 0.3 + 2.0 * std::pow(1 + s / 50.0, -0.7); }

using testing::ThisHost;

class Lifecycle : public testing::DiagnoseFixture {
 protected:
  // A PyTorch-style run: `steps` steps of "loss" from wall time `t0`, in a file named for
  // (created, host, pid), after `first` (hparams) and before `last` events (a STOP).
  void Write(const std::string& run, int64_t steps, double t0, int64_t created, const std::string& host, int pid,
             const std::vector<std::string>& first = {}, const std::vector<std::string>& last = {},
             bool nan_end = false) {
    EventFileWriter w(Root() + "/" + run + "/" + EventFileName(created, host, pid, 0));
    w.Add(testing::FileVersionEvent(t0));
    for (const auto& e : first) w.Add(e);
    for (int64_t s = 0; s < steps; ++s) {
      const bool nan = nan_end && s >= steps - 5;
      w.Add(SimpleScalarEvent("loss", s, t0 + s * 0.5, static_cast<float>(nan ? NAN : Loss(s))));
      // Validation: best at step 250, worse after (overfitting): the checkpoint to keep is 250's.
      const double val = s <= 250 ? Loss(s) + 0.05 : Loss(250) + 0.05 + 0.02 * static_cast<double>(s - 250) / 50;
      if (s % 50 == 0) w.Add(SimpleScalarEvent("val/loss", s, t0 + s * 0.5, static_cast<float>(val)));
    }
    for (const auto& e : last) w.Add(e);
    w.Flush();
  }

  // Ingests, maps the roles (one evaluation), and returns the events the runs show at `now`,
  // by run name and kind ("finished", ...), the starts left out unless `starts`.
  std::map<std::string, RunEvent> Detect(double now, LifecycleOptions o, bool starts = false) {
    Ingest();
    Result<std::unique_ptr<diagnose::Engine>> engine = diagnose::Engine::Open(Db(), {});
    EXPECT_TRUE(engine.ok());
    if (!engine.ok()) return {};
    EXPECT_TRUE((*engine)->Evaluate(nullptr, now).ok());
    std::vector<int64_t> runs;
    Result<store::Stmt> q = (*engine)->db().Prepare("SELECT run_id FROM runs");
    EXPECT_TRUE(q.ok() && q->EachRow([&] { runs.push_back(q->Int(0)); }).ok());
    Result<std::vector<RunEvent>> found = diagnose::DetectRunEvents((*engine)->db(), runs, now, o);
    EXPECT_TRUE(found.ok()) << found.status().message();
    std::map<std::string, RunEvent> out;
    if (!found.ok()) return out;
    for (const RunEvent& e : *found)
      if (starts || (e.kind != "started" && e.kind != "resumed")) out[e.run] = e;
    return out;
  }
  void CopyTree(const std::string& from, const std::string& as) {
    std::filesystem::create_directories(Root());
    std::filesystem::copy(from, Root() + "/" + as, std::filesystem::copy_options::recursive);
  }
  static LifecycleOptions Fake(WriterState state) {
    LifecycleOptions o;
    o.probe = [state](const WriterId&) { return state; };
    return o;
  }
};

// The end markers and the plan, each alone; writers unknown (as for runs from another host).
TEST_F(Lifecycle, EndsFromMarkersAndPlans) {
  const double t0 = 1.7e9, last = t0 + 399 * 0.5;
  auto hp = [&](double steps) { return testing::HParamsStartEvent(t0, {{"max_steps", steps}}, false); };
  Write("stopped", 400, t0, 1700000000, "h", 1, {}, {testing::SessionLogEvent(399, last + 1, 2)});
  Write("planned_done", 400, t0, 1700000000, "h", 1, {hp(400.0)});
  Write("planned_short", 400, t0, 1700000000, "h", 1, {hp(1000.0)});
  Write("nan_end", 400, t0, 1700000000, "h", 1, {}, {}, /*nan_end=*/true);
  Write("plain", 400, t0, 1700000000, "h", 1);
  {
    EventFileWriter w(Root() + "/hf/" + EventFileName(1700000000, "h", 1, 0));
    w.Add(testing::FileVersionEvent(t0));
    for (int64_t s = 0; s < 400; ++s) w.Add(SimpleScalarEvent("train/loss", s, t0 + s * 0.5, static_cast<float>(Loss(s))));
    w.Add(SimpleScalarEvent("train/train_runtime", 400, last + 1, 200.0f));
    w.Flush();
  }
  // Ten minutes of quiet later: the planned run has ended; a run short of its plan has not (its
  // writer might be busy: an evaluation, a checkpoint); a plain run says nothing either way.
  std::map<std::string, RunEvent> ev = Detect(last + 3600, Fake(WriterState::kUnknown));
  ASSERT_EQ(ev.count("stopped"), 1u);
  EXPECT_EQ(ev["stopped"].kind, "finished");
  EXPECT_EQ(ev["stopped"].how, "TensorBoard SessionLog STOP");
  ASSERT_EQ(ev.count("hf"), 1u);
  EXPECT_EQ(ev["hf"].kind, "finished");
  EXPECT_NE(ev["hf"].how.find("train_runtime"), std::string::npos);
  ASSERT_EQ(ev.count("planned_done"), 1u);
  EXPECT_EQ(ev["planned_done"].kind, "finished");
  EXPECT_NE(ev["planned_done"].how.find("step 399 of a planned 400"), std::string::npos) << ev["planned_done"].how;
  ASSERT_EQ(ev.count("nan_end"), 1u);
  EXPECT_EQ(ev["nan_end"].kind, "crashed");
  EXPECT_NE(ev["nan_end"].how.find("was NaN"), std::string::npos) << ev["nan_end"].how;
  EXPECT_EQ(ev.count("planned_short"), 0u);
  EXPECT_EQ(ev.count("plain"), 0u);
  // Still writing (a minute after its last point): nothing has ended but what says so.
  ev = Detect(last + 60, Fake(WriterState::kUnknown));
  EXPECT_EQ(ev.count("planned_done"), 0u);
  EXPECT_EQ(ev.count("nan_end"), 0u);
  EXPECT_EQ(ev.count("stopped"), 1u);

  // The summary: duration, steps, losses, the checkpoint to keep, the verdict, how it ended.
  const RunEvent s = Detect(last + 3600, Fake(WriterState::kUnknown))["stopped"];
  EXPECT_EQ(s.title, "Run finished");
  EXPECT_NE(s.message.find("stopped finished after 3 min, steps 0–399"), std::string::npos) << s.message;
  EXPECT_NE(s.message.find("Best val/loss: "), std::string::npos) << s.message;
  EXPECT_NE(s.message.find("at step 250"), std::string::npos) << s.message;  // val/loss is lowest there
  EXPECT_NE(s.advice.find("Keep the checkpoint of step 250"), std::string::npos) << s.advice;
  EXPECT_NE(s.summary.find("\"best_val\":{\"role\":\"val_loss\",\"tag\":\"val/loss\""), std::string::npos) << s.summary;
  EXPECT_NE(s.fields.find("\"how it ended\":\"TensorBoard SessionLog STOP\""), std::string::npos) << s.fields;
  EXPECT_FALSE(s.sparkline.empty());
}

// Writers judged by the real host: child processes stand for training processes.
TEST_F(Lifecycle, WriterGoneOnThisHostAndTheFalseCrashes) {
  const std::string here = ThisHost();
  const double now = UnixNow();
  const double t0 = now - 400 * 0.5 - 30;  // its last point 30 s ago: not quiet
  const int64_t created = static_cast<int64_t>(now) + 1;  // after the children below started
  auto hp = [&](double steps) { return testing::HParamsStartEvent(t0, {{"max_steps", steps}}, false); };
  ChildProcess alive({"/bin/sleep", "600"}, {}), killed({"/bin/sleep", "600"}, {}),
      done({"/bin/sleep", "600"}, {}), bare({"/bin/sleep", "600"}, {}), reused({"/bin/sleep", "600"}, {});
  Write("killed", 400, t0, created, here, killed.pid(), {hp(1000.0)});
  Write("done", 400, t0, created, here, done.pid(), {hp(400.0)});
  Write("bare", 400, t0, created, here, bare.pid());
  Write("alive", 400, t0, created, here, alive.pid(), {hp(1000.0)});
  // Another host's pid: a dead one here says nothing about it.
  Write("elsewhere", 400, t0, created, "not-" + here + "-at-all", killed.pid(), {hp(1000.0)});
  // A pid that runs now, but in a process started an hour after the file was created: reused.
  Write("reused", 400, t0, created - 3600, here, reused.pid(), {hp(1000.0)});
  const pid_t killed_pid = killed.pid();
  killed.KillAndReap();
  done.KillAndReap();
  bare.KillAndReap();
  LifecycleOptions o;
  o.probe = ProbeThisHost;
  std::map<std::string, RunEvent> ev = Detect(now, o);
  ASSERT_EQ(ev.count("killed"), 1u);
  EXPECT_EQ(ev["killed"].kind, "crashed");
  EXPECT_NE(ev["killed"].how.find("pid " + std::to_string(killed_pid)), std::string::npos) << ev["killed"].how;
  EXPECT_NE(ev["killed"].how.find("step 399 of a planned 1000"), std::string::npos) << ev["killed"].how;
  EXPECT_NE(ev["killed"].message.find("killed crashed at step 399"), std::string::npos) << ev["killed"].message;
  ASSERT_EQ(ev.count("done"), 1u);
  EXPECT_EQ(ev["done"].kind, "finished") << ev["done"].how;
  ASSERT_EQ(ev.count("bare"), 1u);
  EXPECT_EQ(ev["bare"].kind, "finished") << ev["bare"].how;  // PyTorch logs no end: an exit is the usual one
  EXPECT_NE(ev["bare"].how.find("no planned end"), std::string::npos) << ev["bare"].how;
  ASSERT_EQ(ev.count("reused"), 1u);
  EXPECT_EQ(ev["reused"].kind, "crashed") << ev["reused"].how;
  EXPECT_EQ(ev.count("alive"), 0u);
  EXPECT_EQ(ev.count("elsewhere"), 0u);
  // [lifecycle] writer_pids = false: no pid is judged (containers sharing the host's name).
  o.writer_pids = false;
  ev = Detect(now, o);
  EXPECT_TRUE(ev.empty()) << ev.begin()->first;
}

// Each event is recorded once: detected again, it is not recorded (nor its hook called) again;
// a run ended is not judged again until a new stretch of it (a new file) writes.
TEST_F(Lifecycle, RecordedOnceUntilTheRunWritesAgain) {
  const double t0 = 1.7e9, last = t0 + 399 * 0.5;
  Write("stopped", 400, t0, 1700000000, "h", 1, {}, {testing::SessionLogEvent(399, last + 1, 2)});
  Ingest();
  Result<std::unique_ptr<diagnose::Engine>> engine = diagnose::Engine::Open(Db(), {});
  ASSERT_TRUE(engine.ok());
  ASSERT_TRUE((*engine)->Evaluate(nullptr, last + 60).ok());
  Result<std::unique_ptr<diagnose::LifecycleTracker>> tracker = diagnose::LifecycleTracker::Open(Db());
  ASSERT_TRUE(tracker.ok());
  int hooked = 0;
  (*tracker)->SetHook([&](store::Db&, const RunEvent& e, double) {
    ++hooked;
    EXPECT_GT(e.event_id, 0);
    return Status::Ok();
  });
  LifecycleOptions o;
  for (int round = 0; round < 3; ++round) {
    Result<std::vector<RunEvent>> found = diagnose::DetectRunEvents((*engine)->db(), {1}, last + 60, o);
    ASSERT_TRUE(found.ok()) << found.status().message();
    Result<std::vector<RunEvent>> recorded = (*tracker)->Record(*found, last + 60);
    ASSERT_TRUE(recorded.ok()) << recorded.status().message();
    EXPECT_EQ(recorded->size(), round == 0 ? 2u : 0u) << round;  // started and finished, the first time only
    EXPECT_TRUE(round == 0 || found->empty()) << "detected again: " << found->front().kind;
  }
  EXPECT_EQ(hooked, 2);
  // Resumed by a new process: a new file, steps on from 400, and its own STOP: a second end.
  {
    EventFileWriter w(Root() + "/stopped/" + EventFileName(1700001000, "h", 2, 0));
    w.Add(testing::FileVersionEvent(last + 100));
    for (int64_t s = 400; s < 500; ++s) w.Add(SimpleScalarEvent("loss", s, last + 100 + s * 0.5, static_cast<float>(Loss(s))));
    w.Add(testing::SessionLogEvent(499, last + 400, 2));
    w.Flush();
  }
  Ingest();
  ASSERT_TRUE((*engine)->Evaluate(nullptr, last + 1000).ok());
  Result<std::vector<RunEvent>> found = diagnose::DetectRunEvents((*engine)->db(), {1}, last + 1000, o);
  ASSERT_TRUE(found.ok());
  ASSERT_EQ(found->size(), 1u);
  EXPECT_EQ(found->front().cause_key, "end:1");
  EXPECT_EQ(found->front().last_step, 499);
}

// A run that reached its planned 400 steps while its LR schedule (planned for 800) was still
// decaying: stale_run takes it for one that stopped mid-schedule until the run is recorded as
// finished; then the rule skips it, and the finished run's summary says the finding resolves.
TEST_F(Lifecycle, StaleRunSkipsARunRecordedAsFinished) {
  const double t0 = 1.7e9, last = t0 + 399 * 0.5, now = last + 3600;
  {
    EventFileWriter w(Root() + "/planned/" + EventFileName(1700000000, "h", 1, 0));
    w.Add(testing::FileVersionEvent(t0));
    w.Add(testing::HParamsStartEvent(t0, {{"max_steps", 400.0}}, false));
    for (int64_t s = 0; s < 400; ++s) {
      w.Add(SimpleScalarEvent("loss", s, t0 + s * 0.5, static_cast<float>(Loss(s))));
      if (s % 10 == 0)
        w.Add(SimpleScalarEvent("lr", s, t0 + s * 0.5, static_cast<float>(1e-3 * (0.5 + 0.5 * std::cos(M_PI * s / 800.0)))));
    }
    w.Flush();
  }
  Ingest();
  Result<std::unique_ptr<diagnose::Engine>> engine = diagnose::Engine::Open(Db(), {});
  ASSERT_TRUE(engine.ok());
  Result<diagnose::Evaluation> before = (*engine)->Evaluate(nullptr, now);
  ASSERT_TRUE(before.ok());
  ASSERT_EQ(Of(*before, "stale_run", "planned").size(), 1u) << "the premise: stale_run fires on it";
  Result<std::unique_ptr<diagnose::FindingTracker>> findings = diagnose::FindingTracker::Open(Db());
  ASSERT_TRUE(findings.ok());
  ASSERT_TRUE((*findings)->Apply(*before, now).ok());
  Result<std::vector<RunEvent>> found = diagnose::DetectRunEvents((*engine)->db(), {1}, now, LifecycleOptions{});
  ASSERT_TRUE(found.ok()) << found.status().message();
  ASSERT_EQ(found->size(), 2u);
  const RunEvent& end = found->back();
  EXPECT_EQ(end.kind, "finished");
  EXPECT_NE(end.how.find("planned end (step 399 of a planned 400)"), std::string::npos) << end.how;
  EXPECT_NE(end.advice.find("Resolving, the run having finished: stale_run (warning)"), std::string::npos) << end.advice;
  Result<std::unique_ptr<diagnose::LifecycleTracker>> tracker = diagnose::LifecycleTracker::Open(Db());
  ASSERT_TRUE(tracker.ok());
  ASSERT_TRUE((*tracker)->Record(*found, now).ok());
  Result<diagnose::Evaluation> after = (*engine)->Evaluate(nullptr, now + 60);
  ASSERT_TRUE(after.ok());
  EXPECT_TRUE(Of(*after, "stale_run", "planned").empty());
}

// Real W&B runs of the corpus: exit records with code 0 finish a run, others crash it (a run
// killed: 255; LLaMA-Factory's exit 1 despite its HF end summary); a run whose loss turned NaN
// and exited 0 finished, its verdict kill.
TEST_F(Lifecycle, RealWandbRunsEndByTheirExitRecords) {
  const std::string corpus = testing::CorpusDir();
  if (corpus.empty()) GTEST_SKIP() << "no ../shared/corpus";
  CopyTree(corpus + "/wandb-core-0.21", "core");
  CopyTree(corpus + "/wandb-0.17-python-hf-trainer", "hf");
  std::map<std::string, RunEvent> ev = Detect(UnixNow(), Fake(WriterState::kUnknown));
  auto find = [&](const std::string& id) -> const RunEvent* {
    for (const auto& [run, e] : ev)
      if (run.find(id) != std::string::npos) return &e;
    return nullptr;
  };
  const RunEvent* fine = find("8atu6kfy");
  ASSERT_NE(fine, nullptr);
  EXPECT_EQ(fine->kind, "finished");
  EXPECT_EQ(fine->how, "W&B exit record, code 0");
  EXPECT_NE(fine->message.find("steps 0–19,990"), std::string::npos) << fine->message;
  EXPECT_NE(fine->message.find("Best val/loss"), std::string::npos) << fine->message;
  const RunEvent* nan = find("ugaeu18w");
  ASSERT_NE(nan, nullptr);
  EXPECT_EQ(nan->kind, "finished");
  EXPECT_NE(nan->message.find("Training loss NaN at the end"), std::string::npos) << nan->message;
  const RunEvent* dpo = find("qnolswhj");
  ASSERT_NE(dpo, nullptr);
  EXPECT_EQ(dpo->kind, "crashed");
  EXPECT_EQ(dpo->how, "W&B exit record, code 1");
  bool killed = false;
  for (const auto& [run, e] : ev) killed |= e.how == "W&B exit record, code 255";
  EXPECT_TRUE(killed) << "the resumed xinacahi segment killed (exit 255)";
  // Years old: recorded, not announced.
  EXPECT_FALSE(fine->announce);
}

}  // namespace
}  // namespace tw
