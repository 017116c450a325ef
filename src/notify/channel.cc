#include "notify/channel.h"

#include <fnmatch.h>

#include <algorithm>

#include <ctime>
#include <iostream>

#include "notify/chat_channels.h"
#include "notify/email_channel.h"
#include "notify/render.h"
#include "notify/secrets.h"

namespace tw::notify {

ChannelConfig ChannelConfig::Defaults(const std::string& name, const std::string& type) {
  ChannelConfig c;
  c.name = name;
  c.type = type;
  const bool email = type == "email" || type == "sendgrid";
  // Chat and mail are for people: resolutions off by default; machines (webhook) want them.
  const bool chat = type == "slack" || type == "discord" || type == "ntfy";
  c.send_resolved = !chat && !email;
  // Slack takes about one message a second per webhook; Discord five per two seconds.
  c.min_interval_seconds = type == "slack" || type == "discord" ? 1.0 : email ? 10.0 : 0.0;
  if (type == "email") c.http.timeout_seconds = 30;
  if (type == "sendgrid") c.url = kSendGridUrl;
  if (type == "webhook" || type == "console") {
    c.group_by.clear();
    c.repeat_interval_seconds = 0;
  }
  return c;
}

Channel::Channel(ChannelConfig c) : config_(std::move(c)), secrets_(ChannelSecrets(config_)) {}

SendResult Channel::Send(const Notification& n, const std::string& message_id, double now) {
  return Scrubbed(DoSend(n, message_id, now));
}

SendResult Channel::SendGroup(const Group& g, const std::string& message_id, double now) {
  return Scrubbed(DoSendGroup(g, message_id, now));
}

SendResult Channel::Scrubbed(SendResult r) const {
  r.detail = ScrubSecrets(std::move(r.detail), secrets_);
  return r;
}

bool Routes(const ChannelConfig& c, const Notification& n) {
  if (n.event == "test") return true;
  if (n.event == "finding.resolved" && !c.send_resolved) return false;
  if (n.level() < c.min_severity) return false;
  if (!c.rules.empty() && std::find(c.rules.begin(), c.rules.end(), n.rule) == c.rules.end()) return false;
  if (c.runs.empty()) return true;
  for (const auto& g : c.runs)
    if (fnmatch(g.c_str(), n.run.c_str(), 0) == 0) return true;
  return false;
}

double ParseRetryAfter(const std::string& value, double now) {
  if (value.empty()) return -1;
  char* end = nullptr;
  const double secs = std::strtod(value.c_str(), &end);
  if (end && *end == '\0' && secs >= 0) return secs;
  std::tm tm{};  // an HTTP date: "Wed, 21 Oct 2015 07:28:00 GMT"
  if (strptime(value.c_str(), "%a, %d %b %Y %H:%M:%S GMT", &tm)) return std::max(0.0, static_cast<double>(timegm(&tm)) - now);
  return -1;
}

namespace {

SendResult Failure(const Status& st) {
  return {SendResult::Kind::kRetry, 0, -1, st.message()};
}

std::string Snippet(const std::string& body) { return TruncateUtf8(body, 200); }

}  // namespace

SendResult JudgeSlack(const Result<HttpResponse>& r, double now) {
  if (!r.ok()) return Failure(r.status());
  const HttpResponse& h = *r;
  SendResult s;
  s.http_status = h.status;
  s.detail = "HTTP " + std::to_string(h.status) + " " + Snippet(h.body);
  if (h.status == 200) {
    s.kind = SendResult::Kind::kSent;
  } else if (h.status == 429 || h.status >= 500 || h.status == 408) {
    s.kind = SendResult::Kind::kRetry;
    s.retry_after = ParseRetryAfter(h.Header("retry-after"), now);
  } else {
    // 400 invalid_payload, 403 action_prohibited, 404 channel_not_found, 410
    // channel_is_archived...: the same message will never be accepted.
    s.kind = SendResult::Kind::kPermanent;
  }
  return s;
}

SendResult JudgeWebhook(const Result<HttpResponse>& r, double now) {
  if (!r.ok()) return Failure(r.status());
  const HttpResponse& h = *r;
  SendResult s;
  s.http_status = h.status;
  s.detail = "HTTP " + std::to_string(h.status) + " " + Snippet(h.body);
  if (h.status >= 200 && h.status < 300) {
    s.kind = SendResult::Kind::kSent;
  } else if (h.status == 429 || h.status == 408 || h.status == 409 || h.status >= 500) {
    s.kind = SendResult::Kind::kRetry;
    s.retry_after = ParseRetryAfter(h.Header("retry-after"), now);
  } else {
    s.kind = SendResult::Kind::kPermanent;
  }
  return s;
}

namespace {

class ConsoleChannel : public Channel {
 public:
  using Channel::Channel;
  SendResult DoSend(const Notification& n, const std::string&, double) override {
    std::cout << ConsoleLine(n) << std::endl;
    return {SendResult::Kind::kSent, 0, -1, "printed"};
  }
  SendResult DoSendGroup(const Group& g, const std::string&, double) override {
    for (const Notification& n : g.items) std::cout << ConsoleLine(n) << "\n";
    std::cout << std::flush;
    return {SendResult::Kind::kSent, 0, -1, "printed"};
  }
};

class SlackChannel : public Channel {
 public:
  SlackChannel(ChannelConfig c, Url url) : Channel(std::move(c)), url_(std::move(url)) {}
  SendResult DoSend(const Notification& n, const std::string&, double now) override {
    return Post(SlackMessage(n, ExpandLinkTemplate(config().link_template, n)), now);
  }
  SendResult DoSendGroup(const Group& g, const std::string&, double now) override {
    return Post(SlackGroupMessage(g, config().link_template), now);
  }

