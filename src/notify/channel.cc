#include "notify/channel.h"

#include <fnmatch.h>

#include <algorithm>

#include <ctime>

#include "notify/channel_types.h"
#include "notify/render.h"
#include "notify/secrets.h"

namespace tw::notify {

ChannelConfig ChannelConfig::Defaults(const std::string& name, const std::string& type) {
  ChannelConfig c;
  c.name = name;
  c.type = type;
  const ChannelType* t = FindChannelType(type);
  if (!t) return c;  // MakeChannel and the config refuse it, naming the types there are
  c.send_resolved = t->send_resolved;
  c.min_interval_seconds = t->min_interval_seconds;
  c.http.timeout_seconds = t->timeout_seconds;
  c.url = t->url;
  c.min_severity = t->min_severity;
  if (type == "pagerduty") c.events.clear();  // a run that ends pages no one (opt in: events = [...])
  if (!t->for_people) {
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
  if (n.is_run_event()) {
    if (std::find(c.events.begin(), c.events.end(), n.event) == c.events.end()) return false;
  } else {
    if (n.event == "finding.resolved" && !c.send_resolved) return false;
    if (n.level() < c.min_severity) return false;
    if (!c.rules.empty() && std::find(c.rules.begin(), c.rules.end(), n.rule) == c.rules.end()) return false;
  }
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

SendResult JudgeHttp(const Result<HttpResponse>& r, double now, const HttpJudgement& how) {
  if (!r.ok()) return Failure(r.status());
  const HttpResponse& h = *r;
  SendResult s;
  s.http_status = h.status;
  s.detail = "HTTP " + std::to_string(h.status) + " " + Snippet(h.body);
  const bool retry_also = std::find(how.retry_also.begin(), how.retry_also.end(), h.status) != how.retry_also.end();
  if (how.sent_only_200 ? h.status == 200 : h.status >= 200 && h.status < 300) {
    s.kind = SendResult::Kind::kSent;
  } else if (h.status == 429 || h.status == 408 || h.status >= 500 || retry_also) {
    s.kind = SendResult::Kind::kRetry;
    s.retry_after = ParseRetryAfter(h.Header("retry-after"), now);
    if (h.status == 429 && s.retry_after < 0) s.retry_after = how.unsaid_429_wait;
  } else {
    s.kind = SendResult::Kind::kPermanent;
  }
  return s;
}

SendResult JudgeSlack(const Result<HttpResponse>& r, double now) {
  // 400 invalid_payload, 403 action_prohibited, 404 channel_not_found, 410
  // channel_is_archived...: the same message will never be accepted.
  HttpJudgement how;
  how.sent_only_200 = true;
  return JudgeHttp(r, now, how);
}

SendResult JudgeWebhook(const Result<HttpResponse>& r, double now) {
  HttpJudgement how;
  how.retry_also = {409};  // 409: a receiver busy with the same key
  return JudgeHttp(r, now, how);
}

Result<Url> ChannelUrl(const ChannelConfig& c) {
  if (c.url.empty()) return InvalidArgument("channel '" + c.name + "': no url");
  Result<Url> url = ParseUrl(c.url);
  if (!url.ok()) return InvalidArgument("channel '" + c.name + "': " + url.status().message());
  return url;
}

Result<std::unique_ptr<Channel>> MakeChannel(const ChannelConfig& c) {
  const ChannelType* t = FindChannelType(c.type);
  if (!t)
    return InvalidArgument("channel '" + c.name + "': unknown type '" + c.type + "' (expected " +
                           ChannelTypeList() + ")");
  return t->make(c);
}

std::string Destination(const ChannelConfig& c) {
  if (const ChannelType* t = FindChannelType(c.type); t && t->destination) return t->destination(c);
  if (c.url.empty()) return "";
  return ScrubSecrets(RedactUrl(c.url), ChannelSecrets(c));  // an ntfy topic is in the first segment
}

}  // namespace tw::notify
