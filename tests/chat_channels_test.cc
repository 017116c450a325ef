// Discord and ntfy channels against a real HTTP server on loopback: what they send, how the
// receiver's answers are judged, Discord's size limits, and their configuration.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <filesystem>

#include "app/config.h"
#include "notify/chat_channels.h"
#include "notify/group.h"
#include "support/http_server.h"
#include "support/test_env.h"

namespace tw {
namespace {

using namespace tw::testing;
namespace json = boost::json;

notify::Notification Firing() {
  notify::Notification n = notify::SampleNotification(1700000000);
  n.event = "finding.firing";
  n.run = "exp/run-1";
  return n;
}

notify::ChannelConfig Config(const std::string& type, const std::string& url) {
  notify::ChannelConfig c = notify::ChannelConfig::Defaults("ch", type);
  c.url = url;
  return c;
}

// Characters Discord counts against its 6,000 limit: content, embed titles, descriptions,
// field names and values.
size_t DiscordChars(const json::object& m) {
  size_t n = m.at("content").as_string().size();
  for (const auto& e : m.at("embeds").as_array()) {
    const auto& o = e.as_object();
    n += o.at("title").as_string().size() + o.at("description").as_string().size();
    if (o.contains("fields"))
      for (const auto& f : o.at("fields").as_array())
        n += f.at("name").as_string().size() + f.at("value").as_string().size();
  }
  return n;
}

TEST(ChatChannels, DiscordSendsAnEmbedWithoutMentionsAndJudgesItsAnswers) {
  HttpServer server;
  server.Script({{204, ""}, {429, "{\"retry_after\": 3}", {{"Retry-After", "3"}}}, {404, "Unknown Webhook"}});
  auto ch = notify::MakeChannel(Config("discord", server.url("/api/webhooks/1/tok")));
  ASSERT_TRUE(ch.ok()) << ch.status().ToString();
  notify::Notification n = Firing();
  n.message = "loss is NaN @everyone";

  const notify::SendResult ok = (*ch)->Send(n, "tw-1-ch", 1700000000);
  EXPECT_EQ(ok.kind, notify::SendResult::Kind::kSent) << ok.detail;
  const notify::SendResult limited = (*ch)->Send(n, "tw-1-ch", 1700000000);
  EXPECT_EQ(limited.kind, notify::SendResult::Kind::kRetry);
  EXPECT_EQ(limited.retry_after, 3);
  EXPECT_EQ((*ch)->Send(n, "tw-1-ch", 1700000000).kind, notify::SendResult::Kind::kPermanent);

  ASSERT_TRUE(server.WaitForRequests(3, 5));
  const auto req = server.requests()[0];
  EXPECT_EQ(req.target, "/api/webhooks/1/tok");
  const json::object m = json::parse(req.body).as_object();
  EXPECT_EQ(m.at("content").as_string(), "CRITICAL non_finite_loss on exp/run-1");
  EXPECT_TRUE(m.at("allowed_mentions").at("parse").as_array().empty());
  const auto& e = m.at("embeds").as_array().at(0).as_object();
  EXPECT_EQ(e.at("color").to_number<int64_t>(), 0xE01E5A);
  EXPECT_NE(e.at("description").as_string().find("@everyone"), json::string::npos);
  EXPECT_NE(e.at("description").as_string().find("**Fix:**"), json::string::npos);
  bool run_field = false;
  for (const auto& f : e.at("fields").as_array())
    run_field |= f.at("name").as_string() == "run" && f.at("value").as_string() == "exp/run-1";
  EXPECT_TRUE(run_field) << req.body;
}

TEST(ChatChannels, DiscordMessagesStayInsideDiscordsLimits) {
  notify::Notification n = Firing();
  n.message = std::string(9000, 'x');
  n.title = std::string(400, 't');
  std::string evidence = "{";
  for (int i = 0; i < 40; ++i) evidence += (i ? "," : "") + std::string("\"k") + std::to_string(i) + "\":\"" + std::string(2000, 'v') + "\"";
  n.evidence = evidence + "}";
  const json::object single = json::parse(notify::DiscordMessage(n, "https://tb/x")).as_object();
  const auto& e = single.at("embeds").as_array().at(0).as_object();
  EXPECT_LE(e.at("title").as_string().size(), 256u);
  EXPECT_LE(e.at("description").as_string().size(), 4096u);
  EXPECT_LE(e.at("fields").as_array().size(), 25u);
  for (const auto& f : e.at("fields").as_array()) EXPECT_LE(f.at("value").as_string().size(), 1024u);
  EXPECT_LE(DiscordChars(single), 6000u);

  notify::Group g;
  g.labels = {{"run", "exp/run-1"}};
  for (int i = 0; i < 25; ++i) g.items.push_back(n);
  const json::object group = json::parse(notify::DiscordGroupMessage(g, "")).as_object();
  EXPECT_EQ(group.at("embeds").as_array().size(), 10u);
  EXPECT_NE(group.at("content").as_string().find("and 15 more"), json::string::npos);
  EXPECT_LE(DiscordChars(group), 6000u);
}

TEST(ChatChannels, NtfyPublishesJsonToTheServersRootWithPriorityTagsAndToken) {
  HttpServer server;
  notify::ChannelConfig c = Config("ntfy", server.url("/trainwatch-alerts"));
  c.secret = "tk_secret";
  c.link_template = "http://tb:6006/#{run}";
  auto ch = notify::MakeChannel(c);
  ASSERT_TRUE(ch.ok()) << ch.status().ToString();
  EXPECT_EQ((*ch)->Send(Firing(), "tw-1-ch", 1700000000).kind, notify::SendResult::Kind::kSent);
  notify::Notification resolved = Firing();
  resolved.event = "finding.resolved";
  EXPECT_EQ((*ch)->Send(resolved, "tw-2-ch", 1700000000).kind, notify::SendResult::Kind::kSent);
  ASSERT_TRUE(server.WaitForRequests(2, 5));
  const auto reqs = server.requests();
  EXPECT_EQ(reqs[0].target, "/");
  EXPECT_EQ(reqs[0].headers.at("authorization"), "Bearer tk_secret");
  const json::object m = json::parse(reqs[0].body).as_object();
  EXPECT_EQ(m.at("topic").as_string(), "trainwatch-alerts");
  EXPECT_EQ(m.at("priority").to_number<int64_t>(), 5);
  EXPECT_EQ(m.at("tags").as_array().at(0).as_string(), "rotating_light");
  EXPECT_EQ(m.at("click").as_string(), "http://tb:6006/#exp%2Frun-1");
  const json::object r = json::parse(reqs[1].body).as_object();
  EXPECT_EQ(r.at("priority").to_number<int64_t>(), 3);
  EXPECT_EQ(r.at("title").as_string(), "RESOLVED non_finite_loss on exp/run-1");

  // A url names one topic.
  EXPECT_FALSE(notify::MakeChannel(Config("ntfy", server.url("/a/b"))).ok());
  EXPECT_FALSE(notify::MakeChannel(Config("ntfy", server.url("/"))).ok());
}

TEST(ChatChannels, ConfigTakesDiscordAndNtfyWithPeoplesDefaults) {
  TempDir dir;
  const std::string path = dir / "t.toml";
  WriteFile(path,
            "[[notify.channel]]\nname = \"d\"\ntype = \"discord\"\nurl_env = \"TW_TEST_DISCORD\"\n"
            "[[notify.channel]]\nname = \"n\"\ntype = \"ntfy\"\nurl = \"https://ntfy.sh/alerts\"\n"
            "secret_env = \"TW_TEST_NTFY_TOKEN\"\n");
  std::filesystem::permissions(path, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  setenv("TW_TEST_DISCORD", "https://discord.com/api/webhooks/1/abc", 1);
  setenv("TW_TEST_NTFY_TOKEN", "tk", 1);
  auto c = app::LoadConfigFile(path);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  ASSERT_EQ(c->channels.size(), 2u);
  EXPECT_EQ(c->channels[0].type, "discord");
  EXPECT_FALSE(c->channels[0].send_resolved);
  EXPECT_EQ(c->channels[0].min_interval_seconds, 1.0);
  EXPECT_EQ(c->channels[1].secret, "tk");
  EXPECT_FALSE(c->channels[1].send_resolved);

  WriteFile(path, "[[notify.channel]]\nname = \"n\"\ntype = \"ntfy\"\nurl = \"https://ntfy.sh/a/b\"\n");
  auto bad = app::LoadConfigFile(path);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find(path + ":1"), std::string::npos) << bad.status().message();
  EXPECT_NE(bad.status().message().find("one topic"), std::string::npos) << bad.status().message();
  WriteFile(path, "[[notify.channel]]\nname = \"d\"\ntype = \"discord\"\nsecret = \"x\"\nurl = \"https://d/\"\n");
  auto secret = app::LoadConfigFile(path);
  ASSERT_FALSE(secret.ok());
  EXPECT_NE(secret.status().message().find("does not apply to a discord channel"), std::string::npos)
      << secret.status().message();
}

}  // namespace
}  // namespace tw
