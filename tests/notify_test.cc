// Notifications: rendering within Slack's limits, Standard Webhooks signatures (the spec's own
// test vector), routing, and delivery through the outbox to a real HTTP server on loopback:
// acceptance, Retry-After, backoff, permanent failures, giving up, rate limits, order, and a
// restart that resumes without sending anything twice. Time is the test's: RunOnce(now).
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <set>
#include <tuple>

#include "notify/channel.h"
#include "notify/deliverer.h"
#include "notify/email.h"
#include "notify/group.h"
#include "notify/outbox.h"
#include "notify/render.h"
#include "store/store.h"
#include "support/http_server.h"
#include "support/store_dump.h"
#include "support/test_env.h"

namespace tw::notify {
namespace {

namespace json = boost::json;
using testing::HttpServer;
using testing::Reply;

Notification Finding(const std::string& rule = "non_finite_loss", const std::string& severity = "critical",
                     const std::string& run = "exp/bert-1") {
  Notification n;
  n.event = "finding.firing";
  n.time = 1000;
  n.finding_id = 7;
  n.rule = rule;
  n.title = "Loss is NaN or infinite";
  n.severity = severity;
  n.state = "firing";
  n.run = run;
  n.series = "Loss/train";
  n.onset_step = 700;
  n.message = "Loss/train is NaN from step 700";
  n.cause = "An overflow";
  n.fix = "Lower the LR";
  n.evidence = R"({"first_step":700,"count":60,"ratio":2.5,"note":"x<y","list":[1,2]})";
  return n;
}

// A notification about finding `finding`, with a message that names it and the event; a
// warning by default: the grouping tests are about what waits (a critical change goes at once,
// CriticalMeansNowWhatFollowsWaitsAsGrouped).
Notification About(int64_t finding, const std::string& run, const std::string& rule,
                   const std::string& event = "finding.firing", const std::string& severity = "warning") {
  Notification n = Finding(rule, severity, run);
  n.finding_id = finding;
  n.event = event;
  if (event == "finding.resolved") n.state = "resolved";
  n.message = "message of finding " + std::to_string(finding) + " (" + event + ")";
  return n;
}

// Where each of `needles` is in `hay`, in order; fails the test when one is missing or out of order.
void ExpectInOrder(const std::string& hay, const std::vector<std::string>& needles) {
  size_t at = 0;
  for (const auto& n : needles) {
    const size_t found = hay.find(n, at);
    ASSERT_NE(found, std::string::npos) << "'" << n << "' missing (or out of order) in " << hay;
    at = found + n.size();
  }
}

TEST(NotifyRender, WebhookSignatureMatchesTheStandardWebhooksTestVector) {
  EXPECT_EQ(WebhookSignature("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "msg_p5jXN8AQM9LWM0D4loKWxJek",
                             1614265330, R"({"test": 2432232314})"),
            "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
  // Another body, another signature.
  EXPECT_NE(WebhookSignature("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "msg_p5jXN8AQM9LWM0D4loKWxJek",
                             1614265330, R"({"test": 2432232315})"),
            "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
}

TEST(NotifyRender, SlackMessageStaysInsideSlacksLimits) {
  Notification n = Finding();
  n.title = std::string(400, 'T');
  // Three-byte characters throughout, so every cut lands inside one unless it steps back.
  n.message.clear();
  for (int i = 0; i < 4000; ++i) n.message += "€";
  std::string ev = "{";
  for (int i = 0; i < 30; ++i) ev += (i ? "," : "") + std::string("\"k") + std::to_string(i) + "\":" + std::to_string(i);
  n.evidence = ev + "}";
  n.sparkline = "▁▂▃▄▅▆▇█";
  json::value v = json::parse(SlackMessage(n, "http://tb/#run=x"));
  const json::array& blocks = v.at("blocks").as_array();
  EXPECT_LE(blocks.size(), 50u);
  EXPECT_LE(v.at("text").as_string().size(), 3000u);
  for (const auto& b : blocks) {
    const json::object& o = b.as_object();
    if (o.at("type") == "header") {
      EXPECT_LE(o.at("text").at("text").as_string().size(), 150u);
    }
    if (o.contains("text")) {
      EXPECT_LE(o.at("text").at("text").as_string().size(), 3000u);
    }
    if (o.contains("fields")) {
      EXPECT_LE(o.at("fields").as_array().size(), 10u);
      for (const auto& f : o.at("fields").as_array()) EXPECT_LE(f.at("text").as_string().size(), 2000u);
    }
  }
  // Everything is valid UTF-8 (Boost.JSON refuses to parse a string that is not) and the run,
  // cause and fix are there.
  const std::string all = json::serialize(v);
  EXPECT_NE(all.find("exp/bert-1"), std::string::npos);
  EXPECT_NE(all.find("Lower the LR"), std::string::npos);
  EXPECT_NE(all.find("http://tb/#run=x|Open the run"), std::string::npos);
}

TEST(NotifyRender, TruncationStepsBackToACharacterBoundary) {
  EXPECT_EQ(TruncateUtf8("€€€", 9), "€€€");  // fits: untouched
  // 7 bytes: 4 for text plus the 3-byte ellipsis; byte 4 is inside the second "€".
  EXPECT_EQ(TruncateUtf8("€€€", 7), "€…");
  EXPECT_EQ(TruncateUtf8("abcdef", 5), "ab…");
}

TEST(NotifyRender, SlackEscapesAndShowsEvidenceFieldsAndResolution) {
  Notification n = Finding();
  json::value v = json::parse(SlackMessage(n, ""));
  const std::string all = json::serialize(v);
  EXPECT_NE(all.find("x&lt;y"), std::string::npos) << all;  // mrkdwn control characters escaped
  EXPECT_NE(all.find("*onset step*\\n700"), std::string::npos) << all;
  EXPECT_NE(all.find("*ratio*\\n2.5"), std::string::npos) << all;
  EXPECT_EQ(all.find("list"), std::string::npos) << all;  // arrays stay in the webhook payload
  n.event = "finding.resolved";
  const std::string resolved = SlackMessage(n, "");
  EXPECT_NE(resolved.find("RESOLVED"), std::string::npos);
  EXPECT_EQ(resolved.find("Lower the LR"), std::string::npos);  // no fix for what is over
}

TEST(NotifyRender, LinkTemplateEncodesItsValues) {
  Notification n = Finding();
  n.run = "exp/bert 1";
  EXPECT_EQ(ExpandLinkTemplate("http://tb:6006/#scalars&regexInput={run}&s={step}&r={rule}", n),
            "http://tb:6006/#scalars&regexInput=exp%2Fbert%201&s=700&r=non_finite_loss");
  EXPECT_EQ(ExpandLinkTemplate("", n), "");
}

TEST(NotifyRender, PayloadRoundTrips) {
  Notification n = Finding();
  Result<Notification> back = FromPayload(ToPayload(n));
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->rule, n.rule);
  EXPECT_EQ(back->run, n.run);
  EXPECT_EQ(back->onset_step, 700);
  EXPECT_FALSE(back->first_step.has_value());
  EXPECT_EQ(json::parse(back->evidence), json::parse(n.evidence));
  EXPECT_FALSE(FromPayload("{\"version\":2}").ok());
  EXPECT_FALSE(FromPayload("not json").ok());
}

TEST(NotifyRoute, BySeverityRuleRunAndResolution) {
  ChannelConfig c = ChannelConfig::Defaults("s", "slack");
  EXPECT_TRUE(Routes(c, Finding()));
  EXPECT_FALSE(Routes(c, Finding("grokking", "info")));  // below the default minimum
  Notification resolved = Finding();
  resolved.event = "finding.resolved";
  EXPECT_FALSE(Routes(c, resolved));  // Slack: off by default
  EXPECT_TRUE(Routes(ChannelConfig::Defaults("w", "webhook"), resolved));
  c.rules = {"loss_divergence"};
  EXPECT_FALSE(Routes(c, Finding()));
  c.rules = {};
  c.runs = {"exp/gpt-*"};
  EXPECT_FALSE(Routes(c, Finding()));
  EXPECT_TRUE(Routes(c, Finding("non_finite_loss", "critical", "exp/gpt-2")));
}

TEST(NotifyRoute, RetryAfterInSecondsOrAsAnHttpDate) {
  EXPECT_EQ(ParseRetryAfter("7", 0), 7);
  EXPECT_EQ(ParseRetryAfter("Wed, 21 Oct 2015 07:28:00 GMT", 1445412470), 10);
  EXPECT_EQ(ParseRetryAfter("", 0), -1);
  EXPECT_EQ(ParseRetryAfter("soon", 0), -1);
}

// A store, an outbox, and a deliverer pointed at a loopback server.
class NotifyDelivery : public ::testing::Test {
 protected:
  testing::TempDir dir_;
  std::string db_path_ = dir_ / "tw.db";
  std::unique_ptr<store::Store> store_;
  HttpServer server_;

  void SetUp() override {
    Result<std::unique_ptr<store::Store>> s = store::Store::Open(db_path_);
    ASSERT_TRUE(s.ok()) << s.status().message();
    store_ = std::move(*s);
  }
  // The delivery mechanics below take one message per send: grouping (Slack's default) is
  // off here. The NotifyGroup tests use Grouped().
  ChannelConfig Channel(const std::string& type, const std::string& name = "ch") {
    ChannelConfig c = Grouped(type, name);
    c.group_by.clear();
    return c;
  }
  // A channel with its type's defaults, grouping included.
  ChannelConfig Grouped(const std::string& type, const std::string& name = "ch") {
    ChannelConfig c = ChannelConfig::Defaults(name, type);
    c.url = server_.url(type == "slack" ? "/services/T0/B0/SECRETPART" : "/hook");
    c.http.timeout_seconds = 2;
    return c;
  }
  void Queue(const std::vector<ChannelConfig>& channels, int transition_id, double now = 1000,
             Notification n = Finding()) {
    Result<int> q = Enqueue(store_->db(), channels, n, transition_id, now);
    ASSERT_TRUE(q.ok()) << q.status().message();
  }
  std::unique_ptr<Deliverer> Open(const std::vector<ChannelConfig>& channels, DeliveryOptions o = {}) {
    std::vector<std::unique_ptr<notify::Channel>> made;
    for (const auto& c : channels) {
      Result<std::unique_ptr<notify::Channel>> ch = MakeChannel(c);
      EXPECT_TRUE(ch.ok()) << ch.status().message();
      made.push_back(std::move(*ch));
    }
    o.seed = 1;
    Result<std::unique_ptr<Deliverer>> d = Deliverer::Open(db_path_, std::move(made), o);
    EXPECT_TRUE(d.ok()) << d.status().message();
    return std::move(*d);
  }
  std::vector<Attempt> Run(Deliverer& d, double now) {
    Result<std::vector<Attempt>> r = d.RunOnce(now);
    EXPECT_TRUE(r.ok()) << r.status().message();
    return r.ok() ? *r : std::vector<Attempt>{};
  }
  int64_t Count(const std::string& where) {
    return testing::QueryInt(db_path_, "SELECT count(*) FROM outbox WHERE " + where);
  }
};

TEST_F(NotifyDelivery, SlackAcceptsOnceAndTheMessageIsMarkedSent) {
  const std::vector<ChannelConfig> chans = {Channel("slack")};
  Queue(chans, 1);
  auto d = Open(chans);
  std::vector<Attempt> a = Run(*d, 1000);
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].state, "sent") << a[0].result.detail;
  ASSERT_EQ(server_.requests().size(), 1u);
  const testing::RecordedRequest req = server_.requests()[0];
  EXPECT_EQ(req.method, "POST");
  EXPECT_EQ(req.target, "/services/T0/B0/SECRETPART");
  EXPECT_NE(req.headers.at("content-type").find("application/json"), std::string::npos);
  json::value body = json::parse(req.body);
  EXPECT_TRUE(body.as_object().contains("blocks"));
  EXPECT_NE(body.at("text").as_string().find("[critical] Loss is NaN or infinite on exp/bert-1"), std::string::npos);
  EXPECT_TRUE(Run(*d, 1001).empty());  // nothing twice
  EXPECT_EQ(Count("state = 'sent' AND sent_at = 1000"), 1);
  EXPECT_TRUE(std::isinf(d->next_due()));
}

// (A webhook: Slack's one-a-second rate limit would space these retries itself.)
TEST_F(NotifyDelivery, RetryAfterIsHonouredThenBackoffGrows) {
  const std::vector<ChannelConfig> chans = {Channel("webhook")};
  server_.Script({{429, "rate_limited", {{"Retry-After", "7"}}}, {500, "oops"}, {503, "busy"}});
  Queue(chans, 1);
  auto d = Open(chans);
  std::vector<Attempt> a = Run(*d, 1000);
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].state, "pending");
  EXPECT_EQ(a[0].result.http_status, 429);
  EXPECT_DOUBLE_EQ(a[0].next_attempt, 1007);
  EXPECT_DOUBLE_EQ(d->next_due(), 1007);
  EXPECT_TRUE(Run(*d, 1006.9).empty());  // not before the receiver said
  a = Run(*d, 1007);
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].result.http_status, 500);
  const double first = a[0].next_attempt - 1007;  // attempt 2: 0.5 * 1.5 = 0.75, +-20%
  EXPECT_GE(first, 0.6);
  EXPECT_LE(first, 0.9);
  a = Run(*d, 1007 + first);
  ASSERT_EQ(a.size(), 1u);
  const double second = a[0].next_attempt - (1007 + first);  // attempt 3: 1.125 +-20%
  EXPECT_GE(second, 0.9);
  EXPECT_LE(second, 1.35);
  a = Run(*d, 1010);
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].state, "sent");
  EXPECT_EQ(server_.requests().size(), 4u);
  EXPECT_EQ(testing::QueryInt(db_path_, "SELECT attempts FROM outbox"), 4);
}

