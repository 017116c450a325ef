#include "notify/email.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <ctime>

#include "notify/render.h"

namespace tw::notify {

namespace {

constexpr const char* kHex = "0123456789ABCDEF";
constexpr size_t kSubjectMax = 200;       // bytes, before encoding
constexpr size_t kEvidenceMax = 40;       // items listed
constexpr size_t kEncodedChunk = 45;      // bytes per encoded word: 60 base64 chars, 72 in all

std::string Trim(std::string_view s) {
  const auto space = [](char c) { return c == ' ' || c == '\t'; };
  while (!s.empty() && space(s.front())) s.remove_prefix(1);
  while (!s.empty() && space(s.back())) s.remove_suffix(1);
  return std::string(s);
}

// A header value must stay on its line: CR or LF in a run name would otherwise start a header
// of its own (or the body).
std::string OneLine(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = ' ';
  return out;
}

bool PrintableAscii(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return c >= 0x20 && c <= 0x7e; });
}

// Every line end CRLF, as RFC 5322 wants: the quoted-printable encoder would otherwise encode
// a bare LF or CR as a byte of text.
std::string Crlf(std::string_view s) {
  std::string out;
  out.reserve(s.size() + s.size() / 32);
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\r' || s[i] == '\n') {
      if (s[i] == '\r' && i + 1 < s.size() && s[i + 1] == '\n') ++i;
      out += "\r\n";
    } else {
      out += s[i];
    }
  }
  return out;
}

bool AddressChar(char c) {
  // atext (RFC 5322 3.2.3) and '.', which covers dot-atom local parts and domain names.
  return std::isalnum(static_cast<unsigned char>(c)) ||
         std::string_view("!#$%&'*+-/=?^_`{|}~.").find(c) != std::string_view::npos;
}

// A display name as a phrase: atoms as they are, other ASCII quoted, anything else encoded.
std::string DisplayName(const std::string& name) {
  if (!PrintableAscii(name)) return EncodeHeaderText(name);
  if (std::all_of(name.begin(), name.end(), [](char c) { return c == ' ' || (AddressChar(c) && c != '.'); }))
    return name;
  std::string q = "\"";
  for (char c : name) {
    if (c == '"' || c == '\\') q += '\\';
    q += c;
  }
  return q + "\"";
}

std::string FormatMailbox(const Mailbox& m) {
  return m.name.empty() ? m.address : DisplayName(m.name) + " <" + m.address + ">";
}

// Multi-line finding texts as HTML: escaped, line breaks kept.
std::string HtmlText(std::string_view s) {
  std::string out;
  for (char c : HtmlEscape(s)) {
    if (c == '\n') out += "<br>\n";
    else out += c;
  }
  return out;
}

std::string Title(const Notification& n) { return n.title.empty() ? n.rule : n.title; }

std::string Headline(const Notification& n) {
  if (n.event == "finding.resolved") return "RESOLVED";
  return AsciiUpper(n.severity.empty() ? "warning" : n.severity) + (n.event == "finding.repeat" ? " (still firing)" : "");
}

// A group's item: the headline with what changed, unless it is plain news of a firing.
std::string ItemHeadline(const Notification& n) {
  if (n.event == "finding.resolved" || n.event == "finding.firing") return Headline(n);
  return AsciiUpper(n.severity.empty() ? "warning" : n.severity) + " (" + EventWords(n.event) + ")";
}

const char* Colour(const Notification& n) {
  if (n.event == "finding.resolved") return "#2e7d32";
  if (n.severity == "critical") return "#c62828";
  if (n.severity == "warning") return "#ef6c00";
  return "#1565c0";
}

