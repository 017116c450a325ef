#include "notify/render.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <boost/json.hpp>
#include <cstdio>

#include "base/json.h"
#include "base/strings.h"

namespace tw::notify {

namespace {

// Slack's limits, in characters; we count bytes, which is stricter.
constexpr size_t kHeaderMax = 150;
constexpr size_t kSectionMax = 3000;
constexpr size_t kFieldMax = 2000;
constexpr size_t kMaxFields = 10;
constexpr size_t kFallbackMax = 3000;
constexpr size_t kGroupItemsMax = 40;      // sections for a group's items: 40 + 4 others < 50 blocks
constexpr size_t kGroupMessageMax = 600;   // bytes of each item's message in a group

// Slack mrkdwn needs &, < and > escaped; everything else is literal.
std::string Mrkdwn(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '&') out += "&amp;";
    else if (c == '<') out += "&lt;";
    else if (c == '>') out += "&gt;";
    else out += c;
  }
  return out;
}

Json Text(std::string_view type, std::string_view text) {
  Json t;
  t.Str("type", type).Str("text", text);
  return t;
}

Json Section(std::string_view mrkdwn) {
  Json b;
  b.Str("type", "section").Nested("text", Text("mrkdwn", TruncateUtf8(mrkdwn, kSectionMax)));
  return b;
}

// The evidence items as "*key*\nvalue" fields.
Json EvidenceFields(const Notification& n, size_t max_fields) {
  Json fields = Json::Array();
  for (const auto& [k, v] : EvidenceItems(n, max_fields))
    fields.Push(Text("mrkdwn", TruncateUtf8("*" + Mrkdwn(k) + "*\n" + Mrkdwn(v), kFieldMax)));
  return fields;
}

}  // namespace

std::vector<std::pair<std::string, std::string>> EvidenceItems(const Notification& n, size_t max_items) {
  std::vector<std::pair<std::string, std::string>> items;
  if (n.onset_step && items.size() < max_items) items.emplace_back("onset step", std::to_string(*n.onset_step));
  boost::system::error_code ec;
  boost::json::value v = boost::json::parse(n.evidence, ec);
  if (ec || !v.is_object()) return items;
  for (const auto& [key, val] : v.as_object()) {
    if (items.size() >= max_items) break;
    std::string text;
    if (val.is_string()) text = std::string(val.as_string());
    else if (val.is_double()) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.4g", val.as_double());
      text = buf;
    } else if (val.is_int64() || val.is_uint64() || val.is_bool()) text = boost::json::serialize(val);
    else continue;
    items.emplace_back(std::string(key), text);
  }
  return items;
}

std::string StatusEmoji(const Notification& n) {
  if (n.event == "finding.resolved") return "✅";
  if (n.event == "run.finished") return "🏁";
  if (n.event == "run.crashed") return "💥";
  if (n.event == "run.started") return "▶️";
  if (n.event == "run.resumed") return "🔁";
  if (n.severity == "critical") return "🔴";
  if (n.severity == "warning") return "🟠";
  return "🔵";
}

std::string TruncateUtf8(std::string_view s, size_t max_bytes) {
  if (s.size() <= max_bytes) return std::string(s);
  const std::string_view ellipsis = "…";
  size_t cut = max_bytes > ellipsis.size() ? max_bytes - ellipsis.size() : 0;
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) cut--;  // not mid-character
  return std::string(s.substr(0, cut)) + std::string(ellipsis);
}

std::string ExpandLinkTemplate(std::string_view tmpl, const Notification& n) {
  // A message about no finding (a run event, a test) has no finding's page to link to.
  if (n.finding_id == 0 && tmpl.find("{finding_id}") != std::string_view::npos) return "";
  std::string out;
  for (size_t i = 0; i < tmpl.size();) {
    auto try_key = [&](std::string_view key, const std::string& value) {
      if (tmpl.substr(i, key.size()) != key) return false;
      out += PercentEncode(value);
      i += key.size();
      return true;
    };
    if (tmpl[i] == '{' &&
        (try_key("{run}", n.run) || try_key("{series}", n.series) || try_key("{rule}", n.rule) ||
         try_key("{step}", n.onset_step ? std::to_string(*n.onset_step) : std::string()) ||
         try_key("{finding_id}", std::to_string(n.finding_id))))
      continue;
    out += tmpl[i++];
  }
  return out;
}