TEST_F(NotifyDelivery, BackoffIsCapped) {
  DeliveryOptions o;
  EXPECT_DOUBLE_EQ(Deliverer::Backoff(o, 1), 0.5);
  EXPECT_DOUBLE_EQ(Deliverer::Backoff(o, 3), 0.5 * 1.5 * 1.5);
  EXPECT_DOUBLE_EQ(Deliverer::Backoff(o, 40), 60);
}

TEST_F(NotifyDelivery, PermanentFailureIsDeadAndDoesNotBlockTheNext) {
  const std::vector<ChannelConfig> chans = {Channel("slack")};
  server_.Script({{404, "channel_not_found"}});
  Queue(chans, 1);
  Queue(chans, 2);
  auto d = Open(chans);
  std::vector<Attempt> a = Run(*d, 1000);
  ASSERT_GE(a.size(), 1u);
  EXPECT_EQ(a[0].state, "dead");
  EXPECT_NE(a[0].result.detail.find("channel_not_found"), std::string::npos);
  // Slack's rate limit spaces the second one by a second.
  a = Run(*d, 1001);
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].state, "sent");
  EXPECT_EQ(Count("state = 'dead' AND last_status = 404 AND last_error LIKE '%channel_not_found%'"), 1);
  Result<std::vector<OutboxCounts>> counts = CountOutbox(store_->db());
  ASSERT_TRUE(counts.ok());
  ASSERT_EQ(counts->size(), 1u);
  EXPECT_EQ((*counts)[0].dead, 1);
  EXPECT_EQ((*counts)[0].sent, 1);
}

TEST_F(NotifyDelivery, GivesUpAfterMaxAge) {
  const std::vector<ChannelConfig> chans = {Channel("webhook")};
  server_.SetDefault({500, "down"});
  Queue(chans, 1);
  DeliveryOptions o;
  o.max_age_seconds = 10;
  auto d = Open(chans, o);
  double now = 1000;
  std::string state = "pending";
  int attempts = 0;
  while (state == "pending" && attempts < 100) {
    std::vector<Attempt> a = Run(*d, now);
    ASSERT_EQ(a.size(), 1u);
    state = a[0].state;
    attempts++;
    now = a[0].next_attempt;
  }
  EXPECT_EQ(state, "dead");
  EXPECT_GT(attempts, 5);
  EXPECT_LE(now - 1000, 10 + 60);
  EXPECT_EQ(Count("state = 'dead' AND last_status = 500"), 1);
}