std::string PlainText(const Notification& n, const std::string& link) {
  const bool resolved = n.event == "finding.resolved";
  std::string t = Headline(n) + " · " + Title(n) + "\n";
  t += "Run: " + n.run + "\n";
  if (!n.series.empty()) t += "Series: " + n.series + "\n";
  t += "\n" + std::string(resolved ? "The condition no longer holds. It was: " : "") + n.message + "\n";
  if (!resolved) {
    const auto items = EvidenceItems(n, kEvidenceMax);
    if (!items.empty()) {
      t += "\nEvidence\n";
      for (const auto& [k, v] : items) t += "  " + k + ": " + v + "\n";
    }
    if (!n.sparkline.empty()) t += "\nRecent curve\n  " + n.sparkline + "\n";
    if (!n.cause.empty()) t += "\n" + CauseLabel(n) + "\n" + n.cause + "\n";
    if (!n.fix.empty()) t += "\n" + FixLabel(n) + "\n" + n.fix + "\n";
  }
  if (!link.empty()) t += "\nOpen the run: " + link + "\n";
  t += "\n-- \ntrainwatch · rule " + n.rule + " · " + n.event + "\n";
  return t;
}

std::string Html(const Notification& n, const std::string& link, const std::string& subject) {
  const bool resolved = n.event == "finding.resolved";
  std::string h = "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>" + HtmlEscape(subject) +
                  "</title></head>\n<body style=\"font-family: sans-serif; line-height: 1.4\">\n";
  h += "<h2 style=\"color: " + std::string(Colour(n)) + "\">" + HtmlEscape(Headline(n)) + " · " +
       HtmlEscape(Title(n)) + "</h2>\n";
  h += "<p><b>Run</b> <code>" + HtmlEscape(n.run) + "</code>";
  if (!n.series.empty()) h += " &nbsp; <b>Series</b> <code>" + HtmlEscape(n.series) + "</code>";
  h += "</p>\n<p>" + std::string(resolved ? "The condition no longer holds. It was: " : "") +
       HtmlText(n.message) + "</p>\n";
  if (!resolved) {
    const auto items = EvidenceItems(n, kEvidenceMax);
    if (!items.empty()) {
      h += "<h3>Evidence</h3>\n<table cellpadding=\"3\">\n";
      for (const auto& [k, v] : items)
        h += "<tr><th align=\"left\">" + HtmlEscape(k) + "</th><td>" + HtmlEscape(v) + "</td></tr>\n";
      h += "</table>\n";
    }
    if (!n.sparkline.empty())
      h += "<h3>Recent curve</h3>\n<pre style=\"font-size: 150%\">" + HtmlEscape(n.sparkline) + "</pre>\n";
    if (!n.cause.empty()) h += "<h3>" + CauseLabel(n) + "</h3>\n<p>" + HtmlText(n.cause) + "</p>\n";
    if (!n.fix.empty()) h += "<h3>" + FixLabel(n) + "</h3>\n<p>" + HtmlText(n.fix) + "</p>\n";
  }
  // Only web links: a template is configuration, but a javascript: URL is never wanted.
  if (link.starts_with("http://") || link.starts_with("https://"))
    h += "<p><a href=\"" + HtmlEscape(link) + "\">Open the run</a></p>\n";
  h += "<p style=\"color: #777; font-size: 90%\">trainwatch · rule <code>" + HtmlEscape(n.rule) +
       "</code> · " + HtmlEscape(n.event) + "</p>\n</body></html>\n";
  return h;
}

std::string GroupText(const Group& g, std::string_view link_template) {
  std::string t = GroupTitle(g) + "\n" + GroupSummary(g, ", ", 20) + "\n";
  for (const Notification& n : g.items) {
    const bool resolved = n.event == "finding.resolved";
    t += "\n" + std::string(40, '-') + "\n" + ItemHeadline(n) + " · " + Title(n) + "\n";
    t += "Run: " + n.run + "\n";
    if (!n.series.empty()) t += "Series: " + n.series + "\n";
    t += std::string(resolved ? "The condition no longer holds. It was: " : "") + n.message + "\n";
    if (!resolved && !n.cause.empty()) t += CauseLabel(n) + ": " + n.cause + "\n";
    if (!resolved && !n.fix.empty()) t += FixLabel(n) + ": " + n.fix + "\n";
    const std::string link = ExpandLinkTemplate(link_template, n);
    if (!link.empty()) t += "Open the run: " + link + "\n";
  }
  t += "\n-- \ntrainwatch · " + std::string(g.kind == "digest" ? "digest" : "grouped") + "\n";
  return t;
}

