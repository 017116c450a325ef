// Email: what a message about a finding says (subject, plain text, escaped HTML), the RFC 5322
// / MIME message around it (encoded words, Message-ID from the idempotency key; and, as curl
// puts it on the wire to a loopback SMTP sink, quoted-printable parts in short 7-bit CRLF
// lines), how SMTP replies are judged, and the SendGrid channel against the loopback HTTP
// server. The SMTP conversation itself is in smtp_test.cc.
#include <gtest/gtest.h>
#include <openssl/evp.h>

#include <boost/json.hpp>
#include <cctype>
#include <sstream>

#include "notify/channel.h"
#include "notify/email.h"
#include "notify/email_channel.h"
#include "notify/smtp.h"
#include "support/http_server.h"
#include "support/smtp_sink.h"

namespace tw::notify {
namespace {

namespace json = boost::json;
using testing::HttpServer;
using testing::Reply;

Notification Finding() {
  Notification n;
  n.event = "finding.firing";
  n.time = 1700000000;
  n.rule = "non_finite_loss";
  n.title = "Loss is NaN or infinite";
  n.severity = "critical";
  n.run = "exp/<b>bert</b> & co";
  n.series = "Loss/train";
  n.onset_step = 700;
  n.message = "Loss/train is NaN from step 700";
  n.cause = "An overflow: <script>alert(1)</script>";
  n.fix = "Lower the LR & \"clip\" the gradients";
  n.evidence = R"({"first_non_finite_step":700,"ratio":2.5,"list":[1,2]})";
  n.sparkline = "▇▆▅▄▃▂▁×";
  return n;
}

std::vector<std::string> Lines(const std::string& crlf_text) {
  std::vector<std::string> lines;
  size_t pos = 0;
  for (size_t end; (end = crlf_text.find("\r\n", pos)) != std::string::npos; pos = end + 2)
    lines.push_back(crlf_text.substr(pos, end - pos));
  if (pos < crlf_text.size()) lines.push_back(crlf_text.substr(pos));
  return lines;
}

// A decoder written from RFC 2045 6.7 for the round trip (the SMTP tests use Python's).
std::string DecodeQuotedPrintable(const std::string& qp) {
  std::string out;
  for (size_t i = 0; i < qp.size(); ++i) {
    if (qp[i] != '=') {
      out += qp[i];
    } else if (qp.compare(i + 1, 2, "\r\n") == 0) {
      i += 2;  // soft break
    } else {
      out += static_cast<char>(std::stoi(qp.substr(i + 1, 2), nullptr, 16));
      i += 2;
    }
  }
  std::string lf;  // hard breaks back to "\n"
  for (size_t i = 0; i < out.size(); ++i)
    if (!(out[i] == '\r' && i + 1 < out.size() && out[i + 1] == '\n')) lf += out[i];
  return lf;
}

std::string DecodeBase64(const std::string& b64) {
  std::string out(b64.size(), '\0');
  int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(b64.data()), static_cast<int>(b64.size()));
  size_t len = static_cast<size_t>(std::max(n, 0));
  if (b64.ends_with("==")) len -= 2;
  else if (b64.ends_with("=")) len -= 1;
  return out.substr(0, len);
}

std::string Lf(const std::string& crlf_text) {
  std::string out;
  for (size_t i = 0; i < crlf_text.size(); ++i)
    if (!(crlf_text[i] == '\r' && i + 1 < crlf_text.size() && crlf_text[i + 1] == '\n')) out += crlf_text[i];
  return out;
}

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// The message as curl puts it on the wire, caught by a loopback SMTP sink of the tests' own.
std::string OnTheWire(const EmailMessage& m) {
  testing::SmtpSink sink;
  SmtpServer s;
  s.host = "127.0.0.1";
  s.port = sink.port();
  s.security = SmtpSecurity::kNone;
  s.timeout_seconds = 10;
  const Result<SmtpReply> r = SmtpSend(s, "alerts@example.com", {"a@example.com"}, m);
  EXPECT_TRUE(r.ok()) << r.status().message();
  if (r.ok()) {
    EXPECT_EQ(r->code, 250) << r->step << " " << r->text;
  }
  const std::vector<std::string> got = sink.messages();
  EXPECT_EQ(got.size(), 1u);
  return got.empty() ? "" : got[0];
}

struct WirePart {
  std::string head, body;  // head: its header lines with their CRLFs
};
struct WireMessage {
  std::string head;
  std::vector<WirePart> parts;
};

// A multipart message cut at its boundary (RFC 2046 5.1.1: the CRLF before a delimiter is the
// delimiter's), by the boundary its Content-Type names.
WireMessage ParseWire(const std::string& raw) {
  WireMessage w;
  const size_t end = raw.find("\r\n\r\n");
  if (end == std::string::npos) return w;
  w.head = raw.substr(0, end + 2);
  const size_t at = Lower(w.head).find("boundary=");
  if (at == std::string::npos) return w;
  std::string boundary = w.head.substr(at + 9, w.head.find("\r\n", at) - at - 9);
  if (boundary.size() >= 2 && boundary.front() == '"') boundary = boundary.substr(1, boundary.size() - 2);
  const std::string delimiter = "\r\n--" + boundary;
  const std::string body = "\r\n" + raw.substr(end + 4);  // no preamble: the first delimiter opens the body
  for (size_t pos = body.find(delimiter); pos != std::string::npos;) {
    const size_t start = pos + delimiter.size();
    if (body.compare(start, 2, "--") == 0) break;  // the close delimiter
    const size_t next = body.find(delimiter, start);
    const std::string part = body.substr(start + 2, next - start - 2);
    const size_t blank = part.find("\r\n\r\n");
    if (blank == std::string::npos) break;
    w.parts.push_back({part.substr(0, blank + 2), part.substr(blank + 4)});
    pos = next;
  }
  return w;
}

TEST(EmailRender, SubjectNamesSeverityTitleAndRunAndResolvedSaysResolved) {
  Notification n = Finding();
  n.run = "exp/bert-1";
  EXPECT_EQ(RenderEmail(n, "").subject, "[trainwatch] CRITICAL Loss is NaN or infinite on exp/bert-1");
  n.title = "";
  EXPECT_EQ(RenderEmail(n, "").subject, "[trainwatch] CRITICAL non_finite_loss on exp/bert-1");
  n.event = "finding.resolved";
  const EmailContent resolved = RenderEmail(n, "");
  EXPECT_EQ(resolved.subject, "[trainwatch] RESOLVED non_finite_loss on exp/bert-1");
  EXPECT_NE(resolved.text.find("no longer holds"), std::string::npos) << resolved.text;
  EXPECT_EQ(resolved.text.find("Lower the LR"), std::string::npos);  // no fix for what is over
  n.run = "a\r\nBcc: victim@example.com";  // a run name cannot add a header
  EXPECT_EQ(RenderEmail(n, "").subject.find_first_of("\r\n"), std::string::npos);
}

TEST(EmailRender, TextAndHtmlCarryTheSlackMessagesFactsAndHtmlIsEscaped) {
  const Notification n = Finding();
  const EmailContent c = RenderEmail(n, "http://tb:6006/?run=a&b=1");
  for (const std::string& part : {c.text, c.html}) {
    SCOPED_TRACE(part);
    for (const char* fact : {"CRITICAL", "Loss is NaN or infinite", "Loss/train", "NaN from step 700",
                             "first_non_finite_step", "onset step", "2.5", "▇▆▅▄▃▂▁×", "non_finite_loss"})
      EXPECT_NE(part.find(fact), std::string::npos) << fact;
    EXPECT_EQ(part.find("list"), std::string::npos);  // arrays stay in the webhook payload
  }
  EXPECT_NE(c.text.find("exp/<b>bert</b> & co"), std::string::npos);
  EXPECT_NE(c.text.find("<script>alert(1)</script>"), std::string::npos);
  EXPECT_NE(c.text.find("Open the run: http://tb:6006/?run=a&b=1"), std::string::npos);
  EXPECT_NE(c.html.find("exp/&lt;b&gt;bert&lt;/b&gt; &amp; co"), std::string::npos);
  EXPECT_NE(c.html.find("&lt;script&gt;alert(1)&lt;/script&gt;"), std::string::npos);
  EXPECT_NE(c.html.find("Lower the LR &amp; &quot;clip&quot;"), std::string::npos);
  EXPECT_NE(c.html.find("<a href=\"http://tb:6006/?run=a&amp;b=1\">"), std::string::npos);
  EXPECT_EQ(c.html.find("<script>"), std::string::npos);
  EXPECT_EQ(c.html.find("<b>bert"), std::string::npos);
  EXPECT_EQ(RenderEmail(n, "javascript:alert(1)").html.find("javascript:"), std::string::npos);
}

TEST(EmailRender, HeaderTextIsEncodedWhenNotAsciiInWholeCharacters) {
  EXPECT_EQ(EncodeHeaderText("[trainwatch] CRITICAL x on y"), "[trainwatch] CRITICAL x on y");
  const std::string text = "[trainwatch] CRITICAL Verlust ist NaN – Lauf «größer» " + std::string(40, 'x') + " €€€";
  const std::string encoded = EncodeHeaderText(text);
  std::string decoded;
  for (const std::string& line : Lines(encoded)) {
    const std::string word = line.starts_with(" ") ? line.substr(1) : line;
    ASSERT_TRUE(word.starts_with("=?UTF-8?B?") && word.ends_with("?=")) << encoded;
    EXPECT_LE(word.size(), 75u);  // RFC 2047 2
    const std::string bytes = DecodeBase64(word.substr(10, word.size() - 12));
    EXPECT_NE((static_cast<unsigned char>(bytes[0]) & 0xC0), 0x80u) << "a word starts mid-character";
    decoded += bytes;
  }
  EXPECT_GT(Lines(encoded).size(), 1u);
  EXPECT_EQ(decoded, text);
  EXPECT_TRUE(EncodeHeaderText("looks =?like?= a word").starts_with("=?UTF-8?B?"));
  EXPECT_EQ(EncodeHeaderText("a\r\nBcc: x").find_first_of("\r\n"), std::string::npos);
}

TEST(EmailRender, MessageIdComesFromTheIdempotencyKey) {
  EXPECT_EQ(MessageIdFor("tw-12-ops", "alerts@example.com"), "<tw-12-ops@example.com>");
  EXPECT_EQ(MessageIdFor("tw-12-ops", "alerts@example.com"), MessageIdFor("tw-12-ops", "x@example.com"));
  EXPECT_NE(MessageIdFor("tw-12-ops", "alerts@example.com"), MessageIdFor("tw-13-ops", "alerts@example.com"));
  EXPECT_EQ(MessageIdFor("tw-1-my team.mail", "a@b.org"), "<tw-1-my=20team=2Email@b.org>");
  EXPECT_EQ(MessageIdFor("k", "nodomain"), "<k@trainwatch.invalid>");
}

TEST(EmailRender, TheMessageHasEveryHeaderAndBothBodiesWithCrlfLineEnds) {
  const std::vector<Mailbox> to = {{"", "a@example.com"}, {"Ops Team", "b@example.com"}, {"Zoë", "c@example.com"}};
  const EmailContent content = RenderEmail(Finding(), "");
  const EmailMessage m = BuildEmail({"trainwatch", "alerts@example.com"}, to, content, "tw-5-mail", 1700000000);
  EXPECT_EQ(m.headers, (std::vector<std::string>{
                           "From: trainwatch <alerts@example.com>",
                           "To: a@example.com,\r\n Ops Team <b@example.com>,\r\n =?UTF-8?B?Wm/Dqw==?= <c@example.com>",
                           "Subject: [trainwatch] CRITICAL Loss is NaN or infinite on exp/<b>bert</b> & co",
                           "Date: Tue, 14 Nov 2023 22:13:20 +0000",
                           "Message-ID: <tw-5-mail@example.com>",
                           "Auto-Submitted: auto-generated",
                       }));
  for (const std::string& h : m.headers)
    for (unsigned char c : h) EXPECT_LT(c, 0x80) << h;
  for (const std::string* body : {&m.text, &m.html})
    for (size_t i = 0; (i = body->find('\n', i)) != std::string::npos; ++i) ASSERT_EQ((*body)[i - 1], '\r') << "bare LF";
  EXPECT_EQ(Lf(m.text), content.text);
  EXPECT_EQ(Lf(m.html), content.html);
  EXPECT_EQ(m, BuildEmail({"trainwatch", "alerts@example.com"}, to, content, "tw-5-mail",
                          1700000000));  // a resend is the same message
}

TEST(EmailWire, CurlSendsEveryHeaderAndBothPartsInShortSevenBitLines) {
  const std::vector<Mailbox> to = {{"", "a@example.com"}, {"Ops Team", "b@example.com"}, {"Zoë", "c@example.com"}};
  const EmailContent content = RenderEmail(Finding(), "");
  const std::string m = OnTheWire(BuildEmail({"trainwatch", "alerts@example.com"}, to, content, "tw-5-mail", 1700000000));
  const WireMessage w = ParseWire(m);
  const std::string& head = w.head;
  EXPECT_NE(head.find("From: trainwatch <alerts@example.com>\r\n"), std::string::npos) << head;
  EXPECT_NE(head.find("To: a@example.com,\r\n Ops Team <b@example.com>,\r\n =?UTF-8?B?Wm/Dqw==?= <c@example.com>\r\n"),
            std::string::npos) << head;
  EXPECT_NE(head.find("Subject: [trainwatch] CRITICAL Loss is NaN or infinite on exp/<b>bert</b> & co\r\n"),
            std::string::npos) << head;
  EXPECT_NE(head.find("Date: Tue, 14 Nov 2023 22:13:20 +0000\r\n"), std::string::npos) << head;
  EXPECT_NE(head.find("Message-ID: <tw-5-mail@example.com>\r\n"), std::string::npos) << head;
  EXPECT_NE(head.find("Auto-Submitted: auto-generated\r\n"), std::string::npos) << head;
  EXPECT_NE(Lower(head).find("mime-version: 1.0\r\n"), std::string::npos) << head;
  EXPECT_NE(Lower(head).find("content-type: multipart/alternative; boundary="), std::string::npos) << head;
  ASSERT_EQ(w.parts.size(), 2u) << m;
  EXPECT_NE(w.parts[0].head.find("Content-Type: text/plain; charset=utf-8\r\n"), std::string::npos) << w.parts[0].head;
  EXPECT_NE(w.parts[1].head.find("Content-Type: text/html; charset=utf-8\r\n"), std::string::npos) << w.parts[1].head;
  for (const WirePart& part : w.parts) {
    EXPECT_NE(part.head.find("Content-Transfer-Encoding: quoted-printable\r\n"), std::string::npos) << part.head;
    for (const std::string& line : Lines(part.body)) EXPECT_LE(line.size(), 76u) << line;
  }
  EXPECT_EQ(DecodeQuotedPrintable(w.parts[0].body), content.text);  // the plain text first: the richest last
  EXPECT_EQ(DecodeQuotedPrintable(w.parts[1].body), content.html);
  for (const std::string& line : Lines(m)) EXPECT_LE(line.size(), 998u);
  for (unsigned char c : m) EXPECT_LT(c, 0x80);
  for (size_t i = 0; (i = m.find('\n', i)) != std::string::npos; ++i) ASSERT_EQ(m[i - 1], '\r') << "bare LF";
}

TEST(EmailWire, QuotedPrintableAndDotStuffingCarryAnyTextInShortLines) {
  // Long lines, trailing white space, '=', UTF-8, tabs, and lines that are or start with a dot
  // (a lone "." would end the message early were it not doubled on the wire).
  const std::string text = "plain line\n" + std::string(300, 'a') + "\ntrailing space \nequals = sign\n" +
                           "ünïcødé ▇▆▅ " + std::string(100, '=') + "\ttab\n.dot first\n.\n..\n\nend";
  const EmailContent content{"qp", text, text};
  const WireMessage w = ParseWire(OnTheWire(BuildEmail({"", "a@example.com"}, {{"", "b@example.com"}}, content, "k", 0)));
  ASSERT_EQ(w.parts.size(), 2u);
  for (const WirePart& part : w.parts) {
    for (const std::string& line : Lines(part.body)) {
      EXPECT_LE(line.size(), 76u) << line;
      for (unsigned char c : line) EXPECT_TRUE((c >= 0x20 && c < 0x7f) || c == '\t') << line;
      EXPECT_FALSE(line.ends_with(" ")) << line;
    }
    EXPECT_EQ(DecodeQuotedPrintable(part.body), text);
  }
}

TEST(EmailRender, MailboxesParseAndBadOnesAreNamed) {
  Result<Mailbox> a = ParseMailbox("alerts@example.com");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->address, "alerts@example.com");
  EXPECT_EQ(a->name, "");
  Result<Mailbox> b = ParseMailbox("\"Train Watch\" <tw+ops@mail.example.com>");
  ASSERT_TRUE(b.ok()) << b.status().message();
  EXPECT_EQ(b->name, "Train Watch");
  EXPECT_EQ(b->address, "tw+ops@mail.example.com");
  for (const char* bad : {"", "nobody", "@example.com", "a@", "a b@example.com", "a@b@c", "Name <a@b", "<a@b> x",
                          "a@example.com\r\nBcc: x@y", "\"q\"@example.com", "Näme <ä@example.com>"}) {
    Result<Mailbox> m = ParseMailbox(bad);
    EXPECT_FALSE(m.ok()) << bad;
    if (!m.ok()) {
      EXPECT_EQ(m.status().message().find_first_of("\r\n"), std::string::npos);
    }
  }
}