TEST_F(NotifyDelivery, RateLimitSpacesOneChannelsMessagesInOrder) {
  const std::vector<ChannelConfig> chans = {Channel("slack")};
  for (int i = 1; i <= 3; ++i) {
    Notification n = Finding();
    n.message = "message " + std::to_string(i);
    Queue(chans, i, 1000, n);
  }
  auto d = Open(chans);
  EXPECT_EQ(Run(*d, 1000).size(), 1u);
  EXPECT_DOUBLE_EQ(d->next_due(), 1001);
  EXPECT_TRUE(Run(*d, 1000.5).empty());
  EXPECT_EQ(Run(*d, 1001).size(), 1u);
  EXPECT_EQ(Run(*d, 1002).size(), 1u);
  std::vector<testing::RecordedRequest> reqs = server_.requests();
  ASSERT_EQ(reqs.size(), 3u);
  for (int i = 0; i < 3; ++i)
    EXPECT_NE(reqs[i].body.find("message " + std::to_string(i + 1)), std::string::npos);
}

TEST_F(NotifyDelivery, WebhookIsSignedAndCarriesTheVersionedPayload) {
  ChannelConfig c = Channel("webhook");
  c.secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
  Queue({c}, 42);
  auto d = Open({c});
  ASSERT_EQ(Run(*d, 1000).size(), 1u);
  ASSERT_EQ(server_.requests().size(), 1u);
  const testing::RecordedRequest req = server_.requests()[0];
  EXPECT_EQ(req.headers.at("webhook-id"), "tw-42-ch");
  EXPECT_EQ(req.headers.at("webhook-timestamp"), "1000");
  EXPECT_EQ(req.headers.at("webhook-signature"), WebhookSignature(c.secret, "tw-42-ch", 1000, req.body));
  json::value body = json::parse(req.body);
  EXPECT_EQ(body.at("version"), 1);
  EXPECT_EQ(body.at("type"), "finding.firing");
  EXPECT_EQ(body.at("finding").at("rule"), "non_finite_loss");
  EXPECT_EQ(body.at("finding").at("evidence").at("count"), 60);
}

TEST_F(NotifyDelivery, ATimeoutIsRetriedAndNamesNoSecret) {
  ChannelConfig c = Channel("slack");
  c.http.timeout_seconds = 0.3;
  server_.Script({{200, "ok", {}, 3.0}});
  Queue({c}, 1);
  auto d = Open({c});
  std::vector<Attempt> a = Run(*d, 1000);
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].state, "pending");
  EXPECT_NE(a[0].result.detail.find("timed out"), std::string::npos) << a[0].result.detail;
  EXPECT_EQ(a[0].result.detail.find("SECRETPART"), std::string::npos) << a[0].result.detail;
  EXPECT_EQ(Count("last_error LIKE '%SECRETPART%'"), 0);
}

TEST_F(NotifyDelivery, ARestartResumesPendingMessagesAndSendsNoneTwice) {
  const std::vector<ChannelConfig> chans = {Channel("webhook")};
  server_.Script({{200}, {500, "down"}});
  for (int i = 1; i <= 4; ++i) Queue(chans, i);
  {
    auto d = Open(chans);
    std::vector<Attempt> a = Run(*d, 1000);  // the first goes, the second fails, the rest wait
    ASSERT_EQ(a.size(), 2u);
  }  // "crash": the deliverer is gone with messages pending
  auto d = Open(chans);
  EXPECT_EQ(Run(*d, 1100).size(), 3u);
  std::multiset<std::string> ids;
  for (const auto& r : server_.requests())
    if (r.headers.count("webhook-id")) ids.insert(r.headers.at("webhook-id"));
  // Five requests: four messages, one of them twice because it failed the first time.
  EXPECT_EQ(ids.size(), 5u);
  EXPECT_EQ(ids.count("tw-2-ch"), 2u);
  for (const char* id : {"tw-1-ch", "tw-3-ch", "tw-4-ch"}) EXPECT_EQ(ids.count(id), 1u) << id;
  EXPECT_EQ(Count("state = 'sent'"), 4);
}

// A channel that, at each send, reads how many of the outbox's messages are marked sent (on a
// connection of its own, as any reader of the store would).
class CountingChannel : public notify::Channel {
 public:
  CountingChannel(ChannelConfig c, std::string db_path)
      : notify::Channel(std::move(c)), db_path_(std::move(db_path)) {}
  std::vector<int64_t> marked_at_send;

 protected:
  SendResult DoSend(const Notification&, const std::string&, double) override {
    marked_at_send.push_back(
        testing::QueryInt(db_path_, "SELECT count(*) FROM outbox WHERE state = 'sent'"));
    return {SendResult::Kind::kSent, 200, -1, "ok"};
  }
  SendResult DoSendGroup(const Group&, const std::string&, double) override {
    return {SendResult::Kind::kSent, 200, -1, "ok"};
  }

 private:
  std::string db_path_;
};

TEST_F(NotifyDelivery, TheOutcomesOfConsecutiveSendsAreMarkedTogether) {
  const std::vector<ChannelConfig> chans = {Channel("webhook")};
  for (int i = 1; i <= 7; ++i) Queue(chans, i);
  for (int per : {64, 3, 1}) {
    SCOPED_TRACE("max_unmarked " + std::to_string(per));
    ASSERT_TRUE(store_->db().Exec("UPDATE outbox SET state = 'pending', attempts = 0").ok());
    auto channel = std::make_unique<CountingChannel>(chans[0], db_path_);
    CountingChannel* seen = channel.get();
    std::vector<std::unique_ptr<notify::Channel>> made;
    made.push_back(std::move(channel));
    DeliveryOptions o;
    o.max_unmarked = per;
    o.max_unmarked_seconds = 3600;  // by count alone here
    Result<std::unique_ptr<Deliverer>> d = Deliverer::Open(db_path_, std::move(made), o);
    ASSERT_TRUE(d.ok()) << d.status().message();
    ASSERT_EQ(Run(**d, 1000).size(), 7u);
    // At each send, the sends before it are marked in whole transactions of `per`.
    std::vector<int64_t> want;
    for (int64_t i = 0; i < 7; ++i) want.push_back(i / per * per);
    EXPECT_EQ(seen->marked_at_send, want);
    EXPECT_EQ(Count("state = 'sent'"), 7);  // all of them once RunOnce returns
  }
}

// Without grouping a pass reads only the messages it may send (max_per_channel_per_run), in
// queue order, and is due again at once while more wait.
TEST_F(NotifyDelivery, AnUngroupedPassReadsWhatItSendsAndIsDueAgainWhileMoreWait) {
  const std::vector<ChannelConfig> chans = {Channel("webhook")};
  for (int i = 1; i <= 7; ++i) Queue(chans, i);
  DeliveryOptions o;
  o.max_per_channel_per_run = 3;
  auto d = Open(chans, o);
  std::vector<int64_t> sent;
  for (int pass = 0; pass < 3; ++pass) {
    std::vector<Attempt> a = Run(*d, 1000 + pass);
    ASSERT_EQ(a.size(), pass < 2 ? 3u : 1u);
    for (const Attempt& x : a) sent.push_back(x.message_id);
    if (pass < 2) {
      EXPECT_DOUBLE_EQ(d->next_due(), 1000 + pass) << "more were waiting";
    }
  }
  EXPECT_EQ(sent, (std::vector<int64_t>{1, 2, 3, 4, 5, 6, 7}));
  EXPECT_TRUE(std::isinf(d->next_due()));
  EXPECT_EQ(Count("state = 'sent' AND attempts = 1"), 7);
}

TEST_F(NotifyDelivery, AWebhookReceivesThePayloadAsItWasQueued) {
  const std::vector<ChannelConfig> chans = {Channel("webhook")};
  Queue(chans, 1);
  // What was queued goes, byte for byte (not a second rendering of it): a member this version
  // does not write arrives too.
  ASSERT_TRUE(store_->db().Exec("UPDATE outbox SET payload = json_insert(payload, '$.queued_as', 'is')").ok());
  const std::string queued = testing::QueryRows(db_path_, "SELECT payload FROM outbox").value().at(0);
  auto d = Open(chans);
  ASSERT_EQ(Run(*d, 1000).size(), 1u);
  ASSERT_EQ(server_.requests().size(), 1u);
  EXPECT_EQ(server_.requests()[0].body, queued);
}

