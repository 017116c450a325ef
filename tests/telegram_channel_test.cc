// Telegram against a fake Bot API on loopback: a finding and its resolution through the outbox,
// MarkdownV2 escaping (every special character, in text, code and links), the 4,096 limit, the
// judgement of the Bot API's answers (flood control's retry_after in the body), its
// configuration, and a bot token that never shows.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <filesystem>

#include "app/config.h"
#include "notify/channel_types.h"
#include "notify/group.h"
#include "notify/telegram_channel.h"
#include "support/delivery_rig.h"
#include "support/http_server.h"
#include "support/test_env.h"

namespace tw {
namespace {

using namespace tw::testing;
namespace json = boost::json;

constexpr const char* kToken = "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw";
constexpr const char* kSpecials = "_*[]()~`>#+-=|{}.!\\";

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

notify::ChannelConfig Telegram(const HttpServer& server) {
  notify::ChannelConfig c = notify::ChannelConfig::Defaults("tg", "telegram");
  c.url = server.url("/");  // the API's root
  c.secret = kToken;
  c.chat_id = "-1001234567890";
  c.http.timeout_seconds = 2;
  return c;
}

std::string Text(const std::string& body) { return std::string(json::parse(body).at("text").as_string()); }

// What is wrong with `t` as MarkdownV2 as trainwatch writes it ("" when nothing): outside code,
// pre and a link's URL every special character is escaped or is markup (* bold, _ italic, `
// code, ``` pre, [text](url)), escapes inside code and pre are of ` and \ only, inside a URL
// of ) and \ only, and every entity is closed.
std::string MarkdownV2Problem(const std::string& t) {
  bool bold = false, italic = false, link_text = false;
  const auto closing = [&](size_t from, std::string_view end, std::string_view escapable, size_t* at) {
    for (size_t i = from; i < t.size(); ++i) {
      if (t[i] == '\\') {
        if (i + 1 >= t.size() || escapable.find(t[i + 1]) == std::string_view::npos) return false;
        ++i;
      } else if (t.compare(i, end.size(), end) == 0) {
        *at = i;
        return true;
      } else if (escapable.find(t[i]) != std::string_view::npos) {
        return false;  // an unescaped ` inside code, ) inside a URL
      }
    }
    return false;
  };
  for (size_t i = 0; i < t.size();) {
    const char c = t[i];
    size_t end = 0;
    if (c == '\\') {
      if (i + 1 >= t.size()) return "a backslash ends the text";
      i += 2;
    } else if (t.compare(i, 3, "```") == 0) {
      if (!closing(i + 3, "```", "`\\", &end)) return "a pre block at " + std::to_string(i) + " is not closed";
      i = end + 3;
    } else if (c == '`') {
      if (!closing(i + 1, "`", "`\\", &end)) return "code at " + std::to_string(i) + " is not closed";
      i = end + 1;
    } else if (c == '*') {
      bold = !bold, ++i;
    } else if (c == '_') {
      italic = !italic, ++i;
    } else if (c == '[' && !link_text) {
      link_text = true, ++i;
    } else if (c == ']' && link_text) {
      if (t.compare(i, 2, "](") != 0 || !closing(i + 2, ")", ")\\", &end)) return "a link's URL is not closed";
      link_text = false, i = end + 1;
    } else if (std::string_view(kSpecials).find(c) != std::string_view::npos) {
      return std::string("an unescaped '") + c + "' at " + std::to_string(i);
    } else {
      ++i;
    }
  }
  if (bold || italic || link_text) return "bold, italic or a link is not closed";
  return "";
}

TEST(TelegramChannel, MarkdownV2EscapesEverySpecialCharacter) {
  std::string escaped_all;
  for (const char c : std::string(kSpecials)) escaped_all += std::string("\\") + c;
  EXPECT_EQ(notify::EscapeMarkdownV2(kSpecials), escaped_all);
  for (const char c : std::string(kSpecials)) {
    SCOPED_TRACE(std::string(1, c));
    EXPECT_EQ(notify::EscapeMarkdownV2(std::string("a") + c + "b"), std::string("a\\") + c + "b");
  }
  // Nothing else: letters, digits, spaces, UTF-8, "/", ":", "@", "<", "&", ",", "%".
  EXPECT_EQ(notify::EscapeMarkdownV2("Loss/train: NaN @ step 700, <x & y 5% ✓ é"),
            "Loss/train: NaN @ step 700, <x & y 5% ✓ é");
  EXPECT_EQ(notify::EscapeMarkdownV2Code("a`b\\c_*[.!"), "a\\`b\\\\c_*[.!");
  EXPECT_EQ(notify::EscapeMarkdownV2Link("http://tb/#x(1)\\y_z"), "http://tb/#x(1\\)\\\\y_z");
}

TEST(TelegramChannel, ATagNamedWithEverySpecialCharacterIsEscapedWhereverItShows) {
  notify::Notification n = Firing();
  n.series = std::string("loss") + kSpecials + "end";
  n.rule = "rule_with-odd.name!";
  n.run = "exp/[a](b)";
  n.message = n.series + " is NaN from step 700 (1.5e+3 > 1e3).";
  n.cause = "*not bold* _not italic_ `not code`";
  n.evidence = R"({"k_[1]":"v.(2)!"})";
  const std::string text = Text(notify::TelegramMessage(n, "-100", "http://tb:6006/#run=(x)"));
  EXPECT_EQ(MarkdownV2Problem(text), "") << text;
  // In code, only ` and \ take a backslash; in text, every special character.
  EXPECT_NE(text.find("`loss_*[]()~\\`>#+-=|{}.!\\\\end`"), std::string::npos) << text;
  EXPECT_NE(text.find("loss\\_\\*\\[\\]\\(\\)\\~\\`\\>\\#\\+\\-\\=\\|\\{\\}\\.\\!\\\\end is NaN"), std::string::npos) << text;
  EXPECT_NE(text.find("\\*not bold\\* \\_not italic\\_ \\`not code\\`"), std::string::npos) << text;
  EXPECT_NE(text.find("_k\\_\\[1\\]_ v\\.\\(2\\)\\!"), std::string::npos) << text;
  EXPECT_NE(text.find("[Open the run](http://tb:6006/#run=(x\\))"), std::string::npos) << text;
}

TEST(TelegramChannel, AFindingAndItsResolutionReachTheChatThroughTheOutbox) {
  HttpServer server;
  server.SetDefault({200, R"({"ok":true,"result":{"message_id":1}})"});
  notify::ChannelConfig c = Telegram(server);
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
    EXPECT_EQ(req.target, std::string("/bot") + kToken + "/sendMessage");
    EXPECT_EQ(req.headers.at("content-type"), "application/json");
    const json::object m = json::parse(req.body).as_object();
    EXPECT_EQ(m.at("chat_id").as_string(), "-1001234567890");
    EXPECT_EQ(m.at("parse_mode").as_string(), "MarkdownV2");
    EXPECT_TRUE(m.at("link_preview_options").at("is_disabled").as_bool());
    EXPECT_EQ(MarkdownV2Problem(std::string(m.at("text").as_string())), "") << req.body;
  }
  const std::string firing = Text(server.requests()[0].body);
  EXPECT_TRUE(firing.starts_with("🔴 *CRITICAL · Loss is NaN or infinite \\(test message\\)*\n")) << firing;
  EXPECT_NE(firing.find("Run `exp/run-1`  Series `Loss/train`"), std::string::npos) << firing;
  EXPECT_NE(firing.find("*What to do*"), std::string::npos) << firing;
  EXPECT_NE(firing.find("[Open the run](http://tb:6006/#exp%2Frun-1)"), std::string::npos) << firing;
  const std::string resolved = Text(server.requests()[1].body);
  EXPECT_TRUE(resolved.starts_with("✅ *RESOLVED · ")) << resolved;
  EXPECT_NE(resolved.find("The condition no longer holds\\."), std::string::npos) << resolved;
}

TEST(TelegramChannel, FloodControlRetriesAfterTheBodysRetryAfterAndRefusalsArePermanent) {
  HttpServer server;
  server.Script({
      {429, R"({"ok":false,"error_code":429,"description":"Too Many Requests: retry after 17","parameters":{"retry_after":17}})"},
      {429, R"({"ok":false,"error_code":429,"description":"Too Many Requests"})", {{"Retry-After", "4"}}},
      {502, "Bad Gateway"},
      {400, R"({"ok":false,"error_code":400,"description":"Bad Request: group chat was upgraded to a supergroup chat","parameters":{"migrate_to_chat_id":-1009876543210}})"},
      {403, R"({"ok":false,"error_code":403,"description":"Forbidden: bot was kicked from the group chat"})"},
      {200, "<html>captive portal</html>"},
      {200, R"({"ok":true,"result":{}})"},
  });
  auto ch = notify::MakeChannel(Telegram(server));
  ASSERT_TRUE(ch.ok()) << ch.status().ToString();
  const auto send = [&] { return (*ch)->Send(Firing(), "tw-1-tg", 1700000000); };
  notify::SendResult r = send();
  EXPECT_EQ(r.kind, notify::SendResult::Kind::kRetry);
  EXPECT_EQ(r.retry_after, 17);
  r = send();
  EXPECT_EQ(r.kind, notify::SendResult::Kind::kRetry);
  EXPECT_EQ(r.retry_after, 4);  // no parameters: the header, if any
  EXPECT_EQ(send().kind, notify::SendResult::Kind::kRetry);
  r = send();
  EXPECT_EQ(r.kind, notify::SendResult::Kind::kPermanent);
  EXPECT_NE(r.detail.find("set chat_id = -1009876543210"), std::string::npos) << r.detail;
  EXPECT_EQ(send().kind, notify::SendResult::Kind::kPermanent);
  EXPECT_EQ(send().kind, notify::SendResult::Kind::kRetry);  // a 200 that is not the Bot API's
  EXPECT_EQ(send().kind, notify::SendResult::Kind::kSent);
}

TEST(TelegramChannel, MessagesStayInsideTheLimitAndWellFormed) {
  notify::Notification n = Firing();
  n.title = std::string(600, '*');
  n.run = std::string(500, '`');
  n.series = std::string(500, '\\');
  n.message = std::string(9000, '.');
  n.cause = std::string(5000, '_');
  n.fix = std::string(5000, '[');
  std::string evidence = "{";
  for (int i = 0; i < 20; ++i)
    evidence += (i ? "," : "") + std::string("\"k") + std::to_string(i) + "\":\"" + std::string(500, '!') + "\"";
  n.evidence = evidence + "}";
  n.sparkline = std::string(900, '`');
  const std::string text = Text(notify::TelegramMessage(n, "-100", "http://tb/" + std::string(900, ')')));
  EXPECT_LE(text.size(), 4096u);
  EXPECT_EQ(MarkdownV2Problem(text), "") << text.substr(0, 300);

  notify::Group g;
  g.labels = {{"run", "exp/run-1"}};
  for (int i = 0; i < 200; ++i) g.items.push_back(n);
  const std::string group = Text(notify::TelegramGroupMessage(g, "-100", "http://tb/#{run}"));
  EXPECT_LE(group.size(), 4096u);
  EXPECT_EQ(MarkdownV2Problem(group), "") << group.substr(0, 300);
  EXPECT_NE(group.find(" more"), std::string::npos);
}

TEST(TelegramChannel, AGroupIsOneMessageWithALinePerChange) {
  HttpServer server;
  server.SetDefault({200, R"({"ok":true,"result":{}})"});
  notify::Group g;
  g.labels = {{"run", "exp/run-1"}};
  g.items = {Firing(), ResolvedOf(Firing())};
  auto ch = notify::MakeChannel(Telegram(server));
  ASSERT_TRUE(ch.ok()) << ch.status().ToString();
  EXPECT_EQ((*ch)->SendGroup(g, "tw-g-tg", 1700000000).kind, notify::SendResult::Kind::kSent);
  ASSERT_TRUE(server.WaitForRequests(1, 5));
  const std::string text = Text(server.requests()[0].body);
  EXPECT_EQ(MarkdownV2Problem(text), "") << text;
  EXPECT_TRUE(text.starts_with("🔴 *1 finding on run exp/run\\-1*\n1 firing · 1 resolved")) << text;
  EXPECT_NE(text.find("\n• 🔴 *CRITICAL"), std::string::npos) << text;
  EXPECT_NE(text.find("\n• ✅ *RESOLVED"), std::string::npos) << text;
}

TEST(TelegramChannel, TheBotTokenNeverShows) {
  HttpServer server;
  // A receiver (or a proxy) that echoes the request line.
  server.SetDefault({401, std::string(R"({"ok":false,"error_code":401,"description":"Unauthorized: /bot)") + kToken +
                              R"(/sendMessage"})"});
  notify::ChannelConfig c = Telegram(server);
  auto ch = notify::MakeChannel(c);
  ASSERT_TRUE(ch.ok()) << ch.status().ToString();
  const notify::SendResult refused = (*ch)->Send(Firing(), "tw-1-tg", 1700000000);
  EXPECT_EQ(refused.kind, notify::SendResult::Kind::kPermanent);
  EXPECT_EQ(refused.detail.find(kToken), std::string::npos) << refused.detail;
  EXPECT_EQ(refused.detail.find("AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw"), std::string::npos) << refused.detail;
  // No answer at all: the HTTP error names the URL, whose path holds the token.
  notify::ChannelConfig gone = c;
  gone.url = "http://127.0.0.1:9/";
  gone.http.timeout_seconds = 1;
  const notify::SendResult unreachable = (*notify::MakeChannel(gone))->Send(Firing(), "tw-1-tg", 1700000000);
  EXPECT_EQ(unreachable.kind, notify::SendResult::Kind::kRetry);
  EXPECT_NE(unreachable.detail.find("127.0.0.1:9"), std::string::npos) << unreachable.detail;
  EXPECT_EQ(unreachable.detail.find(kToken), std::string::npos) << unreachable.detail;
  EXPECT_EQ(notify::Destination(c).find(kToken), std::string::npos) << notify::Destination(c);
  EXPECT_NE(notify::Destination(c).find("chat -1001234567890"), std::string::npos) << notify::Destination(c);
}

// The config: keys, defaults, and file:line for each mistake.
class TelegramConfig : public ::testing::Test {
 protected:
  TempDir dir_;
  std::string path_ = dir_ / "t.toml";