TEST(EmailJudge, SmtpRepliesTwoHundredsSentFourHundredsRetryFiveHundredsPermanent) {
  auto judge = [](int code) { return JudgeSmtp(SmtpReply{code, "text", "RCPT TO <a@b>"}).kind; };
  EXPECT_EQ(judge(250), SendResult::Kind::kSent);
  EXPECT_EQ(judge(421), SendResult::Kind::kRetry);
  EXPECT_EQ(judge(451), SendResult::Kind::kRetry);
  EXPECT_EQ(judge(452), SendResult::Kind::kRetry);
  EXPECT_EQ(judge(535), SendResult::Kind::kPermanent);
  EXPECT_EQ(judge(550), SendResult::Kind::kPermanent);
  EXPECT_EQ(judge(554), SendResult::Kind::kPermanent);
  const SendResult r = JudgeSmtp(SmtpReply{550, "5.1.1 no such user", "RCPT TO <a@b>"});
  EXPECT_EQ(r.http_status, 550);
  EXPECT_EQ(r.detail, "RCPT TO <a@b>: 550 5.1.1 no such user");
  EXPECT_EQ(JudgeSmtp(Result<SmtpReply>(IoError("smtp://h:25: connect: refused"))).kind, SendResult::Kind::kRetry);
  EXPECT_EQ(JudgeSmtp(Result<SmtpReply>(InvalidArgument("no STARTTLS"))).kind, SendResult::Kind::kPermanent);
}

