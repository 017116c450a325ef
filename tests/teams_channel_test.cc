// Microsoft Teams (Workflows webhooks) against a fake workflow on loopback: a finding and its
// resolution through the outbox as Adaptive Cards, a group, the judgement of the answers
// (202 sent, Retry-After on 429), its configuration, and a webhook URL that never shows whole.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <filesystem>

#include "app/config.h"
#include "notify/group.h"
#include "notify/teams_channel.h"
#include "support/delivery_rig.h"
#include "support/http_server.h"
#include "support/test_env.h"

namespace tw {
namespace {

using namespace tw::testing;
namespace json = boost::json;

constexpr const char* kWorkflowPath =
    "/workflows/5c1d2e3f/triggers/manual/paths/invoke?api-version=2016-06-01&sp=%2Ftriggers%2Fmanual%2Frun"
    "&sv=1.0&sig=Zx9SIGNATUREsecretPART0123456789";

notify::Notification Firing() {
  notify::Notification n = notify::SampleNotification(1700000000);
  n.event = "finding.firing";
  n.finding_id = 42;
  n.run = "exp/run-1";
  return n;
}

notify::Notification ResolvedOf(notify::Notification n) {
  n.event = "finding.resolved";
  n.state = "resolved";
  return n;
}

notify::ChannelConfig Teams(const HttpServer& server) {
  notify::ChannelConfig c = notify::ChannelConfig::Defaults("ms", "teams");
  c.url = server.url(kWorkflowPath);
  c.http.timeout_seconds = 2;
  return c;
}

// The card inside a Teams message, after checking the envelope around it.
json::object Card(const std::string& body) {
  const json::object m = json::parse(body).as_object();
  EXPECT_EQ(m.at("type").as_string(), "message");
  const json::array& attachments = m.at("attachments").as_array();
  EXPECT_EQ(attachments.size(), 1u);
  const json::object& a = attachments.at(0).as_object();
  EXPECT_EQ(a.at("contentType").as_string(), "application/vnd.microsoft.card.adaptive");
  EXPECT_TRUE(a.at("contentUrl").is_null());
  const json::object card = a.at("content").as_object();
  EXPECT_EQ(card.at("type").as_string(), "AdaptiveCard");
  EXPECT_EQ(card.at("version").as_string(), "1.4");
  EXPECT_EQ(card.at("$schema").as_string(), "http://adaptivecards.io/schemas/adaptive-card.json");
  return card;
}

TEST(TeamsChannel, AFindingAndItsResolutionReachTheWorkflowThroughTheOutbox) {
  HttpServer server;
  server.SetDefault({202, ""});  // Workflows accept, and run the flow later
  notify::ChannelConfig c = Teams(server);
  c.send_resolved = true;
  c.link_template = "http://tb:6006/#{run}";
  DeliveryRig rig;
  const std::vector<notify::Attempt> attempts = rig.DeliverOneByOne({c}, {Firing(), ResolvedOf(Firing())});
  ASSERT_EQ(attempts.size(), 2u);
  for (const auto& a : attempts) EXPECT_EQ(a.state, "sent") << a.result.detail;
  EXPECT_EQ(rig.OutboxStates(), "sent=2 pending=0 dead=0");

  ASSERT_EQ(server.requests().size(), 2u);
  for (const RecordedRequest& req : server.requests()) {
    EXPECT_EQ(req.method, "POST");
    EXPECT_EQ(req.target, kWorkflowPath);
    EXPECT_EQ(req.headers.at("content-type"), "application/json; charset=utf-8");
  }
  const json::object firing = Card(server.requests()[0].body);
  const json::array& body = firing.at("body").as_array();
  EXPECT_EQ(body.at(0).at("text").as_string(), "🔴 CRITICAL · Loss is NaN or infinite (test message)");
  EXPECT_EQ(body.at(0).at("color").as_string(), "Attention");
  EXPECT_NE(body.at(1).at("text").as_string().find("would be NaN from step 700"), json::string::npos);
  const json::array& facts = body.at(2).at("facts").as_array();
  EXPECT_EQ(facts.at(0).at("title").as_string(), "Run");
  EXPECT_EQ(facts.at(0).at("value").as_string(), "exp/run-1");
  EXPECT_EQ(firing.at("actions").at(0).at("type").as_string(), "Action.OpenUrl");
  EXPECT_EQ(firing.at("actions").at(0).at("url").as_string(), "http://tb:6006/#exp%2Frun-1");
  const json::object resolved = Card(server.requests()[1].body);
  EXPECT_EQ(resolved.at("body").at(0).at("text").as_string(), "✅ RESOLVED · Loss is NaN or infinite (test message)");
  EXPECT_EQ(resolved.at("body").at(0).at("color").as_string(), "Good");
}

TEST(TeamsChannel, RetryAfterOn429And5xxRetryOther4xxArePermanent) {
  HttpServer server;
  server.Script({{429, "Rate limit is exceeded.", {{"Retry-After", "9"}}},
                 {503, "busy"},
                 {404, R"({"error":{"code":"WorkflowNotFound"}})"},
                 {400, R"({"error":{"code":"InvalidRequestContent"}})"},
                 {202, ""}});
  auto ch = notify::MakeChannel(Teams(server));
  ASSERT_TRUE(ch.ok()) << ch.status().ToString();
  const auto send = [&] { return (*ch)->Send(Firing(), "tw-1-ms", 1700000000); };
  notify::SendResult r = send();
  EXPECT_EQ(r.kind, notify::SendResult::Kind::kRetry);
  EXPECT_EQ(r.retry_after, 9);
  EXPECT_EQ(send().kind, notify::SendResult::Kind::kRetry);
  EXPECT_EQ(send().kind, notify::SendResult::Kind::kPermanent);
  EXPECT_EQ(send().kind, notify::SendResult::Kind::kPermanent);
  r = send();
  EXPECT_EQ(r.kind, notify::SendResult::Kind::kSent);
  EXPECT_EQ(r.http_status, 202);
}

TEST(TeamsChannel, AGroupIsOneCardWithABlockPerChangeWithinTheSizeLimit) {
  notify::Notification n = Firing();
  n.message = std::string(5000, 'x');
  n.title = std::string(500, 't');
  notify::Group g;
  g.labels = {{"run", "exp/run-1"}};
  for (int i = 0; i < 30; ++i) g.items.push_back(i % 2 ? ResolvedOf(n) : n);
  const std::string message = notify::TeamsGroupMessage(g, "http://tb/#{run}");
  EXPECT_LT(message.size(), 28000u);  // a Teams message's limit, about 28 KB
  const json::object card = Card(message);
  const json::array& body = card.at("body").as_array();
  EXPECT_EQ(body.at(0).at("text").as_string(), "1 finding on run exp/run-1");
  EXPECT_EQ(body.at(1).at("text").as_string(), "15 firing · 15 resolved");
  size_t containers = 0;
  for (const auto& b : body) containers += b.at("type").as_string() == "Container";
  EXPECT_EQ(containers, 24u);
  EXPECT_EQ(body.at(body.size() - 2).at("text").as_string(), "…and 6 more");
  EXPECT_EQ(body.at(2).at("selectAction").at("url").as_string(), "http://tb/#exp%2Frun-1");

  const std::string single = notify::TeamsMessage(n, "http://tb/x");
  EXPECT_LT(single.size(), 28000u);
}

TEST(TeamsChannel, TheWorkflowsSignatureNeverShows) {
  HttpServer server;
  server.SetDefault({400, std::string("bad request to ") + kWorkflowPath});  // an echo of the URL
  notify::ChannelConfig c = Teams(server);
  const notify::SendResult r = (*notify::MakeChannel(c))->Send(Firing(), "tw-1-ms", 1700000000);
  EXPECT_EQ(r.kind, notify::SendResult::Kind::kPermanent);
  EXPECT_EQ(r.detail.find("SIGNATUREsecret"), std::string::npos) << r.detail;
  const std::string where = notify::Destination(c);
  EXPECT_EQ(where, server.url("/workflows/…")) << where;
}

TEST(TeamsChannel, ConfigTakesAWorkflowUrlAsASecret) {
  TempDir dir;
  const std::string path = dir / "t.toml";
  const auto load = [&](const std::string& text) {
    WriteFile(path, text);
    std::filesystem::permissions(path, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
    return app::LoadConfigFile(path);
  };
  setenv("TW_TEST_TEAMS", "https://prod-1.westus.logic.azure.com:443/workflows/abc/triggers/manual/paths/invoke?sig=S", 1);
  Result<app::Config> c = load("[[notify.channel]]\nname = \"ms\"\ntype = \"teams\"\nurl_env = \"TW_TEST_TEAMS\"\n");
  unsetenv("TW_TEST_TEAMS");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  const notify::ChannelConfig& t = c->channels.at(0);
  EXPECT_EQ(t.url.substr(0, 8), "https://");
  EXPECT_FALSE(t.send_resolved);  // people's defaults, as Slack's
  EXPECT_EQ(t.min_interval_seconds, 1.0);
  EXPECT_EQ(t.group_by, std::vector<std::string>{"run"});

  Result<app::Config> missing = load("[[notify.channel]]\nname = \"ms\"\ntype = \"teams\"\n");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find(path + ":1: channel 'ms' needs url, url_env or url_credential"),
            std::string::npos)
      << missing.status().message();
  Result<app::Config> secret = load("[[notify.channel]]\nname = \"ms\"\ntype = \"teams\"\nurl = \"https://x/w?sig=S\"\n"
                                    "secret = \"k\"\n");
  ASSERT_FALSE(secret.ok());
  EXPECT_NE(secret.status().message().find(path + ":5: channel 'ms': 'secret' does not apply to a teams channel"),
            std::string::npos)
      << secret.status().message();
  Result<app::Config> bad = load("[[notify.channel]]\nname = \"ms\"\ntype = \"teams\"\nurl = \"teams://x/w?sig=S\"\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find(path + ":1: channel 'ms': "), std::string::npos) << bad.status().message();
  EXPECT_EQ(bad.status().message().find("sig=S"), std::string::npos) << bad.status().message();
}

}  // namespace
}  // namespace tw
