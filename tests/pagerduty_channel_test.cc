// PagerDuty (Events API v2) against a fake events endpoint on loopback: a critical finding
// triggers through the outbox and its resolution resolves the same alert (one dedup_key), what
// is not critical stays off the pager, the judgement of the answers, the test message, its
// configuration (no grouping), and a routing key that never shows.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <filesystem>

#include "app/config.h"
#include "base/utf8.h"
#include "notify/group.h"
#include "notify/pagerduty_channel.h"
#include "support/delivery_rig.h"
#include "support/http_server.h"
#include "support/test_env.h"

namespace tw {
namespace {

using namespace tw::testing;
namespace json = boost::json;

constexpr const char* kRoutingKey = "R0UT1NGKEYe93facc04764012d7bfb00";
constexpr const char* kAccepted = R"({"status":"success","message":"Event processed","dedup_key":"x"})";

notify::Notification Finding(const std::string& severity = "critical", const std::string& event = "finding.firing") {
  notify::Notification n = notify::SampleNotification(1700000000);
  n.event = event;
  n.finding_id = 42;
  n.run = "exp/run-1";
  n.severity = severity;
  if (event == "finding.resolved") n.state = "resolved";
  return n;
}

notify::ChannelConfig PagerDuty(const HttpServer& server) {
  notify::ChannelConfig c = notify::ChannelConfig::Defaults("pd", "pagerduty");
  c.url = server.url("/v2/enqueue");
  c.secret = kRoutingKey;
  c.http.timeout_seconds = 2;
  return c;
}

TEST(PagerDutyChannel, ACriticalFindingTriggersAndItsResolutionResolvesTheSameAlert) {
  HttpServer server;
  server.SetDefault({202, kAccepted});
  notify::ChannelConfig c = PagerDuty(server);
  c.link_template = "http://tb:6006/#{run}";
  notify::Notification warning = Finding("warning");
  warning.rule = "loss_spikes";
  notify::Notification warning_resolved = warning;
  warning_resolved.event = "finding.resolved";
  DeliveryRig rig;
  // A warning (and its resolution) stays off the pager by default; the critical finding pages.
  const std::vector<notify::Attempt> attempts =
      rig.DeliverOneByOne({c}, {warning, Finding(), warning_resolved, Finding("critical", "finding.resolved")});
  ASSERT_EQ(attempts.size(), 2u);
  for (const auto& a : attempts) EXPECT_EQ(a.state, "sent") << a.result.detail;
  EXPECT_EQ(rig.OutboxStates(), "sent=2 pending=0 dead=0");

  ASSERT_EQ(server.requests().size(), 2u);
  for (const RecordedRequest& req : server.requests()) {
    EXPECT_EQ(req.method, "POST");
    EXPECT_EQ(req.target, "/v2/enqueue");
    EXPECT_EQ(req.headers.at("content-type"), "application/json");
  }
  const json::object trigger = json::parse(server.requests()[0].body).as_object();
  EXPECT_EQ(trigger.at("routing_key").as_string(), kRoutingKey);
  EXPECT_EQ(trigger.at("event_action").as_string(), "trigger");
  EXPECT_EQ(trigger.at("dedup_key").as_string(), "trainwatch/non_finite_loss/exp/run-1/Loss/train");
  const json::object& payload = trigger.at("payload").as_object();
  EXPECT_EQ(payload.at("severity").as_string(), "critical");
  EXPECT_EQ(payload.at("source").as_string(), "exp/run-1");
  EXPECT_EQ(payload.at("class").as_string(), "non_finite_loss");
  EXPECT_EQ(payload.at("component").as_string(), "Loss/train");
  EXPECT_EQ(payload.at("timestamp").as_string(), "2023-11-14T22:13:20Z");
  EXPECT_TRUE(payload.at("summary").as_string().starts_with("CRITICAL: Loss is NaN or infinite (test message) on exp/run-1"));
  EXPECT_EQ(payload.at("custom_details").at("evidence").at("first_non_finite_step").to_number<int64_t>(), 700);
  EXPECT_EQ(trigger.at("links").at(0).at("href").as_string(), "http://tb:6006/#exp%2Frun-1");

  const json::object resolve = json::parse(server.requests()[1].body).as_object();
  EXPECT_EQ(resolve.size(), 3u) << server.requests()[1].body;  // routing_key, event_action, dedup_key only
  EXPECT_EQ(resolve.at("routing_key").as_string(), kRoutingKey);
  EXPECT_EQ(resolve.at("event_action").as_string(), "resolve");
  EXPECT_EQ(resolve.at("dedup_key"), trigger.at("dedup_key"));
}

TEST(PagerDutyChannel, TheDedupKeyIsTheFindingsKeyWithinPagerDutysLimit) {
  const std::string key = notify::PagerDutyDedupKey(Finding());
  for (const char* event : {"finding.escalated", "finding.repeat", "finding.resolved"})
    EXPECT_EQ(notify::PagerDutyDedupKey(Finding("critical", event)), key) << event;
  notify::Notification other = Finding();
  other.series = "Loss/val";
  EXPECT_NE(notify::PagerDutyDedupKey(other), key);
  notify::Notification no_series = Finding();
  no_series.series = "";
  EXPECT_EQ(notify::PagerDutyDedupKey(no_series), "trainwatch/non_finite_loss/exp/run-1");

  notify::Notification a = Finding(), b = Finding();
  a.run = std::string(300, 'r') + "é-a";
  b.run = std::string(300, 'r') + "é-b";
  const std::string ka = notify::PagerDutyDedupKey(a), kb = notify::PagerDutyDedupKey(b);
  EXPECT_LE(ka.size(), 255u);
  EXPECT_NE(ka, kb);  // the hash of the whole tells long keys apart
  EXPECT_TRUE(utf8::IsValid(ka));
  a.run = std::string(230, 'r') + "ééééééééééééé";  // a two-byte character across the cut
  EXPECT_TRUE(utf8::IsValid(notify::PagerDutyDedupKey(a)));
  EXPECT_LE(notify::PagerDutyDedupKey(a).size(), 255u);
}

TEST(PagerDutyChannel, RateLimitsAndServerErrorsRetryAnInvalidEventIsPermanent) {
  HttpServer server;
  server.Script({{429, "", {{"Retry-After", "5"}}},
                 {429, ""},
                 {500, R"({"status":"error"})"},
                 {400, R"({"status":"invalid event","message":"Event object is invalid","errors":["Length of 'routing_key' is incorrect"]})"},
                 {403, ""},
                 {202, kAccepted}});
  auto ch = notify::MakeChannel(PagerDuty(server));
  ASSERT_TRUE(ch.ok()) << ch.status().ToString();
  const auto send = [&] { return (*ch)->Send(Finding(), "tw-1-pd", 1700000000); };
  notify::SendResult r = send();
  EXPECT_EQ(r.kind, notify::SendResult::Kind::kRetry);
  EXPECT_EQ(r.retry_after, 5);
  r = send();
  EXPECT_EQ(r.kind, notify::SendResult::Kind::kRetry);
  EXPECT_EQ(r.retry_after, 30);  // not said: PagerDuty's advice, 30 s apart
  EXPECT_EQ(send().kind, notify::SendResult::Kind::kRetry);
  r = send();
  EXPECT_EQ(r.kind, notify::SendResult::Kind::kPermanent);
  EXPECT_NE(r.detail.find("invalid event"), std::string::npos) << r.detail;
  EXPECT_EQ(send().kind, notify::SendResult::Kind::kPermanent);
  EXPECT_EQ(send().kind, notify::SendResult::Kind::kSent);
}

TEST(PagerDutyChannel, ATestMessageTriggersAnInfoAlertAndResolvesIt) {
  HttpServer server;
  server.SetDefault({202, kAccepted});
  auto ch = notify::MakeChannel(PagerDuty(server));
  ASSERT_TRUE(ch.ok()) << ch.status().ToString();
  EXPECT_EQ((*ch)->Send(notify::SampleNotification(1700000000), "tw-test-pd", 1700000000).kind,
            notify::SendResult::Kind::kSent);
  ASSERT_EQ(server.requests().size(), 2u);
  const json::object trigger = json::parse(server.requests()[0].body).as_object();
  EXPECT_EQ(trigger.at("payload").at("severity").as_string(), "info");
  EXPECT_TRUE(trigger.at("payload").at("summary").as_string().starts_with("[trainwatch test] "));
  const json::object resolve = json::parse(server.requests()[1].body).as_object();
  EXPECT_EQ(resolve.at("event_action").as_string(), "resolve");
  EXPECT_EQ(resolve.at("dedup_key"), trigger.at("dedup_key"));
}

TEST(PagerDutyChannel, AGroupHandedToItAnywayGoesAsOneEventPerChange) {
  HttpServer server;
  server.SetDefault({202, kAccepted});
  notify::Group g;
  g.items = {Finding(), Finding("critical", "finding.resolved")};
  EXPECT_EQ((*notify::MakeChannel(PagerDuty(server)))->SendGroup(g, "tw-g-pd", 1700000000).kind,
            notify::SendResult::Kind::kSent);
  ASSERT_EQ(server.requests().size(), 2u);
  EXPECT_EQ(json::parse(server.requests()[0].body).at("event_action").as_string(), "trigger");
  EXPECT_EQ(json::parse(server.requests()[1].body).at("event_action").as_string(), "resolve");
}

TEST(PagerDutyChannel, TheRoutingKeyNeverShows) {
  HttpServer server;
  server.SetDefault({400, std::string(R"({"status":"invalid event","errors":["unknown routing_key )") + kRoutingKey + "\"]}"});
  notify::ChannelConfig c = PagerDuty(server);
  const notify::SendResult r = (*notify::MakeChannel(c))->Send(Finding(), "tw-1-pd", 1700000000);
  EXPECT_EQ(r.kind, notify::SendResult::Kind::kPermanent);
  EXPECT_EQ(r.detail.find(kRoutingKey), std::string::npos) << r.detail;
  EXPECT_EQ(notify::Destination(c), server.url("/v2/…"));
}

class PagerDutyConfig : public ::testing::Test {
 protected:
  TempDir dir_;
  std::string path_ = dir_ / "t.toml";