std::string GroupHtml(const Group& g, std::string_view link_template, const std::string& subject) {
  std::string h = "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>" + HtmlEscape(subject) +
                  "</title></head>\n<body style=\"font-family: sans-serif; line-height: 1.4\">\n";
  h += "<h2>" + HtmlEscape(GroupTitle(g)) + "</h2>\n<p>" + HtmlText(GroupSummary(g, ", ", 20)) + "</p>\n";
  for (const Notification& n : g.items) {
    const bool resolved = n.event == "finding.resolved";
    h += "<hr>\n<h3 style=\"color: " + std::string(Colour(n)) + "\">" + HtmlEscape(ItemHeadline(n)) + " · " +
         HtmlEscape(Title(n)) + "</h3>\n";
    h += "<p><b>Run</b> <code>" + HtmlEscape(n.run) + "</code>";
    if (!n.series.empty()) h += " &nbsp; <b>Series</b> <code>" + HtmlEscape(n.series) + "</code>";
    h += "</p>\n<p>" + std::string(resolved ? "The condition no longer holds. It was: " : "") +
         HtmlText(n.message) + "</p>\n";
    if (!resolved && !n.cause.empty()) h += "<p><b>" + CauseLabel(n) + "</b>: " + HtmlText(n.cause) + "</p>\n";
    if (!resolved && !n.fix.empty()) h += "<p><b>" + FixLabel(n) + "</b>: " + HtmlText(n.fix) + "</p>\n";
    const std::string link = ExpandLinkTemplate(link_template, n);
    if (link.starts_with("http://") || link.starts_with("https://"))
      h += "<p><a href=\"" + HtmlEscape(link) + "\">Open the run</a></p>\n";
  }
  h += "<p style=\"color: #777; font-size: 90%\">trainwatch · " +
       std::string(g.kind == "digest" ? "digest" : "grouped") + "</p>\n</body></html>\n";
  return h;
}

}  // namespace

Result<Mailbox> ParseMailbox(std::string_view text) {
  Mailbox m;
  std::string addr;
  const size_t lt = text.find('<');
  if (lt != std::string_view::npos) {
    const std::string rest = Trim(text.substr(lt + 1));
    if (rest.empty() || rest.back() != '>' || rest.find('>') != rest.size() - 1)
      return InvalidArgument("email address \"" + OneLine(text) + "\": '<' without a closing '>' at the end");
    addr = rest.substr(0, rest.size() - 1);
    m.name = Trim(text.substr(0, lt));
    if (m.name.size() >= 2 && m.name.front() == '"' && m.name.back() == '"')
      m.name = m.name.substr(1, m.name.size() - 2);
    if (!std::all_of(m.name.begin(), m.name.end(), [](char c) { return static_cast<unsigned char>(c) >= 0x20 && c != 0x7f; }))
      return InvalidArgument("email address \"" + OneLine(text) + "\": the name has a control character");
  } else {
    addr = Trim(text);
  }
  const size_t at = addr.find('@');
  const bool ok = at != std::string::npos && at > 0 && at + 1 < addr.size() &&
                  addr.find('@', at + 1) == std::string::npos &&
                  std::all_of(addr.begin(), addr.end(), [](char c) { return c == '@' || AddressChar(c); });
  if (!ok)
    return InvalidArgument("email address \"" + OneLine(text) +
                           "\" is not local@domain (ASCII, no spaces, quotes or brackets)");
  m.address = addr;
  return m;
}