TEST(EmailChannelConfig, DefaultsAndWhatMakeChannelRefuses) {
  ChannelConfig c = ChannelConfig::Defaults("mail", "email");
  EXPECT_FALSE(c.send_resolved);
  EXPECT_EQ(c.min_interval_seconds, 10);
  EXPECT_EQ(c.tls, "starttls");
  EXPECT_EQ(ChannelConfig::Defaults("sg", "sendgrid").url, kSendGridUrl);
  EXPECT_EQ(DefaultSmtpPort("starttls"), 587);
  EXPECT_EQ(DefaultSmtpPort("tls"), 465);
  EXPECT_EQ(DefaultSmtpPort("none"), 25);
  c.smtp_host = "mail.example.com";
  c.from = "alerts@example.com";
  c.to = {"ops@example.com"};
  EXPECT_TRUE(MakeChannel(c).ok()) << MakeChannel(c).status().message();
  EXPECT_EQ(Destination(c), "smtp://mail.example.com:587");
  auto refused = [](ChannelConfig bad, const std::string& why) {
    Result<std::unique_ptr<Channel>> ch = MakeChannel(bad);
    ASSERT_FALSE(ch.ok()) << why;
    EXPECT_NE(ch.status().message().find(why), std::string::npos) << ch.status().message();
    EXPECT_EQ(ch.status().message().find("hunter2"), std::string::npos) << ch.status().message();
  };
  ChannelConfig bad = c;
  bad.to.clear();
  refused(bad, "at least one recipient");
  bad = c;
  bad.smtp_host.clear();
  refused(bad, "needs smtp_host");
  bad = c;
  bad.from = "not an address";
  refused(bad, "from:");
  bad = c;
  bad.tls = "ssl";
  refused(bad, "tls must be starttls, tls or none");
  bad = c;
  bad.tls = "none";
  bad.username = "tw";
  bad.password = "hunter2";
  refused(bad, "plain text");
  bad.smtp_host = "127.0.0.1";  // a relay on this machine may take a password in plain text
  EXPECT_TRUE(MakeChannel(bad).ok());
  bad = c;
  bad.password = "hunter2";
  refused(bad, "needs a username");
  ChannelConfig sg = ChannelConfig::Defaults("sg", "sendgrid");
  sg.from = c.from;
  sg.to = c.to;
  refused(sg, "needs api_key");
  sg.secret = "SG.hunter2\n";
  refused(sg, "space or control character");
}