  Result<app::Config> Load(const std::string& text) {
    WriteFile(path_, text);
    std::filesystem::permissions(path_, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
    return app::LoadConfigFile(path_);
  }
  void ExpectError(const std::string& text, int line, const std::string& part) {
    Result<app::Config> c = Load(text);
    ASSERT_FALSE(c.ok()) << text;
    const std::string& e = c.status().message();
    EXPECT_NE(e.find(path_ + ":" + std::to_string(line) + ": "), std::string::npos) << e;
    EXPECT_NE(e.find(part), std::string::npos) << e;
    EXPECT_EQ(e.find(kRoutingKey), std::string::npos) << e;
  }
};

constexpr const char* kChannel = "[[notify.channel]]\nname = \"pd\"\ntype = \"pagerduty\"\n";

TEST_F(PagerDutyConfig, TakesARoutingKeyFromTheEnvironmentWithPagingDefaults) {
  setenv("TW_TEST_PD_KEY", kRoutingKey, 1);
  Result<app::Config> c = Load(std::string(kChannel) + "routing_key_env = \"TW_TEST_PD_KEY\"\n"
                               "[[notify.channel]]\nname = \"eu\"\ntype = \"pagerduty\"\n"
                               "routing_key_env = \"TW_TEST_PD_KEY\"\nurl = \"https://events.eu.pagerduty.com/v2/enqueue\"\n"
                               "min_severity = \"warning\"\nrepeat_interval_seconds = 3600\n");
  unsetenv("TW_TEST_PD_KEY");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  const notify::ChannelConfig& pd = c->channels.at(0);
  EXPECT_EQ(pd.secret, kRoutingKey);
  EXPECT_EQ(pd.url, "https://events.pagerduty.com/v2/enqueue");
  EXPECT_EQ(pd.min_severity, diagnose::Severity::kCritical);  // a page wakes someone
  EXPECT_TRUE(pd.send_resolved);                               // its resolution resolves
  EXPECT_TRUE(pd.group_by.empty());
  EXPECT_EQ(pd.repeat_interval_seconds, 0);
  EXPECT_EQ(pd.min_interval_seconds, 0.5);
  EXPECT_EQ(c->channels.at(1).url, "https://events.eu.pagerduty.com/v2/enqueue");
  EXPECT_EQ(c->channels.at(1).min_severity, diagnose::Severity::kWarning);
  EXPECT_EQ(c->channels.at(1).repeat_interval_seconds, 3600);
}

TEST_F(PagerDutyConfig, MistakesNameTheFileAndLineAndGroupingIsRefused) {
  const std::string key = std::string("routing_key = \"") + kRoutingKey + "\"\n";
  ExpectError(kChannel, 1, "channel 'pd' needs routing_key, routing_key_env or routing_key_credential");
  ExpectError(std::string(kChannel) + key + "group_by = [\"run\"]\n", 5,
              "channel 'pd': 'group_by' does not apply to a pagerduty channel (each finding is its own PagerDuty "
              "alert, by its dedup_key)");
  ExpectError(std::string(kChannel) + key + "digest_minutes = 10\n", 5, "'digest_minutes' does not apply to a pagerduty");
  ExpectError(std::string(kChannel) + key + "group_wait_seconds = 10\n", 5, "'group_wait_seconds' does not apply");
  ExpectError(std::string(kChannel) + key + "url = \"ftp://events/\"\n", 1, "channel 'pd': ");
  ExpectError(std::string(kChannel) + key + "secret = \"x\"\n", 5, "'secret' does not apply to a pagerduty channel");
  ExpectError(std::string(kChannel) + key + "bot_token = \"1:x\"\n", 5, "'bot_token' does not apply to a pagerduty channel");
  ExpectError(std::string(kChannel) + key + "min_severity = \"page\"\n", 5, "min_severity must be info, warning or critical");
}

}  // namespace
}  // namespace tw
