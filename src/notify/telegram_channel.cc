#include "notify/telegram_channel.h"

#include <algorithm>
#include <boost/json.hpp>

#include "base/json.h"
#include "notify/group.h"
#include "notify/render.h"

namespace tw::notify {

namespace {

constexpr size_t kTextMax = 4096;  // sendMessage's text, after entity parsing

std::string Escape(std::string_view s, std::string_view specials) {
  std::string out;
  out.reserve(s.size() + s.size() / 8);
  for (char c : s) {
    if (specials.find(c) != std::string_view::npos) out += '\\';
    out += c;
  }
  return out;
}

// A finding's text, cut to `max` bytes first and escaped after: a cut never splits an escape.
std::string Plain(std::string_view s, size_t max) { return EscapeMarkdownV2(TruncateUtf8(s, max)); }
// `code`, or "-" for nothing (an empty entity is refused).
std::string Code(std::string_view s, size_t max) {
  return s.empty() ? EscapeMarkdownV2("-") : "`" + EscapeMarkdownV2Code(TruncateUtf8(s, max)) + "`";
}
// A link Telegram will take (http and https only), or "".
std::string Link(const std::string& label, const std::string& url) {
  if (url.size() > 500 || !(url.starts_with("http://") || url.starts_with("https://"))) return "";
  return "[" + EscapeMarkdownV2(label) + "](" + EscapeMarkdownV2Link(url) + ")";
}

bool Resolved(const Notification& n) { return n.event == "finding.resolved"; }

std::string Head(const Notification& n) {
  return (Resolved(n) ? "RESOLVED" : AsciiUpper(n.severity)) +
         (n.event == "finding.repeat" ? " (still firing)" : n.event == "finding.escalated" ? " (escalated)" : "") +
         " · " + (n.title.empty() ? n.rule : n.title);
}

// How much of the finding's own words fit: `words` bytes for the message (half each for cause
// and fix); `details` adds the evidence and the sparkline.
struct Budget {
  size_t words;
  bool details;
};

std::string Text(const Notification& n, const std::string& link, Budget b) {
  std::string t = StatusEmoji(n) + " *" + Plain(Head(n), 150) + "*\n";
  t += "Run " + Code(n.run, 150) + (n.series.empty() ? "" : "  Series " + Code(n.series, 150)) + "\n";
  if (Resolved(n)) {
    t += Plain("The condition no longer holds. It was: " + TruncateUtf8(n.message, b.words), b.words + 64);
  } else {
    t += Plain(n.message, b.words);
    if (b.details) {
      for (const auto& [k, v] : EvidenceItems(n, 6)) t += "\n_" + Plain(k, 30) + "_ " + Plain(v, 50);
      if (!n.sparkline.empty()) t += "\n```\n" + EscapeMarkdownV2Code(TruncateUtf8(n.sparkline, 200)) + "\n```";
    }
    if (!n.cause.empty()) t += "\n*" + CauseLabel(n) + "*\n" + Plain(n.cause, b.words / 2);
    if (!n.fix.empty()) t += "\n*" + FixLabel(n) + "*\n" + Plain(n.fix, b.words / 2);
  }
  const std::string open = Link("Open the run", link);
  t += "\n" + (open.empty() ? "" : open + " · ") + EscapeMarkdownV2("trainwatch · rule ") + Code(n.rule, 80);
  return t;
}

std::string Body(const std::string& chat_id, const std::string& text) {
  Json preview;
  preview.Bool("is_disabled", true);
  Json m;
  m.Str("chat_id", chat_id).Str("text", text).Str("parse_mode", "MarkdownV2").Nested("link_preview_options", preview);
  return m.str();
}

}  // namespace

std::string EscapeMarkdownV2(std::string_view text) { return Escape(text, "_*[]()~`>#+-=|{}.!\\"); }
std::string EscapeMarkdownV2Code(std::string_view code) { return Escape(code, "`\\"); }
std::string EscapeMarkdownV2Link(std::string_view url) { return Escape(url, ")\\"); }

std::string TelegramMessage(const Notification& n, const std::string& chat_id, const std::string& link) {
  // Finding texts are short; the smaller budgets are for the long ones. The last, without the
  // details, always fits (its fixed parts are cut to a few hundred bytes each).
  std::string text;
  for (const Budget b : {Budget{1500, true}, {700, true}, {300, true}, {100, true}, {100, false}}) {
    text = Text(n, link, b);
    if (text.size() <= kTextMax) break;
  }
  return Body(chat_id, text);
}

std::string TelegramGroupMessage(const Group& g, const std::string& chat_id, std::string_view link_template) {
  const Notification* worst = nullptr;
  for (const Notification& n : g.items)
    if (!Resolved(n) && (!worst || n.level() > worst->level())) worst = &n;
  std::string text = (worst ? StatusEmoji(*worst) : "✅") + " *" + Plain(GroupTitle(g), 300) + "*\n" +
                     Plain(GroupSummary(g), 1000);
  constexpr size_t kTail = 100;  // "…and K more" and the footer
  size_t shown = 0;
  for (const Notification& n : g.items) {
    const std::string open = Link("Open", ExpandLinkTemplate(link_template, n));
    const std::string line = "\n• " + StatusEmoji(n) + " *" + Plain(Head(n), 120) + "* " + Code(n.run, 100) + " " +
                             Plain((Resolved(n) ? "no longer holds: " : "") + n.message, 300) +
                             (open.empty() ? "" : " " + open);
    if (text.size() + line.size() + kTail > kTextMax) break;
    text += line;
    shown++;
  }
  if (shown < g.items.size()) text += "\n" + EscapeMarkdownV2("…and " + std::to_string(g.items.size() - shown) + " more");
  text += "\n" + EscapeMarkdownV2("trainwatch · " + std::string(g.kind == "digest" ? "digest" : "grouped"));
  return Body(chat_id, text);
}

SendResult JudgeTelegram(const Result<HttpResponse>& r, double now) {
  SendResult s = JudgeHttp(r, now);
  if (!r.ok()) return s;
  boost::system::error_code ec;
  const boost::json::value v = boost::json::parse(r->body, ec);
  const boost::json::object* o = !ec && v.is_object() ? &v.as_object() : nullptr;
  const boost::json::value* ok = o ? o->if_contains("ok") : nullptr;
  const boost::json::value* p = o ? o->if_contains("parameters") : nullptr;
  const boost::json::object* params = p && p->is_object() ? &p->as_object() : nullptr;
  const auto param = [&](const char* key) -> const boost::json::value* {
    const boost::json::value* x = params ? params->if_contains(key) : nullptr;
    return x && x->is_number() ? x : nullptr;
  };
  if (s.kind == SendResult::Kind::kSent && !(ok && ok->is_bool() && ok->as_bool()))
    s.kind = SendResult::Kind::kRetry;  // not the Bot API answering (a portal, a proxy's page)
  else if (s.kind == SendResult::Kind::kRetry && s.http_status != 0)
    if (const boost::json::value* after = param("retry_after"))  // flood control says how long
      s.retry_after = std::max(0.0, after->to_number<double>());
  if (s.kind == SendResult::Kind::kPermanent)
    if (const boost::json::value* id = param("migrate_to_chat_id"))
      s.detail += " (the group is now a supergroup: set chat_id = " + boost::json::serialize(*id) + ")";
  return s;
}

namespace {

class TelegramChannel : public Channel {
 public:
  TelegramChannel(ChannelConfig c, Url url) : Channel(std::move(c)), url_(std::move(url)) {}
  SendResult DoSend(const Notification& n, const std::string&, double now) override {
    return Post(TelegramMessage(n, config().chat_id, ExpandLinkTemplate(config().link_template, n)), now);
  }
  SendResult DoSendGroup(const Group& g, const std::string&, double now) override {
    return Post(TelegramGroupMessage(g, config().chat_id, config().link_template), now);
  }

