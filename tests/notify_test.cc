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
  ChannelConfig Channel(const std::string& type, const std::string& name = "ch") {
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

}  // namespace
}  // namespace tw::notify