 private:
  SendResult Post(const std::string& body, double now) {
    return JudgeSlack(HttpPost(url_, {{"Content-Type", "application/json; charset=utf-8"}}, body,
                               config().http),
                      now);
  }

  Url url_;
};

class WebhookChannel : public Channel {
 public:
  WebhookChannel(ChannelConfig c, Url url) : Channel(std::move(c)), url_(std::move(url)) {}
  SendResult DoSend(const Notification& n, const std::string& message_id, double now) override {
    return Post(ToPayload(n), message_id, now);
  }
  SendResult DoSendGroup(const Group& g, const std::string& message_id, double now) override {
    return Post(GroupPayload(g, config().name, now), message_id, now);
  }

 private:
  SendResult Post(const std::string& body, const std::string& message_id, double now) {
    const int64_t ts = static_cast<int64_t>(now);
    Headers h = {{"Content-Type", "application/json"},
                 {"webhook-id", message_id},
                 {"webhook-timestamp", std::to_string(ts)}};
    if (!config().secret.empty())
      h.push_back({"webhook-signature", WebhookSignature(config().secret, message_id, ts, body)});
    return JudgeWebhook(HttpPost(url_, h, body, config().http), now);
  }

  Url url_;
};

}  // namespace

Result<std::unique_ptr<Channel>> MakeChannel(const ChannelConfig& c) {
  if (c.type == "console") return std::unique_ptr<Channel>(new ConsoleChannel(c));
  if (c.type == "email") return MakeEmailChannel(c);
  if (c.type == "sendgrid") return MakeSendGridChannel(c);
  if (c.type == "discord") return MakeDiscordChannel(c);
  if (c.type == "ntfy") return MakeNtfyChannel(c);
  if (c.type != "slack" && c.type != "webhook")
    return InvalidArgument("channel '" + c.name + "': unknown type '" + c.type +
                           "' (expected slack, webhook, discord, ntfy, email, sendgrid or console)");
  if (c.url.empty()) return InvalidArgument("channel '" + c.name + "': no url");
  Result<Url> url = ParseUrl(c.url);
  if (!url.ok()) return InvalidArgument("channel '" + c.name + "': " + url.status().message());
  if (c.type == "slack") return std::unique_ptr<Channel>(new SlackChannel(c, *url));
  return std::unique_ptr<Channel>(new WebhookChannel(c, *url));
}

std::string Destination(const ChannelConfig& c) {
  if (c.type == "email") {
    SmtpServer s;
    s.host = c.smtp_host;
    s.port = c.smtp_port ? static_cast<uint16_t>(c.smtp_port) : DefaultSmtpPort(c.tls);
    s.security = c.tls == "tls" ? SmtpSecurity::kTls : SmtpSecurity::kStartTls;
    return SmtpLabel(s);
  }
  if (c.url.empty()) return "";
  return ScrubSecrets(RedactUrl(c.url), ChannelSecrets(c));  // an ntfy topic is in the first segment
}

}  // namespace tw::notify
