// Channels: where notifications go (Slack incoming webhooks, generic signed JSON webhooks, the
// console), with the filters that route findings to them. A channel sends one message and
// judges the receiver's answer: sent, retry (when, if the receiver said), or a permanent
// failure that retrying cannot fix (a deleted Slack webhook, a rejected payload).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "notify/http_client.h"
#include "notify/notification.h"

namespace tw::notify {

struct ChannelConfig {
  std::string name;
  std::string type;    // slack, webhook, console
  std::string url;     // slack, webhook (a secret: never logged whole)
  std::string secret;  // webhook signing secret (Standard Webhooks); "" = unsigned
  // Routing.
  diagnose::Severity min_severity = diagnose::Severity::kWarning;
  std::vector<std::string> rules;     // rule ids; empty = all
  std::vector<std::string> runs;      // run name globs; empty = all
  bool send_resolved = false;
  // Delivery.
  double min_interval_seconds = 1.0;  // rate limit: at most one message per this
  std::string link_template;          // see ExpandLinkTemplate
  HttpOptions http;

  // The defaults per type: resolved messages on for webhooks and the console, off for Slack;
  // Slack at about one message per second (its documented limit), the others unlimited.
  static ChannelConfig Defaults(const std::string& name, const std::string& type);
  bool operator==(const ChannelConfig&) const = default;
};

// Whether a finding's notification goes to this channel.
bool Routes(const ChannelConfig& c, const Notification& n);

struct SendResult {
  enum class Kind { kSent, kRetry, kPermanent };
  Kind kind = Kind::kRetry;
  int http_status = 0;        // 0: no HTTP answer
  double retry_after = -1;    // seconds the receiver asked us to wait; -1: not said
  std::string detail;         // what happened, for logs and `trainwatch status` (no secrets)
};

class Channel {
 public:
  explicit Channel(ChannelConfig c) : config_(std::move(c)) {}
  virtual ~Channel() = default;
  const ChannelConfig& config() const { return config_; }
  // Sends one message. `message_id` is the outbox's idempotency key; `now` is unix seconds.
  virtual SendResult Send(const Notification& n, const std::string& message_id, double now) = 0;

 private:
  ChannelConfig config_;
};

Result<std::unique_ptr<Channel>> MakeChannel(const ChannelConfig& c);

// Judging answers (exposed for tests). Retry-After is seconds or an HTTP date.
SendResult JudgeSlack(const Result<HttpResponse>& r, double now);
SendResult JudgeWebhook(const Result<HttpResponse>& r, double now);
double ParseRetryAfter(const std::string& value, double now);  // -1 when absent or unreadable

}  // namespace tw::notify
