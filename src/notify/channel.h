// Channels: where notifications go (chat, webhooks, paging, mail, the console; the types are
// listed once, in channel_types.h), with the filters that route findings to them. A channel
// sends one message and judges the receiver's answer: sent, retry (when, if the receiver said),
// or a permanent failure that retrying cannot fix (a deleted Slack webhook, a rejected payload).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "notify/group.h"
#include "notify/http_client.h"
#include "notify/notification.h"

namespace tw::notify {

struct ChannelConfig {
  std::string name;
  std::string type;    // a name in ChannelTypes() (channel_types.h)
  // Where it posts: a webhook's URL (a secret: never logged whole), or a public API endpoint
  // (SendGrid's, PagerDuty's, Telegram's api_url), as the type's table entry says.
  std::string url;
  // The type's credential: a webhook signing secret (Standard Webhooks; "" = unsigned), an ntfy
  // access token, a SendGrid API key, a Telegram bot token, a PagerDuty routing key.
  std::string secret;
  std::string chat_id;  // telegram: a chat's number (-1001234567890) or a channel's @username
  // Email: the SMTP server (email), the sender and recipients (email, sendgrid).
  std::string smtp_host;
  int smtp_port = 0;             // 0: the tls setting's port (587, 465 or 25)
  std::string tls = "starttls";  // starttls, tls (implicit, port 465) or none
  std::string username;          // "" = no AUTH
  std::string password;          // a secret
  std::string from;              // "alerts@example.com" or "Name <alerts@example.com>"
  std::vector<std::string> to;
  // Routing.
  diagnose::Severity min_severity = diagnose::Severity::kWarning;
  std::vector<std::string> rules;     // rule ids; empty = all
  std::vector<std::string> runs;      // run name globs; empty = all
  bool send_resolved = false;
  // The run events it gets (RunEventTypes()): run.finished and run.crashed unless it says; a
  // PagerDuty channel none (a run that ends is no page). min_severity and rules do not apply
  // to them; runs does.
  std::vector<std::string> events = {"run.finished", "run.crashed"};
  // Delivery.
  double min_interval_seconds = 1.0;  // rate limit: at most one message per this
  std::string link_template;          // see ExpandLinkTemplate
  HttpOptions http;  // email uses its timeout (whole SMTP session), ca_file and proxy too
  // Grouping (docs/notifications.md), done by the Deliverer from the outbox at send time.
  std::vector<std::string> group_by = {"run"};  // "run", "rule"; empty: no grouping, one message each
  double group_wait_seconds = 30;               // a new group waits this long for related changes
  double group_interval_seconds = 300;          // a group's next message at most this often
  double repeat_interval_seconds = 4 * 3600;    // a finding still firing is repeated; 0: never
  double digest_minutes = 0;                    // > 0: one summary message per this period, all groups

  // The defaults of a type, from its entry in ChannelTypes() (channel_types.cc, where each is
  // explained): resolutions, rate limit, timeout, endpoint, minimum severity, and grouping by
  // run with repeats for the channels people read, or none for machine receivers and the log.
  static ChannelConfig Defaults(const std::string& name, const std::string& type);
  bool operator==(const ChannelConfig&) const = default;
};

// Whether a notification goes to this channel: a finding's by min_severity, rules and runs; a
// run event's by events and runs.
bool Routes(const ChannelConfig& c, const Notification& n);

struct SendResult {
  enum class Kind { kSent, kRetry, kPermanent };
  Kind kind = Kind::kRetry;
  int http_status = 0;        // the HTTP status, or an SMTP reply's code; 0: no answer
  double retry_after = -1;    // seconds the receiver asked us to wait; -1: not said
  std::string detail;         // what happened, for logs and `trainwatch status` (no secrets)
};

class Channel {
 public:
  explicit Channel(ChannelConfig c);
  virtual ~Channel() = default;
  const ChannelConfig& config() const { return config_; }
  // Sends one message. `message_id` is the outbox's idempotency key; `now` is unix seconds.
  // The result's detail has every secret of the channel scrubbed (secrets.h): whatever the
  // receiver answered, it is fit for logs, the outbox and `trainwatch status`.
  SendResult Send(const Notification& n, const std::string& message_id, double now);
  // Sends a group of two or more notifications as one message (a group of one goes through
  // Send, looking exactly like an ungrouped message). `message_id` is the group send's key.
  SendResult SendGroup(const Group& g, const std::string& message_id, double now);

 protected:
  // What each type of channel does; Send and SendGroup scrub what these return.
  virtual SendResult DoSend(const Notification& n, const std::string& message_id, double now) = 0;
  virtual SendResult DoSendGroup(const Group& g, const std::string& message_id, double now) = 0;

 private:
  SendResult Scrubbed(SendResult r) const;

  ChannelConfig config_;
  std::vector<std::string> secrets_;  // ChannelSecrets(config_)
};

// Builds a channel of its type, checking what it needs ("channel 'NAME': ..." otherwise).
Result<std::unique_ptr<Channel>> MakeChannel(const ChannelConfig& c);
// The channel's url parsed, or why not ("channel 'NAME': no url", "channel 'NAME': <why>"):
// the check each type that posts to its url makes when it is built.
Result<Url> ChannelUrl(const ChannelConfig& c);

// Where a channel sends, for people: a redacted URL (an ntfy topic hidden too: it is the
// channel's secret), "smtp://host:port", a Telegram chat, or "" (console).
std::string Destination(const ChannelConfig& c);

// Judging answers (exposed for tests). Retry-After is seconds or an HTTP date.
SendResult JudgeSlack(const Result<HttpResponse>& r, double now);
SendResult JudgeWebhook(const Result<HttpResponse>& r, double now);
// How an HTTP receiver's answer is judged, the same for every HTTP channel but these choices:
// 2xx sent (or 200 only); 408, 429, 5xx and `retry_also` retried after Retry-After (a 429 that
// says nothing waits `unsaid_429_wait`; -1: backoff); any other answer permanent. A failure
// with no answer is retried.
struct HttpJudgement {
  bool sent_only_200 = false;
  std::vector<int> retry_also;
  double unsaid_429_wait = -1;
};
SendResult JudgeHttp(const Result<HttpResponse>& r, double now, const HttpJudgement& how = {});
double ParseRetryAfter(const std::string& value, double now);  // -1 when absent or unreadable

}  // namespace tw::notify
