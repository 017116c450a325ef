#include "notify/core_channels.h"

#include <iostream>

#include "notify/render.h"

namespace tw::notify {

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
    return Post(n.payload.empty() ? ToPayload(n) : n.payload, message_id, now);
  }
  SendResult DoSendGroup(const Group& g, const std::string& message_id, double now) override {
    return Post(GroupPayload(g, config().name, now, config().link_template), message_id, now);
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

Result<std::unique_ptr<Channel>> MakeSlackChannel(const ChannelConfig& c) {
  Result<Url> url = ChannelUrl(c);
  if (!url.ok()) return url.status();
  return std::unique_ptr<Channel>(new SlackChannel(c, *url));
}

Result<std::unique_ptr<Channel>> MakeWebhookChannel(const ChannelConfig& c) {
  Result<Url> url = ChannelUrl(c);
  if (!url.ok()) return url.status();
  return std::unique_ptr<Channel>(new WebhookChannel(c, *url));
}

Result<std::unique_ptr<Channel>> MakeConsoleChannel(const ChannelConfig& c) {
  return std::unique_ptr<Channel>(new ConsoleChannel(c));
}

}  // namespace tw::notify