std::string SlackMessage(const Notification& n, const std::string& link) {
  const bool resolved = n.event == "finding.resolved";
  const std::string where = "*Run* `" + Mrkdwn(n.run) + "`" +
                            (n.series.empty() ? "" : "   *Series* `" + Mrkdwn(n.series) + "`");
  Json blocks = Json::Array();
  Json header;
  const bool repeat = n.event == "finding.repeat";
  // A run event says what happened to which run ("🏁 Run finished: exp/a"); a finding its severity.
  const std::string head = n.is_run_event()
                               ? StatusEmoji(n) + " " + n.title + ": " + n.run
                               : StatusEmoji(n) + " " + (resolved ? "RESOLVED" : AsciiUpper(n.severity)) +
                                     (repeat ? " (still firing)" : "") + " · " + (n.title.empty() ? n.rule : n.title);
  header.Str("type", "header").Nested("text", Text("plain_text", TruncateUtf8(head, kHeaderMax)));
  blocks.Push(header);
  if (resolved) {
    blocks.Push(Section(where + "\nThe condition no longer holds. It was: " + Mrkdwn(n.message)));
  } else {
    blocks.Push(Section(where + "\n" + Mrkdwn(n.message)));
    Json fields = EvidenceFields(n, kMaxFields);
    if (fields.str() != "[]") {
      Json f;
      f.Str("type", "section").Nested("fields", fields);
      blocks.Push(f);
    }
    if (!n.sparkline.empty()) blocks.Push(Section("```" + n.sparkline + "```"));
    if (!n.cause.empty()) blocks.Push(Section("*" + CauseLabel(n) + "*\n" + Mrkdwn(n.cause)));
    if (!n.fix.empty()) blocks.Push(Section("*" + FixLabel(n) + "*\n" + Mrkdwn(n.fix)));
  }
  std::string context = n.is_run_event() ? "trainwatch · `" + n.event + "`" : "trainwatch · rule `" + Mrkdwn(n.rule) + "`";
  if (!link.empty()) context = "<" + link + "|Open the run> · " + context;
  Json ctx_el = Json::Array();
  ctx_el.Push(Text("mrkdwn", TruncateUtf8(context, kSectionMax)));
  Json ctx;
  ctx.Str("type", "context").Nested("elements", ctx_el);
  blocks.Push(ctx);

  const std::string fallback = n.is_run_event() ? n.title + ": " + n.message
                               : (resolved ? "[resolved] " : "[" + n.severity + (repeat ? ", still firing" : "") + "] ") +
                                     (n.title.empty() ? n.rule : n.title) + " on " + n.run +
                                     (n.series.empty() ? "" : " (" + n.series + ")") + ": " + n.message;
  Json msg;
  msg.Str("text", TruncateUtf8(fallback, kFallbackMax)).Nested("blocks", blocks);
  return msg.str();
}