// [web] base_url gives channels a link template (app::EffectiveChannels): a webhook's payload
// carries the finding's link, Slack's message links it, single and grouped.
TEST_F(NotifyDelivery, AChannelsLinkReachesTheWebhookPayloadAndTheSlackMessage) {
  ChannelConfig hook = Channel("webhook", "hook");
  hook.link_template = "http://tw.example:8421/findings/{finding_id}";
  ChannelConfig slack = Channel("slack", "slack");
  slack.link_template = hook.link_template;
  ChannelConfig plain = Channel("webhook", "plain");
  Notification n = Finding();
  n.finding_id = 42;
  Queue({hook, slack, plain}, 1, 1000, n);
  auto d = Open({hook, slack, plain});
  ASSERT_EQ(Run(*d, 1000).size(), 3u);
  ASSERT_EQ(server_.requests().size(), 3u);
  int linked = 0;
  for (const auto& r : server_.requests()) {
    const bool has = r.body.find("http://tw.example:8421/findings/42") != std::string::npos;
    if (r.target == "/hook" && r.body.find("\"link\"") == std::string::npos) {
      EXPECT_FALSE(has);  // the plain webhook: no link member
      continue;
    }
    EXPECT_TRUE(has) << r.target << " " << r.body;
    linked++;
  }
  EXPECT_EQ(linked, 2);
  const std::string group = GroupPayload(Group{"group", {}, {n}, 0}, "hook", 1000, hook.link_template);
  EXPECT_EQ(json::parse(group).at("notifications").as_array().at(0).at("link").as_string(),
            "http://tw.example:8421/findings/42");
}

TEST_F(NotifyDelivery, MessagesOfARemovedChannelAreDeadNotLost) {
  Queue({Channel("webhook", "old")}, 1);
  auto d = Open({Channel("webhook", "new")});
  EXPECT_TRUE(Run(*d, 1000).empty());
  EXPECT_EQ(Count("state = 'dead' AND last_error LIKE '%no longer configured%'"), 1);
}

// Which transitions are announced, and as what: firing (from new or pending), a severity that
// rose, a resolution after firing (only where resolved messages are wanted); not pending, not a
// severity that fell.
TEST_F(NotifyDelivery, TransitionsBecomeTheRightEvents) {
  store::Db& db = store_->db();
  ASSERT_TRUE(db.Exec("INSERT INTO runs(run_id, root, name, first_seen) VALUES (1, '/r', 'exp/a', 0);"
                      "INSERT INTO findings(finding_id, rule, run_id, series_id, severity, state, first_seen, "
                      "last_seen, message, title) VALUES (1, 'loss_spikes', 1, 0, 'warning', 'firing', 0, 0, "
                      "'spiky', 'Loss spikes');"
                      "INSERT INTO finding_transitions(transition_id, finding_id, time, from_state, to_state, "
                      "severity, message) VALUES (1, 1, 10, '', 'pending', 'warning', 'm'), "
                      "(2, 1, 20, 'pending', 'firing', 'warning', 'm'), (3, 1, 30, 'firing', 'firing', 'critical', 'm'), "
                      "(4, 1, 40, 'firing', 'firing', 'warning', 'm'), (5, 1, 50, 'firing', 'resolved', 'warning', 'm')")
                  .ok());
  const std::vector<ChannelConfig> chans = {Channel("webhook", "hook"), Channel("slack", "slack")};
  const std::vector<std::tuple<int, std::string, std::string, int>> cases = {
      {1, "", "pending", 0}, {2, "pending", "firing", 2}, {3, "firing", "firing", 2},
      {4, "firing", "firing", 0}, {5, "firing", "resolved", 1}};
  for (const auto& [id, from, to, expected] : cases) {
    Result<int> q = QueueTransition(db, chans, id, from, to, 100);
    ASSERT_TRUE(q.ok()) << q.status().message();
    EXPECT_EQ(*q, expected) << "transition " << id;
  }
  EXPECT_EQ(Count("transition_id = 2 AND event = 'finding.firing'"), 2);
  EXPECT_EQ(Count("transition_id = 3 AND event = 'finding.escalated'"), 2);
  EXPECT_EQ(Count("transition_id = 5 AND event = 'finding.resolved' AND channel = 'hook'"), 1);
  Result<store::Stmt> q = db.Prepare("SELECT payload FROM outbox WHERE transition_id = 3 LIMIT 1");
  ASSERT_TRUE(q.ok());
  ASSERT_TRUE(q->Step().ok());
  Result<Notification> n = FromPayload(q->Text(0));
  ASSERT_TRUE(n.ok()) << n.status().message();
  EXPECT_EQ(n->severity, "critical");
  EXPECT_EQ(n->title, "Loss spikes");
  EXPECT_EQ(n->run, "exp/a");
}

TEST_F(NotifyDelivery, SilencesStopQueueingAndExpire) {
  const std::vector<ChannelConfig> chans = {Channel("webhook")};
  ASSERT_TRUE(store_->db().Exec("INSERT INTO silences(run_glob, rule, created, expires) "
                                "VALUES ('exp/*', 'non_finite_loss', 0, 2000)").ok());
  Queue(chans, 1, 1000);
  Queue(chans, 2, 1000, Finding("loss_divergence"));  // another rule: not silenced
  Queue(chans, 3, 2500);                              // after the silence expired
  EXPECT_EQ(Count("1"), 2);
  EXPECT_EQ(Count("transition_id = 1"), 0);
}

// Grouping, repeats and digests (docs/notifications.md): what goes together, when, and what it
// looks like; failures and restarts of group sends.
class NotifyGroup : public NotifyDelivery {
 protected:
  json::value Body(size_t i) {
    const std::vector<testing::RecordedRequest> reqs = server_.requests();
    EXPECT_LT(i, reqs.size());
    return i < reqs.size() ? json::parse(reqs[i].body) : json::value();
  }
  std::string SlackHeader(const json::value& body) {
    return std::string(body.at("blocks").at(0).at("text").at("text").as_string());
  }
};

TEST(NotifyRender, GroupKeysAndLabels) {
  EXPECT_EQ(GroupKey({"run"}, "exp/a", "r"), R"({"run":"exp/a"})");
  EXPECT_EQ(GroupKey({"run", "rule"}, "exp/a", "r"), R"({"rule":"r","run":"exp/a"})");
  EXPECT_EQ(GroupKey({"rule", "run"}, "exp/a", "r"), GroupKey({"run", "rule"}, "exp/a", "r"));
  EXPECT_NE(GroupKey({"run"}, "exp/a", "r"), GroupKey({"run"}, "exp/b", "r"));
  using Labels = std::vector<std::pair<std::string, std::string>>;
  EXPECT_EQ(GroupLabels({"run"}, {About(1, "exp/a", "x"), About(2, "exp/a", "y")}), (Labels{{"run", "exp/a"}}));
  // Values the items do not share are no label (a send frozen before a reload regrouped it).
  EXPECT_EQ(GroupLabels({"run", "rule"}, {About(1, "exp/a", "x"), About(2, "exp/b", "x")}), (Labels{{"rule", "x"}}));
  Group g;
  g.labels = {{"run", "exp/a"}};
  g.items = {About(1, "exp/a", "x"), About(1, "exp/a", "x", "finding.resolved"), About(2, "exp/a", "y")};
  EXPECT_EQ(GroupTitle(g), "2 findings on run exp/a");
  EXPECT_EQ(GroupSummary(g), "2 firing · 1 resolved");
  g.kind = "digest";
  g.labels.clear();
  EXPECT_EQ(GroupTitle(g), "Digest: 3 changes to 2 findings");
  EXPECT_EQ(GroupSummary(g), "2 firing · 1 resolved\nBy rule: x 2, y 1\nBy run: exp/a 3");
}

TEST(NotifyRender, SlackGroupMessageStaysInsideSlacksLimits) {
  Group g;
  g.labels = {{"run", "exp/a"}};
  for (int i = 0; i < 120; ++i) {
    Notification n = About(i + 1, "exp/a", "rule_" + std::to_string(i), "finding.firing", "critical");
    n.title = std::string(400, 'T');
    n.message.clear();
    for (int k = 0; k < 2000; ++k) n.message += "€";
    g.items.push_back(n);
  }
  json::value v = json::parse(SlackGroupMessage(g, "http://tb/{run}"));
  const json::array& blocks = v.at("blocks").as_array();
  EXPECT_LE(blocks.size(), 50u);
  EXPECT_LE(v.at("text").as_string().size(), 3000u);
  EXPECT_EQ(blocks[0].at("text").at("text").as_string(), "🔴 120 findings on run exp/a");
  for (const auto& b : blocks) {
    const json::object& o = b.as_object();
    if (o.at("type") == "header") {
      EXPECT_LE(o.at("text").at("text").as_string().size(), 150u);
    }
    if (o.contains("text")) {
      EXPECT_LE(o.at("text").at("text").as_string().size(), 3000u);
    }
  }
  const std::string all = json::serialize(v);
  EXPECT_NE(all.find("…and 81 more"), std::string::npos) << all.substr(all.size() - 500);
  EXPECT_NE(all.find("http://tb/exp%2Fa|Open the run"), std::string::npos);
  EXPECT_NE(all.find("120 firing"), std::string::npos);
  // All resolved: the check mark.
  Group done;
  done.labels = {{"run", "exp/a"}};
  done.items = {About(1, "exp/a", "x", "finding.resolved"), About(2, "exp/a", "y", "finding.resolved")};
  EXPECT_EQ(json::parse(SlackGroupMessage(done, "")).at("blocks").at(0).at("text").at("text").as_string(),
            "✅ 2 findings on run exp/a");
}