class EmailSendGrid : public ::testing::Test {
 protected:
  std::unique_ptr<Channel> Make() {
    ChannelConfig c = ChannelConfig::Defaults("sg", "sendgrid");
    c.url = server_.url("/v3/mail/send");
    c.secret = "SG.key-SECRETPART";
    c.from = "trainwatch <alerts@example.com>";
    c.to = {"a@example.com", "Ops <b@example.com>"};
    c.http.timeout_seconds = 5;
    Result<std::unique_ptr<Channel>> ch = MakeChannel(c);
    EXPECT_TRUE(ch.ok()) << ch.status().message();
    return ch.ok() ? std::move(*ch) : nullptr;
  }
  HttpServer server_;
};

TEST_F(EmailSendGrid, PostsBothPartsToEveryRecipientWithTheBearerKey) {
  server_.SetDefault({202, ""});
  auto ch = Make();
  ASSERT_TRUE(ch);
  const SendResult r = ch->Send(Finding(), "tw-9-sg", 1700000000);
  EXPECT_EQ(r.kind, SendResult::Kind::kSent) << r.detail;
  EXPECT_EQ(r.http_status, 202);
  ASSERT_EQ(server_.requests().size(), 1u);
  const testing::RecordedRequest req = server_.requests()[0];
  EXPECT_EQ(req.target, "/v3/mail/send");
  EXPECT_EQ(req.headers.at("authorization"), "Bearer SG.key-SECRETPART");
  EXPECT_EQ(req.headers.at("content-type"), "application/json");
  const json::value body = json::parse(req.body);
  const json::array& to = body.at("personalizations").at(0).at("to").as_array();
  ASSERT_EQ(to.size(), 2u);
  EXPECT_EQ(to[0].at("email"), "a@example.com");
  EXPECT_EQ(to[1].at("email"), "b@example.com");
  EXPECT_EQ(to[1].at("name"), "Ops");
  EXPECT_EQ(body.at("from").at("email"), "alerts@example.com");
  EXPECT_EQ(body.at("from").at("name"), "trainwatch");
  EXPECT_EQ(body.at("subject"), "[trainwatch] CRITICAL Loss is NaN or infinite on exp/<b>bert</b> & co");
  const json::array& content = body.at("content").as_array();
  ASSERT_EQ(content.size(), 2u);
  EXPECT_EQ(content[0].at("type"), "text/plain");  // SendGrid wants text/plain first
  EXPECT_EQ(content[1].at("type"), "text/html");
  const std::string text(content[0].at("value").as_string()), html(content[1].at("value").as_string());
  EXPECT_NE(text.find("An overflow: <script>"), std::string::npos) << text;
  EXPECT_NE(html.find("An overflow: &lt;script&gt;"), std::string::npos) << html;
  EXPECT_NE(html.find("first_non_finite_step"), std::string::npos) << html;
  EXPECT_EQ(body.at("custom_args").at("trainwatch_key"), "tw-9-sg");
}