  Result<app::Config> Load(const std::string& text) {
    WriteFile(path_, text);
    std::filesystem::permissions(path_, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
    return app::LoadConfigFile(path_);
  }
  // The error for `text`, which must name the file and `line` and hold `part`, never the token.
  void ExpectError(const std::string& text, int line, const std::string& part) {
    Result<app::Config> c = Load(text);
    ASSERT_FALSE(c.ok()) << text;
    const std::string& e = c.status().message();
    EXPECT_NE(e.find(path_ + ":" + std::to_string(line) + ": "), std::string::npos) << e;
    EXPECT_NE(e.find(part), std::string::npos) << e;
    EXPECT_EQ(e.find("AAHdq"), std::string::npos) << e;
    EXPECT_EQ(e.find("AAH dq"), std::string::npos) << e;
  }
};

constexpr const char* kChannel = "[[notify.channel]]\nname = \"t\"\ntype = \"telegram\"\n";

TEST_F(TelegramConfig, TakesATokenFromTheEnvironmentAndAChatIdAsANumber) {
  setenv("TW_TEST_TG_TOKEN", kToken, 1);
  Result<app::Config> c = Load(std::string(kChannel) + "bot_token_env = \"TW_TEST_TG_TOKEN\"\nchat_id = -1001234567890\n"
                               "[[notify.channel]]\nname = \"u\"\ntype = \"telegram\"\nbot_token_env = \"TW_TEST_TG_TOKEN\"\n"
                               "chat_id = \"@trainwatch_alerts\"\napi_url = \"http://127.0.0.1:8081\"\n");
  unsetenv("TW_TEST_TG_TOKEN");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  ASSERT_EQ(c->channels.size(), 2u);
  const notify::ChannelConfig& t = c->channels[0];
  EXPECT_EQ(t.secret, kToken);
  EXPECT_EQ(t.chat_id, "-1001234567890");
  EXPECT_EQ(t.url, "https://api.telegram.org");
  EXPECT_EQ(t.min_interval_seconds, 3.0);  // 20 messages a minute to a group
  EXPECT_FALSE(t.send_resolved);            // people's defaults, as Slack's
  EXPECT_EQ(t.group_by, std::vector<std::string>{"run"});
  EXPECT_EQ(t.min_severity, diagnose::Severity::kWarning);
  EXPECT_EQ(c->channels[1].chat_id, "@trainwatch_alerts");
  EXPECT_EQ(c->channels[1].url, "http://127.0.0.1:8081");
}

TEST_F(TelegramConfig, MistakesNameTheFileAndLine) {
  const std::string token = std::string("bot_token = \"") + kToken + "\"\n";
  ExpectError(std::string(kChannel) + token, 1, "channel 't' needs chat_id");
  ExpectError(std::string(kChannel) + "chat_id = 5\n", 1, "channel 't' needs bot_token, bot_token_env or bot_token_credential");
  ExpectError(std::string(kChannel) + token + "chat_id = 5\napi_url = \"ftp://api.example\"\n", 1, "channel 't': api_url: ");
  ExpectError(std::string(kChannel) + token + "chat_id = 5\napi_url = 7\n", 6, "api_url must be a string (a URL)");
  ExpectError(std::string(kChannel) + token + "chat_id = true\n", 5, "chat_id must be a string or an integer");
  ExpectError(std::string(kChannel) + token + "chat_id = \"general chat\"\n", 1, "chat_id must be a chat's number");
  ExpectError(std::string(kChannel) + token + "chat_id = 5\nurl = \"https://x/\"\n", 6,
              "channel 't': 'url' does not apply to a telegram channel");
  ExpectError(std::string(kChannel) + token + "chat_id = 5\nsecret = \"x\"\n", 6, "'secret' does not apply");
  ExpectError(std::string(kChannel) + "bot_token = \"123:AAH dq\"\nchat_id = 5\n", 1, "bot_token is not a bot token");
  Result<app::Config> twice = Load(std::string(kChannel) + token + "bot_token_env = \"X\"\nchat_id = 5\n");
  ASSERT_FALSE(twice.ok());
  EXPECT_NE(twice.status().message().find(path_ + ": channel 't' (line 1): give only one of bot_token, bot_token_env, "
                                          "bot_token_credential"),
            std::string::npos)
      << twice.status().message();
  ExpectError("[[notify.channel]]\nname = \"s\"\ntype = \"slack\"\nurl = \"http://h/x\"\nchat_id = 5\n", 5,
              "'chat_id' does not apply to a slack channel");
}

TEST_F(TelegramConfig, ATokenInAFileOthersCanReadIsRefused) {
  WriteFile(path_, std::string(kChannel) + "bot_token = \"" + kToken + "\"\nchat_id = 5\n");
  std::filesystem::permissions(path_, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write |
                                          std::filesystem::perms::others_read);
  Result<app::Config> c = app::LoadConfigFile(path_);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("bot token"), std::string::npos) << c.status().message();
  EXPECT_EQ(c.status().message().find("AAHdq"), std::string::npos) << c.status().message();
}

}  // namespace
}  // namespace tw