TEST(NotifyRender, AGroupPayloadCarriesEachVersionOnePayloadInOrder) {
  Group g;
  g.labels = {{"run", "exp/a"}};
  g.since = 990;
  g.items = {About(1, "exp/a", "x"), About(1, "exp/a", "x", "finding.resolved"), About(2, "exp/a", "y")};
  json::value v = json::parse(GroupPayload(g, "hook", 1000));
  EXPECT_EQ(v.at("version"), 1);
  EXPECT_EQ(v.at("type"), "group");
  EXPECT_EQ(v.at("time"), 1000);
  const json::value& group = v.at("group");
  EXPECT_EQ(group.at("kind"), "group");
  EXPECT_EQ(group.at("channel"), "hook");
  EXPECT_EQ(group.at("labels").at("run"), "exp/a");
  EXPECT_EQ(group.at("count"), 3);
  EXPECT_EQ(group.at("findings"), 2);
  EXPECT_EQ(group.at("since"), 990);
  EXPECT_EQ(group.at("events").at("finding.firing"), 2);
  EXPECT_EQ(group.at("events").at("finding.resolved"), 1);
  EXPECT_EQ(group.at("rules").at("x"), 2);
  const json::array& items = v.at("notifications").as_array();
  ASSERT_EQ(items.size(), 3u);
  for (size_t i = 0; i < items.size(); ++i) {
    Result<Notification> n = FromPayload(json::serialize(items[i]));
    ASSERT_TRUE(n.ok()) << n.status().message();
    EXPECT_EQ(n->event, g.items[i].event);
    EXPECT_EQ(n->finding_id, g.items[i].finding_id);
    EXPECT_EQ(n->message, g.items[i].message);
  }
}

TEST(NotifyRender, AGroupEmailListsEveryFindingInOrderEscaped) {
  Group g;
  g.labels = {{"run", "exp/a"}};
  g.items = {About(1, "exp/a", "x", "finding.firing", "critical"),
             About(1, "exp/a", "x", "finding.resolved", "critical"), About(2, "exp/a", "y")};
  g.items[2].message = "x<script>";
  const EmailContent e = RenderGroupEmail(g, "http://tb/{run}");
  EXPECT_EQ(e.subject, "[trainwatch] 2 findings on run exp/a (2 firing, 1 resolved)");
  ExpectInOrder(e.text, {"2 firing, 1 resolved", "CRITICAL", "message of finding 1 (finding.firing)", "RESOLVED",
                         "message of finding 1 (finding.resolved)", "x<script>", "http://tb/exp%2Fa"});
  ExpectInOrder(e.html, {"message of finding 1 (finding.firing)", "RESOLVED", "message of finding 1 (finding.resolved)",
                         "x&lt;script&gt;"});
  EXPECT_EQ(e.html.find("<script>"), std::string::npos);
}

TEST_F(NotifyGroup, GroupWaitCollectsARunsFindingsIntoOneSlackMessage) {
  const std::vector<ChannelConfig> chans = {Grouped("slack")};
  Queue(chans, 1, 1000, About(1, "exp/a", "rule_a"));
  Queue(chans, 2, 1002, About(4, "exp/b", "rule_a"));
  Queue(chans, 3, 1005, About(2, "exp/a", "rule_b"));
  Queue(chans, 4, 1010, About(3, "exp/a", "rule_c"));
  auto d = Open(chans);
  EXPECT_TRUE(Run(*d, 1000).empty());
  EXPECT_DOUBLE_EQ(d->next_due(), 1030);  // exp/a's oldest message + group_wait (30 s)
  EXPECT_TRUE(Run(*d, 1029.9).empty());
  EXPECT_EQ(server_.requests().size(), 0u);
  std::vector<Attempt> a = Run(*d, 1030);
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].state, "sent") << a[0].result.detail;
  EXPECT_EQ(a[0].message_ids, (std::vector<int64_t>{1, 3, 4}));
  EXPECT_EQ(a[0].key, "tw-group-1-4-ch");
  ASSERT_EQ(server_.requests().size(), 1u);
  const json::value body = Body(0);
  EXPECT_EQ(SlackHeader(body), "🟠 3 findings on run exp/a");
  const std::string all = json::serialize(body);
  ExpectInOrder(all, {"3 firing", "message of finding 1", "message of finding 2", "message of finding 3"});
  EXPECT_EQ(all.find("message of finding 4"), std::string::npos);  // another run, another message
  EXPECT_DOUBLE_EQ(d->next_due(), 1032);
  a = Run(*d, 1032);
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].key, "tw-2-ch");
  // A group of one is an ungrouped message, exactly.
  ASSERT_EQ(server_.requests().size(), 2u);
  Result<Notification> alone = FromPayload(ToPayload(About(4, "exp/b", "rule_a")));
  ASSERT_TRUE(alone.ok());
  EXPECT_EQ(server_.requests()[1].body, SlackMessage(*alone, ""));
  EXPECT_EQ(Count("state = 'sent'"), 4);
  EXPECT_EQ(Count("batch = 1"), 3);
  EXPECT_TRUE(Run(*d, 2000).empty());
}

// Critical means now: a run's NaN goes at once, without group_wait; another critical change of
// that run seconds later (the divergence that comes with a NaN) joins the run's next message,
// at group_interval; a warning still waits group_wait; and a critical change of a run whose last
// message held only warnings goes at once too.
TEST_F(NotifyGroup, WhatWaitsForItsGroupIsRecordedForStatusAndOldGroupsAreForgotten) {
  const std::vector<ChannelConfig> chans = {Grouped("slack")};
  Queue(chans, 1, 1000, About(1, "exp/a", "rule_a"));
  Queue(chans, 2, 1002, About(4, "exp/b", "rule_a"));
  Queue(chans, 3, 1005, About(2, "exp/a", "rule_b"));
  auto d = Open(chans);
  EXPECT_TRUE(Run(*d, 1000).empty());
  using Rows = std::vector<std::string>;
  const auto waiting = [&] {
    return testing::QueryRows(db_path_, "SELECT group_key, messages, CAST(oldest AS INTEGER), "
                                        "CAST(due AS INTEGER) FROM notify_waiting ORDER BY due")
        .value_or(Rows{"unreadable"});
  };
  EXPECT_EQ(waiting(), (Rows{R"({"run":"exp/a"}|2|1000|1030)", R"({"run":"exp/b"}|1|1002|1032)"}));
  // The status command shows them, with when they go.
  std::string out;
  ASSERT_EQ(testing::RunCommand(std::string(TW_CLI_BINARY) + " status --db " + db_path_, &out), 0) << out;
  EXPECT_NE(out.find(R"(2 messages wait for group {"run":"exp/a"}: goes in 0 s)"), std::string::npos) << out;
  ASSERT_EQ(testing::RunCommand(std::string(TW_CLI_BINARY) + " status --json --db " + db_path_, &out), 0) << out;
  EXPECT_NE(out.find(R"("waiting":[{"group":"{\"run\":\"exp/a\"}","messages":2,"oldest":1000,"due":1030})"),
            std::string::npos) << out;
  ASSERT_EQ(Run(*d, 1030).size(), 1u);  // exp/a went; exp/b still waits
  EXPECT_EQ(waiting(), (Rows{R"({"run":"exp/b"}|1|1002|1032)"}));
  ASSERT_EQ(Run(*d, 1032).size(), 1u);
  EXPECT_TRUE(waiting().empty());
  EXPECT_EQ(testing::QueryInt(db_path_, "SELECT count(*) FROM notify_groups"), 2);
  // A group's last send is kept for its interval (300 s) and an hour, then forgotten.
  EXPECT_TRUE(Run(*d, 1030 + 300 + 3600 - 1).empty());  // exp/a went at 1030
  EXPECT_EQ(testing::QueryInt(db_path_, "SELECT count(*) FROM notify_groups"), 2);
  auto later = Open(chans);
  EXPECT_TRUE(Run(*later, 1032 + 300 + 3600 + 1).empty());
  EXPECT_EQ(testing::QueryInt(db_path_, "SELECT count(*) FROM notify_groups"), 0);
  // A channel removed from the config takes its rows with it.
  Queue(chans, 4, 9000, About(1, "exp/a", "rule_a"));
  EXPECT_TRUE(Run(*later, 9000).empty());
  EXPECT_EQ(waiting().size(), 1u);
  later.reset();
  auto other = Open({Grouped("slack", "other")});
  EXPECT_TRUE(waiting().empty());
}