std::string SlackGroupMessage(const Group& g, std::string_view link_template) {
  // The group's colour: the worst severity still firing; a check mark when all is resolved.
  const Notification* worst = nullptr;
  for (const Notification& n : g.items)
    if (n.event != "finding.resolved" && (!worst || n.level() > worst->level())) worst = &n;
  const std::string emoji = worst ? StatusEmoji(*worst) : "✅";
  const std::string title = GroupTitle(g);
  Json blocks = Json::Array();
  Json header;
  header.Str("type", "header").Nested("text", Text("plain_text", TruncateUtf8(emoji + " " + title, kHeaderMax)));
  blocks.Push(header);
  blocks.Push(Section(Mrkdwn(GroupSummary(g))));
  const size_t shown = g.items.size() <= kGroupItemsMax ? g.items.size() : kGroupItemsMax - 1;
  for (size_t i = 0; i < shown; ++i) {
    const Notification& n = g.items[i];
    const bool resolved = n.event == "finding.resolved";
    std::string text = StatusEmoji(n) + " *" + (resolved ? "RESOLVED" : AsciiUpper(n.severity)) +
                       (n.event == "finding.firing" || resolved ? "" : " (" + EventWords(n.event) + ")") + " · " +
                       Mrkdwn(n.title.empty() ? n.rule : n.title) + "*\n*Run* `" + Mrkdwn(n.run) + "`" +
                       (n.series.empty() ? "" : "   *Series* `" + Mrkdwn(n.series) + "`") + "\n" +
                       (resolved ? "No longer holds. It was: " : "") +
                       Mrkdwn(TruncateUtf8(n.message, kGroupMessageMax));
    const std::string link = ExpandLinkTemplate(link_template, n);
    if (!link.empty()) text += "\n<" + link + "|Open the run>";
    blocks.Push(Section(text));
  }
  if (shown < g.items.size())
    blocks.Push(Section("…and " + std::to_string(g.items.size() - shown) + " more"));
  Json ctx_el = Json::Array();
  ctx_el.Push(Text("mrkdwn", "trainwatch · " + std::string(g.kind == "digest" ? "digest" : "grouped")));
  Json ctx;
  ctx.Str("type", "context").Nested("elements", ctx_el);
  blocks.Push(ctx);

  std::string fallback = title + ": ";
  for (size_t i = 0; i < g.items.size(); ++i) {
    const Notification& n = g.items[i];
    fallback += (i ? "; " : "") + std::string("[") + (n.event == "finding.resolved" ? "resolved" : n.severity) + "] " +
                (n.title.empty() ? n.rule : n.title) + " on " + n.run;
    if (fallback.size() > kFallbackMax) break;
  }
  Json msg;
  msg.Str("text", TruncateUtf8(fallback, kFallbackMax)).Nested("blocks", blocks);
  return msg.str();
}

std::string CauseLabel(const Notification& n) {
  return n.event == "run.finished" || n.event == "run.crashed" ? "How it ended" : n.is_run_event() ? "How" : "Likely cause";
}

std::string FixLabel(const Notification& n) { return n.is_run_event() ? "What to keep" : "What to do"; }

std::string ConsoleLine(const Notification& n) {
  if (n.is_run_event()) return "notify: " + n.event + ": " + n.message + " " + CauseLabel(n) + ": " + n.cause + ".";
  const bool resolved = n.event == "finding.resolved";
  return std::string("notify: ") + (resolved ? "resolved" : "[" + n.severity + "] " + n.event) + ": " +
         n.rule + " on " + n.run + (n.series.empty() ? "" : " (" + n.series + ")") + ": " +
         (resolved ? "no longer holds; was: " : "") + n.message;
}

std::string WebhookSignature(std::string_view secret, std::string_view id, int64_t timestamp,
                             std::string_view body) {
  std::string key(secret);
  if (secret.starts_with("whsec_")) {
    const std::string_view b64 = secret.substr(6);
    std::string decoded(b64.size() * 3 / 4 + 3, '\0');
    const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(decoded.data()),
                                  reinterpret_cast<const unsigned char*>(b64.data()),
                                  static_cast<int>(b64.size()));
    if (n >= 0) {
      // EVP_DecodeBlock counts the padding's zero bytes in; take them back off.
      size_t len = static_cast<size_t>(n);
      if (b64.ends_with("==")) len -= 2;
      else if (b64.ends_with("=")) len -= 1;
      key = decoded.substr(0, len);
    }
  }
  const std::string signed_content = std::string(id) + "." + std::to_string(timestamp) + "." + std::string(body);
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int mac_len = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(signed_content.data()), signed_content.size(), mac, &mac_len);
  return "v1," + Base64(std::string_view(reinterpret_cast<const char*>(mac), mac_len));
}

std::string AsciiUpper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

std::string Base64(std::string_view bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3) + 1, '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(bytes.data()),
                                static_cast<int>(bytes.size()));
  out.resize(static_cast<size_t>(std::max(n, 0)));
  return out;
}

}  // namespace tw::notify