std::string HtmlEscape(std::string_view s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string EncodeHeaderText(std::string_view raw) {
  const std::string s = OneLine(raw);
  // "=?" in plain text could be read as the start of an encoded word: encode that too.
  if (PrintableAscii(s) && s.find("=?") == std::string::npos) return s;
  std::string out;
  for (size_t pos = 0; pos < s.size();) {
    size_t len = std::min(kEncodedChunk, s.size() - pos);
    // Never split a UTF-8 character between two words (RFC 2047 6.3 asks for whole ones).
    while (pos + len < s.size() && len > 1 && (static_cast<unsigned char>(s[pos + len]) & 0xC0) == 0x80) len--;
    if (!out.empty()) out += "\r\n ";  // folding between words; decoders drop it
    out += "=?UTF-8?B?" + Base64(std::string_view(s).substr(pos, len)) + "?=";
    pos += len;
  }
  return out;
}

std::string RfcDate(double unix_seconds) {
  static const char* kDays[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
  static const char* kMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                  "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  const std::time_t t = static_cast<std::time_t>(unix_seconds);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[48];
  // Names spelt out here: strftime's %a and %b follow the locale, and RFC 5322 wants English.
  std::snprintf(buf, sizeof buf, "%s, %02d %s %04d %02d:%02d:%02d +0000", kDays[tm.tm_wday % 7], tm.tm_mday,
                kMonths[tm.tm_mon % 12], tm.tm_year + 1900, tm.tm_hour, tm.tm_min, tm.tm_sec);
  return buf;
}

std::string MessageIdFor(std::string_view key, std::string_view from_address) {
  std::string left;
  for (unsigned char c : key) {
    if (std::isalnum(c) || c == '-' || c == '_') {
      left += static_cast<char>(c);
    } else {  // '=' is atext; dots, spaces and the rest would need quoting
      left += '=';
      left += kHex[c >> 4];
      left += kHex[c & 15];
    }
  }
  const size_t at = from_address.rfind('@');
  const std::string_view domain = at == std::string_view::npos ? "trainwatch.invalid" : from_address.substr(at + 1);
  return "<" + left + "@" + std::string(domain) + ">";
}

EmailContent RenderEmail(const Notification& n, const std::string& link) {
  EmailContent c;
  c.subject = TruncateUtf8(OneLine("[trainwatch] " + Headline(n) + " " + Title(n) + " on " + n.run), kSubjectMax);
  c.text = PlainText(n, link);
  c.html = Html(n, link, c.subject);
  return c;
}

EmailContent RenderGroupEmail(const Group& g, std::string_view link_template) {
  EmailContent c;
  std::string what;
  const GroupCounts counts = CountGroup(g);
  for (size_t i = 0; i < counts.events.size(); ++i)
    what += (i ? ", " : "") + std::to_string(counts.events[i].second) + " " + EventWords(counts.events[i].first);
  c.subject = TruncateUtf8(OneLine("[trainwatch] " + GroupTitle(g) + " (" + what + ")"), kSubjectMax);
  c.text = GroupText(g, link_template);
  c.html = GroupHtml(g, link_template, c.subject);
  return c;
}

EmailMessage BuildEmail(const Mailbox& from, const std::vector<Mailbox>& to, const EmailContent& content,
                        std::string_view key, double now) {
  EmailMessage m;
  std::string to_line = "To: ";
  for (size_t i = 0; i < to.size(); ++i) to_line += (i ? ",\r\n " : "") + FormatMailbox(to[i]);
  m.headers = {
      "From: " + FormatMailbox(from),
      to_line,
      "Subject: " + EncodeHeaderText(content.subject),
      "Date: " + RfcDate(now),
      "Message-ID: " + MessageIdFor(key, from.address),
      "Auto-Submitted: auto-generated",  // RFC 3834: no vacation replies to alerts
  };
  m.text = Crlf(content.text);
  m.html = Crlf(content.html);
  return m;
}

}  // namespace tw::notify