TEST_F(NotifyGroup, CriticalMeansNowWhatFollowsWaitsAsGrouped) {
  const std::vector<ChannelConfig> chans = {Grouped("slack")};
  Queue(chans, 1, 1000, About(1, "exp/a", "non_finite_loss", "finding.firing", "critical"));
  Queue(chans, 2, 1000, About(2, "exp/b", "loss_plateau"));
  auto d = Open(chans);
  std::vector<Attempt> a = Run(*d, 1000);
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].message_ids, (std::vector<int64_t>{1}));
  Queue(chans, 3, 1003, About(3, "exp/a", "loss_divergence", "finding.firing", "critical"));
  EXPECT_TRUE(Run(*d, 1003).empty());
  a = Run(*d, 1030);
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].message_ids, (std::vector<int64_t>{2}));  // the warning, after group_wait
  Queue(chans, 4, 1100, About(4, "exp/b", "non_finite_loss", "finding.firing", "critical"));
  a = Run(*d, 1100);
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].message_ids, (std::vector<int64_t>{4}));
  EXPECT_TRUE(Run(*d, 1299.9).empty());
  a = Run(*d, 1300);
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].message_ids, (std::vector<int64_t>{3}));  // exp/a's next message: 1000 + group_interval
  ASSERT_EQ(server_.requests().size(), 4u);
}

TEST_F(NotifyGroup, GroupIntervalHoldsChangesToANotifiedGroupThenSendsOnlyThem) {
  const std::vector<ChannelConfig> chans = {Grouped("slack")};
  Queue(chans, 1, 1000, About(1, "exp/a", "rule_a"));
  auto d = Open(chans);
  ASSERT_EQ(Run(*d, 1030).size(), 1u);
  Queue(chans, 2, 1100, About(2, "exp/a", "rule_b"));
  Queue(chans, 3, 1120, About(3, "exp/a", "rule_c"));
  EXPECT_TRUE(Run(*d, 1130).empty());  // group_wait has passed; group_interval (300 s) has not
  EXPECT_DOUBLE_EQ(d->next_due(), 1330);
  EXPECT_TRUE(Run(*d, 1329.9).empty());
  std::vector<Attempt> a = Run(*d, 1330);
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].message_ids, (std::vector<int64_t>{2, 3}));
  ASSERT_EQ(server_.requests().size(), 2u);
  const json::value body = Body(1);
  EXPECT_EQ(SlackHeader(body), "🟠 2 findings on run exp/a");
  const std::string all = json::serialize(body);
  ExpectInOrder(all, {"message of finding 2", "message of finding 3"});
  EXPECT_EQ(all.find("message of finding 1"), std::string::npos);  // sent before: not again
  EXPECT_EQ(testing::QueryInt(db_path_, "SELECT last_sent FROM notify_groups WHERE channel = 'ch'"), 1330);
  // A quiet group starts afresh: the next change waits group_wait, not more.
  Queue(chans, 4, 2000, About(4, "exp/a", "rule_d"));
  EXPECT_TRUE(Run(*d, 2029).empty());
  EXPECT_EQ(Run(*d, 2030).size(), 1u);
}

TEST_F(NotifyGroup, AFailedGroupSendRetriesWholeAfterBackoffAndRetryAfterUnderOneKey) {
  ChannelConfig c = Grouped("webhook");
  c.group_by = {"run"};
  c.group_wait_seconds = 10;
  c.group_interval_seconds = 60;
  server_.Script({{500, "oops"}, {429, "slow down", {{"Retry-After", "7"}}}, {200}});
  Queue({c}, 1, 1000, About(1, "exp/a", "rule_a"));
  Queue({c}, 2, 1001, About(2, "exp/a", "rule_b"));
  auto d = Open({c});
  std::vector<Attempt> a = Run(*d, 1010);
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].state, "pending");
  EXPECT_EQ(a[0].message_ids, (std::vector<int64_t>{1, 2}));
  const double t1 = a[0].next_attempt;
  EXPECT_GE(t1 - 1010, 0.4);  // attempt 1: 0.5 s, +-20%
  EXPECT_LE(t1 - 1010, 0.6);
  EXPECT_EQ(Count("state = 'pending' AND attempts = 1 AND batch = 1 AND last_status = 500"), 2);
  Queue({c}, 3, 1010.2, About(3, "exp/a", "rule_c"));  // after the send was made: not in it
  EXPECT_TRUE(Run(*d, t1 - 0.01).empty());
  a = Run(*d, t1);
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].result.http_status, 429);
  EXPECT_EQ(a[0].message_ids, (std::vector<int64_t>{1, 2}));
  EXPECT_DOUBLE_EQ(a[0].next_attempt, t1 + 7);  // the receiver's Retry-After
  EXPECT_TRUE(Run(*d, t1 + 6.9).empty());
  a = Run(*d, t1 + 7);
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].state, "sent");
  EXPECT_EQ(Count("state = 'sent' AND attempts = 3"), 2);
  const std::vector<testing::RecordedRequest> reqs = server_.requests();
  ASSERT_EQ(reqs.size(), 3u);
  for (size_t i = 0; i < reqs.size(); ++i) {
    EXPECT_EQ(reqs[i].headers.at("webhook-id"), "tw-group-1-2-ch") << i;
    const json::value body = json::parse(reqs[i].body);
    EXPECT_EQ(body.at("type"), "group");
    EXPECT_EQ(body.at("notifications").as_array().size(), 2u) << i;
  }
  // The message queued meanwhile waits for group_interval after the group's send, then goes
  // alone: an ungrouped payload.
  EXPECT_TRUE(Run(*d, t1 + 66.9).empty());
  a = Run(*d, t1 + 67.01);
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].key, "tw-3-ch");
  EXPECT_EQ(Body(3).at("type"), "finding.firing");
}

TEST_F(NotifyGroup, ADeadGroupSendMarksAllItsMessagesDead) {
  const std::vector<ChannelConfig> chans = {Grouped("slack")};
  server_.Script({{404, "channel_not_found"}});
  for (int i = 1; i <= 3; ++i) Queue(chans, i, 1000, About(i, "exp/a", "rule_" + std::to_string(i)));
  auto d = Open(chans);
  std::vector<Attempt> a = Run(*d, 1030);
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].state, "dead");
  EXPECT_EQ(a[0].message_ids.size(), 3u);
  EXPECT_EQ(Count("state = 'dead' AND last_status = 404 AND last_error LIKE '%channel_not_found%'"), 3);
  EXPECT_EQ(testing::QueryInt(db_path_, "SELECT count(*) FROM notify_groups"), 0);  // nothing went out
  EXPECT_TRUE(Run(*d, 5000).empty());
  EXPECT_EQ(server_.requests().size(), 1u);
}

TEST_F(NotifyGroup, FiringThenResolvedInOneWindowGoInOneMessageInOrder) {
  ChannelConfig c = Grouped("webhook");
  c.group_by = {"run"};
  Queue({c}, 1, 1000, About(1, "exp/a", "rule_a"));
  Queue({c}, 2, 1005, About(1, "exp/a", "rule_a", "finding.resolved"));
  auto d = Open({c});
  EXPECT_TRUE(Run(*d, 1029).empty());
  ASSERT_EQ(Run(*d, 1030).size(), 1u);
  const json::value body = Body(0);
  EXPECT_EQ(body.at("type"), "group");
  EXPECT_EQ(body.at("group").at("labels").at("run"), "exp/a");
  EXPECT_EQ(body.at("group").at("findings"), 1);
  const json::array& items = body.at("notifications").as_array();
  ASSERT_EQ(items.size(), 2u);
  EXPECT_EQ(items[0].at("type"), "finding.firing");
  EXPECT_EQ(items[1].at("type"), "finding.resolved");
}

