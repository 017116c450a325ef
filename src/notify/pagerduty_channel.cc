#include "notify/pagerduty_channel.h"

#include <cstdio>
#include <ctime>

#include "base/json.h"
#include "notify/render.h"

namespace tw::notify {

namespace {

constexpr size_t kDedupKeyMax = 255;
constexpr size_t kSummaryMax = 1024;
constexpr size_t kDetailMax = 4000;       // each text in custom_details
constexpr size_t kEvidenceMax = 16 << 10;  // a rule's evidence, whole, up to this

bool Resolved(const Notification& n) { return n.event == "finding.resolved"; }

// FNV-1a, 64 bits: stable across builds and machines, as a dedup key must be.
uint64_t Fnv1a(std::string_view s) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

std::string Iso8601(double unix_seconds) {
  const std::time_t t = static_cast<std::time_t>(unix_seconds);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string Summary(const Notification& n, bool test) {
  return std::string(test ? "[trainwatch test] " : "") + AsciiUpper(n.severity) +
         (n.event == "finding.repeat" ? " (still firing)" : n.event == "finding.escalated" ? " (escalated)" : "") +
         ": " + (n.title.empty() ? n.rule : n.title) + " on " + n.run +
         (n.series.empty() ? "" : " (" + n.series + ")") + ": " + n.message;
}

Json Details(const Notification& n) {
  Json d;
  d.Str("event", n.event).Str("rule", n.rule).Str("run", n.run);
  if (!n.series.empty()) d.Str("series", n.series);
  d.Str("message", TruncateUtf8(n.message, kDetailMax));
  if (!n.cause.empty()) d.Str("likely cause", TruncateUtf8(n.cause, kDetailMax));
  if (!n.fix.empty()) d.Str("what to do", TruncateUtf8(n.fix, kDetailMax));
  if (n.onset_step) d.Num("onset step", static_cast<double>(*n.onset_step));
  if (n.first_step && n.last_step)
    d.Str("steps", std::to_string(*n.first_step) + ".." + std::to_string(*n.last_step));
  if (n.evidence.size() <= kEvidenceMax) d.Raw("evidence", n.evidence.empty() ? "{}" : n.evidence);
  else d.Str("evidence", TruncateUtf8(n.evidence, kEvidenceMax));  // its text, cut
  if (!n.sparkline.empty()) d.Str("recent curve", n.sparkline);
  return d;
}

}  // namespace

std::string PagerDutyDedupKey(const Notification& n) {
  std::string key = "trainwatch/" + n.rule + "/" + n.run + (n.series.empty() ? "" : "/" + n.series);
  if (key.size() <= kDedupKeyMax) return key;
  char hash[20];
  std::snprintf(hash, sizeof hash, "#%016llx", static_cast<unsigned long long>(Fnv1a(key)));
  size_t cut = kDedupKeyMax - 17;
  while (cut > 0 && (static_cast<unsigned char>(key[cut]) & 0xC0) == 0x80) cut--;  // whole characters
  return key.substr(0, cut) + hash;
}

std::string PagerDutyEvent(const Notification& n, const std::string& routing_key, const std::string& link, bool test) {
  if (Resolved(n)) return PagerDutyResolve(n, routing_key);
  const diagnose::Severity level = n.level();
  const char* severity = test ? "info"
                         : level == diagnose::Severity::kCritical ? "critical"
                         : level == diagnose::Severity::kWarning  ? "warning"
                                                                   : "info";
  Json payload;
  payload.Str("summary", TruncateUtf8(Summary(n, test), kSummaryMax))
      .Str("source", n.run.empty() ? "trainwatch" : n.run)
      .Str("severity", severity)
      .Str("timestamp", Iso8601(n.time))
      .Str("class", n.rule);
  if (!n.series.empty()) payload.Str("component", n.series);
  payload.Nested("custom_details", Details(n));
  Json e;
  e.Str("routing_key", routing_key).Str("event_action", "trigger").Str("dedup_key", PagerDutyDedupKey(n))
      .Nested("payload", payload).Str("client", "trainwatch");
  if (!link.empty()) {
    Json l;
    l.Str("href", link).Str("text", "Open the run");
    e.Nested("links", Json::Array().Push(l));
  }
  return e.str();
}

std::string PagerDutyResolve(const Notification& n, const std::string& routing_key) {
  Json e;
  e.Str("routing_key", routing_key).Str("event_action", "resolve").Str("dedup_key", PagerDutyDedupKey(n));
  return e.str();
}

SendResult JudgePagerDuty(const Result<HttpResponse>& r, double now) {
  // A 429 without Retry-After: PagerDuty asks for about 30 s between retries.
  HttpJudgement how;
  how.unsaid_429_wait = 30;
  return JudgeHttp(r, now, how);
}

namespace {

class PagerDutyChannel : public Channel {
 public:
  PagerDutyChannel(ChannelConfig c, Url url) : Channel(std::move(c)), url_(std::move(url)) {}

  SendResult DoSend(const Notification& n, const std::string&, double now) override {
    const bool test = n.event == "test";
    SendResult r = Post(PagerDutyEvent(n, config().secret, ExpandLinkTemplate(config().link_template, n), test), now);
    if (!test || r.kind != SendResult::Kind::kSent) return r;
    return Post(PagerDutyResolve(n, config().secret), now);
  }
  // Grouping is refused in the config (each finding is its own alert); a group handed here all
  // the same goes as one event per change, in order, stopping at the first that fails. Its
  // retry sends them all again: a trigger or resolve repeated under the same dedup_key changes
  // nothing in PagerDuty.
  SendResult DoSendGroup(const Group& g, const std::string& message_id, double now) override {
    SendResult last{SendResult::Kind::kSent, 0, -1, "empty group"};
    for (const Notification& n : g.items) {
      last = DoSend(n, message_id, now);
      if (last.kind != SendResult::Kind::kSent) return last;
    }
    return last;
  }

 private:
  SendResult Post(const std::string& body, double now) {
    return JudgePagerDuty(HttpPost(url_, {{"Content-Type", "application/json"}}, body, config().http), now);
  }
  Url url_;
};

}  // namespace

Result<std::unique_ptr<Channel>> MakePagerDutyChannel(const ChannelConfig& c) {
  const std::string where = "channel '" + c.name + "': ";
  if (c.secret.empty()) return InvalidArgument(where + "needs routing_key, routing_key_env or routing_key_credential");
  Result<Url> url = ChannelUrl(c);
  if (!url.ok()) return url.status();
  return std::unique_ptr<Channel>(new PagerDutyChannel(c, *url));
}

}  // namespace tw::notify
