#include "notify/chat_channels.h"

#include <algorithm>
#include <cctype>

#include "base/json.h"
#include "notify/group.h"
#include "notify/render.h"

namespace tw::notify {

namespace {

bool Resolved(const Notification& n) { return n.event == "finding.resolved"; }

// Discord embed colours (decimal RGB): resolved green, else by severity.
int Colour(const Notification& n) {
  if (Resolved(n)) return 0x2EB67D;
  switch (n.level()) {
    case diagnose::Severity::kCritical: return 0xE01E5A;
    case diagnose::Severity::kWarning: return 0xECB22E;
    case diagnose::Severity::kInfo: break;
  }
  return 0x36C5F0;
}

std::string Headline(const Notification& n) {
  return (Resolved(n) ? "RESOLVED " : AsciiUpper(n.severity) + " ") + n.rule + " on " + n.run +
         (n.event == "finding.repeat" ? " (still firing)" : "");
}

std::string Steps(const Notification& n) {
  if (!n.first_step) return "";
  return std::to_string(*n.first_step) + (n.last_step ? ".." + std::to_string(*n.last_step) : "");
}

// `fields_budget`: characters for all fields' names and values together (Discord counts
// them into its 6,000 per message).
Json Embed(const Notification& n, const std::string& link, size_t title_max, size_t body_max,
           size_t fields_max, size_t fields_budget = 0) {
  std::string body = n.message;
  if (!n.sparkline.empty()) body += "\n```\n" + n.sparkline + "\n```";
  if (!Resolved(n)) {
    if (!n.cause.empty()) body += "\n**Cause:** " + n.cause;
    if (!n.fix.empty()) body += "\n**Fix:** " + n.fix;
  }
  Json e;
  e.Str("title", TruncateUtf8(n.title.empty() ? n.rule : n.title, title_max))
      .Str("description", TruncateUtf8(body, body_max))
      .Num("color", Colour(n));
  if (!link.empty()) e.Str("url", link);
  if (fields_max > 0) {
    Json fields = Json::Array();
    size_t left = fields_budget;
    auto field = [&](const std::string& name, const std::string& value) {
      if (value.empty() || left < 32) return;  // no room for a useful field
      const std::string k = TruncateUtf8(name, std::min<size_t>(256, left / 4));
      const std::string v = TruncateUtf8(value, std::min<size_t>(1024, left - k.size()));
      left -= std::min(left, k.size() + v.size());
      fields.Push(Json().Str("name", k).Str("value", v).Bool("inline", true));
    };
    field("run", n.run);
    field("series", n.series);
    field("steps", Steps(n));
    for (const auto& [k, v] : EvidenceItems(n, fields_max > 3 ? fields_max - 3 : 0)) field(k, v);
    e.Nested("fields", fields);
  }
  return e;
}

// Nothing in a finding may ping anyone.
Json NoMentions() { return Json().Raw("parse", "[]"); }

std::string RawStrings(const std::vector<std::string>& v) {
  std::string out = "[";
  for (size_t i = 0; i < v.size(); ++i) out += (i ? "," : "") + JsonQuote(v[i]);
  return out + "]";
}

}  // namespace

std::string DiscordMessage(const Notification& n, const std::string& link) {
  // Within 6,000 characters in all: a headline of 200, one embed of 256 + 3,000 + fields of
  // 2,500 together.
  Json m;
  m.Str("content", TruncateUtf8(Headline(n), 200));
  m.Nested("embeds", Json::Array().Push(Embed(n, link, 256, 3000, 12, 2500)));
  m.Nested("allowed_mentions", NoMentions());
  return m.str();
}

std::string DiscordGroupMessage(const Group& g, std::string_view link_template) {
  // Ten embeds at most (Discord's limit), each small enough that ten fit in 6,000 characters.
  constexpr size_t kMaxEmbeds = 10;
  Json embeds = Json::Array();
  for (size_t i = 0; i < g.items.size() && i < kMaxEmbeds; ++i) {
    const Notification& n = g.items[i];
    Json e = Embed(n, ExpandLinkTemplate(link_template, n), 150, 380, 0);
    embeds.Push(e);
  }
  std::string content = GroupTitle(g) + "\n" + GroupSummary(g);
  if (g.items.size() > kMaxEmbeds)
    content += "\n…and " + std::to_string(g.items.size() - kMaxEmbeds) + " more";
  Json m;
  m.Str("content", TruncateUtf8(content, 1000));
  m.Nested("embeds", embeds);
  m.Nested("allowed_mentions", NoMentions());
  return m.str();
}

SendResult JudgeDiscord(const Result<HttpResponse>& r, double now) {
  // Discord answers 204 (200 with ?wait=true); 429 carries Retry-After; 400 (a payload it
  // refuses), 401/403 (a bad token), 404 (a deleted webhook) never get better.
  return JudgeWebhook(r, now);
}

std::string NtfyMessage(const Notification& n, const std::string& topic, const std::string& link) {
  std::string body = n.message;
  if (!n.sparkline.empty()) body += "\n" + n.sparkline;
  if (!Resolved(n) && !n.fix.empty()) body += "\nFix: " + n.fix;
  const int priority = Resolved(n) ? 3
                       : n.level() == diagnose::Severity::kCritical ? 5
                       : n.level() == diagnose::Severity::kWarning  ? 4
                                                                     : 3;
  const char* emoji = Resolved(n) ? "white_check_mark"
                      : n.level() == diagnose::Severity::kCritical ? "rotating_light"
                      : n.level() == diagnose::Severity::kWarning  ? "warning"
                                                                    : "information_source";
  Json m;
  m.Str("topic", topic).Str("title", TruncateUtf8(Headline(n), 250)).Str("message", TruncateUtf8(body, 3900));
  m.Num("priority", priority).Raw("tags", RawStrings({emoji, n.rule}));
  if (!link.empty()) m.Str("click", link);
  return m.str();
}

std::string NtfyGroupMessage(const Group& g, const std::string& topic) {
  std::string body = GroupSummary(g, "\n");
  for (const auto& n : g.items) body += "\n• " + Headline(n) + ": " + n.message;
  bool critical = false;
  for (const auto& n : g.items) critical |= !Resolved(n) && n.level() == diagnose::Severity::kCritical;
  Json m;
  m.Str("topic", topic).Str("title", TruncateUtf8(GroupTitle(g), 250)).Str("message", TruncateUtf8(body, 3900));
  m.Num("priority", critical ? 5 : 4).Raw("tags", RawStrings({critical ? "rotating_light" : "warning"}));
  return m.str();
}

namespace {

class DiscordChannel : public Channel {
 public:
  DiscordChannel(ChannelConfig c, Url url) : Channel(std::move(c)), url_(std::move(url)) {}
  SendResult DoSend(const Notification& n, const std::string&, double now) override {
    return Post(DiscordMessage(n, ExpandLinkTemplate(config().link_template, n)), now);
  }
  SendResult DoSendGroup(const Group& g, const std::string&, double now) override {
    return Post(DiscordGroupMessage(g, config().link_template), now);
  }