TEST_F(NotifyGroup, AResolutionQueuedWhileItsFiringRetriesGoesAfterIt) {
  ChannelConfig c = Grouped("webhook");
  c.group_by = {"run"};
  server_.Script({{503, "busy"}});
  Queue({c}, 1, 1000, About(1, "exp/a", "rule_a"));
  {
    auto d = Open({c});
    std::vector<Attempt> a = Run(*d, 1030);
    ASSERT_EQ(a.size(), 1u);
    ASSERT_EQ(a[0].state, "pending");
  }
  Queue({c}, 2, 1030.1, About(1, "exp/a", "rule_a", "finding.resolved"));
  // A reload (and restart) that turns grouping off: the resolution would be due at once, and
  // still waits for its firing's retry.
  c.group_by.clear();
  c.group_wait_seconds = c.group_interval_seconds = 0;
  auto d = Open({c});
  EXPECT_TRUE(Run(*d, 1030.2).empty());
  std::vector<Attempt> a = Run(*d, 1031);
  ASSERT_EQ(a.size(), 2u);
  EXPECT_EQ(a[0].message_ids, std::vector<int64_t>{1});
  EXPECT_EQ(a[1].message_ids, std::vector<int64_t>{2});
  std::vector<std::string> types;
  for (size_t i = 0; i < 3; ++i) types.push_back(std::string(Body(i).at("type").as_string()));
  EXPECT_EQ(types, (std::vector<std::string>{"finding.firing", "finding.firing", "finding.resolved"}));
}

TEST_F(NotifyGroup, AStillFiringFindingIsRepeatedAfterTheIntervalUnlessResolvedOrSilenced) {
  store::Db& db = store_->db();
  ASSERT_TRUE(db.Exec("INSERT INTO runs(run_id, root, name, first_seen) VALUES (1, '/r', 'exp/a', 0), "
                      "(2, '/r', 'exp/b', 0), (3, '/r', 'exp/c', 0);"
                      "INSERT INTO findings(finding_id, rule, run_id, series_id, severity, state, first_seen, "
                      "last_seen, message, title) VALUES (1, 'loss_spikes', 1, 0, 'critical', 'firing', 0, 0, "
                      "'spiky a', 'Loss spikes'), (2, 'loss_spikes', 2, 0, 'critical', 'firing', 0, 0, 'spiky b', "
                      "'Loss spikes'), (3, 'loss_spikes', 3, 0, 'critical', 'firing', 0, 0, 'spiky c', 'Loss spikes');"
                      "INSERT INTO finding_transitions(transition_id, finding_id, time, from_state, to_state, "
                      "severity, message) VALUES (1, 1, 1000, 'pending', 'firing', 'critical', 'm'), "
                      "(2, 2, 1000, 'pending', 'firing', 'critical', 'm'), (3, 3, 1000, 'pending', 'firing', 'critical', 'm')")
                  .ok());
  ChannelConfig c = Channel("webhook");
  c.repeat_interval_seconds = 3600;
  c.send_resolved = false;  // so its last message about a finding that resolves is the firing
  for (int t = 1; t <= 3; ++t) ASSERT_TRUE(QueueTransition(db, {c}, t, "pending", "firing", 1000).ok());
  auto d = Open({c});
  ASSERT_EQ(Run(*d, 1000).size(), 3u);
  // Finding 3 resolves; exp/b is silenced from 1500 until 9000.
  ASSERT_TRUE(db.Exec("UPDATE findings SET state = 'resolved' WHERE finding_id = 3;"
                      "INSERT INTO finding_transitions(transition_id, finding_id, time, from_state, to_state, "
                      "severity, message) VALUES (4, 3, 1001, 'firing', 'resolved', 'critical', 'm');"
                      "INSERT INTO silences(run_glob, created, expires) VALUES ('exp/b', 1500, 9000)")
                  .ok());
  Result<int> resolved = QueueTransition(db, {c}, 4, "firing", "resolved", 1001);
  ASSERT_TRUE(resolved.ok());
  EXPECT_EQ(*resolved, 0);
  const std::string repeats = "event = 'finding.repeat'";
  EXPECT_TRUE(Run(*d, 4599).empty());
  EXPECT_EQ(Count(repeats), 0);
  EXPECT_DOUBLE_EQ(d->next_due(), 4600);  // finding 1's last message + repeat_interval
  std::vector<Attempt> a = Run(*d, 4600);
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].key, "tw-repeat-1-ch");
  EXPECT_EQ(Count(repeats), 1);
  EXPECT_EQ(Count(repeats + " AND finding_id = 1 AND state = 'sent'"), 1);
  const json::value body = Body(3);
  EXPECT_EQ(body.at("type"), "finding.repeat");
  EXPECT_EQ(body.at("finding").at("id"), 1);
  EXPECT_EQ(body.at("finding").at("state"), "firing");
  EXPECT_EQ(body.at("finding").at("message"), "spiky a");
  EXPECT_TRUE(Run(*d, 4601).empty());
  EXPECT_TRUE(Run(*d, 8199).empty());  // the repeat's own interval
  EXPECT_EQ(Run(*d, 8200).size(), 1u);
  EXPECT_EQ(Count(repeats + " AND finding_id = 1"), 2);
  EXPECT_EQ(Count(repeats + " AND finding_id = 2"), 0);  // silenced
  EXPECT_EQ(Run(*d, 9000).size(), 1u);                   // the silence is over
  EXPECT_EQ(Count(repeats + " AND finding_id = 2"), 1);
  EXPECT_TRUE(Run(*d, 20000).size() == 2u);              // 1 and 2 again; never 3
  EXPECT_EQ(Count(repeats + " AND finding_id = 3"), 0);
}

TEST_F(NotifyGroup, ADigestSendsEveryChangeOfItsPeriodInOneMessage) {
  ChannelConfig slack = Grouped("slack", "s"), hook = Grouped("webhook", "w");
  slack.digest_minutes = hook.digest_minutes = 10;
  const std::vector<ChannelConfig> chans = {slack, hook};
  Queue(chans, 1, 1000, About(1, "exp/a", "rule_a"));
  Queue(chans, 2, 1100, About(2, "exp/b", "rule_a"));
  Queue(chans, 3, 1300, About(3, "exp/a", "rule_b"));
  Queue(chans, 4, 1500, About(4, "exp/b", "rule_b", "finding.escalated"));
  auto d = Open(chans);
  EXPECT_TRUE(Run(*d, 1000).empty());
  EXPECT_TRUE(Run(*d, 1599.9).empty());
  std::vector<Attempt> a = Run(*d, 1600);  // the first change + 10 minutes
  ASSERT_EQ(a.size(), 2u);
  EXPECT_EQ(a[0].message_ids.size(), 4u);
  EXPECT_EQ(a[1].message_ids.size(), 4u);
  ASSERT_EQ(server_.requests().size(), 2u);
  const json::value s = Body(0), w = Body(1);
  EXPECT_EQ(SlackHeader(s), "🟠 Digest: 4 changes to 4 findings");
  ExpectInOrder(json::serialize(s), {"3 firing · 1 escalated", "By rule: rule_a 2, rule_b 2", "By run: exp/a 2, exp/b 2",
                                     "message of finding 1", "message of finding 2", "message of finding 3",
                                     "message of finding 4"});
  EXPECT_EQ(w.at("type"), "digest");
  EXPECT_EQ(w.at("group").at("kind"), "digest");
  EXPECT_EQ(w.at("group").at("count"), 4);
  EXPECT_EQ(w.at("group").at("rules").at("rule_a"), 2);
  EXPECT_EQ(w.at("group").at("runs").at("exp/b"), 2);
  EXPECT_EQ(w.at("group").at("events").at("finding.escalated"), 1);
  const json::array& items = w.at("notifications").as_array();
  ASSERT_EQ(items.size(), 4u);
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(items[i].at("finding").at("id"), static_cast<int64_t>(i + 1));
  // The next change opens the next period.
  Queue(chans, 5, 1700, About(5, "exp/a", "rule_c"));
  EXPECT_TRUE(Run(*d, 2299).empty());
  EXPECT_EQ(Run(*d, 2300).size(), 2u);
  EXPECT_EQ(server_.requests().size(), 4u);
}

