// Run events on the notification side: routing by a channel's `events` (finished and crashed by
// default, started and resumed opt-in, none for PagerDuty; min_severity and rules do not
// apply), the webhook payload's `run` object and its round trip through the outbox, Slack's
// rendering, the outbox's once-only key and silences, and `events` checked at file:line.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <filesystem>

#include "app/config.h"
#include "notify/channel.h"
#include "notify/outbox.h"
#include "notify/render.h"
#include "store/store.h"
#include "support/store_dump.h"
#include "support/test_env.h"

namespace tw {
namespace {

using notify::ChannelConfig;
using notify::Notification;

Notification RunEvent(const std::string& event) {
  Notification n;
  n.event = event;
  n.rule = event;
  n.run = "exp/bert-1";
  n.state = event.substr(4);
  n.severity = event == "run.crashed" ? "critical" : "info";
  n.title = event == "run.crashed" ? "Run crashed" : "Run finished";
  n.message = "exp/bert-1 finished after 2 h 13 min, steps 0–12,000.";
  n.cause = "TensorBoard SessionLog STOP";
  n.fix = "Keep the checkpoint of step 9,000 (best val/loss, 0.3052).";
  n.evidence = R"j({"duration":"2 h 13 min","checkpoint to keep":"step 9,000 (val/loss 0.3052)"})j";
  n.run_summary = R"({"last_step":12000,"best_val":{"step":9000}})";
  n.run_event_id = 7;
  n.last_step = 12000;
  n.time = 1764230000.25;
  n.sparkline = "█▆▅▄▃▂▁";
  return n;
}

TEST(RunEventsNotify, RoutedByEventsNotBySeverityOrRules) {
  ChannelConfig slack = ChannelConfig::Defaults("s", "slack");
  slack.min_severity = diagnose::Severity::kCritical;
  slack.rules = {"non_finite_loss"};
  EXPECT_TRUE(notify::Routes(slack, RunEvent("run.finished")));
  EXPECT_TRUE(notify::Routes(slack, RunEvent("run.crashed")));
  EXPECT_FALSE(notify::Routes(slack, RunEvent("run.started")));
  EXPECT_FALSE(notify::Routes(slack, RunEvent("run.resumed")));
  slack.events = {"run.started"};
  EXPECT_TRUE(notify::Routes(slack, RunEvent("run.started")));
  EXPECT_FALSE(notify::Routes(slack, RunEvent("run.finished")));
  slack.events = {"run.finished"};
  slack.runs = {"other/*"};
  EXPECT_FALSE(notify::Routes(slack, RunEvent("run.finished")));  // runs still applies
  EXPECT_FALSE(notify::Routes(ChannelConfig::Defaults("p", "pagerduty"), RunEvent("run.crashed")));
  EXPECT_TRUE(notify::Routes(ChannelConfig::Defaults("w", "webhook"), RunEvent("run.crashed")));
  EXPECT_TRUE(notify::Routes(ChannelConfig::Defaults("e", "email"), RunEvent("run.finished")));
}

TEST(RunEventsNotify, PayloadCarriesTheRunAndRoundTrips) {
  const Notification n = RunEvent("run.finished");
  const std::string payload = notify::ToPayload(n);
  boost::json::value v = boost::json::parse(payload);
  EXPECT_EQ(v.at("version").as_int64(), 1);
  EXPECT_EQ(v.at("type").as_string(), "run.finished");
  EXPECT_FALSE(v.as_object().contains("finding"));
  const auto& run = v.at("run");
  EXPECT_EQ(run.at("name").as_string(), "exp/bert-1");
  EXPECT_EQ(run.at("how").as_string(), "TensorBoard SessionLog STOP");
  EXPECT_EQ(run.at("summary").at("best_val").at("step").as_int64(), 9000);
  EXPECT_EQ(run.at("fields").at("duration").as_string(), "2 h 13 min");
  Result<Notification> back = notify::FromPayload(payload);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->event, "run.finished");
  EXPECT_EQ(back->run, n.run);
  EXPECT_EQ(back->message, n.message);
  EXPECT_EQ(back->cause, n.cause);
  EXPECT_EQ(back->fix, n.fix);
  EXPECT_EQ(back->run_event_id, 7);
  EXPECT_EQ(back->last_step, 12000);
  EXPECT_EQ(notify::ToPayload(*back), payload);  // what a resend renders is what was queued
}

TEST(RunEventsNotify, SlackSaysWhatHappenedToWhichRun) {
  const std::string body = notify::SlackMessage(RunEvent("run.finished"), "");
  boost::json::value v = boost::json::parse(body);
  const auto& blocks = v.at("blocks").as_array();
  EXPECT_EQ(blocks.at(0).at("text").at("text").as_string(), "🏁 Run finished: exp/bert-1");
  EXPECT_NE(body.find("*How it ended*\\nTensorBoard SessionLog STOP"), std::string::npos) << body;
  EXPECT_NE(body.find("*What to keep*\\nKeep the checkpoint of step 9,000"), std::string::npos) << body;
  EXPECT_NE(body.find("*checkpoint to keep*\\nstep 9,000"), std::string::npos) << body;
  EXPECT_EQ(std::string(v.at("text").as_string()).rfind("Run finished: exp/bert-1 finished after", 0), 0u);
  const std::string crash = notify::SlackMessage(RunEvent("run.crashed"), "");
  EXPECT_NE(crash.find("💥 Run crashed: exp/bert-1"), std::string::npos);
  EXPECT_EQ(notify::ConsoleLine(RunEvent("run.finished")).rfind("notify: run.finished: exp/bert-1 finished", 0), 0u);
  // Links: a template over the run works; [web] base_url's finding page does not exist for it.
  EXPECT_EQ(notify::ExpandLinkTemplate("http://tb:6006/#scalars&regexInput={run}", RunEvent("run.finished")),
            "http://tb:6006/#scalars&regexInput=exp%2Fbert-1");
  EXPECT_EQ(notify::ExpandLinkTemplate("https://tw.example.org/findings/{finding_id}", RunEvent("run.finished")), "");
}

// QueueRunEvent: once per channel under a stable key; a silence of the run, or of the event as
// its rule, queues nothing; old history (announced = 0) neither.
TEST(RunEventsNotify, QueuedOnceSilencedAndHistoryKeptQuiet) {
  testing::TempDir dir;
  Result<std::unique_ptr<store::Store>> store = store::Store::Open(dir / "t.db");
  ASSERT_TRUE(store.ok());
  store::Db& db = (*store)->db();
  ASSERT_TRUE(db.Exec("INSERT INTO runs(run_id, root, name, first_seen) VALUES (1, '/r', 'exp/bert-1', 0), "
                      "(2, '/r', 'exp/old', 0);"
                      "INSERT INTO run_lifecycle(event_id, run_id, kind, cause_key, time, last_wall, last_step, how, "
                      "announced, title, message) VALUES "
                      "(1, 1, 'finished', 'end:0', 100, 99, 12000, 'TensorBoard SessionLog STOP', 1, 'Run finished', 'm'), "
                      "(2, 2, 'finished', 'end:0', 100, 1, 5, 'W&B exit record, code 0', 0, 'Run finished', 'm'), "
                      "(3, 1, 'crashed', 'end:1', 200, 199, 13000, 'W&B exit record, code 1', 1, 'Run crashed', 'm')")
                  .ok());
  const std::vector<ChannelConfig> channels = {ChannelConfig::Defaults("hook", "webhook"),
                                               ChannelConfig::Defaults("slack", "slack"),
                                               ChannelConfig::Defaults("pd", "pagerduty")};
  Result<int> q = notify::QueueRunEvent(db, channels, 1, 150);
  ASSERT_TRUE(q.ok()) << q.status().message();
  EXPECT_EQ(*q, 2);  // not PagerDuty
  EXPECT_EQ(*notify::QueueRunEvent(db, channels, 1, 151), 0);  // the same keys: once
  EXPECT_EQ(testing::QueryInt(dir / "t.db", "SELECT count(*) FROM outbox WHERE idempotency_key = 'tw-run-1-hook'"), 1);
  EXPECT_EQ(*notify::QueueRunEvent(db, channels, 2, 150), 0);  // history: recorded, not announced
  ASSERT_TRUE(db.Exec("INSERT INTO silences(run_glob, rule, created, expires) VALUES ('exp/*', 'run.crashed', 0, 1e12)").ok());
  EXPECT_EQ(*notify::QueueRunEvent(db, channels, 3, 250), 0);
  Result<store::Stmt> payload = db.Prepare("SELECT payload FROM outbox WHERE channel = 'hook'");
  ASSERT_TRUE(payload.ok() && *payload->Step());
  Result<Notification> n = notify::FromPayload(payload->Text(0));
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(n->event, "run.finished");
  EXPECT_EQ(n->run, "exp/bert-1");
  EXPECT_EQ(n->cause, "TensorBoard SessionLog STOP");
}

TEST(RunEventsNotify, EventsAndLifecycleAreCheckedAtTheirLine) {
  testing::TempDir dir;
  const std::string path = dir / "tw.toml";
  testing::WriteFile(path, "[[notify.channel]]\nname = \"c\"\ntype = \"console\"\nevents = [\"run.finish\"]\n");
  Result<app::Config> bad = app::LoadConfigFile(path);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), path + ":4: channel 'c': unknown event 'run.finish' in events (expected some of: "
                                            "run.started, run.resumed, run.finished, run.crashed)");
  testing::WriteFile(path, "[lifecycle]\nquiet_seconds = 1\n");
  bad = app::LoadConfigFile(path);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find(path + ":2:"), std::string::npos) << bad.status().message();
  EXPECT_NE(bad.status().message().find("[lifecycle] quiet_seconds must be between 10"), std::string::npos);
  testing::WriteFile(path, "[lifecycle]\nquiet_seconds = 60\ncheck_seconds = 5\nwriter_pids = false\n"
                           "[[notify.channel]]\nname = \"c\"\ntype = \"console\"\nevents = [\"run.started\"]\n");
  Result<app::Config> good = app::LoadConfigFile(path);
  ASSERT_TRUE(good.ok()) << good.status().message();
  EXPECT_EQ(good->lifecycle.quiet_seconds, 60);
  EXPECT_EQ(good->lifecycle.check_seconds, 5);
  EXPECT_FALSE(good->lifecycle.writer_pids);
  EXPECT_EQ(good->channels.at(0).events, std::vector<std::string>{"run.started"});
}

}  // namespace
}  // namespace tw