 private:
  SendResult Post(const std::string& body, double now) {
    return JudgeDiscord(HttpPost(url_, {{"Content-Type", "application/json"}}, body, config().http), now);
  }
  Url url_;
};

class NtfyChannel : public Channel {
 public:
  NtfyChannel(ChannelConfig c, Url root, std::string topic)
      : Channel(std::move(c)), root_(std::move(root)), topic_(std::move(topic)) {}
  SendResult DoSend(const Notification& n, const std::string&, double now) override {
    return Post(NtfyMessage(n, topic_, ExpandLinkTemplate(config().link_template, n)), now);
  }
  SendResult DoSendGroup(const Group& g, const std::string&, double now) override {
    return Post(NtfyGroupMessage(g, topic_), now);
  }

 private:
  SendResult Post(const std::string& body, double now) {
    Headers h = {{"Content-Type", "application/json"}};
    if (!config().secret.empty()) h.push_back({"Authorization", "Bearer " + config().secret});
    return JudgeWebhook(HttpPost(root_, h, body, config().http), now);
  }
  Url root_;
  std::string topic_;
};

}  // namespace

Result<std::unique_ptr<Channel>> MakeDiscordChannel(const ChannelConfig& c) {
  Result<Url> url = ChannelUrl(c);
  if (!url.ok()) return url.status();
  return std::unique_ptr<Channel>(new DiscordChannel(c, *url));
}

namespace {

// https://ntfy.sh/alerts: the topic is the path ("" for none, or for more than one segment).
std::string NtfyTopic(const Url& url) {
  std::string topic = url.target.substr(1);
  topic.resize(std::min(topic.find_first_of("?#"), topic.size()));
  return topic.find('/') == std::string::npos ? topic : "";
}

}  // namespace

Result<std::unique_ptr<Channel>> MakeNtfyChannel(const ChannelConfig& c) {
  Result<Url> url = ChannelUrl(c);
  if (!url.ok()) return url.status();
  const std::string topic = NtfyTopic(*url);
  if (topic.empty())
    return InvalidArgument("channel '" + c.name + "': an ntfy url is the server and one topic, "
                           "https://ntfy.sh/<topic>");
  Url root = *url;  // JSON is published to the server's root
  root.target = "/";
  return std::unique_ptr<Channel>(new NtfyChannel(c, root, topic));
}

std::vector<std::string> NtfySecrets(const ChannelConfig& c) {
  Result<Url> u = ParseUrl(c.url);
  if (!u.ok()) return {};
  std::string topic = u->target.substr(1);  // whatever the path holds, even where it is not one topic
  topic.resize(std::min(topic.find_first_of("?#"), topic.size()));
  return {topic};
}

}  // namespace tw::notify
