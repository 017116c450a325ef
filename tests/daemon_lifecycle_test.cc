// Issue 18's "done when" for run events, with the real daemon: beside a logdir where a W&B run
// exits 0, a PyTorch-style run writes SessionLog STOP, and a run's process (a real child whose
// pid is in its event file's name) is killed, it sends exactly one run.finished, one
// run.finished and one run.crashed, each with its summary, to a webhook and to Slack, across
// a kill -9 of the daemon: Slack's sent before the kill are not sent again, the webhook's
// (its receiver down until then) go after the restart, and nothing is judged twice.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <map>
#include <thread>

#include "base/clock.h"
#include "support/daemon_process.h"
#include "support/event_writer.h"
#include "support/http_server.h"
#include "support/store_dump.h"
#include "support/test_env.h"
#include "wandb/testing/log_writer.h"

namespace tw {
namespace {

using namespace std::chrono_literals;
using testing::ChildProcess;
using testing::DaemonProcess;
using testing::EventFileName;
using testing::EventFileWriter;
using testing::QueryInt;
using testing::TempDir;
using testing::WaitFor;

double Loss(int64_t s) { return 0.3 + 2.0 * std::pow(1 + s / 50.0, -0.7); }

using testing::ThisHost;

// A PyTorch-style run of `steps` steps of train/loss ending `ago` seconds ago.
void WriteRun(const std::string& path, int64_t steps, double end_wall, const std::vector<std::string>& first,
              const std::vector<std::string>& last) {
  const double t0 = end_wall - steps * 0.1;
  EventFileWriter w(path);
  w.Add(testing::FileVersionEvent(t0));
  for (const auto& e : first) w.Add(e);
  for (int64_t s = 0; s < steps; ++s) {
    w.Add(testing::SimpleScalarEvent("train/loss", s, t0 + s * 0.1, static_cast<float>(Loss(s))));
    if (s % 50 == 49) w.Add(testing::SimpleScalarEvent("val/loss", s, t0 + s * 0.1, static_cast<float>(Loss(s) + 0.1)));
  }
  for (const auto& e : last) w.Add(e);
  w.Flush();
}

// A W&B run (Python SDK style) of 300 rows that exits 0.
void WriteWandbRun(const std::string& path, double end_wall) {
  using namespace tw::testing;
  WandbLogWriter w;
  int64_t num = 0;
  const double t0 = end_wall - 30;
  WandbRunInfo info;
  info.run_id = "lc0wb001";
  info.project = "lifecycle";
  info.start_time = t0;
  w.Add(WandbRunRecord(++num, info));
  for (int64_t s = 0; s < 300; ++s)
    w.Add(WandbPythonRow(++num, s, t0 + s * 0.1, {Flat("train/loss", std::to_string(Loss(s)))}));
  w.Add(WandbExitRecord(++num, 0, 30));
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  WriteFile(path, w.bytes());
}

std::vector<std::string> Args(const TempDir& dir, const std::string& hook, const std::string& slack) {
  const std::string config = dir / "trainwatch.toml";
  testing::WriteFile(config,
                     "[lifecycle]\ncheck_seconds = 1\n"
                     "[[notify.channel]]\nname = \"hook\"\ntype = \"webhook\"\nurl = \"" + hook + "\"\n"
                     "rules = [\"non_finite_loss\"]\n"  // findings of these healthy runs stay out of the counts
                     "[[notify.channel]]\nname = \"slack\"\ntype = \"slack\"\nurl = \"" + slack + "\"\n"
                     "rules = [\"non_finite_loss\"]\ngroup_wait_seconds = 0\n");
  std::filesystem::permissions(config, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  return {"--config", config, "--logdir", dir / "logs", "--db", dir / "tw.db", "--rescan-interval", "0.5"};
}

// The W&B run's name is its directory's path: "wandb" for short.
std::string Short(const std::string& run) { return run.find("lc0wb001") != std::string::npos ? "wandb" : run; }

// run name -> event type, of the requests a receiver accepted (after `from`).
std::multimap<std::string, std::string> Events(const std::vector<testing::RecordedRequest>& reqs, size_t from,
                                               bool slack) {
  std::multimap<std::string, std::string> out;
  for (size_t i = from; i < reqs.size(); ++i) {
    boost::json::value body = boost::json::parse(reqs[i].body);
    if (slack) {
      const std::string text(body.at("text").as_string());
      const std::string kind = text.starts_with("Run finished: ") ? "run.finished"
                               : text.starts_with("Run crashed: ") ? "run.crashed" : text;
      const size_t at = text.find(": ") + 2;
      out.emplace(Short(text.substr(at, text.find(' ', at) - at)), kind);
    } else {
      out.emplace(Short(std::string(body.at("run").at("name").as_string())), std::string(body.at("type").as_string()));
    }
  }
  return out;
}

TEST(DaemonLifecycle, FinishedFinishedAndCrashedGoOnceToWebhookAndSlackAcrossAKillNine) {
  TempDir dir;
  testing::HttpServer hook, slack;
  hook.SetDefault({503, "down"});  // the webhook's receiver is down until after the kill -9
  const double now = UnixNow();
  WriteWandbRun(dir / "logs/wandb/run-20261127_000000-lc0wb001/run-lc0wb001.wandb", now - 5);
  WriteRun(dir / "logs/pt/" + EventFileName(static_cast<int64_t>(now) - 60, "gpu-node-7", 4242, 0), 300, now - 5, {},
           {testing::SessionLogEvent(299, now - 4, 2)});
  ChildProcess trainer({"/bin/sleep", "600"}, {});
  const std::string killed_file = dir / "logs/killed/" + EventFileName(static_cast<int64_t>(now) + 1, ThisHost(), trainer.pid(), 0);
  WriteRun(killed_file, 200, now - 1, {testing::HParamsStartEvent(now - 30, {{"max_steps", 1000.0}}, false)}, {});
  const std::string db = dir / "tw.db";
  pid_t trainer_pid = trainer.pid();
  auto ends = [&](const std::string& kind) {
    return QueryInt(db, "SELECT count(*) FROM run_lifecycle WHERE kind = '" + kind + "'");
  };
  {
    DaemonProcess d(Args(dir, hook.url("/hook"), slack.url("/services/T0/B0/XYZ")), dir / "first.log");
    ASSERT_TRUE(WaitFor([&] { return ends("finished") == 2; }, 20s)) << d.Log();
    // The trainer still runs: its run has not ended, however often it is looked at.
    std::this_thread::sleep_for(2500ms);
    EXPECT_EQ(ends("crashed"), 0) << d.Log();
    trainer_pid = trainer.pid();
    trainer.KillAndReap();
    ASSERT_TRUE(WaitFor([&] { return ends("crashed") == 1; }, 15s)) << d.Log();
    // Slack took all three; the webhook refused them (503): they wait for it.
    ASSERT_TRUE(WaitFor([&] { return QueryInt(db, "SELECT count(*) FROM outbox WHERE channel = 'slack' "
                                                  "AND state = 'sent'") == 3; }, 15s)) << d.Log();
    EXPECT_EQ(QueryInt(db, "SELECT count(*) FROM outbox WHERE channel = 'hook' AND state = 'pending'"), 3);
    d.KillAndReap();  // kill -9
  }
  std::this_thread::sleep_for(300ms);
  const size_t slack_before = slack.requests().size(), hook_before = hook.requests().size();
  EXPECT_EQ(slack_before, 3u);
  hook.SetDefault({200, "ok"});
  DaemonProcess d(Args(dir, hook.url("/hook"), slack.url("/services/T0/B0/XYZ")), dir / "second.log");
  ASSERT_TRUE(WaitFor([&] { return QueryInt(db, "SELECT count(*) FROM outbox WHERE state = 'sent'") == 6; }, 30s))
      << d.Log();
  std::this_thread::sleep_for(3s);  // a few more checks of the runs: nothing new
  EXPECT_EQ(QueryInt(db, "SELECT count(*) FROM outbox"), 6);
  EXPECT_EQ(ends("finished"), 2);
  EXPECT_EQ(ends("crashed"), 1);
  EXPECT_EQ(slack.requests().size(), slack_before) << "Slack was sent a message again after the restart";

  const std::multimap<std::string, std::string> want = {
      {"killed", "run.crashed"}, {"pt", "run.finished"}, {"wandb", "run.finished"}};
  EXPECT_EQ(Events(slack.requests(), 0, true), want);
  const auto hooked = hook.requests();
  EXPECT_EQ(Events(hooked, hook_before, false), want);
  // Each with its summary: steps, the training loss, how it ended, the checkpoint to keep.
  for (size_t i = hook_before; i < hooked.size(); ++i) {
    boost::json::value body = boost::json::parse(hooked[i].body);
    const auto& run = body.at("run");
    const std::string name = Short(std::string(run.at("name").as_string())), how(run.at("how").as_string());
    EXPECT_EQ(body.at("version").as_int64(), 1);
    EXPECT_TRUE(run.at("summary").at("train_loss").at("final").is_number()) << hooked[i].body;
    EXPECT_NE(std::string(run.at("message").as_string()).find("Training loss"), std::string::npos);
    EXPECT_FALSE(std::string(hooked[i].headers.at("webhook-id")).empty());
    if (name == "killed") {
      EXPECT_NE(how.find("pid " + std::to_string(trainer_pid)), std::string::npos) << how;
      EXPECT_EQ(run.at("summary").at("last_step").as_int64(), 199);
    } else if (name == "pt") {
      EXPECT_EQ(how, "TensorBoard SessionLog STOP");
      EXPECT_EQ(run.at("summary").at("best_val").at("step").as_int64(), 299) << hooked[i].body;
    } else {
      EXPECT_EQ(how, "W&B exit record, code 0");
      EXPECT_EQ(run.at("summary").at("exit_code").as_int64(), 0);
    }
  }
  for (const auto& r : slack.requests())
    EXPECT_NE(r.body.find("\"type\":\"header\""), std::string::npos) << r.body;
  d.Signal(SIGTERM);
  ASSERT_TRUE(d.Wait(10s).has_value()) << d.Log();
}

}  // namespace
}  // namespace tw
