// [[alert]]s in the real daemon process (docs/alerts.md): an alert reaches a loopback webhook
// exactly once across a kill -9 and a restart; a new_best alert sends once per new best, and
// nothing while a silence covers it.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "support/daemon_process.h"
#include "support/event_writer.h"
#include "support/http_server.h"
#include "support/store_dump.h"
#include "support/test_env.h"

namespace tw {
namespace {

using namespace std::chrono_literals;
using testing::DaemonProcess;
using testing::EventFileWriter;
using testing::QueryInt;
using testing::TempDir;
using testing::WaitFor;

constexpr double kWall0 = 1.7e9;

void Append(EventFileWriter& w, const std::string& tag, int64_t from, int64_t to,
            const std::function<double(int64_t)>& f) {
  for (int64_t s = from; s < to; ++s)
    w.Add(testing::SimpleScalarEvent(tag, s, kWall0 + s, static_cast<float>(f(s))));
  w.Flush();
}

// A webhook channel and `alerts`, from a config file (mode 600: it holds the URL).
std::vector<std::string> Args(const TempDir& dir, const std::string& url, const std::string& alerts) {
  const std::string config = dir / "trainwatch.toml";
  testing::WriteFile(config, "[[notify.channel]]\nname = \"hook\"\ntype = \"webhook\"\nurl = \"" + url + "\"\n\n" + alerts);
  std::filesystem::permissions(config, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  return {"--config", config, "--logdir", dir / "logs", "--db", dir / "tw.db", "--rescan-interval", "1"};
}

// The requests whose body holds `needle` (and `also`, when given).
size_t Count(const std::vector<testing::RecordedRequest>& reqs, const std::string& needle, const std::string& also = "") {
  size_t n = 0;
  for (const auto& r : reqs)
    n += r.body.find(needle) != std::string::npos && r.body.find(also) != std::string::npos;
  return n;
}

TEST(DaemonAlert, AnAlertReachesAWebhookExactlyOnceAcrossAKillNineAndARestart) {
  TempDir dir;
  const std::string db = dir / "tw.db";
  testing::HttpServer hook;
  hook.SetDefault({500, "down"});
  const std::vector<std::string> args =
      Args(dir, hook.url("/hook"), "[[alert]]\nname = \"acc_high\"\ntag = \"probe/temperature\"\nabove = 0.9\n");
  EventFileWriter run(dir / "logs/exp1/" + testing::EventFileName(1700000000, "h", 1, 0));
  run.Add(testing::FileVersionEvent(kWall0));
  // (A tag no role takes: no built-in rule reads it, so what the hook gets is the alert's.)
  Append(run, "probe/temperature", 0, 50, [](int64_t) { return 0.5; });
  {
    DaemonProcess d(args, dir / "first.log");
    ASSERT_TRUE(WaitFor([&] { return QueryInt(db, "SELECT count(*) FROM scalars") == 50; }, 15s)) << d.Log();
    Append(run, "probe/temperature", 50, 60, [](int64_t) { return 0.95; });
    ASSERT_TRUE(hook.WaitForRequests(1, 20)) << d.Log();  // tried, refused with a 500
    d.KillAndReap();
  }
  EXPECT_EQ(QueryInt(db, "SELECT count(*) FROM outbox WHERE state = 'pending' AND event = 'finding.firing'"), 1);
  hook.SetDefault({200, "ok"});
  std::this_thread::sleep_for(300ms);  // a request the killed daemon had sent is recorded by now
  const size_t before = hook.requests().size();
  DaemonProcess d(args, dir / "second.log");
  ASSERT_TRUE(WaitFor([&] { return QueryInt(db, "SELECT count(*) FROM outbox WHERE state = 'sent'") == 1; }, 20s))
      << d.Log();
  Append(run, "probe/temperature", 60, 80, [](int64_t) { return 0.97; });  // still above: no second message
  ASSERT_TRUE(WaitFor([&] { return QueryInt(db, "SELECT last_step FROM findings WHERE rule = 'acc_high'") == 79; }, 15s))
      << d.Log();
  std::this_thread::sleep_for(1500ms);
  const std::vector<testing::RecordedRequest> reqs = hook.requests();
  ASSERT_EQ(reqs.size(), before + 1) << d.Log();
  EXPECT_NE(reqs.back().body.find("\"finding.firing\""), std::string::npos) << reqs.back().body;
  EXPECT_NE(reqs.back().body.find("acc_high"), std::string::npos) << reqs.back().body;
  EXPECT_NE(reqs.back().body.find("probe/temperature is 0.95 at step 59, above 0.9 since step 50"), std::string::npos)
      << reqs.back().body;
  EXPECT_EQ(QueryInt(db, "SELECT count(*) FROM outbox"), 1);
  EXPECT_EQ(QueryInt(db, "SELECT count(*) FROM findings WHERE rule = 'acc_high'"), 1);
}

TEST(DaemonAlert, NewBestSendsOncePerNewBestAndNothingUnderASilence) {
  TempDir dir;
  const std::string db = dir / "tw.db";
  testing::HttpServer hook;
  const std::vector<std::string> args = Args(
      dir, hook.url("/hook"), "[[alert]]\nname = \"acc_best\"\ntag = \"probe/temperature\"\nnew_best = \"max\"\nseverity = \"critical\"\n");
  EventFileWriter run(dir / "logs/exp1/" + testing::EventFileName(1700000000, "h", 1, 0));
  run.Add(testing::FileVersionEvent(kWall0));
  Append(run, "probe/temperature", 0, 10, [](int64_t s) { return 0.5 + 0.01 * s; });  // best: 0.59 at step 9
  DaemonProcess d(args, dir / "daemon.log");
  // (A tag no role takes: no built-in rule reads it, so what the hook gets is the alert's.)
  auto firings = [&] { return Count(hook.requests(), "\"finding.firing\"", "acc_best"); };
  ASSERT_TRUE(WaitFor([&] { return firings() == 1; }, 20s)) << d.Log();
  Append(run, "probe/temperature", 10, 20, [](int64_t) { return 0.3; });  // no new best
  ASSERT_TRUE(WaitFor([&] { return QueryInt(db, "SELECT last_step FROM findings WHERE rule = 'acc_best'") == 19; }, 15s))
      << d.Log();
  Append(run, "probe/temperature", 20, 21, [](int64_t) { return 0.7; });  // a new best
  ASSERT_TRUE(WaitFor([&] { return firings() == 2; }, 20s)) << d.Log();
  std::string out;
  ASSERT_EQ(testing::RunCommand(std::string(TW_CLI_BINARY) + " silence add --db " + db +
                                    " --run 'exp*' --rule acc_best --for 1h 2>&1", &out), 0) << out;
  Append(run, "probe/temperature", 21, 22, [](int64_t) { return 0.8; });  // a new best, silenced
  ASSERT_TRUE(WaitFor([&] { return QueryInt(db, "SELECT onset_step FROM findings WHERE rule = 'acc_best'") == 21; }, 15s))
      << d.Log();
  std::this_thread::sleep_for(1500ms);
  EXPECT_EQ(firings(), 2u) << d.Log();
  EXPECT_EQ(Count(hook.requests(), "\"finding.firing\""), 2u) << "something other than the alert fired";
  EXPECT_EQ(Count(hook.requests(), "\"finding.firing\"", "reached a new best (max) of 0.59 at step 9 "), 1u);
  EXPECT_EQ(Count(hook.requests(), "\"finding.firing\"", "reached a new best (max) of 0.7 at step 20"), 1u);
  EXPECT_EQ(Count(hook.requests(), "at step 21"), 0u) << "the silenced best, or its superseding, was sent";
}

// A tag that matches nothing is no reason to refuse a config (it may not be logged yet); one
// that matches nothing for [rules] alert_unmatched_hours is logged and shown by status, and an
// alert that matches is not.
TEST(DaemonAlert, AnAlertThatWatchesNothingIsReportedNotRefused) {
  TempDir dir;
  const std::string db = dir / "tw.db";
  testing::HttpServer hook;
  const std::vector<std::string> args = Args(dir, hook.url("/hook"),
                                             "[rules]\nalert_unmatched_hours = 0.001\n\n"  // 3.6 s
                                             "[[alert]]\nname = \"typo\"\ntag = \"probe/temperatur\"\nabove = 1\n\n"
                                             "[[alert]]\nname = \"fine\"\ntag = \"probe/*\"\nabove = 1\n");
  EventFileWriter run(dir / "logs/exp1/" + testing::EventFileName(1700000000, "h", 1, 0));
  run.Add(testing::FileVersionEvent(kWall0));
  Append(run, "probe/temperature", 0, 10, [](int64_t) { return 0.5; });
  DaemonProcess d(args, dir / "daemon.log");
  const std::string config = dir / "trainwatch.toml";
  ASSERT_TRUE(d.WaitForLog("alert typo (" + config + ":9) has watched no series for ", 20s)) << d.Log();
  EXPECT_EQ(d.Log().find("alert fine"), std::string::npos) << d.Log();
  std::string out;
  ASSERT_TRUE(WaitFor([&] {
    out.clear();
    testing::RunCommand(std::string(TW_CLI_BINARY) + " status --db " + db + " 2>&1", &out);
    return out.find("alert:       typo (" + config + ":9): tag 'probe/temperatur' in runs '*' matches nothing") !=
           std::string::npos;
  }, 15s)) << out;
  EXPECT_EQ(out.find("fine ("), std::string::npos) << out;
}

}  // namespace
}  // namespace tw