TEST_F(EmailSendGrid, RateLimitsAndOutagesRetryRefusalsArePermanent) {
  server_.Script({{429, "slow down", {{"Retry-After", "7"}}}, {503, "down"}, {400, R"({"errors":[]})"}, {401, "no"}});
  auto ch = Make();
  ASSERT_TRUE(ch);
  const SendResult limited = ch->Send(Finding(), "k", 1000);
  EXPECT_EQ(limited.kind, SendResult::Kind::kRetry);
  EXPECT_EQ(limited.retry_after, 7);
  EXPECT_EQ(ch->Send(Finding(), "k", 1000).kind, SendResult::Kind::kRetry);
  const SendResult bad = ch->Send(Finding(), "k", 1000);
  EXPECT_EQ(bad.kind, SendResult::Kind::kPermanent);
  EXPECT_EQ(bad.http_status, 400);
  EXPECT_EQ(ch->Send(Finding(), "k", 1000).kind, SendResult::Kind::kPermanent);
  for (const auto& req : server_.requests()) EXPECT_EQ(req.body.find("SECRETPART"), std::string::npos);
  EXPECT_EQ(bad.detail.find("SECRETPART"), std::string::npos);
}

TEST_F(EmailSendGrid, AGroupIsOneMailListingEveryFindingUnderTheGroupsKey) {
  server_.SetDefault({202, ""});
  auto ch = Make();
  ASSERT_TRUE(ch);
  Group g;
  g.labels = {{"run", "exp/a"}};
  Notification a = Finding(), b = Finding();
  a.run = b.run = "exp/a";
  a.finding_id = 1;
  a.message = "first finding's message";
  b.finding_id = 2;
  b.event = "finding.resolved";
  b.message = "second finding's message";
  g.items = {a, b};
  const SendResult r = ch->SendGroup(g, "tw-group-1-2-sg", 1700000000);
  EXPECT_EQ(r.kind, SendResult::Kind::kSent) << r.detail;
  ASSERT_EQ(server_.requests().size(), 1u);
  const json::value body = json::parse(server_.requests()[0].body);
  EXPECT_EQ(body.at("subject"), "[trainwatch] 2 findings on run exp/a (1 firing, 1 resolved)");
  EXPECT_EQ(body.at("custom_args").at("trainwatch_key"), "tw-group-1-2-sg");
  const std::string text(body.at("content").at(0).at("value").as_string());
  const size_t first = text.find("first finding's message"), second = text.find("second finding's message");
  ASSERT_NE(first, std::string::npos) << text;
  ASSERT_NE(second, std::string::npos) << text;
  EXPECT_LT(first, second);
}

}  // namespace
}  // namespace tw::notify
