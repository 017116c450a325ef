// What each channel sends for the same findings, against golden files in tests/data/golden:
// the Slack message, the webhook payload (version 1: a contract receivers parse), each other
// type's message, and groups. Compared as JSON values, so the files may be formatted by hand.
// After an intended change, TW_UPDATE_GOLDEN=1 rewrites them; review the diff before committing
// it.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "notify/chat_channels.h"
#include "notify/group.h"
#include "notify/notification.h"
#include "notify/pagerduty_channel.h"
#include "notify/render.h"
#include "notify/teams_channel.h"
#include "notify/telegram_channel.h"

namespace tw {
namespace {

namespace json = boost::json;

notify::Notification Firing() {
  notify::Notification n;
  n.event = "finding.firing";
  n.time = 1700000000;
  n.finding_id = 42;
  n.rule = "non_finite_loss";
  n.title = "Loss is NaN or infinite";
  n.severity = "critical";
  n.state = "firing";
  n.run = "bert-finetune/lr-5e-3";
  n.series = "train/loss";
  n.onset_step = 1500;
  n.first_step = 1500;
  n.last_step = 1800;
  n.message = "train/loss is NaN from step 1500 (last finite value 1.763 at step 1490)";
  n.cause = "The learning rate is too high for this model and batch.";
  n.fix = "Resume from the last checkpoint with the learning rate 10x lower and gradient clipping.";
  n.evidence = R"({"first_non_finite_step":1500,"last_finite_value":1.763,"non_finite_points":31})";
  n.first_seen = 1700000000;
  n.sparkline = "▁▁▁▁▂▂▃×××";
  return n;
}

notify::Notification Resolved() {
  notify::Notification n = Firing();
  n.event = "finding.resolved";
  n.state = "resolved";
  n.time = 1700003600;
  n.rule = "val_stall";
  n.title = "Validation stopped improving";
  n.severity = "warning";
  n.series = "eval/loss";
  n.message = "eval/loss improves again";
  return n;
}

void ExpectGolden(const std::string& name, const std::string& produced) {
  const std::string path = std::string(TW_GOLDEN_DIR) + "/" + name;
  if (const char* u = std::getenv("TW_UPDATE_GOLDEN"); u && std::string(u) == "1") {
    std::ofstream(path) << produced << "\n";
    GTEST_SKIP() << "rewrote " << path;
  }
  std::ifstream in(path);
  ASSERT_TRUE(in) << path << " is missing (TW_UPDATE_GOLDEN=1 writes it)";
  std::stringstream want;
  want << in.rdbuf();
  EXPECT_EQ(json::parse(produced), json::parse(want.str()))
      << name << " changed; produced:\n" << produced;
}

constexpr const char* kLink = "http://tensorboard:6006/#scalars&regexInput={run}";

TEST(GoldenPayloads, Slack) {
  const notify::Notification n = Firing();
  ExpectGolden("slack_firing.json", notify::SlackMessage(n, notify::ExpandLinkTemplate(kLink, n)));
}

TEST(GoldenPayloads, WebhookVersion1) {
  ExpectGolden("webhook_v1_firing.json", notify::ToPayload(Firing()));
  ExpectGolden("webhook_v1_resolved.json", notify::ToPayload(Resolved()));
}

TEST(GoldenPayloads, DiscordAndNtfy) {
  const notify::Notification n = Firing();
  const std::string link = notify::ExpandLinkTemplate(kLink, n);
  ExpectGolden("discord_firing.json", notify::DiscordMessage(n, link));
  ExpectGolden("ntfy_firing.json", notify::NtfyMessage(n, "training", link));
}

TEST(GoldenPayloads, TelegramTeamsAndPagerDuty) {
  const notify::Notification n = Firing();
  const std::string link = notify::ExpandLinkTemplate(kLink, n);
  ExpectGolden("telegram_firing.json", notify::TelegramMessage(n, "-1001234567890", link));
  ExpectGolden("teams_firing.json", notify::TeamsMessage(n, link));
  ExpectGolden("pagerduty_trigger.json", notify::PagerDutyEvent(n, "R0UT1NGKEYe93facc04764012d7bfb00", link));
  ExpectGolden("pagerduty_resolve.json", notify::PagerDutyEvent(Resolved(), "R0UT1NGKEYe93facc04764012d7bfb00", link));
}

TEST(GoldenPayloads, AGroupForTelegramAndTeams) {
  notify::Group g;
  g.labels = {{"run", "bert-finetune/lr-5e-3"}};
  g.items = {Firing(), Resolved()};
  g.since = 1700000000;
  ExpectGolden("telegram_group.json", notify::TelegramGroupMessage(g, "-1001234567890", kLink));
  ExpectGolden("teams_group.json", notify::TeamsGroupMessage(g, kLink));
}

TEST(GoldenPayloads, AGroupForSlackAndWebhooks) {
  notify::Group g;
  g.labels = {{"run", "bert-finetune/lr-5e-3"}};
  g.items = {Firing(), Resolved()};
  g.since = 1700000000;
  ExpectGolden("slack_group.json", notify::SlackGroupMessage(g, kLink));
  ExpectGolden("webhook_group.json", notify::GroupPayload(g, "pager-relay", 1700003630));
}

}  // namespace
}  // namespace tw