TEST_F(NotifyGroup, ARestartDuringGroupWaitStillSendsTheGroupOnceOnTime) {
  const std::vector<ChannelConfig> chans = {Grouped("slack")};
  Queue(chans, 1, 1000, About(1, "exp/a", "rule_a"));
  Queue(chans, 2, 1010, About(2, "exp/a", "rule_b"));
  {
    auto d = Open(chans);
    EXPECT_TRUE(Run(*d, 1015).empty());
  }  // gone in the middle of the group's wait
  Queue(chans, 3, 1020, About(3, "exp/a", "rule_c"));
  auto d = Open(chans);
  EXPECT_TRUE(Run(*d, 1029).empty());
  EXPECT_DOUBLE_EQ(d->next_due(), 1030);
  std::vector<Attempt> a = Run(*d, 1030);
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].message_ids, (std::vector<int64_t>{1, 2, 3}));
  EXPECT_TRUE(Run(*d, 1400).empty());
  EXPECT_EQ(server_.requests().size(), 1u);
  EXPECT_EQ(SlackHeader(Body(0)), "🟠 3 findings on run exp/a");
}

TEST_F(NotifyGroup, ASendCutOffByACrashGoesAgainWithTheSameMessagesAndKey) {
  ChannelConfig c = Grouped("webhook");
  c.group_by = {"run"};
  Queue({c}, 1, 1000, About(1, "exp/a", "rule_a"));
  Queue({c}, 2, 1000, About(2, "exp/a", "rule_b"));
  {
    auto d = Open({c});
    ASSERT_EQ(Run(*d, 1030).size(), 1u);
  }
  // As if the process died after the receiver's answer, before the outcome was written: the
  // messages were frozen in their send before it, and are still pending.
  ASSERT_TRUE(store_->db().Exec("UPDATE outbox SET state = 'pending', attempts = 0, sent_at = NULL; "
                                "DELETE FROM notify_groups").ok());
  Queue({c}, 3, 1040, About(3, "exp/a", "rule_c"));
  auto d = Open({c});
  std::vector<Attempt> a = Run(*d, 1041);
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].message_ids, (std::vector<int64_t>{1, 2}));
  const std::vector<testing::RecordedRequest> reqs = server_.requests();
  ASSERT_EQ(reqs.size(), 2u);
  EXPECT_EQ(reqs[0].headers.at("webhook-id"), "tw-group-1-2-ch");
  EXPECT_EQ(reqs[1].headers.at("webhook-id"), "tw-group-1-2-ch");
  EXPECT_EQ(json::parse(reqs[1].body).at("notifications").as_array().size(), 2u);
  // The newcomer goes on its own, group_interval later.
  EXPECT_TRUE(Run(*d, 1340).empty());
  a = Run(*d, 1341);
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].key, "tw-3-ch");
}

TEST_F(NotifyGroup, AGroupLargerThanOneSendGoesInSeveralWithoutWaitingAgain) {
  ChannelConfig c = Grouped("webhook");
  c.group_by = {"run"};
  for (int i = 1; i <= 5; ++i) Queue({c}, i, 1000, About(i, "exp/a", "rule_" + std::to_string(i)));
  DeliveryOptions o;
  o.max_batch = 2;
  auto d = Open({c}, o);
  EXPECT_TRUE(Run(*d, 1029).empty());
  std::vector<Attempt> a = Run(*d, 1030);
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].message_ids, (std::vector<int64_t>{1, 2}));
  a = Run(*d, 1030);  // the rest was waiting already: no group_interval for it
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].message_ids, (std::vector<int64_t>{3, 4}));
  a = Run(*d, 1030);
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].message_ids, std::vector<int64_t>{5});
  // A change after that is news: it waits for group_interval.
  Queue({c}, 6, 1031, About(6, "exp/a", "rule_6"));
  EXPECT_TRUE(Run(*d, 1031).empty());
  EXPECT_DOUBLE_EQ(d->next_due(), 1330);
}

TEST_F(NotifyGroup, ASendCutOffByACrashGoesFirstEvenAfterARegrouping) {
  ChannelConfig c = Grouped("webhook");
  c.group_by = {"run"};
  Queue({c}, 1, 900, About(8, "exp/b", "rule_y"));
  auto first = Open({c});
  ASSERT_EQ(Run(*first, 930).size(), 1u);                // exp/b was notified at 930
  Queue({c}, 2, 1000, About(9, "exp/b", "rule_x"));      // so this waits for group_interval
  Queue({c}, 3, 1000, About(2, "exp/a", "rule_x"));      // while finding 2's firing goes at 1030
  std::vector<Attempt> a = Run(*first, 1030);
  ASSERT_EQ(a.size(), 1u);
  ASSERT_EQ(a[0].message_ids, std::vector<int64_t>{3});
  first.reset();
  // The process died before the outcome of message 3's send was written.
  ASSERT_TRUE(store_->db().Exec("UPDATE outbox SET state = 'pending', attempts = 0, sent_at = NULL "
                                "WHERE message_id = 3; DELETE FROM notify_groups WHERE group_key LIKE '%exp/a%'")
                  .ok());
  Queue({c}, 4, 1040, About(2, "exp/a", "rule_x", "finding.resolved"));
  // The restart comes with a reload that groups by rule at once: messages 2 and 4 (finding 2's
  // resolution) now share a group older than message 3, finding 2's firing, which still goes first.
  c.group_by = {"rule"};
  c.group_wait_seconds = c.group_interval_seconds = 0;
  auto d = Open({c});
  a = Run(*d, 1041);
  ASSERT_EQ(a.size(), 2u);
  EXPECT_EQ(a[0].message_ids, std::vector<int64_t>{3});
  EXPECT_EQ(a[1].message_ids, (std::vector<int64_t>{2, 4}));
  ASSERT_EQ(server_.requests().size(), 4u);
  EXPECT_EQ(Body(2).at("type"), "finding.firing");
  EXPECT_EQ(Body(2).at("finding").at("id"), 2);
  const json::value group = Body(3);
  EXPECT_EQ(group.at("group").at("labels").at("rule"), "rule_x");
  EXPECT_EQ(group.at("notifications").at(1).at("type"), "finding.resolved");
  EXPECT_EQ(group.at("notifications").at(1).at("finding").at("id"), 2);
}

// A channel that grouped is reloaded without grouping while two group sends, cut off by a
// crash, wait to go again: each still goes whole under its key, though its messages lie
// beyond what an ungrouped pass reads.
TEST_F(NotifyGroup, ASendCutOffByACrashGoesWholeAfterAReloadWithoutGrouping) {
  ChannelConfig c = Grouped("webhook");
  c.group_by = {"run"};
  Queue({c}, 1, 1000, About(1, "exp/a", "rule_a"));
  Queue({c}, 2, 1000, About(2, "exp/b", "rule_a"));
  Queue({c}, 3, 1000, About(3, "exp/b", "rule_b"));
  Queue({c}, 4, 1000, About(4, "exp/a", "rule_b"));
  {
    auto d = Open({c});
    ASSERT_EQ(Run(*d, 1030).size(), 2u);
  }
  ASSERT_TRUE(store_->db().Exec("UPDATE outbox SET state = 'pending', attempts = 0, sent_at = NULL; "
                                "DELETE FROM notify_groups").ok());
  c.group_by.clear();
  DeliveryOptions o;
  o.max_per_channel_per_run = 2;  // an ungrouped pass would read messages 1 and 2 alone
  auto d = Open({c}, o);
  std::vector<Attempt> a = Run(*d, 1041);
  ASSERT_EQ(a.size(), 2u);
  EXPECT_EQ(a[0].message_ids, (std::vector<int64_t>{1, 4}));
  EXPECT_EQ(a[1].message_ids, (std::vector<int64_t>{2, 3}));
  const std::vector<testing::RecordedRequest> reqs = server_.requests();
  ASSERT_EQ(reqs.size(), 4u);
  for (size_t i : {0u, 2u}) EXPECT_EQ(reqs[i].headers.at("webhook-id"), "tw-group-1-4-ch");
  for (size_t i : {1u, 3u}) EXPECT_EQ(reqs[i].headers.at("webhook-id"), "tw-group-2-3-ch");
  EXPECT_EQ(Count("state = 'sent'"), 4);
}

}  // namespace
}  // namespace tw::notify