 private:
  SendResult Post(const std::string& body, double now) {
    return JudgeTelegram(HttpPost(url_, {{"Content-Type", "application/json"}}, body, config().http), now);
  }
  Url url_;  // {api_url}/bot<token>/sendMessage
};

// A bot token is the bot's id, ':', and a key of letters, digits, '_' and '-'.
bool LooksLikeToken(const std::string& t) {
  return t.find(':') != std::string::npos &&
         std::all_of(t.begin(), t.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == ':' || c == '_' || c == '-'; });
}

// A chat's number (-1001234567890) or a public channel's @username.
bool LooksLikeChatId(const std::string& id) {
  if (id.size() > 1 && id[0] == '@')
    return std::all_of(id.begin() + 1, id.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
  const size_t digits = id.starts_with("-") ? 1 : 0;
  return id.size() > digits && std::all_of(id.begin() + digits, id.end(), [](char c) { return c >= '0' && c <= '9'; });
}

}  // namespace

Result<std::unique_ptr<Channel>> MakeTelegramChannel(const ChannelConfig& c) {
  const std::string where = "channel '" + c.name + "': ";
  if (c.secret.empty()) return InvalidArgument(where + "needs bot_token, bot_token_env or bot_token_credential");
  // Never repeated: it is the bot's password.
  if (!LooksLikeToken(c.secret))
    return InvalidArgument(where + "bot_token is not a bot token (the bot's number, ':', then letters, digits, "
                           "'_' and '-', as @BotFather gives it)");
  if (!LooksLikeChatId(c.chat_id))
    return InvalidArgument(where + "chat_id must be a chat's number (-1001234567890) or a channel's @username, got '" +
                           c.chat_id + "'");
  Result<Url> url = ParseUrl(c.url);
  if (!url.ok()) return InvalidArgument(where + "api_url: " + url.status().message());
  if (url->target.find_first_of("?#") != std::string::npos)
    return InvalidArgument(where + "api_url must be the API's root, without a query");
  std::string root = url->target;
  while (root.ends_with("/")) root.pop_back();
  url->target = root + "/bot" + c.secret + "/sendMessage";
  return std::unique_ptr<Channel>(new TelegramChannel(c, *url));
}

std::string TelegramDestination(const ChannelConfig& c) { return RedactUrl(c.url) + " chat " + c.chat_id; }

}  // namespace tw::notify
