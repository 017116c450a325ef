#include "notify/teams_channel.h"

#include "base/json.h"
#include "notify/group.h"
#include "notify/render.h"

namespace tw::notify {

namespace {

// A group's blocks: 24 changes of at most about 800 bytes each, and "…and K more", keep a
// message under 20 KB, inside the 28 KB Teams takes.
constexpr size_t kGroupItemsMax = 25;

bool Resolved(const Notification& n) { return n.event == "finding.resolved"; }

// Adaptive Card colours are names: Good, Warning, Attention, Accent.
const char* Colour(const Notification& n) {
  if (Resolved(n)) return "Good";
  switch (n.level()) {
    case diagnose::Severity::kCritical: return "Attention";
    case diagnose::Severity::kWarning: return "Warning";
    case diagnose::Severity::kInfo: break;
  }
  return "Accent";
}

std::string Head(const Notification& n) {
  return StatusEmoji(n) + " " + (Resolved(n) ? "RESOLVED" : AsciiUpper(n.severity)) +
         (n.event == "finding.repeat" ? " (still firing)" : n.event == "finding.escalated" ? " (escalated)" : "") +
         " · " + (n.title.empty() ? n.rule : n.title);
}

Json TextBlock(std::string_view text, size_t max) {
  Json t;
  t.Str("type", "TextBlock").Str("text", TruncateUtf8(text, max)).Bool("wrap", true);
  return t;
}

Json Headline(const Notification& n, const char* size, size_t max) {
  Json t = TextBlock(Head(n), max);
  t.Str("weight", "Bolder").Str("size", size).Str("color", Colour(n));
  return t;
}

Json Fact(std::string_view title, std::string_view value) {
  Json f;
  f.Str("title", TruncateUtf8(title, 100)).Str("value", TruncateUtf8(value, 500));
  return f;
}

Json OpenUrl(const std::string& link) {
  Json a;
  a.Str("type", "Action.OpenUrl").Str("title", "Open the run").Str("url", link);
  return a;
}

// The message around a card.
std::string Envelope(const Json& body, const Json& actions) {
  Json msteams;
  msteams.Str("width", "Full");  // Teams draws cards narrow otherwise
  Json card;
  card.Str("$schema", "http://adaptivecards.io/schemas/adaptive-card.json").Str("type", "AdaptiveCard")
      .Str("version", "1.4").Nested("msteams", msteams).Nested("body", body);
  if (actions.str() != "[]") card.Nested("actions", actions);
  Json attachment;
  attachment.Str("contentType", "application/vnd.microsoft.card.adaptive").Raw("contentUrl", "null")
      .Nested("content", card);
  Json m;
  m.Str("type", "message").Nested("attachments", Json::Array().Push(attachment));
  return m.str();
}

}  // namespace

std::string TeamsMessage(const Notification& n, const std::string& link) {
  Json body = Json::Array();
  body.Push(Headline(n, "Medium", 300));
  Json facts = Json::Array();
  facts.Push(Fact("Run", n.run));
  if (!n.series.empty()) facts.Push(Fact("Series", n.series));
  if (n.first_step)
    facts.Push(Fact("Steps", std::to_string(*n.first_step) + (n.last_step ? ".." + std::to_string(*n.last_step) : "")));
  if (Resolved(n)) {
    body.Push(TextBlock("The condition no longer holds. It was: " + n.message, 3000));
  } else {
    body.Push(TextBlock(n.message, 3000));
    for (const auto& [k, v] : EvidenceItems(n, 10)) facts.Push(Fact(k, v));
  }
  Json fact_set;
  fact_set.Str("type", "FactSet").Nested("facts", facts);
  body.Push(fact_set);
  if (!Resolved(n)) {
    if (!n.sparkline.empty()) {
      Json spark = TextBlock(n.sparkline, 400);
      spark.Str("fontType", "Monospace");
      body.Push(spark);
    }
    if (!n.cause.empty()) body.Push(TextBlock("**" + CauseLabel(n) + ":** " + n.cause, 1500));
    if (!n.fix.empty()) body.Push(TextBlock("**" + FixLabel(n) + ":** " + n.fix, 1500));
  }
  Json footer = TextBlock("trainwatch · rule " + n.rule, 200);
  footer.Str("size", "Small").Bool("isSubtle", true);
  body.Push(footer);
  Json actions = Json::Array();
  if (!link.empty()) actions.Push(OpenUrl(link));
  return Envelope(body, actions);
}

std::string TeamsGroupMessage(const Group& g, std::string_view link_template) {
  Json body = Json::Array();
  Json title = TextBlock(GroupTitle(g), 300);
  title.Str("weight", "Bolder").Str("size", "Medium");
  body.Push(title);
  body.Push(TextBlock(GroupSummary(g, " · "), 1000));
  const size_t shown = g.items.size() <= kGroupItemsMax ? g.items.size() : kGroupItemsMax - 1;
  for (size_t i = 0; i < shown; ++i) {
    const Notification& n = g.items[i];
    Json items = Json::Array();
    items.Push(Headline(n, "Default", 150));
    items.Push(TextBlock("Run " + n.run + (n.series.empty() ? "" : " · " + n.series) + ": " +
                             (Resolved(n) ? "no longer holds. It was: " : "") + n.message,
                         400));
    Json container;
    container.Str("type", "Container").Bool("separator", true).Nested("items", items);
    const std::string link = ExpandLinkTemplate(link_template, n);
    if (!link.empty()) {
      Json select;  // the whole block opens the run
      select.Str("type", "Action.OpenUrl").Str("url", link);
      container.Nested("selectAction", select);
    }
    body.Push(container);
  }
  if (shown < g.items.size()) body.Push(TextBlock("…and " + std::to_string(g.items.size() - shown) + " more", 100));
  Json footer = TextBlock("trainwatch · " + std::string(g.kind == "digest" ? "digest" : "grouped"), 100);
  footer.Str("size", "Small").Bool("isSubtle", true);
  body.Push(footer);
  return Envelope(body, Json::Array());
}

SendResult JudgeTeams(const Result<HttpResponse>& r, double now) { return JudgeHttp(r, now); }

namespace {

class TeamsChannel : public Channel {
 public:
  TeamsChannel(ChannelConfig c, Url url) : Channel(std::move(c)), url_(std::move(url)) {}
  SendResult DoSend(const Notification& n, const std::string&, double now) override {
    return Post(TeamsMessage(n, ExpandLinkTemplate(config().link_template, n)), now);
  }
  SendResult DoSendGroup(const Group& g, const std::string&, double now) override {
    return Post(TeamsGroupMessage(g, config().link_template), now);
  }

 private:
  SendResult Post(const std::string& body, double now) {
    // The charset said outright: finding texts are UTF-8, not whatever a receiver would guess.
    return JudgeTeams(HttpPost(url_, {{"Content-Type", "application/json; charset=utf-8"}}, body, config().http), now);
  }
  Url url_;
};

}  // namespace

Result<std::unique_ptr<Channel>> MakeTeamsChannel(const ChannelConfig& c) {
  Result<Url> url = ChannelUrl(c);
  if (!url.ok()) return url.status();
  return std::unique_ptr<Channel>(new TeamsChannel(c, *url));
}

}  // namespace tw::notify
